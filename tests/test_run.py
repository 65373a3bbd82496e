"""`trainwatch run`: real child processes (a tiny trainer written here), real signals, real exit codes.

Synchronisation is on process exits and on lines read from pipes (a FIFO the child writes to once it
is ready), never on sleeps.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest

TIMEOUT = 60

# A tiny trainer: prints HF-Trainer-style dicts through a tqdm-like bar, as the Trainer's console does.
TRAINER = r'''
import os, signal, sys
mode = sys.argv[1]
total = 12
print("***** Running training *****", flush=True)
print(f"  Total optimization steps = {total}", flush=True)
for step in range(1, total + 1):
    loss = float("nan") if mode in ("nan", "nan_exit", "hang", "stubborn") and step >= 7 else 3.0 - 0.1 * step
    if step % 2 == 0:
        print({"loss": loss, "grad_norm": 0.8, "learning_rate": 5e-05, "epoch": round(step / total, 2)})
    print(f"\r {step * 100 // total}%|####| {step}/{total} [00:01<00:01,  9.00it/s]", end="", flush=True)
print()
if mode == "kill":
    os.kill(os.getpid(), signal.SIGKILL)
if mode in ("hang", "stubborn"):
    if mode == "stubborn":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    print(f"pid {os.getpid()}", flush=True)
    signal.pause()
if mode == "sigint":
    # blocked, then waited for: a signal that comes before the wait stays pending (a handler and
    # signal.pause() would miss one that lands between the handler's last check and the pause)
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    with open(sys.argv[2], "w") as ready:  # a FIFO: the test reads this line
        ready.write("ready\n")
    got = signal.sigwaitinfo({signal.SIGINT, signal.SIGTERM}).si_signo
    print(f"got {signal.Signals(got).name}, saving and leaving", flush=True)
    sys.exit(42)
print({"train_runtime": 1.5, "train_samples_per_second": 80.0, "train_loss": 2.5, "epoch": 1.0})
sys.exit(int(sys.argv[2]) if mode == "exit" else 5 if mode == "nan_exit" else 0)
'''


@pytest.fixture()
def trainer(tmp_path: Path) -> Path:
    path = tmp_path / "train_tiny.py"
    path.write_text(TRAINER)
    return path


def _cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "trainwatch", "run", *args]


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT, stdin=subprocess.DEVNULL)


def _alerts(stdout: str) -> list[dict]:
    rows = [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]
    return [r for r in rows if r.get("type") == "alert" and r.get("state") == "firing"]


def test_a_child_that_exits_0_after_a_critical_finding_exits_2(trainer: Path, tmp_path: Path) -> None:
    log = tmp_path / "run.log"
    r = _run(_cmd("--headless", "--no-gpu", "--log", str(log), "--", sys.executable, str(trainer), "nan"), tmp_path)
    assert r.returncode == 2, r.stderr  # `trainwatch run -- train.py && deploy` must stop: NaN is no success
    assert "CRITICAL loss.nonfinite" in r.stdout
    assert "run.child_exit" not in r.stdout  # a clean exit is no finding
    text = log.read_text()
    assert "'loss': nan" in text and "train_runtime" in text
    assert "\r\n" not in text  # the terminal's newline translation is off: the log reads like a redirected one
    assert "exited with code 0" in r.stderr


def test_a_healthy_child_that_exits_0_exits_0(trainer: Path, tmp_path: Path) -> None:
    r = _run(_cmd("--headless", "--no-gpu", "--json", "--log", "ok.log", "--",
                  sys.executable, str(trainer), "exit", "0"), tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert not [a for a in _alerts(r.stdout) if a["severity"] != "info"]


def test_the_childs_failure_code_wins_over_the_severity(trainer: Path, tmp_path: Path) -> None:
    r = _run(_cmd("--headless", "--no-gpu", "--json", "--log", "nan.log", "--",
                  sys.executable, "-c", TRAINER, "nan_exit"), tmp_path)
    assert r.returncode == 5, r.stderr  # critical findings, but the child's own code says more
    assert "loss.nonfinite" in {a["id"] for a in _alerts(r.stdout)}


def test_non_zero_exit_is_a_critical_finding(trainer: Path, tmp_path: Path) -> None:
    r = _run(_cmd("--headless", "--no-gpu", "--json", "--log", "out.log", "--",
                  sys.executable, str(trainer), "exit", "7"), tmp_path)
    assert r.returncode == 7, r.stderr
    found = {a["id"]: a for a in _alerts(r.stdout)}
    exit_alert = found["run.child_exit"]
    assert exit_alert["severity"] == "critical"
    assert exit_alert["evidence"]["exit_code"] == 7
    assert "exited with code 7" in exit_alert["message"]
    assert exit_alert["step"] == 12  # the end was told after the log's last line had been read


def test_killed_by_a_signal(trainer: Path, tmp_path: Path) -> None:
    r = _run(_cmd("--headless", "--no-gpu", "--json", "--log", "./out.log", "--",
                  sys.executable, str(trainer), "kill"), tmp_path)
    assert r.returncode == 128 + signal.SIGKILL, r.stderr
    alert = {a["id"]: a for a in _alerts(r.stdout)}["run.child_exit"]
    assert alert["severity"] == "critical"
    assert alert["evidence"]["signal"] == "SIGKILL"
    assert alert["source"] == "out.log" and alert["step"] == 12  # the log's own source, ended after its last line
    assert "killed by SIGKILL" in alert["message"]
    assert any("OOM killer" in fix for fix in alert["fixes"])
    assert not any(a["id"].startswith("hang.") or a["id"] == "run.ended_early" for a in _alerts(r.stdout))


def test_exit_on_stops_the_child(trainer: Path, tmp_path: Path) -> None:
    r = _run(_cmd("--headless", "--no-gpu", "--json", "--exit-on", "critical", "--grace", "5", "--log", "out.log",
                  "--", sys.executable, str(trainer), "hang"), tmp_path)
    assert r.returncode == 2, r.stderr  # the alert's code
    found = {a["id"]: a for a in _alerts(r.stdout)}
    assert found["loss.nonfinite"]["severity"] == "critical"
    ended = found["run.child_exit"]
    assert ended["severity"] == "info" and "SIGTERM" in ended["message"]
    pid = int((tmp_path / "out.log").read_text().split("pid ")[1].split()[0])
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # gone and reaped


def test_a_child_that_ignores_sigterm_is_killed_after_the_grace(trainer: Path, tmp_path: Path) -> None:
    r = _run(_cmd("--headless", "--no-gpu", "--json", "--exit-on", "critical", "--grace", "0.5", "--log", "out.log",
                  "--", sys.executable, str(trainer), "stubborn"), tmp_path)
    assert r.returncode == 2, r.stderr
    ended = {a["id"]: a for a in _alerts(r.stdout)}["run.child_exit"]
    assert ended["evidence"]["signal"] == "SIGKILL" and "SIGTERM then SIGKILL" in ended["message"]


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_sigint_and_sigterm_reach_the_child(trainer: Path, tmp_path: Path, sig: signal.Signals) -> None:
    fifo = tmp_path / "ready"
    os.mkfifo(fifo)
    log = tmp_path / "out.log"
    proc = subprocess.Popen(_cmd("--headless", "--no-gpu", "--log", str(log), "--",
                                 sys.executable, str(trainer), "sigint", str(fifo)),
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            stdin=subprocess.DEVNULL)
    try:
        with open(fifo) as ready:  # blocks until the child has its handler in place
            assert ready.readline() == "ready\n"
        proc.send_signal(sig)  # to trainwatch alone (a terminal's Ctrl-C reaches only the foreground group)
        _, err = proc.communicate(timeout=TIMEOUT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 42, err
    assert f"got {sig.name}" in log.read_text()
    assert f"passed {sig.name} on" in err
    assert "Traceback" not in err


@pytest.mark.parametrize("make, code, words", [
    (lambda d: "no-such-trainer-command", 127, "command not found"),
    (lambda d: str(d / "missing.py"), 127, "no such file"),
    (lambda d: _not_executable(d), 126, "permission denied"),
])
def test_a_command_that_cannot_start_is_one_line(tmp_path: Path, make, code: int, words: str) -> None:  # type: ignore[no-untyped-def]
    # no --headless and no terminal: the fallback's notice must not come before the one line either
    r = _run(_cmd("--no-gpu", "--log", "out.log", "--", make(tmp_path), "--lr", "3"), tmp_path)
    assert r.returncode == code
    assert r.stderr.count("\n") == 1 and words in r.stderr and r.stdout == ""
    assert not (tmp_path / "out.log").exists()  # nothing ran, so nothing is left behind


def _not_executable(d: Path) -> str:
    p = d / "train.sh"
    p.write_text("#!/bin/sh\necho hi\n")
    p.chmod(stat.S_IRUSR | stat.S_IWUSR)
    return str(p)


def test_an_existing_log_is_never_overwritten(trainer: Path, tmp_path: Path) -> None:
    log = tmp_path / "keep.log"
    log.write_text("yesterday's run\n")
    r = _run(_cmd("--no-gpu", "--log", str(log), "--", sys.executable, str(trainer), "nan"), tmp_path)
    assert r.returncode == 3
    assert r.stderr.count("\n") == 1 and "already exists" in r.stderr
    assert log.read_text() == "yesterday's run\n"


def test_default_log_name_and_no_command(trainer: Path, tmp_path: Path) -> None:
    r = _run(_cmd("--headless", "--no-gpu", sys.executable, str(trainer), "exit", "0"), tmp_path)  # no "--" needed
    assert r.returncode == 0, r.stderr
    logs = list(tmp_path.glob("trainwatch-*Z.log"))
    assert len(logs) == 1 and "train_runtime" in logs[0].read_text()
    r = _run(_cmd("--headless"), tmp_path)
    assert r.returncode == 3 and "no command given" in r.stderr


@pytest.mark.parametrize("child_died", [True, False])
def test_a_dead_child_is_ended_not_stalled(child_died: bool) -> None:
    """Through a real engine on a fake clock: after the child's end the silence is no stall; without it,
    the same silence is one (so the first half could fail)."""
    from tests.rules.rulekit import Run
    from trainwatch.model import EventKind

    run = Run()
    for step in range(1, 41):
        run.step(step, loss=2.0 - step * 0.01)
    if child_died:
        run.event(EventKind.TRAIN_END, text="killed", exit_code=137, signal="SIGKILL", command="python train.py")
    run.clock.t += 6 * 3600
    run.changes.extend(run.engine.tick())
    hangs = [r for r in run.fired() if r.startswith("hang.")]
    if child_died:
        assert run.engine.sources["run.log"].ended and not hangs
        assert run.alert("run.child_exit").severity.label == "critical"
    else:
        assert "hang.stall" in hangs


def test_closing_the_dashboard_stops_the_child(trainer: Path, tmp_path: Path) -> None:
    """The TUI in a real terminal (a private tmux server): the NaN alert shows, `q` closes the dashboard,
    the training still running is stopped with SIGTERM, and the exit code is the child's (128 + 15)."""
    from tests.tui.terminal import TMUX, Tmux

    if TMUX is None:
        pytest.skip("needs tmux")
    root = Path(__file__).resolve().parents[1]
    tm = Tmux("xterm-256color", tmp_path / "tmux.conf")
    status = tmp_path / "status"
    cmd = (f"cd {tmp_path} && env -u COLUMNS -u LINES TERM=xterm-256color PYTHONPATH={root} {sys.executable} "
           f"-m trainwatch run --no-gpu --grace 5 --log out.log -- {sys.executable} {trainer} hang; "
           f"echo $? > {status}.tmp && mv {status}.tmp {status}; sleep 120")
    tm("new-session", "-d", "-s", "tw", "-x", "120", "-y", "40", "sh", "-c", cmd)
    try:
        tm.wait_for(lambda t: "CRITICAL" in t, 40, "the NaN alert on the dashboard")
        tm("send-keys", "-t", "tw", "q")
        tm.wait_for(lambda t: status.exists(), 30, "trainwatch to exit")
    finally:
        tm("kill-server")
    assert status.read_text().strip() == str(128 + signal.SIGTERM)
    pid = int((tmp_path / "out.log").read_text().split("pid ")[1].split()[0])
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


