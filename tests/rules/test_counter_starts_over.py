"""A step counter that goes back to its own start is no resume from a checkpoint: a counter of each
epoch's steps starts over as the epoch goes up, with the schedule and the loss carrying on; a new
training appended to the log starts its schedule and its loss afresh. A resume to a checkpoint's step
is still judged."""

from __future__ import annotations

import math
from pathlib import Path

from rulekit import Run

from trainwatch import runner
from trainwatch.model import Alert
from trainwatch.session import LogClock, Session

PER_EPOCH, EPOCHS = 600, 2


def lr_at(global_step: int, total: int = PER_EPOCH * EPOCHS, warmup: int = 50, peak: float = 3e-4) -> float:
    if global_step < warmup:
        return peak * (global_step + 1) / warmup
    return peak * 0.5 * (1 + math.cos(math.pi * (global_step - warmup) / (total - warmup)))


def per_epoch_log() -> str:
    """`Epoch 0 | Step 6500/6501 | Loss: 0.5133 | ... | LR: 1.52e-04` (a custom loop's shape): the step
    counter restarts at 0 every epoch while the cosine schedule carries on."""
    lines = []
    for epoch in range(EPOCHS):
        for step in range(0, PER_EPOCH, 10):
            g = epoch * PER_EPOCH + step
            loss = 0.5 + 8.0 * math.exp(-g / 150)
            lines.append(f"INFO:__main__:Epoch {epoch} | Step {step}/{PER_EPOCH} | Loss: {loss:.4f} | "
                         f"PPL: {math.exp(loss):.2f} | LR: {lr_at(g):.2e} | Grad: 0.203 | Time: 0.138s")
    return "\n".join(lines) + "\n"


def check_text(tmp_path: Path, text: str) -> list[Alert]:
    p = tmp_path / "train.log"
    p.write_text(text)
    src = runner.open_source(p)
    session = Session([src], clock=LogClock(0.0))
    session.read_file(src)
    return session.engine.alerts()


def test_a_step_counter_per_epoch_is_no_resume(tmp_path: Path) -> None:
    alerts = check_text(tmp_path, per_epoch_log())
    assert not [a.rule for a in alerts if a.rule.startswith("resume.")]


def test_a_resume_to_a_checkpoint_that_replays_warmup_is_still_told() -> None:
    run = Run()
    for s in range(10, 410, 10):
        run.step(s, loss=2.0 - s / 1000, lr=lr_at(s, total=1000))
    for s in range(210, 260, 10):  # back to the checkpoint at 200, the scheduler started over
        run.step(s, loss=1.8 - s / 1000, lr=lr_at(s - 210, total=1000))
    assert "resume.sched_reset" in run.fired()


def test_a_new_training_from_step_0_is_no_loss_jump_after_a_resume() -> None:
    run = Run()
    for s in range(0, 200, 10):
        run.step(s, loss=2.5 - s / 200)
    for s in range(0, 60, 10):  # another training, its loss starting far above where the first ended
        run.step(s, loss=6.0 - s / 100)
    assert "resume.loss_jump" not in run.fired()
    assert "resume.detected" in run.fired()  # the counter did go back: said, as info


def launches_log() -> str:
    """Python logging's `time<TAB>root<TAB>INFO<TAB>message` lines of a script launched again and again into
    one file: each launch prints `====> Epoch: N` headings over running `loss: .. accuracy: .. [n/N]` lines
    that carry no step (they are counted), from epoch 1. The first launch trains 30 epochs down to a low
    loss; the second is aborted at its first heading; the third starts again at the untrained loss."""
    lines: list[str] = []
    clock = 0

    def say(text: str) -> None:
        nonlocal clock
        clock += 1
        lines.append(f"2024-03-0{1 + clock // 86400} {clock // 3600 % 24:02d}:{clock // 60 % 60:02d}:"
                     f"{clock % 60:02d},000\troot\tINFO\t{text}")

    for epochs in (30, 0, 12):
        say("Start training with the small model")
        say("====> Epoch: 1")
        for e in range(1, epochs + 1):
            if e > 1:
                say(f"====> Epoch: {e}")
            for b in range(4):
                loss = 0.08 + 0.62 * math.exp(-(e - 1 + b / 4) / 3)
                say(f"loss: {loss:.6f}  accuracy: {100 - 60 * loss:.4f} [{b * 1000 + 50:>5d}/4000]")
            say(f"Train  Loss: {loss:.6f} accuracy: {100 - 60 * loss:.4f}%")
            say(f"Val loss: {loss * 1.3:.6f} Val accuracy: {98 - 60 * loss:.4f}%")
    return "\n".join(lines) + "\n"


def test_a_launch_that_starts_again_at_epoch_1_is_no_divergence_from_the_last_launchs_low(tmp_path: Path) -> None:
    """Its first loss is the untrained level again, 8x the last launch's low: a new training, not a rise."""
    alerts = check_text(tmp_path, launches_log())
    assert not [a.rule for a in alerts if a.rule.startswith("loss.")]
    assert not [a for a in alerts if a.severity.name == "CRITICAL"]
