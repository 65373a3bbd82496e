"""Pilot tests of the log pane: follow mode like toolong, plain-text search with n/N, jump to an alert's line."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

from textual.geometry import Region

from tests.tui import fixtures
from tests.tui.conftest import screen_text
from trainwatch.tui.app import TrainwatchApp
from trainwatch.tui.widgets.alerts import AlertList
from trainwatch.tui.widgets.log_pane import LogLines, LogPane, matches


def app_for(model, **kw) -> TrainwatchApp:  # type: ignore[no-untyped-def]
    return TrainwatchApp(model, clock=fixtures.clock, **kw)


async def settle(pilot, cond: Callable[[], bool]) -> bool:  # type: ignore[no-untyped-def]
    """Pauses until cond() holds, for about two seconds at most (no fixed sleeps)."""
    for _ in range(100):
        if cond():
            return True
        await pilot.pause(0.02)
    return cond()


def on_screen(lines: LogLines) -> list[int]:
    """The log line numbers the pane shows now."""
    top = int(lines.scroll_y)
    return [n for n, _, _ in lines.rows[top:top + lines.size.height]]


def styled(lines: LogLines, line: int, component: str) -> list[str]:
    """The texts of the segments of log line `line` (on screen) drawn with a component's background."""
    want = lines.get_component_rich_style(component).bgcolor
    row = on_screen(lines).index(line)
    strip = lines.render_lines(Region(0, row, lines.size.width, 1))[0]
    return [seg.text for seg in strip if seg.style is not None and seg.style.bgcolor == want]


async def test_follows_the_end_until_scrolled_up_and_f_resumes() -> None:
    model = fixtures.healthy(60)
    app = app_for(model, refresh_s=0.05)
    async with app.run_test(size=(100, 34)) as pilot:
        pane = app.query_one(LogPane)
        lines = pane.lines
        assert await settle(pilot, lambda: bool(lines.rows) and on_screen(lines)[-1:] == [60])
        assert lines.follow and "following" in str(pane.border_subtitle)
        fixtures.feed_step(model, 61)
        assert await settle(pilot, lambda: on_screen(lines)[-1:] == [61])  # still on the end
        lines.focus()
        await pilot.press("up", "up", "up")
        await pilot.pause()
        assert not lines.follow and "paused · f follows" in screen_text(app)
        shown = on_screen(lines)
        assert 61 not in shown
        for step in range(62, 66):
            fixtures.feed_step(model, step)
        assert await settle(pilot, lambda: bool(lines.rows) and lines.rows[-1][0] == 65)
        await pilot.pause()
        assert on_screen(lines) == shown  # the view stays on what you scrolled to
        await pilot.press("f")
        await pilot.pause()
        assert lines.follow and on_screen(lines)[-1] == 65 and "following" in str(pane.border_subtitle)
        await pilot.press("up")
        await pilot.pause()
        assert not lines.follow
        await pilot.press("end")
        await pilot.pause()
        assert lines.follow and on_screen(lines)[-1] == 65


async def test_slash_searches_plain_text_highlights_and_n_moves_between_matches() -> None:
    model = fixtures.healthy(40)
    for n, text in ((41, "[bold]needle[/bold] one"), (43, "two NEEDLE \x1b[31mred\x1b[0m"), (45, "[b three needle")):
        model.feed_line(fixtures.SOURCE, n, text)
    app = app_for(model)
    async with app.run_test(size=(100, 34)) as pilot:
        await pilot.pause()
        lines = app.query_one(LogLines)
        lines.focus()
        await pilot.press("up", "up", "up", "up", "up", "up", "up", "up", "up", "up")  # away from the end
        await pilot.press("slash")
        await pilot.pause()
        assert app.query_one("#log-search").has_focus
        await pilot.press(*"[b", "q")  # typed into the box: q does not quit, [ is not markup
        await pilot.press("backspace")
        await pilot.press("enter")
        await pilot.pause()
        assert app.is_running and lines.has_focus
        assert [lines.rows[i][0] for i in lines.hits] == [41, 45]
        assert lines.rows[lines.current][0] == 41 and 41 in on_screen(lines)  # type: ignore[index]
        assert styled(lines, 41, "log-lines--current") == ["[b"]
        assert "[bold]needle[/bold] one" in screen_text(app)  # the line itself stays literal
        assert "/[b 1/2" in str(app.query_one(LogPane).border_subtitle)
        await pilot.press("n")
        await pilot.pause()
        assert lines.rows[lines.current][0] == 45 and styled(lines, 45, "log-lines--current") == ["[b"]  # type: ignore[index]
        assert styled(lines, 41, "log-lines--match") == ["[b"]
        await pilot.press("n")  # wraps round
        await pilot.pause()
        assert lines.rows[lines.current][0] == 41  # type: ignore[index]
        await pilot.press("N")
        await pilot.pause()
        assert lines.rows[lines.current][0] == 45  # type: ignore[index]
        await pilot.press("slash", "ctrl+a", "ctrl+k", *"needle", "enter")  # case-insensitive, escapes cleaned
        await pilot.pause()
        assert [lines.rows[i][0] for i in lines.hits] == [41, 43, 45]
        await pilot.press("escape")
        await pilot.pause()
        assert not lines.query_text and not lines.hits
        assert not lines.follow  # a search does not snap back to the end


def test_matches_are_plain_substrings() -> None:
    assert matches("a.b a*b A.B", ".b") == [(1, 3), (9, 11)]
    assert matches("[red]x[/red]", "[red]") == [(0, 5)]
    assert matches("anything", "") == []


async def test_j_on_the_selected_alert_opens_the_log_at_its_line() -> None:
    app = app_for(fixtures.critical(120))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        pane = app.query_one(LogPane)
        assert not pane.display  # collapsed at 80x24
        alert = app.query_one(AlertList).selected
        assert alert is not None and alert.line == 50
        await pilot.press("j")
        await pilot.pause()
        await pilot.pause()
        lines = pane.lines
        assert pane.display and lines.has_focus and not lines.follow
        assert 50 in on_screen(lines) and lines.rows[lines.target][0] == 50  # type: ignore[index]
        assert styled(lines, 50, "log-lines--target")  # marked
        await pilot.press("f")
        await pilot.pause()
        assert lines.follow and on_screen(lines)[-1] == 120 and lines.target is None


async def test_j_says_so_when_the_line_is_no_longer_kept() -> None:
    model = fixtures.critical(120)
    model._lines[fixtures.SOURCE] = deque(list(model._lines[fixtures.SOURCE])[-20:], maxlen=20)
    app = app_for(model)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await pilot.pause()
        await pilot.press("j")
        await pilot.pause()
        await pilot.pause()
        assert [str(n.message) for n in app._notifications] == [
            "line 50 is older than the lines kept for the log pane"]
        assert app.query_one(LogPane).display and app.query_one(LogLines).follow


async def test_help_lists_the_log_pane_keys_and_still_fits_80x24() -> None:
    app = app_for(fixtures.healthy())
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("question_mark")
        await pilot.pause()
        body = app.screen.query_one("#help-body")
        assert app.screen.region.contains_region(body.region) and body.max_scroll_y == 0
        text = screen_text(app)
        assert "in the log pane" in text
        for b in LogLines.BINDINGS:
            assert b.description in text, b.description  # type: ignore[union-attr]
        assert "f/end follow" in text and "ctrl+s screenshot" in " ".join(text.split())
        assert "log line" in text
