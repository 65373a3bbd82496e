"""Generated rows for the array-port tests, and the alerts of one rule over them, fed whole, one at a time
or in random cuts (through rowref.harness.report, the one harness)."""

from __future__ import annotations

import random

from tests.rules.rowref.harness import report
from trainwatch.model import Record, Sample
from trainwatch.rules.base import Rule


def samples(name: str, rows: list[tuple[int, float]], source: str = "run.log") -> list[Record]:
    return [Sample(name, v, s, source=source, line=i + 1) for i, (s, v) in enumerate(rows)]


def alerts(rule_id: str, oracle: type[Rule] | None, records: list[Record], cuts: list[int] | None,
           preset: str = "sft") -> str:
    """The alerts as text; `cuts` None feeds one record at a time, otherwise batches cut there."""
    return report(rule_id, records, cuts, oracle=oracle, preset=preset)


def random_cuts(n: int, seed: int) -> list[int]:
    rng = random.Random(seed)
    return [rng.randrange(n) for _ in range(rng.randrange(1, 12))] if n else []
