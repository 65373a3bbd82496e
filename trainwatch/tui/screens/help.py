"""? shows every key the app binds, read from the bindings themselves so the list cannot go stale.

Keys that do the same thing share a row (tab and right both move to the next panel), and the list
sits in a focused scroll view: on a small terminal it scrolls with the arrow and page keys instead
of being cut off.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Static

from trainwatch.tui.widgets.log_pane import LogLines


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,q,question_mark,f1", "dismiss", "close", id="help.close"),
                # the scroll view has the focus here: the app's ctrl+s is bound again so it still saves
                Binding("ctrl+s", "app.screenshot_svg", "screenshot", id="help.screenshot")]
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll { width: auto; max-width: 100%; height: auto; max-height: 100%;
                                  border: round $primary; border-title-color: $primary;
                                  border-subtitle-color: $foreground; background: $surface; padding: 0 1;
                                  scrollbar-size-vertical: 1; }
    HelpScreen > VerticalScroll > Static { width: auto; }
    """

    def __init__(self, bindings: list[Binding]) -> None:
        super().__init__()
        self._keys = bindings

    def compose(self) -> ComposeResult:
        log_keys = pane_keys("in the log pane", [b for b in LogLines.BINDINGS if isinstance(b, Binding)])
        text = Content("\n").join([keys_table(self._keys), Content(""), log_keys])
        body = VerticalScroll(Static(text, markup=False), id="help-body")
        body.border_title = "trainwatch keys"
        body.border_subtitle = "↑↓ scroll · esc closes"
        yield body

    def on_mount(self) -> None:
        self.query_one("#help-body").focus()

    def action_dismiss(self) -> None:  # type: ignore[override]
        self.dismiss(None)


def keys_table(bindings: list[Binding]) -> Content:
    """One row per action: the keys that do it, then what it does, in the order they were bound."""
    rows: dict[str, list[str]] = {}
    for b in bindings:
        what = b.description or b.action
        rows.setdefault(what, []).extend(_pretty(k) for k in b.key.split(","))
    width = max(len(", ".join(keys)) for keys in rows.values()) + 2 if rows else 0
    lines = [Content.assemble((", ".join(keys).ljust(width), "bold $accent"), what) for what, keys in rows.items()]
    return Content("\n").join(lines)


def pane_keys(pane: str, bindings: list[Binding]) -> Content:
    """A panel's own keys on one line (they work while it has the focus), keys sharing an action joined."""
    rows: dict[str, list[str]] = {}
    for b in bindings:
        rows.setdefault(b.description or b.action, []).extend(_pretty(k) for k in b.key.split(","))
    parts = [Content.assemble(("/".join(keys), "bold $accent"), " ", what) for what, keys in rows.items()]
    return Content.assemble((pane, "bold"), "\n", Content(" · ").join(parts))


_NAMES = {"question_mark": "?", "slash": "/", "escape": "esc", "enter": "enter", "tab": "tab",
          "shift+tab": "shift+tab", "right": "→", "left": "←"}


def _pretty(key: str) -> str:
    return _NAMES.get(key.strip(), key.strip())
