"""`check` gives the same report with the native scanner and with the pure-Python reference: the byte
path's records depend on the scanner's arrays, and the two must never disagree on a real log."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
LOGS = sorted(p for p in (ROOT / "examples/logs").glob("*") if p.suffix in (".log", ".jsonl"))
VOLATILE = ("started_at", "last_seen_at", "resolved_at", "quiet_s", "elapsed_s", "seconds")


def _native_built() -> bool:
    try:
        import trainwatch._scan  # noqa: F401
    except ImportError:
        return False
    return True


def _stable(doc: Any) -> Any:
    """The report without the wall-clock figures that differ between any two runs."""
    if isinstance(doc, dict):
        return {k: _stable(v) for k, v in doc.items() if k not in VOLATILE}
    if isinstance(doc, list):
        return [_stable(x) for x in doc]
    return doc


def report(path: Path, scanner: str) -> Any:
    env = dict(os.environ, TRAINWATCH_SCANNER=scanner)
    proc = subprocess.run([sys.executable, "-m", "trainwatch", "check", str(path), "--json"],
                          capture_output=True, text=True, timeout=120, cwd=ROOT, env=env)
    assert proc.returncode in (0, 1, 2), proc.stderr
    return _stable(json.loads(proc.stdout))


@pytest.mark.skipif(not _native_built(), reason="trainwatch._scan is not built: nothing to compare with")
@pytest.mark.parametrize("log", LOGS, ids=[p.name for p in LOGS])
def test_native_and_reference_scanners_report_the_same(log: Path) -> None:
    native = report(log, "native")
    assert native["sources"][0]["records"] > 0
    assert native == report(log, "reference")
