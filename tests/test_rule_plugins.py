"""Third-party rules arrive through the `trainwatch.rules` entry-point group, and a broken one only warns."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _site(tmp_path: Path, entry: str, edit: tuple[str, str] | None = None) -> Path:
    """A real distribution on sys.path: the plugin's module plus a dist-info with its entry point; `edit`
    replaces one piece of the module's source (a plugin written differently)."""
    site = tmp_path / "site"
    shutil.copytree(ROOT / "examples/plugin_rule/trainwatch_loss_floor", site / "trainwatch_loss_floor")
    if edit is not None:
        module = site / "trainwatch_loss_floor/__init__.py"
        text = module.read_text()
        assert edit[0] in text
        module.write_text(text.replace(*edit))
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


def _falling_log(tmp_path: Path) -> Path:
    log = tmp_path / "run.jsonl"
    log.write_text("".join(json.dumps({"step": i, "loss": 2.0 / i}) + "\n" for i in range(1, 400)))
    return log


ENTRY = "loss.below_floor = trainwatch_loss_floor:LossBelowFloor"


def test_a_typed_plugin_parameter_is_checked_like_ours(tmp_path: Path) -> None:
    site = _site(tmp_path, ENTRY)
    doc = json.loads(_tw(site, "rules", "--json").stdout)
    assert next(r for r in doc["rules"] if r["id"] == "loss.below_floor")["param_types"] == {"floor": "float"}
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text("rules:\n  loss.below_floor: {floor: low}\n")
    proc = _tw(site, "check", "--config", str(cfg), str(_falling_log(tmp_path)))
    assert proc.returncode == 3 and "Traceback" not in proc.stderr
    assert proc.stderr.strip() == (f"trainwatch: error: {cfg}: rules.loss.below_floor.floor: "
                                   "expected a number, got 'low'")


def test_a_plugin_whose_defaults_miss_a_declared_parameter_warns_and_the_rest_work(tmp_path: Path) -> None:
    site = _site(tmp_path, ENTRY, edit=('        "floor": 0.01,\n', ""))
    proc = _tw(site, "check", str(ROOT / "examples/logs/hf_bad_sample.log"))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1  # said once
    assert ("rule plugin 'loss.below_floor' skipped: trainwatch_loss_floor.LossBelowFloor.defaults: "
            "rules.loss.below_floor.floor: missing parameter") in proc.stderr
    assert "loss.below_floor" not in _tw(site, "rules").stdout


def test_a_plugin_without_params_still_gets_an_untyped_mapping(tmp_path: Path) -> None:
    site = _site(tmp_path, ENTRY, edit=("    params = FloorParams\n    p: FloorParams\n", ""))
    module = site / "trainwatch_loss_floor/__init__.py"
    module.write_text(module.read_text().replace("self.p.floor", "self.p['floor']"))
    proc = _tw(site, "check", str(_falling_log(tmp_path)), "--json")
    assert "rule plugin" not in proc.stderr, proc.stderr
    doc = json.loads(proc.stdout)
    assert [f["step"] for f in doc["findings"] if f["id"] == "loss.below_floor"] == [201]
    rule = next(r for r in json.loads(_tw(site, "rules", "--json").stdout)["rules"] if r["id"] == "loss.below_floor")
    assert rule["floor"] == 0.01 and "param_types" not in rule
