"""The batch builder: single samples and whole columns keep their order, and a line can be taken back."""

from __future__ import annotations

import math

import numpy as np

from trainwatch.batch import BatchBuilder, RecordList
from trainwatch.model import Event, EventKind, Sample


def _rows(b: BatchBuilder) -> list[tuple]:
    return [(r.name, r.value, r.step, r.line, r.time) if isinstance(r, Sample) else (r.kind.value, r.line)
            for r in b.build().records()]


def test_columns_and_single_samples_keep_log_order_with_events_between() -> None:
    b = BatchBuilder("a.log")
    b.sample("loss", 2.0, 1, 1)
    b.event(Event(EventKind.EVAL_START, "a.log", 2))
    lr = b.name_id("lr")
    b.columns(np.array([lr, lr]), np.array([2, 3]), np.array([0.1, 0.2]), np.array([3, 4]))
    b.sample("loss", 1.5, 4, 5, time=7.0)
    assert _rows(b) == [("loss", 2.0, 1, 1, None), ("eval_start", 2), ("lr", 0.1, 2, 3, None),
                        ("lr", 0.2, 3, 4, None), ("loss", 1.5, 4, 5, 7.0)]
    assert len(b) == 0  # build() starts it afresh


def test_rollback_takes_back_a_line_even_after_columns() -> None:
    for with_columns in (False, True):
        b = BatchBuilder("a.log")
        b.sample("loss", 2.0, 1, 1)
        at = b.mark()
        b.sample("loss", 9.0, 2, 2)
        b.event(Event(EventKind.PROGRESS, "a.log", 2))
        if with_columns:
            b.columns(np.array([b.name_id("lr")]), np.array([2]), np.array([0.5]), np.array([2]))
        b.rollback(at)
        b.sample("loss", 1.0, 3, 3)
        assert _rows(b) == [("loss", 2.0, 1, 1, None), ("loss", 1.0, 3, 3, None)]


def test_fill_time_gives_a_prefix_time_only_to_samples_without_one() -> None:
    b = BatchBuilder("a.log")
    b.sample("loss", 2.0, 1, 1)
    at = b.mark()
    b.sample("loss", 1.0, 2, 2)
    b.sample("lr", 0.1, 2, 2, time=5.0)
    b.fill_time(at, 9.0)
    times = [r.time for r in b.build().records()]
    assert times[0] is None and times[1:] == [9.0, 5.0]


def test_record_list_makes_samples_of_its_source() -> None:
    out = RecordList("b.log")
    out.sample("loss", math.inf, None, 4, inferred=True)
    s = out[0]
    assert isinstance(s, Sample) and (s.source, s.step, s.line, s.step_inferred) == ("b.log", None, 4, True)
