"""One followed file in the live watcher: format detection once it has text, then lines to records.

Runs only on the watcher's engine thread (the caller holds the watcher's lock), so it may feed the
engine directly. A file that is empty or not there yet waits; one whose format cannot be recognised
is reported once and then left alone.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from pathlib import Path

from trainwatch import adapters
from trainwatch.engine import Engine
from trainwatch.errors import TrainwatchError
from trainwatch.model import Event, EventKind, Record
from trainwatch.runner import OpenSource, open_source, rank_of
from trainwatch.sources.files import looks_binary
from trainwatch.sources.tail import Chunk, FileFollower

DETECT_GIVE_UP_BYTES = 16 << 10  # this much text and still no format: say so once and stop trying
LAST_LINE_CHARS = 300


class LiveSource:
    def __init__(self, path: Path, *, fmt: str | None, from_end: bool, ring: int,
                 notice: Callable[[str], None], params: float | None = None) -> None:
        self.path = path
        self.name = str(path)
        self.rank = rank_of(self.name)
        self.fmt = fmt
        self.from_end = from_end
        self.notice = notice
        self.params = params
        self.opened: OpenSource | None = None
        self.follower: FileFollower | None = None
        self.lines: deque[tuple[int, str]] = deque(maxlen=ring)
        self.gave_up = False
        self._waiting_said = False

    @property
    def label(self) -> str:
        return f"rank {self.rank}" if self.rank is not None else self.path.name

    def poll(self, engine: Engine) -> int:
        """Reads what is new and feeds it; returns the number of records fed."""
        if self.gave_up:
            return 0
        if self.follower is None and not self._detect(engine):
            return 0
        assert self.follower is not None and self.opened is not None
        chunk = self.follower.poll()
        return self._feed(engine, chunk)

    def close(self, engine: Engine) -> int:
        """The end: an unfinished last line and any block the adapter held back are fed."""
        if self.follower is None or self.opened is None:
            return 0
        n = 0
        if not self.follower.whole_file:
            n += self._feed(engine, Chunk(lines=self.follower.flush_partial()))
        n += self._records(engine, self.opened.parser.finish())
        self.follower.close()
        return n

    # -- internals ------------------------------------------------------------------------------

    def _detect(self, engine: Engine) -> bool:
        try:
            with open(self.path, "rb") as f:
                head = f.read(1 << 16)
        except FileNotFoundError:
            if not self._waiting_said:
                self.notice(f"{self.path}: does not exist yet; waiting for it")
                self._waiting_said = True
            return False
        except OSError as exc:
            if not self._waiting_said:
                self.notice(f"{self.path}: cannot read ({exc.strerror or exc}); will retry")
                self._waiting_said = True
            return False
        document = self.path.suffix.lower() == ".json"  # a whole document may hold no newline at all
        if not head.strip() or (self.fmt is None and not document and b"\n" not in head
                                and len(head) < DETECT_GIVE_UP_BYTES):
            return False  # nothing to recognise yet
        if self.fmt is None and looks_binary(head):
            self.notice(f"{self.path}: binary data, not a text log; not followed")
            self.gave_up = True
            return False
        try:
            opened = open_source(self.path, self.fmt, head=head)
        except TrainwatchError as exc:
            if len(head) >= DETECT_GIVE_UP_BYTES or head.count(b"\n") >= 50:
                self.notice(f"{exc}; not followed")
                self.gave_up = True
            elif not self._waiting_said:
                self.notice(f"{self.path}: format not recognised yet; waiting for more lines")
                self._waiting_said = True
            return False
        self.opened = opened
        whole = bool(adapters.get(opened.format).whole_file)
        self.follower = FileFollower(self.path, from_end=self.from_end and not whole, whole_file=whole)
        state = engine.source(self.name, opened.format)
        state.facts.setdefault("label", self.label)
        if self._waiting_said:
            self.notice(f"{self.path}: now following ({opened.format})")
        if self.params:
            engine.feed(Event(EventKind.INFO, source=self.name, fields={"params": self.params}))
        return True

    def _feed(self, engine: Engine, chunk: Chunk) -> int:
        for text in chunk.notices:
            self.notice(text)
        assert self.opened is not None
        parser = self.opened.parser
        if chunk.document is not None:
            # whole_file adapters remember what they reported: a re-read yields only new entries
            engine.source(self.name).lines = chunk.document.count("\n") + 1  # counted as `check` counts
            return self._records(engine, parser.document(chunk.document))
        if not chunk.lines:
            return 0
        state = engine.source(self.name)
        n = 0
        for lineno, text in chunk.lines:
            self.lines.append((lineno, text))
            n += self._records(engine, parser.feed(text, lineno))
            state.lines = lineno
            stripped = text.rstrip()
            if stripped:
                last = stripped.rsplit("\r", 1)[-1].strip() or stripped
                state.last_line = last[:LAST_LINE_CHARS]
        return n

    def _records(self, engine: Engine, records: list[Record]) -> int:
        for r in records:
            if not r.source:
                r.source = self.name
            engine.feed(r)
        return len(records)
