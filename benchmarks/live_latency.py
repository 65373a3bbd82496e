#!/usr/bin/env python
"""Live latency and idle CPU of `trainwatch tail --headless` (a script, not a test).

Latency: a line is written and flushed to the log; the time until its alert is printed by the
child process (read from its stdout pipe). Each probe line crosses a range rule's threshold
(loss above 100) and the next line resolves it, so every probe fires a fresh alert.
CPU: the child's user+system time while it follows a quiet log for --idle seconds.

    python benchmarks/live_latency.py [--probes 200] [--idle 30] [--poll]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

CONFIG = """rules:
  bench.high:
    metric: loss
    above: 100
    severity: warning
    family: loss
    title: benchmark probe
"""


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / tick  # utime + stime


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--probes", type=int, default=200)
    ap.add_argument("--idle", type=float, default=30.0)
    ap.add_argument("--poll", action="store_true", help="measure polling mode instead of inotify")
    args = ap.parse_args()
    d = Path(tempfile.mkdtemp(prefix="tw-bench-"))
    log, cfg = d / "run.log", d / "bench.yaml"
    cfg.write_text(CONFIG)
    with open(log, "w") as f:
        for i in range(1, 6):
            f.write(f"Step {i}: loss=2.0, lr=1e-4\n")
    cmd = [sys.executable, "-m", "trainwatch", "tail", str(log), "--headless", "--json", "--no-gpu",
           "--format", "keyvalue", "--config", str(cfg)] + (["--poll"] if args.poll else [])
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, bufsize=1)
    fired: dict[int, float] = {}
    got = threading.Condition()

    def reader() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            t = time.perf_counter()
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if rec.get("id") == "bench.high" and rec.get("state") == "firing":
                with got:
                    fired[int(rec["step"])] = t
                    got.notify_all()

    threading.Thread(target=reader, daemon=True).start()
    time.sleep(2.0)  # let it start and read the backlog
    with open(log, "a") as out:
        latencies = []
        step = 100
        for _ in range(args.probes):
            step += 1
            t0 = time.perf_counter()
            out.write(f"Step {step}: loss=1000.0, lr=1e-4\n")
            out.flush()
            with got:
                if not got.wait_for(lambda s=step: s in fired, timeout=5):
                    print(f"probe {step}: no alert within 5 s", file=sys.stderr)
                    continue
            latencies.append((fired[step] - t0) * 1000)
            step += 1
            out.write(f"Step {step}: loss=2.0, lr=1e-4\n")  # resolves it, so the next probe fires again
            out.flush()
            time.sleep(0.02)
    time.sleep(1.0)
    c0, w0 = cpu_seconds(proc.pid), time.perf_counter()
    time.sleep(args.idle)
    c1, w1 = cpu_seconds(proc.pid), time.perf_counter()
    proc.terminate()
    proc.wait(timeout=10)
    lat = sorted(latencies)
    p99 = lat[min(len(lat) - 1, int(round(0.99 * (len(lat) - 1))))] if lat else float("nan")
    mode = "poll" if args.poll else "inotify"
    print(f"mode {mode}: {len(lat)}/{args.probes} probes; latency median {statistics.median(lat):.1f} ms, "
          f"p99 {p99:.1f} ms, max {lat[-1]:.1f} ms")
    print(f"idle CPU over {w1 - w0:.0f} s: {100 * (c1 - c0) / (w1 - w0):.2f}% of one core")


if __name__ == "__main__":
    main()
