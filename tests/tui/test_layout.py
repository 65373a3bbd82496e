"""Pilot tests of the layout on small terminals: what each size keeps, in the issue's priority order."""

from __future__ import annotations

from textual.geometry import Region
from textual.widget import Widget

from tests.tui import fixtures
from tests.tui.conftest import screen_text
from trainwatch.tui.app import TrainwatchApp
from trainwatch.tui.layout import MIN_HEIGHT, MIN_WIDTH
from trainwatch.tui.widgets.alerts import AlertDetail, AlertList
from trainwatch.tui.widgets.metric_list import MetricList

FIRST_FIX = fixtures.FIXES_LOSS[0]


def app_for(model) -> TrainwatchApp:  # type: ignore[no-untyped-def]
    return TrainwatchApp(model, clock=fixtures.clock)


def visible_text(widget: Widget) -> str:
    """The words a widget shows on screen now, border and wrapping removed (runs of spaces folded)."""
    rows = widget.render_lines(Region(0, 0, widget.outer_size.width, widget.outer_size.height))
    text = " ".join(strip.text.strip(" │╭╮╰╯─") for strip in rows)
    return " ".join(text.split())


def shown(app: TrainwatchApp, selector: str) -> bool:
    """On screen: displayed itself and every container above it displayed (a non-empty region)."""
    w = app.query_one(selector)
    return w.region.area > 0 and all(n.display for n in w.ancestors_with_self if isinstance(n, Widget))


async def test_80x24_alert_and_first_fix_readable_and_the_sidebar_gave_way_first() -> None:
    app = app_for(fixtures.critical())
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.pause()
        cards, alerts, detail = app.query_one("#left"), app.query_one(AlertList), app.query_one(AlertDetail)
        assert shown(app, "#chart") and shown(app, "#metrics")
        assert cards.region.width < alerts.region.width + detail.region.width
        assert cards.region.width <= 22 and alerts.region.width >= 26  # the cards shrank, the list did not
        words = visible_text(detail)
        assert "CRIT Loss exploded" in words and "what to try" in words and FIRST_FIX in words
        rows = [str(alerts.get_option_at_index(i).prompt).split("\n") for i in range(alerts.option_count)]
        assert [r[1:] for r in rows] == [["  Loss exploded"], ["  Gradient norm spike"]]  # whole titles


async def test_40x12_drops_cards_and_chart_and_keeps_badge_alert_and_fix() -> None:
    app = app_for(fixtures.critical())
    async with app.run_test(size=(40, 12)) as pilot:
        await pilot.pause()
        await pilot.pause()
        assert not shown(app, "#metrics") and not shown(app, "#chart")
        assert shown(app, "#alerts") and shown(app, "#detail")
        assert "CRITICAL" in screen_text(app)  # the badge (the alert says CRIT)
        words = visible_text(app.query_one(AlertDetail))
        assert "CRIT Loss exploded" in words and FIRST_FIX in words
        assert "Gradient norm spike" in visible_text(app.query_one(AlertList))
        assert "no finite points" not in screen_text(app)
        assert app.focused is app.query_one(AlertList)  # the hidden cards gave the focus away


async def test_resizing_moves_between_layouts_and_back() -> None:
    app = app_for(fixtures.critical())
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        assert app.focused is app.query_one(MetricList) and shown(app, "#metrics")
        await pilot.resize_terminal(60, 20)
        await pilot.pause()
        await pilot.pause()
        assert not shown(app, "#metrics") and shown(app, "#chart") and app.focused is not None
        assert shown(app, f"#{app.focused.id}")
        await pilot.resize_terminal(120, 40)
        await pilot.pause()
        await pilot.pause()
        assert shown(app, "#metrics") and shown(app, "#chart") and app.query_one("#left").region.width == 32


async def test_below_the_minimum_one_clear_message_and_the_badge() -> None:
    app = app_for(fixtures.critical())
    async with app.run_test(size=(MIN_WIDTH - 6, MIN_HEIGHT - 2)) as pilot:
        await pilot.pause()
        await pilot.pause()
        text = screen_text(app)
        assert f"terminal {MIN_WIDTH - 6}x{MIN_HEIGHT - 2} is too small" in text
        assert f"needs {MIN_WIDTH}x{MIN_HEIGHT}" in text and "CRITICAL" in text
        assert not shown(app, "#alerts") and not shown(app, "#chart")
        await pilot.resize_terminal(80, 24)
        await pilot.pause()
        await pilot.pause()
        assert "too small" not in screen_text(app) and shown(app, "#alerts")


async def test_slash_where_the_cards_are_hidden_says_so_instead_of_typing_blind() -> None:
    app = TrainwatchApp(fixtures.healthy(), clock=fixtures.clock)
    async with app.run_test(size=(60, 20), notifications=True) as pilot:
        await pilot.pause()
        await pilot.pause()
        await pilot.press("slash", "q")
        await pilot.pause()
        assert not app.query_one("#filter").has_focus
        assert [str(n.message) for n in app._notifications] == [
            "the metric cards are hidden at this size: widen the terminal to filter them"]
        assert not app.is_running  # q was a key again, not a letter typed into a hidden box


async def test_no_alerts_gives_the_rows_to_the_chart_and_a_new_alert_takes_them_back() -> None:
    model = fixtures.healthy(60)
    app = TrainwatchApp(model, clock=fixtures.clock, refresh_s=0.05)
    async with app.run_test(size=(60, 20)) as pilot:
        await pilot.pause()
        await pilot.pause()
        chart, lower = app.query_one("#chart"), app.query_one("#lower")
        assert not shown(app, "#detail") and lower.region.height == 3 and chart.region.height >= 14
        assert "no alerts" in visible_text(app.query_one(AlertList))
        fixtures.feed_step(model, 61, loss=50.0)
        for _ in range(100):
            await pilot.pause(0.02)
            if shown(app, "#detail"):
                break
        await pilot.pause()
        assert shown(app, "#detail") and FIRST_FIX in visible_text(app.query_one(AlertDetail))


async def test_40x12_with_no_alerts_shows_the_cards_instead() -> None:
    model = fixtures.healthy(60)
    app = TrainwatchApp(model, clock=fixtures.clock, refresh_s=0.05)
    async with app.run_test(size=(40, 12)) as pilot:
        await pilot.pause()
        await pilot.pause()
        assert shown(app, "#metrics") and not shown(app, "#chart") and app.focused is app.query_one(MetricList)
        assert app.query_one("#left").region.width == 40 and "● loss" in visible_text(app.query_one(MetricList))
        fixtures.feed_step(model, 61, loss=50.0)
        for _ in range(100):
            await pilot.pause(0.02)
            if not shown(app, "#metrics"):
                break
        await pilot.pause()
        await pilot.pause()
        assert not shown(app, "#metrics") and FIRST_FIX in visible_text(app.query_one(AlertDetail))
        assert app.focused is app.query_one(AlertList)  # the cards went, the focus followed
