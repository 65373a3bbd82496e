from __future__ import annotations

import random

from rulekit import Run

from trainwatch.model import EventKind, Severity


def test_grad_spike_relative_and_absolute():
    r = Run()
    rnd = random.Random(1)
    for s in range(1, 30):
        r.step(s, grad_norm=1.0 + rnd.gauss(0, 0.1))
    r.step(30, grad_norm=25.0)
    a = r.alert("grad.spike")
    assert a.first_step == 30 and a.finding.evidence["ratio"] > 20
    fresh = Run()
    fresh.step(1, grad_norm=150.0)  # no history: only the absolute line can say it
    assert fresh.alert("grad.spike").finding.evidence["threshold"] == 100.0
    quiet = Run()
    for s in range(1, 40):
        quiet.step(s, grad_norm=1.0 + rnd.gauss(0, 0.3))
    assert quiet.fired() == []


def test_grad_range_needs_persistence_and_differs_by_preset():
    sft, grpo = Run("sft"), Run("grpo")
    for s in range(1, 20):
        sft.step(s, grad_norm=2.0)
        grpo.step(s, grad_norm=2.0)
    assert "grad.range" not in grpo.fired()  # for: 20 logged points
    for s in range(20, 26):
        sft.step(s, grad_norm=2.0)
        grpo.step(s, grad_norm=2.0)
    assert "grad.range" not in sft.fired()  # 2.0 is healthy for SFT, not for GRPO
    assert grpo.alert("grad.range").first_step == 1
    low = Run("sft")
    for s in range(1, 10):
        low.step(s, grad_norm=0.01)
    assert "grad.range" not in low.fired()  # not yet persistent


def test_grpo_zero_grad_norm_now_and_then_is_fine():
    r = Run("grpo")
    for s in range(1, 60):
        r.step(s, grad_norm=0.0 if s % 7 == 0 else 0.2, loss=-0.1)
    assert r.fired() == []


def test_lr_zero_after_warmup_but_not_at_the_schedule_end():
    r = Run()
    r.event(EventKind.INFO, total_steps=100)
    for s in range(1, 10):
        r.step(s, lr=1e-4)
    r.step(10, lr=0.0)
    r.step(11, lr=0.0)
    assert "lr.zero" not in r.fired()  # for: 3 logged points
    r.step(12, lr=0.0)
    assert r.alert("lr.zero").first_step == 10  # pending since the first zero
    end = Run()
    end.event(EventKind.INFO, total_steps=100)
    for s in range(90, 101):
        end.step(s, lr=0.0 if s >= 99 else 1e-6)
    assert "lr.zero" not in end.fired()


def test_no_warmup_is_info_in_sft_and_pretrain():
    for preset, sev in (("sft", Severity.INFO), ("pretrain", Severity.INFO)):
        r = Run(preset)
        for s in range(1, 8):
            r.step(s, lr=3e-4 * (1 - s / 100))
        assert r.alert("lr.no_warmup").severity is sev
    ok = Run()
    for s in range(1, 8):
        ok.step(s, lr=3e-4 * s / 10)
    assert "lr.no_warmup" not in ok.fired()


def test_lr_jumping_back_up_mid_run():
    r = Run()
    lrs = [1e-5, 2e-5, 3e-5, 2.5e-5, 2e-5, 1.5e-5, 1e-5, 3e-5, 2.9e-5]
    for s, v in enumerate(lrs, start=1):
        r.step(s, lr=v)
    a = r.alert("lr.schedule")
    assert a.first_step == 8
    assert r.fired().count("lr.schedule") == 1


def test_fp16_overflow_repeated_events_and_collapsed_scale():
    r = Run()
    for s in range(1, 5):  # calibration at the start: a few overflows are normal
        r.event(EventKind.ERROR, step=s, signature="fp16.overflow", loss_scale=65536 / 2 ** s)
    assert r.fired() == []
    for s in range(100, 108):
        r.event(EventKind.ERROR, step=s, signature="fp16.overflow", loss_scale=1024.0)
    assert r.alert("fp16.overflow").finding.evidence["recent"] == 8
    m = Run()
    for s, v in enumerate([65536.0, 1024.0, 16.0, 0.5], start=1):
        m.step(s, **{"loss scale": v})
    assert m.alert("fp16.overflow").first_step == 4


def test_resume_detected_sched_reset_and_loss_jump():
    r = Run()
    for s in range(1, 61):
        r.step(s, loss=3.0 - s * 0.02, lr=1e-4 * min(1.0, s / 10) * (1 - s / 200))
    for s in range(41, 50):  # resumed from step 40 with a fresh optimiser and scheduler
        r.step(s, loss=2.9, lr=1e-4 * (s - 40) / 10)
    fired = r.fired()
    assert "resume.detected" in fired
    a = r.alert("resume.sched_reset")
    assert a.first_step == 41 and a.finding.evidence["baseline"] > a.finding.evidence["value"]
    j = r.alert("resume.loss_jump")
    assert j.finding.evidence["ratio"] > 1.3
    assert "lr.schedule" not in fired


