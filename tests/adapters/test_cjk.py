"""Chinese metric names are read as the English words the name tables know, whole runs or not at all."""

from __future__ import annotations

from tests.adapters.helpers import run, series
from trainwatch.adapters.cjk import translate
from trainwatch.adapters.keyvalue import KeyValueAdapter
from trainwatch.adapters.template import TemplateAdapter
from trainwatch.names import Canonicalizer

COLON, COMMA = "\uff1a", "\uff0c"  # full width


def test_known_words_become_english_and_full_width_punctuation_ascii() -> None:
    assert translate("训练损失: 32.1293") == "train loss: 32.1293"
    assert translate(f"验证集准确率{COLON}0.91{COMMA}学习率{COLON}0.001") == "val accuracy:0.91, lr:0.001"
    assert translate("Epoch 3 平均训练损失=2.3") == "Epoch 3 avg train loss=2.3"
    assert translate("plain ascii: 1") == "plain ascii: 1"


def test_a_run_the_table_does_not_cover_whole_keeps_its_own_name() -> None:
    assert translate("经验池大小: 85") == "经验池大小: 85"  # (replay buffer size: no word for it)
    assert translate("课程深度损失: 2") == "课程深度损失: 2"  # never half translated


def test_translated_names_reach_their_canonical_metric() -> None:
    canon = Canonicalizer()
    assert canon(translate("训练损失")) == "loss"
    assert canon(translate("验证损失")) == "eval_loss"


def test_a_chinese_console_is_read_by_the_key_value_and_template_readers() -> None:
    # real shape (after its logging prefix): `Epoch 1/100 | 课程深度: 2 | 经验池大小: 85`, then `训练损失: 32.1293`
    lines = []
    for e, loss in ((1, 32.1), (2, 25.0), (3, 20.3)):
        lines += [f"Epoch {e}/100 | 经验池大小: {80 + e}", f"step {e}: 训练损失{COLON}{loss}{COMMA}学习率{COLON}0.001"]
    for reader in (KeyValueAdapter("x"), TemplateAdapter("x")):
        recs = run(reader, lines)
        assert series(recs, "train loss") == [(1, 32.1), (2, 25.0), (3, 20.3)]
        assert [v for _, v in series(recs, "lr")] == [0.001] * 3


def test_a_loss_line_alone_between_epoch_lines_is_read() -> None:
    # real shape: `Epoch 1/100 | 课程深度: 2 | 经验池大小: 85`, `训练损失: 32.1293`, `Epoch 1 完成 | 成功率: 15.0% | ..`
    lines = []
    for e, loss in ((1, 32.1), (2, 25.0), (3, 20.3)):
        lines += [f"Epoch {e}/100 | 课程深度: 2 | 经验池大小: {80 + e}", f"训练损失: {loss}",
                  f"Epoch {e} 完成 | 成功率: {15 - e}.0% | 累计成功: 9"]
    recs = run(KeyValueAdapter("x"), lines)
    assert [v for _, v in series(recs, "train loss")] == [32.1, 25.0, 20.3]
    assert [v for _, v in series(recs, "success_rate")] == [14.0, 13.0, 12.0]
