from __future__ import annotations

import io

import pytest
from rulekit import Run

from trainwatch import config
from trainwatch.errors import ConfigError
from trainwatch.model import EventKind, Severity
from trainwatch.rules import build_rule


def test_presets_load_and_differ_as_intended():
    c = {p: config.load(p) for p in config.PRESETS}
    assert c["sft"].rules["grad.range"].above == 10.0 and c["sft"].rules["grad.range"].below == 0.1
    assert c["grpo"].rules["grad.range"].above == 1.0 and c["grpo"].rules["grad.range"].below == 0.001
    assert c["sft"].rules["grad.spike"].params.unstable_above == 100.0
    assert c["grpo"].rules["grad.spike"].params.unstable_above == 10.0
    assert c["sft"].rules["loss.level"].enabled and not c["grpo"].rules["loss.level"].enabled
    assert not c["pretrain"].rules["loss.level"].enabled
    assert c["grpo"].rules["rl.entropy_collapse"].enabled and not c["sft"].rules["rl.entropy_collapse"].enabled
    assert not c["grpo"].rules["loss.spike"].enabled  # GRPO loss may be negative and noisy
    assert c["ebft"].rules["ebft.diversity"].enabled and not c["sft"].rules["ebft.diversity"].enabled
    assert c["pretrain"].rules["loss.plateau"].params.expected_max == 4.0


def test_every_rule_has_title_family_fixes_and_code_or_range():
    for rid, spec in config.load("sft").rules.items():
        if rid.startswith(("hang.stall", "hang.collective", "hang.stopped", "hang.dead_rank", "oom.near",
                           "oom.creep", "speed.starved", "gpu.")) and rid != "gpu.xid":
            continue  # the live rules live in base-live.yaml and their own modules
        assert spec.title != rid and spec.fixes, rid
        assert build_rule(spec) is not None, rid


def test_every_signature_has_a_spec():
    sig = pytest.importorskip("trainwatch.adapters.signatures")
    rules = config.load("sft").rules
    missing = sorted(s for s in sig.signature_ids() if s not in rules)
    assert missing == []


def test_user_override_and_disable(tmp_path):
    f = tmp_path / "tw.yaml"
    f.write_text("rules:\n  loss.spike: {ratio: 3, window: 30}\n  lr.zero: {enabled: false}\n")
    c = config.load("sft", [f])
    assert c.rules["loss.spike"].params.ratio == 3.0 and c.rules["loss.spike"].params.window == 30
    assert not c.rules["lr.zero"].enabled
    r = Run("sft", [f])
    for s in range(1, 10):
        r.step(s, lr=1e-4 if s < 4 else 0.0)
    assert "lr.zero" not in r.fired()


@pytest.mark.parametrize("body, words", [
    ("rules:\n  loss.spike: {ratio: high}\n", ["loss.spike.ratio", "expected a number"]),
    ("rules:\n  loss.spike: {ratioo: 3}\n", ["loss.spike.ratioo", "unknown key"]),
    ("rules:\n  loss.nope: {ratio: 3}\n", ["loss.nope", "unknown rule"]),
    ("rules:\n  lr.zero: {enabled: maybe}\n", ["lr.zero.enabled"]),
])
def test_user_errors_name_file_and_key(tmp_path, body, words):
    f = tmp_path / "bad.yaml"
    f.write_text(body)
    with pytest.raises(ConfigError) as exc:
        config.load("sft", [f])
    assert str(f) in str(exc.value)
    for w in words:
        assert w in str(exc.value)


def test_oom_signature_gives_the_figures_and_inhibits_the_traceback():
    r = Run()
    r.event(EventKind.ERROR, step=12, signature="oom.cuda", text="torch.OutOfMemoryError: CUDA out of memory.",
            tried_gib=1.22, free_gib=959 / 1024, total_gib=15.77)
    a = r.alert("oom.cuda")
    assert "tried 1.22 GiB with 959 MiB free of 15.77 GiB" in a.finding.message
    assert a.finding.evidence["total_gib"] == 15.77 and a.severity is Severity.CRITICAL
    r.event(EventKind.TRACEBACK, text="Traceback ...", exception="torch.OutOfMemoryError", message="CUDA oom")
    assert "error.traceback" not in r.fired()


def test_signature_rule_only_takes_its_own_signature():
    r = Run()
    r.event(EventKind.ERROR, signature="hang.nccl", text="Watchdog caught collective operation timeout",
            timeout_ms=600000, ran_ms=600123, op="ALLREDUCE")
    assert r.fired() == ["hang.nccl"]
    assert "ALLREDUCE" in r.alert("hang.nccl").finding.message


