"""Snapshots of the main screen at 80x24 and 120x40, healthy and with a critical alert selected.

Deterministic: a hand-fed engine, a frozen injected clock (elapsed 0:00:00, no rate, no ETA).
"""

from __future__ import annotations

from tests.tui import fixtures
from trainwatch.tui.app import TrainwatchApp


def _run(snap_compare, which: str, size: tuple[int, int]) -> None:  # type: ignore[no-untyped-def]
    assert snap_compare(TrainwatchApp(getattr(fixtures, which)(), clock=fixtures.clock), terminal_size=size)


def test_healthy_80x24(snap_compare) -> None:  # type: ignore[no-untyped-def]
    _run(snap_compare, "healthy", (80, 24))


def test_healthy_120x40(snap_compare) -> None:  # type: ignore[no-untyped-def]
    _run(snap_compare, "healthy", (120, 40))


def test_critical_selected_80x24(snap_compare) -> None:  # type: ignore[no-untyped-def]
    _run(snap_compare, "critical", (80, 24))


def test_critical_selected_120x40(snap_compare) -> None:  # type: ignore[no-untyped-def]
    _run(snap_compare, "critical", (120, 40))


def test_critical_contrast_theme_120x40(snap_compare) -> None:  # type: ignore[no-untyped-def]
    app = TrainwatchApp(fixtures.critical(), clock=fixtures.clock, theme="contrast")
    assert snap_compare(app, terminal_size=(120, 40))


def test_critical_light_theme_80x24(snap_compare) -> None:  # type: ignore[no-untyped-def]
    """Light theme: readable panel titles, panels on the theme's surface, a tinted selected card."""
    app = TrainwatchApp(fixtures.critical(), clock=fixtures.clock, theme="light")
    assert snap_compare(app, terminal_size=(80, 24))


def test_critical_light_theme_120x40(snap_compare) -> None:  # type: ignore[no-untyped-def]
    app = TrainwatchApp(fixtures.critical(), clock=fixtures.clock, theme="light")
    assert snap_compare(app, terminal_size=(120, 40))


def test_critical_contrast_theme_80x24(snap_compare) -> None:  # type: ignore[no-untyped-def]
    app = TrainwatchApp(fixtures.critical(), clock=fixtures.clock, theme="contrast")
    assert snap_compare(app, terminal_size=(80, 24))


def test_critical_selected_40x12(snap_compare) -> None:  # type: ignore[no-untyped-def]
    """Cards and chart dropped: header and badge, the alerts, the selected one's first fix whole."""
    _run(snap_compare, "critical", (40, 12))


def test_critical_selected_60x20(snap_compare) -> None:  # type: ignore[no-untyped-def]
    """No cards; the chart above the alerts and fixes."""
    _run(snap_compare, "critical", (60, 20))


def test_healthy_40x12(snap_compare) -> None:  # type: ignore[no-untyped-def]
    """No alerts and too short for a chart: the cards full width above one healthy line."""
    _run(snap_compare, "healthy", (40, 12))


def test_critical_grid_200x60(snap_compare) -> None:  # type: ignore[no-untyped-def]
    """Wide: the key metrics' small charts beside the main chart, each in its metric's colour."""
    _run(snap_compare, "critical", (200, 60))


def test_two_ranks_overlaid_120x40(snap_compare) -> None:  # type: ignore[no-untyped-def]
    """One run as rank0.log and rank1.log: the selected metric of each rank, its own colour, a legend."""
    from tests.tui.test_grid import two_ranks

    assert snap_compare(TrainwatchApp(two_ranks(), clock=fixtures.clock), terminal_size=(120, 40))


def test_two_ranks_whole_run_120x40(snap_compare) -> None:  # type: ignore[no-untyped-def]
    """'w' on a run of two ranks: both ranks over the whole run, bucketed alike."""
    from tests.tui.test_grid import two_ranks

    assert snap_compare(TrainwatchApp(two_ranks(steps=700), clock=fixtures.clock), terminal_size=(120, 40),
                        press=["w"])


def test_critical_light_theme_200x60(snap_compare) -> None:  # type: ignore[no-untyped-def]
    app = TrainwatchApp(fixtures.critical(), clock=fixtures.clock, theme="light")
    assert snap_compare(app, terminal_size=(200, 60))


def test_critical_contrast_theme_200x60(snap_compare) -> None:  # type: ignore[no-untyped-def]
    app = TrainwatchApp(fixtures.critical(), clock=fixtures.clock, theme="contrast")
    assert snap_compare(app, terminal_size=(200, 60))
