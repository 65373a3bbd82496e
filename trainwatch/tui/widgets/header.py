"""Top bar: sources and formats, preset, step/total, ETA, elapsed, speed, and the health badge."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.content import Content
from textual.widgets import Static

from trainwatch.timefmt import clock
from trainwatch.tui.charts import fmt
from trainwatch.tui.text import shorten_path
from trainwatch.tui.widgets.styles import BADGE_CLASS
from trainwatch.view.snapshot import Snapshot


class HeaderBar(Horizontal):
    DEFAULT_CSS = """
    HeaderBar { height: 2; background: $panel; }
    HeaderBar #info { width: 1fr; height: 2; padding: 0 1; text-wrap: nowrap; text-overflow: ellipsis; }
    HeaderBar #badge { width: auto; min-width: 10; height: 2; padding: 0 1; content-align: center middle;
                       text-style: bold; }
    HeaderBar #badge.-ok { background: $success; color: $background; }
    HeaderBar #badge.-warning { background: $warning; color: $background; }
    HeaderBar #badge.-critical { background: $error; color: $background; }
    HeaderBar #badge.-stalled { background: $warning; color: $background; text-style: bold reverse; }
    HeaderBar #badge.-unknown { background: $foreground; color: $background; }
    """

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self._shown: tuple[Content, str] | None = None

    def compose(self) -> ComposeResult:
        yield Static(id="info", markup=False)
        yield Static("UNKNOWN", id="badge", classes="-unknown", markup=False)  # no verdict before a snapshot

    def show(self, snap: Snapshot, *, elapsed: float | None, rate: float | None, eta: float | None,
             paused: bool = False) -> None:
        # the room the sources have on the first line, shared: the folders give way before a file name
        room = (self.size.width or 80) - 14 - len(" · preset ") - len(snap.preset) - len("trainwatch · ")
        each = max(12, room // max(1, len(snap.sources)) - 16)
        srcs = ", ".join(f"{shorten_path(s.name, each)} ({'not read yet' if s.waiting else s.format or '?'})"
                         for s in snap.sources) or "no log followed yet"
        first = Content.assemble(("trainwatch", "bold $accent"), " · ", srcs, " · preset ", (snap.preset, "bold"))
        if paused:
            first = first + Content.styled("  ⏸ PAUSED", "bold $warning")
        parts: list[Content | str | tuple[str, str]] = []
        step, total = snap.step, snap.total
        if step is not None:
            pct = f" {100 * step / total:.0f}%" if total else ""
            parts += ["step ", (f"{step}" + (f"/{total}" if total else "") + pct, "bold")]
        if eta is not None:
            parts += [" · ETA ", (clock(eta), "bold")]
        parts += [" · elapsed ", clock(elapsed)]
        tok = next((m.last for m in snap.metrics if m.name == "tokens_per_sec" and m.last is not None), None)
        if tok is not None:
            parts += [" · ", (fmt(tok), "bold"), " tok/s"]
        elif rate is not None:
            parts += [" · ", (f"{rate:.2f}", "bold"), " steps/s"]
        if snap.finished or any(s.ended for s in snap.sources):
            parts += [" · ", ("run ended", "$text-muted")]
        second = Content.assemble(*parts)
        info = Content("\n").join([first, second])
        shown = self._shown
        if shown is not None and shown[0] == info and shown[1] == snap.badge:
            return  # called every tick for the clock: most ticks change nothing
        self._shown = (info, snap.badge)
        self.query_one("#info", Static).update(info, layout=False)  # fixed size: no relayout
        if shown is None or shown[1] != snap.badge:
            badge = self.query_one("#badge", Static)
            badge.update(snap.badge)  # its width may change
            badge.set_classes(BADGE_CLASS.get(snap.badge.removesuffix(" ACK"), "-unknown"))
