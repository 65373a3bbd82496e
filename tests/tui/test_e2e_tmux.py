"""End to end in a real terminal: tmux runs `python -m trainwatch tail FILE` while a child process
appends a real HF Trainer log (the high-LR example) to FILE. We poll capture-pane (with timeouts,
never fixed sleeps) for the log pane, the new step, then the alert and its first fix; `q` must exit
with the worst severity seen (2: critical, as headless) and leave the alternate screen. FILE is typed
as a relative path once (the README's own example) and as an absolute one once. A missing file must
show UNKNOWN and why, never OK, and `q` then exits 3. With the dashboard open, `--on-alert` runs its
hook and `--alert-log` logs when a child process appends a NaN, and `--exit-on critical` closes the
dashboard by itself with exit code 2, as headless does.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.tui.terminal import TMUX, WRITER, Tmux

ROOT = Path(__file__).resolve().parents[2]
LOG = ROOT / "examples" / "logs" / "hf_high_lr.log"
pytestmark = pytest.mark.skipif(TMUX is None or not LOG.is_file(), reason="needs tmux and examples/logs")


def _expected_alert() -> tuple[str, str]:
    """The most severe alert the engine raises on this log, and its first fix (from the same code)."""
    from trainwatch.runner import open_source
    from trainwatch.session import make_engine

    src = open_source(LOG)
    eng = make_engine([src], None, None, clock=lambda: 0.0)
    for n, line in enumerate(LOG.read_text(encoding="utf-8").splitlines(), 1):
        for rec in src.parser.feed(line, n):
            eng.feed(rec)
    from trainwatch.model import AlertState, Severity

    live = [a for a in eng.alerts() if a.severity is Severity.CRITICAL and a.state is AlertState.FIRING]
    top = max(live, key=lambda a: (a.first_step or 0, a.first_line))  # the panel's order: newest critical first
    return top.title, top.fixes[0]


def _start(tm: Tmux, tmp_path: Path, term: str, path: str, size: tuple[int, int], *extra: str) -> Path:
    """Runs tail in a tmux session from tmp_path; returns the file its exit status will be written to."""
    # -u: pytest's process has COLUMNS=80 LINES=24 set, and Textual would take them over the pane's size
    env = f"-u COLUMNS -u LINES TERM={term} PYTHONPATH={ROOT}"
    status = tmp_path / "status"
    # the shell records the exit status, then keeps the pane open so its screen can still be read
    opts = " ".join(shlex.quote(x) for x in extra)
    cmd = (f"cd {tmp_path} && env {env} {sys.executable} -m trainwatch tail --no-gpu {path} {opts}; "
           f"echo $? > {status}.tmp && mv {status}.tmp {status}; sleep 120")
    tm("new-session", "-d", "-s", "tw", "-x", str(size[0]), "-y", str(size[1]), "sh", "-c", cmd)
    return status


@pytest.mark.parametrize(("term", "typed"), [("xterm-256color", "relative"), ("screen", "absolute")])
def test_tail_in_tmux_shows_step_then_alert_and_quits_cleanly(tmp_path: Path, term: str, typed: str) -> None:
    title, fix = _expected_alert()
    log = tmp_path / "train.log"
    log.write_text("".join(LOG.read_text(encoding="utf-8").splitlines(keepends=True)[:4]), encoding="utf-8")
    tm = Tmux(term, tmp_path / "tmux.conf")
    status = _start(tm, tmp_path, term, "train.log" if typed == "relative" else str(log), (200, 50))
    try:
        tm.wait_for(lambda t: "trainwatch" in t and "quit" in t, 30, "the TUI to start")
        # four lines of banner and progress bars: named, not recognised yet, so no verdict yet
        tm.wait_for(lambda t: "UNKNOWN" in t and "(not read yet)" in t, 20, "UNKNOWN before the log is read")
        writer = subprocess.Popen([sys.executable, "-c", WRITER, str(LOG), str(log), "4", "0.15"])
        try:
            tm.wait_for(lambda t: "/60 " in t, 40, "a step from the appended lines")
            screen = tm.wait_for(lambda t: "CRITICAL" in t and title in t, 40, f"the alert {title!r}")
            tm.wait_for(lambda t: "what to try" in t and fix[:14] in t, 20,
                        f"its first fix {fix[:14]!r}")
            assert "\x1b" not in screen
            title_of_pane = "log · train.log" if typed == "relative" else f"log · {log}"
            tm.wait_for(lambda t: title_of_pane in t and "{'loss'" in t and "no lines yet" not in t, 20,
                        f"the log pane titled {title_of_pane!r} with the lines")
        finally:
            writer.wait(timeout=60)
        tm("send-keys", "-t", "tw", "q")
        tm.wait_for(lambda t: status.exists(), 20, "the process to exit")
        assert status.read_text().strip() == "2"  # the worst severity seen, as headless
        assert tm("display-message", "-p", "-t", "tw", "#{alternate_on}").strip() == "0"
        assert "CRITICAL" not in tm.capture()  # the TUI's screen is gone with the alternate screen
    finally:
        tm("kill-server")


def test_missing_file_in_tmux_is_unknown_and_says_why(tmp_path: Path) -> None:
    tm = Tmux("xterm-256color", tmp_path / "tmux.conf")
    status = _start(tm, tmp_path, "xterm-256color", "missing.log", (80, 24))
    try:
        screen = tm.wait_for(lambda t: "UNKNOWN" in t and "missing.log: does not" in t, 30,
                             "UNKNOWN and the missing-file notice")
        assert "no log followed yet" in screen and "Nothing understood" in screen
        assert "healthy" not in screen and " OK " not in screen
        tm("send-keys", "-t", "tw", "q")
        tm.wait_for(lambda t: status.exists(), 20, "the process to exit")
        assert status.read_text().strip() == "3"  # nothing read: no verdict
    finally:
        tm("kill-server")


BACKLOG = "".join(f"Step {i}: loss={2.5 - i * 0.01:.2f}, lr=1e-4\n" for i in range(1, 6))
APPEND_NAN = """
import sys
with open(sys.argv[1], "a", encoding="utf-8") as f:
    f.write("Step 6: loss=nan, lr=1e-4\\n")
