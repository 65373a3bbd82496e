"""The array life cycle gives what a row-at-a-time state machine gives, however the rows are batched; the
alert book, which runs it over one row per verdict, gives the same."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.examples import examples
from trainwatch.alerts import AlertBook
from trainwatch.config import Config, Duration, RuleSpec
from trainwatch.lifecycle import Cycle, Step, advance
from trainwatch.model import AlertState, Finding, Severity

durations = st.one_of(st.builds(Duration, steps=st.integers(0, 5)),
                      st.builds(Duration, seconds=st.sampled_from([0.5, 1.0, 2.5, 4.0])))


def _reached(d: Duration, evals: int, elapsed: float, strict: bool = False) -> bool:
    if d.seconds:
        return elapsed > d.seconds if strict else elapsed >= d.seconds
    return evals >= max(d.steps + (1 if strict else 0), 1)


def row_transitions(cond: list[bool], now: list[float], for_: Duration, keep: Duration) -> list[tuple[int, str]]:
    """The firing and resolved rows, counted one row at a time (the reference: Prometheus's `for` and
    `keep_firing_for` as counters of evaluations or elapsed seconds)."""
    out: list[tuple[int, str]] = []
    state, active, since, inactive, quiet_since = "idle", 0, 0.0, 0, 0.0
    for i, (c, t) in enumerate(zip(cond, now)):
        if c:
            if state == "idle":
                state, active, since = "pending", 0, t
            active += 1
            inactive = 0
            if state == "pending" and _reached(for_, active, t - since):
                state = "firing"
                out.append((i, "firing"))
        elif state == "pending":
            state = "idle"
        elif state == "firing":
            if not inactive:
                quiet_since = t
            inactive += 1
            if keep.zero or _reached(keep, inactive, t - quiet_since, strict=True):
                state, inactive = "idle", 0
                out.append((i, "resolved"))
    return out


def book_transitions(cond: list[bool], now: list[float], for_: Duration, keep: Duration) -> list[tuple[int, str]]:
    """The firing and resolved rows, asking the book one row at a time."""
    spec = RuleSpec("r", Severity.WARNING, "f", "t", for_=for_, keep_firing_for=keep)
    book = AlertBook(Config("test", {}, []))
    out = []
    for i, (c, t) in enumerate(zip(cond, now)):
        for ch in book.judge(spec, "s", "x", Finding("m") if c else None, t):
            out.append((i, "firing" if ch.state is AlertState.FIRING else "resolved"))
    return out


def array_transitions(cond: list[bool], now: list[float], for_: Duration, keep: Duration,
                      cuts: list[int]) -> list[tuple[int, str]]:
    cycle = Cycle()
    out = []
    bounds = [0, *sorted(set(c for c in cuts if 0 < c < len(cond))), len(cond)]
    for lo, hi in zip(bounds, bounds[1:]):
        for t in advance(cycle, np.array(cond[lo:hi], dtype=bool), np.array(now[lo:hi]), for_, keep):
            if t.step in (Step.FIRING, Step.RESOLVED):
                out.append((lo + t.row, t.step.value))
    return out


@settings(max_examples=examples(400), deadline=None)
@given(cond=st.lists(st.booleans(), max_size=60), gaps=st.lists(st.sampled_from([0.0, 0.5, 1.0, 3.0]), max_size=60),
       for_=durations, keep=durations, cuts=st.lists(st.integers(0, 60), max_size=8))
def test_array_life_cycle_matches_the_book_under_any_batching(cond, gaps, for_, keep, cuts) -> None:
    now = list(np.cumsum([gaps[i] if i < len(gaps) else 1.0 for i in range(len(cond))]))
    want = row_transitions(cond, now, for_, keep)
    assert book_transitions(cond, now, for_, keep) == want
    assert array_transitions(cond, now, for_, keep, []) == want
    assert array_transitions(cond, now, for_, keep, cuts) == want
    assert array_transitions(cond, now, for_, keep, list(range(len(cond)))) == want  # one row per batch


def test_for_three_rows_fires_on_the_third_and_keep_two_resolves_on_the_third_quiet_row() -> None:
    cond = [False, True, True, True, False, False, False, True]
    got = array_transitions(cond, [float(i) for i in range(len(cond))], Duration(steps=3), Duration(steps=2), [])
    assert got == [(3, "firing"), (6, "resolved")]
