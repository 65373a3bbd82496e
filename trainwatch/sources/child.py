"""A training command run as a child process: its output teed into a log file, signals forwarded, its end known.

Output goes through a pseudo-terminal, not pipes: a program whose stdout is a terminal line-buffers it
(Python, C stdio), so each line reaches the log as it is printed, without PYTHONUNBUFFERED or
`stdbuf`; stdout and stderr share the one terminal, so they stay in the order they were written (two
pipes, or one pipe with a block-buffered stdout, reorder a traceback against the lines before it);
and progress bars draw as they do for a person (tqdm's `\\r` redraws, which the adapters read). The
terminal's newline translation is turned off, so the log holds `\\n`, as a redirected log does. Where no
pseudo-terminal can be had, one pipe for both streams is used instead, with PYTHONUNBUFFERED set.

The child runs in its own session and process group: a Ctrl-C in the user's terminal reaches trainwatch
alone, which forwards it to the whole group (a launcher and its workers) once, rather than the
terminal delivering it twice. Its stdin is /dev/null: the dashboard owns the keyboard.
"""

from __future__ import annotations

import contextlib
import errno
import os
import select
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import BinaryIO

from trainwatch.proctree import Tree, become_subreaper

DRAIN_QUIET_S = 0.2
"""After the child exited, output still arriving from its leftovers (a worker holding the terminal) is
read until it has been quiet this long, and for at most DRAIN_MAX_S."""
DRAIN_MAX_S = 2.0
READ_BYTES = 1 << 16
WATCH_TREE_S = 1.0
"""How often the child's process tree is walked while it runs (see proctree.Tree.observe): a few
milliseconds a walk."""


@dataclass(frozen=True)
class ExitStatus:
    """How the child ended: an exit code, or the signal that killed it."""

    code: int | None = None
    signal: int | None = None

    @classmethod
    def of(cls, returncode: int) -> ExitStatus:
        return cls(signal=-returncode) if returncode < 0 else cls(code=returncode)

    @property
    def shell_code(self) -> int:
        """The code a shell reports for it: the exit code, or 128 + the signal number."""
        return 128 + self.signal if self.signal is not None else int(self.code or 0)

    @property
    def signal_name(self) -> str:
        if self.signal is None:
            return ""
        try:
            return signal.Signals(self.signal).name
        except ValueError:
            return f"signal {self.signal}"

    @property
    def failed(self) -> bool:
        return self.signal is not None or bool(self.code)

    def describe(self) -> str:
        if self.signal is not None:
            return f"killed by {self.signal_name} (exit status {self.shell_code})"
        return f"exited with code {self.code}"


