"""Judge a round of public logs nobody here tuned against: the honest figure of issue 22.

The logs are third-party data and are not kept in the project: `benchmarks/public-sample.tsv` names
each one (repository, path, commit, sha256) so it can be fetched again byte for byte
(`git show COMMIT:PATH` in a clone), and `benchmarks/public-sample.yaml` says what a correct check says
of it, written by reading the log before trainwatch was run on it. This script runs the accuracy
scoreboard's own `judge` on every log found in a folder, and prints the pass figure and the read rate
(the share of logs printing numbered metrics whose main metric was read as a series with steps).

    python benchmarks/public_sample.py --logs DIR [--expect public-sample-2.yaml] [--only NAME] [--jobs 2]

Each round has its own pair of files: `public-sample.{tsv,yaml}` is the first, `public-sample-2.{tsv,yaml}`
the second and `public-sample-3.{tsv,yaml}` the third (each from repositories the earlier ones did not use).

The first look of each round (before that round's fixes) is kept in the TSV's `first_look` column;
`after_stop21_merges` (and `after_stop22_merges`) are the same logs judged by later code.
"""

from __future__ import annotations

import argparse
import re
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
import accuracy

HERE = Path(__file__).resolve().parent
_docs: dict[str, dict[str, Any] | None] = {}
_run_check = accuracy.run_check


def _keeping_run_check(path: Path) -> tuple[int, dict[str, Any] | None, str]:
    code, doc, err = _run_check(path)
    _docs[str(path)] = doc
    return code, doc, err


accuracy.run_check = _keeping_run_check  # judge() looks it up at call time: the report is kept for the read rate


def main_metric_read(doc: dict[str, Any] | None, expect: dict[str, Any]) -> bool:
    pattern = expect.get("main")
    for src in (doc or {}).get("sources", []):
        for name, m in (src.get("metrics") or {}).items():
            hit = (bool(re.search(pattern, name, re.I)) or accuracy.metric_read(pattern, {name})) if pattern \
                else name == "loss"
            if hit and isinstance(m, dict) and m.get("last_step") is not None and (m.get("count") or 0) >= 2:
                return True
    return False


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--logs", required=True, type=Path, help="the folder holding the fetched logs")
    ap.add_argument("--expect", type=Path, default=HERE / "public-sample.yaml",
                    help="the round's expectations (default: the first round's)")
    ap.add_argument("--only", help="only logs whose name contains this")
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args(argv)
    expect_file = args.expect if args.expect.is_absolute() or args.expect.exists() else HERE / args.expect
    spec = yaml.safe_load(expect_file.read_text(encoding="utf-8"))["logs"]
    meta = {"why", "numbered", "main", "corrected"}
    cases = [(accuracy.Case(name, args.logs / name, {k: v for k, v in e.items() if k not in meta}), e)
             for name, e in spec.items()
             if (not args.only or args.only in name) and (args.logs / name).is_file()]
    if not cases:
        print(f"no log of the sample is in {args.logs}", file=sys.stderr)
        return 3
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        outcomes = list(pool.map(lambda c: accuracy.judge(c[0]), cases))
    width = max(len(c.label) for c, _ in cases)
    numbered = read = 0
    for (case, expect), out in zip(cases, outcomes):
        ok_read = main_metric_read(_docs.get(str(case.path)), expect)
        if expect.get("numbered"):
            numbered += 1
            read += ok_read
        mark = ("read" if ok_read else "UNREAD") if expect.get("numbered") else "-"
        print(f"{'pass' if out.ok else 'FAIL':<5} {case.label:<{width}}  exit {out.exit_code}  {mark:<6} "
              f"{'; '.join(out.problems)}".rstrip())
    passed = sum(o.ok for o in outcomes)
    print(f"public sample: {passed}/{len(outcomes)} pass ({100 * passed / len(outcomes):.0f}%); read rate "
          f"{read}/{numbered} ({100 * read / max(1, numbered):.0f}%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
