"""When a followed run has ended in a crash: its first critical error (an OOM, a fatal traceback, the
launcher's failure) with no step after it, and a file that has stayed quiet since.

A crash prints no end-of-training summary, so without this a headless `tail` would follow a dead run
for ever. A crash alone is not the end (a supervisor may restart the job into the same file), nor is a
quiet file alone (a long evaluation, a slow first step): both together are. Quiet is measured on the
watcher's clock, so tests move time instead of sleeping; a backlog file counts as quiet since it was
last written.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

from trainwatch.rules.base import SourceState
from trainwatch.rules.crash import crashed

QUIET_S = 60.0
"""Seconds a crashed run's log must stay unchanged before the run counts as ended: long enough for a
launcher to print its report of the failed ranks after the first traceback."""


@dataclass
class _Seen:
    size: int
    since: float  # clock time the file was last seen to change


class CrashEnd:
    """Tracks how long each followed file has been quiet and says when a crashed run has ended."""

    def __init__(self, clock: Callable[[], float], quiet_s: float = QUIET_S) -> None:
        self.clock = clock
        self.quiet_s = quiet_s
        self._seen: dict[str, _Seen] = {}
        self.told: set[str] = set()  # sources already said to have ended in a crash

    def ended(self, name: str, path: str, state: SourceState) -> bool:
        """Whether `name` (the file at `path`) ended in a crash and has been quiet for `quiet_s`."""
        if not crashed(state):  # (most calls: a live run; its file's size is then not needed)
            return False
        now = self.clock()
        try:
            st = os.stat(path)
            size, mtime = st.st_size, st.st_mtime
        except OSError:
            size, mtime = -1, now
        seen = self._seen.get(name)
        if seen is None:  # first look: quiet since the file was last written (never later than now)
            seen = self._seen[name] = _Seen(size, min(now, mtime))
        elif size != seen.size:
            seen.size, seen.since = size, now
        return now - seen.since >= self.quiet_s

    def why(self, state: SourceState) -> str:
        first = state.first_error or {}
        where = f"line {first.get('line')}" if first.get("line") else "its log"
        return f"{first.get('title') or first.get('rule') or 'a critical error'} at {where}"
