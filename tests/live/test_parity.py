"""The live path says what `check` says: `tail --headless` over a whole log fires the same findings.

Both commands run for real in child processes on every log of the accuracy scoreboard (the shared
corpus when present, and examples/). `tail` reads the file as its backlog; once its status line says it
has read every line `check` counted (or it ended by itself), it is stopped with SIGTERM. Every warning or
critical finding of `check` must have fired in `tail` at the same step, and `tail` may fire nothing
worse that `check` does not report, unless it withdrew it later (a rule disproved by later data).
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from ..scoreboard import accuracy
from .test_cli_tail import Tail

ROOT = Path(__file__).resolve().parents[2]

CASES, _ = accuracy.load_cases()


def _key(f: dict[str, Any]) -> tuple[str, str, str]:
    return f["id"], str(f.get("subject", "")), f["severity"]


END_ONLY = {"quality.not_learning", "quality.collapse", "quality.overfit", "quality.no_progress", "run.ended_early",
            "loss.eval_frozen", "loss.ended_higher", "loss.stuck", "loss.zero", "loss.component_rising",
            "rl.q_divergence", "quality.worsened"}
"""Rules that judge a run as a whole once its source has ended (`on_end` alone): a `tail` stopped while
following reaches that end only where the log itself says the training ended, so it is neither asked to
have fired them nor blamed for firing them."""


def _lowered(check: dict[str, Any], key: tuple[str, str, str]) -> bool:
    """`check` reports this alert at a lower severity: an echo folded into its incident's root, or a
    crash of an earlier attempt; or withdrew it (a divergence the loss came back from by the end). All are
    judgements over the whole log, which `tail` tells live as it fired."""
    if any((w["id"], str(w.get("subject", ""))) == key[:2] for w in check.get("withdrawn", [])):
        return True
    return any((f["id"], str(f.get("subject", ""))) == key[:2] and (f.get("echo_of") or "earlier attempt" in
                                                                     f.get("message", "")
                                                                     or f.get("evidence", {}).get("root_cause")
                                                                     or "recovered_to" in f.get("evidence", {}))
               for f in check["findings"])


def _check(path: Path) -> dict[str, Any]:
    proc = subprocess.run([sys.executable, "-m", "trainwatch", "check", str(path), "--json"],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    if proc.returncode == 3 and not proc.stdout.strip():
        return {"exit_code": 3}  # nothing readable: one line on stderr, no report
    return json.loads(proc.stdout)  # type: ignore[no-any-return]


def _tail(path: Path, lines: int) -> dict[tuple[str, str, str], int | None]:
    """First firing step of every alert `tail` printed while reading the whole file."""
    t = Tail(str(path), "--json", "--status-every", "0.2", cwd=ROOT)
    deadline = time.monotonic() + 120
    try:
        while t.proc.poll() is None:
            assert time.monotonic() < deadline, f"tail never caught up with {lines} lines: {t.seen[-1:]}"
            line = t.wait_line('"type"', timeout=120)
            doc = json.loads(line)
            if doc["type"] == "status" and all(s["lines"] >= lines or s["ended"] for s in doc["sources"]):
                t.proc.send_signal(signal.SIGTERM)
                break
        t.finish(timeout=60)
    finally:
        if t.proc.poll() is None:
            t.proc.kill()
    for rest in iter(lambda: t.lines.get(timeout=5) if not t.lines.empty() else None, None):
        t.seen.append(rest)
    fired: dict[tuple[str, str, str], int | None] = {}
    withdrawn: set[tuple[str, str, str]] = set()
    for line in t.seen:
        doc = json.loads(line)
        if doc.get("type") == "alert" and doc["state"] == "firing":
            fired.setdefault(_key(doc), doc["step"])
        elif doc.get("type") == "alert" and doc.get("retracted"):
            withdrawn.add(_key(doc))
    return {k: v for k, v in fired.items() if k not in withdrawn}  # disproved later: no finding of check's


@pytest.mark.parametrize("case", CASES, ids=[c.label for c in CASES])
def test_tail_fires_what_check_reports(case) -> None:  # type: ignore[no-untyped-def]
    report = _check(case.path)
    if report.get("exit_code") == 3 or not report.get("sources"):
        pytest.skip("check reads nothing here: nothing to compare")
    lines = max(s["lines"] for s in report["sources"])
    if not case.path.read_bytes().endswith(b"\n"):
        lines -= 1  # a last line with no newline yet is held back by a follower, as `tail -f` would
    fired = _tail(case.path, lines)
    wanted = {_key(f): f["step"] for f in report["findings"] if f["severity"] != "info" and f["id"] not in END_ONLY}
    told = {k[:2] for k in fired}  # told live, maybe more severe than check's lowered verdict
    missing = {k: v for k, v in wanted.items() if k[:2] not in told}
    assert not missing, f"check reports {missing} but tail never fired them (tail: {fired})"
    moved = {k: (v, fired[k]) for k, v in wanted.items() if k in fired and fired[k] != v}
    assert not moved, f"dated differently (check, tail): {moved}"
    extra = {k: v for k, v in fired.items()
             if k not in wanted and k[2] != "info" and k[0] not in END_ONLY and not _lowered(report, k)}
    assert not extra, f"tail fired {extra}, which check does not report"
