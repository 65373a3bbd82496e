"""Pilot tests: the small charts of the key metrics (wide terminals only), one colour per metric, and
the other ranks of a run drawn over the selected metric."""

from __future__ import annotations

from textual.color import Color

from tests.tui import fixtures
from trainwatch.engine import Engine
from trainwatch.model import Event, EventKind, Sample
from trainwatch.tui import charts
from trainwatch.tui.app import TrainwatchApp
from trainwatch.tui.themes import METRIC_VARS, metric_var
from trainwatch.tui.widgets.chart import MetricChart
from trainwatch.tui.widgets.grid import ChartGrid, SmallChart
from trainwatch.tui.widgets.metric_list import MetricList
from trainwatch.view import snapshot as view
from trainwatch.view.model import EngineModel


def app_for(model) -> TrainwatchApp:  # type: ignore[no-untyped-def]
    return TrainwatchApp(model, clock=fixtures.clock)


async def test_wide_terminal_shows_the_presets_key_metrics_beside_the_chart() -> None:
    app = app_for(fixtures.critical())
    async with app.run_test(size=(200, 60)) as pilot:
        await pilot.pause()
        grid = app.query_one(ChartGrid)
        assert grid.names == ["eval_loss", "grad_norm", "lr"]  # loss is the main chart: not repeated
        main = app.query_one("#chart", MetricChart)
        assert grid.region.width > 40 and main.region.right <= grid.region.x  # beside, not over
        cells = [c for c in app.query(SmallChart) if c.display]
        assert all(c.region.width >= 30 and c.region.height >= 8 for c in cells)
        assert not any(c.can_focus for c in cells)  # tab still goes cards -> chart -> alerts


async def test_narrower_terminal_hides_the_grid_and_copies_nothing_for_it() -> None:
    app = app_for(fixtures.critical())
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        assert app.query_one(ChartGrid).region.area == 0
        assert app.snapshot is not None and app.snapshot.grid == ()
        await pilot.resize_terminal(180, 48)
        await pilot.pause()
        app.refresh_view()
        await pilot.pause()
        assert app.query_one(ChartGrid).region.area > 0 and app.query_one(ChartGrid).names[0] == "eval_loss"


