"""The rule registry: coded rules by id; range rules need no code, only YAML.

A new coded rule is one module with a Rule subclass plus one line in CODED, and its defaults,
title and fixes in presets/base.yaml.
"""

from __future__ import annotations

from importlib import import_module

from trainwatch.config import Config, RuleSpec
from trainwatch.rules.base import Rule
from trainwatch.rules.range import RangeRule

CODED: dict[str, str] = {
    # rule id -> "module:Class" under trainwatch.rules
    "loss.nonfinite": "loss:LossNonFinite",
    "loss.spike": "loss:LossSpike",
    "loss.diverging": "divergence:LossDiverging",
    "loss.plateau": "plateau:LossPlateau",
    "loss.flat_from_start": "plateau:LossFlatFromStart",
    "loss.overfit": "overfit:LossOverfit",
    "loss.leak": "loss:LossLeak",
    "loss.level": "loss:LossLevel",
    "grad.nonfinite": "grad:GradNonFinite",
    "grad.spike": "grad:GradSpike",
    "lr.zero": "lr:LrZero",
    "lr.no_warmup": "lr:LrNoWarmup",
    "lr.schedule": "lr:LrSchedule",
    "fp16.overflow": "fp16:Fp16Overflow",
    "resume.detected": "resume:ResumeDetected",
    "resume.sched_reset": "resume:ResumeSchedReset",
    "resume.loss_jump": "resume:ResumeLossJump",
    "speed.drop": "speed:SpeedDrop",
    "oom.rl_logits": "rl:RlLogits",
    "rl.reward_zero": "rl:StaysZero",
    "rl.reward_std_zero": "rl:StaysZero",
    "rl.length_hacking": "rl:LengthHacking",
    "ebft.alignment_down": "rl:AlignmentDown",
    "error.traceback": "traceback:TracebackRule",
    "run.ended_early": "run_end:EndedEarly",
    "run.child_exit": "child_exit:ChildExit",
    # live rules (clock and GPU telemetry); defaults in presets/base-live.yaml
    "hang.stall": "stall:StallRule",
    "hang.stopped": "gpu:GpuStopped",
    "hang.collective": "gpu:GpuCollective",
    "hang.dead_rank": "ranks:DeadRank",
    "oom.near": "gpu:NearOom",
    "oom.creep": "gpu:MemoryCreep",
    "speed.starved": "gpu:Starved",
    "speed.mfu": "speed_live:Mfu",
    "gpu.lost": "gpu:GpuLost",
    "gpu.throttle": "gpu:Throttle",
    "gpu.ecc": "gpu:Ecc",
}


def coded_class(rule_id: str) -> type[Rule] | None:
    target = CODED.get(rule_id)
    if target is None:
        from trainwatch.rules.registry import registry

        return registry().get(rule_id)
    module, _, cls = target.partition(":")
    return getattr(import_module(f"trainwatch.rules.{module}"), cls)  # type: ignore[no-any-return]


def build_rule(spec: RuleSpec) -> Rule | None:
    if spec.is_range:
        return RangeRule(spec)
    cls = coded_class(spec.id)
    if cls is not None:
        return cls(spec)
    if spec.params.get("signature") or spec.id in _signature_ids():
        from trainwatch.rules.signature import SignatureRule

        return SignatureRule(spec)
    return None


def _signature_ids() -> set[str]:
    try:
        from trainwatch.adapters.signatures import signature_ids
    except ImportError:  # the scanner is optional for rules; without it no id is a signature
        return set()
    return signature_ids()


def build_rules(config: Config) -> list[Rule]:
    rules = []
    for spec in config.rules.values():
        if not spec.enabled:
            continue
        rule = build_rule(spec)
        if rule is not None:
            rules.append(rule)
    return rules