@pytest.mark.parametrize("pty", [True, False])
def test_child_output_keeps_its_order_and_the_status_is_known(tmp_path: Path, pty: bool,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """sources/child.py alone: stdout and stderr interleaved arrive in the order written, the status after them.
    PYTHONUNBUFFERED is unset, so with the pty the order comes from the terminal's line buffering."""
    import threading

    monkeypatch.delenv("PYTHONUNBUFFERED", raising=False)

    from trainwatch.sources.child import Child, ExitStatus

    script = ("import sys\nfor i in range(3):\n    print(f'out {i}')\n    print(f'err {i}', file=sys.stderr)\n"
              "sys.exit(9)\n")
    seen: list[ExitStatus] = []
    done = threading.Event()
    with open(tmp_path / "child.log", "xb") as log:
        child = Child([sys.executable, "-c", script], log, pty=pty,
                      on_exit=lambda status: (seen.append(status), done.set()))
        child.start()
        assert done.wait(TIMEOUT)
    assert child.mode == ("pty" if pty else "pipe")
    assert (tmp_path / "child.log").read_text().splitlines() == ["out 0", "err 0", "out 1", "err 1", "out 2", "err 2"]
    assert seen == [ExitStatus(code=9)] and seen[0].shell_code == 9 and not child.running


def test_the_child_gets_the_users_environment(tmp_path: Path) -> None:
    """The CLI loads numpy's BLAS with one thread through OPENBLAS_NUM_THREADS, then takes the variable
    away: the training run it starts must not inherit it (nor miss one the user set)."""
    show = "import os; print('blas=' + str(os.environ.get('OPENBLAS_NUM_THREADS')))"
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    r = subprocess.run(_cmd("--headless", "--no-gpu", "--log", "a.log", "--", sys.executable, "-c", show),
                       cwd=tmp_path, capture_output=True, text=True, timeout=TIMEOUT, stdin=subprocess.DEVNULL,
                       env=env)
    assert r.returncode == 0, r.stderr
    assert "blas=None" in (tmp_path / "a.log").read_text()
    r = subprocess.run(_cmd("--headless", "--no-gpu", "--log", "b.log", "--", sys.executable, "-c", show),
                       cwd=tmp_path, capture_output=True, text=True, timeout=TIMEOUT, stdin=subprocess.DEVNULL,
                       env={**env, "OPENBLAS_NUM_THREADS": "3"})
    assert "blas=3" in (tmp_path / "b.log").read_text()