async def test_small_charts_are_built_only_when_their_series_changed(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    built: list[tuple[int, int]] = []
    real = charts.plot_chart
    monkeypatch.setattr(charts, "plot_chart", lambda *a, **k: built.append(a[1:3]) or real(*a, **k))
    model = fixtures.healthy()
    now = [1000.0]
    app = TrainwatchApp(model, clock=lambda: now[0])
    async with app.run_test(size=(200, 60)) as pilot:
        await pilot.pause()
        cells = [c for c in app.query(SmallChart) if c.display]
        first = [c.render() for c in cells]
        n = len(built)
        app.refresh_view(force=True)  # a new snapshot of the same data: the same series objects
        await pilot.pause()
        assert all(c.render() is f for c, f in zip(cells, first)) and len(built) == n  # nothing redrawn
        fixtures.feed_step(model, 61)
        app.refresh_view(force=True)
        await pilot.pause()
        assert all(c.render() is f for c, f in zip(cells, first))  # within REDRAW_S: the grid waits
        now[0] += app.query_one(ChartGrid).redraw_s
        app.refresh_view(force=True)
        await pilot.pause()
        redrawn = [c.series.name for c, f in zip(cells, first) if c.render() is not f]  # type: ignore[union-attr]
        # eval_loss got no point at step 61: kept as drawn (loss is the main chart, not a small one)
        assert redrawn == ["grad_norm", "lr"]


def test_grid_metrics_follow_the_preset() -> None:
    assert view.GRID_METRICS["grpo"][:3] == ("reward", "kl", "entropy")
    assert view.DEFAULT_GRID[:4] == ("loss", "eval_loss", "grad_norm", "lr")
    snap = view.take(fixtures.healthy(), selected=None, log_source=None, grid=True)
    assert [s.name for s in snap.grid] == ["eval_loss", "grad_norm", "lr"]
    assert view.take(fixtures.healthy(), selected=None, log_source=None).grid == ()


def test_the_small_charts_never_repeat_the_main_chart() -> None:
    model = fixtures.healthy()
    for selected in ("loss", "grad_norm", "lr"):
        source = next(s.source for s in model.engine.store if s.name == selected)
        snap = view.take(model, selected=(source, selected), log_source=None, grid=True)
        assert snap.chart is not None and snap.chart.name == selected
        assert selected not in [s.name for s in snap.grid]
        assert len(snap.grid) == 3


def test_one_palette_lookup_per_metric_name() -> None:
    assert metric_var("loss") == "primary" and metric_var("eval_loss") == "accent"
    assert metric_var("some/custom_metric") == metric_var("some/custom_metric") in METRIC_VARS
    assert not {metric_var(f"m{i}") for i in range(40)} & {"warning", "error"}  # those mean severity


async def test_card_sparkline_small_chart_and_main_curve_share_the_metric_colour() -> None:
    app = app_for(fixtures.healthy())
    async with app.run_test(size=(200, 60)) as pilot:
        await pilot.pause()
        variables = app.theme_variables
        cards = app.query_one(MetricList)
        for m in app.snapshot.metrics[:4]:  # type: ignore[union-attr]
            want = Color.parse(variables[metric_var(m.name)]).rgb
            card = cards.card(m, 30)
            spark_styles = {str(s.style) for s in card.spans if "▁" not in str(s.style)}
            assert f"${metric_var(m.name)}" in spark_styles, (m.name, spark_styles)
            cell = next((c for c in app.query(SmallChart) if c.series and c.series.name == m.name), None)
            if m.name != "loss":  # the main chart's metric has no small chart
                assert cell is not None and cell.layer_colors()[charts.EMA] == want
        main = app.query_one("#chart", MetricChart)
        assert main.layer_colors()[charts.EMA] == Color.parse(variables[metric_var("loss")]).rgb
        grad = next(c for c in app.query(SmallChart) if c.series and c.series.name == "grad_norm")
        assert grad.layer_colors()[charts.EMA] != main.layer_colors()[charts.EMA]  # metrics told apart by hue


# -- per-rank overlays ----------------------------------------------------------------------------

RANKS = ("runs/ddp/rank0.log", "runs/ddp/rank1.log")


def two_ranks(steps: int = 60, other_run: bool = False) -> EngineModel:
    """One run followed as two rank files: rank1's loss a little above rank0's, drifting up from step 40.

    With other_run, a rank2.log in another folder too: another run, never overlaid.
    """
    eng = Engine(fixtures.config(), clock=fixtures.clock)
    for src in (*RANKS, "zz/rank2.log")[: 3 if other_run else 2]:
        eng.source(src, "hf_console")
    m = EngineModel(eng)
    for step in range(1, steps + 1):
        with m.lock:
            for r, src in enumerate(RANKS):
                loss = fixtures.loss_at(step) + r * (0.12 + (0.03 * (step - 40) if step > 40 else 0.0))
                m.feed_line(src, step, f"{{'loss': {loss!r}}}")
                eng.feed(Sample("loss", loss, step=step, source=src, line=step))
                eng.feed(Event(EventKind.PROGRESS, source=src, line=step, fields={"step": step, "total": 200}))
            if other_run:
                eng.feed(Sample("loss", 2.0, step=step, source="zz/rank2.log", line=step))
    return m


def test_the_selected_metric_carries_the_other_ranks_of_the_same_run() -> None:
    snap = view.take(two_ranks(other_run=True), selected=(RANKS[0], "loss"), log_source=None)
    assert snap.chart is not None and snap.chart.rank == "rank0"
    assert [label for label, _ in snap.chart.ranks] == ["rank1"]  # not rank2: another folder, another run
    assert snap.chart.ranks[0][1][-1][0] == 60
    one = view.take(fixtures.healthy(), selected=None, log_source=None)
    assert one.chart is not None and one.chart.ranks == () and one.chart.rank == ""


async def test_main_chart_draws_each_rank_with_its_own_colour_and_a_legend() -> None:
    app = app_for(two_ranks())
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        chart = app.query_one("#chart", MetricChart)
        data = chart.data()
        assert data is not None and [o[0] for o in data.overlays] == ["rank1"]
        colors = chart.layer_colors()
        assert colors[charts.overlay_layer(0)] != colors[charts.EMA]
        legend = chart.render().plain.splitlines()[0]
        assert "rank0" in legend and "rank1" in legend
        text = chart.render()
        hexes = {str(sp.style) for sp in text.spans if "rank1" in text.plain[sp.start:sp.end]}
        r, g, b = colors[charts.overlay_layer(0)]
        assert any(f"#{r:02x}{g:02x}{b:02x}" in h for h in hexes), hexes  # the legend in the curve's colour


async def test_no_color_tells_ranks_apart_by_glyph(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("NO_COLOR", "1")
    app = app_for(two_ranks())
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        lines = app.query_one("#chart", MetricChart).render().plain.splitlines()
        glyph = charts.overlay_glyph(0)
        assert f"{glyph} rank1" in lines[0]
        assert sum(line.count(glyph) for line in lines[1:]) > 10  # rank1's curve drawn with that glyph


async def test_whole_run_view_draws_the_other_ranks_over_the_whole_run() -> None:
    """'w': the other ranks follow the selected one into the whole-run view, from their first steps."""
    steps = 700  # longer than the recent window, so the two views start at different steps
    app = app_for(two_ranks(steps=steps))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        chart = app.query_one("#chart", MetricChart)
        recent = chart.data()
        assert recent is not None and [o[0] for o in recent.overlays] == ["rank1"]
        assert recent.overlays[0][1][0] > steps - 300 - 1  # the recent window only
        await pilot.press("w")
        await pilot.pause()
        assert chart.whole_run
        whole = chart.data()
        assert whole is not None and [o[0] for o in whole.overlays] == ["rank1"]
        xs, ys = whole.overlays[0][1], whole.overlays[0][2]
        assert xs[0] < 50 and xs[-1] == steps  # the whole run, bucketed like the selected rank's
        assert len(xs) == len(whole.xs)
        assert ys[-1] > whole.smooth_ema[-1]  # type: ignore[index]  # rank1 drifts above rank0
        legend = chart.render().plain.splitlines()[0]
        assert "rank0" in legend and "rank1" in legend
