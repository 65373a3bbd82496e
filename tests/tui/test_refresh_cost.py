"""What one refresh of a busy run may cost: no relayout of the screen, no chart built twice.

The 5%-of-a-core budget (benchmarks/tui_cpu.py) was once spent mostly on a full screen relayout on
every refresh: the log pane's growing scroll range and the evidence pane's unchanged text each asked
Textual for one. These tests count Textual's layout passes and our chart builds over many refreshes
of a run that grows between them, so that cost cannot come back unnoticed.
"""

from __future__ import annotations

import pytest
from textual.screen import Screen

from tests.tui import fixtures
from tests.tui.conftest import screen_text
from trainwatch.tui.app import TrainwatchApp
from trainwatch.tui.widgets.chart import MetricChart
from trainwatch.tui.widgets.log_pane import LogLines

REFRESHES = 20
LINES_PER_REFRESH = 10


def feed(model, step: int, exploding: bool) -> None:  # type: ignore[no-untyped-def]
    """One step with 30 metrics; `exploding`: a loss over the critical line, so one alert repeats."""
    fixtures.feed_step(model, step, extra=26, loss=9.0 + step / 1000 if exploding else None)


@pytest.mark.parametrize("exploding", [False, True], ids=["healthy", "alert-repeating"])
async def test_refreshes_of_a_growing_run_do_not_relayout_the_screen(monkeypatch: pytest.MonkeyPatch,
                                                                     exploding: bool) -> None:
    model = fixtures.model()
    step = 1
    for step in range(1, 41):
        feed(model, step, exploding)
    now = [1000.0]
    app = TrainwatchApp(model, start_model=False, refresh_s=1000, clock=lambda: now[0])
    layouts: list[bool] = []
    real = Screen._refresh_layout

    def counted(self, size=None, scroll=False):  # type: ignore[no-untyped-def]
        layouts.append(scroll)
        return real(self, size, scroll)

    async with app.run_test(size=(200, 60)) as pilot:  # wide: the grid of small charts is shown too
        await pilot.pause()
        monkeypatch.setattr(Screen, "_refresh_layout", counted)
        for _ in range(REFRESHES):
            for _ in range(LINES_PER_REFRESH):
                step += 1
                feed(model, step, exploding)
            now[0] += 1.0  # the grid is due every few refreshes
            app.refresh_view()
            await pilot.pause()
        assert len(layouts) <= 2, f"{len(layouts)} layout passes in {REFRESHES} refreshes"
        lines = app.query_one(LogLines)
        assert lines.follow and lines.scroll_y == lines.max_scroll_y  # still on the newest line...
        assert lines.virtual_size.height == len(lines.rows)
        assert f"{step} {{'loss'" in screen_text(app)  # ...and it is on screen
        if exploding:
            assert "seen" in screen_text(app) and app.snapshot is not None and app.snapshot.alerts


async def test_the_main_chart_is_built_once_per_change_and_never_for_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    builds: list[str | None] = []
    real = MetricChart._picture

    def counted(self):  # type: ignore[no-untyped-def]
        builds.append(self.id)
        return real(self)

    monkeypatch.setattr(MetricChart, "_picture", counted)
    model = fixtures.healthy()
    app = TrainwatchApp(model, start_model=False, refresh_s=1000, clock=fixtures.clock)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        builds.clear()
        for step in range(61, 61 + 5):
            fixtures.feed_step(model, step)
            app.refresh_view()
            await pilot.pause()
        assert builds.count("chart") == 5  # the selected metric got a point each time: one build each
        builds.clear()
        for _ in range(5):
            app.refresh_view(force=True)  # a new snapshot of the same data
            await pilot.pause()
        assert builds == []