"""
# the hook: a Python script (run without a shell) that keeps the alert JSON it gets on stdin
HOOK = """
import os, sys
data = sys.stdin.read()
with open(sys.argv[1] + ".tmp", "w", encoding="utf-8") as f:
    f.write(data)
os.replace(sys.argv[1] + ".tmp", sys.argv[1])
"""


def _wait_file(path: Path, timeout: float, what: str) -> str:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what} ({path})")
        time.sleep(0.1)  # polling interval, not synchronisation
    return path.read_text(encoding="utf-8")


def _append_nan(log: Path) -> None:
    """A real child process appends the NaN step, as a training run would."""
    subprocess.run([sys.executable, "-c", APPEND_NAN, str(log)], check=True, timeout=30)


def test_on_alert_and_alert_log_run_with_the_dashboard_open(tmp_path: Path) -> None:
    log = tmp_path / "run.log"
    log.write_text(BACKLOG, encoding="utf-8")
    hook, got, alerts = tmp_path / "hook.py", tmp_path / "got.json", tmp_path / "alerts.jsonl"
    hook.write_text(HOOK, encoding="utf-8")
    tm = Tmux("xterm-256color", tmp_path / "tmux.conf")
    status = _start(tm, tmp_path, "xterm-256color", "run.log", (120, 40),
                    "--on-alert", f"{sys.executable} {hook} {got}", "--alert-log", str(alerts))
    try:
        tm.wait_for(lambda t: "step 5" in t and re.search(r"\bOK$", t, re.M), 30, "the dashboard on the backlog")
        assert not got.exists()  # nothing at or above the hook's default severity (warning) yet
        _append_nan(log)
        alert = json.loads(_wait_file(got, 30, "the hook's file"))
        assert alert["id"] == "loss.nonfinite" and alert["severity"] == "critical" and alert["step"] == 6
        logged = [json.loads(x) for x in alerts.read_text(encoding="utf-8").splitlines()]
        assert ("loss.nonfinite", "firing") in [(r["id"], r["state"]) for r in logged]  # every change is logged
        tm.wait_for(lambda t: "CRITICAL" in t, 20, "the badge")
        assert not status.exists()  # the hook ran with the dashboard still open
        tm("send-keys", "-t", "tw", "q")
        tm.wait_for(lambda t: status.exists(), 20, "the process to exit")
        assert status.read_text().strip() == "2"  # q after a critical alert: the worst severity seen
    finally:
        tm("kill-server")


def test_exit_on_closes_the_dashboard_with_the_severity(tmp_path: Path) -> None:
    log = tmp_path / "run.log"
    log.write_text(BACKLOG, encoding="utf-8")
    tm = Tmux("xterm-256color", tmp_path / "tmux.conf")
    status = _start(tm, tmp_path, "xterm-256color", "run.log", (80, 24), "--exit-on", "critical")
    try:
        tm.wait_for(lambda t: "step 5" in t and re.search(r"\bOK$", t, re.M), 30, "the dashboard on the backlog")
        _append_nan(log)
        tm.wait_for(lambda t: status.exists(), 30, "the dashboard to close by itself")
        assert status.read_text().strip() == "2"
        assert tm("display-message", "-p", "-t", "tw", "#{alternate_on}").strip() == "0"
    finally:
        tm("kill-server")


def test_a_bad_alert_log_is_one_line_before_any_dashboard(tmp_path: Path) -> None:
    log = tmp_path / "run.log"
    log.write_text(BACKLOG, encoding="utf-8")
    tm = Tmux("xterm-256color", tmp_path / "tmux.conf")
    status = _start(tm, tmp_path, "xterm-256color", "run.log", (120, 40), "--alert-log", "no/such/dir/a.jsonl")
    try:
        tm.wait_for(lambda t: status.exists(), 30, "the process to exit")
        assert status.read_text().strip() == "3"
        screen = tm.capture()
        assert "trainwatch: error: no/such/dir/a.jsonl: cannot open the alert log" in screen
        assert "Traceback" not in screen and "quit" not in screen  # no dashboard was drawn
    finally:
        tm("kill-server")
