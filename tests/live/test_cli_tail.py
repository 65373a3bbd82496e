"""`python -m trainwatch tail --headless` end to end, in a real child process."""

from __future__ import annotations

import json
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from .conftest import append

BACKLOG = "".join(f"Step {i}: loss={2.5 - i * 0.01:.2f}, lr=1e-4\n" for i in range(1, 6))


class Tail:
    """The command running in a child process, its stdout read line by line on a thread."""

    def __init__(self, *args: str, cwd: Path) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "trainwatch", "tail", *args, "--headless", "--no-gpu"],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=cwd)
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        self.err: list[str] = []
        threading.Thread(target=self._pump, args=(self.proc.stdout, self.lines), daemon=True).start()
        threading.Thread(target=self._pump_err, daemon=True).start()

    @staticmethod
    def _pump(stream, q) -> None:  # type: ignore[no-untyped-def]
        for line in stream:
            q.put(line.rstrip("\n"))

    def _pump_err(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.err.append(line.rstrip("\n"))

    def wait_line(self, needle: str, timeout: float = 15.0) -> str:
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"no line with {needle!r}; got {self.seen} / stderr {self.err}")
            try:
                line = self.lines.get(timeout=left)
            except queue.Empty:
                continue
            self.seen.append(line)
            if needle in line:
                return line

    def wait_err(self, needle: str, timeout: float = 15.0) -> None:
        deadline = time.monotonic() + timeout
        ev = threading.Event()
        while not any(needle in e for e in self.err):
            if time.monotonic() > deadline:
                raise AssertionError(f"no stderr line with {needle!r}: {self.err}")
            ev.wait(0.02)

    def finish(self, timeout: float = 20.0) -> int:
        try:
            return self.proc.wait(timeout=timeout)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()


def test_nan_alert_then_exit_on_critical(tmp_path: Path) -> None:
    log = tmp_path / "run.log"
    log.write_text(BACKLOG)
    alerts = tmp_path / "alerts.jsonl"
    t = Tail(str(log), "--exit-on", "critical", "--alert-log", str(alerts), cwd=tmp_path)
    append(log, "Step 6: loss=nan, lr=1e-4")
    line = t.wait_line("loss.nonfinite")
    assert "CRITICAL" in line and "step 6" in line
    assert t.finish() == 2
    records = [json.loads(x) for x in alerts.read_text().splitlines()]
    nan = [r for r in records if r["id"] == "loss.nonfinite"]
    assert len(nan) == 1 and nan[0]["severity"] == "critical" and nan[0]["state"] == "firing"
    assert nan[0]["step"] == 6


def test_json_lines_parse_and_sigterm_gives_worst_severity(tmp_path: Path) -> None:
    log = tmp_path / "run.log"
    log.write_text(BACKLOG)
    t = Tail(str(log), "--json", "--status-every", "0.2", cwd=tmp_path)
    status = json.loads(t.wait_line('"type": "status"'))
    assert status["sources"][0]["step"] == 5
    append(log, "Step 6: loss=nan, lr=1e-4")
    alert = json.loads(t.wait_line("loss.nonfinite"))
    assert alert["type"] == "alert" and alert["severity"] == "critical" and alert["step"] == 6
    assert isinstance(alert["fixes"], list) and alert["fixes"]
    t.proc.send_signal(signal.SIGTERM)
    assert t.finish() == 2
    for line in t.seen:
        json.loads(line)  # every stdout line is JSON
    assert not any("Traceback" in e for e in t.err)


def test_sigint_with_nothing_wrong_exits_0(tmp_path: Path) -> None:
    log = tmp_path / "run.log"
    log.write_text(BACKLOG)
    t = Tail(str(log), "--status-every", "0.2", cwd=tmp_path)
    t.wait_line("status")
    t.proc.send_signal(signal.SIGINT)
    assert t.finish() == 0


