"""Alerts panel: a list (live first, most severe, newest) and the selected alert's evidence and fixes."""

from __future__ import annotations

import textwrap

from textual.binding import Binding
from textual.content import Content
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from trainwatch.model import AlertState
from trainwatch.tui.charts import fmt
from trainwatch.tui.text import clean
from trainwatch.tui.widgets.styles import retitle, severity_style, severity_word
from trainwatch.view.snapshot import AlertView


class AlertList(OptionList):
    DEFAULT_CSS = """
    AlertList { width: 1fr; height: 1fr; }
    """
    # OptionList binds enter (hidden) itself; shown here, so the footer says what enter does on a card or alert
    BINDINGS = [Binding("enter", "select", "open")]

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.border_title = "alerts"
        self._shown: tuple[object, ...] | None = None
        self._reading = True
        self.views: dict[str, AlertView] = {}

    def on_resize(self) -> None:
        if self.views:  # rows are laid out for the width: redo them
            self.set_alerts(list(self.views.values()), self._reading, _order_kept=True)

    def set_alerts(self, alerts: list[AlertView], reading: bool = True, *, _order_kept: bool = False) -> None:
        """`reading` False: no log is read yet, so no alert is no verdict rather than "healthy"."""
        self._reading = reading
        self.views = {a.fingerprint: a for a in alerts}
        width = max(12, (self.scrollable_content_region.width or 40) - 1)
        # What a row shows; not the count (it grows with every repeat and is shown only in the detail).
        sig = (width, reading, tuple((a.fingerprint, a.state.value, a.acknowledged, a.severity.label, a.live, a.held)
                                     for a in alerts))
        if sig == self._shown:
            return
        keep = self.highlighted_option.id if self.highlighted_option is not None else None
        self.clear_options()
        if not alerts and not reading:
            self.add_option(Option(Content.styled("no verdict: nothing read yet", "$warning"), id="-none",
                                   disabled=True))
        elif not alerts:
            self.add_option(Option(Content.styled("no alerts — the run looks healthy", "$success"), id="-none",
                                   disabled=True))
        self.add_options([Option(row(a, width), id=a.fingerprint) for a in alerts])
        if keep is not None and keep in self.views and (self.has_focus or _order_kept):
            self.highlighted = self.get_option_index(keep)  # unfocused, it follows the top
        elif alerts:
            self.highlighted = 0
        self._shown = sig
        live = sum(1 for a in alerts if a.live)
        retitle(self, subtitle=f"{live} live / {len(alerts)}")

    @property
    def selected(self) -> AlertView | None:
        opt = self.highlighted_option
        return self.views.get(opt.id) if opt is not None and opt.id else None


def row_state(a: AlertView) -> str:
    """The bracketed word after a row: acknowledged, held back by inhibition, resolved (recovered) or
    stopped (resolved without recovering), ended (a one-time judgement that no longer holds)."""
    if a.acknowledged:
        return "ack"
    ended = "ended" if a.once else "stopped" if a.stopped else "resolved"  # resolved means recovered
    if a.held:
        return "held" if a.state is not AlertState.RESOLVED else f"held, {ended}"
    return ended if a.state is AlertState.RESOLVED else ""


INDENT = 5  # the severity word's column
HANG = 2  # a title that does not fit beside the step goes on the lines below, indented this much
TITLE_LINES = 2


def row(a: AlertView, width: int) -> Content:
    """One line when it fits; else severity and step, then the title indented under them, cut with "…"."""
    sev = severity_style(a.severity)
    state = row_state(a)
    step = f"step {a.step}" if a.step is not None else "step ?"
    title = a.title or a.rule
    title_style = "" if a.live else "$text-muted"
    tag = (f"  [{state}]" if state else "", "$text-muted")
    word = (severity_word(a.severity).ljust(INDENT), sev)
    if INDENT + 11 + len(title) + len(tag[0]) <= width:
        return Content.assemble(word, (step.ljust(11), "$text-muted"), (title, title_style), tag)
    lines = [Content.assemble(word, (step, "$text-muted"), tag)]
    room = max(4, width - HANG)
    wrapped = textwrap.wrap(title, room) or [""]
    if len(wrapped) > TITLE_LINES:
        last = " ".join(wrapped[TITLE_LINES - 1:])
        wrapped = wrapped[:TITLE_LINES - 1] + [last[: room - 1].rstrip() + "…"]
    lines += [Content.assemble(" " * HANG, (part, title_style)) for part in wrapped]
    return Content("\n").join(lines)


