"""resume.loss_jump over arrays reports exactly what its row-at-a-time version did, however rows are batched.

Generated logs: a noisy loss with NaN stretches, steps that go back (a restart), RESUME events, and loss
levels after the resume that are sometimes well above the level before. The oracle is the old row rule
(tests/rules/rowref/resume.py)."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st
from rowref import resume as row_resume
from rowref.harness import report

from tests.examples import examples
from trainwatch.model import Event, EventKind, Record, Sample

SRC = "run.log"


@st.composite
def resumed_logs(draw) -> list[Record]:
    """Pieces of loss rows; a piece may start by going back some steps or with a RESUME event."""
    out: list[Record] = []
    step, line = draw(st.integers(0, 5)), 0
    for _ in range(draw(st.integers(1, 6))):
        start = draw(st.sampled_from(["on", "back", "event", "back+event"]))
        if "event" in start:
            line += 1
            fields = {"step": step} if draw(st.booleans()) else {}
            out.append(Event(EventKind.RESUME, SRC, line, step=step, fields=fields))
        if "back" in start:
            step = max(0, step - draw(st.integers(1, 30)))
        level = draw(st.floats(0.2, 5.0))
        for _ in range(draw(st.integers(1, 15))):
            line += 1
            v = math.nan if draw(st.integers(0, 9)) == 0 else level * (1 + draw(st.floats(-0.1, 0.1)))
            out.append(Sample("loss", v, step, source=SRC, line=line))
            step += draw(st.sampled_from([1, 1, 2, 0]))
    return out


@settings(max_examples=examples(120), deadline=None)
@given(resumed_logs(), st.lists(st.integers(0, 200), max_size=6))
def test_loss_jump_matches_the_row_rule(records, cuts) -> None:
    want = report("resume.loss_jump", records, None, oracle=row_resume.ResumeLossJump)
    assert report("resume.loss_jump", records, None) == want
    assert report("resume.loss_jump", records, []) == want
    assert report("resume.loss_jump", records, [c % (len(records) + 1) for c in cuts]) == want


def test_the_level_before_a_resume_comes_from_points_the_store_has_since_let_go() -> None:
    """The loss is 9, then 1 for five points, then NaN until a restart logged almost a recent window later:
    the level before is 1, as it was when the restart was logged, though the batch holding the restart is
    judged after the store has dropped those five points."""
    rows = [9.0] * 53 + [1.0] * 5 + [math.nan] * 2042 + [3.0] * 100
    steps = list(range(2100)) + list(range(10, 110))
    records: list[Record] = [Sample("loss", v, s, source=SRC, line=i + 1) for i, (v, s) in enumerate(zip(rows, steps))]
    want = report("resume.loss_jump", records, None, oracle=row_resume.ResumeLossJump)
    assert "is 3.0x the median" in want and "before, 1\"" in want
    assert report("resume.loss_jump", records, []) == want
    assert report("resume.loss_jump", records, [1500]) == want
