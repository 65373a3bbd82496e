"""Which alerts get a toast, and how many toasts there are: one at most, and never over the alerts.

A toast is for news. The backlog (alerts that fired while the file's existing lines were read) is
already in the alerts panel, so it gets none; a burst gets one toast with a count; a screen too
small to keep a toast away from the alerts panel gets none, since that panel is then the first
thing on it. Toasts sit top right, under the header (app.tcss), over the chart.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from trainwatch.alerts import AlertChange
from trainwatch.model import Alert, AlertState, Severity

TOAST_S = 6.0
MIN_WIDTH = 100  # narrower: the chart is too narrow to hold a toast beside the alert panel
MIN_HEIGHT = 20


class AlertToaster:
    """Collects alerts that fire while watching and shows them as a single toast."""

    def __init__(self, app: Any, clock: Callable[[], float]) -> None:
        self.app = app
        self.clock = clock
        self.watching = False  # set once the backlog has been read
        self._pending: list[Alert] = []
        self._count = 0  # alerts in the toast on screen
        self._worst: Alert | None = None
        self._until = float("-inf")

    def fired(self, change: AlertChange) -> None:
        """An alert changed; called on the app's thread. Toasts only news worth a look."""
        a = change.alert
        if change.state is not AlertState.FIRING or a.severity < Severity.WARNING:
            return
        width, height = self.app.size
        if width < MIN_WIDTH or height < MIN_HEIGHT:
            return
        if not self._pending:
            self.app.call_later(self._flush)  # alerts of one burst arrive together: one toast for all
        self._pending.append(a)

    def _flush(self) -> None:
        if not self._pending:
            return
        now = self.clock()
        if now >= self._until:  # the last toast is gone: start counting again
            self._count, self._worst = 0, None
        for a in self._pending:
            self._count += 1
            if self._worst is None or a.severity > self._worst.severity:
                self._worst = a
        self._pending.clear()
        self._until = now + TOAST_S
        worst = self._worst
        assert worst is not None
        what = f"{worst.title or worst.rule} (step {worst.first_step})"
        message = what if self._count == 1 else f"{self._count} new alerts, the worst: {what}"
        self.app.clear_notifications()
        self.app.notify(message, title=worst.severity.label.upper(), markup=False, timeout=TOAST_S,
                        severity="error" if worst.severity is Severity.CRITICAL else "warning")
