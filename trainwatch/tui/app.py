"""The Textual app: composition, key bindings, themes and the one refresh timer. Widgets do the drawing.

The engine runs in the watcher's thread; this app only reads it. A timer (`--refresh`, default 2 s)
checks a cheap version fingerprint under the lock and, when something changed, copies a Snapshot
and hands it to the widgets, so a log growing by thousands of lines a second still costs a few
redraws a second.
"""

from __future__ import annotations

import argparse
import gc
import time
from collections.abc import Callable

from textual import on
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.css.query import NoMatches
from textual.events import Resize
from textual.widgets import Footer, Input, OptionList

from trainwatch.errors import UsageError
from trainwatch.sinks.fanout import Sinks
from trainwatch.tui import layout, screenshot, themes
from trainwatch.tui.messages import AlertChanged, ExitOn, SinkNotice
from trainwatch.tui.screens.alert_detail import AlertScreen
from trainwatch.tui.screens.help import HelpScreen
from trainwatch.tui.screens.metric import MetricScreen
from trainwatch.tui.widgets.alerts import AlertDetail, AlertList
from trainwatch.tui.widgets.chart import MetricChart
from trainwatch.tui.widgets.gpu_panel import GpuPanel
from trainwatch.tui.widgets.grid import ChartGrid
from trainwatch.tui.widgets.header import HeaderBar
from trainwatch.tui.widgets.log_pane import LogPane
from trainwatch.tui.widgets.metric_list import MetricList
from trainwatch.tui.widgets.toasts import AlertToaster
from trainwatch.view import snapshot as view
from trainwatch.view.model import WatchModel

UNREAD_NOTICES = 6  # while no log is read, the evidence pane shows the newest notices
DEFAULT_REFRESH_S = 2.0  # at most one redraw per 2 s however fast the log grows: 4% of a core at 10 lines/s


