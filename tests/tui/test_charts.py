"""Pure helpers: smoothing, sparklines, the chart grid, log-text cleaning. No Textual needed."""

from __future__ import annotations

import math

import plotext

from trainwatch.tui import charts
from trainwatch.tui.text import clean, is_error_line
from trainwatch.view.snapshot import RateMeter, eta_seconds


def test_ema_is_debiased_like_tensorboard() -> None:
    out = charts.ema_debiased([10.0, 10.0, 10.0], 0.9)
    assert all(abs(v - 10.0) < 1e-9 for v in out)  # no pull towards zero at the start
    out = charts.ema_debiased([0.0, 10.0], 0.5)
    assert abs(out[1] - (0.5 * 0 * 0.5 + 0.5 * 10) / (1 - 0.25)) < 1e-9


def test_smoothers_keep_nan_visible_and_undisturbed() -> None:
    vals = [1.0, 2.0, math.nan, 3.0, math.inf]
    ema = charts.ema_debiased(vals, 0.6)
    ma = charts.moving_average(vals, 2)
    assert math.isnan(ema[2]) and math.isnan(ma[2]) and math.isinf(ema[4]) and math.isinf(ma[4])
    assert ma[3] == 2.5  # the NaN did not enter the window
    assert math.isfinite(ema[3])


def test_moving_average_window() -> None:
    assert charts.moving_average([1, 2, 3, 4], 2) == [1, 1.5, 2.5, 3.5]


def test_sparkline_marks_nonfinite_and_keeps_spikes() -> None:
    vals = [1.0] * 50 + [100.0] + [1.0] * 48 + [math.nan]
    cells = charts.sparkline(vals, 10)
    assert len(cells) == 10
    assert ("█", False) in cells  # the one-point spike survives bucketing
    assert cells[-1] == (charts.NAN_MARK, True)


def _rows(img: charts.ChartImage) -> list[str]:
    return plotext.uncolorize(img.ansi).rstrip("\n").split("\n")


def test_chart_marks_nan_alert_and_eval() -> None:
    xs = [float(i) for i in range(1, 41)]
    ys = [1.0 / i for i in range(1, 41)]
    ys[30] = math.nan  # plotext itself would abort on a NaN: it must be taken out and marked
    data = charts.ChartData(xs, ys, smooth_ema=charts.ema_debiased(ys, 0.8), eval_xs=[20.0], eval_ys=[0.05],
                            alert_xs=[10.0])
    img = charts.plot_chart(data, 50, 12)
    rows = _rows(img)
    assert len(rows) == 12 and all(len(r) == 50 for r in rows)
    assert img.nan_steps == [31.0]
    assert charts.NAN_MARK in rows[1] and "▼" in rows[1]  # both on the top edge of the plot area
    assert any("◆" in r for r in rows)
    assert any("┊" in r for r in rows[2:-2])  # the alert's vertical line
    assert rows[-2].split() == ["10", "20", "30", "40"] and rows[-1].strip() == "step"  # whole steps, a label


def test_chart_uses_the_given_colours() -> None:
    data = charts.ChartData([1.0, 2.0, 3.0], [1.0, 2.0, 3.0], smooth_ema=[1.0, 1.5, 2.0])
    img = charts.plot_chart(data, 40, 8, {charts.EMA: (1, 2, 3), charts.RAW: (4, 5, 6)})
    assert "38;2;1;2;3" in img.ansi and "38;2;4;5;6" in img.ansi


def test_chart_log_scale_hides_nonpositive() -> None:
    data = charts.ChartData([1.0, 2.0, 3.0], [0.0, 10.0, 1000.0], log_y=True)
    img = charts.plot_chart(data, 40, 8)
    assert img.dropped_nonpositive == 1
    assert _rows(img)[1].strip().startswith("1k")


def test_chart_too_small_empty_or_all_nan() -> None:
    assert charts.plot_chart(charts.ChartData([], []), 40, 8).ansi == ""
    img = charts.plot_chart(charts.ChartData([1.0, 2.0], [math.nan, math.inf]), 40, 8)
    assert img.ansi == "" and img.nan_steps == [1.0, 2.0]


