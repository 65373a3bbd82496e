"""Messages posted into the app from other threads (the watcher's engine thread)."""

from __future__ import annotations

from textual.message import Message

from trainwatch.alerts import AlertChange


class AlertChanged(Message):
    """An alert fired or resolved; the app marks its view dirty and may notify."""

    def __init__(self, change: AlertChange, *, backlog: bool = False) -> None:
        super().__init__()
        self.change = change
        self.backlog = backlog  # fired while the file's existing lines were read, before watching