class StartError(Exception):
    """The command could not be started; `code` is what a shell would exit with (127 not found, 126 not runnable)."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


def check_command(name: str) -> None:
    """Raises StartError when `name` cannot be run, as a shell would find it: a path must be an executable
    file (126 otherwise, 127 when missing); a bare name is looked up on PATH (127 when not there)."""
    if os.sep not in name:
        if shutil.which(name) is None:
            raise StartError(f"{name}: command not found", 127)
        return
    if not os.path.exists(name):
        raise StartError(f"{name}: no such file", 127)
    if os.path.isdir(name) or not os.access(name, os.X_OK):
        raise StartError(f"{name}: permission denied (not an executable file)", 126)


class Child:
    """Runs argv (no shell) with its output written to `log` as it arrives.

    `on_exit(status)` is called once, from a thread of its own, after the child exited and every byte
    it wrote was put in the log (and the log flushed), so a reader of the log has seen the last line
    before it hears of the end.
    """

    def __init__(self, argv: list[str], log: BinaryIO, *, on_exit: Callable[[ExitStatus], None],
                 columns: int = 120, pty: bool = True, grace_s: float = 10.0) -> None:
        self.argv = argv
        self.use_pty = pty  # False: the pipe used where no pseudo-terminal can be had
        self.log = log
        self.on_exit = on_exit
        self.columns = columns
        self.proc: subprocess.Popen[bytes] | None = None
        self.status: ExitStatus | None = None
        self.mode = ""  # "pty" or "pipe": how the output is captured
        self.sent: list[int] = []  # signals trainwatch sent to the child, in order
        self.ended = threading.Event()  # set after on_exit returned
        self.grace_s = grace_s  # SIGTERM to SIGKILL, for every stop of the tree
        self.tree: Tree | None = None
        self._kill_timer: threading.Timer | None = None
        self._fd = -1  # our end of the terminal or the pipe
        self._exited = threading.Event()  # the process is reaped (its output may still be draining)
        self._lock = threading.RLock()  # taken in signal handlers too, which may interrupt its holder

    def start(self) -> None:
        """Starts the child and the threads that read its output and wait for it. Raises StartError."""
        ours, theirs = self._open_channel()
        become_subreaper()  # what the child orphans comes back to us, not to init
        env = dict(os.environ)
        if self.mode == "pipe":
            env.setdefault("PYTHONUNBUFFERED", "1")
        try:
            self.proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=theirs, stderr=theirs,
                                         start_new_session=True, close_fds=True, env=env)
        except FileNotFoundError:
            os.close(ours)
            raise StartError(f"{self.argv[0]}: command not found", 127) from None
        except PermissionError:
            os.close(ours)
            raise StartError(f"{self.argv[0]}: permission denied (not an executable file)", 126) from None
        except OSError as exc:
            os.close(ours)
            raise StartError(f"{self.argv[0]}: cannot run it: {exc.strerror or exc}", 126) from None
        finally:
            os.close(theirs)  # the child holds its copy; ours would keep end-of-output from ever coming
        self._fd = ours
        self.tree = Tree(self.proc.pid)
        reader = threading.Thread(target=self._read, name="trainwatch-child-output", daemon=True)
        reader.start()
        threading.Thread(target=self._reap, args=(reader,), name="trainwatch-child-wait", daemon=True).start()

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    @property
    def running(self) -> bool:
        return self.proc is not None and not self._exited.is_set()

    def forward(self, signum: int) -> bool:
        """Sends `signum` to the child's process group (the child and what it started); False once it is gone.
        SIGTERM is a stop: it goes to the whole tree (also what left the group), and what is still there
        `grace_s` later is killed."""
        with self._lock:
            if not self.running or self.proc is None:
                return False
            self.sent.append(signum)
            try:
                os.killpg(self.proc.pid, signum)
            except ProcessLookupError:
                return False
            if signum == signal.SIGTERM:
                if self.tree is not None:  # what left the group; the child itself has it already
                    self.tree.signal(signal.SIGTERM, but=self.proc.pid)
                if self._kill_timer is None:
                    self._kill_timer = threading.Timer(self.grace_s, self._kill)
                    self._kill_timer.daemon = True
                    self._kill_timer.start()
            return True

    def stop(self, grace_s: float | None = None) -> None:
        """SIGTERM to the tree, then SIGKILL to what is left after the grace period; does not wait."""
        if grace_s is not None:
            self.grace_s = grace_s
        self.forward(signal.SIGTERM)

    def terminate(self, grace_s: float | None = None) -> None:
        """stop(), then wait for the end to be told."""
        self.stop(grace_s)
        self.ended.wait()

    def _kill(self) -> None:
        """The grace period of a stop ran out: SIGKILL to the group and the tree."""
        with self._lock:
            if not self.running or self.proc is None:
                return
            self.sent.append(signal.SIGKILL)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            if self.tree is not None:
                self.tree.signal(signal.SIGKILL)

    # -- threads ----------------------------------------------------------------------------------

    def _open_channel(self) -> tuple[int, int]:
        if not self.use_pty:
            self.mode = "pipe"
            return os.pipe()
        try:
            import pty
            import termios

            ours, theirs = pty.openpty()
        except (ImportError, OSError):
            self.mode = "pipe"
            return os.pipe()
        self.mode = "pty"
        with contextlib.suppress(OSError, termios.error):
            attrs = termios.tcgetattr(theirs)
            attrs[1] &= ~termios.ONLCR  # "\n" stays "\n" in the log, not "\r\n"
            termios.tcsetattr(theirs, termios.TCSANOW, attrs)
            _set_size(theirs, self.columns)
        return ours, theirs

    def _read(self) -> None:
        """Copies the output into the log until it ends, or until it is quiet after the child exited."""
        fd = self._fd
        drain_until: float | None = None
        try:
            while True:
                if drain_until is None and self._exited.is_set():
                    drain_until = time.monotonic() + DRAIN_MAX_S
                if drain_until is not None and time.monotonic() > drain_until:
                    return
                ready, _, _ = select.select([fd], [], [], DRAIN_QUIET_S if drain_until else 0.5)
                if not ready:
                    if drain_until is not None:
                        return
                    continue
                try:
                    data = os.read(fd, READ_BYTES)
                except OSError as exc:
                    if exc.errno == errno.EIO:  # a terminal whose every writer closed it: the end
                        return
                    raise
                if not data:
                    return
                self.log.write(data)
                self.log.flush()
        finally:
            os.close(fd)

    def _reap(self, reader: threading.Thread) -> None:
        assert self.proc is not None and self.tree is not None
        while True:
            try:
                returncode = self.proc.wait(WATCH_TREE_S)
                break
            except subprocess.TimeoutExpired:
                self.tree.observe()
                self.tree.reap()
        self._exited.set()
        if self._kill_timer is not None:
            self._kill_timer.cancel()
        self.tree.stop(self.grace_s)  # what it left behind (orphans, a worker that ignores SIGTERM)
        reader.join()
        self.status = ExitStatus.of(returncode)
        with contextlib.suppress(OSError, ValueError):
            self.log.flush()
        try:
            self.on_exit(self.status)
        finally:
            self.ended.set()


def _set_size(fd: int, columns: int) -> None:
    """Gives the terminal a size: progress bars ask for one, and a terminal of 0 columns confuses some."""
    import fcntl
    import struct
    import termios

    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 50, max(40, columns), 0, 0))
