"""How fast is `trainwatch check` next to `grep -c loss`, and how much memory does it take?

Generates a ~1 GB Hugging Face Trainer console log (tqdm redraws included) and a ~1 GB JSON-lines log,
then times `trainwatch check` and `grep -c loss` on each in the same run and prints MB/s and peak RSS.
Targets (issue 2): check within 3x of grep on the console log, >= 100 MB/s on JSON lines, peak memory
under 200 MB whatever the size.

    python benchmarks/check_speed.py [--size-mb 1024] [--dir /tmp/twbench] [--keep]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

BAR = "\u2588"


def make_console(path: Path, size: int) -> None:
    rng = random.Random(1)
    total = 10_000_000
    step = 0
    with open(path, "w", encoding="utf-8") as f:
        f.write("***** Running training *****\n  Num examples = 1,000,000\n  Total optimization steps = 10,000,000\n")
        written = 0
        buf: list[str] = []
        while written < size:
            segs = []
            for _ in range(10):
                step += 1
                pct = step * 100 // total
                fill = BAR * (pct // 10)
                segs.append(f"\r{pct:3d}%|{fill:<10}| {step}/{total} "
                            f"[01:{step % 60:02d}<9:59:59, {rng.uniform(3, 5):.2f}it/s]")
            loss = 1.2 + 2.0 * math.exp(-step / 3000) + rng.gauss(0, 0.02)  # falls fast, then settles
            d = (f"{{'loss': {loss:.4f}, 'grad_norm': {rng.uniform(0.5, 2):.6f}, "
                 f"'learning_rate': {2e-5 * (1 - step / total):.6e}, 'epoch': {step / 1e6:.2f}}}")
            chunk = "".join(segs) + "\r" + " " * 60 + "\r" + d + "\n"
            buf.append(chunk)
            written += len(chunk.encode())
            if len(buf) >= 2000:
                f.write("".join(buf))
                buf.clear()
        f.write("".join(buf))


def make_jsonl(path: Path, size: int) -> None:
    rng = random.Random(2)
    with open(path, "w", encoding="utf-8") as f:
        written = 0
        step = 0
        buf: list[str] = []
        t0 = 1.7e9
        while written < size:
            step += 1
            rec = {"step": step, "time": t0 + step * 0.5,
                   "loss": round(1.2 + 2.0 * math.exp(-step / 3000) + rng.gauss(0, 0.02), 5),
                   "lr": 1e-4, "grad_norm": round(rng.uniform(0.5, 2), 4),
                   "tokens_per_sec": round(rng.uniform(9e4, 1e5), 1),
                   "train": {"epoch": round(step / 1e5, 4)}}
            line = json.dumps(rec) + "\n"
            buf.append(line)
            written += len(line)
            if len(buf) >= 5000:
                f.write("".join(buf))
                buf.clear()
        f.write("".join(buf))


def run_measured(cmd: list[str]) -> tuple[float, int, int]:
    """Wall seconds, exit code and peak RSS in MB of one command, run alone under a small wrapper
    (getrusage's children figure is a maximum over every child a process ever had). Output goes to a
    pipe, not /dev/null: GNU grep stops at the first match when it sees its output is /dev/null."""
    wrapper = ("import resource,subprocess,sys,time,json;t=time.perf_counter();"
               "rc=subprocess.run(sys.argv[1:],stdout=subprocess.PIPE).returncode;"
               "print(json.dumps([time.perf_counter()-t,rc,resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss]))")
    out = subprocess.run([sys.executable, "-c", wrapper, *cmd], capture_output=True, text=True, check=True)
    wall, rc, rss_kb = json.loads(out.stdout)
    return wall, rc, rss_kb // 1024


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size-mb", type=int, default=1024)
    ap.add_argument("--dir", default="/tmp/trainwatch-bench")
    ap.add_argument("--keep", action="store_true", help="keep the generated files")
    ap.add_argument("--only", choices=("console", "jsonl"), help="measure one of the two logs")
    args = ap.parse_args()
    d = Path(args.dir)
    d.mkdir(parents=True, exist_ok=True)
    size = args.size_mb << 20
    files = {"console": d / "hf_console.log", "jsonl": d / "metrics.jsonl"}
    if args.only:
        files = {args.only: files[args.only]}
    for kind, path in files.items():
        if not path.exists() or path.stat().st_size < size * 0.95:
            t = time.perf_counter()
            (make_console if kind == "console" else make_jsonl)(path, size)
            print(f"generated {path} ({path.stat().st_size / 2**20:.0f} MB) in {time.perf_counter() - t:.0f}s")
    tw = [sys.executable, "-m", "trainwatch", "check"]
    for kind, path in files.items():
        mb = path.stat().st_size / 2**20
        subprocess.run(["cat", str(path)], stdout=subprocess.DEVNULL)  # warm the page cache for both
        g_wall, _, _ = run_measured(["grep", "-c", "loss", str(path)])
        t_wall, code, peak = run_measured([*tw, str(path)])
        print(f"{kind:8} {mb:7.0f} MB | grep -c loss {g_wall:6.2f}s ({mb / g_wall:7.0f} MB/s) | "
              f"trainwatch check {t_wall:6.2f}s ({mb / t_wall:6.0f} MB/s, exit {code}) | "
              f"ratio {t_wall / g_wall:5.1f}x grep | peak RSS {peak} MB")
    if not args.keep:
        shutil.rmtree(d, ignore_errors=True)
    os.sync()


if __name__ == "__main__":
    main()
