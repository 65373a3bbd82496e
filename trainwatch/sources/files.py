"""Finding log files and reading them as numbered lines, in bounded memory."""

from __future__ import annotations

import codecs
import glob
import io
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from trainwatch.errors import SourceError
from trainwatch.scan.chunk import MAX_LINE as SCANNED
from trainwatch.scan.chunk import kept

CHUNK = 1 << 22
MAX_LINE = 1 << 22
"""An unfinished line held past this many bytes is handed over (cut as `kept` cuts) and the rest of it
skipped: memory stays bounded whatever a writer does."""
HEAD_BYTES = 1 << 16
SAMPLE_TAIL = 1 << 16  # the end of the file: where a crash and the last metrics are
SAMPLE_CHUNKS = 6  # spread pieces between head and tail: metrics that start after long banners
SAMPLE_CHUNK = 1 << 15
SAMPLE_BYTES = HEAD_BYTES + SAMPLE_TAIL + SAMPLE_CHUNKS * SAMPLE_CHUNK  # the most a sample holds (320 KiB)
LOG_SUFFIXES = (".log", ".txt", ".out", ".err", ".jsonl", ".ndjson", ".csv")
LOG_NAMES = ("trainer_state.json", "metrics.csv", "trainer_log.jsonl")


STATE_SUFFIX = "trainer_state.json"
UTF16_BOMS = (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)
UTF16_MAX = 256 << 20  # a UTF-16 log is decoded whole, in memory: at most this many bytes of it
CR_PROBE = 1 << 16  # the bytes that tell a log whose lines end in a bare `\r` (see cr_only)
CR_MIN = 3  # carriage returns those bytes must hold, with no newline
BARE_CR = re.compile(rb"\r(?!\n)")
"""A Trainer's state file, also when saved under a name of its own (`run1-trainer_state.json`)."""


def is_log_name(path: Path) -> bool:
    name = path.name.lower()
    return name in LOG_NAMES or name.endswith(LOG_SUFFIXES) or name.endswith(STATE_SUFFIX)


def discover(paths: list[str]) -> list[Path]:
    """Files named, matched by a glob, or found as logs under a directory; order kept, duplicates dropped."""
    found: list[Path] = []
    for raw in paths:
        p = Path(raw)
        if any(c in raw for c in "*?[") and not p.exists():
            matches = sorted(glob.glob(raw, recursive=True))
            if not matches:
                raise SourceError(f"{raw}: no file matches this pattern")
            found.extend(Path(m) for m in matches if Path(m).is_file())
        elif p.is_dir():
            from trainwatch.sources.runfolders import members  # adapters are loaded only when a folder is given

            logs = members(p, is_log_name)
            if not logs:
                raise SourceError(f"{raw}: directory holds no log, trainer_state.json, metrics.csv, "
                                  "TensorBoard, MLflow or W&B run files")
            found.extend(logs)
        elif p.exists():
            if not p.is_file():
                raise SourceError(f"{raw}: not a regular file")
            found.append(p)
        else:
            raise SourceError(f"{raw}: no such file or directory")
    seen: set[str] = set()
    out = []
    for p in found:
        key = os.path.realpath(p)
        if key not in seen:
            seen.add(key)
            out.append(p)
    return out


def open_checked(path: Path) -> BinaryIO:
    """The file's bytes as UTF-8 text: a UTF-16 log (what Windows PowerShell's `>` writes, with its byte
    order mark) is decoded, so every reader (detection, the scanner) sees the text it holds; a log whose
    lines end in a bare carriage return (see `cr_only`) is given with newlines."""
    try:
        f = open(path, "rb")  # noqa: SIM115 (returned open, or closed here once decoded)
        start = f.read(2)
        if start in UTF16_BOMS:
            with f:
                return _cr_as_newlines(_utf16_as_utf8(path, f))
        probe = start + f.read(CR_PROBE)
        f.seek(0)
        if not cr_only(probe) or os.fstat(f.fileno()).st_size > UTF16_MAX:
            return f
        with f:
            return _cr_as_newlines(f)
    except PermissionError:
        raise SourceError(f"{path}: permission denied") from None
    except IsADirectoryError:
        raise SourceError(f"{path}: is a directory") from None
    except OSError as exc:
        raise SourceError(f"{path}: cannot open: {exc.strerror or exc}") from None


