"""Runs one rule through a real engine, either as shipped or swapped for its row-at-a-time oracle, with the
records cut into batches anywhere: the findings of both must match to the last field."""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from trainwatch import config
from trainwatch.batch import from_records
from trainwatch.engine import Engine
from trainwatch.model import Record
from trainwatch.rules.base import Rule


@lru_cache(maxsize=4)
def _config(preset: str) -> config.Config:
    """A preset parsed once: hypothesis runs hundreds of engines on it (the engine only reads it)."""
    return config.load(preset, None)


def report(rule_id: str, records: Sequence[Record], cuts: Sequence[int] | None, *, oracle: type[Rule] | None = None,
           preset: str = "sft") -> str:
    """The alerts of `rule_id` as JSON after feeding `records` (None: one at a time; else batches cut at
    `cuts`). With `oracle`, that row rule stands in for the shipped one, built from the same spec."""
    engine = Engine(_config(preset), clock=lambda: 1_000_000.0)  # one time: only rows count here
    rules = [r for r in engine.rules if r.spec.id == rule_id]
    assert rules, f"{rule_id} is not enabled in {preset}"
    rule = oracle(rules[0].spec) if oracle is not None else rules[0]
    engine.rules = [rule]
    engine._by_event = {k: [rule] for k in rule.events}
    sig = getattr(rule, "signature", "")
    engine._by_signature = {sig: [rule]} if sig else {}
    engine._tickers = [rule] if rule.ticks else []
    feed_in_cuts(engine, records[0].source if records else "run.log", records, cuts)
    sources = {r.source for r in records}
    for s in sorted(sources):
        engine.finish(s)
    return json.dumps([decided(a.to_dict()) for a in engine.alerts() if a.rule == rule_id], indent=1, default=str)


def decided(d: dict[str, Any]) -> dict[str, Any]:
    """What the rule decided, stop reasons included: a moving baseline that caught up with a level that
    never came back (`ArrayRule.unrecovered`, which the row oracles implement too) is told the same by a
    row rule and its array form."""
    return d


def feed_in_cuts(engine: Engine, source: str, records: list[Record], cuts: list[int] | None) -> None:
    """Feeds copies of the records (the engine settles steps on them) in batches cut at `cuts`; None feeds
    them one at a time."""
    fresh = list(from_records(source, records).records())
    if cuts is None:
        for r in fresh:
            engine.feed(r)
        return
    bounds = [0, *sorted(set(cuts)), len(fresh)]
    for lo, hi in zip(bounds, bounds[1:]):
        engine.feed_batch(from_records(source, fresh[lo:hi]))
