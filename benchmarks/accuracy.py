"""The accuracy scoreboard: `trainwatch check --json` on real logs against what a correct check says.

Runs the real command line on every log named in benchmarks/accuracy.yaml (the shared corpus of
third-party logs and the project's own examples/) and compares its report with expectations written
by hand: exit code, findings that must be there (at their step, within one logging interval),
findings that must not, metrics that must be read. Prints one row per log and exits 1 when any log
misses, so CI can run it.

    python benchmarks/accuracy.py                  # everything found
    python benchmarks/accuracy.py --only lyric     # logs whose name contains 'lyric'
    python benchmarks/accuracy.py --verbose        # every finding of every log that misses
    python benchmarks/accuracy.py --json           # the scoreboard as JSON
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from trainwatch.names import Quality

ROOT = Path(__file__).resolve().parents[1]
EXPECTATIONS = Path(__file__).with_name("accuracy.yaml")
SEVERITY_RANK = {"info": 0, "warning": 1, "critical": 2}


def corpus_dir() -> Path | None:
    """The shared corpus beside the checkout (CI lays it there), or where $TRAINWATCH_CORPUS says."""
    env = os.environ.get("TRAINWATCH_CORPUS")
    path = Path(env) if env else ROOT.parent / "shared" / "corpus"
    return path if path.is_dir() else None


@dataclass
class Case:
    label: str
    path: Path
    expect: dict[str, Any]


@dataclass
class Outcome:
    case: Case
    exit_code: int | None = None
    problems: list[str] = field(default_factory=list)
    findings: list[dict[str, Any]] = field(default_factory=list)
    stderr: str = ""

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def pending(self) -> str | None:
        """Why a row is known not to hold yet (the `pending` key), or None for a row that must hold."""
        why = self.case.expect.get("pending")
        return str(why) if why else None

    @property
    def mark(self) -> str:
        """pass, FAIL, open (pending and still missing) or FIXED (pending, but it holds: take the mark off)."""
        if self.pending:
            return "FIXED" if self.ok else "open"
        return "pass" if self.ok else "FAIL"

    @property
    def counts_as_failure(self) -> bool:
        return self.mark in ("FAIL", "FIXED")


def load_cases(only: str | None = None) -> tuple[list[Case], list[str]]:
    """Every case whose log exists, and a reason for each group that was skipped."""
    spec = yaml.safe_load(EXPECTATIONS.read_text(encoding="utf-8"))
    cases: list[Case] = []
    skipped: list[str] = []
    corpus = corpus_dir()
    if corpus is None:
        skipped.append("corpus: ../shared/corpus not found (set TRAINWATCH_CORPUS); its logs were not checked")
    else:
        for name, expect in spec.get("corpus", {}).items():
            path = corpus / name
            if path.is_file():
                cases.append(Case(name, path, expect or {}))
            else:
                skipped.append(f"corpus: {name} is not in {corpus}")
    for rel, expect in spec.get("examples", {}).items():
        cases.append(Case(rel, ROOT / rel, expect or {}))
    if only:
        cases = [c for c in cases if only in c.label]
    return cases, skipped


def run_check(path: Path) -> tuple[int, dict[str, Any] | None, str]:
    proc = subprocess.run([sys.executable, "-m", "trainwatch", "check", str(path), "--json"],
                          capture_output=True, text=True, timeout=600, cwd=ROOT)
    try:
        doc = json.loads(proc.stdout) if proc.stdout.strip() else None
    except json.JSONDecodeError:
        doc = None
    return proc.returncode, doc, proc.stderr.strip()


def _text(f: dict[str, Any]) -> str:
    return " ".join([str(f.get("title", "")), str(f.get("message", "")), json.dumps(f.get("evidence", {}))])


def matches(f: dict[str, Any], m: dict[str, Any], *, with_step: bool) -> bool:
    if "id" in m and f.get("id") != m["id"]:
        return False
    if "severity" in m and SEVERITY_RANK.get(f.get("severity", ""), -1) < SEVERITY_RANK[m["severity"]]:
        return False
    if "mentions" in m and not re.search(m["mentions"], _text(f), re.I):
        return False
    if with_step and "step" in m:
        want, got = m["step"], f.get("step")
        if want is None or got is None:
            return want is None and got is None
        return abs(int(got) - int(want)) <= int(m.get("within", 0))
    return True


def describe(m: dict[str, Any]) -> str:
    parts = [m.get("severity", ""), m.get("id", "")]
    if "mentions" in m:
        parts.append(f"/{m['mentions']}/")
    if "step" in m:
        parts.append(f"@{m['step']}" + (f"±{m['within']}" if m.get("within") else ""))
    return " ".join(p for p in parts if p)


QUALITY = Quality()


def metric_read(want: str, read: set[str]) -> bool:
    """Whether an expected metric was read: its canonical name, or, for a quality metric (accuracy,
    reward, Dice ...), any series the product's own name table gives that kind, as it judges them
    (`val acc` and `Validation Accuracy` are accuracies). Losses, LR and the like need their exact name."""
    if want in read:
        return True
    kind = QUALITY(want)
    if kind is None or kind.is_loss:
        return False
    return any((got := QUALITY(name)) is not None and got.kind == kind.kind for name in read)


def judge(case: Case) -> Outcome:
    out = Outcome(case)
    code, doc, err = run_check(case.path)
    out.exit_code, out.stderr = code, err
    e = case.expect
    want_exit = e.get("exit")
    if want_exit is not None:
        allowed = want_exit if isinstance(want_exit, list) else [want_exit]
        if code not in allowed:
            out.problems.append(f"exit {code}, expected {'/'.join(map(str, allowed))}")
    if doc is None:
        if e.get("find") or e.get("metrics"):
            out.problems.append(f"no report ({err.splitlines()[-1] if err else 'no output'})")
        return out
    findings = out.findings = doc.get("findings", [])
    for m in e.get("find", []):
        if not any(matches(f, m, with_step=True) for f in findings):
            near = [f"{f['id']}@{f['step']}" for f in findings if matches(f, m, with_step=False)]
            out.problems.append(f"missing {describe(m)}" + (f" (found at {', '.join(near)})" if near else ""))
    for m in e.get("forbid", []):
        bad = [f"{f['severity']} {f['id']}@{f['step']}" for f in findings if matches(f, m, with_step=False)]
        if bad:
            out.problems.append(f"forbidden {describe(m)}: {', '.join(bad)}")
    if "max_critical" in e:
        crit = [f"{f['id']}@{f['step']}" for f in findings if f.get("severity") == "critical"]
        if len(crit) > int(e["max_critical"]):
            out.problems.append(f"{len(crit)} critical findings ({', '.join(crit)}), "
                                f"expected at most {e['max_critical']}")
    sources = doc.get("sources", [])
    read = set().union(*(s.get("metrics", {}).keys() for s in sources)) if sources else set()
    missing = [m for m in e.get("metrics", []) if not metric_read(m, read)]
    if missing:
        out.problems.append(f"metrics not read: {', '.join(missing)}")
    if "total_steps" in e:
        totals = [s.get("total_steps") for s in sources]
        if e["total_steps"] not in totals:
            out.problems.append(f"total steps {totals}, expected {e['total_steps']}")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", help="only logs whose name contains this")
    ap.add_argument("--verbose", action="store_true", help="list every finding of the logs that miss")
    ap.add_argument("--json", action="store_true", help="print the scoreboard as JSON")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    args = ap.parse_args(argv)
    cases, skipped = load_cases(args.only)
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        outcomes = list(pool.map(judge, cases))
    passed = sum(o.mark == "pass" for o in outcomes)
    failed = sum(o.counts_as_failure for o in outcomes)
    still_open = sum(o.mark == "open" for o in outcomes)
    if args.json:
        json.dump({"passed": passed, "failed": failed, "open": still_open, "skipped": skipped,
                   "logs": [{"log": o.case.label, "ok": o.ok, "mark": o.mark, "pending": o.pending,
                             "exit_code": o.exit_code, "problems": o.problems}
                            for o in outcomes]}, sys.stdout, indent=2)
        print()
    else:
        width = max((len(o.case.label) for o in outcomes), default=10)
        for o in outcomes:
            note = "; ".join(o.problems) or ("holds now: take its pending mark off" if o.pending else "")
            print(f"{o.mark:<5} {o.case.label:<{width}}  exit {o.exit_code}  {note}".rstrip())
            if args.verbose and not o.ok:
                for f in o.findings:
                    print(f"        {f['severity']:8} {f['id']} step {f['step']}: {f['message'][:120]}")
                if o.stderr:
                    print(f"        stderr: {o.stderr.splitlines()[-1][:200]}")
        for s in skipped:
            print(f"skip  {s}")
        print(f"accuracy: {passed} passed, {failed} failed, {still_open} open (pending)")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
