"""The log pane: the last raw lines of one source, shown literally, followed like toolong, searchable.

Log text is untrusted: lines are cleaned (no escapes, no control characters) and drawn as plain
text segments, never markup; a search is a plain case-insensitive substring, never a pattern.

Follow mode: the pane stays on the newest line until you scroll up; `f` or `end` follows again.
`/` opens a search box under the lines; enter jumps to the next match, `n`/`N` move between
matches, escape closes the box (and, in the lines, clears the search).
"""

from __future__ import annotations

from rich.segment import Segment
from textual import on
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widgets import Input

from trainwatch.tui.text import clean, is_error_line
from trainwatch.tui.widgets.styles import retitle

Row = tuple[int, str, bool]  # line number, cleaned text, an error line


def matches(text: str, query: str) -> list[tuple[int, int]]:
    """Where `query` occurs in `text`, case-insensitive, as (start, end) spans; plain text only."""
    if not query:
        return []
    hay, needle, out, i = text.casefold(), query.casefold(), [], 0
    if len(hay) != len(text):  # casefold changed the length (ß -> ss): fall back to lower()
        hay, needle = text.lower(), query.lower()
    while (i := hay.find(needle, i)) >= 0:
        out.append((i, i + len(needle)))
        i += max(1, len(needle))
    return out


