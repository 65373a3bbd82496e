"""Any cutting of the same records into batches gives the same findings: whole, one at a time, random cuts.

The array rules judge the rows held since they last did; this proves that how many rows arrive at
once (a gigabyte's backlog or a live line) changes nothing they report."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from trainwatch import runner
from trainwatch.batch import from_records
from trainwatch.cli.check import LogClock
from trainwatch.model import Record

ROOT = Path(__file__).resolve().parents[1]
LOGS = sorted(p for p in (ROOT / "examples/logs").glob("*") if p.suffix in (".log", ".jsonl"))


def records_of(path: Path) -> tuple[runner.OpenSource, list[Record]]:
    src = runner.open_source(path)
    out: list[Record] = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for lineno, line in enumerate(f, 1):
            out.extend(src.parser.feed(line.rstrip("\n"), lineno))
    out.extend(src.parser.finish())
    return src, out


def findings(src: runner.OpenSource, records: list[Record], cuts: list[int] | None) -> str:
    """Feeds copies of the records (the engine settles steps on them) in batches cut at `cuts`;
    None feeds them one at a time."""
    clock = LogClock(1_000_000.0)
    engine = runner.make_engine([src], None, None, clock=clock)
    fresh = list(from_records(src.name, records).records())
    if cuts is None:
        for r in fresh:
            engine.feed(r)
    else:
        bounds = [0, *sorted(set(cuts)), len(fresh)]
        for lo, hi in zip(bounds, bounds[1:]):
            engine.feed_batch(from_records(src.name, fresh[lo:hi]))
    engine.finish(src.name)
    return json.dumps([a.to_dict() for a in engine.alerts()], indent=1, default=str)  # NaN == NaN as text


@pytest.mark.parametrize("log", LOGS, ids=[p.name for p in LOGS])
def test_findings_do_not_depend_on_how_records_are_batched(log: Path) -> None:
    src, records = records_of(log)
    whole = findings(src, records, [])
    assert findings(src, records, None) == whole
    rng = random.Random(log.name)
    cuts = [rng.randrange(len(records)) for _ in range(40)]
    assert findings(src, records, cuts) == whole
