"""A task reason says "first loss" only of the log's first loss. The detection sample of a long log is its
head, spread pieces and its tail: past the head, the earliest loss it holds may be logged thousands of
steps after the first, and the reason says so instead of calling it the first."""

from __future__ import annotations

from pathlib import Path

from trainwatch import runner, task


def _guess(path: Path) -> task.TaskGuess:
    return runner.guess_task([runner.open_source(path)])


def _dicts(first: int, n: int) -> str:
    return "".join(f"{{'loss': {2.0 - 0.001 * s:.4f}, 'learning_rate': 1e-05, 'epoch': {s / 1000:.3f}}}\n"
                   for s in range(first, first + n))


def test_a_loss_past_the_head_of_a_long_log_is_not_called_its_first(tmp_path: Path) -> None:
    """The first dicts sit right after 100 KB of banners, between the head and the first spread piece:
    the earliest the sample holds is thousands of steps later."""
    log = tmp_path / "train.log"
    log.write_text("".join(f"banner line {i} " + "x" * 80 + "\n" for i in range(1200)) + _dicts(1, 20000))
    why = _guess(log).why()
    assert "first loss" not in why
    assert "the earliest sampled past the log's head (not necessarily its first), far below" in why
    assert "loss 2," not in why  # 2.0 - 0.001 * 1: the file's real first loss is not in the sample


def test_a_loss_in_the_head_is_the_first(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text("banner\n" + _dicts(1, 20000))  # long, but its first dicts are in the head
    assert "first loss 2, far below a model starting from scratch" in _guess(log).why()


def test_a_short_log_is_sampled_whole() -> None:
    guess = task.guess([task.SourceSample("run.log", "keyvalue", "step 1: loss=1.9\nstep 2: loss=1.8\n")])
    assert "first loss 1.9" in guess.why()
    past = task.SourceSample("run.log", "keyvalue", "banner\nstep 900: loss=0.531\n", head_start=len("banner\n"))
    assert task.earliest_loss(past) == task.FirstLoss(0.531, False)
