"""quality.collapse on a smooth curve of evaluations (a Dice per checkpoint): a fall that lasts fewer points
than half the rolling median's window is read as logged, not smoothed away; one bad point alone is no collapse."""

from __future__ import annotations

from rulekit import Run


def _curve(dips: dict[int, float], n: int = 200) -> Run:
    r = Run()
    for e in range(1, n + 1):
        base = 0.6 + 0.14 * min(e, 40) / 40 - 0.0004 * max(0, e - 40)  # up to its best, then a slow slide
        r.sample("val_dice", dips.get(e, base), e)
    r.finish()
    return r


def test_a_short_deep_fall_among_smooth_evaluations_is_a_collapse() -> None:
    fall = {150 + i: v for i, v in enumerate((0.02, 0.05, 0.1, 0.16, 0.24, 0.33, 0.45, 0.55))}
    a = _curve(fall).alert("quality.collapse")
    assert a.finding.evidence["value"] == 0.02 and a.finding.step == 150  # the logged value at its step
    assert "value_stat" not in a.finding.evidence  # values as logged, no medians


def test_one_bad_evaluation_alone_is_no_collapse() -> None:
    assert "quality.collapse" not in _curve({120: 0.03}).fired()
