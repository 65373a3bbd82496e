"""What the TUI reads: the Watcher's shape as a Protocol, and an engine-backed stand-in for tests.

The app never mutates the engine: acknowledgements are the app's own set of fingerprints.
No Textual import here.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from typing import Any, Protocol

from trainwatch.alerts import AlertChange
from trainwatch.engine import Engine


class WatchModel(Protocol):
    """The subset of trainwatch.live.watcher.Watcher the TUI uses."""

    engine: Engine
    lock: threading.RLock
    finished: threading.Event
    info_lines: list[str]

    def start(self) -> None: ...
    def stop(self) -> None: ...
    def add_listener(self, fn: Callable[[AlertChange], None]) -> None: ...
    def recent_lines(self, source: str, n: int) -> list[tuple[int, str]]: ...
    def gpu_devices(self) -> list[dict[str, Any]]: ...


class EngineModel:
    """A Watcher stand-in over an Engine the caller feeds: tests, snapshots and benchmarks use it."""

    def __init__(self, engine: Engine, *, lines: int = 500) -> None:
        self.engine = engine
        self.lock = threading.RLock()
        self.finished = threading.Event()
        self.info_lines: list[str] = []
        self.gpus: list[dict[str, Any]] = []
        self._lines: dict[str, deque[tuple[int, str]]] = {}
        self._maxlen = lines
        self.started = False
        self.stopped = False

    def start(self) -> None:
        self.started = True

    def stop(self) -> None:
        self.stopped = True

    def add_listener(self, fn: Callable[[AlertChange], None]) -> None:
        with self.lock:
            self.engine.listeners.append(fn)

    def recent_lines(self, source: str, n: int) -> list[tuple[int, str]]:
        with self.lock:
            ring = self._lines.get(source)
            return list(ring)[-n:] if ring else []

    def gpu_devices(self) -> list[dict[str, Any]]:
        with self.lock:
            return [dict(d) for d in self.gpus]

    def feed_line(self, source: str, lineno: int, line: str, parser: Any = None) -> None:
        """Records a raw line for the log pane and, with a parser, feeds its records to the engine."""
        with self.lock:
            self._lines.setdefault(source, deque(maxlen=self._maxlen)).append((lineno, line))
            if parser is not None:
                for rec in parser.feed(line, lineno):
                    self.engine.feed(rec)
