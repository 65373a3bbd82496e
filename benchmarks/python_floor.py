"""The least any pure-Python `check` must spend on the benchmark logs, next to `grep -c loss`.

`check_speed.py` times the whole tool. This script times only the first steps that any CPython
implementation of `check` has to take, however its rules are written, on the same generated logs:

console log  - split into lines and find each metrics dict and the tqdm counter before it
             - pull every `'key': value` pair out with one C-level regex pass, and float() them
             - look for the error signatures' keywords (`data.count` once per keyword, CPython's
               fastest substring search; it has no multi-pattern search like grep's)
JSON lines   - json.loads per line (standard library), and orjson per line when it is installed

When the hyperscan package is installed, the keyword search is also timed with it (one pass for all
keywords and the dict starts, at grep's speed): the scan half of the problem has a native answer.

Each step, and grep, is timed as the best of three runs. Every step is work a Python `check` does
before any rule runs, so where they add up to more than the issue's budget (3x grep on the console
log, 100 MB/s on JSON lines), no rule engine written in Python can meet it: the scan has to be native.

    python benchmarks/python_floor.py [--size-mb 200] [--dir /tmp/trainwatch-bench] [--keep]
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from check_speed import make_console, make_jsonl

from trainwatch.adapters.signatures import signature_keywords

PAIR = re.compile(rb"'(\w+)': '?([-+\w.]+)")


def timed(fn: Callable[[], object], repeat: int = 3) -> float:
    """The best of a few runs: the first one also pays for touching freshly allocated memory, which a
    chunked reader would reuse."""
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def grep_seconds(path: Path) -> float:
    return timed(lambda: subprocess.run(["grep", "-c", "loss", str(path)], stdout=subprocess.PIPE, check=False))


def locate_dicts(data: bytes) -> int:
    found = 0
    for line in data.split(b"\n"):
        i = line.rfind(b"\r{'")
        if i >= 0:
            line.rfind(b"/", 0, i)  # the tqdm counter just before the dict
            found += 1
    return found


def extract_values(data: bytes) -> int:
    return len([float(v) for _, v in PAIR.findall(data)])


def keyword_scan(data: bytes) -> int:
    return sum(data.count(kw.encode()) for kw in signature_keywords())


def multi_scan(hyperscan: Any, data: bytes) -> int:
    patterns = [re.escape(kw.encode()) for kw in signature_keywords()] + [rb"\{'"]
    db = hyperscan.Database()
    db.compile(expressions=patterns, ids=list(range(len(patterns))), flags=[0] * len(patterns))
    hits = [0]

    def on_match(*_: Any) -> None:
        hits[0] += 1

    db.scan(data, match_event_handler=on_match)
    return hits[0]


def json_lines(path: Path, loads: Callable[[bytes], object]) -> int:
    n = 0
    with open(path, "rb") as f:
        for line in f:
            loads(line)
            n += 1
    return n


def report(label: str, seconds: float, mb: float, grep: float) -> None:
    print(f"  {label:46} {seconds:6.2f}s {mb / seconds:7.0f} MB/s {seconds / grep:6.1f}x grep")


def console_floor(path: Path) -> None:
    data = path.read_bytes()
    mb = len(data) / 2**20
    grep = grep_seconds(path)
    print(f"console log, {mb:.0f} MB: grep -c loss {grep:.2f}s; the issue's budget is {3 * grep:.2f}s")
    report("split lines, find dicts and tqdm counters", timed(lambda: locate_dicts(data)), mb, grep)
    report("regex every key/value pair, float() them", timed(lambda: extract_values(data)), mb, grep)
    report("signature keywords, one pass each", timed(lambda: keyword_scan(data)), mb, grep)
    try:
        import hyperscan  # type: ignore[import-not-found]
    except ImportError:
        print("  hyperscan: not installed")
    else:
        report("hyperscan: keywords and dict starts, one pass", timed(lambda: multi_scan(hyperscan, data)), mb, grep)


def jsonl_floor(path: Path) -> None:
    mb = path.stat().st_size / 2**20
    grep = grep_seconds(path)
    print(f"JSON lines, {mb:.0f} MB: grep -c loss {grep:.2f}s; the issue's budget is {mb / 100:.2f}s (100 MB/s)")
    report("json.loads per line", timed(lambda: json_lines(path, json.loads)), mb, grep)
    try:
        import orjson
    except ImportError:
        print("  orjson per line: not installed")
    else:
        report("orjson.loads per line", timed(lambda: json_lines(path, orjson.loads)), mb, grep)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size-mb", type=int, default=200)
    ap.add_argument("--dir", default="/tmp/trainwatch-bench")
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    d = Path(args.dir)
    d.mkdir(parents=True, exist_ok=True)
    size = args.size_mb << 20
    console, jsonl = d / f"floor_console_{args.size_mb}.log", d / f"floor_metrics_{args.size_mb}.jsonl"
    for path, make in ((console, make_console), (jsonl, make_jsonl)):
        if not path.exists():
            make(path, size)

    console_floor(console)
    jsonl_floor(jsonl)
    if not args.keep:
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
