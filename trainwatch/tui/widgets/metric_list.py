"""Metric cards: name, last value, health word, sparkline with NaN marks, min/max and non-finite count."""

from __future__ import annotations

from textual.content import Content
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from trainwatch.tui.charts import NAN_MARK, fmt, sparkline
from trainwatch.tui.view import MetricView
from trainwatch.tui.widgets.styles import severity_style, severity_word


def key_id(key: tuple[str, str]) -> str:
    return f"{key[0]}\x00{key[1]}"


def id_key(option_id: str) -> tuple[str, str]:
    source, _, name = option_id.partition("\x00")
    return (source, name)


class MetricList(OptionList):
    """One option per series; highlighting one selects it for the main chart."""

    DEFAULT_CSS = """
    MetricList { width: 100%; height: 1fr; border: round $panel; }
    MetricList:focus { border: round $primary; }
    """

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.border_title = "metrics"
        self._shown: tuple[MetricView, ...] = ()
        self._width = 0
        self.filter = ""
        self._all: list[MetricView] = []

    def on_resize(self) -> None:
        if self._all:
            self.call_after_refresh(self.set_metrics, self._all)

    def set_metrics(self, metrics: list[MetricView]) -> None:
        self._all = metrics
        f = self.filter.lower()
        shown = tuple(m for m in metrics if not f or f in m.label.lower())
        width = max(16, (self.scrollable_content_region.width or 30) - 2)
        if shown == self._shown and width == self._width:
            return
        keep = self.highlighted_option.id if self.highlighted_option is not None else None
        if [m.key for m in shown] == [m.key for m in self._shown] and width == self._width:
            for m in shown:
                self.replace_option_prompt(key_id(m.key), self._card(m, width))
        else:
            self.clear_options()
            self.add_options([Option(self._card(m, width), id=key_id(m.key)) for m in shown])
            if keep is not None and any(key_id(m.key) == keep for m in shown):
                self.highlighted = self.get_option_index(keep)
            elif shown:
                self.highlighted = 0
        self._shown, self._width = shown, width
        hidden = len(metrics) - len(shown)
        self.border_title = f"metrics /{self.filter}" if self.filter else "metrics"
        self.border_subtitle = f"{hidden} hidden" if hidden else f"{len(shown)}"

    @property
    def selected_key(self) -> tuple[str, str] | None:
        opt = self.highlighted_option
        return id_key(opt.id) if opt is not None and opt.id else None

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
        spark = Content.assemble("  ", *[(ch, "$error bold" if bad else "$primary") for ch, bad in cells])
        tail: list[str | tuple[str, str]] = [f"  min {fmt(m.minimum)} max {fmt(m.maximum)}"]
        if m.nan:
            tail += [" ", (f"NaN{NAN_MARK}{m.nan}", "$error bold")]
        if m.inf:
            tail += [" ", (f"Inf{NAN_MARK}{m.inf}", "$error bold")]
        return Content("\n").join([line1, spark, Content.assemble(*tail)])
