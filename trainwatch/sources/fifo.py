"""Following a named pipe (FIFO): a stream with no offsets, read as it comes.

A pipe cannot be sampled, seeked or read twice, and opening one for reading blocks until a writer
opens it. So it is opened non-blocking, and read-write where allowed: the descriptor then never reads
an end-of-file between writers (a writer that closes and a new one that opens are one stream), and a
writer's own open does not wait for trainwatch. What is read is handed over as numbered lines, as
FileFollower does (the same interface: `poll`, `close`, `lineno`, `more`, `is_open`, `flush_partial`).

The follower's data must be read promptly, and a pipe's writes need not raise the events a watched
directory gets for a file, so a small thread waits on the descriptor with select() and calls `wake`
when there is something to read; the read itself stays on the caller's (engine) thread, which never
blocks on the pipe.
"""

from __future__ import annotations

import array
import errno
import fcntl
import os
import select
import stat
import termios
import threading
from collections.abc import Callable
from pathlib import Path

from trainwatch.scan.chunk import kept
from trainwatch.sources.files import MAX_LINE
from trainwatch.sources.tail import POLL_BYTES, READ_CHUNK, Chunk

SELECT_TIMEOUT_S = 0.5  # the waiting thread looks at its stop flag this often
WAKE_AGAIN_S = 1.0  # a wake not followed by a read (the engine busy) is repeated after this long
EOF_PAUSE_S = 0.1  # a read-only pipe with no writer: how often the waiting thread looks again


def is_fifo(path: Path) -> bool:
    """Whether `path` is a named pipe now (a missing or unreadable path is not)."""
    try:
        return stat.S_ISFIFO(os.stat(path).st_mode)
    except OSError:
        return False


class FifoFollower:
    """Reads one named pipe as a stream. Line numbers count from the first line read (1-based)."""

    whole_file = False

    def __init__(self, path: Path, *, wake: Callable[[], None] | None = None) -> None:
        self.path = path
        self.more = False  # the last poll stopped at POLL_BYTES with more waiting
        self._wake = wake
        self._fd: int | None = None
        self._rdonly = False
        self._lineno = 0
        self._partial = b""
        self._partial_skip = False
        self._unreadable_said = False
        self._read = threading.Event()  # set by each poll: the waiting thread may select again
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # -- FileFollower's interface ---------------------------------------------------------------

    def poll(self) -> Chunk:
        """Everything in the pipe now, without blocking. Never raises for what the pipe does."""
        out = Chunk()
        if self._fd is None and not self._open(out):
            return out
        self._drain(out)
        self._read.set()
        return out

    @property
    def lineno(self) -> int:
        return self._lineno

    @property
    def is_open(self) -> bool:
        return self._fd is not None

    def close(self) -> None:
        self._stop.set()
        self._read.set()
        if self._thread is not None:
            self._thread.join(timeout=2 * SELECT_TIMEOUT_S)
            self._thread = None
        if self._fd is not None:
            try:
                os.close(self._fd)
            except OSError:
                pass
            self._fd = None
        self.more = False

    def flush_partial(self) -> list[tuple[int, str]]:
        """The unfinished last line, at the very end (the writer will not finish it)."""
        if not self._partial or self._partial_skip:
            return []
        self._lineno += 1
        text = self._partial.decode("utf-8", "replace")
        self._partial = b""
        return [(self._lineno, text)]

    # -- internals ------------------------------------------------------------------------------

    def _open(self, out: Chunk) -> bool:
        fd = None
        for flags in (os.O_RDWR, os.O_RDONLY):  # read-write: no end-of-file between writers
            try:
                fd = os.open(self.path, flags | os.O_NONBLOCK)
                break
            except PermissionError:
                continue
            except OSError as exc:
                self._unreadable(out, exc)
                return False
        if fd is None:
            self._unreadable(out, PermissionError(errno.EACCES, os.strerror(errno.EACCES)))
            return False
        if self._unreadable_said:
            out.notices.append(f"{self.path}: readable again; following it")
            self._unreadable_said = False
        self._fd = fd
        self._rdonly = flags == os.O_RDONLY
        if self._wake is not None:
            self._thread = threading.Thread(target=self._watch, args=(fd,), name="trainwatch-fifo", daemon=True)
            self._thread.start()
        return True

    def _drain(self, out: Chunk) -> None:
        self.more = False
        assert self._fd is not None
        budget = POLL_BYTES
        while budget > 0:
            try:
                data = os.read(self._fd, READ_CHUNK)
            except BlockingIOError:
                return  # nothing more for now
            except InterruptedError:
                continue
            except OSError as exc:
                self._unreadable(out, exc)
                return
            if not data:
                return  # read-only descriptor and no writer: nothing until one opens
            budget -= len(data)
            self._split(self._partial + data if self._partial else data, out)
        self.more = True

    def _split(self, data: bytes, out: Chunk) -> None:
        parts = data.split(b"\n")
        rest = parts.pop()
        for raw in parts:
            if self._partial_skip:
                self._partial_skip = False
                continue
            self._lineno += 1
            out.lines.append((self._lineno, kept(raw).decode("utf-8", "replace")))
        if self._partial_skip:
            rest = b""
        elif len(rest) > MAX_LINE:  # too long to hold whole: handed over cut, the rest of it dropped
            self._lineno += 1
            out.lines.append((self._lineno, kept(rest).decode("utf-8", "replace")))
            self._partial_skip = True
            rest = b""
        self._partial = rest

    def _watch(self, fd: int) -> None:
        """The waiting thread: wakes the engine when the pipe has data, then waits for it to be read."""
        assert self._wake is not None
        while not self._stop.is_set():
            try:
                ready, _, _ = select.select([fd], [], [], SELECT_TIMEOUT_S)
            except (OSError, ValueError):
                return  # closed under it
            if not ready or self._stop.is_set():
                continue
            self._read.clear()
            self._wake()
            while not self._read.wait(WAKE_AGAIN_S) and not self._stop.is_set():
                self._wake()
            if self._rdonly and _no_bytes(fd):
                self._stop.wait(EOF_PAUSE_S)  # read-only with no writer: end-of-file selects readable for ever

    def _unreadable(self, out: Chunk, exc: OSError) -> None:
        if not self._unreadable_said:
            out.notices.append(f"{self.path}: cannot read ({exc.strerror or exc}); will retry")
            self._unreadable_said = True


def _no_bytes(fd: int) -> bool:
    """No bytes wait in the pipe (FIONREAD)."""
    buf = array.array("i", [0])
    try:
        fcntl.ioctl(fd, termios.FIONREAD, buf)
    except OSError:
        return False
    return buf[0] == 0
