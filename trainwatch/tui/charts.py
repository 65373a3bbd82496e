"""Smoothing, sparklines and a braille line chart as plain data: no Textual, so all of it is unit-testable.

The chart is drawn here rather than with plotext because the installed plotext (6.x) replaced the
`plt.plot/plt.build` API this module would have used, and because we need per-cell layers (raw,
smoothed, eval, alert, NaN) that the widget colours from the theme. Widgets turn `ChartGrid` rows
into Rich Text.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

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


def fmt(v: float | None) -> str:
    """A compact number for cards and axes: 4 significant digits, NaN and Inf spelled out."""
    if v is None:
        return "—"
    if v != v:
        return "NaN"
    if math.isinf(v):
        return "Inf" if v > 0 else "-Inf"
    a = abs(v)
    if a != 0 and (a < 1e-3 or a >= 1e6):
        return f"{v:.2e}"
    return f"{v:.4g}"


# -- the chart ------------------------------------------------------------------------------------

# Layers, lowest first: a higher layer wins a cell.
RAW, MA, EMA, EVAL, ALERT, NAN = "raw", "ma", "ema", "eval", "alert", "nan"
_RANK = {None: -1, RAW: 0, MA: 1, EMA: 2, EVAL: 3, ALERT: 4, NAN: 5}
_BRAILLE = ((0x01, 0x08), (0x02, 0x10), (0x04, 0x20), (0x40, 0x80))  # [row][col] dot bits


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


@dataclass
class ChartGrid:
    """Rendered chart: rows of (text, layer or None) runs, plus facts for the caption."""

    rows: list[list[tuple[str, str | None]]]
    nan_steps: list[float]
    dropped_nonpositive: int = 0


def render_chart(data: ChartData, width: int, height: int) -> ChartGrid:
    """Draws the chart into width x height cells: y labels on the left, x labels on the bottom row."""
    ys_all = list(data.ys) + list(data.eval_ys) + list(data.band_lo or []) + list(data.band_hi or [])
    tf = _log10 if data.log_y else (lambda v: v)
    dropped = sum(1 for v in data.ys if math.isfinite(v) and v <= 0) if data.log_y else 0
    finite = [tf(v) for v in ys_all if math.isfinite(v) and (not data.log_y or v > 0)]
    nan_steps = [x for x, y in zip(data.xs, data.ys) if not math.isfinite(y)]
    if width < 12 or height < 3 or not data.xs:
        return ChartGrid([[("(no data yet)" if not data.xs else "", None)]], nan_steps, dropped)
    lo, hi = (min(finite), max(finite)) if finite else (0.0, 1.0)
    if hi == lo:
        lo, hi = lo - 0.5, hi + 0.5
    labels = [_label(hi, data.log_y), _label((lo + hi) / 2, data.log_y), _label(lo, data.log_y)]
    lw = max(len(s) for s in labels) + 1
    pw, ph = width - lw, height - 1  # plot area in cells
    x0, x1 = min(data.xs), max(data.xs)
    if x1 == x0:
        x1 = x0 + 1
    dots: list[list[int]] = [[0] * pw for _ in range(ph)]
    layer: list[list[str | None]] = [[None] * pw for _ in range(ph)]
    chars: list[list[str | None]] = [[None] * pw for _ in range(ph)]
    W, H = pw * 2, ph * 4  # braille resolution

    def px(x: float) -> int:
        return min(W - 1, max(0, int((x - x0) / (x1 - x0) * (W - 1) + 0.5)))

    def py(y: float) -> int | None:
        if not math.isfinite(y) or (data.log_y and y <= 0):
            return None
        t = tf(y)
        return min(H - 1, max(0, int((hi - t) / (hi - lo) * (H - 1) + 0.5)))

    def dot(cx: int, cy: int, name: str) -> None:
        r, c = cy // 4, cx // 2
        if _RANK[name] < _RANK[layer[r][c]] or chars[r][c] is not None:
            return
        if _RANK[name] > _RANK[layer[r][c]]:
            dots[r][c] = 0
        dots[r][c] |= _BRAILLE[cy % 4][cx % 2]
        layer[r][c] = name

    def curve(xs: Sequence[float], ys: Sequence[float], name: str) -> None:
        prev: tuple[int, int] | None = None
        for x, y in zip(xs, ys):
            cy = py(y)
            if cy is None:
                prev = None
                continue
            cx = px(x)
            if prev is not None:
                for ix, iy in _segment(prev[0], prev[1], cx, cy):
                    dot(ix, iy, name)
            else:
                dot(cx, cy, name)
            prev = (cx, cy)

    def mark(x: float, r: int, ch: str, name: str) -> None:
        c = px(x) // 2
        if _RANK[name] >= _RANK[layer[r][c]]:
            chars[r][c] = ch
            layer[r][c] = name

    if data.band_lo is not None and data.band_hi is not None:
        curve(data.xs, data.band_lo, RAW)
        curve(data.xs, data.band_hi, RAW)
    curve(data.xs, data.ys, RAW)
    if data.smooth_ma is not None:
        curve(data.xs, data.smooth_ma, MA)
    if data.smooth_ema is not None:
        curve(data.xs, data.smooth_ema, EMA)
    for ax in data.alert_xs:
        if x0 <= ax <= x1:
            for r in range(ph):
                if layer[r][px(ax) // 2] is None:
                    mark(ax, r, "│", ALERT)
            mark(ax, 0, "▼", ALERT)
    for ex, ey in zip(data.eval_xs, data.eval_ys):
        cy = py(ey)
        if cy is not None and x0 <= ex <= x1:
            mark(ex, cy // 4, "◆", EVAL)
    for nx in nan_steps:
        mark(nx, 0, NAN_MARK, NAN)

    rows: list[list[tuple[str, str | None]]] = []
    for r in range(ph):
        label = labels[0] if r == 0 else labels[2] if r == ph - 1 else labels[1] if r == ph // 2 else ""
        runs: list[tuple[str, str | None]] = [(label.rjust(lw - 1) + "┤", None)]
        for c in range(pw):
            ch = chars[r][c] or (chr(0x2800 + dots[r][c]) if dots[r][c] else " ")
            _append(runs, ch, layer[r][c])
        rows.append(runs)
    left, right = f"{x0:g}", f"{x1:g}"
    axis = " " * lw + left + " " * max(1, pw - len(left) - len(right)) + right
    rows.append([(axis[:width], None)])
    return ChartGrid(rows, nan_steps, dropped)


def _append(runs: list[tuple[str, str | None]], ch: str, name: str | None) -> None:
    if runs and runs[-1][1] == name:
        runs[-1] = (runs[-1][0] + ch, name)
    else:
        runs.append((ch, name))


def _segment(x0: int, y0: int, x1: int, y1: int) -> list[tuple[int, int]]:
    """Bresenham's line, both ends included."""
    pts = []
    dx, dy = abs(x1 - x0), -abs(y1 - y0)
    sx, sy = (1 if x0 < x1 else -1), (1 if y0 < y1 else -1)
    err = dx + dy
    while True:
        pts.append((x0, y0))
        if x0 == x1 and y0 == y1:
            return pts
        e2 = 2 * err
        if e2 >= dy:
            err += dy
            x0 += sx
        if e2 <= dx:
            err += dx
            y0 += sy


def _log10(v: float) -> float:
    return math.log10(v)


def _label(v: float, log_y: bool) -> str:
    return fmt(10 ** v if log_y else v)
