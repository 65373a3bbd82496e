"""Pilot tests: keys, selection, acknowledge, filter, pause, themes, panels, literal log text."""

from __future__ import annotations

from tests.tui import fixtures
from tests.tui.conftest import screen_text
from trainwatch.model import Severity
from trainwatch.tui.app import TrainwatchApp
from trainwatch.tui.screens.alert_detail import AlertScreen
from trainwatch.tui.screens.help import HelpScreen
from trainwatch.tui.screens.metric import MetricScreen
from trainwatch.tui.widgets.alerts import AlertDetail, AlertList
from trainwatch.tui.widgets.chart import MetricChart
from trainwatch.tui.widgets.header import HeaderBar
from trainwatch.tui.widgets.metric_list import MetricList


def app_for(model, **kw) -> TrainwatchApp:  # type: ignore[no-untyped-def]
    return TrainwatchApp(model, clock=fixtures.clock, **kw)


async def test_healthy_run_shows_ok_and_cards_in_importance_order() -> None:
    app = app_for(fixtures.healthy())
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        assert app.snapshot is not None and app.snapshot.badge == "OK"
        names = [m.name for m in app.snapshot.metrics]
        assert names[:3] == ["loss", "eval_loss", "grad_norm"]
        text = screen_text(app)
        assert "step 60/200" in text and "OK" in text and "no alerts" in text
        assert app.query_one(MetricChart).series.name == "loss"  # type: ignore[union-attr]


async def test_critical_alert_badge_detail_and_fixes_in_order() -> None:
    app = app_for(fixtures.critical())
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        assert app.snapshot.badge == "CRITICAL"  # type: ignore[union-attr]
        alerts = app.query_one(AlertList)
        assert alerts.selected is not None and alerts.selected.severity is Severity.CRITICAL
        text = screen_text(app)
        assert "Loss exploded" in text and "what to try" in text
        assert text.index("1. Lower the learning rate") < text.index("2. Turn on gradient clipping")
        loss_card = next(m for m in app.snapshot.metrics if m.name == "loss")  # type: ignore[union-attr]
        assert loss_card.severity is Severity.CRITICAL and loss_card.nan == 1
        assert "NaN×1" in text and "CRIT" in text


async def test_acknowledging_never_turns_the_badge_green() -> None:
    model = fixtures.critical()
    before = [a.to_dict() for a in model.engine.book.all()]
    app = app_for(model)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        app.query_one(AlertList).focus()
        await pilot.press("a")  # the critical one is first
        await pilot.pause()
        assert app.snapshot.badge == "CRITICAL ACK"  # type: ignore[union-attr]  # still the worst standing one
        await pilot.press("down", "a")
        await pilot.pause()
        assert app.snapshot.badge == "CRITICAL ACK"  # type: ignore[union-attr]
        assert "CRITICAL ACK" in screen_text(app) and " OK " not in screen_text(app)
        loss_card = next(m for m in app.snapshot.metrics if m.name == "loss")  # type: ignore[union-attr]
        assert loss_card.severity is Severity.CRITICAL  # a card with a standing alert is not "ok"
        assert len(app.snapshot.alerts) == 2 and all(a.acknowledged for a in app.snapshot.alerts)  # type: ignore[union-attr]
        # acknowledgement is the app's own state: the engine's alerts (and what sinks get) are unchanged
        assert app.acknowledged == {a.fingerprint for a in model.engine.book.all()}
        assert [a.to_dict() for a in model.engine.book.all()] == before
        assert not any(hasattr(a, "acknowledged") for a in model.engine.book.all())
        assert "[ack]" in screen_text(app)


async def test_enter_opens_alert_and_a_acknowledges_there() -> None:
    app = app_for(fixtures.critical())
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        app.query_one(AlertList).focus()
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, AlertScreen)
        assert "Check the batch at this step" in screen_text(app)
        await pilot.press("a")
        await pilot.pause()
        assert not isinstance(app.screen, AlertScreen)
        assert app.snapshot.badge == "CRITICAL ACK"  # type: ignore[union-attr]


async def test_selecting_a_metric_moves_the_chart_and_enter_zooms() -> None:
    app = app_for(fixtures.healthy())
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        await pilot.press("down", "down")  # loss -> eval_loss -> grad_norm
        await pilot.pause()
        assert app.query_one(MetricList).selected_key == (fixtures.SOURCE, "grad_norm")
        assert app.query_one(MetricChart).series.name == "grad_norm"  # type: ignore[union-attr]
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, MetricScreen)
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, MetricScreen)