def test_traceback_severity_by_exception():
    cases = [("KeyboardInterrupt", Severity.INFO), ("torch.distributed.elastic.multiprocessing.api.SignalException",
                                                     Severity.WARNING), ("ValueError", Severity.CRITICAL)]
    for exc, sev in cases:
        r = Run()
        r.event(EventKind.TRACEBACK, text="Traceback (most recent call last):\n ...", exception=exc, message="x")
        assert r.alert("error.traceback").severity is sev, exc


def test_a_crash_after_a_stop_by_hand_is_told_as_a_crash_of_its_own():
    """Ctrl-C ended a run (info), then a relaunch died at import: the second traceback is no repeat of the
    first one's stop by hand, and the run's state is the crash."""
    r = Run()
    r.event(EventKind.TRACEBACK, text="Traceback (most recent call last):\n ...", exception="KeyboardInterrupt")
    for s in range(5):
        r.step(s, loss=2.0)
    for _ in range(2):
        r.event(EventKind.TRACEBACK, text="Traceback (most recent call last):\n ...",
                exception="ModuleNotFoundError", message="No module named 'torch'")
    r.finish()
    found = [a for a in r.engine.alerts() if a.rule == "error.traceback"]
    assert sorted(a.severity for a in found) == [Severity.INFO, Severity.CRITICAL]
    assert r.engine.worst() is Severity.CRITICAL


def test_grpo_range_rules_with_for_and_globs():
    r = Run("grpo")
    for s in range(1, 4):
        r.step(s, entropy=0.005, kl=0.1)
    assert r.fired() == ["rl.entropy_collapse"]
    r2 = Run("grpo")
    for s in range(1, 25):
        r2.step(s, **{"rewards/format/mean": 0.0, "reward_std": 0.0, "frac_reward_zero_std": 1.0})
    f = r2.fired()
    assert {"rl.reward_zero", "rl.reward_std_zero", "rl.zero_std"} <= set(f)
    assert r2.alert("rl.reward_zero").finding.evidence["metric"] == "rewards/format/mean"
    sft = Run("sft")
    for s in range(1, 25):
        sft.step(s, entropy=0.005, **{"rewards/format/mean": 0.0})
    assert sft.fired() == []


def test_reward_that_moves_is_not_zero():
    r = Run("grpo")
    for s in range(1, 30):
        r.step(s, **{"rewards/acc/mean": 0.2 * s / 30, "reward_std": 0.1})
    assert r.fired() == []


def test_rl_logits_from_banner_facts():
    r = Run("grpo")
    r.event(EventKind.INFO, batch_size=8, num_generations=16, seq_len=2048, vocab_size=151936)
    a = r.alert("oom.rl_logits")
    assert 65 < a.finding.evidence["logits_gib"] < 80
    ok = Run("grpo")
    ok.event(EventKind.INFO, batch_size=2, num_generations=4, seq_len=1024, vocab_size=32000)
    assert ok.fired() == []


def test_length_hacking_and_ebft_trend():
    r = Run("grpo")
    r.event(EventKind.INFO, max_completion_length=512)
    for s in range(1, 30):
        r.step(s, **{"completions/mean_length": min(500.0, 200 + 12 * s)})
    assert "rl.length_hacking" in r.fired()
    e = Run("ebft")
    for s in range(1, 30):
        e.step(s, **{"ebft/alignment": 0.8 - 0.015 * s})
    assert "ebft.alignment_down" in e.fired()
    up = Run("ebft")
    for s in range(1, 30):
        up.step(s, **{"ebft/alignment": 0.3 + 0.01 * s})
    assert up.fired() == []


def test_report_lists_an_inhibited_echo_apart_as_a_follower_never_saw_it():
    """`check` tells what `tail` told: the traceback held back by the OOM is not a finding of its own."""
    from trainwatch.sinks import report

    r = Run()
    r.event(EventKind.ERROR, step=12, signature="oom.cuda", text="torch.OutOfMemoryError: CUDA out of memory.",
            tried_gib=1.22, free_gib=0.9, total_gib=15.77)
    r.event(EventKind.TRACEBACK, text="Traceback ...", exception="torch.OutOfMemoryError", message="CUDA oom")
    doc = report.document(r.engine, [], "sft", preset_auto=False)
    assert [f["id"] for f in doc["findings"]] == ["oom.cuda"]
    assert [e["id"] for e in doc["inhibited"]] == ["error.traceback"]
    assert doc["counts"]["critical"] == 1
    out = io.StringIO()
    report.write_text(doc, out)
    assert "held back as echoes" in out.getvalue() and "error.traceback" in out.getvalue()
