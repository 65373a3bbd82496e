"""The last raw lines of one source, shown literally: escapes and control characters gone, no markup."""

from __future__ import annotations

from textual.content import Content
from textual.widgets import Static

from trainwatch.tui.text import clean, is_error_line
from trainwatch.tui.widgets.styles import retitle


class LogPane(Static, can_focus=True):
    DEFAULT_CSS = """
    LogPane { height: 9; padding: 0 1; }
    """

    def __init__(self, **kwargs: object) -> None:
        super().__init__(markup=False, **kwargs)  # type: ignore[arg-type]
        self.border_title = "log"
        self._shown: tuple[str, tuple[tuple[int, str], ...], int] = ("", (), 0)

    def show(self, source: str, lines: list[tuple[int, str]]) -> None:
        rows = max(1, self.content_size.height or 7)
        tail = tuple(lines[-rows:])
        key = (source, tail, self.content_size.width)
        if key == self._shown:
            return
        self._shown = key
        retitle(self, f"log · {source}" if source else "log")
        self.update(render_lines(tail, self.content_size.width or 80), layout=False)  # fixed height


def render_lines(lines: tuple[tuple[int, str], ...] | list[tuple[int, str]], width: int) -> Content:
    if not lines:
        return Content.styled("no lines yet", "$text-muted")
    num_w = len(str(lines[-1][0]))
    out = []
    for n, raw in lines:
        text = clean(raw)
        style = "$error" if is_error_line(text) else ""
        body = text[: max(1, width - num_w - 3)]
        out.append(Content.assemble((f"{n:>{num_w}} ", "$text-muted"), (body, style)))
    return Content("\n").join(out)
