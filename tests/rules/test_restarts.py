"""Killed, then started again: an attempt that ends with no summary and a new launch from the first steps
is a finding dated where the attempt stopped; a resume that carries on, a resume from a checkpoint, or
a run that had finished before the next one began is not; a crash of an earlier attempt is history."""

from __future__ import annotations

from pathlib import Path

from trainwatch import runner
from trainwatch.model import Alert, Severity
from trainwatch.session import LogClock, Session


def steps(start: int, stop: int, every: int = 100, total: int | None = None) -> str:
    of = f"/{total}" if total else ""
    return "".join(f"Step {s}{of}: loss={2.0 / (1 + s / 1000):.4f}, grad_norm=1.0\n" for s in range(start, stop, every))


def check_text(tmp_path: Path, text: str) -> tuple[dict[str, Alert], Severity | None]:
    p = tmp_path / "run.log"
    p.write_text(text)
    src = runner.open_source(p)
    session = Session([src], clock=LogClock(0.0))
    session.read_file(src)
    return {a.rule: a for a in session.engine.alerts()}, session.engine.worst()


def test_a_new_launch_from_step_0_dates_the_first_attempts_end(tmp_path: Path) -> None:
    first = steps(0, 1700)  # 17 lines: the attempt stops at step 1600, line 17
    alerts, _ = check_text(tmp_path, first + "Mon Jan  5 05:13:27 2026\nstarting training\n" + steps(0, 500))
    alert = alerts["run.restarted"]
    assert alert.severity is Severity.WARNING
    assert (alert.first_step, alert.first_line) == (1600, 17)
    assert alert.finding.evidence["restart_line"] == 20 and alert.finding.evidence["restart_step"] == 0
    assert "resume.detected" not in alerts or not alerts["resume.detected"].told  # the restart says it all


def test_a_resume_that_carries_on_is_no_restart(tmp_path: Path) -> None:
    text = steps(0, 1700) + "Starting training from iteration 1700\n" + steps(1700, 3000)
    alerts, _ = check_text(tmp_path, text)
    assert "run.restarted" not in alerts


def test_a_resume_from_a_mid_run_checkpoint_is_no_restart(tmp_path: Path) -> None:
    alerts, _ = check_text(tmp_path, steps(0, 1700) + steps(1000, 2500))
    assert "run.restarted" not in alerts


def test_a_finished_run_then_a_new_one_is_no_restart(tmp_path: Path) -> None:
    alerts, _ = check_text(tmp_path, steps(100, 1100, total=1000) + steps(100, 1100, total=1000))
    assert "run.restarted" not in alerts


def test_another_training_appended_to_the_log_is_no_restart(tmp_path: Path) -> None:
    """A pretraining that finished (its total unread), then a linear evaluation from epoch 0: its loss
    starts elsewhere, so it is another training, not the first one launched again."""
    evaluation = "".join(f"Step {s}: loss={7.0 - s / 1000:.4f}, grad_norm=1.0\n" for s in range(0, 900, 100))
    alerts, _ = check_text(tmp_path, steps(0, 1700) + evaluation)
    assert "run.restarted" not in alerts


def test_an_aborted_start_of_two_lines_is_no_attempt(tmp_path: Path) -> None:
    alerts, _ = check_text(tmp_path, steps(0, 200) + steps(0, 1500))
    assert "run.restarted" not in alerts


def test_a_crash_of_an_earlier_attempt_is_lowered_to_a_warning(tmp_path: Path) -> None:
    crash = ("Traceback (most recent call last):\n  File \"/w/train.py\", line 280, in <module>\n    main()\n"
             "ValueError: Normalization stats not found.\n")
    text = crash + steps(0, 1700) + steps(0, 900) + \
        "slurmstepd: error: *** JOB 334949 ON dgx-03 CANCELLED AT 2026-01-06T04:52:18 ***\n"
    alerts, worst = check_text(tmp_path, text)
    tb = alerts["error.traceback"]
    assert tb.severity is Severity.WARNING and "earlier attempt" in tb.finding.message
    assert alerts["sched.cancelled"].severity is Severity.WARNING and alerts["run.restarted"]
    assert worst is Severity.WARNING


def test_a_crash_in_the_last_attempt_stays_critical(tmp_path: Path) -> None:
    crash = ("Traceback (most recent call last):\n  File \"/w/train.py\", line 280, in <module>\n    main()\n"
             "ValueError: shapes do not match\n")
    alerts, worst = check_text(tmp_path, steps(0, 1700) + steps(0, 900) + crash)
    assert alerts["error.traceback"].severity is Severity.CRITICAL and worst is Severity.CRITICAL


