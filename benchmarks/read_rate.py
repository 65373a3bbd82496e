"""The read rate: of the corpus logs that print numbered metrics, the share whose main metric and step are read.

Runs `trainwatch check --json` on every log of the shared corpus (found as benchmarks/accuracy.py finds
it) and looks at what was read, not at the verdict. A log is read when its report holds the main metric
as a series of at least two values with a step: a loss (any series whose canonical name holds `loss`),
or, for a log that prints no loss, its main quality metric. A log that prints no metric (a crash at
start-up) does not count either way. Prints one row per log and the figure.

    python benchmarks/read_rate.py                # every corpus log
    python benchmarks/read_rate.py --only tdmol   # logs whose name contains 'tdmol'
    python benchmarks/read_rate.py --json
"""

from __future__ import annotations

import argparse
import json
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from accuracy import corpus_dir, run_check

# Logs that print no numbered metric at all: the run died before its first logged step.
NO_METRICS = {
    "centerformer-cuda-ptx-error-at-startup.out": "CUDA error before the first step",
    "cirkd-torch-launch-nccl-watchdog-timeout.out": "NCCL timeout before the first step",
    "verl-logic-rl-ray-startup-crash.log": "Ray start-up crash, config dump only",
    "swift-gemma4-zero2-oom-step3.log": "out of memory before the first logged step",
}
# Logs whose main metric is not a loss, because they print none (the README's ground truth says so).
MAIN_QUALITY = {
    "tdmolflow-edm-validity-zero-slurm-timelimit.out": "validity",
    "tdmolflow-edm-nan-warnings-validity-regress-timelimit.out": "validity",
}
SKIPPED_SUFFIXES = (".md",)


@dataclass
class Row:
    log: str
    format: str
    main: str  # the series taken as the main metric, or what was missing
    count: int
    last_step: int | None
    read: bool
    note: str = ""


def main_series(metrics: dict[str, Any], quality: str | None) -> tuple[str, dict[str, Any]] | None:
    """The main metric among the series read: the named quality metric when the log prints no loss, else
    the loss with the most values (the training loss before an evaluation's)."""
    if quality is not None:
        found = [(k, v) for k, v in metrics.items() if quality in k.lower()]
    else:
        found = [(k, v) for k, v in metrics.items() if "loss" in k.lower() and not k.lower().startswith("loss_scale")]
    if not found:
        return None
    return max(found, key=lambda kv: (kv[0] == "loss", kv[1].get("count", 0)))


def judge(path: Path) -> Row | None:
    if path.name in NO_METRICS:
        return None
    code, doc, err = run_check(path)
    if doc is None:
        return Row(path.name, "-", "(no report)", 0, None, False, (err.splitlines() or [f"exit {code}"])[-1][:120])
    src = (doc.get("sources") or [{}])[0]
    quality = MAIN_QUALITY.get(path.name)
    got = main_series(src.get("metrics") or {}, quality)
    if got is None:
        return Row(path.name, src.get("format", "-"), f"(no {quality or 'loss'})", 0, src.get("max_step"), False)
    name, stats = got
    count = int(stats.get("count", 0))
    last = stats.get("last_step")
    ok = count >= 2 and last is not None and last > 0
    return Row(path.name, src.get("format", "-"), name, count, last, ok)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", help="logs whose name contains this")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    corpus = corpus_dir()
    if corpus is None:
        print("read_rate: ../shared/corpus not found (set TRAINWATCH_CORPUS)", file=sys.stderr)
        return 2
    paths = sorted(p for p in corpus.iterdir() if p.is_file() and not p.name.endswith(SKIPPED_SUFFIXES)
                   and (not args.only or args.only in p.name))
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        rows = [r for r in pool.map(judge, paths) if r is not None]
    read = sum(r.read for r in rows)
    rate = read / len(rows) if rows else 0.0
    if args.json:
        print(json.dumps({"rate": rate, "read": read, "logs": len(rows), "rows": [asdict(r) for r in rows]}, indent=1))
    else:
        for r in rows:
            mark = "read" if r.read else "MISS"
            step = "-" if r.last_step is None else str(r.last_step)
            print(f"{mark:4}  {r.log[:58]:58}  {r.format:13} {r.main[:28]:28} n={r.count:<6} step={step} {r.note}")
        skipped = [p.name for p in paths if p.name in NO_METRICS]
        print(f"\nread rate: {read}/{len(rows)} = {100 * rate:.1f}% of the logs that print numbered metrics"
              f" ({len(skipped)} without metrics not counted)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
