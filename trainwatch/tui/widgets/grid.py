"""Small charts of the preset's key metrics beside the main chart, on a terminal wide enough for them.

Each small chart is the main chart's widget (same plotext drawing, same colours, same cache) at a
small size: a chart is redrawn only when its series object changes, and the view hands back the
very same object while a series got no new point. Shown by app.tcss on `Screen.-wide` only.
"""

from __future__ import annotations

from collections.abc import Sequence

from textual.app import ComposeResult
from textual.containers import Container
from textual.content import Content

from trainwatch.tui.view import GRID_SIZE, ChartSeries
from trainwatch.tui.widgets.chart import MetricChart
from trainwatch.tui.widgets.styles import retitle


class SmallChart(MetricChart, can_focus=False):
    """One cell of the grid: titled with its metric only (smoothing and window are the main chart's)."""

    DEFAULT_CSS = """
    SmallChart { height: 1fr; min-height: 5; }
    """

    def _retitle(self) -> None:
        retitle(self, Content(self.series.name if self.series else ""), "")


class ChartGrid(Container):
    """Up to GRID_SIZE small charts, two per row; cells without a metric are hidden."""

    DEFAULT_CSS = """
    ChartGrid { layout: grid; grid-size: 2; grid-gutter: 0; width: 1fr; height: 1fr; }
    """

    def compose(self) -> ComposeResult:
        for i in range(GRID_SIZE):
            yield SmallChart(id=f"grid-{i}")

    def show(self, series: Sequence[ChartSeries]) -> None:
        for i, chart in enumerate(self.query(SmallChart)):
            s = series[i] if i < len(series) else None
            chart.display = s is not None
            chart.set_series(s)

    @property
    def names(self) -> list[str]:
        """The metrics drawn now, in order (for tests and the screenshot's reader)."""
        return [c.series.name for c in self.query(SmallChart) if c.display and c.series is not None]