async def test_smoothing_keys_log_scale_and_window() -> None:
    app = app_for(fixtures.healthy())
    async with app.run_test(size=(120, 40)) as pilot:
        chart = app.query_one(MetricChart)
        start = chart.level
        await pilot.press("S", "S")
        assert chart.level == start + 2
        await pilot.press("s", "s", "s")
        assert chart.level == start - 1
        for _ in range(10):
            await pilot.press("s")
        assert chart.level == 0  # clamped
        await pilot.press("y", "w")
        assert chart.log_y and chart.whole_run
        assert "log" in str(chart.border_subtitle) and "whole run" in str(chart.border_subtitle)


async def test_filter_hides_cards() -> None:
    app = app_for(fixtures.healthy())
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        await pilot.press("slash", "g", "r", "a", "d", "enter")
        await pilot.pause()
        metrics = app.query_one(MetricList)
        assert metrics.option_count == 1 and metrics.selected_key == (fixtures.SOURCE, "grad_norm")
        assert metrics.has_focus


async def test_pause_freezes_the_screen_while_the_engine_keeps_going() -> None:
    model = fixtures.healthy(20)
    app = app_for(model, refresh_s=0.05)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        await pilot.press("p")
        fixtures.feed_step(model, 21)
        app.refresh_view()
        assert app.snapshot.step == 20  # type: ignore[union-attr]
        assert "PAUSED" in screen_text(app)
        assert model.engine.sources[fixtures.SOURCE].step == 21
        await pilot.press("p")
        await pilot.pause()
        assert app.snapshot.step == 21  # type: ignore[union-attr]


async def test_theme_cycles_and_option_selects() -> None:
    app = app_for(fixtures.healthy(), theme="light")
    async with app.run_test(size=(100, 30)) as pilot:
        assert app.theme == "trainwatch-light"
        seen = {app.theme}
        for _ in range(3):
            await pilot.press("t")
            seen.add(app.theme)
        assert seen == {"trainwatch-dark", "trainwatch-light", "trainwatch-contrast"}


async def test_help_lists_every_key() -> None:
    app = app_for(fixtures.healthy())
    async with app.run_test(size=(100, 40)) as pilot:
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        text = screen_text(app)
        for b in app.BINDINGS:
            assert b.description in text  # type: ignore[union-attr]
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, HelpScreen)


async def test_log_and_gpu_panels_toggle_and_gpu_says_none() -> None:
    app = app_for(fixtures.healthy())
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert not app.query_one("#log").display  # collapsed on a small terminal
        await pilot.press("l", "g")
        await pilot.pause()
        await pilot.pause()
        text = screen_text(app)
        assert app.query_one("#log").display and app.query_one("#gpus").display
        assert "No GPU telemetry available: no GPU telemetry: NVML not found" in text
        assert "'loss'" in text


async def test_gpu_panel_shows_devices() -> None:
    model = fixtures.healthy()
    model.gpus = [{"index": 0, "name": "H100", "util": 97.0, "mem_used": 60.0, "mem_total": 80.0,
                   "temp": 61.0, "power": 500.0, "power_limit": 700.0}]
    app = app_for(model)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("g")
        await pilot.pause()
        await pilot.pause()
        text = screen_text(app)
        assert "gpu0" in text and "util    97%" in text and "61°C" in text and "500/700W" in text


async def test_log_markup_and_escapes_render_as_plain_text() -> None:
    model = fixtures.healthy(5)
    evil = ("[bold red]pwned[/bold red] [link=http://evil.invalid]click[/link] "
            "\x1b]8;;http://evil.invalid\x07osc-link\x1b]8;;\x07 \x1b[2J\x1b[10;10Hmoved \x07")
    model.feed_line(fixtures.SOURCE, 6, evil)
    app = app_for(model)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        text = screen_text(app)
        assert "[bold red]pwned[/bold red] [link=http://evil.invalid]click[/link] osc-link moved" in text
        assert "\x1b" not in text


async def test_new_alert_from_engine_thread_notifies_and_redraws() -> None:
    model = fixtures.healthy(10)
    app = app_for(model, refresh_s=0.05)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        fixtures.feed_step(model, 11, loss=50.0)
        for _ in range(50):
            await pilot.pause(0.02)
            if app.snapshot.badge == "CRITICAL":  # type: ignore[union-attr]
                break
        assert app.snapshot.badge == "CRITICAL"  # type: ignore[union-attr]
        assert any("Loss exploded" in str(n.message) for n in app._notifications)


