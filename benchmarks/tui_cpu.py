"""CPU of `trainwatch tail` (TUI) following a log that grows 10 lines/s with 30 metrics per line.

Runs the real command in a tmux pane (a real terminal), appends JSON-lines records at 10 lines/s
for --seconds, and reads the process's CPU time from /proc. Prints the share of one core.
Usage: python benchmarks/tui_cpu.py [--seconds 30]
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
    args = ap.parse_args()
    tmux = shutil.which("tmux")
    if tmux is None:
        print("needs tmux", file=sys.stderr)
        return 3
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "train.jsonl"
        log.write_text("".join(record(s) for s in range(1, 21)))
        sock = f"twbench{os.getpid()}"
        t = [tmux, "-L", sock, "-f", "/dev/null"]
        subprocess.run(t + ["new-session", "-d", "-s", "b", "-x", "160", "-y", "48",
                            f"{sys.executable} -m trainwatch tail --no-gpu {log}"], check=True)
        try:
            pid = int(subprocess.run(t + ["display-message", "-p", "-t", "b", "#{pane_pid}"],
                                     capture_output=True, text=True).stdout.strip())
            deadline = time.monotonic() + 30
            while "quit" not in subprocess.run(t + ["capture-pane", "-p", "-t", "b"], capture_output=True,
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
    print(f"trainwatch tail (TUI): {share:.1f}% of one core over {w1 - w0:.0f}s at {args.rate:g} lines/s, "
          f"30 metrics/line ({step - 21} lines)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
