"""How big is a report of a million-step run, how long does it take next to `check`, and how fast does
it open in Chromium?

Generates a JSON-lines log of N steps (loss, eval_loss every 500 steps, lr with warmup and decay,
grad_norm) with one spike of a single step and a short NaN stretch, then runs `trainwatch check` and
`trainwatch report` on it and prints the page's size, both times, whether the spike and the NaN are on
the page, and (when `chromium` is installed) the time from opening the page to its charts being drawn,
as the page itself measures it (performance.now() when the last chart drew). Targets (issue 25): at most
3 MB for a million steps; report within 2x of check; open in under 1 s.

    python benchmarks/report_size.py [--steps 1000000] [--dir /tmp/twreport] [--keep]
"""

from __future__ import annotations

import argparse
import json
import math
import random
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

SPIKE_AT = 0.37  # of the run: one step whose loss is 40x
NAN_AT = 0.81  # of the run: three NaN steps


def write_log(path: Path, steps: int) -> None:
    rng = random.Random(7)
    spike, nan = int(steps * SPIKE_AT), int(steps * NAN_AT)
    warm = max(1, steps // 50)
    with path.open("w") as f:
        for s in range(1, steps + 1):
            lr = 3e-4 * min(1.0, s / warm) * (0.5 + 0.5 * math.cos(math.pi * s / steps))
            loss = 2.0 * math.exp(-3 * s / steps) + 0.5 + rng.gauss(0, 0.02)
            if s == spike:
                loss *= 40
            row: dict[str, float | int | str] = {"step": s, "loss": round(loss, 5), "lr": lr,
                                                  "grad_norm": round(1 + rng.random(), 4)}
            if nan <= s < nan + 3:
                row["loss"] = "NaN"
            if s % 500 == 0:
                row["eval_loss"] = round(loss + 0.05, 5)
            f.write(json.dumps(row) + "\n")


def timed(cmd: list[str]) -> tuple[float, int]:
    t0 = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True, check=False)
    return time.perf_counter() - t0, r.returncode


def open_time(page: Path, tries: int = 3) -> float | None:
    """Milliseconds from navigation start to the last chart drawn, read off the dumped DOM (real time, no
    virtual time budget), the best of `tries` (the browser's own start is not counted)."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        return None
    best = None
    for _ in range(tries):
        r = subprocess.run([chromium, "--headless", "--disable-gpu", "--no-sandbox", "--dump-dom", page.as_uri()],
                           capture_output=True, text=True, timeout=120, check=False)
        m = re.search(r'data-tw-ms="([\d.]+)"', r.stdout)
        if m:
            best = min(best or math.inf, float(m.group(1)))
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=1_000_000)
    ap.add_argument("--dir", default="/tmp/twreport")
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    d = Path(args.dir)
    d.mkdir(parents=True, exist_ok=True)
    log, page = d / "run.jsonl", d / "report.html"
    write_log(log, args.steps)
    tw = [sys.executable, "-m", "trainwatch"]
    t_check, _ = timed([*tw, "check", str(log)])
    t_report, rc = timed([*tw, "report", str(log), "-o", str(page)])
    size = page.stat().st_size
    text = page.read_text()
    data = json.loads(re.search(r'id="tw-data">(.*?)</script>', text, re.S).group(1))  # type: ignore[union-attr]
    loss = next(c for c in data["runs"][0]["charts"]["Loss"] if c["name"] == "loss")
    peak = max(v for v in loss["y"] if v is not None)
    print(f"log: {args.steps} steps, {log.stat().st_size / 1e6:.1f} MB")
    print(f"page: {size / 1e6:.3f} MB ({size} bytes), target at most 3 MB" + ("" if size <= 3e6 else "  OVER"))
    print(f"points of loss on the page: {len(loss['y'])}; spike kept: {peak > 10}; NaN kept: {None in loss['y']}")
    print(f"check {t_check:.2f} s, report {t_report:.2f} s (exit {rc}): {t_report / t_check:.2f}x, target at most 2x")
    ms = open_time(page)
    opened = "not measured (no chromium)" if ms is None else f"{ms:.0f} ms to drawn, target < 1000"
    print(f"open in chromium: {opened}")
    if not args.keep:
        shutil.rmtree(d)


if __name__ == "__main__":
    main()