async def test_header_has_no_clock_dependent_drift() -> None:
    app = app_for(fixtures.healthy())
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        assert "elapsed 0:00:00" in screen_text(app)
        assert app.query_one(HeaderBar) is not None
        assert app.query_one(AlertDetail) is not None


def test_unknown_theme_is_a_usage_error() -> None:
    import pytest

    from trainwatch.errors import UsageError

    with pytest.raises(UsageError):
        TrainwatchApp(fixtures.healthy(), theme="nope")


# -- how it looks: colours read back from the rendered cells -----------------------------------------

THEMES = ("trainwatch-dark", "trainwatch-light", "trainwatch-contrast")


def _cells(widget, row: int) -> list[tuple[str, tuple[int, int, int] | None, tuple[int, int, int] | None]]:  # type: ignore[no-untyped-def]
    """(text, foreground, background) of each segment of one rendered row of a widget, border included."""
    from textual.geometry import Region

    strip = widget.render_lines(Region(0, row, widget.size.width, 1))[0]
    out = []
    for seg in strip:
        st = seg.style
        fg = tuple(st.color.get_truecolor()) if st and st.color else None
        bg = tuple(st.bgcolor.get_truecolor()) if st and st.bgcolor else None
        out.append((seg.text, fg, bg))  # type: ignore[arg-type]
    return out


