"""The numbers rule of tests/rules/test_numbers_are_the_logs.py for the findings beyond the loss: RL
rewards and completion lengths, EBFT alignment, the fp16 loss scale, throughput, and the GPU rules on
replayed NVML traces. A value printed next to a step, or beside the metric's name in a finding dated at
a step, is the value logged there, or it says which statistic it is."""

from __future__ import annotations

import random

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from rulekit import Run

from tests.live.conftest import FakeClock
from tests.live.test_gpu_rules import replay
from tests.rules.test_numbers_are_the_logs import _named, by_step, violations
from trainwatch import config
from trainwatch.engine import Engine
from trainwatch.model import GPU_SOURCE, Alert, Finding, Severity


def grpo_rows(seed: int, n: int, zero_until: int, drop_at: int, noise: float) -> list[tuple[int, dict[str, float]]]:
    """A GRPO log: rewards at zero, then learning; completion lengths climbing to the limit; the clipped
    share high for a while; throughput that falls to a third."""
    rng = random.Random(seed)
    rows = []
    for s in range(1, n + 1):
        rows.append((s, {
            "loss": 0.01 * (1 + rng.gauss(0, 0.3)), "lr": 1e-6, "grad_norm": 0.5 * (1 + rng.gauss(0, 0.2)),
            "rewards/acc/mean": 0.0 if s < zero_until else 0.3 * (1 + rng.gauss(0, noise)),
            "reward_std": 0.0 if s < zero_until // 2 else 0.2 * (1 + rng.gauss(0, noise)),
            "completions/mean_length": min(1000.0, 200 + 12 * s + rng.gauss(0, 40 * noise)),
            "completions/max_length": 1024,
            "completions/clipped_ratio": 0.9 if zero_until < s < zero_until + 10 else 0.1,
            "tokens_per_sec": (1000 if s < drop_at else 300) * (1 + rng.gauss(0, noise)),
        }))
    return rows


def ebft_rows(seed: int, n: int, noise: float) -> list[tuple[int, dict[str, float]]]:
    rng = random.Random(seed)
    return [(s, {"loss": 1.0 + rng.gauss(0, 0.01), "lr": 1e-5,
                 "ebft/alignment": 0.8 - 0.005 * s + rng.gauss(0, 0.05 * noise)}) for s in range(1, n + 1)]


def fp16_rows(seed: int, n: int, collapse_at: int) -> list[tuple[int, dict[str, float]]]:
    """A dynamic loss scale that halves now and then, and from `collapse_at` falls below 1."""
    rng = random.Random(seed)
    rows, scale = [], 65536.0
    for s in range(1, n + 1):
        if s >= collapse_at:
            scale = max(scale / 4, 2.0 ** -6)
        elif rng.random() < 0.05:
            scale /= 2
        rows.append((s, {"loss": 2 - 0.01 * s + rng.gauss(0, 0.02), "loss_scale": scale, "lr": 1e-4,
                         "samples_per_sec": 50 * (1 + rng.gauss(0, 0.05)) * (0.3 if s > collapse_at + 20 else 1)}))
    return rows


def _alerts(preset: str, rows: list[tuple[int, dict[str, float]]]) -> list[Alert]:
    r = Run(preset)
    for step, metrics in rows:
        r.step(step, **metrics)
    r.finish()
    return r.engine.alerts()


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow],
          phases=(Phase.explicit, Phase.reuse, Phase.generate))
@given(st.integers(0, 10**6), st.integers(70, 140), st.integers(25, 60), st.integers(40, 120),
       st.floats(0.01, 0.3))
def test_rl_ebft_fp16_and_speed_findings_print_the_logs_own_numbers(seed, n, zero_until, cut, noise):
    for preset, rows in (("grpo", grpo_rows(seed, n, zero_until, min(cut, n - 10), noise)),
                         ("ebft", ebft_rows(seed, n, noise)),
                         ("sft", fp16_rows(seed, n, min(cut, n - 25)))):
        alerts = _alerts(preset, rows)
        assert violations(alerts, by_step(rows)) == []


def test_the_generated_logs_reach_the_rules_they_are_for():
    """Each generated log fires the rules whose numbers the property test checks, so it checks something."""
    rows = grpo_rows(1, 120, 60, 90, 0.05)
    fired = {a.rule for a in _alerts("grpo", rows) if a.severity >= Severity.WARNING}
    assert {"rl.reward_zero", "rl.reward_std_zero", "rl.length_hacking", "speed.drop"} <= fired
    assert "ebft.alignment_down" in {a.rule for a in _alerts("ebft", ebft_rows(1, 80, 0.2))}
    fp16 = {a.rule for a in _alerts("sft", fp16_rows(1, 100, 40))}
    assert {"fp16.overflow", "speed.drop"} <= fp16


def test_medians_say_so_in_the_message():
    """A median beside a metric's name, in a finding dated at a step, reads as that step's value: the
    length, alignment and throughput findings name their medians."""
    rows = grpo_rows(1, 120, 60, 90, 0.05)
    found = {a.rule: a for a in _alerts("grpo", rows)}
    assert "a median of" in found["rl.length_hacking"].finding.message
    assert "; the median of the last 5 tokens_per_sec points, " in found["speed.drop"].finding.message
    align = next(a for a in _alerts("ebft", ebft_rows(1, 80, 0.2)) if a.rule == "ebft.alignment_down")
    assert "the median of the first 10 was" in align.finding.message
    fake = Alert(rule="speed.drop", severity=Severity.WARNING, family="speed", title="",
                 finding=Finding(message="tokens_per_sec 316.3 is 31% of its level", step=5,
                                 evidence={"metric": "tokens_per_sec"}), fixes=())
    assert _named(fake, fake.finding.message, {5: [300.0]})  # the check itself catches the unlabelled form


GPU_TRACES = (("idle_stalled.jsonl", 1200, 30), ("collective_hang.jsonl", 1200, 30), ("memory_creep.jsonl", 120, 0),
              ("near_oom.jsonl", 10, 0), ("starved.jsonl", 400, 0), ("throttling.jsonl", 120, 0),
              ("ecc_errors.jsonl", 120, 0), ("gpu_lost.jsonl", 120, 0))


def test_gpu_findings_print_the_readings_own_numbers():
    """Replayed NVML traces: every (step, value) a GPU finding prints or keeps as its latest is a reading
    (or a logged value) at that step, or carries its label."""
    fired: set[str] = set()
    for trace, seconds, stop in GPU_TRACES:
        clock = FakeClock()
        eng = Engine(config.load("sft"), clock=clock)
        replay(eng, clock, trace, seconds, (lambda t, stop=stop: t < stop) if stop else (lambda t: True))
        rows: dict[int, list[float]] = {}
        for s in eng.store:
            for p in s.recent:
                if p.step is not None:
                    rows.setdefault(p.step, []).append(p.value)
        gpu = [a for a in eng.alerts() if a.source == GPU_SOURCE or a.family in ("gpu", "hang", "oom", "speed")]
        fired |= {a.rule for a in gpu}
        assert violations(gpu, rows) == [], trace
    assert {"hang.stopped", "hang.collective", "oom.creep", "oom.near", "speed.starved"} <= fired
