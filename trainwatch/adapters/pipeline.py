"""One source's parsing: ANSI codes and launcher prefixes stripped, the adapter's records, then error
signatures and tracebacks (the scanner reads the line as it was, prefixes included: ranks matter there).

Two entries give the same records. `feed(line)` takes one decoded line (the live follower's path).
`feed_bytes(data)` takes raw bytes of any size, cut anywhere: a `trainwatch.scan.Scanner` finds the
lines and, in one pass over the bytes, every line that holds an error keyword or a literal the adapter
declared; only those lines are decoded for the signature scanner, and an adapter with `parse_chunk`
reads the scanner's arrays instead of lines. Adapters without it (most formats, every third-party
plugin) still get each decoded line through `parse`, exactly as before.
"""

from __future__ import annotations

import bisect
import itertools
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from functools import cached_property
from typing import TYPE_CHECKING, Any, BinaryIO

import numpy as np

from trainwatch.adapters.base import Adapter
from trainwatch.adapters.plans import PlanReader, plan_keywords
from trainwatch.adapters.prefix import STARTS, PrefixStripper
from trainwatch.adapters.signatures import SignatureScanner, trigger_keywords
from trainwatch.batch import Batch, BatchBuilder
from trainwatch.model import Event, Record, Sample
from trainwatch.scan.chunk import MAX_LINE
from trainwatch.textsafe import strip_escapes

if TYPE_CHECKING:
    from trainwatch.adapters.table_rows import Rows
    from trainwatch.scan import Chunk

PlainBars = Callable[[bytes, np.ndarray, np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray, np.ndarray]]
SpanCensus = Callable[[bytes, np.ndarray, np.ndarray, np.ndarray, int, int, int, int],
                      tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]
Positions = Callable[[bytes, bytes], np.ndarray]
ReadRows = Callable[[bytes, int, int, int], "Rows | None"]
"""`TemplateAdapter.read_rows`: (data, start, end, first line number) -> a run of table rows, or None."""

BACKLOG_BLOCK = 2 << 20
"""Bytes a backlog is read, scanned and judged in. One block's records are all that is held before the
engine gets them, and each block costs the adapter's line planning and the engine's batch a fixed part:
on a 1 GB console log `check` took 2.8 s with 2 MiB blocks and 3.2 s with 1 MiB; 4 MiB read no faster,
and the peak RSS on JSON lines grows with the block (66 MB at 1 MiB, 82 at 2, 107 at 4)."""

FIRST_BLOCK = 256 << 10
"""Bytes of a file's first block (see `SourceParser.read_file`)."""

READ_AHEAD = 2
"""Blocks the scan thread may have read and made into batches before the engine asks for them: with one,
the two threads waited on each other whenever a block took one of them longer than usual; a second
evens that out for one more block's batch held in memory."""

ESC = "\x1b"  # a line with an escape sequence reads differently once stripped: it is always looked at
CSI8 = "\x9b"  # the 8-bit CSI, which strip_escapes removes too

# First bytes of a line that can make the prefix stripper look further (and so change its state);
# any other line only counts. ESC: the line may start with a letter once its codes are stripped.
_STRIP_FIRST = np.zeros(256, dtype=bool)
_STRIP_FIRST[[ord(c) for c in STARTS if ord(c) < 128]] = True
_STRIP_FIRST[0x1B] = True
_STRIP_FIRST[0xC2] = True  # U+009B, the 8-bit CSI, in UTF-8
_SRUN_REACH = 10  # `srun -l` tags after blanks: up to 4 blanks, up to 4 digits, then the colon (prefix.SRUN)


def _stepped_rows(records: list[Record]) -> tuple[tuple[Any, ...], ...] | None:
    """(name, step, value) of a line's records when they are all samples with the step the line printed."""
    rows = []
    for r in records:
        if not isinstance(r, Sample) or r.step is None or r.step_inferred:
            return None
        rows.append((r.name, r.step, r.value))
    return tuple(rows)


