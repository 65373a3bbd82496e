"""How a run is stopped from outside: every common ending line is a finding, dated at the step it hit,
with the cause the log gives; what fails because of the stop is its echo, and a launcher's teardown
after a crash is the crash's echo, not a kill."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from trainwatch import runner
from trainwatch.model import Alert, Severity
from trainwatch.session import LogClock, Session

STEPS = "".join(f"Step {s}: loss={2.0 - s / 100:.3f}, lr=1e-4, grad_norm=1.0\n" for s in (10, 20, 30))
TIME_LIMIT = "slurmstepd: error: *** JOB 4242 ON gpu07 CANCELLED AT 2024-03-02T11:22:33 DUE TO TIME LIMIT ***"
CANCELLED = "slurmstepd: error: *** JOB 4242 ON gpu07 CANCELLED AT 2024-03-02T11:22:33 ***"
LOADER_KILLED = [
    "Traceback (most recent call last):",
    '  File "/env/torch/utils/data/dataloader.py", line 1133, in _try_get_data',
    "    data = self._data_queue.get(timeout=timeout)",
    '  File "/env/torch/utils/data/_utils/signal_handling.py", line 66, in handler',
    "    _error_if_any_worker_fails()",
    "RuntimeError: DataLoader worker (pid 4020138) is killed by signal: Terminated.",
]


def check_text(tmp_path: Path, text: str, name: str = "run.log") -> dict[str, Alert]:
    p = tmp_path / name
    p.write_text(text)
    src = runner.open_source(p)
    session = Session([src], clock=LogClock(0.0))
    session.read_file(src)
    return {a.rule: a for a in session.engine.alerts()}


def worst(alerts: dict[str, Alert]) -> Severity:
    return max((a.severity for a in alerts.values()), default=Severity.INFO)


@pytest.mark.parametrize(("line", "rule", "severity"), [
    (TIME_LIMIT, "sched.time_limit", Severity.WARNING),
    (CANCELLED, "sched.cancelled", Severity.WARNING),
    ("slurmstepd: error: *** JOB 77 ON n3 CANCELLED AT 2024-05-06T07:08:09 DUE TO PREEMPTION ***",
     "sched.preempted", Severity.WARNING),
    ("[rank: 2] Received SIGTERM: 15", "run.signal", Severity.WARNING),
    ("Killed", "run.killed", Severity.CRITICAL),
    ("E0101 12:00:00 api.py:869] failed (exitcode: -9) local_rank: 0 (pid: 4242) of binary: /bin/python",
     "run.killed", Severity.CRITICAL),
])
def test_an_ending_line_is_a_finding_at_the_running_step(tmp_path: Path, line: str, rule: str,
                                                          severity: Severity) -> None:
    alerts = check_text(tmp_path, STEPS + line + "\n")
    alert = alerts[rule]
    assert alert.severity is severity and worst(alerts) is severity
    assert alert.first_line == 4 and alert.first_step == 31 and alert.finding.step_inferred


def test_a_bare_killed_is_no_host_oom_unless_the_log_says_memory(tmp_path: Path) -> None:
    bare = check_text(tmp_path, STEPS + "Killed\n")
    assert "oom.host" not in bare
    assert "SIGKILL" in bare["run.killed"].finding.message and "OOM killer" in bare["run.killed"].finding.message
    oom = check_text(tmp_path, STEPS + "[81234.5] Out of memory: Killed process 4242 (python) total-vm:98765432kB\n"
                     "Killed\n", name="oom.log")
    assert oom["oom.host"].severity is Severity.CRITICAL
    assert [a.rule for a in oom.values() if a.severity is Severity.CRITICAL] == ["oom.host"]


def test_a_kill_that_slurm_explains_as_an_oom_afterwards_is_one_critical(tmp_path: Path) -> None:
    text = STEPS + ("/var/spool/slurmd/job42/slurm_script: line 12: 4242 Killed                  python train.py\n"
                    "slurmstepd: error: Detected 1 oom-kill event(s) in StepId=42.batch. Some of your processes may "
                    "have been killed by the cgroup out-of-memory handler.\n")
    alerts = check_text(tmp_path, text)
    assert [a.rule for a in alerts.values() if a.severity is Severity.CRITICAL] == ["oom.host"]
    killed = alerts["run.killed"]
    assert killed.severity is Severity.INFO and "explained at line 5" in killed.finding.message


def test_a_segfault_is_a_critical_crash_and_a_rank_aborted_after_an_nccl_timeout_is_its_echo(
        tmp_path: Path) -> None:
    seg = check_text(tmp_path, STEPS + "Segmentation fault (core dumped)\n")["run.native_crash"]
    assert seg.severity is Severity.CRITICAL and "segmentation fault" in seg.finding.message
    text = STEPS + ("[rank1]:[E1218 20:27:21.426415540 ProcessGroupNCCL.cpp:629] [Rank 1] Watchdog caught collective "
                    "operation timeout: WorkNCCL(SeqNum=12, OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600042 "
                    "milliseconds before timing out.\n"
                    "E0101 12:00:00 api.py:869] failed (exitcode: -6) local_rank: 1 (pid: 4242) of binary: "
                    "/bin/python\n")
    alerts = check_text(tmp_path, text, name="nccl.log")
    assert [a.rule for a in alerts.values() if a.severity is Severity.CRITICAL] == ["hang.nccl"]


def test_time_limit_names_the_job_and_when(tmp_path: Path) -> None:
    alert = check_text(tmp_path, STEPS + TIME_LIMIT + "\n")["sched.time_limit"]
    assert alert.finding.message == "job 4242, at 2024-03-02T11:22:33"
    cause = check_text(tmp_path, STEPS + "slurmstepd: error: *** JOB 9 ON n1 CANCELLED AT 2024-05-06T07:08:09 DUE TO "
                       "NODE FAILURE, SEE SLURMCTLD LOG FOR DETAILS ***\n", name="node.log")["sched.cancelled"]
    assert "due to node failure" in cause.finding.message


def test_sigterm_glued_to_a_progress_line_then_the_loader_traceback_is_its_echo(tmp_path: Path) -> None:
    bar = ("Epoch 0:  31%|###       | 1225/3999 [35:10<1:19:38, 0.58it/s, v_num=29, train_loss=1.23]\r"
           "Epoch 0:  31%|###       | 1226/3999 [35:12<1:19:36, 0.58it/s, v_num=29, train_loss=1.21]"
           "[rank: 2] Received SIGTERM: 15\n")
    alerts = check_text(tmp_path, bar + "\n".join(LOADER_KILLED) + "\n")
    assert alerts["run.signal"].severity is Severity.WARNING and alerts["run.signal"].first_line == 1
    assert alerts["error.traceback"].severity is Severity.INFO  # killed by the same SIGTERM: no code bug
    assert worst(alerts) is Severity.WARNING


def test_a_killed_loader_worker_with_no_kill_before_it_stays_critical(tmp_path: Path) -> None:
    alerts = check_text(tmp_path, STEPS + "\n".join(LOADER_KILLED) + "\n")
    assert alerts["error.traceback"].severity is Severity.CRITICAL


def test_sigkill_after_the_time_limit_is_its_echo(tmp_path: Path) -> None:
    alerts = check_text(tmp_path, STEPS + TIME_LIMIT + "\nKilled\n")
    assert alerts["sched.time_limit"].severity is Severity.WARNING
    assert worst(alerts) is Severity.WARNING  # the SIGKILL is the scheduler's follow-up, not a second cause


def rank_traceback(rank: int, exc_line: str) -> list[str]:
    return [f"[rank{rank}]: {x}" for x in (
        "Traceback (most recent call last):",
        '  File "/w/train.py", line 88, in <module>',
        "    trainer.evaluate()",
        exc_line)]


def test_launcher_teardown_after_a_rank_crash_is_an_echo_of_the_crash(tmp_path: Path) -> None:
    ranks = rank_traceback(0, "TypeError: iteration over a 0-d tensor") + \
        rank_traceback(1, "TypeError: iteration over a 0-d tensor")
    teardown = [f"W0401 08:33:18.099000 1398 torch/distributed/elastic/multiprocessing/api.py:858] Sending process "
                f"{pid} closing signal SIGTERM" for pid in (310609, 310610)]
    report = [
        "Traceback (most recent call last):",
        '  File "/env/bin/torchrun", line 8, in <module>',
        "    sys.exit(main())",
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
        "============================================================",
        "train.py FAILED",
        "------------------------------------------------------------",
        "Root Cause (first observed failure):",
        "[0]:",
        "  rank      : 0 (local_rank: 0)",
        "  exitcode  : 1 (pid: 310608)",
        "============================================================"]
    alerts = check_text(tmp_path, STEPS + "\n".join(ranks + teardown + report) + "\n")
    assert "run.signal" not in alerts
    assert [a.rule for a in alerts.values() if a.severity is Severity.CRITICAL] == ["error.traceback"]
    assert "TypeError" in alerts["error.traceback"].finding.message
    assert alerts["run.child_failed"].severity is Severity.INFO


def tw(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    return subprocess.run([sys.executable, "-m", "trainwatch", *args], capture_output=True, text=True, env=env,
                          timeout=120)


def test_cli_a_file_holding_only_a_time_limit_line_is_a_warning_not_unknown(tmp_path: Path) -> None:
    p = tmp_path / "slurm-4242.err"
    p.write_text(TIME_LIMIT + "\n")
    proc = tw("check", str(p))
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    assert "sched.time_limit" in proc.stdout and "line 1" in proc.stdout
    assert "no known log format" not in proc.stdout + proc.stderr


def test_cli_a_cancelled_job_among_unread_lines_is_a_warning(tmp_path: Path) -> None:
    p = tmp_path / "slurm-4242.out"
    p.write_text("loading the data\nbuilding the model\n" + CANCELLED + "\n")
    proc = tw("check", "--json", str(p))
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    assert '"sched.cancelled"' in proc.stdout


SOLVE_FAILED = [
    "Traceback (most recent call last):",
    '  File "app.py", line 40, in <module>',
    "    model.fit()",
    "InvalidArgumentError: Input matrix is not invertible.",
]


def test_a_kill_the_shell_reports_for_its_next_command_after_a_traceback_is_a_failure_of_its_own(
        tmp_path: Path) -> None:
    """The traceback's process ended on its exception; the script's next command was SIGKILLed: the shell's
    job report names that command, so the kill is no echo of the traceback."""
    text = STEPS + "\n".join(SOLVE_FAILED) + "\nStarting the next dataset ...\n" + (
        "/home/u/run_all.sh: line 9:  5458 Killed                  python app.py -f data/b.json\n")
    alerts = check_text(tmp_path, text)
    killed = alerts["run.killed"]
    assert killed.severity is Severity.CRITICAL and "root_cause" not in killed.finding.evidence
    assert "process 5458 (python app.py -f data/b.json)" in killed.finding.message
    assert alerts["error.traceback"].severity is Severity.CRITICAL


def test_a_bare_killed_after_a_traceback_is_still_its_echo(tmp_path: Path) -> None:
    alerts = check_text(tmp_path, STEPS + "\n".join(SOLVE_FAILED) + "\nKilled\n")
    assert alerts["run.killed"].severity is Severity.INFO and "echo" in alerts["run.killed"].finding.message
