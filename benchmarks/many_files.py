"""The cost of following many files: N logs under one glob, each written at R lines/s by one writer process,
followed by `trainwatch tail --headless` on the glob; its CPU time (from /proc/PID/stat, so other load on
the machine does not count) and RSS over a window that starts once the backlog is read (the main thread,
which reads it, has gone idle) and the warm-up has passed.

    PYTHONPATH=$PWD python benchmarks/many_files.py [--files 200] [--rate 10] [--seconds 60] [--poll]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

WRITER = r"""
import sys, time
folder, files, rate, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
handles = [open(f"{folder}/rank{i:03d}.log", "a", buffering=1) for i in range(files)]
step, start = 0, time.monotonic()
while time.monotonic() - start < seconds:
    step += 1
    for f in handles:
        f.write(f"Step {step}: loss={2.5 - step * 1e-4:.4f}, lr=1e-4\n")
    time.sleep(max(0.0, start + step / rate - time.monotonic()))
"""


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def thread_cpu_seconds(pid: int, tid: int) -> float:
    fields = Path(f"/proc/{pid}/task/{tid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wait_started(pid: int, limit: float = 300.0) -> float:
    """Seconds until the main thread (which reads every file's backlog before following) goes idle."""
    t0 = time.monotonic()
    last = thread_cpu_seconds(pid, pid)
    while time.monotonic() - t0 < limit:
        time.sleep(1.0)
        now = thread_cpu_seconds(pid, pid)
        if now - last < 0.02 and len(os.listdir(f"/proc/{pid}/task")) > 1:
            break
        last = now
    return time.monotonic() - t0


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=200)
    ap.add_argument("--rate", type=float, default=10.0, help="lines per second per file")
    ap.add_argument("--seconds", type=float, default=60.0, help="the measured window")
    ap.add_argument("--warmup", type=float, default=5.0)
    ap.add_argument("--poll", action="store_true", help="follow by polling instead of inotify")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        for i in range(args.files):
            Path(d, f"rank{i:03d}.log").write_text("Step 0: loss=2.5000, lr=1e-4\n")
        total = 3600.0  # killed at the end
        writer = subprocess.Popen([sys.executable, "-c", WRITER, d, str(args.files), str(args.rate), str(total)])
        tail = subprocess.Popen([sys.executable, "-m", "trainwatch", "tail", f"{d}/*.log", "--headless", "--no-gpu",
                                 "--daemon", *(["--poll"] if args.poll else [])],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            started = wait_started(tail.pid)  # the measured window starts once the backlog is read
            time.sleep(args.warmup)
            c0, t0 = cpu_seconds(tail.pid), time.monotonic()
            peak = 0.0
            while time.monotonic() - t0 < args.seconds:
                time.sleep(1.0)
                peak = max(peak, rss_mb(tail.pid))
            cpu = (cpu_seconds(tail.pid) - c0) / (time.monotonic() - t0) * 100
            w0 = cpu_seconds(writer.pid)
        finally:
            tail.terminate()
            tail.wait(timeout=30)
            writer.kill()
            writer.wait()
    mode = "poll" if args.poll else "inotify"
    print(f"{args.files} files x {args.rate:g} lines/s, {mode}: tail {cpu:.1f}% of a core, peak RSS {peak:.0f} MB "
          f"({peak / args.files:.2f} MB per file); backlog read in {started:.0f} s; writer used {w0:.1f} s CPU; "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