class LogLines(ScrollView, can_focus=True):
    """The scrolling lines. Draws only the rows on screen, so a long ring costs nothing per frame."""

    BINDINGS = [
        Binding("slash", "search", "search"),
        Binding("n", "next_match(1)", "next match", show=False),
        Binding("N", "next_match(-1)", "previous", show=False),
        Binding("f", "follow", "follow"),
        Binding("end", "follow", "follow", show=False),
        Binding("escape", "clear_search", "clear", show=False),
    ]
    COMPONENT_CLASSES = {"log-lines--number", "log-lines--error", "log-lines--match", "log-lines--current",
                         "log-lines--target"}
    DEFAULT_CSS = """
    LogLines { height: 1fr; background: $surface; overflow-x: auto; overflow-y: auto; }
    LogLines > .log-lines--number { color: $text-muted; }
    LogLines > .log-lines--error { color: $error; }
    LogLines > .log-lines--match { background: $warning 40%; }
    LogLines > .log-lines--current { background: $warning; color: $background; text-style: bold; }
    LogLines > .log-lines--target { background: $accent 25%; }
    """

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.rows: list[Row] = []
        self.follow = True
        self.query_text = ""
        self.hits: list[int] = []  # row indexes with a match
        self.current: int | None = None  # the row index of the current match
        self.target: int | None = None  # a line jumped to (an alert's)
        self._num_w = 1
        self._moving = False  # our own scrolls do not count as the user scrolling up

    # -- content -------------------------------------------------------------------------------

    def set_rows(self, rows: list[Row]) -> None:
        """New lines: keeps the view on the same line when not following, and the current match."""
        shown = self.rows and not self.follow and self.scroll_y < len(self.rows)
        top = self.rows[int(self.scroll_y)][0] if shown else None
        cur = self.rows[self.current][0] if self.current is not None and self.current < len(self.rows) else None
        tgt = self.rows[self.target][0] if self.target is not None and self.target < len(self.rows) else None
        self.rows = rows
        self._num_w = len(str(rows[-1][0])) if rows else 1
        width = max((len(t) for _, t, _ in rows), default=0) + self._num_w + 1
        self._resize_virtual(Size(width, len(rows)))
        self._find()
        self.current = self.index_of(cur) if cur is not None else None
        self.target = self.index_of(tgt) if tgt is not None else None
        if self.follow:
            self._scroll(len(rows))
            if not self.size.height:  # not laid out yet: again once it is
                self.call_after_refresh(self._keep_following)
        elif top is not None and (i := self.index_of(top, nearest=True)) is not None:
            self._scroll(i, top_line=True)
        self.refresh()

    def _resize_virtual(self, size: Size) -> None:
        """The scroll range follows the lines without a relayout of the screen.

        Assigning `virtual_size` asks Textual to lay out the whole screen, and a followed log grows
        on every refresh (that relayout was most of the dashboard's CPU). The pane's own size never
        depends on its lines (it is 1fr by 1fr), so only the scroll range and the scrollbars need
        updating; when a scrollbar appears or goes, Textual still relayouts (that changes the
        room for the lines).
        """
        if size == self.virtual_size:
            return
        self.set_reactive(LogLines.virtual_size, size)
        if self.is_mounted and self.container_size:
            self._scroll_update(size)
        else:
            self.refresh(layout=True)  # not laid out yet: the first layout takes the size as it is

    def index_of(self, line: int, *, nearest: bool = False) -> int | None:
        """The row showing log line `line` (or, with nearest, the first one after it)."""
        for i, (n, _, _) in enumerate(self.rows):
            if n == line or (nearest and n > line):
                return i
        return None

    # -- drawing -------------------------------------------------------------------------------

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        i = scroll_y + y
        width = self.size.width
        base = self.rich_style
        if i >= len(self.rows):
            if not self.rows and y == 0:
                return Strip([Segment("no lines yet", base + self.get_component_rich_style("log-lines--number"))]
                             ).crop_extend(0, width, base)
            return Strip.blank(width, base)
        n, text, err = self.rows[i]
        comp = self.get_component_rich_style
        line_style = base + comp("log-lines--error") if err else base
        if i == self.target:
            line_style += comp("log-lines--target")
        segs = [Segment(f"{n:>{self._num_w}} ", base + comp("log-lines--number"))]
        spans = matches(text, self.query_text) if self.query_text else []
        hit_style = comp("log-lines--current") if i == self.current else comp("log-lines--match")
        at = 0
        for start, end in spans:
            segs.append(Segment(text[at:start], line_style))
            segs.append(Segment(text[start:end], line_style + hit_style))
            at = end
        segs.append(Segment(text[at:], line_style))
        return Strip(segs).crop_extend(scroll_x, scroll_x + width, base).apply_offsets(scroll_x, i)

    # -- follow mode ---------------------------------------------------------------------------

    def _scroll(self, index: int, *, top_line: bool = False) -> None:
        self._moving = True
        try:
            if index >= len(self.rows):
                self.scroll_end(animate=False, immediate=True, x_axis=False)
            elif top_line:
                self.scroll_to(y=index, animate=False, immediate=True)
            else:  # a jump: the line a third of the way down, with what led to it above
                self.scroll_to(y=max(0, index - max(1, self.size.height // 3)), animate=False, immediate=True)
        finally:
            self._moving = False

    def _keep_following(self) -> None:
        if self.follow:
            self._scroll(len(self.rows))

    def on_resize(self) -> None:
        self.call_after_refresh(self._keep_following)

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        # The user scrolled up (a clamp after a resize lowers scroll_y too, but from past the new end).
        if not self._moving and new_value < old_value <= self.max_scroll_y and self.follow:
            self.follow = False
            self._changed()

    def action_follow(self) -> None:
        self.follow, self.target = True, None
        self._scroll(len(self.rows))
        self._changed()

    def _changed(self) -> None:
        self.refresh()
        pane = self.parent
        if isinstance(pane, LogPane):
            pane.retitle()

    # -- search and jumps ----------------------------------------------------------------------

    def _find(self) -> None:
        q = self.query_text
        self.hits = [i for i, (_, t, _) in enumerate(self.rows) if q and matches(t, q)]

    def search(self, query: str) -> int:
        """Highlights every match and jumps to the first one from the top of the view; the count."""
        self.query_text = query
        self._find()
        self.current = None
        if self.hits:
            start = int(self.scroll_y)
            self._goto(next((i for i in self.hits if i >= start), self.hits[0]))
        self._changed()
        return len(self.hits)

    def action_next_match(self, step: int) -> None:
        if not self.hits:
            if self.query_text:
                self.app.notify(f"no match for {self.query_text!r}", timeout=2, markup=False)
            return
        if self.current is None:
            here = int(self.scroll_y)
            later = [i for i in self.hits if (i >= here if step > 0 else i <= here + self.size.height)]
            self._goto(later[0] if step > 0 and later else later[-1] if later else self.hits[0 if step > 0 else -1])
        else:
            k = self.hits.index(self.current) if self.current in self.hits else 0
            self._goto(self.hits[(k + step) % len(self.hits)])
        self._changed()

    def _goto(self, index: int) -> None:
        self.current = index
        self.follow = False
        if not (self.scroll_y <= index < self.scroll_y + self.size.height):
            self._scroll(index)

    def jump_to_line(self, line: int) -> bool:
        """Shows log line `line` marked, follow off; False when it is not among the lines kept."""
        i = self.index_of(line)
        if i is None:
            return False
        self.follow, self.target = False, i
        self._scroll(i)
        self._changed()
        return True

    def action_search(self) -> None:
        pane = self.parent
        if isinstance(pane, LogPane):
            pane.open_search()

    def action_clear_search(self) -> None:
        if self.query_text or self.target is not None:
            self.query_text, self.hits, self.current, self.target = "", [], None, None
            self._changed()


class LogPane(Vertical):
    """The framed pane: the lines and, while searching, a search box under them."""

    DEFAULT_CSS = """
    LogPane { height: 9; padding: 0 1; }
    LogPane > Input { display: none; height: 1; border: none; padding: 0 1; background: $boost; }
    LogPane.-searching > Input { display: block; }
    """
    BINDINGS = [Binding("escape", "close_search", "close search", show=False)]

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.border_title = "log"
        self.source = ""
        self._shown: tuple[str, int, int] = ("", -1, 0)
        self._clean: dict[tuple[int, str], Row] = {}

    def compose(self):  # type: ignore[no-untyped-def]
        yield LogLines()
        yield Input(placeholder="search the log (plain text), enter to find", id="log-search")

    @property
    def lines(self) -> LogLines:
        return self.query_one(LogLines)

    def show(self, source: str, lines: list[tuple[int, str]]) -> None:
        """Takes the snapshot's lines; does nothing when they have not changed."""
        key = (source, lines[-1][0] if lines else -1, len(lines))
        if key == self._shown:
            return
        self._shown = key
        if source != self.source:
            self.source, self._clean = source, {}
        cache = self._clean
        rows: list[Row] = []
        for n, raw in lines:
            row = cache.get((n, raw))
            if row is None:
                text = clean(raw)
                row = (n, text, is_error_line(text))
            rows.append(row)
        self._clean = {(n, raw): row for (n, raw), row in zip(lines, rows)}
        self.lines.set_rows(rows)
        self.retitle()

    def retitle(self) -> None:
        """Title: the source. Subtitle: following or not, and the search with its count."""
        lines = self.lines
        title = Content("log · " + self.source) if self.source else Content("log")
        parts = []
        if lines.query_text:
            at = (lines.hits.index(lines.current) + 1) if lines.current in lines.hits else 0
            parts.append(f"/{lines.query_text} {at}/{len(lines.hits)}" if lines.hits else
                         f"/{lines.query_text} no match")
        parts.append("following" if lines.follow else "paused · f follows")
        retitle(self, title, Content(" · ".join(parts)))

    def jump_to_line(self, line: int) -> bool:
        return self.lines.jump_to_line(line)

    def open_search(self) -> None:
        box = self.query_one(Input)
        box.value = self.lines.query_text
        self.add_class("-searching")
        box.focus()

    def action_close_search(self) -> None:
        if self.has_class("-searching"):
            self.remove_class("-searching")
            self.lines.focus()

    @on(Input.Submitted, "#log-search")
    def _searched(self, event: Input.Submitted) -> None:
        event.stop()
        found = self.lines.search(event.value)
        self.remove_class("-searching")
        self.lines.focus()
        if event.value and not found:
            self.app.notify(f"no match for {event.value!r}", timeout=2, markup=False)
