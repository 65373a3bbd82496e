"""One check report tells each fix once per run: a later finding drops a fix its root already gave."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trainwatch.cli import main
from trainwatch.runconfig.fit import topics
from trainwatch.sinks.report import fixes_once

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "logs"


def finding(rule: str, *fixes: str, source: str = "run.log") -> dict[str, object]:
    return {"id": rule, "source": source, "fixes": list(fixes)}


def test_a_later_finding_drops_what_an_earlier_one_gave() -> None:
    out = fixes_once([
        finding("loss.diverging", "Lower the peak LR 2-5x", "Warm up over 5-10% of the steps"),
        finding("lr.no_warmup", "Warm up over 5-10% of the steps (warmup_ratio: 0.05-0.1)"),
        finding("loss.level", "If the loss rose it diverged: lower the learning rate", "Check the chat template"),
        finding("lr.no_warmup", "Warm up over 5-10% of the steps", source="other.log"),  # another run
    ])
    assert out[0]["fixes"] == ["Lower the peak LR 2-5x", "Warm up over 5-10% of the steps"]
    assert out[1]["fixes"] == [] and out[1]["fixes_given_by"] == ["loss.diverging"]
    assert out[2]["fixes"] == ["Check the chat template"] and out[2]["fixes_given_by"] == ["loss.diverging"]
    assert out[3]["fixes"] == ["Warm up over 5-10% of the steps"] and "fixes_given_by" not in out[3]


def test_the_high_lr_example_tells_its_warmup_fix_once(capsys: pytest.CaptureFixture[str]) -> None:
    main(["check", "--json", str(EXAMPLES / "hf_high_lr.log")])
    doc = json.loads(capsys.readouterr().out)
    told = [fix for f in doc["findings"] for fix in f["fixes"]]
    assert sum("warmup" in topics(fix) for fix in told) == 1, told
    assert len(told) == len(set(told))
    no_warmup = next(f for f in doc["findings"] if f["id"] == "lr.no_warmup")
    assert no_warmup["fixes_given_by"] == ["loss.diverging"]
    main(["check", str(EXAMPLES / "hf_high_lr.log")])
    assert "its fixes are given above, under loss.diverging" in capsys.readouterr().out


def test_a_fix_that_contradicts_the_roots_is_left_out_unless_said_as_a_condition() -> None:
    out = fixes_once([
        finding("loss.diverging", "Lower the peak LR 2-5x (lr 0.02 -> 6.7e-3)", "Clip the global grad-norm at 1.0"),
        finding("quality.not_learning", "Check the labels against the outputs",
                "Raise the LR (lr 0.02 -> 0.06) of the parts that must learn"),
        finding("loss.level", "If it fell steadily but slowly: train longer or raise the learning rate a little"),
    ])
    assert out[1]["fixes"] == ["Check the labels against the outputs"]
    assert out[1]["fixes_left_out"] == [{"fix": "Raise the LR (lr 0.02 -> 0.06) of the parts that must learn",
                                         "contradicts": "loss.diverging"}]
    assert out[2]["fixes"] == ["If it fell steadily but slowly: train longer or raise the learning rate a little"]
    other_way = fixes_once([finding("loss.plateau", "Raise the LR 2-5x"), finding("loss.spike", "Lower the LR 2-5x")])
    assert other_way[1]["fixes"] == [] and other_way[1]["fixes_left_out"][0]["contradicts"] == "loss.plateau"


def test_no_report_tells_both_ways_of_the_lr_unconditionally(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    """A run whose loss rises while its task metric stays at chance: the divergence says lower the LR, and
    the not-learning finding's "raise the LR" is left out."""
    lines = ["lr: 0.02"]
    for i in range(1, 401):
        lines.append(f"Iters: {i * 10}/4000 || Lr: 0.02 || loss: {3.3 + 4.0 * i / 400 + 0.1 * ((i * 7) % 5) / 5:.4f}")
        if i % 16 == 0:
            lines.append(f"Overall validation pixAcc: {2.3 + (i % 3) * 0.1:.3f}, mIoU: {0.25 + (i % 2) * 0.03:.3f}")
    log = tmp_path / "kd.log"
    log.write_text("\n".join(lines) + "\n")
    main(["check", "--json", str(log)])
    doc = json.loads(capsys.readouterr().out)
    told = [fix for f in doc["findings"] for fix in f["fixes"]]
    ways = {t for fix in told if not fix.startswith("If ") for t in topics(fix)[:1]} & {"lr_up", "lr_down"}
    assert ways == {"lr_down"}, [(f["id"], f["fixes"]) for f in doc["findings"]]
