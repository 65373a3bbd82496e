"""Dicts dated only by a guessed pace wait, within a block, for a line that names a step (`restep`)."""

from __future__ import annotations

from typing import Any

import pytest

import trainwatch.scan as scan
from trainwatch.adapters.hf_console import HFConsoleAdapter
from trainwatch.adapters.pipeline import SourceParser
from trainwatch.adapters.restep import interval_steps, pace_agrees
from trainwatch.model import Event, EventKind, Sample

from .test_byte_path import SCANNERS

BAR = "{pct:3d}%|#         | {n}/{m} [00:{n:02d}<00:30,  1.50it/s]"


def _read(scanner: Any, text: str, monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    monkeypatch.setattr(scan, "Scanner", scanner)
    parser = SourceParser(HFConsoleAdapter(""))
    return parser.feed_bytes(text.encode()) + parser.finish()


def _loss(records: list[Any]) -> list[tuple[int | None, float]]:
    return [(r.step, r.value) for r in records if isinstance(r, Sample) and r.name == "loss"]


def _deepspeed_like(n: int, every: int, total: int, checkpoint: bool = True) -> str:
    """HF Trainer under a launcher whose stderr (the bars) is not in the file: dicts with epochs rounded
    to 2 decimals, logged at step 1 and every `every` steps, and the final checkpoint naming the step."""
    lines = ["[INFO] [config.py:1000:print]   train_batch_size ............. 1920"]
    steps = [1] + [every * j for j in range(1, n)]
    lines += [f"{{'loss': {10 - 0.05 * i:.4f}, 'grad_norm': 1.0, 'learning_rate': 1e-05, "
              f"'epoch': {round(s / total, 2)}}}" for i, s in enumerate(steps)]
    if checkpoint:
        lines.append(f"[INFO] Saving model checkpoint: /out/checkpoint-{total}/global_step{total}/model.pt")
    lines.append("{'train_runtime': 100.0, 'train_loss': 5.0, 'epoch': 1.0}")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("scanner", SCANNERS)
def test_a_final_checkpoint_dates_dicts_that_printed_neither_step_nor_bar(scanner: Any,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    loss = _loss(_read(scanner, _deepspeed_like(99, 20, 1971), monkeypatch))
    assert len(loss) == 99
    assert [s for s, _ in loss[:3]] == [1, 20, 40] and loss[-1][0] == 1960  # was 99: a count, not a step


@pytest.mark.parametrize("scanner", SCANNERS)
def test_without_a_witness_the_guessed_steps_stay(scanner: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    loss = _loss(_read(scanner, _deepspeed_like(99, 20, 1971, checkpoint=False), monkeypatch))
    assert loss[-1][0] == 99  # nothing names a step: the records keep the pace guessed from their epochs


@pytest.mark.parametrize("scanner", SCANNERS)
def test_buffered_dicts_before_the_first_redraw_take_the_interval_it_fixes(scanner: Any,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """max_steps ends the run inside epoch 4 (250 / 4 is no whole pace): five dicts arrive in a burst,
    then one with the bar tqdm redraws at its step (30): they were logged every 5 steps, at 5 ... 25."""
    bar = BAR.format(pct=12, n=30, m=250)
    dicts = [f"{{'loss': '0.{k}', 'epoch': '{5 * k / 80:g}'}}" for k in range(1, 6)]
    text = "\n".join(["   \\\\   /|    Num examples = 80 | Num Epochs = 4 | Total steps = 250",
                      "\r" + BAR.format(pct=11, n=29, m=250), *dicts,
                      "{'loss': '0.6', 'epoch': '0.375'}\r" + bar, "{'loss': '0.7', 'epoch': '0.4375'}"]) + "\n"
    records = _read(scanner, text, monkeypatch)
    assert [s for s, _ in _loss(records)] == [5, 10, 15, 20, 25, 30, 35]
    lines = [r.line for r in records if isinstance(r, Sample | Event) and not (
        isinstance(r, Event) and r.kind is EventKind.PROGRESS)]
    assert lines == sorted(lines)  # held samples keep the log's order


def test_the_interval_is_the_one_whole_layout_the_epochs_agree_with() -> None:
    epochs = [0.0] + [round(20 * j / 1971, 2) for j in range(1, 99)]
    assert interval_steps(epochs, 1971, 0, at_record=False) == [1] + [20 * j for j in range(1, 99)]
    assert interval_steps([0.0625, 0.125, 0.1875], 20, 0, at_record=True) == [5, 10, 15]
    assert interval_steps([0.5, 0.6], 3, 0, at_record=True) is None  # steps 1 and 2 need two paces
    assert interval_steps([0.1, 0.2], 0, 0, at_record=False) is None


def test_pace_agreement_uses_the_printed_precision() -> None:
    assert pace_agrees([20, 1960], [0.01, 0.99])  # 1971 steps an epoch rounds both
    assert not pace_agrees([20, 1000], [0.02, 0.51])  # 20 / 0.02 and 1000 / 0.51 need different paces