def cr_only(head: bytes) -> bool:
    """Whether a file's first bytes end their lines with a bare `\\r` and never a newline: a progress bar
    redrawn for the whole run under nohup (tqdm writes `\\r` before each redraw and a newline only when the
    bar closes), or a classic Mac text file. Read as it is, the file is one physical line of thousands of
    records, too long for any reader; each `\\r` is the end of a line."""
    return b"\n" not in head and head.count(b"\r") >= CR_MIN


def _cr_as_newlines(f: BinaryIO) -> BinaryIO:
    """`f`'s bytes with every bare `\\r` (not the one of a `\\r\\n`) made a newline, when its start is
    `cr_only`; else `f` as it is."""
    head = f.read(CR_PROBE)
    f.seek(0)
    if not cr_only(head):
        return f
    with f:
        return io.BytesIO(BARE_CR.sub(b"\n", f.read()))


def _utf16_as_utf8(path: Path, f: BinaryIO) -> BinaryIO:
    f.seek(0)
    if os.fstat(f.fileno()).st_size > UTF16_MAX:
        raise SourceError(f"{path}: a UTF-16 log over {UTF16_MAX >> 20} MiB: convert it to UTF-8 first "
                          "(iconv -f UTF-16 -t UTF-8)")
    return io.BytesIO(f.read().decode("utf-16", "replace").encode("utf-8"))


def read_head(path: Path, size: int = HEAD_BYTES) -> bytes:
    with open_checked(path) as f:
        try:
            return f.read(size)
        except OSError as exc:
            raise SourceError(f"{path}: cannot read: {exc.strerror or exc}") from None


