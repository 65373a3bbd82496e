"""A row rule whose alert keeps firing row after row (an LR stuck at 0) costs its rows no round each:
the array rules' held rows are judged in rounds as for any other stretch, and the report is the one
of a feed that judged them before every row."""

from __future__ import annotations

import json
import math

from trainwatch.batch import BatchBuilder
from trainwatch.config import load
from trainwatch.engine import Engine
from trainwatch.model import Record, Sample
from trainwatch.session import LogClock

SRC = "run.log"


def _records(n: int) -> list[Record]:
    out: list[Record] = []
    for i in range(1, n + 1):
        out.append(Sample("loss", 2.0 + 0.3 * math.exp(-i / 500) + 0.01 * math.sin(i), i, time=1e9 + i,
                          source=SRC, line=2 * i - 1))
        out.append(Sample("lr", 1e-4 if i <= 100 else 0.0, i, time=1e9 + i, source=SRC, line=2 * i))
    return out


def _report(engine: Engine) -> str:
    return json.dumps([a.to_dict() for a in engine.alerts()], sort_keys=True, default=str)


def test_a_long_firing_row_rule_leaves_the_held_rows_to_their_rounds() -> None:
    records = _records(3000)
    one = Engine(load(), clock=LogClock(0.0))
    for r in records:  # each row its own batch: the held rows are judged before every verdict
        one.feed(r)
    one.finish(SRC)

    whole = Engine(load(), clock=LogClock(0.0))
    rounds = 0
    judge = whole._judge_held

    def counted() -> list:  # type: ignore[type-arg]
        nonlocal rounds
        rounds += 1
        return judge()

    whole._judge_held = counted  # type: ignore[method-assign]
    b = BatchBuilder(SRC)
    for r in records:
        b.record(r)
    whole.feed_batch(b.build())
    whole.finish(SRC)
    assert "lr.zero" in _report(whole)
    assert _report(whole) == _report(one)
    assert rounds < 20  # was one per row of the LR's 2900 zeros