def test_thin_keeps_spikes_and_breaks_at_gaps() -> None:
    xs = [float(i) for i in range(1000)]
    ys = [1.0] * 1000
    ys[500] = 50.0
    ys[700] = math.nan
    tx, ty, breaks = charts.thin(xs, ys, 20)
    assert len(tx) <= 40 and 50.0 in ty
    assert breaks and tx[breaks[0]] > 700 and all(tx[i - 1] < 700 for i in breaks)


def test_fmt() -> None:
    assert charts.fmt(math.nan) == "NaN" and charts.fmt(-math.inf) == "-Inf" and charts.fmt(None) == "—"
    assert charts.fmt(5e-5) == "5.00e-05" and charts.fmt(2.34567) == "2.346"


def test_clean_drops_escapes_and_controls_keeps_markup_literal() -> None:
    line = "\x1b[2J\x1b[H[bold red]boom[/] \x1b]8;;http://x.invalid\x07link\x1b]8;;\x07 \x07bell\x1b[1A"
    out = clean(line)
    assert out == "[bold red]boom[/] link bell"
    assert clean("50%|#####| 5/10\rdone 10/10\n") == "done 10/10"


def test_error_lines_are_recognised() -> None:
    assert is_error_line("RuntimeError: CUDA error: out of memory")
    assert is_error_line('  File "train.py", line 3, in <module>')
    assert not is_error_line("{'loss': 1.2}")


def test_rate_and_eta_from_injected_clock() -> None:
    r = RateMeter()
    r.add(0.0, 10)
    assert r.rate() is None
    r.add(10.0, 30)
    assert r.rate() == 2.0
    assert eta_seconds(30, 130, 2.0) == 50.0


def test_axis_numbers_are_engineering_with_three_digits() -> None:
    assert [charts.eng(v) for v in (5032835.0, 999.7, 12345.0, 0.25, 2.5, 0.005, 5e-5, -0.0012, 0.0)] == [
        "5.03M", "1k", "12.3k", "0.25", "2.5", "5m", "50µ", "-1.2m", "0"]
    assert charts.tick_labels([1.0001, 1.00015, 1.0002]) == ["1.0001", "1.00015", "1.0002"]  # never two alike


def test_x_axis_ticks_are_whole_steps() -> None:
    data = charts.ChartData([1.0, 2.0, 3.0, 4.0], [3.0, 2.0, 2.5, 1.0])  # plotext alone wrote 1.0 2.5 4.0
    rows = _rows(charts.plot_chart(data, 40, 12))
    assert rows[-2].split() == ["1", "2", "3", "4"] and rows[-1].strip() == "step"
    big = [float(s) for s in range(0, 120001, 1000)]
    rows = _rows(charts.plot_chart(charts.ChartData(big, [1.0 + (s % 7) for s in range(len(big))]), 60, 12))
    labels = rows[-2].split()
    assert labels and all(lab.endswith("k") or lab == "0" for lab in labels) and "." not in "".join(labels)


def test_log_y_ticks_read_as_engineering_numbers() -> None:
    xs = [float(i) for i in range(1, 61)]
    ys = [5e6 * math.exp(-i / 20) + 1e3 for i in range(1, 61)]
    rows = _rows(charts.plot_chart(charts.ChartData(xs, ys, log_y=True), 60, 14))
    y_labels = [r.split("┤")[0].strip() for r in rows if "┤" in r]  # plotext alone wrote 5.032835e6
    assert len(y_labels) >= 2 and all("e" not in lab and len(lab) <= 5 for lab in y_labels), y_labels
    assert set(y_labels) <= {"300k", "500k", "1M", "2M", "5M"}, y_labels


def test_no_color_curves_differ_by_glyph() -> None:
    xs = [float(i) for i in range(1, 61)]
    ys = [1.0 / i + 0.05 * math.sin(i) for i in range(1, 61)]
    data = charts.ChartData(xs, ys, smooth_ema=charts.ema_debiased(ys, 0.8), smooth_ma=charts.moving_average(ys, 10))
    plain = "".join(_rows(charts.plot_chart(data, 60, 14, glyphs=True)))
    assert charts.GLYPHS[charts.RAW] in plain and charts.GLYPHS[charts.MA] in plain
    assert any("\u2800" < ch <= "\u28ff" for ch in plain)  # the EMA keeps braille
    coloured = "".join(_rows(charts.plot_chart(data, 60, 14)))
    assert charts.GLYPHS[charts.MA] not in coloured  # with colours, all three are fine braille lines
