"""--alert-log FILE: every alert change appended as one JSON line, flushed at once, safe to tail."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from pathlib import Path

from trainwatch.alerts import AlertChange
from trainwatch.errors import SourceError
from trainwatch.sinks.printer import stamp


class AlertLog:
    def __init__(self, path: str | Path, notice: Callable[[str], None] | None = None) -> None:
        self.path = Path(path)
        self.notice = notice or (lambda text: None)
        self._lock = threading.Lock()
        self._failed = False
        try:
            self._f = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 - kept open for the sink's life, closed by close()
        except OSError as exc:
            raise SourceError(f"{path}: cannot open the alert log: {exc.strerror or exc}") from None

    def write(self, change: AlertChange) -> None:
        a = change.alert
        record = {"time": stamp(time.time()), **a.to_dict(), "state": change.told_state}
        with self._lock:
            try:
                self._f.write(json.dumps(record) + "\n")
                self._f.flush()
                self._failed = False
            except (OSError, ValueError) as exc:
                if not self._failed:
                    self._failed = True
                    self.notice(f"{self.path}: cannot write the alert log ({getattr(exc, 'strerror', None) or exc})")

    def close(self) -> None:
        with self._lock:
            try:
                self._f.close()
            except OSError:
                pass
