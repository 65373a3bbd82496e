"""The main chart: the selected metric, raw curve faint behind EMA and moving-average smoothers.

plotext draws it (charts.plot_chart); its ANSI output, made only of numbers and box/braille
characters, is read into rows of same-colour runs (backgrounds dropped so the theme's shows) and
drawn line by line as Strips: no markup, no wrapping, one segment per run. On a busy run the chart
changes on every refresh, and going through Rich Text and Content cost as much as plotext itself.
The picture is cached: rebuilt only when its series, size, smoothing, scale, window or theme
changed; the strips only when the picture or the widget's style did.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from rich.color import Color as RichColor
from rich.segment import Segment
from rich.style import Style as RichStyle
from textual.color import Color
from textual.content import Content, Span
from textual.strip import Strip
from textual.style import Style
from textual.visual import Visual
from textual.widget import Widget

from trainwatch.tui import charts
from trainwatch.tui.themes import metric_var, rank_var
from trainwatch.tui.widgets.styles import retitle
from trainwatch.view.snapshot import ChartSeries

# Theme variables giving each layer's colour to plotext; the raw curve is the foreground, faded. The
# EMA curve takes the metric's own colour (themes.metric_var) and the moving average a dimmer shade of it.
LAYER_VAR = {charts.EVAL: "accent", charts.ALERT: "warning", charts.NAN: "error"}
RECENT_WINDOW = 300  # points in the recent view; `w` switches to the whole run


Run = tuple[str, "charts.RGB | None", bool]  # text, foreground (None: the widget's own), bold


@dataclass(eq=False)
class Picture:
    """One build of the chart: `head` (the legend, or a message) drawn as Content, then plotext's rows."""

    head: Content
    rows: list[list[Run]] = field(default_factory=list)
    _content: Content | None = None

    def content(self) -> Content:
        """The whole picture as one Content (what `render()` returns; the screen draws the rows directly)."""
        if self._content is None:
            self._content = Content("\n").join([self.head, *(rows_content(r) for r in self.rows)]) if self.rows \
                else self.head
        return self._content


