"""Memory and time of `trainwatch check` on a wide JSON-lines log: a few hundred metrics a line.

Logs that record per-layer statistics (a grad norm per layer, an accuracy per class) hold hundreds of
series. What each series costs the store then sets the peak memory, not the file's size. Generates
20,000 lines of 303 metrics (about 155 MB) and times `check` with its peak RSS.

    python benchmarks/wide_jsonl.py [--lines 20000] [--dir /tmp/trainwatch-wide] [--keep]
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from check_speed import run_measured  # the sibling script's measuring wrapper


def make_wide(path: Path, lines: int) -> None:
    rng = random.Random(1)
    keys = ([f"layer{i}/grad_norm" for i in range(150)] + [f"eval_acc_{i}" for i in range(50)]
            + [f"loss_{i}" for i in range(100)])
    with open(path, "w", encoding="utf-8") as f:
        for step in range(1, lines + 1):
            rec = {"step": step, "loss": 2.0 / (1 + step / 1000) + rng.random() * 0.01, "lr": 1e-4, "grad_norm": 1.0}
            for k in keys:
                rec[k] = round(rng.random(), 5)
            f.write(json.dumps(rec) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lines", type=int, default=20_000)
    ap.add_argument("--dir", default="/tmp/trainwatch-wide")
    ap.add_argument("--keep", action="store_true", help="keep the generated file")
    args = ap.parse_args()
    d = Path(args.dir)
    d.mkdir(parents=True, exist_ok=True)
    path = d / "wide.jsonl"
    if not path.exists():
        make_wide(path, args.lines)
    mb = path.stat().st_size / 2**20
    runs = [run_measured([sys.executable, "-m", "trainwatch", "check", str(path)]) for _ in range(2)]
    wall = min(r[0] for r in runs)
    print(f"wide jsonl {mb:5.0f} MB, 303 metrics a line | trainwatch check {wall:5.2f}s "
          f"({mb / wall:4.0f} MB/s, exit {runs[0][1]}) | peak RSS {max(r[2] for r in runs)} MB")
    if not args.keep:
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
