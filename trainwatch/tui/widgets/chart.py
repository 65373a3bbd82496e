"""The main chart: the selected metric, raw curve faint behind EMA and moving-average smoothers."""

from __future__ import annotations

from textual.content import Content
from textual.widget import Widget

from trainwatch.tui import charts
from trainwatch.tui.view import ChartSeries

LAYER_STYLE = {charts.RAW: "$text-muted", charts.MA: "$secondary", charts.EMA: "$primary bold",
               charts.EVAL: "$accent bold", charts.ALERT: "$warning", charts.NAN: "$error bold", None: ""}
RECENT_WINDOW = 300  # points in the recent view; `w` switches to the whole run


class MetricChart(Widget, can_focus=True):
    DEFAULT_CSS = """
    MetricChart { height: 1fr; min-height: 6; border: round $panel; }
    MetricChart:focus { border: round $primary; }
    """

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.series: ChartSeries | None = None
        self.level = charts.DEFAULT_SMOOTHING
        self.log_y = False
        self.whole_run = False

    def set_series(self, series: ChartSeries | None) -> None:
        if series != self.series:
            self.series = series
            self._retitle()
            self.refresh()

    def change(self, *, level: int | None = None, log_y: bool | None = None, whole_run: bool | None = None) -> None:
        if level is not None:
            self.level = max(0, min(len(charts.SMOOTHING_LEVELS) - 1, level))
        if log_y is not None:
            self.log_y = log_y
        if whole_run is not None:
            self.whole_run = whole_run
        self._retitle()
        self.refresh()

    @property
    def level_values(self) -> tuple[float, int]:
        return charts.SMOOTHING_LEVELS[self.level]

    def _retitle(self) -> None:
        w, n = charts.SMOOTHING_LEVELS[self.level]
        name = self.series.name if self.series else "no metric"
        self.border_title = name
        self.border_subtitle = (f"EMA {w:g} · MA {n} · {'log' if self.log_y else 'linear'} · "
                                f"{'whole run' if self.whole_run else f'last {RECENT_WINDOW}'}")

    def data(self) -> charts.ChartData | None:
        s = self.series
        if s is None:
            return None
        w, n = charts.SMOOTHING_LEVELS[self.level]
        band_lo = band_hi = None
        if self.whole_run and s.buckets:
            xs = [float(b[1]) for b in s.buckets]
            ys = [b[4] if not b[5] else float("nan") for b in s.buckets]
            band_lo = [b[2] for b in s.buckets]
            band_hi = [b[3] for b in s.buckets]
            evals = list(s.eval_points)
        else:
            pts = s.recent[-RECENT_WINDOW:]
            xs = [float(p[0]) for p in pts]
            ys = [p[1] for p in pts]
            start = xs[0] if xs else 0.0
            evals = [e for e in s.eval_points if e[0] >= start]
        return charts.ChartData(
            xs=xs, ys=ys, smooth_ema=charts.ema_debiased(ys, w) if w > 0 else None,
            smooth_ma=charts.moving_average(ys, n) if n > 1 else None,
            eval_xs=[float(e[0]) for e in evals], eval_ys=[e[1] for e in evals],
            alert_xs=[float(a) for a in s.alert_steps], log_y=self.log_y, band_lo=band_lo, band_hi=band_hi)

    def render(self) -> Content:
        data = self.data()
        width, height = self.content_size.width, self.content_size.height
        if data is None or not data.xs:
            return Content.styled("waiting for the first metric…", "$text-muted")
        grid = charts.render_chart(data, width, max(1, height - 1))
        lines = [Content.assemble(*[(text, LAYER_STYLE[layer]) for text, layer in row]) for row in grid.rows]
        legend: list[str | tuple[str, str]] = [("⣿ raw ", LAYER_STYLE[charts.RAW]), ("⣿ ema ", LAYER_STYLE[charts.EMA]),
                                               ("⣿ ma ", LAYER_STYLE[charts.MA])]
        if data.eval_xs:
            legend.append(("◆ eval ", LAYER_STYLE[charts.EVAL]))
        if data.alert_xs:
            legend.append(("▼ alert ", LAYER_STYLE[charts.ALERT]))
        if grid.nan_steps:
            legend.append((f"{charts.NAN_MARK} {len(grid.nan_steps)} NaN/Inf", LAYER_STYLE[charts.NAN]))
        if grid.dropped_nonpositive:
            legend.append((f" {grid.dropped_nonpositive} ≤0 hidden (log)", "$warning"))
        return Content("\n").join([Content.assemble(*legend), *lines])
