"""One followed file in the live watcher: format detection once it has text, then lines to records.

Runs only on the watcher's engine thread (the caller holds the watcher's lock), so it may feed the
engine directly. A file that is empty or not there yet waits; one whose format cannot be recognised
is reported once and then left alone.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable, Iterator
from pathlib import Path

from trainwatch import adapters, runconfig, task
from trainwatch.adapters.path_reader import PathAdapter
from trainwatch.adapters.pipeline import BACKLOG_BLOCK, joined
from trainwatch.batch import Batch
from trainwatch.engine import Engine
from trainwatch.errors import TrainwatchError
from trainwatch.model import Event, EventKind, Record, Sample
from trainwatch.names import rank_of
from trainwatch.runner import OpenSource, claimed_format, open_source
from trainwatch.sources.fifo import FifoFollower, is_fifo
from trainwatch.sources.files import SAMPLE_BYTES, UTF16_BOMS, looks_binary, sample_file
from trainwatch.sources.tail import Chunk, FileFollower

DETECT_GIVE_UP_BYTES = 16 << 10  # this much text and still no format: read it for errors only
LAST_LINE_CHARS = 300
MISREAD_LINES = 20  # a forced format that understood nothing in this many lines is said to be wrong
REDETECT_GROWTH = 1.25  # a file read for errors only is scored again each time it grows by this factor
RING_EVERY = 1.0
"""Seconds a long backlog's last lines may wait before they go into the log pane's ring (`_feed_raw`):
the pane moves on while gigabytes are read, at a decode a second instead of one per 16 MiB poll."""


def too_early_to_tell(opened: OpenSource, head: bytes) -> bool:
    """No adapter scored the file and there is too little of it yet to settle for reading errors only."""
    return opened.unscored and len(head) < DETECT_GIVE_UP_BYTES and head.count(b"\n") < 50


class LiveSource:
    def __init__(self, path: Path, *, fmt: str | None, from_end: bool, ring: int,
                 notice: Callable[[str], None], params: float | None = None,
                 wake: Callable[[], None] | None = None) -> None:
        self.path = path
        self.wake = wake  # a named pipe's data is there: have the engine thread poll this source
        self.name = str(path)
        self.rank = rank_of(self.name)
        self.fmt = fmt
        self.from_end = from_end
        self.notice = notice
        self._failures_seen = 0  # the engine's rule failures already looked at
        self._reader_failure_said = False
        self.params = params
        self.opened: OpenSource | None = None
        self.follower: FileFollower | FifoFollower | None = None
        self.stream: FifoFollower | None = None  # a named pipe, read before its format is known
        self._held: list[tuple[int, str]] = []  # the pipe's lines read for detection, fed once it is done
        self.lines: deque[tuple[int, str]] = deque(maxlen=ring)
        self.gave_up = False
        self._understood = 0  # records read so far
        self._misread_said = False
        self._waiting: str | None = None  # why it waits, as last said: a new reason is said once too
        self._redetect_at = 0  # read for errors only: try the adapters again once the file reaches this size
        self._fed_events: set[tuple[str, int, str]] = set()  # what the errors-only reading already reported
        self._ring_upto = 0  # lines up to here are in the ring already (a replay after re-detection)
        self._ring_later: list[tuple[int, list[bytes], int]] = []  # see `_feed_raw`: (last line, pieces, lines)
        self._ring_filled_at = 0.0  # monotonic time the held lines last went into the ring
        self.reader: PathAdapter | None = None  # an event file or a run folder, read by its adapter
        self.hold = False
        """The rows fed may wait for the watcher's next round (`Engine.feed_all(more=True)`); a
        non-finite value is judged at once."""

    @property
    def label(self) -> str:
        return f"rank {self.rank}" if self.rank is not None else self.path.name

    def poll(self, engine: Engine) -> int:
        """Reads what is new and feeds it; returns the number of records fed."""
        if self.gave_up:
            return 0
        if self.follower is None and (self.stream is not None or is_fifo(self.path)):
            return self._detect_stream(engine)
        if self.reader is not None or (self.follower is None and self._claimed(engine)):
            return self._read_path(engine)
        if self.follower is None and not self._detect(engine):
            return 0
        assert self.follower is not None and self.opened is not None
        if self.opened.fallback and self._redetect_at and self.stream is None:
            self._redetect(engine)
        chunk = self.follower.poll()
        n = self._feed(engine, chunk)
        self._check_understood(engine, n)
        return n

    def close(self, engine: Engine) -> int:
        """The end: an unfinished last line and any block the adapter held back are fed."""
        if self.follower is None and self.stream is not None:  # a pipe's few lines, never recognised
            self.stream.close()
        if self.follower is None or self.opened is None:
            return 0
        n = 0
        if not self.follower.whole_file:
            n += self._feed(engine, Chunk(lines=self.follower.flush_partial()))
        n += self._records(engine, self.opened.parser.finish())
        self.follower.close()
        return n

    # -- internals ------------------------------------------------------------------------------

    def _claimed(self, engine: Engine) -> bool:
        """Whether a path-reading adapter (TensorBoard, MLflow) takes this path; if so it is opened here."""
        try:
            fmt = claimed_format(self.path, self.fmt)
            if fmt is None:
                return False
            opened = open_source(self.path, fmt)
        except TrainwatchError as exc:
            self.notice(f"{exc}; not followed")
            self.gave_up = True
            return True
        assert isinstance(opened.parser.adapter, PathAdapter)
        self.opened, self.reader = opened, opened.parser.adapter
        state = engine.source(self.name, opened.format)
        state.facts.setdefault("label", self.label)
        state.facts.pop("waiting", None)
        return True

    def _read_path(self, engine: Engine) -> int:
        if self.reader is None:
            return 0
        try:
            records = self.reader.read_new(self.path)
        except TrainwatchError as exc:  # said once; what was read before it stands, the other sources go on
            self.notice(f"{exc}; no longer followed")
            self.gave_up = True
            return 0
        return self._records(engine, records)

    def _detect(self, engine: Engine) -> bool:
        try:
            with open(self.path, "rb") as f:
                head = sample_file(f)
        except FileNotFoundError:
            self._wait("missing", f"{self.path}: does not exist yet; waiting for it")
            return False
        except OSError as exc:
            self._wait("unreadable", f"{self.path}: cannot read ({exc.strerror or exc}); will retry")
            return False
        document = self.path.suffix.lower() == ".json"  # a whole document may hold no newline at all
        if not head.strip() or (self.fmt is None and not document and b"\n" not in head
                                and len(head) < DETECT_GIVE_UP_BYTES):
            return False  # nothing to recognise yet
        if head[:2] in UTF16_BOMS:  # the follower reads bytes as they are appended: UTF-8 (or ASCII) only
            self.notice(f"{self.path}: UTF-16 text; `trainwatch check` reads it, but following needs the log "
                        "written as UTF-8 (PowerShell: `... 2>&1 | Out-File -Encoding utf8 train.log`); not followed")
            self.gave_up = True
            return False
        if self.fmt is None and looks_binary(head):
            self.notice(f"{self.path}: binary data, not a text log; not followed")
            self.gave_up = True
            return False
        try:
            opened = open_source(self.path, self.fmt, head=head)
        except TrainwatchError as exc:
            self.notice(f"{exc}; not followed")
            self.gave_up = True
            return False
        if opened.fallback:
            if too_early_to_tell(opened, head):
                self._wait("unrecognised", f"{self.path}: format not recognised yet; waiting for more lines")
                return False
            # banners, argument dumps or a launcher's output: errors are read now, metrics once an
            # adapter recognises the grown file
            self.notice(f"{self.path}: no known log format yet; reading it for errors only")
            self._waiting = None
            try:
                self._redetect_at = int(REDETECT_GROWTH * max(len(head), self.path.stat().st_size))
            except OSError:
                self._redetect_at = int(REDETECT_GROWTH * len(head))
        self.opened = opened
        whole = bool(adapters.get(opened.format).whole_file)
        self.follower = FileFollower(self.path, from_end=self.from_end and not whole, whole_file=whole,
                                     raw_backlog=True)
        state = engine.source(self.name, opened.format)
        state.facts.setdefault("label", self.label)
        state.facts.pop("waiting", None)  # read from now on
        known = state.facts.get("run_config")
        if not isinstance(known, runconfig.RunConfig) or not (known.facts or known.advice):
            state.facts["run_config"] = runconfig.read(opened.head)  # a file waited for: its config is here
        llm = task.llm(opened.head)
        if llm is not None:
            state.facts.setdefault("llm", llm)
        if self._waiting is not None:
            self.notice(f"{self.path}: now following ({opened.format})")
        if self.params:
            engine.feed(Event(EventKind.INFO, source=self.name, fields={"params": self.params}))
        return True

    def _detect_stream(self, engine: Engine) -> int:
        """A named pipe: its lines are kept in memory until they are enough to tell the format (a pipe
        cannot be sampled or read twice), then those same lines are fed, and the pipe is read on."""
        if self.stream is None:
            self.stream = FifoFollower(self.path, wake=self.wake)
        chunk = self.stream.poll()
        for text in chunk.notices:
            self.notice(text)
        self._held.extend(chunk.lines)
        head = _head(self._held)
        if not head.strip() or (self.fmt is None and not self._held):
            return 0
        if head[:2] in UTF16_BOMS:  # the follower reads bytes as they are appended: UTF-8 (or ASCII) only
            self.notice(f"{self.path}: UTF-16 text; `trainwatch check` reads it, but following needs the log "
                        "written as UTF-8 (PowerShell: `... 2>&1 | Out-File -Encoding utf8 train.log`); not followed")
            self.gave_up = True
            return False
        if self.fmt is None and looks_binary(head):
            self.notice(f"{self.path}: binary data, not a text log; not followed")
            self.gave_up = True
            self.stream.close()
            return 0
        try:
            opened = open_source(self.path, self.fmt, head=head)
        except TrainwatchError as exc:
            self.notice(f"{exc}; not followed")
            self.gave_up = True
            self.stream.close()
            return 0
        if opened.fallback:
            if too_early_to_tell(opened, head):
                self._wait("unrecognised", f"{self.path}: format not recognised yet; waiting for more lines")
                return 0
            self.notice(f"{self.path}: no known log format; reading it for errors only")
        self.opened, self.follower = opened, self.stream
        state = engine.source(self.name, opened.format)
        state.facts.setdefault("label", self.label)
        state.facts.pop("waiting", None)
        if self._waiting is not None:
            self.notice(f"{self.path}: now following ({opened.format})")
            self._waiting = None
        if self.params:
            engine.feed(Event(EventKind.INFO, source=self.name, fields={"params": self.params}))
        held, self._held = self._held, []
        n = self._feed(engine, Chunk(lines=held))
        self._check_understood(engine, n)
        return n

    def _check_understood(self, engine: Engine, n: int) -> None:
        """A forced --format that understands none of many lines is most likely the wrong one: said once
        (`check` exits 3 on it; a live file may still change, so `tail` keeps reading)."""
        self._understood += n
        if self._understood or self._misread_said or self.fmt is None:
            return
        lines = engine.source(self.name).lines
        if lines >= MISREAD_LINES:
            self._misread_said = True
            self.notice(f"{self.path}: read as {self.fmt}, but nothing in the {lines} lines so far was understood "
                        f"(no metrics, no errors); is --format {self.fmt} right? see 'trainwatch formats'")

    def _wait(self, reason: str, text: str) -> None:
        """Says why the file is not followed yet, once per reason: a missing file that appears but
        cannot be recognised yet says so, rather than "does not exist" staying the last word."""
        if self._waiting != reason:
            self._waiting = reason
            self.notice(text)

    def _redetect(self, engine: Engine) -> None:
        """A file read for errors only is scored again each time it grows by a quarter; once an adapter knows it,
        it is read again from the start with that adapter (the errors already told are not repeated)."""
        try:
            size = self.path.stat().st_size
            if size < self._redetect_at:
                return
            with open(self.path, "rb") as f:
                head = sample_file(f)
            opened = open_source(self.path, None, head=head)
        except (OSError, TrainwatchError):
            return
        self._redetect_at = int(REDETECT_GROWTH * size)
        if opened.fallback:
            return
        self._redetect_at = 0
        assert self.follower is not None
        replay = not self.from_end
        self._fill_ring()
        self._ring_upto = self.lines[-1][0] if replay and self.lines else 0
        self.follower.close()
        whole = bool(adapters.get(opened.format).whole_file)
        self.follower = FileFollower(self.path, from_end=not replay and not whole, whole_file=whole,
                                     raw_backlog=True)
        self.opened = opened
        engine.source(self.name, opened.format)
        again = "; reading it again from the start" if replay else ""
        self.notice(f"{self.path}: now recognised as {opened.format}{again}")

    def _feed(self, engine: Engine, chunk: Chunk) -> int:
        for text in chunk.notices:
            self.notice(text)
        assert self.opened is not None
        parser = self.opened.parser
        if chunk.document is not None:
            # whole_file adapters remember what they reported: a re-read yields only new entries
            engine.source(self.name).lines = chunk.document.count("\n") + 1  # counted as `check` counts
            self._ring_document(chunk.document)
            return self._records(engine, parser.document(chunk.document))
        n = self._feed_raw(engine, chunk) if chunk.raw else 0
        if chunk.lines or not (self.follower is not None and self.follower.more) \
                or time.monotonic() - self._ring_filled_at >= RING_EVERY:
            self._fill_ring()  # the backlog is read (or lines follow it, or the pane has waited): the ring first
        if not chunk.lines:
            return n + self._settled(engine)
        state = engine.source(self.name)
        records: list[Record] = []  # the whole chunk goes to the engine at once: a backlog is one batch
        if chunk.restarted:
            self._ring_upto = 0
        for lineno, text in chunk.lines:
            self._ring(lineno, text)
            records.extend(parser.feed(text, lineno))
            state.lines = lineno
            state.last_line = _shown(text) or state.last_line
        return n + self._records(engine, records) + self._settled(engine)

    def _settled(self, engine: Engine) -> int:
        """What the adapter held back for a later line (dicts waiting for a line that names their step), once
        the file has nothing more for now: a live view does not wait for a witness that may be hours away."""
        if self.follower is not None and self.follower.more:
            return 0
        assert self.opened is not None
        return self._records(engine, self.opened.parser.settle())

    def _feed_raw(self, engine: Engine, chunk: Chunk) -> int:
        """A piece of the backlog as bytes: read by the byte path `check` uses (the scanner, the adapters
        that read its arrays, a batch per piece, the next piece scanned on a second thread meanwhile);
        only the lines the ring keeps are decoded here."""
        assert self.opened is not None
        counts = chunk.raw_lines
        last = chunk.raw_first + sum(counts) - 1
        keep = self.lines.maxlen or 1
        cut, held = len(counts), 0  # the last pieces, enough of them to hold the lines the ring keeps
        while cut and held <= keep:
            cut -= 1
            held += counts[cut]
        pieces = chunk.raw[cut:]
        state = engine.source(self.name)
        for raw in _lines_back(pieces, keep):
            shown = _shown(raw.decode("utf-8", "replace"))
            if shown:
                state.last_line = shown
                break
        # the ring's lines are decoded once the backlog is read (`_fill_ring`), not for every piece of
        # it: the next pieces' lines push nearly all of them out again
        self._ring_later.append((last, pieces, held))
        while len(self._ring_later) > 1 and sum(n for *_, n in self._ring_later[1:]) >= keep:
            del self._ring_later[0]  # the newer pieces' lines fill the ring without it
        state.lines = last
        blocks = joined(chunk.raw, BACKLOG_BLOCK)
        n = sum(self._batch(engine, batch) for batch in self.opened.parser.read_blocks(blocks))
        if not (self.follower is not None and self.follower.more):  # more backlog waits: its rounds go on
            engine.settle()  # the backlog's blocks were judged in rounds: the last one now
        self._rule_failures(engine)
        return n

    def _batch(self, engine: Engine, batch: Batch) -> int:
        """`_records` for a block of the backlog: the errors-only reading's events are remembered, and not
        told twice. More blocks follow, so its rows may wait to be judged in a round with theirs."""
        batch.keep_events(self._fresh)
        for _, e in batch.events:
            if not e.source:
                e.source = self.name
        engine.feed_batch(batch, more=True)
        self._rule_failures(engine)
        return batch.size

    def _fill_ring(self) -> None:
        """The ring given the last lines of the backlog pieces held back (`_feed_raw`), as if each
        piece's last lines had gone in as it was read: only the lines the ring still holds at the end
        are decoded, the newest piece's first, then the one before it while there is room."""
        if not self._ring_later:
            return
        held, self._ring_later = self._ring_later, []
        self._ring_filled_at = time.monotonic()
        room = self.lines.maxlen or 1
        newest_first: list[tuple[int, bytes]] = []
        for last, pieces, _ in reversed(held):
            for k, raw in enumerate(_lines_back(pieces, room - len(newest_first))):
                newest_first.append((last - k, raw))
            if len(newest_first) >= room:
                break
        for lineno, raw in reversed(newest_first):
            self._ring(lineno, raw.decode("utf-8", "replace"))

    def _ring_document(self, text: str) -> None:
        """A whole-file document (trainer_state.json) in the log pane as the file's own last lines, its
        log_history rows among them, numbered as the file is, so an alert's line can be jumped to; a
        re-read replaces them."""
        lines = text.splitlines()
        keep = self.lines.maxlen or len(lines)
        first = max(0, len(lines) - keep)
        self.lines.clear()
        self._ring_upto = 0
        for i in range(first, len(lines)):
            self.lines.append((i + 1, lines[i]))

    def _ring(self, lineno: int, text: str) -> None:
        """A line for the log pane's ring (after a restart, not the lines it holds already)."""
        if lineno > self._ring_upto:
            self._ring_upto = 0
            self.lines.append((lineno, text))

    def _fresh(self, e: Event) -> bool:
        """Whether an event is to be fed: the errors-only reading's events are remembered, and not told
        again once the format is known."""
        assert self.opened is not None
        if self.opened.fallback:
            self._fed_events.add(_key(e))
            return True
        return not self._fed_events or _key(e) not in self._fed_events

    def _rule_failures(self, engine: Engine) -> None:
        """A rule that failed on this log since the last look is said once, as a notice; so is the first
        failure of the format's reader (an adapter bug costs the lines it failed on)."""
        if len(engine.rule_errors) > self._failures_seen:
            for text in engine.failures(self.name, self._failures_seen):
                self.notice(f"{self.path}: {text}")
            self._failures_seen = len(engine.rule_errors)
        parser = self.opened.parser if self.opened is not None else None
        if parser is not None and parser.errors and not self._reader_failure_said:
            self._reader_failure_said = True
            self.notice(f"{self.path}: the {parser.adapter.name} reader failed on this log ({parser.first_error}); "
                        "the lines it fails on are not judged, so findings there may be missing")

    def _records(self, engine: Engine, records: list[Record]) -> int:
        records = [r for r in records if not isinstance(r, Event) or self._fresh(r)]
        urgent = False
        for r in records:
            if not r.source:
                r.source = self.name
            if isinstance(r, Sample) and not math.isfinite(r.value):
                urgent = True
        engine.feed_all(records, more=self.hold and not urgent)
        self._rule_failures(engine)
        return len(records)