def has_parse_chunk(adapter: Adapter) -> bool:
    """Whether the adapter reads scanner chunks itself (it overrides `Adapter.parse_chunk`)."""
    return type(adapter).parse_chunk is not Adapter.parse_chunk


class SourceParser:
    """Turns one source's lines into records. Never raises on what the log holds."""

    def __init__(self, adapter: Adapter) -> None:
        self.adapter = adapter
        self.source = adapter.source
        # every line of a text file is scanned whatever its format: a crash is printed as plain text
        # between the metric lines; a whole-file document (JSON) holds no such lines
        self.scanner = None if adapter.whole_file else SignatureScanner(adapter.source)
        # and read for the run's planned length: a total sits in a banner or a config dump that no
        # metric adapter reads (trainwatch/adapters/plans.py). Not beside an adapter that reads the
        # scanner's arrays: its formats say their totals themselves (the Trainer's banner, JSON keys),
        # and its speed rests on the keyword automaton staying small (each keyword more slows the
        # scan of every byte; the plan reader's would have made it 1.8x slower)
        self.plans = None if adapter.whole_file or has_parse_chunk(adapter) else PlanReader(adapter.source)
        self.errors = 0  # lines an adapter choked on (only third-party adapters should ever do this)
        self.first_error: str | None = None  # what the first of them raised, for `notes`
        self.prefixes = PrefixStripper() if adapter.strip_prefixes else None
        self.lines = 0  # lines read through feed_bytes so far (the last line number)
        self._bytes: _ByteReader | None = None
        self._last_metric_rows: tuple[tuple[Any, ...], ...] | None = None  # see `_repeated`
        # adapters that read a chunk's arrays read repeated lines there as they are: the line path keeps
        # them too, so both paths give the same records
        self._chunked = has_parse_chunk(adapter)

    def failed(self, exc: Exception) -> None:
        """The adapter raised: what it was reading is dropped, and counted, and the first error kept."""
        self.errors += 1
        if self.first_error is None:
            self.first_error = f"{type(exc).__name__}: {exc}"[:200]

    def notes(self) -> list[str]:
        """What a report says of this source's reading: the adapter's failures, which cost the lines it
        failed on (a line, or a block of a backlog), so findings there may be missing. Said, not hidden."""
        if not self.errors:
            return []
        return [f"the {self.adapter.name} reader failed {self.errors} time(s) on this log ({self.first_error}); "
                "the lines it failed on were not judged, so findings there may be missing"]

    # -- one decoded line ---------------------------------------------------------------------------
    def feed(self, line: str, lineno: int) -> list[Record]:
        line = strip_escapes(line)
        out = self._adapt(line, lineno)
        events = self.scanner.feed(line, lineno) if self.scanner is not None else []
        if self.plans is not None:
            events = [*events, *self.plans.feed(line, lineno)]
        if events:
            out.extend(self.settle())  # what the adapter held goes before the event, as in `ChunkLines`
        out.extend(events)
        return out

    def _adapt(self, line: str, lineno: int) -> list[Record]:
        """The adapter's records for one line with its ANSI codes already stripped."""
        text, prefix = (line, None) if self.prefixes is None else self.prefixes.strip(line)
        try:
            out = list(self.adapter.parse(text, lineno))
        except Exception as exc:  # an adapter bug must cost one line, not the watcher
            self.failed(exc)
            out = []
        if out and not self._chunked and self._repeated(_stepped_rows(out)):
            return []
        if prefix is not None and prefix.time is not None and out:
            for r in out:  # the adapter saw the line without its timestamp: give the samples theirs
                if type(r) is Sample and r.time is None and r.line == lineno:
                    r.time = prefix.time
        return out

    def _repeated(self, rows: tuple[tuple[Any, ...], ...] | None, out: BatchBuilder | None = None) -> bool:
        """Whether a metric line that printed its step gave exactly what the previous metric line gave (the
        same names, steps and values): two handlers (or two writers) on one file write every line twice
        or more. Counted again, each step's value would look like several points with no noise between
        them; dropped, the series is what the run logged once. Rows from a builder carry its name ids,
        made names here so both paths compare alike."""
        if rows is None:
            self._last_metric_rows = None
            return False
        if out is not None:
            names = out.names_table
            rows = tuple((names[i], step, value) for i, step, value in rows)
        if rows == self._last_metric_rows:
            return True
        self._last_metric_rows = rows
        return False

    def _adapt_into(self, line: str, lineno: int, out: BatchBuilder) -> None:
        """`_adapt`, writing into a batch builder."""
        text, prefix = (line, None) if self.prefixes is None else self.prefixes.strip(line)
        at = out.mark()
        try:
            self.adapter.parse_into(text, lineno, out)
        except Exception as exc:  # an adapter bug must cost one line, not the watcher
            self.failed(exc)
            out.rollback(at)
            return
        if out.mark() != at and not self._chunked and self._repeated(out.stepped_samples_since(at), out):
            out.rollback(at)
            return
        if prefix is not None and prefix.time is not None:
            out.fill_time(at, prefix.time, lineno)

    # -- raw bytes ----------------------------------------------------------------------------------
    def read_bytes(self, data: bytes) -> Batch:
        """The batch of every complete line in `data` (a partial last line is kept for the next call)."""
        if self._bytes is None:
            self._bytes = _ByteReader(self)
        return self._bytes.chunk(self._bytes.scanner.feed(unpadded(data)))

    def read_file(self, f: BinaryIO, block: int) -> Iterator[Batch]:
        """The batches of a whole file read `block` bytes at a time (see `read_blocks`), the first piece
        smaller: the engine waits for the first batch with nothing to do, so it should come soon."""
        first = f.read(min(block, FIRST_BLOCK))
        return self.read_blocks(itertools.chain((first,) if first else (), iter(lambda: f.read(block), b"")))

    def read_blocks(self, blocks: Iterable[bytes]) -> Iterator[Batch]:
        """The batches of consecutive pieces of bytes, one per piece. The next piece is read, scanned and
        made into a batch on a second thread while the caller judges this one: the native scanner and
        numpy's array work let go of the GIL, so a backlog uses two cores for part of the time. The
        parser is only ever used by that thread, one piece at a time, until the caller is done."""
        if self._bytes is None:
            self._bytes = _ByteReader(self)
        reader = self._bytes
        scanner = reader.scanner
        pieces = iter(blocks)
        ended = False  # a scan queued after the end takes no piece (only one thread calls `scan`)

        def scan() -> Batch | None:
            nonlocal ended
            data = b"" if ended else next(pieces, b"")
            if not data:
                ended = True
                return None
            return reader.chunk(scanner.feed(unpadded(data)))

        try:
            with ThreadPoolExecutor(max_workers=1, thread_name_prefix="trainwatch-scan") as pool:
                ahead = deque(pool.submit(scan) for _ in range(READ_AHEAD))
                while (got := ahead.popleft().result()) is not None:
                    ahead.append(pool.submit(scan))
                    yield got
        finally:  # the scan thread is done: the scanner's buffers kept for a next block are not needed
            scanner.release()  # (each a block's size: a check of many files held one per file)

    def feed_bytes(self, data: bytes) -> list[Record]:
        """`read_bytes` as records (for callers that want objects)."""
        return list(self.read_bytes(data).records())

    def document(self, text: str) -> list[Record]:
        try:
            return list(self.adapter.parse_document(text))
        except Exception as exc:
            self.failed(exc)
            return []

    def settle(self) -> list[Record]:
        """What the adapter held back for a later line, now that a live reader has caught up with the file."""
        try:
            return list(self.adapter.settle())
        except Exception as exc:
            self.failed(exc)
            return []

    def finish(self) -> list[Record]:
        out: list[Record] = []
        if self._bytes is not None:  # the last line, when the data did not end with a newline
            out.extend(self._bytes.chunk(self._bytes.scanner.finish()).records())
        try:
            out.extend(self.adapter.finish())
        except Exception as exc:
            self.failed(exc)
        if self.scanner is not None:
            out.extend(self.scanner.finish())
        return out


