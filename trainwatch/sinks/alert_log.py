"""--alert-log FILE: every alert change appended as one JSON line, flushed at once, safe to tail.

A record is written whole or not at all: a write cut short (the disk filled halfway through it) is
taken back by truncating the file to where it ended before, so the next record never glues onto a
partial one and every line stays valid JSON. While the disk stays full the records wait in memory
(bounded) and go out in order once a write succeeds again; the trouble is said once, and so is the
recovery. A log that already ends in a partial line when it is opened (a crash or a full disk before
this fix, another writer) has that tail moved aside to FILE.torn, said once.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from trainwatch.alerts import AlertChange
from trainwatch.errors import SourceError
from trainwatch.sinks.printer import stamp

HELD_MAX = 10_000
"""Records kept while the log cannot be written; past this the oldest are dropped and counted."""
RETRY_S = 2.0
"""Seconds between tries to write held records when no new alert comes to try with."""


class AlertLog:
    def __init__(self, path: str | Path, notice: Callable[[str], None] | None = None) -> None:
        self.path = Path(path)
        self.notice = notice or (lambda text: None)
        self._lock = threading.Lock()
        self._failed = False
        self._held: deque[bytes] = deque()
        self._dropped = 0
        self._retry: threading.Timer | None = None
        self._closed = False
        self.opening_notes: list[str] = []  # said by `announce`, once a front end listens
        try:
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        except OSError as exc:
            raise SourceError(f"{path}: cannot open the alert log: {exc.strerror or exc}") from None
        self._set_torn_tail_aside()

    def records(self) -> Iterator[dict[str, Any]]:
        """The records already in the log (lines that do not parse are skipped)."""
        try:
            with open(self.path, encoding="utf-8", errors="replace") as f:
                for line in f:
                    try:
                        rec = json.loads(line)
                    except ValueError:
                        continue
                    if isinstance(rec, dict):
                        yield rec
        except OSError:
            return

    def announce(self) -> None:
        """Says what opening the log found (a torn last line), once."""
        notes, self.opening_notes = self.opening_notes, []
        for text in notes:
            self.notice(text)

    def write(self, change: AlertChange) -> None:
        a = change.alert
        record = {"time": stamp(time.time()), **a.to_dict(), "state": change.told_state}
        data = (json.dumps(record) + "\n").encode("utf-8")
        with self._lock:
            if len(self._held) >= HELD_MAX:
                self._held.popleft()
                self._dropped += 1
            self._held.append(data)
            self._drain()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            if self._retry is not None:
                self._retry.cancel()
            self._drain()
            if self._held:
                self.notice(f"{self.path}: {len(self._held)} alert record(s) could not be written before exit")
            try:
                os.close(self._fd)
            except OSError:
                pass

    # -- inside the lock ----------------------------------------------------------------------------
    def _drain(self) -> None:
        while self._held:
            error = self._append(self._held[0])
            if error is not None:
                if not self._failed:
                    self._failed = True
                    self.notice(f"{self.path}: cannot write the alert log ({error}); alerts are held back "
                                "and written when it can be")
                self._schedule_retry()
                return
            self._held.popleft()
        if self._failed:
            self._failed = False
            lost = f"; {self._dropped} older one(s) were dropped" if self._dropped else ""
            self.notice(f"{self.path}: the alert log is writable again; the held-back alerts are written{lost}")
            self._dropped = 0

    def _append(self, data: bytes) -> str | None:
        """Appends one record whole, or leaves the file as it was and says why not."""
        try:
            before = os.fstat(self._fd).st_size
        except OSError as exc:
            return exc.strerror or str(exc)
        try:
            n = os.write(self._fd, data)
            if n == len(data):
                return None
            why = f"only {n} of {len(data)} bytes written"
        except OSError as exc:
            why = exc.strerror or str(exc)
        try:
            os.ftruncate(self._fd, before)  # the part that made it out is taken back
        except OSError:
            pass
        return why

    def _schedule_retry(self) -> None:
        if self._closed or (self._retry is not None and self._retry.is_alive()):
            return
        self._retry = threading.Timer(RETRY_S, self._retry_now)
        self._retry.daemon = True
        self._retry.start()

    def _retry_now(self) -> None:
        with self._lock:
            self._retry = None
            if not self._closed:
                self._drain()

    # -- on opening ---------------------------------------------------------------------------------
    def _set_torn_tail_aside(self) -> None:
        """A last line with no newline is a record cut short: it goes to FILE.torn and the log is cut
        back to its last whole line."""
        try:
            size = os.fstat(self._fd).st_size
            if size == 0:
                return
            with open(self.path, "rb") as f:
                start = size
                tail = b""
                while start > 0:  # back from the end, a block at a time, to the last newline
                    step = min(65536, start)
                    start -= step
                    f.seek(start)
                    tail = f.read(step) + tail
                    if b"\n" in tail:
                        break
            if tail.endswith(b"\n"):
                return
            cut = tail.rfind(b"\n") + 1
            torn = tail[cut:]
            aside = self.path.with_name(self.path.name + ".torn")
            with open(aside, "ab") as g:
                g.write(torn + b"\n")
            os.ftruncate(self._fd, start + cut)
        except OSError as exc:
            self.opening_notes.append(f"{self.path}: its last line is cut short and could not be set aside "
                                      f"({exc.strerror or exc})")
            return
        self.opening_notes.append(f"{self.path}: its last line was cut short ({len(torn)} bytes, a write that "
                                  f"failed halfway); moved to {aside.name}")