def test_an_error_of_an_earlier_attempt_that_ends_the_last_one_too_stays_critical(tmp_path: Path) -> None:
    """A batch-size sweep: a CUDA OOM kills an early launch, a later launch trains, the last one dies of
    the same OOM; one finding (the first copy) that is also the latest attempt's state."""
    oom = ("RuntimeError: CUDA out of memory. Tried to allocate 1.83 GiB (GPU 0; 7.79 GiB total capacity; "
           "4.13 GiB already allocated; 1006.25 MiB free; 5.39 GiB reserved in total by PyTorch)\n")
    text = steps(0, 300) + oom + steps(0, 1700) + steps(0, 300) + oom
    alerts, worst = check_text(tmp_path, text)
    assert "run.restarted" in alerts
    assert alerts["oom.cuda"].severity is Severity.CRITICAL and worst is Severity.CRITICAL


def test_each_fold_that_stops_itself_early_then_the_next_from_step_0_is_no_restart(tmp_path: Path) -> None:
    """A cross-validation: every fold prints `EARLY STOP` alone on its line, then the next fold counts from 0
    with the same first loss. The folds ended on purpose, so none was killed."""
    fold = steps(0, 1700) + "EARLY STOP\n\n"
    alerts, _ = check_text(tmp_path, fold * 3)
    assert "run.restarted" not in alerts
    assert alerts["run.early_stopped"].severity is Severity.INFO
    # the stop must lie between the attempt's last step and the new start: a fold that stopped, then one killed
    alerts, _ = check_text(tmp_path, fold + steps(0, 1700) + steps(0, 500))
    assert alerts["run.restarted"].first_line == 17 + 2 + 17


def noisy_steps(start: int, stop: int, spikes: set[int], every: int = 100) -> str:
    """A flat loss with a little noise (a fixed pattern) and 5x spikes at `spikes`."""
    out = []
    for i, s in enumerate(range(start, stop, every)):
        v = 0.5 * (1 + 0.02 * ((i * 7) % 5 - 2)) * (5.0 if s in spikes else 1.0)
        out.append(f"Step {s}: loss={v:.4f}, grad_norm=1.0\n")
    return "".join(out)


def test_a_finding_of_an_earlier_attempt_says_whose_steps_it_names(tmp_path: Path) -> None:
    """Each attempt counts its steps from 0: a spike at step 2500 of the first attempt says it is of that
    attempt, since the second attempt logs a step 2500 too, with another value."""
    first = noisy_steps(0, 4000, {2500})
    restart = "Mon Jan  5 05:13:27 2026\nstarting training\n"
    alerts, _ = check_text(tmp_path, first + restart + noisy_steps(0, 3000, set()))
    spike = alerts["loss.spike"]
    assert spike.first_step == 2500 and spike.first_line == 26
    line = alerts["run.restarted"].finding.evidence["restart_line"]
    assert f"(in an earlier attempt: the run was started again at line {line})" in spike.finding.message


def test_a_finding_whose_episodes_fall_in_two_attempts_says_which_steps_are_whose(tmp_path: Path) -> None:
    first = noisy_steps(0, 4000, {2500})
    restart = "Mon Jan  5 05:13:27 2026\nstarting training\n"
    alerts, _ = check_text(tmp_path, first + restart + noisy_steps(0, 4000, {3000}))
    spike = alerts["loss.spike"]
    assert [e.start_step for e in spike.episodes] == [2500, 3000]
    line = alerts["run.restarted"].finding.evidence["restart_line"]
    assert (f"(its steps are of different attempts: steps 2500 before the run was started again at line {line}; "
            f"steps 3000 after it was started again at line {line})") in spike.finding.message


def test_a_finding_of_the_latest_attempt_needs_no_note(tmp_path: Path) -> None:
    restart = "Mon Jan  5 05:13:27 2026\nstarting training\n"
    alerts, _ = check_text(tmp_path, noisy_steps(0, 4000, set()) + restart + noisy_steps(0, 4000, {3000}))
    assert "attempt" not in alerts["loss.spike"].finding.message


EVAL_CRASH = ("Traceback (most recent call last):\n  File \"/w/train.py\", line 91, in <module>\n    main()\n"
              "  File \"/w/eval.py\", line 12, in derive\n    assert len(names) == n\nAssertionError\n")


def test_a_crash_that_a_resumed_launch_ran_past_to_the_last_step_is_a_warning(tmp_path: Path) -> None:
    """A launch crashes in its evaluation at step 1700; a later launch resumes from that checkpoint with
    the counter carrying on (no restart from step 0) and trains to the known last step."""
    text = (steps(0, 1800, total=5000) + EVAL_CRASH + "Starting training from iteration 1800\n"
            + steps(1800, 5001, total=5000))
    alerts, worst = check_text(tmp_path, text)
    tb = alerts["error.traceback"]
    assert tb.severity is Severity.WARNING and "earlier attempt" in tb.finding.message
    assert worst is Severity.WARNING


def test_a_crash_after_which_the_run_goes_on_but_never_finishes_stays_critical(tmp_path: Path) -> None:
    """Steps printed after a crash may be buffered output of the same launch: without an end, the crash
    is still the run's state."""
    text = steps(0, 1800, total=5000) + EVAL_CRASH + steps(1800, 2500, total=5000)
    alerts, worst = check_text(tmp_path, text)
    assert alerts["error.traceback"].severity is Severity.CRITICAL and worst is Severity.CRITICAL
