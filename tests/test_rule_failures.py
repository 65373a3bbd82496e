"""A rule that raises on a log it was not written for is switched off for that log and said once, in
words; the watch, the other rules and the other logs go on (log text is untrusted input). Shown with a
real third-party rule (the example plugin) edited to fail on large losses, through `check` and through
`tail --headless`, in child processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.test_rule_plugins import ROOT, _site

FAILING = ("v = w.new\n", "v = w.new\n        if (v > 100).any():\n            raise ZeroDivisionError('boom')\n")
ENTRY = "loss.below_floor = trainwatch_loss_floor:LossBelowFloor"


def _log(tmp_path: Path, name: str, spike: bool) -> Path:
    """A loss that falls, with a NaN (another rule's finding) and, on `spike`, one huge value."""
    rows = [{"step": i, "loss": 2.0 / i ** 0.3} for i in range(1, 300)]
    rows[150]["loss"] = float("nan")
    if spike:
        rows[200]["loss"] = 1e6
    path = tmp_path / name
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _env(site: Path) -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=os.pathsep.join([str(site), str(ROOT)]))


def test_check_says_which_rule_failed_and_keeps_the_rest(tmp_path: Path) -> None:
    site = _site(tmp_path, ENTRY, edit=FAILING)
    bad, good = _log(tmp_path, "bad.jsonl", True), _log(tmp_path, "good.jsonl", False)
    proc = subprocess.run([sys.executable, "-m", "trainwatch", "check", "--json", str(bad), str(good)],
                          capture_output=True, text=True, env=_env(site), timeout=120)
    assert "Traceback" not in proc.stderr
    doc = json.loads(proc.stdout)
    notes = {s["path"]: s["skipped"] for s in doc["sources"]}
    failed = [n for n in notes[str(bad)] if "loss.below_floor" in n]
    assert len(failed) == 1 and "ZeroDivisionError: boom" in failed[0] and "off for it" in failed[0]
    assert not [n for n in notes[str(good)] if "loss.below_floor" in n]
    ids = {(f["id"], f["source"]) for f in doc["findings"]}
    assert ("loss.nonfinite", str(bad)) in ids and ("loss.nonfinite", str(good)) in ids
    assert proc.returncode == doc["exit_code"] == 2
    text = subprocess.run([sys.executable, "-m", "trainwatch", "check", str(bad)], capture_output=True, text=True,
                          env=_env(site), timeout=120)
    assert "note: rule loss.below_floor failed on this log" in text.stdout and "Traceback" not in text.stderr


def test_tail_says_it_once_and_goes_on_following(tmp_path: Path) -> None:
    site = _site(tmp_path, ENTRY, edit=FAILING)
    bad = _log(tmp_path, "bad.jsonl", True)
    proc = subprocess.run([sys.executable, "-m", "trainwatch", "tail", str(bad), "--headless", "--no-gpu",
                           "--json", "--exit-on", "critical"],
                          capture_output=True, text=True, env=_env(site), timeout=120)
    assert "Traceback" not in proc.stderr
    said = [line for line in (proc.stdout + proc.stderr).splitlines() if "loss.below_floor failed" in line]
    assert len(said) == 1
    assert proc.returncode == 2  # the NaN's critical alert still fired after the failure
