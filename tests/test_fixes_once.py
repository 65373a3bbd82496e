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
