"""Golden findings on every committed example log: what fires, how severe, at which step.

A change in rules or adapters that moves a finding shows up here as a diff. After a deliberate
change, regenerate with `TRAINWATCH_UPDATE_GOLDEN=1 python -m pytest tests/test_golden.py`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = Path(__file__).parent / "golden"
LOGS = sorted(p for p in (ROOT / "examples/logs").glob("*") if p.suffix in (".log", ".jsonl"))


def summary(path: Path) -> dict[str, object]:
    proc = subprocess.run([sys.executable, "-m", "trainwatch", "check", str(path), "--json"],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode in (0, 1, 2), proc.stderr
    doc = json.loads(proc.stdout)
    src = doc["sources"][0]
    return {
        "format": src["format"],
        "preset": doc["preset"],
        "exit_code": doc["exit_code"],
        "last_step": src["last_step"],
        "findings": sorted(f"{f['severity']} {f['id']} {f['subject']} @{f['step']}" for f in doc["findings"]),
    }


@pytest.mark.parametrize("log", LOGS, ids=[p.name for p in LOGS])
def test_golden_findings(log: Path) -> None:
    got = summary(log)
    golden = GOLDEN / f"{log.name}.json"
    if os.environ.get("TRAINWATCH_UPDATE_GOLDEN"):
        golden.write_text(json.dumps(got, indent=2) + "\n")
    assert golden.exists(), f"no golden file for {log.name}; run with TRAINWATCH_UPDATE_GOLDEN=1"
    assert got == json.loads(golden.read_text())


def test_healthy_examples_have_no_warnings() -> None:
    for name in ("hf_healthy.log", "hf4_healthy.log", "torch_healthy.log", "nanogpt_healthy.log"):
        doc = summary(ROOT / "examples/logs" / name)
        assert doc["exit_code"] == 0, (name, doc["findings"])
