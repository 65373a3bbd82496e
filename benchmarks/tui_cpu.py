"""CPU of `trainwatch tail` (TUI) following a log that grows 10 lines/s with 30 metrics per line.

Runs the real command in a tmux pane (a real terminal), appends JSON-lines records at 10 lines/s
for --seconds, and reads the process's CPU time from /proc. Prints the share of one core.
With --headless it measures `trainwatch tail --headless` on the same feed: the watcher's own cost
(following, parsing, rules), so the TUI's share is the difference.
Usage: python benchmarks/tui_cpu.py [--seconds 30] [--headless] [--size 160x48]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def cpu_seconds(pid: int) -> float:
    """utime + stime of pid and its threads, in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def record(step: int) -> str:
    values = {"step": step, "loss": 2.0 * math.exp(-step / 300) + 0.5, "grad_norm": 1.0, "lr": 3e-4}
    for i in range(27):
        values[f"metric_{i:02d}"] = math.sin(step / (i + 3))
    return json.dumps(values) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--rate", type=float, default=10.0, help="lines per second")
    ap.add_argument("--headless", action="store_true", help="measure `tail --headless` instead of the TUI")
    ap.add_argument("--size", default="160x48", help="terminal size, COLSxROWS")
    ap.add_argument("--extra", default="", help="more arguments for `trainwatch tail`, e.g. '--refresh 1'")
    args = ap.parse_args()
    cols, rows = args.size.split("x")
    tmux = shutil.which("tmux")
    if tmux is None:
        print("needs tmux", file=sys.stderr)
        return 3
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "train.jsonl"
        log.write_text("".join(record(s) for s in range(1, 21)))
        sock = f"twbench{os.getpid()}"
        t = [tmux, "-L", sock, "-f", "/dev/null"]
        mode = "--headless --daemon --status-every 1 " if args.headless else ""
        subprocess.run(t + ["new-session", "-d", "-s", "b", "-x", cols, "-y", rows,
                            f"{sys.executable} -m trainwatch tail --no-gpu {mode}{args.extra} {log}"], check=True)
        try:
            pid = int(subprocess.run(t + ["display-message", "-p", "-t", "b", "#{pane_pid}"],
                                     capture_output=True, text=True).stdout.strip())
            deadline = time.monotonic() + 30
            ready = "step" if args.headless else "quit"  # a status line, or the TUI's footer
            while ready not in subprocess.run(t + ["capture-pane", "-p", "-t", "b"], capture_output=True,
                                              text=True).stdout:
                if time.monotonic() > deadline:
                    print("the TUI did not start", file=sys.stderr)
                    return 3
                time.sleep(0.2)
            c0, w0 = cpu_seconds(pid), time.monotonic()
            step = 21
            with log.open("a") as f:
                while time.monotonic() - w0 < args.seconds:
                    f.write(record(step))
                    f.flush()
                    step += 1
                    time.sleep(1.0 / args.rate)  # the pace of the simulated training run
            c1, w1 = cpu_seconds(pid), time.monotonic()
        finally:
            subprocess.run(t + ["kill-server"])
    share = (c1 - c0) / (w1 - w0) * 100
    what = "headless" if args.headless else f"TUI {args.size}"
    print(f"trainwatch tail ({what}): {share:.1f}% of one core over {w1 - w0:.0f}s at {args.rate:g} lines/s, "
          f"30 metrics/line ({step - 21} lines)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
