"""Small charts of the preset's key metrics beside the main chart, on a terminal wide enough for them.

Each small chart is the main chart's widget (same plotext drawing, same colours, same cache) at a
small size: a chart is redrawn only when its series object changes, and the view hands back the
very same object while a series got no new point. Shown by app.tcss on `Screen.-wide` only.
A busy run changes every key metric on every refresh, so the grid also redraws at most every
REDRAW_S seconds (a new set of metrics shows at once): the main chart stays live, the glance
charts cost a fifth as much (the 5%-of-a-core budget, benchmarks/tui_cpu.py).
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from textual.app import ComposeResult
from textual.containers import Container
from textual.content import Content

from trainwatch.tui.widgets.chart import MetricChart
from trainwatch.tui.widgets.styles import retitle
from trainwatch.view.snapshot import GRID_SIZE, ChartSeries


class SmallChart(MetricChart, can_focus=False):
    """One cell of the grid: titled with its metric only (smoothing and window are the main chart's)."""

    DEFAULT_CSS = """
    SmallChart { height: 1fr; min-height: 5; }
    """

    def _retitle(self) -> None:
        retitle(self, Content(self.series.name if self.series else ""), "")


REDRAW_S = 5.0


class ChartGrid(Container):
    """Up to GRID_SIZE small charts, two per row; cells without a metric are hidden."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.redraw_s = REDRAW_S
        self._names: list[str] | None = None
        self._at = 0.0

    DEFAULT_CSS = """
    ChartGrid { layout: grid; grid-size: 2; grid-gutter: 0; width: 1fr; height: 1fr; }
    """

    def compose(self) -> ComposeResult:
        for i in range(GRID_SIZE):
            yield SmallChart(id=f"grid-{i}")

    def due(self) -> bool:
        """Whether the next refresh should copy and draw the grid: never drawn yet, or redraw_s passed
        (the app's clock). Not due: the app copies nothing for it."""
        return self._names is None or self._now() - self._at >= self.redraw_s

    def _now(self) -> float:
        clock = getattr(self.app, "clock", time.monotonic)
        return float(clock())

    def show(self, series: Sequence[ChartSeries]) -> None:
        self._names, self._at = [s.name for s in series], self._now()
        for i, chart in enumerate(self.query(SmallChart)):
            s = series[i] if i < len(series) else None
            chart.display = s is not None
            chart.set_series(s)

    @property
    def names(self) -> list[str]:
        """The metrics drawn now, in order (for tests and the screenshot's reader)."""
        return [c.series.name for c in self.query(SmallChart) if c.display and c.series is not None]
