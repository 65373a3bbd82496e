"""Launcher prefixes come off before an adapter reads a line; metric text that only looks like one stays."""

from __future__ import annotations

import pytest

from tests.adapters.helpers import corpus_file
from trainwatch import adapters
from trainwatch.adapters.keyvalue import KeyValueAdapter
from trainwatch.adapters.pipeline import SourceParser
from trainwatch.adapters.prefix import PrefixStripper, strip_text
from trainwatch.model import Sample


@pytest.mark.parametrize("line, text, rank, host", [
    ("[rank3]: Traceback (most recent call last):", "Traceback (most recent call last):", 3, None),
    ("[default0]:{'loss': 1.2, 'epoch': 0.1}", "{'loss': 1.2, 'epoch': 0.1}", 0, None),
    ("[1,0]<stdout>:Gradient overflow.  Skipping step", "Gradient overflow.  Skipping step", 1, None),
    ("(main_task pid=2105103) Total training steps: 560", "Total training steps: 560", None, None),
    ("(WorkerDict pid=123, ip=10.1.2.3) step:3 - loss:2.5", "step:3 - loss:2.5", None, None),
    ("(raylet) Traceback (most recent call last):", "Traceback (most recent call last):", None, None),
    ("10.0.0.2: steps: 10 loss: 2.3", "steps: 10 loss: 2.3", None, "10.0.0.2"),
    ("localhost: [2024-05-01 12:00:00,123] [INFO] [logging.py:96:log_dist] [Rank 0] step=10, skipped=0",
     "[Rank 0] step=10, skipped=0", None, "localhost"),
    ("2025-03-02 05:16:20,962 - INFO - Epoch 1 - Batch loss: 12.1336", "Epoch 1 - Batch loss: 12.1336", None, None),
    ("2026-04-08 02:06:55,171 __init__.py log_once [line:227] INFO local_val_loss                1.2385",
     "local_val_loss                1.2385", None, None),  # %(filename)s %(funcName)s [line:%(lineno)d] %(levelname)s
    ("2024-05-01 12:00:00,001 - my.module - WARNING - step 3 loss=2", "step 3 loss=2", None, None),
    ("2024-05-01T12:00:00Z INFO step 3 loss=2", "step 3 loss=2", None, None),
    ("INFO:root:step 5 loss=3", "step 5 loss=3", None, None),
    ("[INFO] step 2 loss 3", "step 2 loss 3", None, None),
    ("[INFO:swift] rank: 0, local_rank: 0", "rank: 0, local_rank: 0", None, None),
    ("2021-01-25 05:58:59 [INFO]:     0/29      40/165     0.172      1.99", "0/29      40/165     0.172      1.99",
     None, None),  # `[%(levelname)s]: %(message)s`
    ("W1222 19:29:33.885000 3154626 torch/distributed/run.py:803] Setting OMP_NUM_THREADS",
     "Setting OMP_NUM_THREADS", None, None),
    ("[2022-08-31 22:19:24,737] [    INFO] - loss: 1.0498, learning_rate: 2.97e-05, global_step: 10",
     "loss: 1.0498, learning_rate: 2.97e-05, global_step: 10", None, None),
    ("[ WARNING] - eval_loss: 2.07, epoch: 5.0", "eval_loss: 2.07, epoch: 5.0", None, None),
    ("2025-05-22 16:30:06 | INFO | my_pkg.trainer | Epoch 001 / update 50: train_loss=10.08",
     "Epoch 001 / update 50: train_loss=10.08", None, None),
    ("2021-03-01 10:00:04 | INFO | valid | epoch 001 | valid on 'valid' subset | loss 7.2",
     "epoch 001 | valid on 'valid' subset | loss 7.2", None, None),
])
def test_prefixes_come_off(line: str, text: str, rank: int | None, host: str | None) -> None:
    got, info = PrefixStripper().strip(line)
    assert got == text
    assert info is not None and info.rank == rank and info.host == host