def test_clean_resume_says_only_that_it_resumed():
    r = Run()
    lr = lambda s: 1e-4 * min(1.0, s / 10) * (1 - s / 200)  # noqa: E731
    for s in range(1, 61):
        r.step(s, loss=3.0 - s * 0.02, lr=lr(s))
    for s in range(41, 60):
        r.step(s, loss=3.0 - s * 0.02, lr=lr(s))
    assert r.fired() == ["resume.detected"]
    assert r.alert("resume.detected").severity is Severity.INFO


def test_resume_event_then_warmup_again():
    r = Run()
    r.event(EventKind.RESUME, step=500, text="Resuming training from checkpoint", step_=500)
    for s in range(501, 505):
        r.step(s, lr=1e-5 * (s - 500))
    assert "resume.detected" in r.fired() and "resume.sched_reset" in r.fired()


def test_speed_drop_and_recovery():
    r = Run()
    rnd = random.Random(3)
    for s in range(1, 40):
        r.step(s, tokens_per_sec=10000 * (1 + rnd.gauss(0, 0.05)))
    assert r.fired() == []
    for s in range(40, 50):
        r.step(s, tokens_per_sec=3000.0)
    a = r.alert("speed.drop")
    assert a.first_step == 40 and 42 <= a.found_step <= 44  # dated where it began, found once the median fell
    t = Run()
    for s in range(1, 40):
        t.step(s, step_time_ms=500.0 + (s % 3))
    for s in range(40, 50):
        t.step(s, **{"elapsed time per iteration (ms)": 1500.0})
    assert "speed.drop" in t.fired()


def test_speed_drop_inhibited_by_a_stall():
    r = Run()
    for s in range(1, 40):
        r.step(s, tokens_per_sec=10000.0)
    # a stall alert from the live rules (simulated through the book) holds speed.drop quiet
    from trainwatch.config import RuleSpec
    from trainwatch.model import Finding
    stall = RuleSpec("hang.stall", Severity.CRITICAL, "hang", "stall")
    r.engine.book.judge(stall, "run.log", "stall", Finding("no step", source="run.log"), 0.0, one_shot=True)
    for s in range(40, 50):
        r.step(s, tokens_per_sec=1000.0)
    assert "speed.drop" not in r.fired()


def test_fp16_scaler_calibration_from_two_to_the_32_is_not_an_overflow_problem():
    """DeepSpeed starts the scale at 2^32 and halves it on each overflow: 23 overflows in the first 25
    steps, then none. That is the scaler finding its level."""
    r = Run()
    scale = 2.0 ** 32
    for i in range(23):
        r.event(EventKind.ERROR, step=i, signature="fp16.overflow", loss_scale=scale / 2)
        scale /= 2
    for s in range(25, 300, 10):
        r.step(s, loss=3.0 - s / 300)
    assert "fp16.overflow" not in r.fired()


def test_a_relaunch_that_sets_a_new_length_builds_its_own_schedule():
    """detectron2 relaunched with a new MAX_ITER and its milestones moved: the LR steps back up from the
    last decay's value where the checkpoint left off. The new setting, logged between the two LR points,
    says why: no resume.sched_reset, lr.schedule only as an info, and the setting stands as the total."""
    def run(replan: bool) -> Run:
        r = Run()
        for s in range(20, 3001, 20):
            r.step(s, loss=2.0 - s / 4000, lr=min(4e-3, 4e-3 * s / 400) if s < 2000 else 4e-4)
        if replan:
            r.event(EventKind.PLAN, unit="step", total=11000, since=r.line + 1, reached=None)
        for s in range(3020, 4001, 20):
            r.step(s, loss=1.2, lr=1.2e-3)
        return r

    plain, replanned = run(False), run(True)
    assert plain.alert("lr.schedule").severity is Severity.WARNING
    assert "resume.sched_reset" in plain.fired()
    assert "resume.sched_reset" not in replanned.fired()
    a = replanned.alert("lr.schedule")
    assert a.severity is Severity.INFO and "new planned length of 11000 steps" in a.finding.message
    assert replanned.engine.sources["run.log"].total_steps == 11000


def test_a_relaunch_that_prints_the_same_length_again_set_no_new_plan():
    """Frameworks dump their whole config again on every relaunch: the same total printed again changed
    nothing, so an LR back up where the checkpoint left off is still a schedule not restored."""
    r = Run()
    r.event(EventKind.PLAN, unit="step", total=5000, since=r.line + 1, reached=None)
    for s in range(20, 3001, 20):
        r.step(s, loss=2.0 - s / 4000, lr=min(4e-3, 4e-3 * s / 400) if s < 2000 else 4e-4)
    r.event(EventKind.PLAN, unit="step", total=5000, since=r.line + 1, reached=None)
    for s in range(3020, 4001, 20):
        r.step(s, loss=1.2, lr=1.2e-3)
    assert "resume.sched_reset" in r.fired()
    assert r.alert("lr.schedule").severity is Severity.WARNING


def test_a_range_rule_gives_only_the_fixes_of_the_side_it_left_by():
    """grad_norm above its range: `Too high:` advice only; below it: `Too low:` only."""
    high, low = Run(), Run()
    for s in range(1, 40):
        high.step(s, loss=2.0, grad_norm=30.0)
        low.step(s, loss=2.0, grad_norm=0.01)
    up, down = high.alert("grad.range").fixes, low.alert("grad.range").fixes
    assert up and all(not f.lower().startswith("too low") for f in up)
    assert down and all(not f.lower().startswith("too high") for f in down)
