"""loss.level gives the fixes of the direction the final loss is off in, never the other's."""

from __future__ import annotations

import pytest
from rulekit import Run

from trainwatch import config
from trainwatch.errors import ConfigError


def _final(level: float) -> tuple[str, ...]:
    r = Run(fmt="hf_console")
    for s in range(1, 41):
        r.step(s, loss=level)
    r.finish()
    return tuple(r.alert("loss.level").fixes)


def test_a_huge_final_loss_gets_only_the_too_high_fixes() -> None:
    fixes = _final(2.088e7)
    assert fixes and all("leakage" not in f and "memorised" not in f for f in fixes)
    assert fixes[0].startswith("If the loss rose during the run it diverged")
    assert not any(f.lower().startswith("very low") for f in fixes)


def test_a_tiny_final_loss_gets_only_the_too_low_fixes() -> None:
    fixes = _final(0.01)
    assert fixes and any("leakage" in f for f in fixes)
    assert not any("raise the" in f.lower() or "diverged" in f or "very high" in f.lower() for f in fixes)


def test_the_fixes_per_direction_are_configurable_lists(tmp_path) -> None:  # type: ignore[no-untyped-def]
    good = tmp_path / "ok.yaml"
    good.write_text("rules:\n  loss.level: {fixes_high: ['Ask the data team']}\n")
    assert config.load("sft", [good]).rules["loss.level"].params.fixes_high == ("Ask the data team",)
    bad = tmp_path / "bad.yaml"
    bad.write_text("rules:\n  loss.level: {fixes_high: 3}\n")
    with pytest.raises(ConfigError, match="fixes_high: expected a list of strings"):
        config.load("sft", [bad])
