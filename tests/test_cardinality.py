"""Metric-name caps (issue 27.6): a log printing a value per token or per class cannot grow without bound."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from trainwatch import config
from trainwatch.engine import Engine, metrics
from trainwatch.model import Sample


def _feed(eng: Engine, source: str, names: list[str], steps: int = 3) -> None:
    eng.feed_all([Sample(n, 1.0 + 0.01 * s, step=s, source=source) for s in range(1, steps + 1) for n in names])


def test_past_the_cap_only_the_rules_names_are_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(metrics, "MAX_SERIES_PER_SOURCE", 5)
    eng = Engine(config.load("sft"))
    others = [f"token_logit/{i}" for i in range(20)]
    _feed(eng, "a.log", others + ["loss", "grad_norm"])
    kept = {s.name for s in eng.store if s.source == "a.log"}
    assert kept == set(others[:5]) | {"loss", "grad_norm"}  # the first five others, and what rules watch
    assert eng.dropped_names["a.log"] == 15
    assert eng.cap_notes("a.log") and "15 metric names" in eng.cap_notes("a.log")[0]
    assert eng.store.get("loss", "a.log") is not None and len(eng.store.get("loss", "a.log").values()) == 3


def test_the_process_cap_counts_every_log(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(metrics, "MAX_SERIES", 8)
    eng = Engine(config.load("sft"))
    _feed(eng, "a.log", [f"a/{i}" for i in range(6)])
    _feed(eng, "b.log", [f"b/{i}" for i in range(6)] + ["loss"])
    assert len({s.name for s in eng.store}) == 9  # eight names, then only loss
    assert eng.dropped_names == {"b.log": 4}


def test_check_says_once_what_the_cap_left_out(tmp_path: Path) -> None:
    log = tmp_path / "per_token.jsonl"
    n = metrics.MAX_SERIES_PER_SOURCE + 500
    log.write_text("".join(json.dumps({"step": i, "loss": 2.0 - i * 1e-3, f"tok/{i}": 0.5}) + "\n" for i in range(n)))
    r = subprocess.run([sys.executable, "-m", "trainwatch", "check", str(log), "--json"], capture_output=True,
                       text=True, timeout=300)
    doc = json.loads(r.stdout)
    src = doc["sources"][0]
    assert "loss" in src["metrics"]
    notes = [t for t in src["skipped"] if "past the cap" in t]
    assert len(notes) == 1
    assert 500 <= int(notes[0].split()[0]) <= 510  # the first others up to the cap were kept
