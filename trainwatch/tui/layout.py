"""Which panels a terminal of a given size gets: a few screen classes that app.tcss turns into layout.

When space runs out panels go in the reverse of their priority: header and badge, the selected
alert and its fixes, the main chart, the metric cards, the log, the GPUs. The widths and heights
below are where each step happens; app.tcss says what each class does. No cell arithmetic here:
Textual's own layout sizes what is left.
"""

from __future__ import annotations

from typing import Any

from textual.content import Content
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Static

MIN_WIDTH, MIN_HEIGHT = 36, 10  # below this nothing useful fits: the body becomes one message


def classes_for(width: int, height: int) -> dict[str, bool]:
    """Screen class -> on/off for a terminal of width x height cells."""
    return {
        "-wide": width >= 160 and height >= 30,  # room for the small charts beside the main chart
        "-narrow": width < 100,  # the cards' sidebar shrinks first, the alert list keeps its width
        "-no-cards": width < 72,  # then the cards go: the chart and the alert need the width
        "-stacked": width < 56,  # alert list above the evidence and fixes, each full width
        "-short": height < 30,  # shorter log; the alerts area keeps room for a title and a fix
        "-no-chart": height < 20,  # a chart in a few rows says nothing: the alert and its fix get them
        "-tiny": height < 14,  # the key line goes too (? still opens help); the fix needs the rows
        "-too-small": width < MIN_WIDTH or height < MIN_HEIGHT,
    }


class TooSmall(Static):
    """Shown instead of the body below the minimum size; the header (with its badge) stays."""

    DEFAULT_CSS = """
    TooSmall { display: none; height: 1fr; content-align: center middle; text-align: center; }
    """

    def say(self, width: int, height: int) -> None:
        self.update(Content.assemble((f"terminal {width}x{height} is too small", "bold"),
                                     f"\ntrainwatch needs {MIN_WIDTH}x{MIN_HEIGHT}"))


def apply(screen: Screen[Any], width: int, height: int) -> None:
    """Sets the classes for this size, and moves focus off a panel the new layout hides."""
    for name, on in classes_for(width, height).items():
        screen.set_class(on, name)
    notices = screen.query(TooSmall)
    if notices:
        notice = notices.first()
    else:
        notice = TooSmall(id="too-small")
        body = screen.query("#body")
        screen.mount(notice, before=body.first() if body else None)
    notice.say(width, height)
    screen.app.call_after_refresh(_refocus, screen)


def calm(screen: Screen[Any], no_alerts: bool) -> None:
    """No alert at all: the alerts area is one line and the chart takes its rows (see app.tcss)."""
    if screen.has_class("-calm") != no_alerts:
        screen.set_class(no_alerts, "-calm")
        screen.app.call_after_refresh(_refocus, screen)


MIN_CHART_POINTS = 3
"""Fewer finite points than this draw no curve worth the rows: see `sparse`."""


def sparse(screen: Screen[Any], on: bool) -> None:
    """Too few points to chart while alerts stand (a crash at startup, say): the chart gives its rows to
    the alert's evidence, a traceback, and its fixes (see app.tcss)."""
    if screen.has_class("-sparse") != on:
        screen.set_class(on, "-sparse")
        screen.app.call_after_refresh(_refocus, screen)


def too_few_points(points: tuple[tuple[int, float], ...] | None) -> bool:
    return sum(1 for _, v in points or () if v == v and abs(v) != float("inf")) < MIN_CHART_POINTS


def _refocus(screen: Screen[Any]) -> None:
    """A hidden panel keeps the focus in Textual: hand it to the first panel still on screen."""
    focused = screen.focused
    chain = screen.focus_chain
    if chain and (focused is None or focused not in chain):
        first: Widget = chain[0]
        first.focus()
