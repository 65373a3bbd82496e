"""loss.spike and grad.spike over arrays report exactly what the row-at-a-time rules reported.

Generated series (noise on a falling curve, spikes and blow-ups that keep jumping, NaN/Inf stretches
longer than the look-back, runs that restart at a lower step, a new training in the same log, losses
near zero and below it) go through a real engine whose only rule is either the array rule or its row
oracle in tests/rules/rowref/spike_rows.py, fed whole, one record at a time and in random cuts; the
alerts must be the same text."""

from __future__ import annotations

import json
import math
import random

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.examples import examples
from tests.rules.rowref.harness import decided
from tests.rules.rowref.spike_rows import GradSpikeRows, LossSpikeRows
from trainwatch import config
from trainwatch.batch import from_records
from trainwatch.engine import Engine
from trainwatch.model import Event, EventKind, Record, Sample
from trainwatch.rules.base import Rule
from trainwatch.rules.stats import fmt

SOURCE = "run.log"


def make_engine(rule_id: str, oracle: type[Rule] | None) -> Engine:
    """An engine with `rule_id` alone (no other rule fires or inhibits): the shipped rule, or `oracle`
    built from the same spec."""
    engine = Engine(config.load("sft", None), clock=lambda: 1_000_000.0)
    shipped = [r for r in engine.rules if r.spec.id == rule_id]
    assert shipped, f"{rule_id} is not in the sft preset"
    engine.rules = [oracle(shipped[0].spec) if oracle is not None else shipped[0]]
    return engine


def report(rule_id: str, oracle: type[Rule] | None, records: list[Record], cuts: list[int] | None) -> str:
    """The engine's alerts as text after feeding `records` one at a time (`cuts` None) or in batches
    cut at `cuts` ([] is one batch)."""
    engine = make_engine(rule_id, oracle)
    told: list[dict] = []  # what the sinks were told: each alert's own finding (a later episode's too)
    engine.listeners.append(lambda c: told.append({
        "state": c.state.value, "message": c.alert.finding.message,
        "evidence": c.alert.finding.evidence, "step": c.alert.finding.step, "line": c.alert.finding.line,
        "first_step": c.alert.first_step, "found_step": c.alert.found_step}))
    fresh = list(from_records(SOURCE, records).records())  # the engine settles steps on its own copies
    if cuts is None:
        for r in fresh:
            engine.feed(r)
    else:
        bounds = [0, *sorted(set(cuts)), len(fresh)]
        for lo, hi in zip(bounds, bounds[1:], strict=False):
            engine.feed_batch(from_records(SOURCE, fresh[lo:hi]))
    engine.finish(SOURCE)
    alerts = [decided(a.to_dict()) for a in engine.alerts()]
    return json.dumps({"alerts": alerts, "told": told}, indent=1, default=str)  # NaN == NaN as text