def sample_file(f: BinaryIO) -> bytes:
    """What detection reads: the whole file when small, else its head, its tail and spread pieces between.

    Real logs often open with hundreds of KB of banners, argument dumps or echoed source before the
    first metric line, so the first 64 KiB alone can hold nothing an adapter recognises. The sample is
    bounded (SAMPLE_BYTES) whatever the file size; every piece after the head is cut to whole lines, and
    pieces are joined by newlines so no line is glued to another.
    """
    f.seek(0, os.SEEK_END)
    size = f.tell()
    f.seek(0)
    if size <= SAMPLE_BYTES:
        return f.read(SAMPLE_BYTES)
    pieces = [_whole_lines(f.read(HEAD_BYTES), cut_start=False)]
    tail_at = size - SAMPLE_TAIL
    gap = (tail_at - HEAD_BYTES) / (SAMPLE_CHUNKS + 1)
    for i in range(1, SAMPLE_CHUNKS + 1):
        f.seek(HEAD_BYTES + int(gap * i) - SAMPLE_CHUNK // 2)
        pieces.append(_whole_lines(f.read(SAMPLE_CHUNK)))
    f.seek(tail_at)
    pieces.append(_whole_lines(f.read(SAMPLE_TAIL), cut_end=False))
    return b"\n".join(p for p in pieces if p)


def sample_start(f: BinaryIO) -> int | None:
    """How many bytes at the start of `sample_file(f)` are the file's own start, unbroken: None when the
    sample is the whole file. Past them the sample skips parts of the file, so a value found there is no
    "first" of anything (trainwatch.task says which loss it read)."""
    f.seek(0, os.SEEK_END)
    size = f.tell()
    f.seek(0)
    if size <= SAMPLE_BYTES:
        return None
    return len(_whole_lines(f.read(HEAD_BYTES), cut_start=False))


def read_sample_start(path: Path) -> int | None:
    """`sample_start` of a path; None (the whole sample) when it cannot be read: the sample's reader
    reports that."""
    try:
        with open_checked(path) as f:  # the bytes the sample is taken from (a UTF-16 or CR-only log's are made)
            return sample_start(f)
    except (OSError, SourceError):
        return None


def _whole_lines(data: bytes, *, cut_start: bool = True, cut_end: bool = True) -> bytes:
    """`data` without the partial line at either end (a piece with no newline at all is kept whole)."""
    if cut_start:
        first = data.find(b"\n")
        if first >= 0:
            data = data[first + 1:]
    if cut_end:
        last = data.rfind(b"\n")
        if last >= 0:
            data = data[:last]
    return data


def read_sample(path: Path) -> bytes:
    """`sample_file` of a path, with the one-line errors of `read_head`."""
    with open_checked(path) as f:
        try:
            return sample_file(f)
        except OSError as exc:
            raise SourceError(f"{path}: cannot read: {exc.strerror or exc}") from None


NUL_PADDING = re.compile(rb"\x00{16,}")


def looks_binary(head: bytes) -> bool:
    """NUL bytes or mostly control bytes: not a text log. Backspace is text here: Keras' verbose=1
    progress bar redraws itself with runs of it. Long runs of NULs alone are padding (a log truncated
    while it was written, or preallocated) before or between text: the text is judged."""
    if not head:
        return False
    sample = head[:8192]
    if b"\x00" in sample:
        sample = NUL_PADDING.sub(b"", head[:65536])[:8192]
        if not sample or b"\x00" in sample:
            return True
    bad = sum(1 for b in sample if b < 8 or 13 < b < 27 or 27 < b < 32)
    return bad > len(sample) * 0.1


def _line_over(body: bytes, limit: int) -> bool:
    """Whether a line of `body` (split at `\n`) is longer than `limit` bytes: a few `rfind`s, each
    jumping over every line that ends in the next `limit` bytes."""
    pos, n = 0, len(body)
    while n - pos > limit:
        nl = body.rfind(b"\n", pos, pos + limit + 1)
        if nl < 0:
            return True
        pos = nl + 1
    return False


def iter_lines(f: BinaryIO, start_line: int = 0) -> Iterator[tuple[int, str]]:
    """(line number, text) from a binary file object: invalid UTF-8 replaced, a last line without a newline kept.

    Whole chunks are decoded at once (a line never straddles the cut), which keeps the per-line cost to
    one split; a line is cut as the scanners cut it (`kept`), and an unfinished one held past MAX_LINE is
    handed over then, the rest of it skipped.
    """
    lineno = start_line
    rest = b""
    skipping = False
    while True:
        chunk = f.read(CHUNK)
        if not chunk:
            break
        data = rest + chunk if rest else chunk
        cut = data.rfind(b"\n")
        if cut < 0:
            rest = data
        else:
            rest = data[cut + 1:]
            body = data[:cut]
            if _line_over(body, SCANNED):  # longer than the scanners keep: cut each line as they do
                lines: list[str | None] = [kept(raw).decode("utf-8", "replace") for raw in body.split(b"\n")]
            else:
                lines = list(body.decode("utf-8", "replace").split("\n"))
            if skipping:
                lines[0] = None  # the tail of a line cut at MAX_LINE
                skipping = False
            for text in lines:
                lineno += 1
                if text is not None:
                    yield lineno, text
        if len(rest) > MAX_LINE:
            if not skipping:
                yield lineno + 1, kept(rest).decode("utf-8", "replace")
                skipping = True
            rest = b""
    if rest and not skipping:  # no terminator: the scanners keep its first bytes, a last `\r` among them
        lineno += 1
        yield lineno, rest[:SCANNED].decode("utf-8", "replace")
    elif skipping:
        lineno += 1