class TrainwatchApp(App[int]):
    CSS_PATH = "app.tcss"
    TITLE = "trainwatch"
    ENABLE_COMMAND_PALETTE = False
    BINDINGS = [
        Binding("q", "quit", "quit", id="quit"),
        Binding("question_mark,f1", "help", "help", id="help"),
        Binding("tab", "app.focus_next", "next panel", show=False, id="focus_next"),
        Binding("shift+tab", "app.focus_previous", "previous panel", show=False, id="focus_previous"),
        Binding("right", "app.focus_next", "next panel", show=False, id="panel_right"),
        Binding("left", "app.focus_previous", "previous panel", show=False, id="panel_left"),
        Binding("enter", "noop", "open", id="open"),
        Binding("s", "smooth(-1)", "smooth-", id="smooth_down"),
        Binding("S", "smooth(1)", "smooth+", id="smooth_up"),
        Binding("y", "log_y", "log y", id="log_y"),
        Binding("w", "window", "whole run", id="window"),
        Binding("j", "jump_to_alert", "log line", id="jump"),
        Binding("a", "acknowledge", "ack", id="ack"),
        Binding("p", "pause", "pause", id="pause"),
        Binding("l", "toggle('log')", "log", id="log"),
        Binding("g", "toggle('gpus')", "GPUs", id="gpus"),
        Binding("slash", "filter", "filter", id="filter"),
        Binding("escape", "close_filter", "close filter", show=False, id="close_filter"),
        Binding("t", "next_theme", "theme", id="theme"),
        Binding("ctrl+s", "screenshot_svg", "screenshot", show=False, id="screenshot"),
    ]

    def __init__(self, model: WatchModel, *, theme: str | None = None, refresh_s: float = DEFAULT_REFRESH_S,
                 clock: Callable[[], float] = time.monotonic, start_model: bool = True,
                 until_done: bool = False, sinks: Sinks | None = None, freeze_heap: bool = False,
                 baseline: view.Baseline | None = None) -> None:
        super().__init__()
        self.baseline = baseline  # `--baseline`: a finished run drawn beside the live one's curves
        # freeze_heap (the command line's app, one per process): after the first frame the heap is
        # mostly Textual, the stylesheet and the modules, which live as long as the app. gc.freeze
        # keeps the collector from walking them on every full collection, which a busy log triggers
        # every few seconds (a tenth of the dashboard's CPU before). Not for tests, which run many
        # apps in one process: frozen garbage is never collected.
        self.freeze_heap = freeze_heap
        self.model = model
        self.sinks = sinks  # --alert-log, --on-alert, --exit-on: the same outlets as headless
        self.acknowledged: set[str] = set()  # fingerprints the user acknowledged: the app's, not the engine's
        self.until_done = until_done  # --until-done: close once every run has ended
        self.clock = clock
        self.refresh_s = max(0.05, min(10.0, refresh_s))
        self.start_model = start_model
        self.paused = False
        self.snapshot: view.Snapshot | None = None
        self.rates = view.RateMeter()
        self._cache = view.ViewCache()
        self._version: tuple[int, ...] = ()
        self._dirty = True
        self._started_at = clock()
        self._themes = themes.builtin_themes()
        wanted = themes.resolve(theme, self._themes)
        if wanted is None:
            raise UsageError(f"unknown theme {theme!r}", hint="bundled: " + ", ".join(sorted(self._themes)))
        self._themes[wanted.name] = wanted
        self._initial_theme = wanted.name
        self.toaster = AlertToaster(self, clock)

    def compose(self) -> ComposeResult:
        yield HeaderBar()
        with Horizontal(id="body"):
            with Vertical(id="left"):
                yield Input(placeholder="filter metrics", id="filter")
                yield MetricList(id="metrics")
            with Vertical(id="right"):
                with Horizontal(id="charts"):
                    yield MetricChart(id="chart")
                    yield ChartGrid(id="grid")
                with Horizontal(id="lower"):
                    yield AlertList(id="alerts")
                    yield AlertDetail(id="detail")
        yield GpuPanel(id="gpus")
        yield LogPane(id="log")
        yield Footer()

    def on_mount(self) -> None:
        for t in self._themes.values():
            self.register_theme(t)
        self.theme = self._initial_theme
        self._layout_for(self.size.width, self.size.height)
        if self.size.height >= 32:
            self._q(LogPane).add_class("-shown")
        self.model.add_listener(self._on_engine_change)
        if self.sinks is not None:  # engine thread -> messages: never touch widgets from there
            self.sinks.attach(self.model, on_exit=lambda sev: self.post_message(ExitOn(sev)),
                              notice=lambda text: self.post_message(SinkNotice(text)))
        if self.start_model:
            self.model.start()  # reads the backlog: what fires meanwhile is history, not news
        self.toaster.watching = True
        self._q(MetricList).focus()
        self.refresh_view()
        self.set_interval(self.refresh_s, self.refresh_view)
        if self.freeze_heap:
            self.call_after_refresh(gc.freeze)

    def _q(self, selector, expect_type=None):  # type: ignore[no-untyped-def]
        """Queries the main screen, also while a modal screen (help, alert, zoom) is on top."""
        base = self.screen_stack[0] if self.screen_stack else self.screen
        return base.query_one(selector, expect_type) if expect_type is not None else base.query_one(selector)

    def on_unmount(self) -> None:
        if self.start_model:
            self.model.stop()

    # -- the refresh timer -----------------------------------------------------------------------

    def _on_engine_change(self, change: object) -> None:
        """Called on the engine thread: must not block or touch widgets, so it only posts a message."""
        self.post_message(AlertChanged(change, backlog=not self.toaster.watching))  # type: ignore[arg-type]

    def on_alert_changed(self, message: AlertChanged) -> None:
        self._dirty = True
        if not message.backlog and not self.paused:
            self.toaster.fired(message.change)

    def on_exit_on(self, message: ExitOn) -> None:
        self.exit()  # the caller turns a clean exit into the worst severity seen, as headless does

    def on_sink_notice(self, message: SinkNotice) -> None:
        self.notify(message.text, title="alert outlet", severity="warning", timeout=6, markup=False)

    def refresh_view(self, force: bool = False) -> None:
        """Reads engine state only when its version changed; always keeps the clock text current."""
        if self.until_done and self.model.finished.is_set():
            self.exit()
            return
        if (self.paused and not force) or not self.screen_stack:
            return
        try:
            self._refresh_view(force)
        except NoMatches:  # the timer fired while the app was shutting down
            pass

    def _refresh_view(self, force: bool) -> None:
        metrics = self._q(MetricList)
        log_src = self.snapshot.log_source if self.snapshot else ""
        v = view.version(self.model, log_src)
        if force or self._dirty or v != self._version or self.snapshot is None:
            self._version, self._dirty = v, False
            grid = self._q(ChartGrid)  # the small charts' series only when shown and due
            wide = self.screen_stack[0].has_class("-wide") and grid.due()
            snap = view.take(self.model, selected=metrics.selected_key, log_source=log_src or None,
                             cache=self._cache, acknowledged=frozenset(self.acknowledged), grid=wide,
                             baseline=self.baseline)
            self.snapshot = snap
            metrics.set_metrics(snap.metrics)
            self._show_chart()
            if wide:
                grid.show(snap.grid)
            alerts = self._q(AlertList)
            alerts.set_alerts(snap.alerts, reading=snap.following)
            # nothing to show but the healthy line: the chart takes the rows (not while nothing is read:
            # the notices that say why are in the evidence pane)
            layout.calm(self.screen_stack[0], not snap.alerts and snap.following)
            layout.sparse(self.screen_stack[0], bool(snap.alerts) and layout.too_few_points(
                snap.chart.recent if snap.chart is not None else None))
            self._q(AlertDetail).show(alerts.selected, self._unread())
            self._q(LogPane).show(snap.log_source, snap.log_lines)
            self._q(GpuPanel).show(snap.gpus, snap.metrics, snap.info_lines)
        self._show_header()

    def _unread(self) -> tuple[str, ...] | None:
        """While no log is read, the newest notices (missing, binary, not recognised): they say why."""
        snap = self.snapshot
        if snap is None or snap.following:
            return None
        return tuple(snap.info_lines[-UNREAD_NOTICES:])

    def _show_header(self) -> None:
        snap = self.snapshot
        if snap is None:
            return
        now = self.clock()
        self.rates.add(now, snap.step)
        rate = self.rates.rate()
        first, last = snap.times
        elapsed = (last - first) if first is not None and last is not None and last > first else now - self._started_at
        self._q(HeaderBar).show(snap, elapsed=elapsed, rate=rate,
                                       eta=view.eta_seconds(snap.step, snap.total, rate), paused=self.paused)

    def _show_chart(self) -> None:
        snap = self.snapshot
        if snap is None:
            return
        key = self._q(MetricList).selected_key
        chart = snap.chart
        if key is not None and (chart is None or chart.name != key[1]):
            self._dirty = True  # the selection moved: the next tick copies that series
        self._q(MetricChart).set_series(chart)
        if isinstance(self.screen, MetricScreen):
            self.screen.update_series(chart)

    # -- selection -------------------------------------------------------------------------------

    @on(OptionList.OptionHighlighted, "#metrics")
    def _metric_moved(self) -> None:
        if self.snapshot is not None and not self.paused:
            self.refresh_view(force=True)

    @on(OptionList.OptionSelected, "#metrics")
    def _metric_opened(self) -> None:
        chart = self._q(MetricChart)
        self.push_screen(MetricScreen(chart.series, level=chart.level, log_y=chart.log_y, whole_run=chart.whole_run))

    @on(OptionList.OptionHighlighted, "#alerts")
    def _alert_moved(self) -> None:
        self._q(AlertDetail).show(self._q(AlertList).selected, self._unread())

    @on(OptionList.OptionSelected, "#alerts")
    def _alert_opened(self) -> None:
        alert = self._q(AlertList).selected
        if alert is None:
            return

        def done(ack: bool | None) -> None:
            if ack:
                self._acknowledge(alert)

        self.push_screen(AlertScreen(alert), done)

    @on(Input.Changed, "#filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        metrics = self._q(MetricList)
        metrics.filter = event.value.strip()
        if self.snapshot is not None:
            metrics.set_metrics(self.snapshot.metrics)

    @on(Input.Submitted, "#filter")
    def _filter_done(self) -> None:
        self._q("#filter").remove_class("-shown")
        self._q(MetricList).focus()

    def on_resize(self, event: Resize) -> None:
        self._layout_for(event.size.width, event.size.height)

    def _layout_for(self, width: int, height: int) -> None:
        base = self.screen_stack[0] if self.screen_stack else self.screen
        wide = base.has_class("-wide")
        layout.apply(base, width, height)
        if base.has_class("-wide") != wide:
            self._dirty = True  # the grid appeared or went: the next refresh copies its series

    # -- actions ---------------------------------------------------------------------------------

    def action_noop(self) -> None:
        """enter is handled by the focused list; the binding exists so help and the footer list it."""

    def action_help(self) -> None:
        self.push_screen(HelpScreen(list(self.BINDINGS)))  # type: ignore[arg-type]

    def action_smooth(self, delta: int) -> None:
        chart = self._q(MetricChart)
        chart.change(level=chart.level + delta)
        w, n = chart.level_values
        self.notify(f"smoothing: EMA weight {w:g}, moving average {n}", timeout=2)

    def action_log_y(self) -> None:
        chart = self._q(MetricChart)
        chart.change(log_y=not chart.log_y)

    def action_window(self) -> None:
        chart = self._q(MetricChart)
        chart.change(whole_run=not chart.whole_run)

    def action_pause(self) -> None:
        self.paused = not self.paused
        if not self.paused:
            self._dirty = True
            self.refresh_view()
        else:
            self._show_header()

    def action_toggle(self, panel: str) -> None:  # type: ignore[override]  # toggle(panel), not DOMNode's toggle(attr)
        self._q(f"#{panel}").toggle_class("-shown")
        self._dirty = True
        if not self.paused:
            self.call_after_refresh(self.refresh_view, True)

    def action_acknowledge(self) -> None:
        alert = self._q(AlertList).selected
        if alert is not None:
            self._acknowledge(alert)

    def _acknowledge(self, alert: view.AlertView) -> None:
        self.acknowledged ^= {alert.fingerprint}  # toggles; the engine's alerts are left as they are
        self._dirty = True
        self.refresh_view(force=True)

    def action_filter(self) -> None:
        if self._q("#left").styles.display == "none":  # the layout dropped the cards: nothing to filter
            self.notify("the metric cards are hidden at this size: widen the terminal to filter them", timeout=3)
            return
        box = self._q("#filter", Input)
        box.add_class("-shown")
        box.focus()

    def action_close_filter(self) -> None:
        box = self._q("#filter", Input)
        if box.has_class("-shown"):
            box.remove_class("-shown")
            self._q(MetricList).focus()

    def action_jump_to_alert(self) -> None:
        """Opens the log pane on the selected alert's source and shows the line it fired on."""
        alert = self._q(AlertList).selected
        if alert is None or not alert.line:
            self.notify("select an alert with a log line first", timeout=2)
            return
        pane = self._q(LogPane)
        pane.add_class("-shown")
        if self.snapshot is not None and self.snapshot.log_source != alert.source:
            self.snapshot.log_source = alert.source  # the next copy reads that source's lines
        self.refresh_view(force=True)

        def jump() -> None:
            if pane.jump_to_line(alert.line):
                pane.lines.focus()
            else:
                self.notify(f"line {alert.line} is older than the lines kept for the log pane", timeout=3)

        self.call_after_refresh(jump)  # once the pane has its height

    def action_screenshot_svg(self) -> None:
        """Textual's SVG screenshot into the current folder, never over an existing file; says where."""
        try:
            path = screenshot.save(self)
        except OSError as err:
            self.notify(f"screenshot not saved: {err.strerror or err}", severity="error", timeout=4,
                        markup=False)
        else:
            self.notify(f"screenshot saved to {path}", title="screenshot", timeout=4, markup=False)

    def action_next_theme(self) -> None:
        names = sorted(self._themes)
        i = names.index(self.theme) if self.theme in names else -1
        self.theme = names[(i + 1) % len(names)]
        self.notify(f"theme: {self.theme}", timeout=2)


def run_tui(watcher: WatchModel, args: argparse.Namespace, sinks: Sinks | None = None) -> int:
    """Runs the app over a Watcher until the user quits (or, with --until-done, every run has ended);
    starts and stops the watcher; `sinks` (the caller's, closed by it) get every alert change. Returns the app's own
    code (0 unless it failed); the caller turns a clean quit into the worst severity seen."""
    app = TrainwatchApp(watcher, theme=getattr(args, "theme", None),
                        refresh_s=float(getattr(args, "refresh", None) or DEFAULT_REFRESH_S),
                        until_done=bool(getattr(args, "until_done", False)), sinks=sinks, freeze_heap=True,
                        baseline=getattr(args, "baseline_run", None))
    result = app.run()
    return int(result or app.return_code or 0)  # a crash keeps Textual's own non-zero code