def test_ends_when_the_run_ends(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text("".join(f"{{'loss': {2.0 - i / 100:.4f}, 'grad_norm': 0.7, 'learning_rate': 5e-05, "
                           f"'epoch': {i / 100:.2f}}}\n" for i in range(1, 6)))
    t = Tail(str(log), "--format", "hf_console", "--status-every", "0.2", cwd=tmp_path)
    t.wait_line("status")
    assert t.proc.poll() is None  # still following
    append(log, "{'train_runtime': 100.0, 'train_samples_per_second': 5.0, 'train_steps_per_second': 0.5, "
                "'train_loss': 1.98, 'epoch': 0.05}")
    rc = t.finish(timeout=20)
    assert rc in (0, 1)  # ended by itself, not killed


def test_missing_file_waits_and_says_so_once(tmp_path: Path) -> None:
    log = tmp_path / "later.log"
    t = Tail(str(log), "--exit-on", "critical", cwd=tmp_path)
    t.wait_err("does not exist yet")
    append(log, BACKLOG.rstrip("\n"))
    append(log, "Step 6: loss=nan, lr=1e-4")
    t.wait_line("loss.nonfinite")
    assert t.finish() == 2
    assert sum("does not exist yet" in e for e in t.err) == 1


HOOK = """
import json, os, sys
alert = json.load(sys.stdin)
with open(sys.argv[1], "a") as f:
    f.write(json.dumps({"id": alert["id"], "env": os.environ["TRAINWATCH_ALERT_ID"],
                        "sev": os.environ["TRAINWATCH_SEVERITY"], "argv": sys.argv[2:]}) + "\\n")
"""


def test_on_alert_hook_gets_json_on_stdin_without_a_shell(tmp_path: Path) -> None:
    log = tmp_path / "run.log"
    log.write_text(BACKLOG)
    hook = tmp_path / "hook.py"
    hook.write_text(HOOK)
    got = tmp_path / "got.jsonl"
    cmd = f"{sys.executable} {hook} {got} 'two words' $HOME;touch {tmp_path / 'pwned'}"
    t = Tail(str(log), "--on-alert", cmd, "--exit-on", "critical", cwd=tmp_path)
    append(log, "Step 6: loss=nan, lr=1e-4")
    t.wait_line("loss.nonfinite")
    assert t.finish() == 2
    records = [json.loads(x) for x in got.read_text().splitlines()]
    assert records and records[0]["id"] == records[0]["env"] == "loss.nonfinite"
    assert records[0]["sev"] == "critical"
    assert records[0]["argv"] == ["two words", "$HOME;touch", str(tmp_path / "pwned")]  # no shell expanded it
    assert not (tmp_path / "pwned").exists()


def test_hanging_or_missing_hook_does_not_block_alerts(tmp_path: Path) -> None:
    log = tmp_path / "run.log"
    log.write_text(BACKLOG)
    hang = f"{sys.executable} -c 'import time; time.sleep(60)'"
    t = Tail(str(log), "--on-alert", hang, "--hook-timeout", "30", cwd=tmp_path)
    append(log, "Step 6: loss=nan, lr=1e-4")
    t.wait_line("loss.nonfinite")
    append(log, "Step 7: loss=2.0, lr=1e-4, grad_norm=nan")
    append(log, "Step 8: loss=2.0, lr=1e-4, grad_norm=nan")  # two in a row: not an fp16 scaler skip
    t.wait_line("grad.nonfinite", timeout=10)  # printed while the first hook still hangs
    t.proc.send_signal(signal.SIGTERM)
    assert t.finish(timeout=15) == 2
    t2 = Tail(str(log), "--on-alert", "no-such-command-xyz", "--exit-on", "critical", cwd=tmp_path)
    t2.wait_line("loss.nonfinite")
    assert t2.finish() == 2
    t2.wait_err("alert hook command not found: no-such-command-xyz")  # the sink's notice, on stderr


def test_tui_path_is_reported_when_unavailable_or_bad_usage(tmp_path: Path) -> None:
    r = subprocess.run([sys.executable, "-m", "trainwatch", "tail", "x.log", "--headless", "--exit-on", "bogus"],
                       capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 3 and "unknown severity" in r.stderr


def _run_tail(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """A tail that must end by itself, at once: a timeout here means it waited on nothing."""
    return subprocess.run([sys.executable, "-m", "trainwatch", "tail", *args, "--headless", "--no-gpu"],
                          capture_output=True, text=True, cwd=cwd, timeout=30)


def _one_error_line(r: subprocess.CompletedProcess[str]) -> str:
    assert r.returncode == 3, (r.returncode, r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("trainwatch: error: "), r.stderr
    return lines[0]


def test_binary_file_alone_is_refused_at_once(tmp_path: Path) -> None:
    (tmp_path / "prog").write_bytes(b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 32)
    line = _one_error_line(_run_tail("prog", cwd=tmp_path))
    assert "prog: binary data, not a text log" in line and "nothing to follow" in line


def test_binary_file_beside_a_log_is_a_notice_and_the_log_is_followed(tmp_path: Path) -> None:
    (tmp_path / "prog").write_bytes(bytes(range(256)) * 32)
    (tmp_path / "run.log").write_text(BACKLOG)
    t = Tail("prog", "run.log", "--exit-on", "critical", cwd=tmp_path)
    t.wait_err("prog: binary data, not a text log; not followed")
    append(tmp_path / "run.log", "Step 6: loss=nan, lr=1e-4")
    t.wait_line("loss.nonfinite")
    assert t.finish() == 2


def test_unknown_format_is_a_usage_error_at_once(tmp_path: Path) -> None:
    (tmp_path / "run.log").write_text(BACKLOG)
    line = _one_error_line(_run_tail("run.log", "--format", "nope", cwd=tmp_path))
    assert "tail: argument --format: unknown format 'nope'" in line and "'trainwatch tail --help'" in line


def test_empty_directory_says_so_and_waits_for_a_log(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()
    t = Tail("runs", "--exit-on", "critical", cwd=tmp_path)
    t.wait_err("runs: no log files in this directory yet; waiting for one to appear")
    assert not any("does not exist" in e for e in t.err)
    assert t.proc.poll() is None  # still waiting, as tail -F waits
    append(runs / "train.log", BACKLOG + "Step 6: loss=nan, lr=1e-4")
    t.wait_line("loss.nonfinite")
    assert t.finish() == 2


def test_missing_file_that_turns_out_binary_ends_with_exit_3(tmp_path: Path) -> None:
    t = Tail("later.log", cwd=tmp_path)
    t.wait_err("later.log: does not exist yet")
    writer = "import sys; open(sys.argv[1], 'wb').write(bytes(range(256)) * 32)"
    subprocess.run([sys.executable, "-c", writer, str(tmp_path / "later.log")], check=True)
    assert t.finish() == 3
    assert any("binary data" in e for e in t.err)
    assert t.err[-1].startswith("trainwatch: error: nothing left to follow")


def test_interrupted_before_any_log_was_read_exits_3(tmp_path: Path) -> None:
    t = Tail("later.log", cwd=tmp_path)
    t.wait_err("later.log: does not exist yet")
    t.proc.send_signal(signal.SIGINT)
    assert t.finish() == 3  # nothing read is no verdict, not "healthy"


def test_forced_wrong_format_is_said_once_and_stopping_exits_3(tmp_path: Path) -> None:
    hf = Path(__file__).resolve().parents[2] / "examples" / "logs" / "hf_healthy.log"
    (tmp_path / "run.log").write_text(hf.read_text(encoding="utf-8"), encoding="utf-8")
    t = Tail("run.log", "--format", "jsonl", cwd=tmp_path)
    t.wait_err("run.log: read as jsonl, but nothing in the")
    t.wait_err("is --format jsonl right?")
    t.proc.send_signal(signal.SIGINT)
    assert t.finish() == 3  # nothing understood is no verdict, as `check` says with exit 3
    assert sum("read as jsonl" in e for e in t.err) == 1