@pytest.mark.parametrize("line", [
    "loss: 0.5, lr: 3e-4", "ep: 0, batch: 20, time: 9.17, loss: 10.98", "top1: 0.5 top5: 0.7",
    "Step10: loss=2", "f1: 0.8", "128/128 - 5s - loss: 3.1494 - accuracy: 0.1463", "    optim/total_grad_norm=1.608",
    "Epoch 1/100", "[step=10/10000,epoch=0]", "| epoch 3 | loss 2.1 |",
    "  0%|          | 0/10 [00:00<?, ?it/s]", "100: loss 2.3",
])
def test_metric_lines_are_left_alone(line: str) -> None:
    assert PrefixStripper().strip(line) == (line, None)


def test_host_tag_is_trusted_once_it_tags_lines_like_a_launcher() -> None:
    """pdsh and DeepSpeed's multi-node runner start every line with the node's name."""
    s = PrefixStripper()
    assert s.strip("worker-3: iteration 9/ 100 | lm loss: 2.1 |")[0].startswith("worker-3: ")
    text, info = s.strip("worker-3: iteration 10/ 100 | lm loss: 2.0 |")
    assert text == "iteration 10/ 100 | lm loss: 2.0 |" and info is not None and info.host == "worker-3"


def test_named_eval_lines_among_training_lines_keep_their_name() -> None:
    """`wikitext2: loss 3.9` is the log's own eval line, not a host: it starts few of the lines."""
    s = PrefixStripper()
    for block in range(3):
        for i in range(10):
            assert s.strip(f"step {block * 10 + i}: loss 2.5")[1] is None
        for name in ("wikitext2", "c4"):
            line = f"{name}: loss 3.9 ppl 49"
            assert s.strip(line) == (line, None)


def test_numeric_rank_tag_needs_to_repeat() -> None:
    """`srun -l` tags every line with the same few numbers; a step counter never repeats like that."""
    s = PrefixStripper()
    assert s.strip("0: iteration 1 | lm loss: 3.0 |")[0].startswith("0: ")
    text, info = s.strip("0: iteration 2 | lm loss: 2.9 |")
    assert text == "iteration 2 | lm loss: 2.9 |" and info is not None and info.rank == 0


def test_timestamp_becomes_the_sample_time() -> None:
    parser = SourceParser(KeyValueAdapter("x"))
    out = parser.feed("2024-05-01 12:00:00,500 - INFO - step 3: loss=2.5, lr=1e-4", 1)
    loss = [r for r in out if isinstance(r, Sample) and r.name == "loss"]
    assert loss and loss[0].step == 3 and loss[0].time is not None and loss[0].time % 1 == pytest.approx(0.5)


def test_scanner_still_sees_the_rank_tag() -> None:
    """Error signatures read the line as printed: the rank in front of a traceback is evidence."""
    parser = SourceParser(KeyValueAdapter("x"))
    seen: list[str] = []
    assert parser.scanner is not None
    real = parser.scanner.feed
    parser.scanner.feed = lambda line, n: seen.append(line) or real(line, n)  # type: ignore[method-assign]
    parser.feed("[rank1]: RuntimeError: boom", 1)
    assert seen == ["[rank1]: RuntimeError: boom"]


def test_detection_scores_stripped_lines() -> None:
    head = "".join(f"[rank0]: 2024-05-01 12:00:0{i},000 - INFO - step {i}: loss={3 - i * 0.1:.2f}, lr=1e-4\n"
                   for i in range(8))
    assert "[rank0]" not in strip_text(head)
    assert adapters.detect(head, "train.log") == "keyvalue"


def test_ray_prefixed_real_log_loses_its_prefixes() -> None:
    path = corpus_file("verl-logic-rl-ray-startup-crash.log")
    stripped = strip_text(path.read_text(encoding="utf-8", errors="replace"))
    assert "(main_task pid=" not in stripped and "Total training steps: 560" in stripped
