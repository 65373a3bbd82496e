"""Metric cards: name, last value, health word, sparkline with NaN marks, min/max and non-finite count."""

from __future__ import annotations

import math

from textual.binding import Binding
from textual.content import Content
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from trainwatch.tui.charts import NAN_MARK, fmt, sparkline
from trainwatch.tui.themes import metric_var
from trainwatch.tui.widgets.styles import retitle, severity_style, severity_word
from trainwatch.view.snapshot import MetricView


def key_id(key: tuple[str, str]) -> str:
    return f"{key[0]}\x00{key[1]}"


def id_key(option_id: str) -> tuple[str, str]:
    source, _, name = option_id.partition("\x00")
    return (source, name)


def runs(cells: list[tuple[str, bool]], style: str, bad_style: str) -> list[tuple[str, str]]:
    """Sparkline cells as runs of one style: a span per run, not per cell, so a card that changes on
    every refresh costs a few segments to draw rather than one per column."""
    out: list[tuple[str, str]] = []
    for ch, bad in cells:
        st = bad_style if bad else style
        if out and out[-1][1] == st:
            out[-1] = (out[-1][0] + ch, st)
        else:
            out.append((ch, st))
    return out


class MetricList(OptionList):
    """One option per series; highlighting one selects it for the main chart."""
    # OptionList binds enter (hidden) itself; shown here, so the footer says what enter does on a card or alert
    BINDINGS = [Binding("enter", "select", "open")]

    DEFAULT_CSS = """
    MetricList { width: 100%; height: 1fr; }
    /* The selected card is tinted, not filled: its sparkline keeps the metric's colour and the
       severity word its own, both still readable on the tint (3:1 or more in every bundled theme). */
    MetricList > .option-list--option-highlighted {
        color: $foreground; background: $primary 10%; text-style: none;
    }
    MetricList:focus > .option-list--option-highlighted {
        color: $foreground; background: $primary 20%; text-style: none;
    }
    """

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.border_title = "metrics"
        self._shown: tuple[MetricView, ...] = ()
        self._width = 0
        self.filter = ""
        self._all: list[MetricView] = []
        self._cards: dict[tuple[str, str], tuple[MetricView, int, Content]] = {}

    def on_resize(self) -> None:
        if self._all:
            self.call_after_refresh(self.set_metrics, self._all)

    def set_metrics(self, metrics: list[MetricView]) -> None:
        self._all = metrics
        f = self.filter.lower()
        shown = tuple(m for m in metrics if not f or f in m.label.lower())
        hidden = len(metrics) - len(shown)
        # Titled before the early return: "gr" and "gra" may show the same cards, but the title follows the typing.
        retitle(self, f"metrics /{self.filter}" if self.filter else "metrics",
                f"{hidden} hidden" if hidden else f"{len(shown)}")
        width = max(16, (self.scrollable_content_region.width or 30) - 2)
        same_width = width == self._width
        if same_width and len(shown) == len(self._shown) and all(a is b for a, b in zip(shown, self._shown)):
            return  # the snapshot reuses a MetricView object while its series is unchanged
        keep = self.highlighted_option.id if self.highlighted_option is not None else None
        if same_width and [m.key for m in shown] == [m.key for m in self._shown]:
            for i, (m, old) in enumerate(zip(shown, self._shown)):
                if m is not old:  # repaints are batched by Textual: one per tick, not one per card
                    self.replace_option_prompt_at_index(i, self.card(m, width))
        else:
            self.clear_options()
            self.add_options([Option(self.card(m, width), id=key_id(m.key)) for m in shown])
            if keep is not None and any(key_id(m.key) == keep for m in shown):
                self.highlighted = self.get_option_index(keep)
            elif shown:
                self.highlighted = 0
        self._shown, self._width = shown, width

    @property
    def selected_key(self) -> tuple[str, str] | None:
        opt = self.highlighted_option
        return id_key(opt.id) if opt is not None and opt.id else None

    def card(self, m: MetricView, width: int) -> Content:
        """A card, built once per MetricView and width (a filter change re-adds cards without rebuilding)."""
        hit = self._cards.get(m.key)
        if hit is not None and hit[0] is m and hit[1] == width:
            return hit[2]
        content = self._card(m, width)
        self._cards[m.key] = (m, width, content)
        return content

    @staticmethod
    def _card(m: MetricView, width: int) -> Content:
        sev = severity_style(m.severity)
        word = severity_word(m.severity)
        value = fmt(m.last)
        name_w = max(4, width - len(value) - len(word) - 4)
        label = m.label if len(m.label) <= name_w else m.label[: name_w - 1] + "…"
        line1 = Content.assemble(("● ", sev), (label.ljust(name_w), "bold"), " ",
                                 (value, "$error bold" if value in ("NaN", "Inf", "-Inf") else "bold"),
                                 " ", (word, sev))
        cells = sparkline(m.spark, max(4, width - 2))
        hue = f"${metric_var(m.name)}"  # the metric's own colour, as in its charts
        spark = Content.assemble("  ", *runs(cells, hue, "$error bold"))
        bad = [f"NaN{NAN_MARK}{m.nan}"] * bool(m.nan) + [f"Inf{NAN_MARK}{m.inf}"] * bool(m.inf)
        extra = sum(len(b) + 1 for b in bad)
        delta = ""
        if m.baseline is not None and m.last is not None and math.isfinite(m.last):
            delta = f" Δ{m.last - m.baseline:+.3g}"  # the live value less the baseline's at the same step
        spans = [f"  min {fmt(m.minimum)} max {fmt(m.maximum)}"]
        spans += [f"  {fmt(m.minimum, digits)}‥{fmt(m.maximum, digits)}" for digits in (4, 3, 2)]
        # narrow cards (80 columns): fewer digits, never a cut-off number; the baseline's difference
        # (asked for) before the range when both do not fit
        span = next((sp for sp in spans if len(sp) + extra + len(delta) <= width), "")
        if not span and delta:
            span, delta = " ", delta if len(delta) + extra + 1 <= width else ""
        tail: list[str | tuple[str, str]] = [span]
        if delta:
            tail.append((delta, "$text-muted bold"))
        for b in bad:
            tail += [" ", (b, "$error bold")]
        return Content("\n").join([line1, spark, Content.assemble(*tail)])
