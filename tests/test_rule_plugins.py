"""Third-party rules arrive through the `trainwatch.rules` entry-point group, and a broken one only warns."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _site(tmp_path: Path, entry: str) -> Path:
    """A real distribution on sys.path: the plugin's module plus a dist-info with its entry point."""
    site = tmp_path / "site"
    shutil.copytree(ROOT / "examples/plugin_rule/trainwatch_loss_floor", site / "trainwatch_loss_floor")
    info = site / "trainwatch_loss_floor-0.1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: trainwatch-loss-floor\nVersion: 0.1.0\n")
    (info / "entry_points.txt").write_text(f"[trainwatch.rules]\n{entry}\n")
    return site


def _tw(site: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(site), str(ROOT)]))
    return subprocess.run([sys.executable, "-m", "trainwatch", *args], capture_output=True, text=True, env=env,
                          timeout=120)


def test_a_plugin_rule_is_listed_fires_and_takes_user_settings(tmp_path: Path) -> None:
    site = _site(tmp_path, "loss.below_floor = trainwatch_loss_floor:LossBelowFloor")
    assert "loss.below_floor" in _tw(site, "rules").stdout
    log = tmp_path / "run.jsonl"
    log.write_text("".join(json.dumps({"step": i, "loss": 2.0 / i}) + "\n" for i in range(1, 400)))
    doc = json.loads(_tw(site, "check", str(log), "--json").stdout)
    hits = [f for f in doc["findings"] if f["id"] == "loss.below_floor"]
    assert len(hits) == 1 and hits[0]["step"] == 201  # 2/201 < 0.01 first, and three rows in a row hold
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text("rules:\n  loss.below_floor: {floor: 0.001}\n")
    doc = json.loads(_tw(site, "check", str(log), "--json", "--config", str(cfg)).stdout)
    assert not [f for f in doc["findings"] if f["id"] == "loss.below_floor"]


def test_a_broken_rule_plugin_warns_and_the_rest_work(tmp_path: Path) -> None:
    site = _site(tmp_path, "loss.nothing = trainwatch_missing_module:Nope")
    proc = _tw(site, "check", str(ROOT / "examples/logs/hf_bad_sample.log"))
    assert proc.returncode == 2
    assert "rule plugin 'loss.nothing'" in proc.stderr and "Traceback" not in proc.stderr