def _contrast(a: tuple[int, int, int] | None, b: tuple[int, int, int] | None) -> float:
    """WCAG contrast ratio of two colours (1 to 21)."""
    assert a is not None and b is not None

    def lum(c: tuple[int, int, int]) -> float:
        ch = [(v / 255) / 12.92 if v / 255 <= 0.03928 else ((v / 255 + 0.055) / 1.055) ** 2.4 for v in c]
        return 0.2126 * ch[0] + 0.7152 * ch[1] + 0.0722 * ch[2]

    hi, lo = sorted((lum(a), lum(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


async def test_selected_card_keeps_its_sparkline_and_crit_stays_readable() -> None:
    from trainwatch.tui.charts import SPARK

    for theme in THEMES:
        app = app_for(fixtures.critical(), theme=theme)
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            metrics = app.query_one(MetricList)
            assert metrics.has_focus and metrics.selected_key == (fixtures.SOURCE, "loss")
            primary = app.get_css_variables()["primary"].lstrip("#").lower()
            colour = tuple(int(primary[i:i + 2], 16) for i in (0, 2, 4))
            line1, spark = _cells(metrics, 1), _cells(metrics, 2)  # the selected card's first two rows
            bars = [c for c in spark if c[0].strip() and c[0].strip()[0] in SPARK]
            assert bars, theme
            for text, fg, bg in bars:
                assert fg == colour, (theme, text, fg)  # the metric's colour, as on every other card
                assert _contrast(fg, bg) >= 3.0, (theme, text, fg, bg)
            crit = next(c for c in line1 if "CRIT" in c[0])
            assert _contrast(crit[1], crit[2]) >= 3.0, (theme, crit)
            unselected = _cells(metrics, 5)  # eval_loss's sparkline, not selected
            assert any(fg == colour for t, fg, _ in unselected if t.strip()), theme


async def test_panel_titles_readable_unfocused_and_panels_on_the_theme_surface() -> None:
    for theme in THEMES:
        app = app_for(fixtures.critical(), theme=theme)
        async with app.run_test(size=(120, 40)) as pilot:  # tall enough that the log pane shows
            await pilot.pause()
            surface = app.get_css_variables()["surface"].lstrip("#").lower()
            surface_rgb = tuple(int(surface[i:i + 2], 16) for i in (0, 2, 4))
            for wid, title in (("#chart", "loss"), ("#alerts", "alerts"), ("#detail", "evidence"),
                               ("#log", "log")):
                panel = app.query_one(wid)
                assert not panel.has_focus
                cell = next(c for c in _cells(panel, 0) if title in c[0])
                assert _contrast(cell[1], cell[2]) >= 4.5, (theme, wid, cell)
                inside = _cells(panel, 1)[1]  # the first cell inside the frame
                assert inside[2] == surface_rgb, (theme, wid, inside)


# -- toasts: news only, one at a time, never over the alerts -----------------------------------------

def _replaying(steps: int):  # type: ignore[no-untyped-def]
    """A model whose start() reads a backlog (steps 1..steps, gradient norm too high from 40), as the watcher does."""
    m = fixtures.model()

    def start() -> None:
        for s in range(1, steps + 1):
            fixtures.feed_step(m, s, grad=42.0 if s >= 40 else None)

    m.start = start  # type: ignore[method-assign]
    return m


async def _settle(pilot, app, cond) -> None:  # type: ignore[no-untyped-def]
    """Pauses until cond() holds or about a second has passed (no fixed sleeps)."""
    for _ in range(50):
        await pilot.pause(0.02)
        if cond():
            return


def _toasts(app) -> list:  # type: ignore[no-untyped-def]
    from textual.widgets._toast import Toast

    return list(app.screen.query(Toast))


async def test_backlog_alerts_get_no_toast_and_new_ones_get_one() -> None:
    model = _replaying(45)
    app = app_for(model, refresh_s=0.05)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await _settle(pilot, app, lambda: app.snapshot is not None and app.snapshot.badge == "WARNING")
        assert app.snapshot.badge == "WARNING"  # type: ignore[union-attr]  # the backlog's spike is listed
        await pilot.pause(0.05)
        assert not app._notifications and not _toasts(app)
        fixtures.feed_step(model, 46, loss=50.0)
        await _settle(pilot, app, lambda: bool(_toasts(app)))
        assert [str(n.message) for n in app._notifications] == ["Loss exploded (step 46)"]


async def test_a_burst_of_alerts_is_one_toast_with_a_count_and_it_stays_off_the_alerts() -> None:
    model = fixtures.healthy(10)
    app = app_for(model, refresh_s=0.05)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await pilot.pause()
        fixtures.feed_step(model, 11, loss=50.0, grad=42.0)  # two alerts at once
        await _settle(pilot, app, lambda: bool(_toasts(app)))
        await pilot.pause(0.05)
        toasts = _toasts(app)
        assert len(toasts) == 1 and len(app._notifications) == 1
        assert "2 new alerts" in str(next(iter(app._notifications)).message)
        assert "Loss exploded" in str(next(iter(app._notifications)).message)
        for panel in (app.query_one(AlertList), app.query_one(AlertDetail), app.query_one(HeaderBar)):
            assert not toasts[0].region.overlaps(panel.region), panel
        fixtures.feed_step(model, 12, loss=float("nan"))  # a later one replaces it: still one toast
        await pilot.pause(0.1)
        assert len(app._notifications) == 1


async def test_no_toasts_on_a_small_terminal_the_alert_panel_says_it() -> None:
    for size in ((80, 24), (40, 12)):
        model = fixtures.healthy(10)
        app = app_for(model, refresh_s=0.05)
        async with app.run_test(size=size, notifications=True) as pilot:
            await pilot.pause()
            fixtures.feed_step(model, 11, loss=50.0, grad=42.0)
            await _settle(pilot, app, lambda app=app: app.snapshot is not None and app.snapshot.badge == "CRITICAL")
            await pilot.pause(0.05)
            assert app.snapshot.badge == "CRITICAL"  # type: ignore[union-attr]
            assert not app._notifications and not _toasts(app), size


async def test_help_fits_80x24_and_scrolls_when_it_cannot() -> None:
    app = app_for(fixtures.healthy())
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("question_mark")
        await pilot.pause()
        body = app.screen.query_one("#help-body")
        assert app.screen.region.contains_region(body.region)  # frame and all, nothing cut off
        text = screen_text(app)
        for b in app.BINDINGS:
            assert b.description in text, b.description  # type: ignore[union-attr]
    app = app_for(fixtures.healthy())
    async with app.run_test(size=(40, 12)) as pilot:
        await pilot.press("question_mark")
        await pilot.pause()
        body = app.screen.query_one("#help-body")
        assert body.has_focus and body.max_scroll_y > 0 and "theme" not in screen_text(app)
        await pilot.press("end")
        await pilot.pause()
        assert body.scroll_y == body.max_scroll_y and "theme" in screen_text(app)


async def test_filter_title_follows_every_typed_letter() -> None:
    app = app_for(fixtures.healthy())
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        metrics = app.query_one(MetricList)
        await pilot.press("slash")
        for typed in ("g", "gr", "gra", "grad"):
            await pilot.press(typed[-1])
            await pilot.pause()
            assert str(metrics.border_title) == f"metrics /{typed}"
            assert f"metrics /{typed}" in screen_text(app)


async def test_alert_rows_wrap_with_an_indent_and_cut_with_an_ellipsis() -> None:
    from trainwatch.tui.widgets.alerts import row

    model = fixtures.critical()
    app = app_for(model)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        alerts = app.query_one(AlertList)
        width = alerts.scrollable_content_region.width
        lines = [str(alerts.get_option_at_index(i).prompt).split("\n") for i in range(alerts.option_count)]
        for first, *rest in lines:
            assert first.startswith(("CRIT", "WARN")) and "step 50" in first
            assert rest and all(r.startswith("  ") and r.strip() for r in rest)  # under the word, indented
            assert all(len(r) <= width for r in [first, *rest])
        assert "  Loss exploded" in lines[0]
        assert "Gradient norm spike" in " ".join(r.strip() for r in lines[1][1:])
    long = app.snapshot.alerts[0]  # type: ignore[union-attr]
    import dataclasses

    long = dataclasses.replace(long, title="A very long alert title that goes on and on about the loss")
    first, *rest = str(row(long, 20)).split("\n")
    assert len(rest) == 2 and rest[-1].endswith("…") and all(len(r) <= 20 for r in rest)
    assert str(row(long, 120)).count("\n") == 0  # wide: one line, nothing cut


async def test_alerts_held_back_by_inhibition_are_marked() -> None:
    from trainwatch.config import Inhibit
    from trainwatch.engine import Engine
    from trainwatch.view.model import EngineModel

    cfg = fixtures.config()
    cfg.inhibit = [Inhibit(source="loss.too_high", targets=("grad.too_high",))]  # the loss explains the gradient
    engine = Engine(cfg, clock=fixtures.clock)
    engine.source(fixtures.SOURCE, "hf_console")
    model = EngineModel(engine)
    for s in range(1, 61):
        fixtures.feed_step(model, s, loss=9.0 if s >= 50 else None, grad=42.0 if s >= 50 else None)
    app = app_for(model)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        held = next(a for a in app.snapshot.alerts if a.rule == "grad.too_high")  # type: ignore[union-attr]
        assert held.inhibited and held.held and not held.live
        assert app.snapshot.badge == "CRITICAL"  # type: ignore[union-attr]
        alerts = app.query_one(AlertList)
        prompt = str(alerts.get_option(held.fingerprint).prompt)
        assert "[held]" in prompt and "[held]" in screen_text(app)
        alerts.focus()
        alerts.highlighted = alerts.get_option_index(held.fingerprint)
        await pilot.pause()
        assert "held back: another alert explains this one" in screen_text(app)


async def test_chart_legend_in_the_curves_own_colours_and_glyphs_under_no_color(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from trainwatch.tui import charts

    app = app_for(fixtures.healthy())
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        chart = app.query_one(MetricChart)
        colours = chart.layer_colors()
        legend = {text.split()[-1]: fg for text, fg, _ in _cells(chart, 1) if text.strip()}
        for layer in (charts.RAW, charts.EMA, charts.MA):
            assert legend[layer] == colours[layer], layer  # the same colour the curve is drawn in
        drawn = {fg for y in range(2, chart.size.height - 2) for text, fg, _ in _cells(chart, y)
                 if any("\u2800" < ch <= "\u28ff" for ch in text)}
        assert colours[charts.RAW] in drawn and colours[charts.EMA] in drawn
        assert _cells(chart, 1)[1][0].startswith("loss")  # the y axis is named, first on the legend line
    monkeypatch.setenv("NO_COLOR", "1")
    app = app_for(fixtures.healthy())
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        text = screen_text(app)
        assert "· raw" in text and "+ ma" in text and "⣿ ema" in text and "step" in text


def test_detail_puts_a_long_title_on_its_own_line_in_a_narrow_panel() -> None:
    import dataclasses

    from trainwatch.tui.widgets.alerts import detail
    from trainwatch.view import snapshot as view

    model = fixtures.critical()
    snap = view.take(model, selected=None, log_source=None)
    a = dataclasses.replace(snap.alerts[0], title="Gradient norm is NaN or Inf")
    lines = str(detail(a, 28)).split("\n")
    assert lines[0] == "CRIT" and lines[1] == "Gradient norm is NaN or Inf"  # whole, not broken after "or"
    assert str(detail(a, 60)).split("\n")[0] == "CRIT Gradient norm is NaN or Inf"


async def test_f1_opens_help_ctrl_s_saves_over_it_and_the_footer_lists_w_y_j_enter(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from textual.widgets import Footer

    monkeypatch.chdir(tmp_path)
    app = app_for(fixtures.critical())
    async with app.run_test(size=(200, 40)) as pilot:
        await pilot.pause()
        footer = app.screen.query_one(Footer)
        keys = {b.key for b in app.BINDINGS if b.show}  # type: ignore[union-attr]
        assert {"w", "y", "j", "enter"} <= keys
        await _settle(pilot, app, lambda: "open" in screen_text(app).splitlines()[-1])
        shown = screen_text(app).splitlines()[-1]
        for word in ("whole run", "log y", "log line", "open"):
            assert word in shown, (word, shown)
        assert footer.display
        await pilot.press("f1")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert len(list(tmp_path.glob("trainwatch-*.svg"))) == 1
        await pilot.press("f1")
        await pilot.pause()
        assert not isinstance(app.screen, HelpScreen)


def test_shorten_path_gives_up_folders_before_the_file_name() -> None:
    from trainwatch.tui.text import shorten_path

    long = "/scratch/users/someone/experiments/2024-05/sweep-lr/run-0007/logs/train_rank0.log"
    assert shorten_path("run.log", 5) == "run.log"
    assert shorten_path(long, len(long)) == long
    assert shorten_path(long, 31) == "…/run-0007/logs/train_rank0.log"
    assert shorten_path(long, 30) == "…/logs/train_rank0.log"
    assert shorten_path(long, 10) == "…/train_rank0.log"  # the name stays whole


async def test_the_header_shortens_the_directory_before_the_file_name(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    long = "/scratch/users/someone/experiments/2024-05/sweep-lr/run-0007/logs/train.log"
    monkeypatch.setattr(fixtures, "SOURCE", long)
    app = app_for(fixtures.healthy())
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        first = screen_text(app).splitlines()[0]
        assert "train.log (" in first and "…/" in first and "/scratch/users" not in first, first


def test_an_alert_that_stopped_without_recovering_is_not_shown_as_resolved() -> None:
    from trainwatch.model import AlertState
    from trainwatch.tui.widgets.alerts import row_state
    from trainwatch.view import snapshot as view

    model = fixtures.critical()
    alert = next(iter(model.engine.book.all()))
    alert.state, alert.stopped = AlertState.RESOLVED, "loss went NaN"
    snap = view.take(model, selected=None, log_source=None)
    shown = next(a for a in snap.alerts if a.fingerprint == alert.fingerprint)
    assert row_state(shown) == "stopped"
    alert.stopped = ""
    snap = view.take(model, selected=None, log_source=None)
    assert row_state(next(a for a in snap.alerts if a.fingerprint == alert.fingerprint)) == "resolved"


def test_a_cards_min_and_max_cover_its_sparklines_window() -> None:
    from trainwatch.view import snapshot as view

    model = fixtures.model()
    fixtures.feed_step(model, 1, loss=50.0)  # an early peak, long out of the sparkline's window
    for s in range(2, view.SPARK_POINTS + 40):
        fixtures.feed_step(model, s)
    card = next(m for m in view.take(model, selected=None, log_source=None).metrics if m.name == "loss")
    assert len(card.spark) == view.SPARK_POINTS
    assert card.maximum == max(card.spark) < 50.0 and card.minimum == min(card.spark)


async def test_too_few_points_to_chart_gives_a_crash_traceback_the_room() -> None:
    from trainwatch import config
    from trainwatch.engine import Engine
    from trainwatch.model import Event, EventKind, Sample
    from trainwatch.view.model import EngineModel

    engine = Engine(config.load("sft"), clock=fixtures.clock)  # with the traceback rule
    engine.source(fixtures.SOURCE, "hf_console")
    model = EngineModel(engine)
    frames = "".join(f'  File "train.py", line {i}, in step_{i}\n    step_{i}()\n' for i in range(1, 8))
    tb = f"Traceback (most recent call last):\n{frames}ValueError: the batch has no labels"
    with model.lock:
        engine.feed(Sample("loss", 2.5, step=1, source=fixtures.SOURCE, line=1))
        engine.feed(Event(EventKind.TRACEBACK, source=fixtures.SOURCE, line=2, text=tb,
                          fields={"exception": "ValueError", "message": "the batch has no labels"}))
    app = app_for(model)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        await pilot.pause()
        assert app.snapshot is not None and app.snapshot.alerts
        assert app.screen.has_class("-sparse")
        assert app.query_one("#chart").styles.display == "none"
        assert app.query_one(AlertDetail).region.height > 20  # the chart's rows went to the evidence
    healthy = app_for(fixtures.critical())
    async with healthy.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        assert not healthy.screen.has_class("-sparse")  # enough points: the chart stays
