"""Alerts panel: a list (live first, most severe, newest) and the selected alert's evidence and fixes."""

from __future__ import annotations

from textual.content import Content
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from trainwatch.model import AlertState
from trainwatch.tui.charts import fmt
from trainwatch.tui.text import clean
from trainwatch.tui.view import AlertView
from trainwatch.tui.widgets.styles import retitle, severity_style, severity_word


class AlertList(OptionList):
    DEFAULT_CSS = """
    AlertList { width: 1fr; height: 1fr; border: round $panel; }
    AlertList:focus { border: round $primary; }
    """

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.border_title = "alerts"
        self._shown: tuple[tuple[str, str, bool, int, str], ...] | None = None
        self.views: dict[str, AlertView] = {}

    def set_alerts(self, alerts: list[AlertView], reading: bool = True) -> None:
        """`reading` False: no log is read yet, so no alert is no verdict rather than "healthy"."""
        self.views = {a.fingerprint: a for a in alerts}
        # What a row shows; not the count (it grows with every repeat and is shown only in the detail).
        sig = tuple((a.fingerprint, a.state.value, a.acknowledged, a.severity.label, a.live) for a in alerts)
        sig += (reading,)  # type: ignore[assignment]
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
        self.add_options([Option(self._row(a), id=a.fingerprint) for a in alerts])
        if keep is not None and keep in self.views and self.has_focus:  # unfocused, it follows the top
            self.highlighted = self.get_option_index(keep)
        elif alerts:
            self.highlighted = 0
        self._shown = sig
        live = sum(1 for a in alerts if a.live)
        retitle(self, subtitle=f"{live} live / {len(alerts)}")

    @property
    def selected(self) -> AlertView | None:
        opt = self.highlighted_option
        return self.views.get(opt.id) if opt is not None and opt.id else None

    @staticmethod
    def _row(a: AlertView) -> Content:
        sev = severity_style(a.severity)
        state = "ack" if a.acknowledged else ("resolved" if a.state is AlertState.RESOLVED else "")
        step = f"step {a.step}" if a.step is not None else "step ?"
        return Content.assemble((severity_word(a.severity).ljust(5), sev), (step.ljust(11), "$text-muted"),
                                (a.title or a.rule, "" if a.live else "$text-muted"),
                                (f"  [{state}]" if state else "", "$text-muted"))


def detail(a: AlertView | None, unread: tuple[str, ...] | None = None) -> Content:
    """The message, the fixes in the order the rule gives them, then the evidence.

    With no alert and `unread` given (nothing read yet), the watcher's notices, which say why."""
    if a is None and unread is not None:
        lines = [Content.styled("Nothing understood yet: no verdict.", "bold $warning")]
        lines += [Content(clean(text)) for text in unread]
        return Content("\n").join(lines)
    if a is None:
        return Content.styled("select an alert to see its evidence and what to try", "$text-muted")
    sev = severity_style(a.severity)
    parts = [Content.assemble((severity_word(a.severity), sev), " ", (a.title or a.rule, "bold"),
                              ("  (acknowledged)" if a.acknowledged else "", "$text-muted")),
             Content(a.message)]
    if a.fixes:
        parts.append(Content.styled("what to try", "bold $accent"))
        for i, fix in enumerate(a.fixes, 1):
            parts.append(Content.assemble((f"  {i}. ", "bold"), fix))
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


class AlertDetail(Static):
    DEFAULT_CSS = """
    AlertDetail { width: 1fr; height: 1fr; border: round $panel; padding: 0 1; overflow-y: auto; }
    """

    def __init__(self, **kwargs: object) -> None:
        super().__init__(markup=False, **kwargs)  # type: ignore[arg-type]
        self.border_title = "evidence & fixes"
        self._shown: AlertView | None = None

    def show(self, a: AlertView | None, unread: tuple[str, ...] | None = None) -> None:
        if a is not None and self._shown is not None and a == self._shown:
            return
        same = a is not None and self._shown is not None and a.fingerprint == self._shown.fingerprint
        self._shown = a
        self.update(detail(a, unread), layout=not same)  # a repeat only bumps "seen N×": no relayout
