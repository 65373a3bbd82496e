"""Lightning's RichProgressBar: `Epoch 0/-2 ━━━ 150/150 0:01:20 • 0:00:00 2.82it/s v_num: 0.000 train_loss: 1.059`.

Rich draws no tqdm `%|`; its metrics follow the rate as `key: value` items, wrapped onto indented lines of
their own on a narrow console. Captured without a terminal, a bar is written once, at its end, so a run of
one epoch leaves one redraw: it is still a training log, read at its step (epoch x batches + position)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.adapters.helpers import run, series
from trainwatch.adapters import detect
from trainwatch.adapters.template import TemplateAdapter

ROOT = Path(__file__).resolve().parents[2]
BAR = "━" * 16
WRAP = " " * 63


def test_one_wrapped_redraw_is_read_at_its_step() -> None:
    lines = ["GPU available: False, used: False",
             f"Epoch 0/-2 {BAR} 150/150 0:01:20 • 0:00:00 2.82it/s v_num: 0.000     ",
             f"{WRAP}train_loss: 1.059", f"{WRAP}val_loss: 1.000  "]
    recs = run(TemplateAdapter("t"), lines)
    assert series(recs, "train_loss") == [(150, 1.059)] and series(recs, "val_loss") == [(150, 1.0)]
    assert not series(recs, "v_num")
    assert detect("\n".join(lines) + "\n", "run.log") == "template"


def test_metrics_on_the_bar_line_and_later_epochs() -> None:
    lines = [f"Epoch {e}/3 {BAR} 50/50 0:00:20 • 0:00:00 2.82it/s v_num: 0.000 train_loss: {2 - e / 4:.3f}"
             for e in range(2)]
    recs = run(TemplateAdapter("t"), lines)
    assert series(recs, "train_loss") == [(50, 2.0), (100, 1.75)]


def test_indented_lines_after_anything_else_are_not_taken() -> None:
    recs = run(TemplateAdapter("t"), ["Some banner", f"{WRAP}train_loss: 1.059"])
    assert not series(recs, "train_loss")


def test_the_example_lightning_console_alone_is_read() -> None:
    """examples/runs/lightning_tiny/run.log holds one Rich redraw: train_loss 1.059 and val_loss 1.000 at
    150/150. Checked alone it was 'no metric at all' (exit 3)."""
    log = ROOT / "examples" / "runs" / "lightning_tiny" / "run.log"
    got = subprocess.run([sys.executable, "-m", "trainwatch", "check", str(log)], capture_output=True, text=True,
                         cwd=ROOT)
    assert got.returncode == 0, got.stdout + got.stderr
    assert "[template]  21 lines, step 150 of 150" in got.stdout
    assert "last: loss 1.059, eval_loss 1" in got.stdout
