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


def test_metrics_logged_one_after_another_keep_no_round_of_room(tmp_path: Path) -> None:
    """A log that writes one metric for a long stretch, then the next: once a round leaves a metric alone,
    its arrays shrink back to its recent window, so memory does not grow with the number of metrics done."""
    from trainwatch import runner
    from trainwatch.adapters.pipeline import BACKLOG_BLOCK
    from trainwatch.session import LogClock, Session

    path = tmp_path / "phases.jsonl"
    with path.open("w") as f:
        s = 0
        for m in range(4):
            for i in range(40_000):
                s += 1
                f.write(f'{{"step": {s}, "m{m}": {0.5 + (i % 7) * 0.01:.2f}}}\n')
    src = runner.open_source(path)
    session = Session([src], clock=LogClock(0.0))
    with path.open("rb") as fh:
        for batch in src.parser.read_file(fh, BACKLOG_BLOCK):
            session.feed_batch(batch, more=True)
    session.settle()
    store = session.engine.store
    assert store.series(src.name, "m3").count == 40_000
    assert [m for m in ("m0", "m1", "m2") if store.series(src.name, m).roomy] == []
