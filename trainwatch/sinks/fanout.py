"""The alert outlets `tail` offers whatever the front end: --alert-log, --on-alert and --exit-on.

Headless printing and the dashboard differ in how they show an alert, but the promises made on the
command line must hold the same with either, so both attach one `Sinks` to the watcher instead of
each wiring the log file, the hook runner and the exit condition on its own.

`send` runs on the engine thread: writing a line, queueing a hook and setting a flag never block.
What to do once `--exit-on` trips is the front end's business (set an event, close the app), so it
is handed in as `on_exit`, called at most once.
"""

from __future__ import annotations

import argparse
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from trainwatch.alerts import AlertChange
from trainwatch.model import AlertState, Severity
from trainwatch.sinks.alert_log import AlertLog
from trainwatch.sinks.delivered import Delivered, default_path
from trainwatch.sinks.hooks import HookRunner


class Listened(Protocol):
    """What `attach` needs of the watcher (a Watcher, or the TUI tests' EngineModel)."""

    def add_listener(self, fn: Callable[[AlertChange], None]) -> None: ...


class Sinks:
    """The alert log, the hook runner and the exit condition, fed by one listener."""

    def __init__(self, *, alert_log: str | None = None, on_alert: str | None = None,
                 on_alert_severity: Severity = Severity.WARNING, hook_timeout: float = 10.0,
                 exit_on: Severity | None = None, delivered: Delivered | None = None) -> None:
        # Opened here, before any screen is drawn, so an unwritable log or an unsplittable command is
        # one error line on a plain terminal, never a traceback inside the dashboard.
        # callers may hand in callables that return something (post_message returns a bool): it is ignored
        self._notice: Callable[[str], object] = lambda text: None
        self._on_exit: Callable[[Severity], object] = lambda severity: None
        self.exit_on = exit_on
        self.tripped: Severity | None = None  # the severity of the alert that met --exit-on
        self._trip_lock = threading.Lock()
        self.delivered = delivered or Delivered(None)
        self.alert_log = AlertLog(alert_log, notice=self._say) if alert_log else None
        if self.alert_log is not None:
            self.delivered.absorb(self.alert_log.records())
        try:
            self.hooks = HookRunner(on_alert, min_severity=on_alert_severity, timeout=hook_timeout,
                                    notice=self._say) if on_alert else None
        except BaseException:
            self._close_log()
            raise

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Sinks:
        """From `tail`'s options; a namespace without them (`demo`) gets no sink at all."""
        alert_log, on_alert = getattr(args, "alert_log", None), getattr(args, "on_alert", None)
        state = getattr(args, "state_file", None)
        path = Path(state) if state else default_path(alert_log, on_alert, getattr(args, "paths", None) or [])
        return cls(alert_log=alert_log, on_alert=on_alert,
                   on_alert_severity=getattr(args, "on_alert_severity", None) or Severity.WARNING,
                   hook_timeout=float(getattr(args, "hook_timeout", None) or 10.0),
                   exit_on=getattr(args, "exit_on", None),
                   delivered=Delivered(None if getattr(args, "no_state", False) else path))

    def attach(self, watcher: Listened, *, on_exit: Callable[[Severity], object] | None = None,
               notice: Callable[[str], object] | None = None) -> None:
        """Listens to the watcher's alert changes. `on_exit(severity)` is called once when --exit-on
        trips; `notice(text)` gets the sinks' own one-line troubles (an unwritable log, a failing hook)."""
        if on_exit is not None:
            self._on_exit = on_exit
        if notice is not None:
            self._notice = notice
        if self.alert_log is not None:
            self.alert_log.announce()
        self._say_delivery_notes()
        watcher.add_listener(self.send)

    def send(self, change: AlertChange) -> None:
        """On the engine thread: log, hand to the hook (each change once, across restarts), check --exit-on."""
        if (self.alert_log is not None or self.hooks is not None) and not self.delivered.seen(change):
            self.delivered.register(change.alert.source)
            if self.alert_log is not None:
                self.alert_log.write(change)
            self.delivered.add(change)  # before the hook: a kill in between loses a hook run, never repeats one
            self._say_delivery_notes()
            if self.hooks is not None:
                self.hooks.submit(change)
        severity = change.alert.severity
        if self.exit_on is None or change.state is not AlertState.FIRING or severity < self.exit_on:
            return
        with self._trip_lock:
            if self.tripped is not None:
                return
            self.tripped = severity
        self._on_exit(severity)

    def close(self) -> None:
        """After the watcher stopped: lets a running hook finish (briefly) and closes the log."""
        if self.hooks is not None:
            self.hooks.stop()
        self._close_log()

    def _close_log(self) -> None:
        if self.alert_log is not None:
            self.alert_log.close()

    def _say(self, text: str) -> None:
        self._notice(text)

    def _say_delivery_notes(self) -> None:
        notes, self.delivered.notes = self.delivered.notes, []
        for text in notes:
            self._say(text)
