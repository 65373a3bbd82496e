"""The headless printer: one line per alert (fixes indented below it), or one JSON object per line.

Log text in messages is untrusted, so it is printed plain: no escape sequences reach the terminal.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any, TextIO

from trainwatch.alerts import AlertChange
from trainwatch.model import AlertState, _jsonable
from trainwatch.textsafe import plain


def stamp(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(t))


class Printer:
    def __init__(self, stream: TextIO, *, as_json: bool = False, fixes: bool = True) -> None:
        self.stream = stream
        self.as_json = as_json
        self.fixes = fixes
        self._lock = threading.Lock()  # the engine thread and the main thread both print

    def alert(self, change: AlertChange) -> None:
        """One alert line, the same for `tail`, `run` and `demo`: time, severity, rule, source, step, the
        alert's title and what was found (a blow-up's root with its story), then the fixes; a link of a
        blow-up told after its root is one info line naming it (trainwatch/incident.py). An alert that stops
        firing is `resolved` only when it recovered; one whose metric went non-finite or whose run ended is
        `stopped`; a one-time judgement's end is not printed (JSON says `ended`)."""
        a = change.alert
        t = a.started_at if change.state is AlertState.FIRING else (a.resolved_at or a.last_seen_at)
        if self.as_json:
            self._write(json.dumps({"type": "alert", "time": stamp(t), **a.to_dict(), "state": change.told_state}))
            return
        if change.state is AlertState.RESOLVED and a.once:
            return  # a one-time judgement that no longer holds: nothing recovered, nothing new to say
        if change.state is AlertState.RESOLVED:
            last = a.last_step if a.last_step is not None else a.finding.step  # the last step it held at
            step = f"step {last}" if last is not None else "step -"
            if a.retracted:
                why = f" (withdrawn: {plain(a.retracted)})"
            elif a.stopped:
                why = f" (not recovered: {plain(a.stopped)})"
            else:
                why = ""
            self._write(f"{stamp(t)} {change.told_state} {a.rule} {plain(a.source)} {step}: {plain(a.title)}{why}")
            return
        began = a.first_step if a.first_step is not None else a.finding.step
        step = f"step {began}" if began is not None else "step -"
        what = f"{a.incident}. {a.finding.message}" if a.incident else a.finding.message
        head = (f"{stamp(t)} {a.severity.label.upper():8} {a.rule} {plain(a.source)} {step}: {plain(a.title)}: "
                f"{plain(what)}")
        if a.echo_of:  # a later link of a blow-up already told: one info line that names its root, no fixes
            self._write(f"{head} (part of the incident of {plain(a.echo_of)})")
            return
        lines = [head]
        if self.fixes:
            lines += [f"    - {plain(fix)}" for fix in a.fixes]
        self._write("\n".join(lines))

    def info(self, text: str, stream: TextIO | None = None) -> None:
        if self.as_json:
            self._write(json.dumps({"type": "info", "time": stamp(time.time()), "message": plain(text)}))
        else:
            self._write(f"trainwatch: {plain(text)}", stream)

    def status(self, status: dict[str, Any]) -> None:
        if self.as_json:
            self._write(json.dumps(_jsonable({"type": "status", **status})))
            return
        parts = []
        for s in status["sources"]:
            done = " done" if s["ended"] else ""
            parts.append(f"{plain(s['label'])} step {s['step'] if s['step'] is not None else '-'}{done}")
        for g in status.get("gpus", []):
            if g.get("lost"):
                parts.append(f"{g['key']} LOST")
            elif "util" in g:
                mem = f" {g['mem_used'] / 1024:.1f}/{g['mem_total'] / 1024:.0f}G" if "mem_total" in g else ""
                parts.append(f"{g['key']} {g['util']:.0f}%{mem}")
        worst = status["worst"] or "ok"
        self._write(f"{status['time']} status {worst}, {status['firing']} firing | " + ", ".join(parts))

    def _write(self, text: str, stream: TextIO | None = None) -> None:
        out = stream or self.stream
        with self._lock:
            try:
                out.write(text + "\n")
                out.flush()
            except (BrokenPipeError, ValueError):
                pass