@st.composite
def logs(draw: st.DrawFn, metric: str) -> list[Record]:
    """A log of one metric: stretches of noisy curve with spikes, bursts, NaN/Inf runs and restarts."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    out: list[Record] = []
    step = 0
    level = float(draw(st.sampled_from([2.5, 1.0, 0.004, 40.0, -0.5, 0.0])))
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(["curve", "curve", "spike", "burst", "nan", "restart", "new_run"]))
        n = draw(st.integers(1, 400))
        if kind == "nan":
            n = draw(st.sampled_from([1, 3, 30, 270, 820]))  # past both look-backs' scan reach too
            vals = rng.choice([np.nan, np.inf, -np.inf], size=n)
        elif kind == "spike":
            vals = np.full(draw(st.integers(1, 3)), (abs(level) + 0.01) * float(rng.choice([3, 8, 30, 1e3])))
        elif kind == "burst":  # a blow-up that keeps jumping, with calm rows between the jumps
            base = abs(level) + 0.01
            vals = base * np.where(rng.random(n) < 0.3, rng.choice([5.0, 50.0, 500.0], size=n), 1.0)
            vals[rng.random(n) < 0.15] = np.nan  # NaN rows count for the alert's calm, not the episode's
        else:
            if kind == "restart":
                step = max(0, step - draw(st.integers(1, 500)))
            if kind == "new_run":
                out.append(Event(EventKind.INFO, source=SOURCE, line=len(out) + 1, fields={"new_run": True}))
                step = draw(st.sampled_from([0, step]))
            noise = float(rng.choice([0.01, 0.1, 0.5, 2.0]))
            drift = np.linspace(1.0, float(rng.choice([1.0, 0.5, 0.01])), n)
            vals = level * drift * (1 + noise * rng.standard_normal(n)) if level else noise * rng.standard_normal(n)
        for v in vals:
            step += int(rng.choice([1, 1, 1, 0, 5]))
            out.append(Sample(metric, float(v), step, source=SOURCE, line=len(out) + 1))
    return out


def _same(rule_id: str, oracle: type[Rule], records: list[Record], seed: int) -> None:
    want = report(rule_id, oracle, records, [])
    assert report(rule_id, None, records, []) == want
    assert report(rule_id, None, records, None) == want
    rng = random.Random(seed)
    cuts = [rng.randrange(len(records) + 1) for _ in range(rng.randrange(1, 15))]
    assert report(rule_id, None, records, cuts) == want


@settings(max_examples=examples(40), deadline=None)
@given(records=logs("loss"), seed=st.integers(0, 1000))
def test_loss_spike_over_arrays_equals_the_row_rule(records: list[Record], seed: int) -> None:
    _same("loss.spike", LossSpikeRows, records, seed)


@settings(max_examples=examples(40), deadline=None)
@given(records=logs("grad_norm"), seed=st.integers(0, 1000))
def test_grad_spike_over_arrays_equals_the_row_rule(records: list[Record], seed: int) -> None:
    _same("grad.spike", GradSpikeRows, records, seed)


def test_a_blowup_that_keeps_jumping_is_one_spike_told_at_its_first_jump() -> None:
    """The episode semantics survive the port: jumps within keep_firing_for of each other stay one
    alert that tells the first jump, and a jump after a long calm is a new episode."""
    rng = np.random.default_rng(3)
    vals = list(2.0 * (1 + 0.02 * rng.standard_normal(60)))
    vals[30], vals[33], vals[36] = 40.0, 60.0, 80.0  # one burst: calm gaps of 2 rows
    vals[55] = 50.0  # 18 calm rows later: a new episode
    records: list[Record] = [Sample("loss", v, i + 1, source=SOURCE, line=i + 1) for i, v in enumerate(vals)]
    engine = make_engine("loss.spike", None)
    engine.feed_batch(from_records(SOURCE, records))
    engine.finish(SOURCE)
    (alert,) = engine.alerts()
    assert alert.finding.message.startswith("loss 40 at step 31")
    assert [(e.start_step, e.end_step) for e in alert.episodes] == [(31, 37), (56, 56)]
    assert report("loss.spike", None, records, []) == report("loss.spike", LossSpikeRows, records, [])


def test_a_jump_after_the_alert_resolved_but_within_the_episode_tells_the_first_jump() -> None:
    """NaN rows count towards the alert's keep_firing_for but not towards the rule's episode: a jump after
    a NaN and five calm rows starts a new alert that still tells the episode's first jump, as before."""
    vals = [2.0 + 0.01 * (i % 3) for i in range(30)] + [40.0, math.nan] + [2.0] * 5 + [45.0] + [2.0] * 8
    records: list[Record] = [Sample("loss", v, i + 1, source=SOURCE, line=i + 1) for i, v in enumerate(vals)]
    want = report("loss.spike", LossSpikeRows, records, [])
    for cuts in ([], None, [31], [37, 38]):
        assert report("loss.spike", None, records, cuts) == want
    (alert,) = json.loads(want)["alerts"]
    assert alert["episode_count"] == 2
    second = [t for t in json.loads(want)["told"] if t["state"] == "firing"][1]
    assert second["message"].startswith("loss 40 at step 31") and second["evidence"]["last_value"] == 45.0


def test_a_loss_that_jumps_and_stays_up_stopped_the_same_in_both_forms() -> None:
    """Loss 1 -> 1e8 and stays there: the recent median the spike was found over rises to 1e8 and the
    condition stops holding without the loss ever coming back. Both the array rule and its row oracle
    tell the alert, its episode and what the sinks heard as stopped, with the same reason, on the row
    the alert ended on, whatever the cuts."""
    vals = [1.0 + 0.01 * (i % 3) for i in range(40)] + [1e8 + 1e5 * (i % 3) for i in range(80)]
    records: list[Record] = [Sample("loss", v, i + 1, source=SOURCE, line=i + 1) for i, v in enumerate(vals)]
    for oracle, cuts in ((LossSpikeRows, []), (LossSpikeRows, None), (None, []), (None, None), (None, [45, 60])):
        got = json.loads(report("loss.spike", oracle, records, cuts))
        engine = make_engine("loss.spike", oracle)
        told: list[str] = []  # what the sinks heard
        engine.listeners.append(lambda c, told=told: told.append(c.told_state))
        engine.feed_batch(from_records(SOURCE, list(from_records(SOURCE, records).records())))
        engine.finish(SOURCE)
        (alert,) = got["alerts"]
        assert alert["state"] == "stopped"
        why = alert["stopped"]
        assert why.startswith("loss did not come back: ")
        step = int(why.split(" at step ")[1].split()[0])
        assert f": {fmt(vals[step - 1])} at step {step} is " in why  # the value logged at that step
        assert "its recent median before the spike (1.01)" in why
        assert alert["episodes"][-1]["stopped"] == why
        assert told == ["firing", "stopped"]