class MetricChart(Widget, can_focus=True):
    DEFAULT_CSS = """
    MetricChart { height: 1fr; min-height: 6; }
    """

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.series: ChartSeries | None = None
        self.level = charts.DEFAULT_SMOOTHING
        self.log_y = False
        self.whole_run = False
        self._cache: tuple[tuple[Any, ...], Picture] | None = None
        self._strips: tuple[Picture, int, Style, list[Strip]] | None = None

    def set_series(self, series: ChartSeries | None) -> None:
        if series is not self.series:  # the snapshot reuses the object while the series is unchanged
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
        retitle(self, Content(name),  # a name from the log: Content, so it is never read as markup
                f"EMA {w:g} · MA {n} · {'log' if self.log_y else 'linear'} · "
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
        overlays = []  # other ranks, in the same window and smoothed alike
        if self.whole_run and s.buckets:
            for label, bs in s.rank_buckets:
                oys = [b[4] if not b[5] else float("nan") for b in bs]
                overlays.append((label, [float(b[1]) for b in bs], charts.ema_debiased(oys, w) if w > 0 else oys))
        else:
            for label, pts in s.ranks:
                pts = pts[-RECENT_WINDOW:]
                oys = [p[1] for p in pts]
                overlays.append((label, [float(p[0]) for p in pts], charts.ema_debiased(oys, w) if w > 0 else oys))
        return charts.ChartData(
            overlays=overlays, baseline=self._baseline(s, xs, w),
            xs=xs, ys=ys, smooth_ema=charts.ema_debiased(ys, w) if w > 0 else None,
            smooth_ma=charts.moving_average(ys, n) if n > 1 else None,
            eval_xs=[float(e[0]) for e in evals], eval_ys=[e[1] for e in evals],
            alert_xs=[float(a) for a in s.alert_steps], log_y=self.log_y, band_lo=band_lo, band_hi=band_hi)

    def _baseline(self, s: ChartSeries, xs: list[float], w: float) -> tuple[str, list[float], list[float]] | None:
        """The baseline run's curve, smoothed alike: all of it in the whole-run view, else the steps the
        live window spans."""
        if not s.baseline:
            return None
        pts = s.baseline
        if not (self.whole_run and s.buckets) and xs:
            lo, hi = xs[0], xs[-1]
            pts = tuple(p for p in pts if lo <= p[0] <= hi)
        if not pts:
            return None
        ys = [p[1] for p in pts]
        return (f"baseline: {s.baseline_label}", [float(p[0]) for p in pts],
                charts.ema_debiased(ys, w) if w > 0 else ys)

    def layer_colors(self) -> dict[str, charts.RGB]:
        """Layer colours from the current theme, so plotext's output matches the rest of the screen."""
        v = self.app.theme_variables
        out: dict[str, charts.RGB] = {}
        try:
            bg = Color.parse(v.get("background", "#000000"))
            fg = Color.parse(v.get("foreground", "#ffffff"))
            out[charts.RAW] = bg.blend(fg, 0.45).rgb
            out[charts.AXIS] = bg.blend(fg, 0.6).rgb
            for layer, var in LAYER_VAR.items():
                out[layer] = Color.parse(v[var]).rgb
            hue = Color.parse(v[metric_var(self.series.name if self.series else "")])
            out[charts.EMA] = hue.rgb
            out[charts.MA] = bg.blend(hue, 0.6).rgb
            taken = metric_var(self.series.name if self.series else "")
            for i in range(len(self.series.ranks) if self.series else 0):
                out[charts.overlay_layer(i)] = Color.parse(v[rank_var(i, taken)]).rgb
        except Exception:  # an odd theme value: plotext's defaults for the rest
            pass
        return out

    def picture(self) -> Picture:
        width, height = self.content_size.width, self.content_size.height
        key = (self.series, self.level, self.log_y, self.whole_run, width, height, self.app.theme)
        if self._cache is not None and self._cache[0] == key:
            return self._cache[1]
        picture = self._picture()
        self._cache = (key, picture)
        return picture

    def render(self) -> Content:
        """The picture as Content (for tests and anything that asks); the screen uses render_line."""
        return self.picture().content()

    def render_line(self, y: int) -> Strip:
        strips = self._lines()
        return strips[y] if y < len(strips) else Strip.blank(self.size.width, self.visual_style.rich_style)

    def _lines(self) -> list[Strip]:
        """The picture's strips: the head through Textual's Content path, plotext's rows as segments."""
        picture, width, style = self.picture(), self.size.width, self.visual_style
        done = self._strips
        if done is not None and done[0] is picture and done[1] == width and done[2] == style:
            return done[3]
        strips = Visual.to_strips(self, picture.head, width, None, style)
        styles: dict[tuple[charts.RGB | None, bool], RichStyle] = {}
        for runs in picture.rows:
            segments = []
            for text, fg, bold in runs:
                rich = styles.get((fg, bold))
                if rich is None:
                    rich = styles[(fg, bold)] = (style + run_style(fg, bold)).rich_style
                segments.append(Segment(text, rich))
            strips.append(Strip(segments))
        self._strips = (picture, width, style, strips)
        return strips

    def _picture(self) -> Picture:
        data = self.data()
        width, height = self.content_size.width, self.content_size.height
        if data is None or not data.xs:
            return Picture(Content.styled("waiting for the first metric…", "$text-muted"))
        colors = self.layer_colors()
        plain = bool(getattr(self.app, "no_color", False))  # NO_COLOR: the curves differ by glyph
        image = charts.plot_chart(data, width, max(1, height - 1), colors, glyphs=plain)
        legend = Content.assemble(*self.legend(data, image, colors, plain, self.series.rank if self.series else ""))
        name = self.series.name if self.series else ""
        y_label = Content.styled(f"{name}{' (log)' if self.log_y else ''}  ", "bold")  # the y axis' label
        if name and y_label.cell_length + legend.cell_length <= width:
            legend = y_label + legend
        if not image.ansi:
            return Picture(Content("\n").join([legend, Content.styled("(no finite points to draw)", "$text-muted")]))
        return Picture(legend, ansi_rows(image.ansi))

    @staticmethod
    def legend(data: charts.ChartData, image: charts.ChartImage, colors: dict[str, charts.RGB],
               plain: bool, rank: str = "") -> list[tuple[str, str]]:
        """The legend in the very colours (and, under NO_COLOR, the glyphs) the chart draws with."""

        def hue(layer: str, extra: str = "") -> str:
            r, g, b = colors.get(layer) or charts.DEFAULT_COLORS.get(layer, charts.DEFAULT_COLORS[charts.AXIS])
            return f"#{r:02x}{g:02x}{b:02x} {extra}".strip()

        glyph = charts.LEGEND_GLYPH_PLAIN if plain else charts.LEGEND_GLYPH
        out = [(f"{glyph[charts.RAW]} raw ", hue(charts.RAW))]
        if data.smooth_ema is not None:  # with other ranks drawn, the smoothed curve is named by its rank
            out.append((f"{glyph[charts.EMA]} {rank if data.overlays and rank else 'ema'} ", hue(charts.EMA, "bold")))
        if data.baseline is not None:
            out.append((f"{'∘' if plain else '⣿'} {data.baseline[0]} ", hue(charts.BASELINE)))
        for i, (label, _, _) in enumerate(data.overlays):  # the other ranks, in their curves' colour and glyph
            mark = charts.overlay_glyph(i) if plain else "⣿"
            out.append((f"{mark} {label} ", hue(charts.overlay_layer(i), "bold")))
        if data.smooth_ma is not None:
            out.append((f"{glyph[charts.MA]} ma ", hue(charts.MA)))
        if data.eval_xs:
            out.append(("◆ eval ", hue(charts.EVAL, "bold")))
        if data.alert_xs:
            out.append(("▼ alert ", hue(charts.ALERT)))
        if image.nan_steps:
            out.append((f"{charts.NAN_MARK} {len(image.nan_steps)} NaN/Inf ", hue(charts.NAN, "bold")))
        if image.dropped_nonpositive:
            out.append((f"{image.dropped_nonpositive} ≤0 hidden (log)", "$warning"))
        return out


_SGR = re.compile(r"\x1b\[([0-9;]*)m")


def ansi_rows(ansi: str) -> list[list[Run]]:
    """plotext's ANSI text as rows of runs of one foreground and weight; backgrounds dropped (the
    widget's own shows). plotext writes only SGR codes: reset, bold, and 24-bit, 256 or basic colours."""
    rows: list[list[Run]] = []
    fg: charts.RGB | None = None
    bold = False
    for line in ansi.rstrip("\n").split("\n"):
        runs: list[Run] = []
        for i, part in enumerate(_SGR.split(line)):
            if i % 2:
                fg, bold = sgr(part, fg, bold)
            elif part:
                if runs and runs[-1][1] == fg and runs[-1][2] == bold:
                    runs[-1] = (runs[-1][0] + part, fg, bold)
                else:
                    runs.append((part, fg, bold))
        rows.append(runs)
    return rows


def sgr(params: str, fg: charts.RGB | None, bold: bool) -> tuple[charts.RGB | None, bool]:
    """The foreground and weight after one SGR sequence (`params` as in ESC [ params m)."""
    codes = [int(c) if c.isdigit() else 0 for c in params.split(";")]
    i = 0
    while i < len(codes):
        c = codes[i]
        if c == 0:
            fg, bold = None, False
        elif c == 1:
            bold = True
        elif c == 22:
            bold = False
        elif c == 39:
            fg = None
        elif c in (38, 48):  # extended colour: 2;r;g;b or 5;n (a background is read and dropped)
            if i + 4 < len(codes) and codes[i + 1] == 2:
                if c == 38:
                    fg = (codes[i + 2], codes[i + 3], codes[i + 4])
                i += 4
            elif i + 2 < len(codes) and codes[i + 1] == 5:
                if c == 38:
                    fg = basic(codes[i + 2])
                i += 2
        elif 30 <= c <= 37 or 90 <= c <= 97:
            fg = basic(c - 30 if c < 90 else c - 82)
        i += 1
    return fg, bold


def basic(n: int) -> charts.RGB:
    """An 8-bit palette colour as RGB (the standard xterm values)."""
    t = RichColor.from_ansi(max(0, min(255, n))).get_truecolor()
    return (t.red, t.green, t.blue)


def run_style(fg: charts.RGB | None, bold: bool) -> Style:
    return Style(foreground=Color(*fg) if fg is not None else None, bold=True if bold else None)


def rows_content(runs: list[Run]) -> Content:
    """One row of runs as Content (spans only where a run has a colour or weight of its own)."""
    text = "".join(r[0] for r in runs)
    spans, at = [], 0
    for part, fg, bold in runs:
        if fg is not None or bold:
            spans.append(Span(at, at + len(part), run_style(fg, bold)))
        at += len(part)
    return Content(text, spans)
