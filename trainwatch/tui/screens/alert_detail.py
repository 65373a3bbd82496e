"""Enter on an alert: its evidence and the fixes in order, full screen; `a` acknowledges from here too."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import ModalScreen
from textual.widgets import Static

from trainwatch.tui.widgets.alerts import detail
from trainwatch.view.snapshot import AlertView


class AlertScreen(ModalScreen[bool]):
    """Dismisses with True when the user acknowledged the alert."""

    BINDINGS = [Binding("escape,q,enter", "close", "close", id="alert.close"),
                Binding("a", "ack", "acknowledge", id="alert.ack")]
    DEFAULT_CSS = """
    AlertScreen { align: center middle; }
    AlertScreen > Static { width: 90%; height: auto; max-height: 90%; border: round $primary;
                           background: $surface; padding: 1 2; overflow-y: auto; }
    """

    def __init__(self, alert: AlertView) -> None:
        super().__init__()
        self.alert = alert

    def compose(self) -> ComposeResult:
        yield Static(detail(self.alert), markup=False)

    def action_close(self) -> None:
        self.dismiss(False)

    def action_ack(self) -> None:
        self.dismiss(True)