def unpadded(data: bytes) -> bytes:
    """Bytes without NULs: a file written to while it was truncated, or preallocated, holds runs of them
    (`looks_binary` lets only such runs through); they are no text, and left in they glue to the line
    after them."""
    return data.replace(b"\x00", b"") if b"\x00" in data else data


def joined(pieces: Iterable[bytes], size: int) -> Iterator[bytes]:
    """Consecutive pieces joined into blocks of at least `size` bytes (the last one may be shorter)."""
    held: list[bytes] = []
    n = 0
    for piece in pieces:
        held.append(piece)
        n += len(piece)
        if n >= size:
            yield held[0] if len(held) == 1 else b"".join(held)
            held, n = [], 0
    if n:
        yield b"".join(held)


class _ByteReader:
    """The byte path of one SourceParser: its Scanner and which keyword ids mean what."""

    def __init__(self, parser: SourceParser) -> None:
        from trainwatch.scan import Scanner

        self.parser = parser
        self.chunked = has_parse_chunk(parser.adapter)
        sig_words = trigger_keywords() if parser.scanner is not None else []
        plan_words = plan_keywords() if parser.plans is not None else []
        own_words = list(getattr(parser.adapter, "chunk_keywords", ())) if self.chunked else []
        keywords = list(dict.fromkeys([ESC, CSI8, *sig_words, *plan_words, *own_words]))
        self.keywords = keywords
        self.scanner = Scanner(keywords)
        self.sig_kw = np.array([w in (ESC, CSI8) or w in sig_words for w in keywords], dtype=bool)
        self.plan_kw = np.array([w in (ESC, CSI8) or w in plan_words for w in keywords], dtype=bool)
        self.out = BatchBuilder(parser.source)  # one per source: its name table lives as long as the source
        self.own_kw = np.array([w in (ESC, CSI8) or w in own_words for w in keywords], dtype=bool)
        # an adapter of lines that reads runs of table rows from the bytes itself (the template reader)
        self.read_rows: ReadRows | None = None if self.chunked else getattr(parser.adapter, "read_rows", None)

    def chunk(self, chunk: Chunk) -> Batch:
        """The batch of one scanned chunk (made before the next chunk is scanned, so the scanner's key
        table is the one this chunk's ids index)."""
        out = self.out
        n = len(chunk)
        if not n:
            return out.build()
        parser = self.parser
        parser.lines = chunk.first_lineno + n - 1
        lines = _Lines(parser, chunk)
        found = self._signatures(chunk, lines) if parser.scanner is not None else []
        if parser.plans is not None:
            if not self.chunked and self.read_rows is None:
                lines.decode_all()  # every line is decoded for the adapter below: once, not line by line
            found = _merged(found, self._plans(chunk, lines))
        if self.chunked:
            view = ChunkLines(parser, chunk, lines, _hit_lines(chunk, self.own_kw), out, self.keywords,
                              self.scanner, [ln for ln, _ in found])
            try:
                out.extend(parser.adapter.parse_chunk(chunk, self.scanner.keys, view))
            except Exception as exc:  # an adapter bug must cost one chunk, not the watcher
                parser.failed(exc)
                out.build()  # what it made of the chunk is dropped
            view.close()
            return out.build().with_events(found)
        first = chunk.first_lineno
        read_rows = self.read_rows if chunk._cut_line_starts is None else None
        if read_rows is None:
            lines.decode_all()  # (else lines are decoded as asked for, and all at once when most are)
        k = 0
        i = 0
        while i < n:
            if read_rows is not None:
                stop = found[k][0] - first if k < len(found) else n  # a line with events is read as a line
                if stop > i and (took := self._rows(read_rows, chunk, i, stop)):
                    i += took
                    continue
            got = parser._adapt(lines.text(i), first + i)
            if got:
                out.extend(got)
            if k < len(found) and found[k][0] == first + i:  # on each line the adapter's records come first
                for e in found[k][1]:
                    out.event(e)
                k += 1
            i += 1
        return out.build()

    def _rows(self, read_rows: ReadRows, chunk: Chunk, i: int, stop: int) -> int:
        """Lines i.. (before `stop`) read by the adapter as a run of table rows (`read_rows`, see
        TemplateAdapter.read_rows): how many it took, 0 for none. Around it, what the line path does to
        each line: the prefix stripper counts them (a row of numbers is nothing it takes off or learns
        from), and a stepped row that repeats the metric line before it is dropped (`_repeated`)."""
        parser = self.parser
        base = chunk.base_offset
        end = int(chunk.line_start[stop]) - base if stop < len(chunk) else len(chunk.data)
        try:
            got = read_rows(chunk.data, int(chunk.line_start[i]) - base, end, chunk.first_lineno + i)
        except Exception as exc:  # an adapter bug must cost its lines, not the watcher
            parser.failed(exc)
            return 0
        if got is None:
            return 0
        rows, names, step, value, line, inferred = got
        if parser.prefixes is not None:
            parser.prefixes.count(rows)
        stepped = ~inferred
        keep = np.ones(rows, dtype=bool)
        keep[1:] = ~(stepped[1:] & stepped[:-1] & (step[1:] == step[:-1]) & (value[1:] == value[:-1]).all(axis=1))
        first_row = tuple((k, int(step[0]), v) for k, v in zip(names, value[0].tolist()))
        if stepped[0] and first_row == parser._last_metric_rows:
            keep[0] = False
        parser._last_metric_rows = (tuple((k, int(step[-1]), v) for k, v in zip(names, value[-1].tolist()))
                                    if stepped[-1] else None)
        if not keep.all():
            step, value, line, inferred = step[keep], value[keep], line[keep], inferred[keep]
        width = len(names)
        out = self.out
        ids = np.array([out.name_id(k) for k in names], dtype=np.int32)
        out.columns(np.tile(ids, len(step)), np.repeat(step, width), value.ravel(), np.repeat(line, width),
                    None, np.repeat(inferred, width))
        return rows

    def _signatures(self, chunk: Chunk, lines: _Lines) -> list[tuple[int, list[Event]]]:
        """The signature scanner fed the lines that can matter to it: those with a keyword, and every
        line while a traceback or a child-failure report is open. The same events as feeding all."""
        scanner = self.parser.scanner
        assert scanner is not None
        hits = _hit_lines(chunk, self.sig_kw).tolist()
        n, first = len(chunk), chunk.first_lineno
        out: list[tuple[int, list[Event]]] = []
        pos = 0
        while pos < n:
            if not scanner.busy:
                k = bisect.bisect_left(hits, pos)
                if k == len(hits):
                    break
                pos = hits[k]
            events = scanner.feed(lines.text(pos), first + pos)
            if events:
                out.append((first + pos, events))
            pos += 1
        return out


    def _plans(self, chunk: Chunk, lines: _Lines) -> list[tuple[int, list[Event]]]:
        """The plan reader fed the lines holding one of its keywords (the same events as feeding all)."""
        reader = self.parser.plans
        assert reader is not None
        first = chunk.first_lineno
        out: list[tuple[int, list[Event]]] = []
        for i in _hit_lines(chunk, self.plan_kw).tolist():
            events = reader.feed(lines.text(i), first + i)
            if events:
                out.append((first + i, events))
        return out


