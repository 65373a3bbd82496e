"""How often one file is read while many change at once: the engine thread's pace for file wake-ups.

A read's cost is mostly fixed (the adapter's and the row rules' work per call, whatever the number of
lines), so a glob of 200 files written at 10 lines/s costs a core when each write is read on its own,
and a fifth of that when each file is read every 2 s, 20 lines at a time. The pacer decides, for each
wake-up, whether the file is read now or later, and when the later ones are due. Nothing is dropped: a
deferred file stays due until it is read, and it gets no second wake-up meanwhile (the watcher keeps it
pending). Time comes from the caller, so the pace is tested in simulated time.
"""

from __future__ import annotations

import math

GATHER_S = 0.5
"""The least spacing of one file's reads while many files change (and the tick interval below which the
watcher reads every wake-up at once: a test or a caller that asks for faster ticks wants the latency)."""
GATHER_FILES = 8
"""While fewer files than this change between two ticks, each wake-up is read at once: that is the least
latency, and the least a `copytruncate` rotation can cut off before it is read."""
READ_SHARE = 0.05
"""The share of the engine thread that the reads' fixed cost may take: the spacing is the number of files
changing times the measured CPU of one read, over this share (200 files at 0.5 ms a read: 2 s)."""
GATHER_MAX_S = 2.0
"""The most a wake-up waits, however many files change: the latency of a line on a busy glob."""


class ReadPacer:
    """Per-file read spacing from the number of files changing and the measured cost of a read."""

    def __init__(self, least_s: float = GATHER_S) -> None:
        self.least_s = least_s  # 0: every wake-up is read at once
        self.spacing = 0.0
        self.read_cpu = 0.0  # CPU seconds of one read, a moving average
        self._read_at: dict[str, float] = {}  # path -> when it was last read
        self._due: dict[str, float] = {}  # deferred paths -> when they are to be read
        self._changed: set[str] = set()  # paths woken since the last retune

    def admit(self, path: str, now: float) -> bool:
        """A wake-up for `path`: True to read it now, False when it is deferred (then `due` gives it)."""
        self._changed.add(path)
        if not self.spacing or path in self._due:
            return path not in self._due
        at = self._read_at.get(path, -math.inf) + self.spacing
        if at <= now:
            return True
        self._due[path] = at
        return False

    def due(self, now: float) -> list[str]:
        """The deferred paths whose time has come, taken off the list (the caller reads each)."""
        ready = [p for p, at in self._due.items() if at <= now]
        for p in ready:
            del self._due[p]
        return ready

    def next_due(self) -> float:
        return min(self._due.values(), default=math.inf)

    def read(self, path: str, now: float, cpu: float) -> None:
        """`path` was read at `now`, costing `cpu` seconds of the engine thread."""
        self._read_at[path] = now
        self._changed.add(path)  # (a deferred file wakes no one until it is read: this counts it busy)
        self.read_cpu = 0.9 * self.read_cpu + 0.1 * cpu

    def read_since(self, path: str, since: float) -> bool:
        """Whether a wake-up read `path` after `since` (the safety poll skips it then)."""
        return self._read_at.get(path, -math.inf) > since

    def retune(self) -> float:
        """At each tick: the spacing for the files that woke or were read since the last one, and those
        still deferred."""
        files = len(self._changed | self._due.keys())
        self._changed.clear()
        if not self.least_s or files < GATHER_FILES:
            self.spacing = 0.0
        else:
            self.spacing = min(GATHER_MAX_S, max(self.least_s, files * self.read_cpu / READ_SHARE))
        return self.spacing
