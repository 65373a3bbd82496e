"""The stall detector and dead-rank naming in simulated time (the engine's injected clock)."""

from __future__ import annotations

from trainwatch.engine import Engine
from trainwatch.model import AlertState, Event, EventKind, Sample, Severity

from .conftest import FakeClock

LOG = "run.log"


def fired_list(engine: Engine) -> list[tuple[str, str, Severity]]:
    out: list[tuple[str, str, Severity]] = []
    engine.listeners.append(lambda c: out.append((c.alert.rule, c.state.value, c.alert.severity)))
    return out


def steps(engine: Engine, clock: FakeClock, first: int, n: int, every: float, source: str = LOG) -> int:
    for s in range(first, first + n):
        clock.advance(every)
        engine.feed(Sample("loss", 2.0, step=s, source=source, line=s))
        engine.tick()
    return first + n


def silence(engine: Engine, clock: FakeClock, seconds: float, tick: float = 0.5) -> None:
    t = 0.0
    while t < seconds:
        clock.advance(tick)
        t += tick
        engine.tick()


def stall_alerts(out: list[tuple[str, str, Severity]]) -> list[tuple[str, Severity]]:
    return [(state, sev) for rule, state, sev in out if rule == "hang.stall"]


def test_warning_then_critical_then_resolved(engine: Engine, clock: FakeClock) -> None:
    out = fired_list(engine)
    nxt = steps(engine, clock, 1, 50, every=10.0)  # learns a 10 s interval
    engine.source(LOG).last_line = "Step 50: loss=2.0"
    silence(engine, clock, 100)  # 10 intervals, but under the 120 s floor
    assert stall_alerts(out) == []
    silence(engine, clock, 30)  # 130 s: past max(5 x 10 s, 120 s)
    assert stall_alerts(out) == [("firing", Severity.WARNING)]
    alert = next(a for a in engine.alerts() if a.rule == "hang.stall")
    assert "no new step for 2m" in alert.finding.message
    assert "usual interval 10s" in alert.finding.message
    assert "Step 50: loss=2.0" in alert.finding.message
    silence(engine, clock, 480)  # 610 s: past max(15 x 10 s, 600 s)
    assert stall_alerts(out)[-1] == ("firing", Severity.CRITICAL)
    steps(engine, clock, nxt, 1, every=1.0)
    assert set(stall_alerts(out)[-2:]) == {("resolved", Severity.CRITICAL), ("resolved", Severity.WARNING)}


def test_threshold_scales_with_the_runs_own_interval(engine: Engine, clock: FakeClock) -> None:
    out = fired_list(engine)
    steps(engine, clock, 1, 20, every=60.0)  # slow steps: one a minute
    silence(engine, clock, 240)  # 4 intervals: normal
    assert stall_alerts(out) == []
    silence(engine, clock, 70)  # 310 s > 5 x 60 s
    assert stall_alerts(out) == [("firing", Severity.WARNING)]


def test_never_fires_after_train_end(engine: Engine, clock: FakeClock) -> None:
    out = fired_list(engine)
    steps(engine, clock, 1, 20, every=5.0)
    engine.feed(Event(EventKind.TRAIN_END, source=LOG, line=99, text="train_runtime 100"))
    silence(engine, clock, 7200, tick=5.0)
    assert stall_alerts(out) == []


def test_a_crash_traceback_counts_as_the_end(engine: Engine, clock: FakeClock) -> None:
    out = fired_list(engine)
    steps(engine, clock, 1, 20, every=5.0)
    engine.feed(Event(EventKind.TRACEBACK, source=LOG, line=30, text="Traceback...\nValueError: boom",
                      fields={"exception": "ValueError", "message": "boom"}))
    silence(engine, clock, 3600, tick=5.0)
    assert stall_alerts(out) == []


def test_eval_phase_is_tolerated_and_learned(engine: Engine, clock: FakeClock) -> None:
    out = fired_list(engine)
    nxt = steps(engine, clock, 1, 30, every=2.0)
    engine.feed(Event(EventKind.EVAL_START, source=LOG, line=31))
    silence(engine, clock, 300)  # a 5-minute evaluation: within the eval allowance
    assert stall_alerts(out) == []
    nxt = steps(engine, clock, nxt, 30, every=2.0)
    # the eval did not spoil the learned step interval: a plain stall is still caught at the floor
    silence(engine, clock, 125)
    assert stall_alerts(out) == [("firing", Severity.WARNING)]


