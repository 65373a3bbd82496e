"""YOLOv3/v5's headerless results.txt: rows read by position, the epoch as the step, losses totalled."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.adapters.helpers import run, samples
from trainwatch import adapters
from trainwatch.adapters.yolo_txt import YoloTxtAdapter
from trainwatch.model import EventKind

ROOT = Path(__file__).resolve().parents[2]


def rows(n: int = 30) -> list[str]:
    """Rows laid out as YOLOv5's train.py writes them ('%10s' * 2 + '%10.4g' * 13)."""
    out = []
    for e in range(n):
        box, obj, cls = 0.1 - 0.001 * e, 0.1 - 0.0015 * e, 0.0
        vals = [box, obj, cls, box + obj + cls, 30 + e, 416, 0.05 + 0.01 * e, 0.1 + 0.01 * e,
                0.02 + 0.01 * e, 0.004 + 0.002 * e, 0.09 - 0.001 * e, 0.055 - 0.0005 * e, 0.0]
        out.append(("%10s" * 2 + "%10.4g" * 13) % (f"{e}/{n - 1}", "1.93G", *vals))
    return out


def test_rows_give_epoch_steps_and_totals() -> None:
    recs = run(YoloTxtAdapter(""), rows())
    got = {(s.name, s.step): s.value for s in samples(recs)}
    assert abs(got[("loss", 3)] - (0.097 + 0.0955)) < 1e-3
    assert abs(got[("eval_loss", 3)] - (0.087 + 0.0535)) < 1e-3
    assert ("mAP50", 29) in got and ("val/box_loss", 0) in got
    progress = [r for r in recs if getattr(r, "kind", None) is EventKind.PROGRESS]
    assert progress and progress[0].fields["total"] == 29


def test_detected_and_not_taken_for_other_text() -> None:
    head = "\n".join(rows(10)) + "\n"
    assert adapters.detect(head, "results.txt") == "yolo_txt"
    assert YoloTxtAdapter.score("step 1: loss=2.0, lr=1e-4\nstep 2: loss=1.9, lr=1e-4\n" * 5, "x.txt") == 0.0


def test_check_reads_a_healthy_run_as_vision(tmp_path: Path) -> None:
    log = tmp_path / "results.txt"
    log.write_text("\n".join(rows()) + "\n")
    proc = subprocess.run([sys.executable, "-m", "trainwatch", "check", "--json", str(log)],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    doc = json.loads(proc.stdout)
    assert proc.returncode == 0 and doc["preset"] == "vision"
    assert doc["sources"][0]["format"] == "yolo_txt" and doc["sources"][0]["last_step"] == 29


def test_nan_losses_are_read_as_nan() -> None:
    """A run that blows up writes `nan` in its rows: they must reach the NaN rule, not vanish."""
    lines = rows(5)
    lines.append(("%10s" * 2 + "%10s" * 13) % ("5/29", "1.93G", *(["nan"] * 4), "30", "416", *(["0"] * 4),
                                                *(["nan"] * 3)))
    got = [x for x in samples(run(YoloTxtAdapter(""), lines)) if x.name == "loss"]
    assert len(got) == 6 and got[-1].value != got[-1].value and got[-1].step == 5
