"""Where the engine says a source last made progress (the stall detector's reference), for a stretch of
rows judged at once: the time of the last row whose step moved on, or of the first training row after
an evaluation, whichever is later."""

from __future__ import annotations

from trainwatch.batch import BatchBuilder
from trainwatch.config import load
from trainwatch.engine import Engine
from trainwatch.model import Event, EventKind
from trainwatch.session import LogClock

SRC = "run.log"


def _engine() -> Engine:
    return Engine(load(), clock=LogClock(0.0))


def _feed(engine: Engine, rows: list[tuple[str, int | None, float]], before: tuple[Event, ...] = ()) -> None:
    b = BatchBuilder(SRC)
    for e in before:
        b.event(e)
    for i, (name, step, t) in enumerate(rows):
        b.sample(name, 1.0, step, i + 1, t)
    engine.feed_batch(b.build())


def test_every_row_with_a_step_progress_is_the_last_step_change() -> None:
    engine = _engine()
    _feed(engine, [("loss", 5, 1.0), ("lr", 5, 2.0), ("loss", 6, 3.0), ("lr", 6, 4.0)])
    state = engine.sources[SRC]
    assert (state.step, state.last_progress_at, state.phase) == (6, 3.0, "train")


def test_rows_without_a_step_carry_the_last_one_and_do_not_count_as_progress() -> None:
    engine = _engine()
    _feed(engine, [("loss", None, 1.0), ("loss", 5, 2.0), ("lr", 5, 3.0), ("loss", 7, 4.0), ("lr", None, 5.0)])
    state = engine.sources[SRC]
    assert (state.step, state.last_progress_at) == (7, 4.0)


def test_a_training_row_after_an_evaluation_is_progress_though_its_step_stays() -> None:
    engine = _engine()
    _feed(engine, [("loss", 5, 1.0), ("loss", 5, 2.0)])
    assert engine.sources[SRC].last_progress_at == 1.0
    _feed(engine, [("eval_loss", 5, 3.0), ("loss", 5, 4.0), ("loss", 5, 5.0)],
          before=(Event(EventKind.EVAL_START, SRC, 0),))
    state = engine.sources[SRC]
    assert (state.last_progress_at, state.phase) == (4.0, "train")
