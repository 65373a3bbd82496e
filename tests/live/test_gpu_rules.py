"""GPU replay traces through the real sampler and engine, in simulated time: each rule fires on its
trace and the healthy trace stays quiet."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from trainwatch.engine import Engine
from trainwatch.model import AlertState, Sample, Severity
from trainwatch.sources.gpu import GpuSampler, ReplayBackend

from .conftest import TRACES, FakeClock

LOG = "run.log"


def replay(engine: Engine, clock: FakeClock, trace: str, seconds: int,
           log_steps: Callable[[int], bool] = lambda t: True) -> list[str]:
    """One GPU reading and one engine tick per simulated second; the log logs a step when log_steps(t)."""
    engine.source(LOG, "keyvalue")
    sampler = GpuSampler(ReplayBackend(TRACES / trace), clock=clock)
    assert sampler.open()
    fired: list[str] = []
    engine.listeners.append(lambda c: fired.append(c.alert.rule) if c.state is AlertState.FIRING else None)
    step = 0
    for t in range(seconds):
        clock.advance(1.0)
        if log_steps(t):
            step += 1
            engine.feed(Sample("loss", 2.0 - step * 1e-4, step=step, source=LOG, line=step))
        engine.feed_all(sampler.sample())
        engine.tick()
    return fired


GPU_RULES = {"hang.stopped", "hang.collective", "oom.near", "oom.creep", "speed.starved", "gpu.throttle",
             "gpu.ecc", "gpu.lost", "hang.stall", "hang.dead_rank"}


def test_healthy_trace_is_quiet(engine: Engine, clock: FakeClock) -> None:
    fired = replay(engine, clock, "healthy.jsonl", 400)
    assert not GPU_RULES & set(fired), fired
    assert engine.store.get("gpu1/util", "gpu") is not None  # both devices became series


def test_idle_while_stalled_is_hang_stopped(engine: Engine, clock: FakeClock) -> None:
    fired = replay(engine, clock, "idle_stalled.jsonl", 1200, log_steps=lambda t: t < 30)
    assert "hang.stopped" in fired
    assert "hang.collective" not in fired
    assert "hang.stall" in fired


def test_busy_at_low_power_while_stalled_is_collective_hang(engine: Engine, clock: FakeClock) -> None:
    fired = replay(engine, clock, "collective_hang.jsonl", 1200, log_steps=lambda t: t < 30)
    assert "hang.collective" in fired
    assert "hang.stopped" not in fired
    alert = next(a for a in engine.alerts() if a.rule == "hang.collective")
    assert "gpu0" in alert.finding.message and "gpu1" in alert.finding.message


def test_collective_needs_a_stall(engine: Engine, clock: FakeClock) -> None:
    fired = replay(engine, clock, "collective_hang.jsonl", 600)  # the log keeps advancing
    assert "hang.collective" not in fired and "hang.stall" not in fired


def test_memory_creep(engine: Engine, clock: FakeClock) -> None:
    fired = replay(engine, clock, "memory_creep.jsonl", 120)
    assert "oom.creep" in fired
    assert "oom.near" not in fired


def test_near_oom(engine: Engine, clock: FakeClock) -> None:
    fired = replay(engine, clock, "near_oom.jsonl", 10)
    assert fired.count("oom.near") == 1  # reported once while it holds
    alert = next(a for a in engine.alerts() if a.rule == "oom.near")
    assert alert.severity is Severity.WARNING and "gpu0" in alert.finding.message


def test_throttling(engine: Engine, clock: FakeClock) -> None:
    fired = replay(engine, clock, "throttling.jsonl", 20)
    assert "gpu.throttle" in fired
    msg = next(a for a in engine.alerts() if a.rule == "gpu.throttle").finding.message
    assert "hw_thermal" in msg and "91 C" in msg


def test_starved_sawtooth(engine: Engine, clock: FakeClock) -> None:
    fired = replay(engine, clock, "starved.jsonl", 60)
    assert "speed.starved" in fired


def test_starved_needs_an_advancing_log(engine: Engine, clock: FakeClock) -> None:
    fired = replay(engine, clock, "starved.jsonl", 60, log_steps=lambda t: False)
    assert "speed.starved" not in fired


def test_gpu_lost_is_critical(engine: Engine, clock: FakeClock) -> None:
    fired = replay(engine, clock, "gpu_lost.jsonl", 15)
    assert fired.count("gpu.lost") == 1
    alert = next(a for a in engine.alerts() if a.rule == "gpu.lost")
    assert alert.severity is Severity.CRITICAL
    assert engine.worst() is Severity.CRITICAL


def test_ecc_errors(engine: Engine, clock: FakeClock) -> None:
    fired = replay(engine, clock, "ecc_errors.jsonl", 10)
    assert fired.count("gpu.ecc") == 2  # uncorrected errors, and a page retired during the run


@pytest.mark.parametrize("name,expected", [("NVIDIA H100 80GB HBM3", 989e12), ("NVIDIA H100 PCIe", 756e12),
                                           ("NVIDIA A100-SXM4-80GB", 312e12), ("NVIDIA L4", 121e12),
                                           ("NVIDIA GeForce RTX 4090", 165e12), ("Tesla T4", 65e12),
                                           ("Mystery Accelerator", None)])
def test_peak_table(name: str, expected: float | None) -> None:
    from trainwatch.rules.mfu import peak_flops

    assert peak_flops(name) == expected


def test_mfu_low(engine: Engine, clock: FakeClock) -> None:
    from trainwatch.model import Event, EventKind

    engine.source(LOG, "keyvalue")
    engine.feed(Event(EventKind.INFO, source=LOG, fields={"params": 7e9}))
    sampler = GpuSampler(ReplayBackend(TRACES / "healthy.jsonl"), clock=clock)
    sampler.open()
    engine.feed_all(sampler.sample())
    fired = []
    engine.listeners.append(lambda c: fired.append(c.alert))
    for step in range(1, 10):  # 2 x H100, 7B params: 2000 tokens/s is about 4% MFU
        clock.advance(1)
        engine.feed(Sample("tokens_per_sec", 2000.0, step=step, source=LOG))
    mfu = [a for a in fired if a.rule == "speed.mfu"]
    assert len(mfu) == 1
    assert mfu[0].finding.evidence["mfu"] == pytest.approx(6 * 7e9 * 2000 / (2 * 989e12))


def test_mfu_healthy_is_quiet(engine: Engine, clock: FakeClock) -> None:
    from trainwatch.model import Event, EventKind

    engine.source(LOG, "keyvalue")
    engine.feed(Event(EventKind.INFO, source=LOG, fields={"params": 7e9}))
    sampler = GpuSampler(ReplayBackend(TRACES / "healthy.jsonl"), clock=clock)
    sampler.open()
    engine.feed_all(sampler.sample())
    for step in range(1, 10):  # about 45% MFU
        engine.feed(Sample("tokens_per_sec", 21000.0, step=step, source=LOG))
    assert not [a for a in engine.alerts() if a.rule == "speed.mfu"]


def test_starved_ignores_idle_readings_before_the_first_step(engine: Engine, clock: FakeClock) -> None:
    fired = replay(engine, clock, "load_then_busy.jsonl", 80, log_steps=lambda t: t >= 20)
    assert "speed.starved" not in fired


def test_starved_ignores_idle_readings_during_a_stall(engine: Engine, clock: FakeClock) -> None:
    fired = replay(engine, clock, "busy_stall_busy.jsonl", 110, log_steps=lambda t: not 30 <= t < 70)
    assert "speed.starved" not in fired


def test_starved_still_fires_when_steps_advance_while_the_gpu_idles(engine: Engine, clock: FakeClock) -> None:
    fired = replay(engine, clock, "load_then_busy.jsonl", 20 + 45, log_steps=lambda t: True)
    assert "speed.starved" in fired  # the same idle readings count once the log is advancing
