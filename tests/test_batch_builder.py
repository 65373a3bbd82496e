"""The batch builder: single samples and whole columns keep their order, and a line can be taken back."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.examples import examples
from trainwatch.batch import BatchBuilder, RecordList, RedrawColumns
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


def test_fill_time_gives_a_prefix_time_only_to_the_lines_samples_without_one() -> None:
    b = BatchBuilder("a.log")
    b.sample("loss", 2.0, 1, 1)
    at = b.mark()
    b.sample("loss", 1.5, 1, 1)  # an earlier line's sample an adapter held back until line 2
    b.sample("loss", 1.0, 2, 2)
    b.sample("lr", 0.1, 2, 2, time=5.0)
    b.fill_time(at, 9.0, 2)
    times = [r.time for r in b.build().records()]
    assert times[:2] == [None, None] and times[2:] == [9.0, 5.0]


def test_record_list_makes_samples_of_its_source() -> None:
    out = RecordList("b.log")
    out.sample("loss", math.inf, None, 4, inferred=True)
    s = out[0]
    assert isinstance(s, Sample) and (s.source, s.step, s.line, s.step_inferred) == ("b.log", None, 4, True)


def _kinds(batch) -> list[tuple]:  # type: ignore[no-untyped-def]
    return [(r.name, r.step) if isinstance(r, Sample) else (r.kind.value, r.line, r.step) for r in batch.records()]


def test_progress_redraws_are_columns_that_keep_their_place_among_samples_and_events() -> None:
    b = BatchBuilder("a.log")
    b.progress(1, 100, 1)
    b.sample("loss", 2.0, None, 2)
    b.event(Event(EventKind.EVAL_START, "a.log", 3))
    b.progress(2, 100, 3)
    b.event(Event(EventKind.CHECKPOINT, "a.log", 4))
    at = b.mark()
    b.progress(3, 100, 5)
    b.rollback(at)  # a line taken back takes its redraw with it
    b.progress(4, None, 6)
    batch = b.build()
    assert len(batch.events) == 2 and len(batch.redraws) == 3 and batch.size == 6
    assert _kinds(batch) == [("progress", 1, 1), ("loss", None), ("eval_start", 3, None), ("progress", 3, 2),
                             ("checkpoint", 4, None), ("progress", 6, 4)]
    last = list(batch.records())[-1]
    assert isinstance(last, Event) and last.fields == {"step": 4}  # no total: none said


def test_dropping_and_adding_events_leaves_each_redraw_where_the_log_had_it() -> None:
    b = BatchBuilder("a.log")
    b.sample("loss", 2.0, None, 1)
    b.event(Event(EventKind.EVAL_START, "a.log", 1))
    b.progress(1, 9, 1)
    b.event(Event(EventKind.CHECKPOINT, "a.log", 2))
    b.progress(2, 9, 3)
    batch = b.build()
    found = [(1, [Event(EventKind.ERROR, "a.log", 1)]), (2, [Event(EventKind.ERROR, "a.log", 2)])]
    merged = batch.with_events(found)  # found on a line: after that line's own records
    assert _kinds(merged) == [("loss", None), ("eval_start", 1, None), ("progress", 1, 1), ("error", 1, None),
                              ("checkpoint", 2, None), ("error", 2, None), ("progress", 3, 2)]
    merged.keep_events(lambda e: e.kind is not EventKind.ERROR)
    assert _kinds(merged) == _kinds(batch)


def test_the_engine_reads_column_redraws_as_it_reads_redraw_events() -> None:
    from trainwatch import config
    from trainwatch.batch import progress_event
    from trainwatch.engine import Engine

    def state(batch):  # type: ignore[no-untyped-def]
        ticks = iter(range(10_000))
        eng = Engine(config.load("sft"), clock=lambda: float(next(ticks)))
        eng.feed_batch(batch)
        s = eng.sources["a.log"]
        return s.step, s.total_steps, s.events, s.phase, s.last_progress_at is not None, [
            (p.step, p.value) for p in eng.store.series("a.log", "loss").recent]

    b = BatchBuilder("a.log")
    for i in range(1, 40):
        if i % 3:
            b.progress(i, 50 + i // 10, i)
        else:  # a redraw that came as an object (another adapter's, a plugin's) among the columns
            b.record(progress_event("a.log", i, i, 50))
        if i % 4 == 0:
            b.sample("loss", 1.0 / i, None, i)
        if i == 20:
            b.event(Event(EventKind.EVAL_START, "a.log", i))
    batch = b.build()
    assert len(batch.redraws) and any(e.kind is EventKind.PROGRESS for _, e in batch.events)
    got = state(batch)
    assert got == state(batch.redraws_as_events())  # the last redraw, an object, gives the total
    assert got[0] == 39 and got[1] == 50 and got[2] == 40 and got[5][0] == (4, 0.25)


def test_a_total_no_int64_holds_is_kept_as_the_log_printed_it() -> None:
    """Log text is untrusted: a progress event may carry any total (a Keras `Epoch 1/<20 digits>`). The last
    total in log order is the source's, whether it came from a column redraw or an event object."""
    from trainwatch import config
    from trainwatch.batch import progress_event
    from trainwatch.engine import Engine

    def total(order: list[int | None]) -> int | None:
        eng = Engine(config.load("sft"), clock=lambda: 0.0)
        b = BatchBuilder("a.log")
        for i, t in enumerate(order, 1):
            if t is None:
                b.progress(i, 50, i)
            else:
                b.record(progress_event("a.log", i, i, t))
            b.sample("loss", 1.0, None, i)
        eng.feed_batch(b.build())
        return eng.sources["a.log"].total_steps

    huge = 10**20
    assert total([None, huge]) == huge
    assert total([huge, None]) == 50
    assert total([huge, 7, None, huge + 1]) == huge + 1


@settings(max_examples=examples(200), deadline=None)
@given(ops=st.lists(st.one_of(st.tuples(st.just("one"), st.integers(0, 9)),
                              st.tuples(st.just("run"), st.integers(0, 5)),
                              st.tuples(st.just("cut"), st.integers(0, 30))), max_size=25))
def test_redraw_columns_keep_single_redraws_and_runs_in_order(ops: list[tuple[str, int]]) -> None:
    """Redraws added one at a time and as arrays, cut back anywhere (a rollback): the columns hold
    what a plain list of rows holds."""
    cols, model = RedrawColumns(), []
    for i, (kind, x) in enumerate(ops):
        if kind == "one":
            row = (i, x, 10 * i, x + 1, -1)
            cols.add(*row)
            model.append(row)
        elif kind == "run":
            rows = [(i, j, 10 * i + j, j, 7) for j in range(x)]
            cols.add_arrays(*(np.array(c, dtype=np.int64) for c in zip(*rows)) if rows else
                            (np.zeros(0, dtype=np.int64),) * 5)
            model.extend(rows)
        else:
            cols.cut(x)
            del model[x:]
        assert len(cols) == len(model)
    got = cols.columns()
    assert all(c.dtype == np.int64 for c in got)
    assert list(zip(*(c.tolist() for c in got))) == model
