"""The array LR rules report exactly what their row-at-a-time versions did, however the rows are batched.

Generated logs mix warmups, decays, plateaus, jumps back up, zero stretches, NaN stretches and restarts
where the step goes back; the oracle is the old row rule (tests/rules/rowref/lr.py)."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st
from rowref import lr as row_lr
from rowref.harness import report

from tests.examples import examples
from trainwatch.model import Sample

PIECE = st.tuples(st.sampled_from(["ramp", "decay", "flat", "jump", "zero", "nan", "noise", "restart"]),
                  st.integers(1, 12), st.floats(1e-5, 1e-2))


@st.composite
def lr_logs(draw) -> list[Sample]:
    """An LR curve (with a loss beside it on some rows) built from random pieces."""
    pieces = draw(st.lists(PIECE, min_size=1, max_size=10))
    with_loss = draw(st.booleans())
    out: list[Sample] = []
    step, lr = draw(st.integers(0, 3)), draw(st.floats(1e-6, 1e-3))
    line = 0
    for kind, n, size in pieces:
        if kind == "restart":
            step = max(0, step - draw(st.integers(0, 40)))
        for k in range(n):
            if kind == "ramp":
                lr += size
            elif kind == "decay":
                lr *= 0.7
            elif kind == "jump":
                lr = lr * 3 + size if k == 0 else lr
            elif kind == "noise":
                lr = abs(lr * (1 + draw(st.floats(-0.3, 0.3))))
            value = 0.0 if kind == "zero" else math.nan if kind == "nan" else lr
            line += 1
            out.append(Sample("lr", value, step, source="run.log", line=line))
            if with_loss:
                line += 1
                out.append(Sample("loss", 3.0 - 0.01 * len(out), step, source="run.log", line=line))
            step += draw(st.sampled_from([1, 1, 1, 2, 0]))
    return out


def _same(rule_id: str, oracle: type, records: list[Sample], cuts: list[int]) -> None:
    want = report(rule_id, records, None, oracle=oracle)
    assert report(rule_id, records, None) == want
    assert report(rule_id, records, []) == want
    assert report(rule_id, records, [c % (len(records) + 1) for c in cuts]) == want


@settings(max_examples=examples(150), deadline=None)
@given(lr_logs(), st.lists(st.integers(0, 400), max_size=8))
def test_lr_schedule_matches_the_row_rule(records, cuts) -> None:
    _same("lr.schedule", row_lr.LrSchedule, records, cuts)


def test_lr_schedule_reports_a_jump_after_decay_and_nothing_while_warming_up() -> None:
    values = [1e-4 * (i + 1) for i in range(5)] + [5e-4 * 0.8 ** i for i in range(1, 10)] + [5e-4]
    records = [Sample("lr", v, i, source="run.log", line=i + 1) for i, v in enumerate(values)]
    got = report("lr.schedule", records, [3, 7])
    assert "lr.schedule" in got and "at step 14" in got
    assert report("lr.schedule", records[:14], None) == "[]"


@st.composite
def warmup_logs(draw) -> list[Sample]:
    """The first LR points of a run (a warmup or not, starting early or late), with an epoch counter and an
    eval loss on some records, written on the record's line before its LR or on lines of their own."""
    out: list[Sample] = []
    line, step = 0, draw(st.integers(0, 8))
    epoch, per_epoch = 0.0, draw(st.booleans())
    ramp = draw(st.booleans())
    for i in range(draw(st.integers(1, 12))):
        line += 1
        if draw(st.integers(0, 2)) == 0:
            out.append(Sample("eval_loss", 2.0, step, source="run.log", line=line))
        if draw(st.booleans()):
            epoch += 1.0 if per_epoch else 0.25
            out.append(Sample("epoch", epoch, step, source="run.log", line=line))
        if draw(st.booleans()):
            line += 1  # the LR on a line of its own
        v = math.nan if draw(st.integers(0, 7)) == 0 else (1e-4 * (i + 1) if ramp else 1e-3 * (1 - 0.01 * i))
        out.append(Sample("lr", v, step, source="run.log", line=line))
        step += draw(st.sampled_from([1, 1, 0, 3]))
    return out


@settings(max_examples=examples(150), deadline=None)
@given(warmup_logs(), st.lists(st.integers(0, 60), max_size=6))
def test_lr_no_warmup_matches_the_row_rule(records, cuts) -> None:
    _same("lr.no_warmup", row_lr.LrNoWarmup, records, cuts)


def test_no_warmup_ignores_epochs_logged_after_the_fifth_lr_point() -> None:
    """An epoch counter that first moves by a whole epoch after the fifth LR point cannot excuse it: the
    batch is judged later, but the verdict reads only what was logged up to that point."""
    records = [Sample("lr", 1e-3, i, source="run.log", line=i + 1) for i in range(5)]
    records += [Sample("epoch", float(e), 5 + e, source="run.log", line=10 + e) for e in range(3)]
    got = report("lr.no_warmup", records, [])
    assert "starts at its peak" in got
    assert got == report("lr.no_warmup", records, None, oracle=row_lr.LrNoWarmup)
