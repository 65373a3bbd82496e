"""Following one file as it grows: partial lines held, truncation, rotation, deletion and return.

A FileFollower does no waiting and no threading of its own: whoever drives it (the watcher's engine
thread) calls `poll()` when inotify says the file or its directory changed, or on the polling timer.
Each call reads what is new and returns it as numbered lines. The follower survives everything a
log file can do to it and reports each thing once, as a short message, never as an exception.
"""

from __future__ import annotations

import errno
import os
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from trainwatch.scan import kernels
from trainwatch.scan.chunk import kept
from trainwatch.sources.files import MAX_LINE

READ_CHUNK = 1 << 20
SMALL_READ = 16 << 10  # beyond the size stat gave: what a file grew by since is read in the same call
POLL_BYTES = 16 << 20
"""At most this much is read per poll: a backlog of gigabytes is read and judged piece by piece (memory
stays bounded, and readers get the lock between pieces); `more` says another poll is due at once."""
REDRAW = -1  # `Chunk.ends` of a redraw segment of the unfinished line
MAX_DOCUMENT = 64 << 20  # a whole_file document (trainer_state.json) larger than this is not re-read
ROTATE_WAIT_S = 5.0
"""After a rotation, the renamed file is still read until it has had nothing new for this long: under
logrotate's `create` the program writes on into the old file until its reopen (a postrotate reload, a
handler that reopens on its next record). Fluent Bit's `Rotate_Wait` is the same idea."""
SEEN_TAIL = 256
"""The last bytes read are kept: after a copytruncate, the copy whose bytes just before our offset are
these is the same stream, and what it holds beyond our offset was written before the truncate."""
COPY_SUFFIX_SKIP = (".gz", ".bz2", ".xz", ".zst", ".z", ".lz4")
MAX_COPIES_TRIED = 16


@dataclass
class _Rotated:
    """The file a rotation replaced, read on until it has been quiet for ROTATE_WAIT_S."""

    fd: int
    offset: int
    lineno: int
    partial: bytes
    partial_skip: bool
    quiet_since: float


@dataclass
class Chunk:
    """What one poll found: complete lines, redraw segments of the unfinished line, notices."""

    lines: list[tuple[int, str]] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    restarted: bool = False  # the file was truncated or replaced: line numbers start again
    document: str | None = None  # whole_file mode: the new text of the document
    raw: list[bytes] = field(default_factory=list)
    """The backlog's complete lines as bytes, before `lines` (`raw_backlog`): a byte path reads them."""
    raw_first: int = 0  # the number of the first line in `raw`
    raw_lines: list[int] = field(default_factory=list)
    """The lines in each piece of `raw` (counted as they are read, so no reader counts them again)."""
    ends: list[int | None] = field(default_factory=list)
    """With `offsets`: for each of `lines`, the byte offset just after it in the file now at the path;
    None for a line with no place there (the rotated file's, a line cut at MAX_LINE), REDRAW for a redraw
    of the unfinished line. `trainwatch stream` sends these so a client resumes where it stopped."""
    restart_at: int = 0  # with `restarted`: lines[restart_at:] are the new (or truncated) file's


def newlines(data: bytes, end: int) -> int:
    """The newlines in data[:end]: counted by the native extension's vector count when it is in use,
    else by numpy's byte compare (5x faster than `bytes.count`), on the thread that also judges them."""
    return kernels.count_byte(data, end, 0x0A)


