"""Messages posted into the app from other threads (the watcher's engine thread)."""

from __future__ import annotations

from textual.message import Message

from trainwatch.alerts import AlertChange
from trainwatch.model import Severity


class AlertChanged(Message):
    """An alert fired or resolved; the app marks its view dirty and may notify."""

    def __init__(self, change: AlertChange, *, backlog: bool = False) -> None:
        super().__init__()
        self.change = change
        self.backlog = backlog  # fired while the file's existing lines were read, before watching


class SinkNotice(Message):
    """A one-line trouble of a sink (an unwritable --alert-log, a failing --on-alert hook)."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text


class ExitOn(Message):
    """--exit-on tripped: an alert at least that severe fired; the app closes."""

    def __init__(self, severity: Severity) -> None:
        super().__init__()
        self.severity = severity
