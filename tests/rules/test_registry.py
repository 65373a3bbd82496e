"""Every rule the presets configure is built: a coded id with no registered class would be dropped silently."""

from __future__ import annotations

import pytest

from trainwatch import config
from trainwatch.rules import build_rule
from trainwatch.rules.registry import registry

PRESETS = ("sft", "grpo", "ebft", "pretrain", "vision")


@pytest.mark.parametrize("preset", PRESETS)
def test_every_configured_rule_is_built(preset: str) -> None:
    cfg = config.load(preset)
    missing = [rid for rid, spec in cfg.rules.items() if spec.enabled and build_rule(spec) is None]
    assert not missing, f"rules configured but never built: {missing}"


def test_registered_ids_are_the_class_ids_or_declared_aliases() -> None:
    reg = registry()
    assert {"loss.spike", "loss.diverging", "hang.stall", "rl.reward_zero", "rl.reward_std_zero"} <= set(reg)
    assert reg["rl.reward_zero"] is reg["rl.reward_std_zero"]  # one class, two ids with their own parameters