class FileFollower:
    """Reads one path incrementally. Line numbers are the file's own (1-based)."""

    def __init__(self, path: Path, *, from_end: bool = False, whole_file: bool = False,
                 notice: Callable[[str], None] | None = None, raw_backlog: bool = False,
                 clock: Callable[[], float] = time.monotonic, offsets: bool = False,
                 start: tuple[int, int] | None = None) -> None:
        self.path = path
        self._offsets = offsets  # fill Chunk.ends
        self._start = start  # (offset, lineno) to resume the first file at, after a line end
        self.clock = clock
        self._rotated: _Rotated | None = None
        self.whole_file = whole_file
        self._fd: int | None = None
        self._ino: tuple[int, int] | None = None
        self._offset = 0
        self._lineno = 0
        self._partial = b""
        self._partial_skip = False  # the held line passed MAX_LINE: the rest of it is dropped
        self._from_end = from_end
        self._seen_tail = b""  # the last SEEN_TAIL bytes read before self._offset
        self._missing_said = False
        self._unreadable_said = False
        self._doc_sig: tuple[int, int, int] | None = None
        self.more = False  # the last poll stopped at POLL_BYTES with more of the file waiting
        self._raw = raw_backlog and not from_end and not whole_file
        """Until the first time the end of the file is reached, complete lines are handed over as bytes
        (`Chunk.raw`), so a backlog goes through the same byte path as `check`; never again after, nor
        after a truncation or a rotation (the reader's line count would no longer be the file's)."""

    # -- the one entry point --------------------------------------------------------------------

    def poll(self) -> Chunk:
        """Everything new since the last call. Never raises for what the filesystem does."""
        out = Chunk()
        if self._rotated is not None:
            self._read_rotated(out)  # the old file's late lines come before the new file's
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            if self._fd is not None:
                self._drain(out)  # the old file's last words first
                if self.more:  # more than a poll of it was unread: the open descriptor still reads it
                    return out
                self._end_raw(out)
                self._keep_rotated()  # renamed away (or deleted) while its writer may still write to it
                out.notices.append(f"{self.path}: file was removed; waiting for it to return")
                self._missing_said = True
            elif not self._missing_said:
                out.notices.append(f"{self.path}: does not exist yet; waiting for it")
                self._missing_said = True
            return out
        except OSError as exc:
            self._unreadable(out, exc)
            return out
        if stat.S_ISDIR(st.st_mode):  # replaced by a directory: opened, it would fail at the first read
            if self._fd is not None:
                self._drain(out)
                if self.more:
                    return out
                self._close()
            self._unreadable(out, IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR)))
            return out
        if self.whole_file:
            self._document(st, out)
            return out
        ino = (st.st_dev, st.st_ino)
        if self._fd is not None and ino != self._ino:
            self._drain(out)  # rotated or replaced: finish the old file, then continue with the new one
            if self.more:  # more than a poll of the old file was unread: it is finished over the next polls
                return out
            self._end_raw(out)
            self._keep_rotated()
            out.notices.append(f"{self.path}: file was replaced (rotation); following the new file")
            self._restart(out)
        if self._fd is None:
            if not self._open(st, out):
                return out
        elif st.st_size < self._offset:
            self._read_copy(out)
            self._end_raw(out)
            out.notices.append(f"{self.path}: file was truncated; reading it again from the start")
            self._offset = 0
            self._seen_tail = b""
            self._lineno = 0
            self._partial = b""
            self._partial_skip = False  # the new text's first line is no rest of the old long one
            self._restart(out)
        self._drain(out, st.st_size)
        return out

    @property
    def lineno(self) -> int:
        return self._lineno

    @staticmethod
    def _restart(out: Chunk) -> None:
        out.restarted = True
        out.restart_at = len(out.lines)

    @property
    def is_open(self) -> bool:
        return self._fd is not None

    def close(self) -> None:
        self._close()
        self._let_go_of_rotated()

    def flush_partial(self) -> list[tuple[int, str]]:
        """The unfinished last line, at the very end (the writer will not finish it)."""
        if not self._partial or self._partial_skip:
            return []
        self._lineno += 1
        text = self._partial.decode("utf-8", "replace")
        self._partial = b""
        return [(self._lineno, text)]

    # -- internals ------------------------------------------------------------------------------

    def _keep_rotated(self) -> None:
        """The current file was replaced: its descriptor is kept to read what is still written to it."""
        self._let_go_of_rotated()  # a second rotation within the wait: the oldest one is done
        if self._fd is None:
            return
        self._rotated = _Rotated(self._fd, self._offset, self._lineno, self._partial, self._partial_skip,
                                 self.clock())
        self._fd = None
        self.more = False

    def _read_rotated(self, out: Chunk) -> None:
        """New lines of the replaced file, numbered on from its own last line; let go of once quiet."""
        r = self._rotated
        assert r is not None
        first = len(out.lines)
        mine = (self._fd, self._offset, self._lineno, self._partial, self._partial_skip, self.more, self._seen_tail)
        self._fd, self._offset, self._lineno = r.fd, r.offset, r.lineno
        self._partial, self._partial_skip = r.partial, r.partial_skip
        try:
            self._drain(out)
            if self._offset != r.offset:
                r.quiet_since = self.clock()
            r.offset, r.lineno, r.partial, r.partial_skip = self._offset, self._lineno, self._partial, \
                self._partial_skip
            if self._fd is None or self.clock() - r.quiet_since >= ROTATE_WAIT_S:
                out.lines.extend(self.flush_partial())  # its writer has moved on: the last line is whole
                self._let_go_of_rotated()
        finally:
            self._fd, self._offset, self._lineno, self._partial, self._partial_skip, self.more, self._seen_tail = mine
            if self._offsets:  # offsets in a file no longer at the path
                out.ends[first:] = [None] * (len(out.lines) - first)

    def _read_copy(self, out: Chunk) -> None:
        """Under logrotate's `copytruncate`, lines written after our last read and before the truncate
        are only in the copy (`run.log.1`, `run.log-20261128`): the sibling whose bytes just before our
        offset are the ones we read last is that copy, and its rest is read as the old file's end."""
        if self._fd is None or not self._seen_tail or self._offset < len(self._seen_tail):
            return
        for cand in self._copy_candidates():
            try:
                fd = os.open(cand, os.O_RDONLY)
            except OSError:
                continue
            try:
                before = os.pread(fd, len(self._seen_tail), self._offset - len(self._seen_tail))
            except OSError:
                os.close(fd)
                continue
            if before != self._seen_tail:
                os.close(fd)
                continue
            mine = self._fd
            self._fd = fd
            try:
                self._drain(out)
                self._end_raw(out)
                out.lines.extend(self.flush_partial())  # the copy's last line: its writer went on elsewhere
            finally:
                self._fd = mine
                self.more = False
                os.close(fd)
            if self._offsets:  # offsets in a file no longer at the path
                missing = len(out.lines) - len(out.ends)
                if missing > 0:
                    out.ends.extend([None] * missing)
            return

    def _copy_candidates(self) -> list[Path]:
        """Siblings named after the file (`NAME.1`, `NAME-DATE`), uncompressed, at least as long as what
        was read, newest first."""
        try:
            entries = list(os.scandir(self.path.parent))
        except OSError:
            return []
        name = self.path.name
        found: list[tuple[float, Path]] = []
        for e in entries:
            if not e.name.startswith(name) or e.name == name or e.name[len(name)] not in ".-_":
                continue
            if e.name.lower().endswith(COPY_SUFFIX_SKIP):
                continue
            try:
                st = e.stat()
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode) and st.st_size >= self._offset:
                found.append((st.st_mtime, Path(e.path)))
        found.sort(key=lambda t: -t[0])
        return [p for _, p in found[:MAX_COPIES_TRIED]]

    def _let_go_of_rotated(self) -> None:
        r, self._rotated = self._rotated, None
        if r is not None:
            try:
                os.close(r.fd)
            except OSError:
                pass

    def _open(self, st: os.stat_result, out: Chunk) -> bool:
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:
            return False
        except OSError as exc:
            self._unreadable(out, exc)
            return False
        if self._missing_said and not out.restarted:
            out.notices.append(f"{self.path}: file appeared; following it")
            if self._ino is not None:
                self._restart(out)
        if self._unreadable_said:
            out.notices.append(f"{self.path}: readable again; following it")
        if self._ino is not None:
            self._raw = False  # opened again: the byte reader's line count started with the first file
        self._fd = fd
        self._ino = (st.st_dev, st.st_ino)
        self._missing_said = self._unreadable_said = False
        self._lineno = 0
        self._seen_tail = b""
        self._partial = b""
        self._partial_skip = False
        self._offset = 0
        if self._from_end:
            self._from_end = False
            self._skip_to_end(st.st_size)
        elif self._start is not None:
            offset, lineno = self._start
            self._start = None
            if offset <= st.st_size:
                self._offset, self._lineno = offset, lineno
            else:  # shorter than where it was left: another file now, read from its start
                self._restart(out)
        return True

    def _skip_to_end(self, size: int) -> None:
        """--from-end: the backlog is skipped but counted, so line numbers stay the file's own."""
        assert self._fd is not None
        offset = 0
        last = b""
        while offset < size:
            try:
                data = os.pread(self._fd, min(READ_CHUNK, size - offset), offset)
            except OSError:
                break
            if not data:
                break
            self._lineno += newlines(data, len(data))
            offset += len(data)
            last = data
        self._offset = offset
        if last and not last.endswith(b"\n"):
            self._offset = offset - (len(last) - last.rfind(b"\n") - 1)  # the unfinished line is read whole

    def _drain(self, out: Chunk, size: int | None = None) -> None:
        """Reads on to the end of the file (`size`, when just stat'ed: the first read asks for about that
        much, not READ_CHUNK, whose buffer costs more to allocate than a few new lines cost to read)."""
        self.more = False
        if self._fd is None:
            return
        budget = POLL_BYTES
        want = READ_CHUNK if size is None else min(READ_CHUNK, max(0, size - self._offset) + SMALL_READ)
        while True:
            if budget <= 0:
                self.more = True
                return
            budget -= READ_CHUNK
            try:
                data = os.pread(self._fd, want, self._offset)
            except OSError as exc:
                self._unreadable(out, exc)
                self._close()
                return
            if not data:
                break
            self._offset += len(data)
            self._seen_tail = (self._seen_tail + data[-SEEN_TAIL:])[-SEEN_TAIL:]
            joined = self._partial + data if self._partial else data
            if self._raw:
                self._take_raw(joined, out)
            else:
                self._split(joined, out)
            if len(data) < want:
                break
            want = READ_CHUNK
        self._end_raw(out)  # the end of the file: from here on, line by line

    def _take_raw(self, data: bytes, out: Chunk) -> None:
        cut = data.rfind(b"\n") + 1
        if cut:
            if not out.raw:
                out.raw_first = self._lineno + 1
            out.raw.append(data[:cut] if cut < len(data) else data)
            n = newlines(data, cut)
            out.raw_lines.append(n)
            self._lineno += n
        self._partial = data[cut:]
        if len(self._partial) > MAX_LINE:  # a line too long to hold whole: the line path's rules take over
            self._end_raw(out)

    def _end_raw(self, out: Chunk) -> None:
        """Line by line from now on; the unfinished line held is looked at as the line path would."""
        if not self._raw:
            return
        self._raw = False
        if self._partial:
            held, self._partial = self._partial, b""
            self._split(held, out)

    def _split(self, data: bytes, out: Chunk) -> None:
        parts = data.split(b"\n")
        rest = parts.pop()
        if self._offsets:
            self._ends(parts, rest, len(data), out)
        for raw in parts:
            if self._partial_skip:
                self._partial_skip = False
                continue
            self._lineno += 1
            out.lines.append((self._lineno, kept(raw).decode("utf-8", "replace")))
        if len(rest) > MAX_LINE and not self._partial_skip:
            self._lineno += 1
            out.lines.append((self._lineno, kept(rest).decode("utf-8", "replace")))
            self._partial_skip = True
            rest = b""
        elif self._partial_skip:
            rest = b""
        elif b"\r" in rest:
            # a progress bar redraws with \r and may not end its line for minutes: hand over the
            # finished redraws now, under the number the line will have, and keep the rest
            cut = rest.rfind(b"\r")
            done, rest = rest[:cut], rest[cut + 1:]
            if done.strip(b"\r"):
                out.lines.append((self._lineno + 1, done.decode("utf-8", "replace")))
        self._partial = rest

    def _ends(self, parts: list[bytes], rest: bytes, size: int, out: Chunk) -> None:
        """Chunk.ends for the lines `_split` is about to hand over (`data` ended at self._offset)."""
        at = self._offset - size
        skip = self._partial_skip
        for raw in parts:
            at += len(raw) + 1
            if skip:
                skip = False
                continue
            out.ends.append(at)
        if len(rest) > MAX_LINE and not skip:
            out.ends.append(None)
        elif not skip and b"\r" in rest and rest[:rest.rfind(b"\r")].strip(b"\r"):
            out.ends.append(REDRAW)

    def _document(self, st: os.stat_result, out: Chunk) -> None:
        sig = (st.st_ino, st.st_size, st.st_mtime_ns)
        if sig == self._doc_sig:
            return
        if st.st_size > MAX_DOCUMENT:
            if self._doc_sig is None or self._doc_sig[1] <= MAX_DOCUMENT:
                out.notices.append(f"{self.path}: document over {MAX_DOCUMENT >> 20} MiB; not re-read")
            self._doc_sig = sig
            return
        try:
            with open(self.path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            return
        except OSError as exc:
            self._unreadable(out, exc)
            return
        if self._missing_said or self._unreadable_said:
            out.notices.append(f"{self.path}: readable again; following it")
            self._missing_said = self._unreadable_said = False
        self._doc_sig = sig
        out.document = data.decode("utf-8", "replace")

    def _unreadable(self, out: Chunk, exc: OSError) -> None:
        if not self._unreadable_said:
            reason = exc.strerror or str(exc)
            out.notices.append(f"{self.path}: cannot read ({reason}); will retry")
            self._unreadable_said = True

    def _close(self) -> None:
        self.more = False  # a file let go of has nothing waiting: readers stop asking (tail's stop loops on it)
        if self._fd is not None:
            try:
                os.close(self._fd)
            except OSError:
                pass
            self._fd = None