def _head(lines: list[tuple[int, str]]) -> bytes:
    """What detection reads of a pipe: its first lines held, up to a file sample's size."""
    out: list[bytes] = []
    size = 0
    for _, text in lines:
        raw = text.encode("utf-8", "replace")
        if out and size + len(raw) > SAMPLE_BYTES:
            break
        out.append(raw)
        size += len(raw) + 1
    return b"".join(line + b"\n" for line in out)


def _key(e: Event) -> tuple[str, int, str]:
    return (e.kind.value, e.line, e.signature)


def _shown(text: str) -> str:
    """What the status shows of a line: its last non-blank `\r`-segment, cut short ("" for a blank line)."""
    stripped = text.rstrip()
    if not stripped:
        return ""
    return (stripped.rsplit("\r", 1)[-1].strip() or stripped)[:LAST_LINE_CHARS]


def _lines_back(pieces: list[bytes], limit: int) -> Iterator[bytes]:
    """Up to `limit` lines of consecutive pieces that each end with a newline (as the follower hands
    a backlog over), the last line first, without their newlines."""
    for piece in reversed(pieces):
        end = len(piece) - 1  # the piece's last newline
        while end >= 0:
            if limit <= 0:
                return
            start = piece.rfind(b"\n", 0, end) + 1
            yield piece[start:end]
            limit -= 1
            end = start - 1
