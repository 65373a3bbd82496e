"""Smoothing, sparklines and the main chart (drawn by plotext): no Textual, so all of it is unit-testable.

The chart uses plotext 6's figure API (signal/line/build). plotext's kernel cannot take NaN or Inf
(it aborts the process), nor values <= 0 on a log axis, so those points are taken out here: a NaN/Inf
is drawn as a mark on the top edge and the line is broken there. No text from logs reaches plotext
(no titles or labels): only numbers, so its ANSI output is safe to parse into Rich Text.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import plotext

SPARK = "▁▂▃▄▅▆▇█"
NAN_MARK = "×"
# (EMA weight, moving-average window) per smoothing level; `s` steps down, `S` steps up.
SMOOTHING_LEVELS: tuple[tuple[float, int], ...] = (
    (0.0, 1), (0.6, 5), (0.8, 10), (0.9, 20), (0.95, 50), (0.99, 100))
DEFAULT_SMOOTHING = 2


def ema_debiased(values: Sequence[float], weight: float) -> list[float]:
    """TensorBoard's smoother: EMA divided by (1 - weight**n) so the start is not pulled to zero.

    Non-finite inputs pass through unchanged and do not disturb the average, so a NaN is never
    smoothed away.
    """
    out: list[float] = []
    last = 0.0
    n = 0
    for v in values:
        if not math.isfinite(v):
            out.append(v)
            continue
        last = last * weight + (1.0 - weight) * v
        n += 1
        debias = 1.0 - weight ** n if weight > 0 else 1.0
        out.append(last / debias)
    return out


def moving_average(values: Sequence[float], window: int) -> list[float]:
    """Trailing mean over the last `window` finite values; a non-finite input stays as it is."""
    window = max(1, window)
    out: list[float] = []
    buf: list[float] = []
    total = 0.0
    for v in values:
        if not math.isfinite(v):
            out.append(v)
            continue
        buf.append(v)
        total += v
        if len(buf) > window:
            total -= buf.pop(0)
        out.append(total / len(buf))
    return out


def sparkline(values: Sequence[float], width: int) -> list[tuple[str, bool]]:
    """Up to `width` cells of (char, is_nonfinite); each cell keeps its bucket's max so spikes show."""
    if width <= 0 or not values:
        return []
    buckets = _buckets(values, width)
    finite = [v for v in values if math.isfinite(v)]
    lo, hi = (min(finite), max(finite)) if finite else (0.0, 0.0)
    span = hi - lo
    cells: list[tuple[str, bool]] = []
    for bucket in buckets:
        if any(not math.isfinite(v) for v in bucket):
            cells.append((NAN_MARK, True))
            continue
        top = max(bucket)
        idx = 0 if span == 0 else int((top - lo) / span * (len(SPARK) - 1) + 0.5)
        cells.append((SPARK[max(0, min(len(SPARK) - 1, idx))], False))
    return cells