def detail(a: AlertView | None, width: int | None = None, unread: tuple[str, ...] | None = None,
           fixes_first: bool = False) -> Content:
    """The message, the fixes in the order the rule gives them, then the evidence.

    With a `width` the title goes on a line of its own when it does not fit beside the severity,
    so a narrow panel still shows it whole rather than broken after a few words. With no alert and
    `unread` given (nothing read yet), the watcher's notices, which say why. `fixes_first` puts what
    to try before the message: a panel too short for both keeps the advice in view.
    """
    if a is None and unread is not None:
        lines = [Content.styled("Nothing understood yet: no verdict.", "bold $warning")]
        lines += [Content(clean(text)) for text in unread]
        return Content("\n").join(lines)
    if a is None:
        return Content.styled("select an alert to see its evidence and what to try", "$text-muted")
    sev = severity_style(a.severity)
    word = (severity_word(a.severity), sev)
    title = (a.title or a.rule, "bold")
    ack = ("  (acknowledged)" if a.acknowledged else "", "$text-muted")
    head = Content.assemble(word, " ", title, ack)
    if width is not None and head.cell_length > width:
        head = Content.assemble(word, ack, "\n", title)
    parts = [head]
    advice: list[Content] = []
    if a.fixes:
        advice.append(Content.styled("what to try", "bold $accent"))
        for i, fix in enumerate(a.fixes, 1):
            advice.append(Content.assemble((f"  {i}. ", "bold"), fix))
    if fixes_first:
        parts += advice
    parts.append(Content(a.message))
    if a.held:
        parts.append(Content.styled("held back: another alert explains this one (inhibition); it does not count "
                                    "towards the badge" + ("" if a.told else " and was not sent"), "$text-muted"))
    if not fixes_first:
        parts += advice
    parts.append(Content.assemble(("rule ", "$text-muted"), a.rule, ("  source ", "$text-muted"), a.source,
                              (f":{a.line}" if a.line else ""), ("  step ", "$text-muted"),
                              str(a.step) if a.step is not None else "?", ("  seen ", "$text-muted"), f"{a.count}×"))
    ev = [(k, v) for k, v in a.evidence.items() if not isinstance(v, (list, dict)) or len(str(v)) < 80]
    if ev:
        parts.append(Content.styled("evidence", "bold $accent"))
        for k, v in ev[:8]:
            text = fmt(v) if isinstance(v, float) else str(v)
            parts.append(Content.assemble(("  " + str(k) + ": ", "$text-muted"), text[:200]))
    return Content("\n").join(parts)


def _line_of(content: Content, width: int, text: str) -> int:
    """The row, wrapped at `width`, of the first line that starts with `text` (a large number if none)."""
    for i, line in enumerate(content.wrap(width)):
        if line.plain.startswith(text):
            return i
    return 1 << 30


class AlertDetail(Static):
    DEFAULT_CSS = """
    AlertDetail { width: 1fr; height: 1fr; padding: 0 1; overflow-y: auto; }
    """

    def __init__(self, **kwargs: object) -> None:
        super().__init__(markup=False, **kwargs)  # type: ignore[arg-type]
        self.border_title = "evidence & fixes"
        self._shown: AlertView | None = None
        self._unread: tuple[str, ...] | None = None
        self._width: int | None = None
        self._height = 0
        self._lines = -1  # the text's height at that width: the scroll range depends on it

    def show(self, a: AlertView | None, unread: tuple[str, ...] | None = None) -> None:
        """Redraws only when the text changed; relayouts only when its height did (a repeat of the same
        alert only bumps "seen N×"), so a refresh that changes nothing here costs nothing here."""
        width = self.content_size.width or None
        height = self.content_size.height
        if (a, unread, width, height) == (self._shown, self._unread, self._width, self._height):
            return
        self._shown, self._unread, self._width, self._height = a, unread, width, height
        content = detail(a, width, unread)
        if width and height and a is not None and a.fixes and _line_of(content, width, "what to try") >= height:
            content = detail(a, width, unread, fixes_first=True)  # the advice would be out of view
        lines = len(content.wrap(width)) if width else -1
        self.update(content, layout=lines != self._lines or lines < 0)
        self._lines = lines

    def on_resize(self) -> None:
        self.call_after_refresh(self._reshow)

    def _reshow(self) -> None:
        """Redraws what is shown when it runs (not when the resize came: a newer show may be between)."""
        self._width = None
        self.show(self._shown, self._unread)
