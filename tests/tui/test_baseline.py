"""`tail --baseline`: a finished run drawn beside the live one's curves, never judged with it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.tui import fixtures
from tests.tui.conftest import screen_text
from trainwatch.cli.tail import load_baseline
from trainwatch.errors import SourceError
from trainwatch.tui import charts
from trainwatch.tui.app import TrainwatchApp
from trainwatch.tui.widgets.chart import MetricChart

ROOT = Path(__file__).resolve().parents[2]
GOOD = ROOT / "examples" / "logs" / "hf_healthy.log"


def test_the_baseline_is_read_once_into_whole_run_curves() -> None:
    b = load_baseline(str(GOOD))
    assert b.label == "hf_healthy.log"
    loss = b.curves["loss"]
    assert len(loss) >= 10 and all(s1 < s2 for (s1, _), (s2, _) in zip(loss, loss[1:]))
    assert loss[0][1] > loss[-1][1]  # the healthy run's loss fell


async def test_the_chart_draws_the_baseline_in_its_own_colour_and_the_live_alerts_are_unchanged() -> None:
    plain = TrainwatchApp(fixtures.critical(), clock=fixtures.clock)
    async with plain.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        assert plain.snapshot is not None
        alone = [(a.rule, a.severity, a.step) for a in plain.snapshot.alerts]
        assert "baseline" not in screen_text(plain)
    app = TrainwatchApp(fixtures.critical(), clock=fixtures.clock, baseline=load_baseline(str(GOOD)))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        assert app.snapshot is not None and app.snapshot.badge == "CRITICAL"
        assert [(a.rule, a.severity, a.step) for a in app.snapshot.alerts] == alone  # not judged with the live run
        chart = app.query_one(MetricChart)
        data = chart.data()
        assert data is not None and data.baseline is not None and data.baseline[0] == "baseline: hf_healthy.log"
        assert "baseline: hf_healthy.log" in screen_text(app)
        colour = chart.layer_colors().get(charts.BASELINE, charts.DEFAULT_COLORS[charts.BASELINE])
        drawn = {seg.style.color.triplet.hex if seg.style and seg.style.color and seg.style.color.triplet else None
                 for y in range(2, chart.size.height - 2) for seg in chart.render_line(y)}
        r, g, b = colour
        assert f"#{r:02x}{g:02x}{b:02x}" in drawn  # its curve is on the chart, not only in the legend


def test_a_baseline_nothing_is_understood_in_is_one_error(tmp_path: Path) -> None:
    bad = tmp_path / "notes.txt"
    bad.write_text("nothing a trainer printed\n")
    with pytest.raises(SourceError):
        load_baseline(str(bad))


def test_a_missing_baseline_is_one_line_and_exit_3(tmp_path: Path) -> None:
    log = tmp_path / "run.log"
    log.write_text(GOOD.read_text(encoding="utf-8"), encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "trainwatch", "tail", str(log), "--headless", "--no-gpu",
                           "--baseline", str(tmp_path / "missing.log")], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 3
    assert proc.stderr.count("\n") == 1 and "missing.log" in proc.stderr and "Traceback" not in proc.stderr


def test_baseline_at_is_the_bucket_holding_the_step_and_nothing_past_the_run() -> None:
    from trainwatch.view.snapshot import baseline_at

    pts = ((10, 2.0), (20, 1.5), (30, float("nan")), (40, 1.0))  # (last step, mean) per bucket
    assert baseline_at(pts, 5) == 2.0 and baseline_at(pts, 10) == 2.0 and baseline_at(pts, 15) == 1.5
    assert baseline_at(pts, 35) == 1.0 and baseline_at(pts, 40) == 1.0
    assert baseline_at(pts, 25) is None  # a bucket of NaN says nothing to compare with
    assert baseline_at(pts, 41) is None and baseline_at((), 3) is None


async def test_each_card_shows_its_difference_from_the_baseline_at_the_same_step() -> None:
    from trainwatch.view.snapshot import Baseline, baseline_at

    model = fixtures.healthy()
    loss = model.engine.store.get("loss", next(iter(model.engine.sources)))
    assert loss is not None and loss.newest() is not None
    step, last = loss.newest()
    base = Baseline("good.log", {"loss": ((1, 3.0), (step, last - 0.25))})
    app = TrainwatchApp(model, clock=fixtures.clock, baseline=base)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        assert app.snapshot is not None
        card = next(m for m in app.snapshot.metrics if m.name == "loss")
        assert card.baseline == baseline_at(base.curves["loss"], step) == last - 0.25
        assert "Δ+0.25" in screen_text(app)
        other = next(m for m in app.snapshot.metrics if m.name != "loss")
        assert other.baseline is None  # a metric the baseline did not log has nothing to compare