def test_checkpoint_phase_gets_the_allowance(engine: Engine, clock: FakeClock) -> None:
    out = fired_list(engine)
    steps(engine, clock, 1, 30, every=2.0)
    engine.feed(Event(EventKind.CHECKPOINT, source=LOG, line=31))
    silence(engine, clock, 600)
    assert stall_alerts(out) == []
    silence(engine, clock, 200)  # 800 s: past 120 s + 600 s of checkpoint allowance
    assert ("firing", Severity.WARNING) in stall_alerts(out)


def test_unlearned_interval_waits_longer(engine: Engine, clock: FakeClock) -> None:
    out = fired_list(engine)
    steps(engine, clock, 1, 1, every=1.0)  # one step only: the interval is unknown
    silence(engine, clock, 800, tick=5.0)
    assert stall_alerts(out) == []
    silence(engine, clock, 200, tick=5.0)
    assert stall_alerts(out) == [("firing", Severity.WARNING)]


def test_dead_rank_named_with_file_and_line(engine: Engine, clock: FakeClock) -> None:
    out = fired_list(engine)
    ranks = [f"out/rank{i}.log" for i in range(3)]
    for r in ranks:
        engine.source(r, "keyvalue").facts["label"] = f"rank {r[-5]}"
    for s in range(1, 21):
        clock.advance(2.0)
        for r in ranks:
            engine.feed(Sample("loss", 2.0, step=s, source=r, line=s))
        engine.tick()
    engine.feed(Event(EventKind.TRACEBACK, source=ranks[1], line=57,
                      text="Traceback (most recent call last):\n  ...\n"
                           "RuntimeError: CUDA error: an illegal memory access",
                      fields={"exception": "RuntimeError", "message": "CUDA error: an illegal memory access"}))
    silence(engine, clock, 20)
    assert not [o for o in out if o[0] == "hang.dead_rank"]  # the others may still be working
    silence(engine, clock, 20)
    dead = [a for a in engine.alerts() if a.rule == "hang.dead_rank"]
    assert len(dead) == 1
    msg = dead[0].finding.message
    assert "rank 1" in msg and "out/rank1.log:57" in msg and "illegal memory access" in msg
    assert dead[0].severity is Severity.CRITICAL


def test_rank_that_stops_while_others_advance(engine: Engine, clock: FakeClock) -> None:
    ranks = ["out/rank0.log", "out/rank1.log"]
    for s in range(1, 200):
        clock.advance(1.0)
        engine.feed(Sample("loss", 2.0, step=s, source=ranks[0], line=s))
        if s <= 100:
            engine.feed(Sample("loss", 2.0, step=s, source=ranks[1], line=s))
        engine.tick()
    dead = [a for a in engine.alerts() if a.rule == "hang.dead_rank" and a.state is AlertState.FIRING]
    assert len(dead) == 1
    assert dead[0].source == "out/rank1.log"
    assert "stopped at step 100" in dead[0].finding.message and "out/rank1.log:100" in dead[0].finding.message


def test_single_source_never_dead_rank(engine: Engine, clock: FakeClock) -> None:
    steps(engine, clock, 1, 10, every=1.0)
    engine.feed(Event(EventKind.TRACEBACK, source=LOG, line=20, text="Traceback\nValueError: x",
                      fields={"exception": "ValueError"}))
    silence(engine, clock, 600)
    assert not [a for a in engine.alerts() if a.rule == "hang.dead_rank"]


def test_training_line_after_a_checkpoint_at_the_same_step_ends_the_phase(clock: FakeClock, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """nanoGPT evaluates at step N, saves, then logs `iter N`: the same step, yet training again, so a
    silence after it is judged with the training thresholds, not the checkpoint allowance."""
    from trainwatch import config
    from trainwatch.adapters.keyvalue import KeyValueAdapter
    from trainwatch.adapters.pipeline import SourceParser

    user = tmp_path / "trainwatch.yaml"
    user.write_text("rules:\n  hang.stall: {warn_floor_s: 30}\n")
    cfg = config.load("sft", [user])
    engine = Engine(cfg, clock=clock)
    parser = SourceParser(KeyValueAdapter(LOG))
    out = fired_list(engine)
    lines = []
    for it in range(1, 301):
        lines.append(f"iter {it}: loss {3.0 - it / 200:.4f}, time 1000.00ms, mfu 1.00%")
    lines += ["step 300: train loss 1.5012, val loss 1.5533", "saving checkpoint to out",
              "iter 300: loss 1.4981, time 9000.00ms, mfu 1.00%"]
    for n, line in enumerate(lines, 1):
        clock.advance(1.0)
        engine.feed_all(parser.feed(line, n))
        engine.tick()
    assert engine.sources[LOG].phase == "train"
    silence(engine, clock, 45)
    assert stall_alerts(out) == [("firing", Severity.WARNING)]