def _buckets(values: Sequence[float], width: int) -> list[list[float]]:
    n = len(values)
    if n <= width:
        return [[v] for v in values]
    return [list(values[i * n // width:(i + 1) * n // width]) for i in range(width)]


def fmt(v: float | None, digits: int = 4) -> str:
    """A compact number for cards and axes: `digits` significant digits, NaN and Inf spelled out."""
    if v is None:
        return "—"
    if v != v:
        return "NaN"
    if math.isinf(v):
        return "Inf" if v > 0 else "-Inf"
    a = abs(v)
    if a != 0 and (a < 1e-3 or a >= 1e6):
        return f"{v:.{max(digits - 2, 1)}e}"
    return f"{v:.{digits}g}"


_UP = ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))
_DOWN = ((1e-3, "m"), (1e-6, "µ"), (1e-9, "n"), (1e-12, "p"))


def eng(v: float, digits: int = 3) -> str:
    """An axis number: `digits` significant digits and an engineering suffix (5.03M, 120k, 50µ, 0.25)."""
    if not math.isfinite(v):
        return fmt(v)
    v = float(f"{v:.{digits}g}")  # round first, so 999.7 becomes 1k, not 1e+03
    a = abs(v)
    if a == 0:
        return "0"
    for scale, suffix in _UP:
        if a >= scale:
            return f"{v / scale:.{digits}g}{suffix}"
    if a >= 0.01:
        return f"{v:.{digits}g}"
    for scale, suffix in _DOWN:
        if a >= scale:
            return f"{v / scale:.{digits}g}{suffix}"
    return f"{v:.{max(digits - 1, 1)}e}"


def nice_ticks(lo: float, hi: float, count: int, *, integer: bool = False) -> list[float]:
    """About `count` round positions (1, 2 or 5 times a power of ten) inside [lo, hi]."""
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
        return [lo] if math.isfinite(lo) else []
    raw = (hi - lo) / max(1, count - 1)
    mag = 10.0 ** math.floor(math.log10(raw))
    steps = [m * mag for m in (0.5, 1, 2, 5, 10)]
    step = min(steps, key=lambda st: abs(math.log(st / raw)))  # the round step nearest the wanted one
    while True:
        if integer:
            step = max(1.0, float(round(step)))
        first = math.ceil(lo / step - 1e-9) * step
        ticks: list[float] = []
        t = first
        while t <= hi + step * 1e-9 and len(ticks) < 50:
            ticks.append(0.0 if abs(t) < step * 1e-9 else t)
            t = first + step * len(ticks)
        if len(ticks) >= 2 or (integer and step == 1.0):
            return ticks
        mantissa = round(step / 10.0 ** math.floor(math.log10(step)))
        step /= 2.5 if mantissa == 5 else 2  # too few: the next smaller round step (5 -> 2 -> 1 -> 0.5)


def tick_labels(ticks: Sequence[float], to_value: Callable[[float], float] = float) -> list[str]:
    """Engineering labels for tick positions, with more digits only where 3 would repeat a label."""
    labels: list[str] = []
    for digits in (3, 4, 5, 6):
        labels = [eng(to_value(t), digits) for t in ticks]
        if len(set(labels)) == len(labels):
            break
    return labels


def log_ticks(lo_exp: float, hi_exp: float, count: int) -> list[float]:
    """Positions (as powers of ten) for a log axis: whole decades, else 1-2-5 steps, else round values."""
    decades = [float(k) for k in range(math.ceil(lo_exp - 1e-9), math.floor(hi_exp + 1e-9) + 1)]
    if len(decades) > count:
        every = math.ceil(len(decades) / count)
        decades = decades[::every]
    if len(decades) >= 2:
        return decades
    steps = sorted(k + math.log10(m) for k in range(math.floor(lo_exp) - 1, math.ceil(hi_exp) + 1)
                   for m in (1, 2, 5) if lo_exp - 1e-9 <= k + math.log10(m) <= hi_exp + 1e-9)
    if len(steps) >= 2:
        return steps[:: math.ceil(len(steps) / count)]
    return [math.log10(t) for t in nice_ticks(10 ** lo_exp, 10 ** hi_exp, count) if t > 0]


# -- the chart ------------------------------------------------------------------------------------

# Layers, lowest first (drawn in this order, so a later one wins a cell).
RAW, MA, EMA, EVAL, ALERT, NAN, AXIS = "raw", "ma", "ema", "eval", "alert", "nan", "axis"
BASELINE = "baseline"
RGB = tuple[int, int, int]
DEFAULT_COLORS: dict[str, RGB] = {RAW: (110, 110, 110), MA: (60, 120, 170), EMA: (1, 120, 212),
                                  EVAL: (254, 166, 43), ALERT: (254, 166, 43), NAN: (185, 60, 91),
                                  AXIS: (130, 130, 130), BASELINE: (150, 125, 185)}
_LOCK = threading.Lock()  # plotext draws on one module-level figure


@dataclass
class ChartData:
    """What to draw: the raw curve, smoothed curves, eval points, alert steps."""

    xs: list[float]
    ys: list[float]
    smooth_ema: list[float] | None = None
    smooth_ma: list[float] | None = None
    eval_xs: list[float] = field(default_factory=list)
    eval_ys: list[float] = field(default_factory=list)
    alert_xs: list[float] = field(default_factory=list)
    log_y: bool = False
    band_lo: list[float] | None = None  # whole-run view: each bucket's min and max drawn faint
    band_hi: list[float] | None = None
    # Other ranks of the run, each its own curve: (label, xs, ys), drawn in layer overlay_layer(i).
    overlays: list[tuple[str, list[float], list[float]]] = field(default_factory=list)
    # A finished run of the same metric (`tail --baseline`): (label, xs, ys), drawn first, in its own colour.
    baseline: tuple[str, list[float], list[float]] | None = None


@dataclass
class ChartImage:
    """plotext's output (text with ANSI colours; empty when there is nothing to draw) and caption facts."""

    ansi: str
    nan_steps: list[float]
    dropped_nonpositive: int = 0


def _usable(v: float, log_y: bool) -> bool:
    return math.isfinite(v) and (not log_y or v > 0)


def thin(xs: Sequence[float], ys: Sequence[float], cols: int, log_y: bool = False
         ) -> tuple[list[float], list[float], list[int]]:
    """Drawable points, at most about 2 per column (each column keeps its min and max, so spikes stay).

    Returns xs, ys and the indices (into the result) where the line must break because unusable
    points (NaN, Inf, <= 0 on a log axis) were left out just before them.
    """
    pts: list[tuple[float, float, bool]] = []  # x, y, break before
    gap = False
    for x, y in zip(xs, ys):
        if _usable(y, log_y):
            pts.append((x, y, gap and bool(pts)))
            gap = False
        else:
            gap = True
    cols = max(1, cols)
    if len(pts) > 2 * cols:
        x0, x1 = pts[0][0], pts[-1][0]
        span = (x1 - x0) or 1.0
        out: list[tuple[float, float, bool]] = []
        bucket: list[tuple[float, float, bool]] = []
        current = 0
        for p in pts:
            b = min(cols - 1, int((p[0] - x0) / span * cols))
            if b != current and bucket:
                out.extend(_extremes(bucket))
                bucket = []
            current = b
            bucket.append(p)
        if bucket:
            out.extend(_extremes(bucket))
        pts = out
    return [p[0] for p in pts], [p[1] for p in pts], [i for i, p in enumerate(pts) if p[2]]


def _extremes(bucket: list[tuple[float, float, bool]]) -> list[tuple[float, float, bool]]:
    if len(bucket) <= 2:
        return bucket
    brk = any(p[2] for p in bucket)
    lo = min(bucket, key=lambda p: p[1])
    hi = max(bucket, key=lambda p: p[1])
    first, second = (lo, hi) if lo[0] <= hi[0] else (hi, lo)
    return [(first[0], first[1], brk), (second[0], second[1], False)] if first is not second else [
        (first[0], first[1], brk)]


# Per-rank overlays: layer names, default colours and the glyphs that tell them apart under NO_COLOR.
OVERLAY_COLORS: tuple[RGB, ...] = ((254, 166, 43), (76, 175, 80), (171, 71, 188), (0, 172, 193))
OVERLAY_GLYPHS = ("o", "*", "^", "#", "%", "@")


def overlay_layer(i: int) -> str:
    return f"overlay{i}"


def overlay_glyph(i: int) -> str:
    return OVERLAY_GLYPHS[i % len(OVERLAY_GLYPHS)]


# Curves told apart without colour (NO_COLOR): each layer its own glyph, the legend shows the same.
GLYPHS: dict[str, str] = {RAW: "·", MA: "+", EMA: "braille"}
LEGEND_GLYPH: dict[str, str] = {RAW: "⣿", MA: "⣿", EMA: "⣿"}
LEGEND_GLYPH_PLAIN: dict[str, str] = {RAW: "·", MA: "+", EMA: "⣿"}
X_LABEL = "step"


def _log10(v: float) -> float:
    return math.log10(v) if math.isfinite(v) and v > 0 else math.nan


def plot_chart(data: ChartData, width: int, height: int, colors: dict[str, RGB] | None = None, *,
               glyphs: bool = False) -> ChartImage:
    """Draws the chart with plotext into width x height cells (axes, tick labels and the x label included).

    Ticks are ours: whole steps on x, 3 significant digits with engineering suffixes on y. A log y
    axis is drawn as log10 of the values on a linear axis (plotext's own log axis cannot take
    explicit ticks). With `glyphs`, the raw, moving-average and EMA curves use different characters.
    """
    colors = {**DEFAULT_COLORS, **{overlay_layer(i): OVERLAY_COLORS[i % len(OVERLAY_COLORS)]
                                   for i in range(len(data.overlays))}, **(colors or {})}
    log_y = data.log_y
    nan_steps = [x for x, y in zip(data.xs, data.ys) if not math.isfinite(y)]
    dropped = sum(1 for v in data.ys if math.isfinite(v) and v <= 0) if log_y else 0
    ty: Callable[[float], float] = _log10 if log_y else float
    ys = [ty(v) for v in data.ys]
    base = [data.baseline] if data.baseline is not None else []
    more = (*data.eval_ys, *(data.band_lo or ()), *(data.band_hi or ()),
            *(y for o in [*data.overlays, *base] for y in o[2]))
    finite_y = [v for v in (*ys, *(ty(v) for v in more)) if math.isfinite(v)]
    if width < 16 or height < 5 or not data.xs or not finite_y:
        return ChartImage("", nan_steps, dropped)
    lo, hi = min(finite_y), max(finite_y)
    if hi == lo:
        lo, hi = (lo - math.log10(2), hi + math.log10(2)) if log_y else (lo - 0.5, hi + 0.5)
    all_xs = [*data.xs, *(x for o in [*data.overlays, *base] for x in o[1])]  # a rank may be ahead or behind
    x0, x1 = min(all_xs), max(all_xs)
    if x1 == x0:
        x0, x1 = x0 - 0.5, x1 + 0.5
    x_label = height >= 10  # a row for "step" where the chart has rows to spare
    rows = height - 2 - int(x_label)  # the plot area's rows: the frame and tick labels take the rest
    y_ticks = log_ticks(lo, hi, max(2, rows // 2)) if log_y else nice_ticks(lo, hi, max(3, min(7, rows // 2 + 1)))
    y_labels = tick_labels(y_ticks, (lambda t: 10 ** t) if log_y else float)
    x_ticks = nice_ticks(math.ceil(x0), math.floor(x1), max(2, min(8, width // 10)), integer=True) or [x0]
    x_labels = tick_labels(x_ticks)
    cols = max(8, width - max((len(t) for t in y_labels), default=4) - 3)  # the plot area's columns
    with _LOCK:
        fig = plotext.figure
        plotext.terminal.limit(False, False)
        fig.clear()
        fig.plot_size(width, height)
        fig.canvas("default")
        fig.theme("colorless")
        fig.legend(False)
        axis = plotext.pixel(colors[AXIS])
        fig.axes(pixel=axis)
        fig.ruler("x").pixel(axis)
        fig.ruler("y").pixel(axis)

        def curve(values: Sequence[float], layer: str, xs: Sequence[float] | None = None,
                  glyph: str | None = None) -> None:
            xs2, ys2, breaks = thin(data.xs if xs is None else xs, [ty(v) for v in values], cols)
            if not xs2:
                return
            symbol = (glyph or GLYPHS.get(layer, "braille")) if glyphs else "braille"
            sig = fig.signal(xs2, ys2, marker=plotext.marker(symbol, plotext.pixel(colors[layer])))
            if len(xs2) > 1:
                sig.lines()
                for i in breaks:
                    sig.line(i, False)
            fig.draw(sig)

        def marks(xs: Sequence[float], ys: Sequence[float], symbol: str, layer: str) -> None:
            if xs:
                fig.draw(fig.signal(list(xs), list(ys), marker=plotext.marker(symbol, plotext.pixel(colors[layer]))))

        if data.baseline is not None:  # under everything of the live run
            curve(data.baseline[2], BASELINE, data.baseline[1], "∘")
        if data.band_lo is not None and data.band_hi is not None:
            curve(data.band_lo, RAW)
            curve(data.band_hi, RAW)
        curve(data.ys, RAW)
        if data.smooth_ma is not None:
            curve(data.smooth_ma, MA)
        for i, (_, oxs, oys) in enumerate(data.overlays):  # under the selected rank's own curve
            curve(oys, overlay_layer(i), oxs, overlay_glyph(i))
        if data.smooth_ema is not None:
            curve(data.smooth_ema, EMA)
        alerts = sorted({a for a in data.alert_xs if x0 <= a <= x1})
        for a in alerts:
            fig.line(a, orientation="vertical", pixel=plotext.pixel(colors[ALERT]), style="dotted")
        marks(alerts, [hi] * len(alerts), "▼", ALERT)
        evals = [(x, ty(y)) for x, y in zip(data.eval_xs, data.eval_ys) if x0 <= x <= x1]
        evals = [e for e in evals if math.isfinite(e[1])]
        marks([e[0] for e in evals], [e[1] for e in evals], "◆", EVAL)
        marks(nan_steps, [hi] * len(nan_steps), NAN_MARK, NAN)
        fig.ruler("x").lim(x0, x1)
        fig.ruler("y").lim(lo, hi)
        fig.ruler("x").ticks(x_ticks, x_labels)
        fig.ruler("y").ticks(y_ticks, y_labels)
        if x_label:
            fig.label(X_LABEL, "x")
        ansi = fig.build().string()
        fig.clear()
    return ChartImage(ansi, nan_steps, dropped)