def _merged(a: list[tuple[int, list[Event]]], b: list[tuple[int, list[Event]]]) -> list[tuple[int, list[Event]]]:
    """Two lists of (line, events) in line order as one, a line's events from `a` before those from `b`."""
    if not b:
        return a
    if not a:
        return b
    out: list[tuple[int, list[Event]]] = []
    i = j = 0
    while i < len(a) or j < len(b):
        if j == len(b) or (i < len(a) and a[i][0] < b[j][0]):
            out.append(a[i])
            i += 1
        elif i == len(a) or b[j][0] < a[i][0]:
            out.append(b[j])
            j += 1
        else:
            out.append((a[i][0], a[i][1] + b[j][1]))
            i += 1
            j += 1
    return out


def _hit_lines(chunk: Chunk, wanted: np.ndarray) -> np.ndarray:
    """Chunk line indices (sorted, unique) holding at least one of the wanted keywords."""
    if not chunk.kw_line.shape[0] or not wanted.any():
        return np.zeros(0, dtype=np.int64)
    lines = chunk.kw_line[wanted[chunk.kw_id]]  # sorted (the contract): repeats are neighbours
    if len(lines) < 2:
        return lines
    return lines[np.concatenate(([True], lines[1:] != lines[:-1]))]


class _Lines:
    """Decoded lines of one chunk, as `iter_lines` gave them: invalid UTF-8 replaced, the `\\r` of a
    `\\r\\n` kept, ANSI codes stripped. Decoded one at a time, only when asked for."""

    def __init__(self, parser: SourceParser, chunk: Chunk) -> None:
        self.chunk = chunk
        self.cache: dict[int, str] = {}
        self.all: list[str] | None = None
        self._misses_left = max(64, len(chunk) // 4)  # lines decoded one by one before all are at once

    def text(self, i: int) -> str:
        if self.all is not None:
            return self.all[i]
        got = self.cache.get(i)
        if got is None:
            self._misses_left -= 1
            if self._misses_left < 0:  # most lines are being read: one decode for all is cheaper
                self._misses_left = len(self.chunk) + 1  # once (it does nothing when a line was cut)
                self.decode_all()
                if self.all is not None:
                    return self.all[i]
            got = self.cache[i] = _clean(self.raw(i).decode("utf-8", "replace"))
        return got

    def raw(self, i: int) -> bytes:
        c = self.chunk
        start = c._data_start(i)
        end = start + c._kept(i)
        if c.data[end:end + 2] == b"\r\n":
            end += 1
        return c.data[start:end]

    def decode_all(self) -> None:
        """Every line at once: one decode and one split, cheaper than line by line when all are read."""
        c = self.chunk
        parts = c.data.decode("utf-8", "replace").split("\n")
        if c._cut_line_starts is None and len(parts) >= len(c):
            self.all = [_clean(t) for t in parts[:len(c)]]


def _clean(text: str) -> str:
    return strip_escapes(text)


class ChunkLines:
    """What `Adapter.parse_chunk` gets besides the arrays: the lines of the chunk holding one of its
    `chunk_keywords` (or an ANSI code), and the per-line path for any line it does not read from the
    arrays itself.

    `parse(i)` gives the records `Adapter.parse` makes of line `i` (ANSI and launcher prefixes stripped,
    timestamps from the prefix applied) and `skip(i)` says line `i` was read from the arrays; both must
    be called in increasing line order. Lines never named are accounted for (the prefix stripper keeps a
    little state from every line) when a later one is, and at the end of the chunk.
    """

    def __init__(self, parser: SourceParser, chunk: Chunk, lines: _Lines, hits: np.ndarray,
                 out: BatchBuilder, keywords: list[str], scanner: Any, marked: list[int] | None = None) -> None:
        self.parser = parser
        self._marked = marked or []  # lines where the scanners found events: what an adapter holds goes first
        self._m = 0
        self.plain_bars: PlainBars = scanner.plain_bars
        """The scanner's reader of tqdm's plain bars (trainwatch/scan/bars.py), native or reference."""
        self.span_census: SpanCensus = scanner.span_census
        """The scanner's byte counts over spans (trainwatch/scan/census.py), native or reference."""
        self.positions: Positions = scanner.positions
        """The scanner's finder of a byte string's offsets (trainwatch/scan/find.py), native or reference."""
        self._keywords = keywords
        self.out = out
        """Where an adapter reading the arrays may put whole columns (`BatchBuilder.columns`) instead of
        returning records; it does one or the other, in line order."""
        self.chunk = chunk
        self.hit_lines = hits
        """Chunk line indices (sorted, int64) of the lines holding a keyword the adapter declared."""
        self._lines = lines
        self._next = 0  # the first line not yet accounted for
        self._strip_at: list[int] | None = None  # lines the prefix stripper must see, and how far it got
        self._k = 0

    @cached_property
    def hits(self) -> list[int]:
        """`hit_lines` as a list, made once when asked for: a loop over the lines reads a list faster,
        while a reader of the arrays takes the array as it is."""
        return self.hit_lines.tolist()

    def lineno(self, i: int) -> int:
        return self.chunk.first_lineno + i

    def text(self, i: int) -> str:
        """Line `i` decoded, with ANSI codes stripped but launcher prefixes kept."""
        return self._lines.text(i)

    def parse(self, i: int) -> list[Record]:
        lineno = self.chunk.first_lineno + i
        self._account(i)
        self._next = i + 1
        out = self._settled(lineno, False)
        out += self.parser._adapt(self._lines.text(i), lineno)
        return out + self._settled(lineno, True)

    def parse_into(self, i: int) -> None:
        """`parse(i)` written into `out` rather than returned."""
        lineno = self.chunk.first_lineno + i
        self._account(i)
        self._next = i + 1
        self.out.extend(self._settled(lineno, False))
        self.parser._adapt_into(self._lines.text(i), lineno, self.out)
        self.out.extend(self._settled(lineno, True))

    def _settled(self, lineno: int, on: bool) -> list[Record]:
        """What the adapter held back, when the scanners found an event on a line before this one (or on
        it, once it is read): held records go before the event, as reading line by line puts them."""
        marked, m = self._marked, self._m
        while m < len(marked) and (marked[m] < lineno or (on and marked[m] == lineno)):
            m += 1
        if m == self._m:
            return []
        self._m = m
        return self.parser.settle()

    def skip(self, i: int) -> None:
        self._account(i + 1)

    def skip_plain(self, i: int) -> None:
        """`skip(i)` for a line `unprefixed` says no launcher prefix starts: it is only counted."""
        self._account(i)
        self._next = i + 1
        stripper = self.parser.prefixes
        if stripper is None:
            return
        at, k = self._stripped_lines(), self._k
        while k < len(at) and at[k] <= i:
            k += 1
        self._k = k
        stripper.count(1)

    def skip_plain_many(self, lines: list[int]) -> None:
        """`skip_plain` for each of these lines, in order: when no line between them needs the prefix
        stripper's look, they and the lines between are only counted."""
        if not lines:
            return
        last = lines[-1]
        stripper = self.parser.prefixes
        if stripper is None:
            self._next = max(self._next, last + 1)
            return
        at, k = self._stripped_lines(), self._k
        if k < len(at) and at[k] <= last:
            self._skip_plain_through(lines, at, k, stripper)
            return
        if last + 1 > self._next:
            stripper.count(last + 1 - self._next)
            self._next = last + 1

    def _skip_plain_through(self, lines: list[int], at: list[int], k: int, stripper: PrefixStripper) -> None:
        """`skip_plain` for each of `lines` where lines the stripper looks at lie among them: it looks
        only at those that are not themselves in `lines` (a skipped line is only counted), in order, each
        after the count of the lines before it, as line-by-line skipping would."""
        last = lines[-1]
        stop = bisect.bisect_right(at, last, lo=k)
        start = self._next
        cand = np.asarray(at[k:stop], dtype=np.int64)
        cand = cand[cand >= start]
        skipped = np.asarray(lines, dtype=np.int64)
        pos = np.searchsorted(skipped, cand)
        inside = pos < len(skipped)
        inside[inside] = skipped[pos[inside]] == cand[inside]
        at_ = start
        for i in cand[~inside].tolist():
            if i > at_:
                stripper.count(i - at_)
            stripper.strip(self._lines.text(i))
            at_ = i + 1
        if last + 1 > at_:
            stripper.count(last + 1 - at_)
        self._k = stop
        self._next = max(self._next, last + 1)

    def with_keyword(self, word: str) -> np.ndarray:
        """Per line of the chunk, whether it holds `word`: one of the adapter's `chunk_keywords`, or the
        escape characters ESC and CSI8 (a line with them reads differently once they are stripped)."""
        found = np.zeros(len(self.chunk), dtype=bool)
        c = self.chunk
        found[c.kw_line[c.kw_id == self._keywords.index(word)]] = True
        return found

    def declared(self) -> tuple[str, ...]:
        """The adapter's `chunk_keywords`: the words `with_keyword` answers for."""
        return tuple(getattr(self.parser.adapter, "chunk_keywords", ()))

    def escaped(self) -> np.ndarray:
        """Per line of the chunk, whether it holds an escape character (ESC, or the 8-bit CSI)."""
        return self.with_keyword(ESC) | self.with_keyword(CSI8)

    def unprefixed(self) -> np.ndarray:
        """Per line of the chunk, whether the prefix stripper is sure to take nothing off it and to learn
        nothing from it: no stripper, or a first byte no prefix starts with, or blanks then no `:` early
        enough for an `srun -l` rank tag (the only tag after blanks that can start a line)."""
        c = self.chunk
        n = len(c)
        if self.parser.prefixes is None:
            return np.ones(n, dtype=bool)
        if not n:
            return np.zeros(0, dtype=bool)
        at, first = self._first_bytes()
        length = np.minimum(c.line_end - c.line_start, MAX_LINE)
        buf = np.frombuffer(c.data, dtype=np.uint8)
        plain = ~_STRIP_FIRST[first]
        blank = np.flatnonzero((first == 0x20) | (first == 0x09))
        if len(blank):
            span = np.arange(_SRUN_REACH)
            pos = at[blank, None] + span
            inside = span < length[blank, None]
            colon = (buf[np.minimum(pos, len(buf) - 1)] == 0x3A) & inside
            plain[blank[~colon.any(axis=1)]] = True
        return plain

    def close(self) -> None:
        self._account(len(self.chunk))
        if self._m < len(self._marked):
            self._m = len(self._marked)
            self.out.extend(self.parser.settle())

    def _account(self, stop: int) -> None:
        """Lines from `_next` to `stop` pass through the prefix stripper without reaching the adapter."""
        start = self._next
        if stop <= start:
            return
        self._next = stop
        stripper = self.parser.prefixes
        if stripper is None:
            return
        at, k = self._stripped_lines(), self._k
        looked = 0
        while k < len(at) and at[k] < stop:
            if at[k] >= start:
                stripper.strip(self._lines.text(at[k]))
                looked += 1
            k += 1
        self._k = k
        stripper.count(stop - start - looked)

    def _stripped_lines(self) -> list[int]:
        """`_needing_strip`, worked out once per chunk."""
        if self._strip_at is None:
            self._strip_at = self._needing_strip()
        return self._strip_at

    def _needing_strip(self) -> list[int]:
        """Lines whose first byte can make the prefix stripper look further than its first test."""
        if not len(self.chunk):
            return []
        _, first = self._first_bytes()
        return np.flatnonzero(_STRIP_FIRST[first]).tolist()

    def _first_bytes(self) -> tuple[np.ndarray, np.ndarray]:
        """Where each line starts in the chunk's data, and its first byte (0 for an empty line, which no
        prefix starts)."""
        c = self.chunk
        starts = c._cut_line_starts
        at = (c.line_start - c.base_offset) if starts is None else starts
        nonempty = c.line_end > c.line_start
        first = np.zeros(len(c), dtype=np.uint8)
        first[nonempty] = np.frombuffer(c.data, dtype=np.uint8)[at[nonempty]]
        return at, first
