"""The session: one setup and one feed path for check, tail and demo."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def check(*args: str, cwd: Path = ROOT) -> dict:
    proc = subprocess.run([sys.executable, "-m", "trainwatch", "check", *args, "--json"], capture_output=True,
                          text=True, cwd=cwd, timeout=120)
    assert proc.returncode in (0, 1, 2), proc.stderr
    return json.loads(proc.stdout)


def test_a_for_in_seconds_on_a_log_without_times_is_said_not_silently_never_fired(tmp_path: Path) -> None:
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text("rules:\n  grad.range: {above: 0.5, for: 30s}\n")
    doc = check(str(ROOT / "examples/logs/hf_healthy.log"), "--config", str(cfg))
    notes = doc["sources"][0]["skipped"]
    assert any("grad.range" in n and "30s" in n and "no times" in n for n in notes), notes


def test_steps_are_fine_and_say_nothing(tmp_path: Path) -> None:
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text("rules:\n  grad.range: {above: 0.5, for: 3}\n")
    doc = check(str(ROOT / "examples/logs/hf_healthy.log"), "--config", str(cfg))
    assert not any("counts seconds" in n for n in doc["sources"][0]["skipped"])
    assert any(f["id"] == "grad.range" for f in doc["findings"])
