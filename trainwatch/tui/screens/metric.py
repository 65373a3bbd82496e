"""Enter on a metric: its chart full screen, with the same smoothing, scale and window keys."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import ModalScreen

from trainwatch.tui.widgets.chart import MetricChart
from trainwatch.view.snapshot import ChartSeries


class MetricScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,q,enter", "close", "close", id="metric.close"),
                Binding("s", "smooth(-1)", "less smoothing", id="metric.smooth_down"),
                Binding("S", "smooth(1)", "more smoothing", id="metric.smooth_up"),
                Binding("y", "log", "log/linear y", id="metric.log"),
                Binding("w", "window", "whole run / recent", id="metric.window")]
    DEFAULT_CSS = """
    MetricScreen { align: center middle; }
    MetricScreen > MetricChart { width: 95%; height: 90%; background: $surface; }
    """

    def __init__(self, series: ChartSeries | None, *, level: int, log_y: bool, whole_run: bool) -> None:
        super().__init__()
        self._init = (series, level, log_y, whole_run)

    def compose(self) -> ComposeResult:
        yield MetricChart(id="zoom")

    def on_mount(self) -> None:
        series, level, log_y, whole_run = self._init
        chart = self.query_one(MetricChart)
        chart.change(level=level, log_y=log_y, whole_run=whole_run)
        chart.set_series(series)
        chart.focus()

    def update_series(self, series: ChartSeries | None) -> None:
        self.query_one(MetricChart).set_series(series)

    def action_close(self) -> None:
        self.dismiss(None)

    def action_smooth(self, delta: int) -> None:
        chart = self.query_one(MetricChart)
        chart.change(level=chart.level + delta)

    def action_log(self) -> None:
        chart = self.query_one(MetricChart)
        chart.change(log_y=not chart.log_y)

    def action_window(self) -> None:
        chart = self.query_one(MetricChart)
        chart.change(whole_run=not chart.whole_run)
