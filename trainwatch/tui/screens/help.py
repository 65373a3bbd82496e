"""? shows every key the app binds, read from the bindings themselves so the list cannot go stale."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Static


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,q,question_mark", "dismiss", "close", id="help.close")]
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > Static { width: auto; max-width: 90%; height: auto; max-height: 90%; border: round $primary;
                          background: $surface; padding: 1 2; overflow-y: auto; }
    """

    def __init__(self, bindings: list[Binding]) -> None:
        super().__init__()
        self._keys = bindings

    def compose(self) -> ComposeResult:
        rows = [Content.styled("trainwatch keys", "bold $accent"), Content("")]
        for b in self._keys:
            keys = ", ".join(_pretty(k) for k in b.key.split(","))
            rows.append(Content.assemble((f"{keys:<18}", "bold"), b.description or b.action))
        rows += [Content(""), Content.styled("escape / q / ? closes this", "$text-muted")]
        yield Static(Content("\n").join(rows), markup=False)

    def action_dismiss(self) -> None:  # type: ignore[override]
        self.dismiss(None)


_NAMES = {"question_mark": "?", "slash": "/", "escape": "esc", "enter": "enter", "tab": "tab",
          "shift+tab": "shift+tab"}


def _pretty(key: str) -> str:
    return _NAMES.get(key.strip(), key.strip())
