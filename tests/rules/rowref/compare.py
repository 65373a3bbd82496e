"""Runs a real engine with one rule, either the array port or its row-at-a-time oracle, over generated
rows fed whole, one at a time or in random cuts, and tells the alerts as text to compare."""

from __future__ import annotations

import json
import random

from trainwatch import config
from trainwatch.batch import from_records
from trainwatch.engine import Engine
from trainwatch.model import Record, Sample
from trainwatch.rules.base import Rule


def engine_with(rule_id: str, oracle: type[Rule] | None, preset: str = "sft") -> Engine:
    """An engine whose only rule is `rule_id`: the shipped one, or `oracle` built from the same spec."""
    engine = Engine(config.load(preset, None), clock=lambda: 1_000_000.0)
    rules = [r for r in engine.rules if r.spec.id == rule_id]
    assert rules, f"{rule_id} is not enabled in the {preset} preset"
    engine.rules = [oracle(rules[0].spec) if oracle is not None else rules[0]]
    return engine


def samples(name: str, rows: list[tuple[int, float]], source: str = "run.log") -> list[Record]:
    return [Sample(name, v, s, source=source, line=i + 1) for i, (s, v) in enumerate(rows)]


def alerts(rule_id: str, oracle: type[Rule] | None, records: list[Record], cuts: list[int] | None,
           preset: str = "sft") -> str:
    """The alerts as text; `cuts` None feeds one record at a time, otherwise batches cut there."""
    engine = engine_with(rule_id, oracle, preset)
    fresh = list(from_records("run.log", records).records())
    if cuts is None:
        for r in fresh:
            engine.feed(r)
    else:
        bounds = [0, *sorted(set(cuts)), len(fresh)]
        for lo, hi in zip(bounds, bounds[1:]):
            engine.feed_batch(from_records("run.log", fresh[lo:hi]))
    engine.finish("run.log")
    return json.dumps([a.to_dict() for a in engine.alerts()], indent=1, default=str)


def random_cuts(n: int, seed: int) -> list[int]:
    rng = random.Random(seed)
    return [rng.randrange(n) for _ in range(rng.randrange(1, 12))] if n else []
