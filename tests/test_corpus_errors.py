"""Real failed runs from ../shared/corpus: the failure is found, named by its root cause, dated where it ran.

What each log should give is read off the corpus README (its rows say it in words); these tests check
the error side only. Skipped, with the reason, where the corpus is not checked out beside the project.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus"


def check(name: str) -> dict[str, Any]:
    path = CORPUS / name
    if not path.exists():
        pytest.skip(f"{path} not present (the shared corpus is not checked out beside the project)")
    proc = subprocess.run([sys.executable, "-m", "trainwatch", "check", str(path), "--json"],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode in (0, 1, 2), proc.stderr
    return json.loads(proc.stdout)  # type: ignore[no-any-return]


def by_severity(doc: dict[str, Any], severity: str) -> list[dict[str, Any]]:
    return [f for f in doc["findings"] if f["severity"] == severity]


def test_oom_in_step_three_names_the_rank_that_failed_first() -> None:
    doc = check("swift-gemma4-zero2-oom-step3.log")
    (oom,) = by_severity(doc, "critical")
    assert oom["id"] == "oom.cuda" and oom["step"] == 3 and oom["step_inferred"]
    assert oom["evidence"]["rank"] == 1 and sorted(oom["evidence"]["ranks"]) == [0, 1]
    assert "(rank 1)" in oom["message"]
    # torchrun's report is the OOM's echo: held back by inhibition, as `tail` holds it back
    assert "run.child_failed" in [e["id"] for e in doc["inhibited"]]


def test_ray_startup_crash_is_the_flash_attn_import() -> None:
    doc = check("verl-logic-rl-ray-startup-crash.log")
    (root,) = by_severity(doc, "critical")
    assert root["id"] == "env.abi_mismatch" and root["step"] is None
    assert root["evidence"]["library"] == "flash_attn_2_cuda" and root["line"] == 164
    assert all("AssertionError" not in f["message"] for f in by_severity(doc, "critical"))


def test_disk_full_at_the_checkpoint_after_the_last_iteration() -> None:
    doc = check("megatron-ds-ckpt-save-disk-full.log")
    (full,) = [f for f in by_severity(doc, "critical") if f["id"] == "ckpt.disk_full"]
    assert full["step"] == 20 and full["message"].startswith("checkpoint save failed")
    assert sorted(full["evidence"]["ranks"]) == [0, 1]
    assert not [f for f in by_severity(doc, "critical") if f["id"] == "error.traceback"]


def test_killed_from_outside_is_one_warning() -> None:
    doc = check("olmo-150m-train.log")
    errors = [f for f in doc["findings"] if f["family"] == "run"]
    assert [(f["id"], f["severity"]) for f in errors] == [("run.signal", "warning")]
    assert abs(errors[0]["step"] - 370) <= 10


def test_ctrl_c_and_its_atexit_echo_are_one_info() -> None:
    doc = check("lmsys-hf-trainer-console-tqdm.log")
    errors = [f for f in doc["findings"] if f["family"] == "run"]
    assert [(f["id"], f["severity"]) for f in errors] == [("error.traceback", "info")]
    assert errors[0]["count"] == 2 and "stopped by hand" in errors[0]["message"]
