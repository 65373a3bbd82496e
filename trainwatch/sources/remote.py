"""Logs on other machines, reached through the system's OpenSSH client.

`user@host:/path/run.log`, `host:'/out/rank*.log'` and `ssh://user@host:port/path` name remote logs.
ssh runs as a subprocess with an argv list (never a shell on this side), with BatchMode so a password
prompt can never hang it, and otherwise as the user runs it: ~/.ssh/config, the agent, ProxyJump and
ControlMaster apply. TRAINWATCH_SSH_COMMAND replaces `ssh` (a command line such as `ssh -F my_config`,
split as a shell would split it but never run by one), as GIT_SSH_COMMAND does for git.

The host is checked before ssh sees it: one that starts with `-` would be read as an option
(`-oProxyCommand=...`), and whitespace, quotes and shell characters have no business in a host name.
The remote path travels inside the remote command as quoted words only (a glob keeps its `*?[]`
outside the quotes, so the far shell expands it and nothing else).

On the node, `trainwatch stream` (trainwatch/cli/stream.py) follows the files and sends JSON lines;
where trainwatch is not installed, `tail -n +N -F` is run instead (logs only, no GPU). A connection
that drops is told to the handler as lost contact for each log that came over it (the watcher turns
that into the alert remote.lost_contact), then made again with exponential backoff; each file resumes
after its last complete line, so no line is repeated or lost, and the handler hears the logs are back.
The node's GPU series are renamed with the host (gpu0 -> gpu0@node1), so several nodes never mix.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import threading
import time
from collections import deque
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from trainwatch.errors import SourceError, UsageError
from trainwatch.sources.stream_protocol import HANDSHAKE, PROTOCOL, decode, record_from_json, resume_arg

BACKOFF_S = (1.0, 2.0, 4.0, 8.0, 16.0, 30.0)
SSH_OPTIONS = ("-o", "BatchMode=yes", "-o", "ConnectTimeout=15", "-o", "ServerAliveInterval=5",
               "-o", "ServerAliveCountMax=3")
TAIL_HELLO = "trainwatch-tail-connected"
ERR_LINES = 20  # the last lines of ssh's stderr kept, to say why a connection ended
SSH_FAILED = 255  # ssh's own exit status when it could not connect or authenticate
_URL = re.compile(r"^ssh://(?:(?P<user>[^@/]*)@)?(?P<host>\[[^\]/]*\]|[^:/]*)(?::(?P<port>[^/]*))?(?P<path>/.*)$")
_SCP = re.compile(r"^(?:(?P<user>[^@/:]*)@)?(?P<host>\[[^\]/]*\]|[^:/]+):(?P<path>.+)$")
_BAD_HOST = re.compile(r"[\s'\"`;|&$<>()\\*?!{}\[\]#~^]|[\x00-\x1f\x7f]")
_GLOB = re.compile(r"([*?\[\]])")


@dataclass(frozen=True)
class RemotePath:
    """One remote argument: who, where, and the path (or glob) there."""

    raw: str
    host: str
    path: str
    user: str | None = None
    port: int | None = None

    @property
    def destination(self) -> str:
        return f"{self.user}@{self.host}" if self.user else self.host

    def name(self, path: str | None = None) -> str:
        """How a file there is named in reports and alerts: `user@host:/path`."""
        return f"{self.destination}:{path if path is not None else self.path}"

    @property
    def is_glob(self) -> bool:
        return bool(_GLOB.search(self.path))


def looks_remote(raw: str) -> bool:
    """Whether an argument names a remote log: ssh://..., or `host:path` (as scp reads it: a colon before
    any slash) that is not an existing local file."""
    if raw.startswith("ssh://"):
        return True
    head = raw.split("/", 1)[0]
    return ":" in head and not Path(raw).exists()


def parse(raw: str) -> RemotePath:
    """The remote argument, checked; UsageError (one line, exit 3) when it cannot be used safely."""
    m = _URL.match(raw) if raw.startswith("ssh://") else _SCP.match(raw)
    if m is None:
        raise UsageError(f"{_show(raw)}: not a remote path (use user@host:/path or ssh://user@host[:port]/path)")
    user, host, path = m.group("user"), m.group("host"), m.group("path")
    port = None
    if raw.startswith("ssh://") and m.group("port"):
        if not m.group("port").isdigit() or not 0 < int(m.group("port")) < 65536:
            raise UsageError(f"{_show(raw)}: bad port {_show(m.group('port'))}")
        port = int(m.group("port"))
    check_host(host, raw)
    if user is not None:
        check_host(user, raw, what="user name")
    if not path or any(ord(c) < 32 or ord(c) == 127 for c in path):
        raise UsageError(f"{_show(raw)}: the remote path is empty or holds control characters")
    return RemotePath(raw, host.strip("[]"), path, user or None, port)


def check_host(host: str, raw: str, what: str = "host") -> None:
    """Refuses what ssh would take for an option, and characters no host or user name has."""
    if not host:
        raise UsageError(f"{_show(raw)}: no {what}")
    if host.startswith("-"):
        raise UsageError(f"{_show(raw)}: refused: a {what} may not start with '-' (ssh would read it as an option)")
    if _BAD_HOST.search(host.strip("[]") if what == "host" else host):
        raise UsageError(f"{_show(raw)}: refused: the {what} holds whitespace, quotes, shell or control characters")


def _show(text: str) -> str:
    """Untrusted text in a message: printable, and short."""
    return "".join(c if c.isprintable() else "?" for c in text)[:200]


def quote_path(path: str) -> str:
    """The path as words for the remote shell: every piece quoted, except glob characters, which the
    far shell expands."""
    return "".join(part if _GLOB.fullmatch(part) else shlex.quote(part) for part in _GLOB.split(path) if part)


def ssh_argv(rp: RemotePath, command: str) -> list[str]:
    """The ssh command line: options, `--`, the destination, and the remote command as one argument."""
    base = shlex.split(os.environ.get("TRAINWATCH_SSH_COMMAND", "ssh")) or ["ssh"]
    port = ["-p", str(rp.port)] if rp.port else []
    return [*base, *SSH_OPTIONS, *port, "--", rp.destination, command]


def stream_command(rp: RemotePath, trainwatch: str, resume: dict[str, tuple[int, int]], gpu: bool) -> str:
    """`trainwatch stream` when the node has it; otherwise a handshake that says it has not."""
    args = [trainwatch, "stream", "--resume", resume_arg(resume)] + ([] if gpu else ["--no-gpu"])
    words = " ".join(shlex.quote(a) for a in args) + " -- " + shlex.quote(rp.path)
    tw = shlex.quote(trainwatch)
    return (f"if command -v {tw} >/dev/null 2>&1; then exec {words}; "
            f"else echo '{{\"trainwatch_stream\": 0}}'; fi")


def list_command(rp: RemotePath) -> str:
    """Prints the files the path names there, one a line (a glob expanded by the far shell)."""
    return f"for f in {quote_path(rp.path)}; do if [ -f \"$f\" ]; then printf '%s\\n' \"$f\"; fi; done"


def last_line(text: bytes) -> str:
    lines = [ln.strip() for ln in text.decode("utf-8", "replace").splitlines() if ln.strip()]
    return _show(lines[-1]) if lines else "no message"


# -- check: copies read once ---------------------------------------------------------------------


def fetch(rp: RemotePath, into: Path, timeout: float = 120) -> list[tuple[str, Path]]:
    """Copies the files `rp` names into `into`; returns (remote name, local copy) pairs. SourceError on an
    unreachable host, a refused login, a path that is not there or cannot be read: one line each."""
    files = _run(rp, list_command(rp), timeout).decode("utf-8", "replace").splitlines()
    if not files:
        raise SourceError(f"{rp.raw}: no such file on {rp.host}")
    out = []
    for i, f in enumerate(files):
        data = _run(rp, f"cat -- {shlex.quote(f)}", timeout, what=rp.name(f))
        local = into / str(i) / Path(f).name
        local.parent.mkdir(parents=True)
        local.write_bytes(data)
        out.append((rp.name(f), local))
    return out


def _run(rp: RemotePath, command: str, timeout: float, what: str = "") -> bytes:
    try:
        done = subprocess.run(ssh_argv(rp, command), stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout)
    except FileNotFoundError:
        raise SourceError("ssh: command not found (install the OpenSSH client)") from None
    except subprocess.TimeoutExpired:
        raise SourceError(f"{rp.destination}: no answer in {timeout:g} s") from None
    if done.returncode == SSH_FAILED:
        raise SourceError(f"{rp.destination}: cannot connect: {last_line(done.stderr)}")
    if done.returncode != 0:
        raise SourceError(f"{what or rp.raw}: cannot read on {rp.host}: {last_line(done.stderr)}")
    return done.stdout


def renamed(src: Any, name: str) -> Any:
    """An opened local copy named as the remote file it came from (reports, alerts, the adapter's records)."""
    from trainwatch import adapters
    from trainwatch.adapters.pipeline import SourceParser

    return replace(src, name=name, parser=SourceParser(adapters.get(src.format)(name)))


# -- tail: followed over a connection that may drop -----------------------------------------------


@dataclass
class Line:
    lineno: int
    text: str
    offset: int | None  # after the line; None for a redraw of an unfinished line


@dataclass(frozen=True)
class Contact:
    """The connection that brought these logs was lost (with how long it had been quiet, and why), or is
    back."""

    names: tuple[str, ...]
    host: str
    lost: bool
    since_s: float | None = None
    why: str = ""


class Handler:
    """What a Feed hands on (the watcher's side implements it; tests may record)."""

    def lines(self, name: str, lines: list[Line], restart: bool) -> None: ...
    def records(self, records: list[Any], host: str = "") -> None: ...
    def notice(self, text: str) -> None: ...
    def contact(self, change: Contact) -> None: ...


class Feed:
    """One remote argument followed: a supervisor thread that connects, reads, and reconnects."""

    def __init__(self, rp: RemotePath, handler: Handler, *, trainwatch: str = "trainwatch", gpu: bool = True,
                 backoff: tuple[float, ...] = BACKOFF_S) -> None:
        self.rp = rp
        self.handler = handler
        self.trainwatch = trainwatch
        self.gpu = gpu
        self.backoff = backoff
        self.mode = "stream"  # "tail" once the node turned out not to have trainwatch
        self.pos: dict[str, tuple[int, int]] = {}  # file there -> (offset, lineno) after its last complete line
        self.connects = 0
        self.last_line_at: float | None = None
        self.names: dict[str, str] = {}  # file there -> its name here, for every file that sent a line
        self._down: set[str] = set()  # names told lost and not yet back
        self._stop = threading.Event()
        self._procs: set[subprocess.Popen[bytes]] = set()
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._said: set[str] = set()
        self._errs: dict[subprocess.Popen[bytes], tuple[threading.Thread, deque[bytes]]] = {}

    def start(self) -> None:
        t = threading.Thread(target=self._supervise, name=f"trainwatch-ssh-{self.rp.host}", daemon=True)
        self._threads.append(t)
        t.start()

    def stop(self) -> None:
        self._stop.set()
        with self._lock:
            procs = list(self._procs)
        for p in procs:
            _end(p)
        for t in list(self._threads):
            t.join(timeout=5)

    @property
    def processes(self) -> list[subprocess.Popen[bytes]]:
        """The ssh processes running now (tests cut the connection by ending one)."""
        with self._lock:
            return list(self._procs)

    # -- connections --------------------------------------------------------------------------------

    def _supervise(self) -> None:
        attempt = 0
        while not self._stop.is_set():
            progressed = self._stream() if self.mode == "stream" else self._tail_all()
            if self._stop.is_set():
                return
            if self.mode == "tail" and progressed is None:
                continue  # just switched: start the fallback at once
            attempt = 0 if progressed else attempt + 1
            delay = self.backoff[min(attempt, len(self.backoff) - 1)]
            self._stop.wait(delay)

    def _lost(self, why: str, paths: list[str] | None = None) -> None:
        """A connection that had answered ended: lost contact for the logs it brought (all of this argument's
        in stream mode, the one file of a tail -F connection); a notice when none has sent a line yet."""
        since = None if self.last_line_at is None else time.monotonic() - self.last_line_at
        with self._lock:
            names = tuple(n for p, n in self.names.items() if paths is None or p in paths)
            self._down.update(names)
        if names:
            self.handler.contact(Contact(names, self.rp.destination, True, since, why))
            return
        said = "" if since is None else f" ({since:.0f} s since the last line)"
        self.handler.notice(f"lost contact with {self.rp.destination}{said}: {why}; reconnecting")

    def _back(self, paths: list[str] | None = None) -> None:
        """A new connection answered: the logs told lost over the old one are back."""
        with self._lock:
            names = tuple(n for p, n in self.names.items() if (paths is None or p in paths) and n in self._down)
            self._down.difference_update(names)
        if names:
            self.handler.contact(Contact(names, self.rp.destination, False))

    def _named(self, path: str) -> str:
        name = self.names.get(path)
        if name is None:
            with self._lock:
                name = self.names[path] = self.rp.name(path)
        return name

    def _say_once(self, text: str) -> None:
        if text not in self._said:
            self._said.add(text)
            self.handler.notice(text)

    def _spawn(self, command: str) -> subprocess.Popen[bytes] | None:
        try:
            # stdin is a pipe never written: when this process ends, however it ends, ssh reads EOF and
            # passes it on, and `trainwatch stream` there stops
            p = subprocess.Popen(ssh_argv(self.rp, command), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, start_new_session=True)
        except OSError as exc:
            self._say_once(f"{self.rp.raw}: cannot run ssh ({exc.strerror or exc}); will retry")
            return None
        with self._lock:
            self._procs.add(p)
        # stderr is read as it comes (tail -F says every truncation there): a full pipe would stop ssh
        tail_of_err: deque[bytes] = deque(maxlen=ERR_LINES)
        reader = threading.Thread(target=lambda: tail_of_err.extend(p.stderr or ()), daemon=True)
        reader.start()
        self._errs[p] = (reader, tail_of_err)
        if self._stop.is_set():
            _end(p)
        return p

    def _finish(self, p: subprocess.Popen[bytes], got: bool, paths: list[str] | None = None) -> None:
        """After a connection's output ended: why, said once per reason (or as lost contact)."""
        rc = p.wait()
        if p.stdin is not None:
            p.stdin.close()
        reader, tail_of_err = self._errs.pop(p)
        reader.join(timeout=5)
        err = b"".join(tail_of_err)
        with self._lock:
            self._procs.discard(p)
        if self._stop.is_set():
            return
        if got:
            self._lost(last_line(err) if err.strip() else f"ssh exited with status {rc}", paths)
        elif rc == SSH_FAILED:
            self._say_once(f"{self.rp.destination}: cannot connect: {last_line(err)}; will retry")
        else:
            self._say_once(f"{self.rp.raw}: {last_line(err) if err.strip() else f'exited with status {rc}'}; "
                           "will retry")

    def _stream(self) -> bool | None:
        """One connection running `trainwatch stream`; True when it delivered anything, None when the node
        has no trainwatch (the fallback takes over)."""
        p = self._spawn(stream_command(self.rp, self.trainwatch, dict(self.pos), self.gpu))
        if p is None:
            return False
        assert p.stdout is not None
        got = False
        shaken = False
        for raw in p.stdout:
            msg = decode(raw)
            if msg is None:
                continue  # a login banner or other noise before the handshake
            if not shaken:
                if HANDSHAKE not in msg:
                    continue
                shaken = True
                if msg[HANDSHAKE] != PROTOCOL:
                    self.mode = "tail"
                    why = "not installed there" if msg[HANDSHAKE] == 0 else \
                        f"there speaks stream version {msg[HANDSHAKE]!r}"
                    self.handler.notice(f"{self.rp.destination}: trainwatch {why}; following with tail -F over ssh "
                                        "(logs only, no GPU)")
                    _end(p)
                    self._finish(p, False)
                    return None
                if self.connects:
                    self.handler.notice(f"{self.rp.destination}: connected again; resuming")
                    self._back()
                self.connects += 1
                got = True
                continue
            self._message(msg)
        self._finish(p, got)
        return got

    def _message(self, msg: dict[str, Any]) -> None:
        self.last_line_at = time.monotonic()
        if "line" in msg and "path" in msg:
            path, lineno = str(msg["path"]), int(msg["lineno"])
            offset = msg.get("offset")
            if offset is not None and not msg.get("partial"):
                self.pos[path] = (int(offset), lineno)
            self.handler.lines(self._named(path), [Line(lineno, str(msg["line"]), offset)], False)
        elif msg.get("restart") and "path" in msg:
            self.pos.pop(str(msg["path"]), None)
            self.handler.lines(self._named(str(msg["path"])), [], True)
        elif "notice" in msg:
            self._say_once(f"{self.rp.destination}: {_show(str(msg['notice']))}")
        elif isinstance(msg.get("gpu"), list):
            try:
                self.handler.records([host_named(record_from_json(r), self.rp.host) for r in msg["gpu"]],
                                     self.rp.host)
            except (TypeError, ValueError, KeyError):
                pass

    # -- the fallback: tail -F ----------------------------------------------------------------------

    def _tail_all(self) -> bool:
        """Lists the files (a glob expanded there), then one `tail -F` connection per file, each with its own
        reconnection; returns when all have stopped for good (trainwatch is stopping) or the listing failed."""
        try:
            files = _run(self.rp, list_command(self.rp), 60).decode("utf-8", "replace").splitlines()
        except SourceError as exc:
            self._say_once(f"{exc}; will retry")
            return False
        if not files and not self.rp.is_glob:
            files = [self.rp.path]  # tail -F waits for a file that is not there yet
        if not files:
            self._say_once(f"{self.rp.raw}: no such file on {self.rp.host} yet; waiting for one")
            return False
        threads = [threading.Thread(target=self._tail_one, args=(f,), daemon=True) for f in files]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return True

    def _tail_one(self, path: str) -> None:
        attempt = 0
        while not self._stop.is_set():
            lineno = self.pos.get(path, (0, 0))[1]
            # the first line is ours, written once the login worked: the connection is up before any line
            p = self._spawn(f"echo {TAIL_HELLO}; exec tail -n +{lineno + 1} -F -- {shlex.quote(path)}")
            got = False
            if p is not None:
                assert p.stdout is not None
                for raw in p.stdout:
                    if not raw.endswith(b"\n"):
                        break  # the unfinished last line: read again whole after the reconnection
                    if not got:  # what a login script printed, then our own first line
                        if raw.rstrip(b"\n") == TAIL_HELLO.encode():
                            got = True
                            self._back([path])
                        continue
                    self.last_line_at = time.monotonic()
                    lineno += 1
                    self.pos[path] = (0, lineno)
                    self.handler.lines(self._named(path),
                                       [Line(lineno, raw[:-1].decode("utf-8", "replace"), None)], False)
                self._finish(p, got, [path])
            attempt = 0 if got else attempt + 1
            self._stop.wait(self.backoff[min(attempt, len(self.backoff) - 1)])


def host_named(record: Any, host: str) -> Any:
    """A node's GPU record with the device named after the host (gpu0 -> gpu0@node1): series, the lost
    event's GPU and text. Two nodes' gpu0 are two GPUs, in the store, the dashboard and the exporter."""
    from trainwatch.model import Event, Sample

    if isinstance(record, Sample):
        key, sep, field = record.name.partition("/")
        if sep and key.startswith("gpu") and "@" not in key:
            record.name = f"{key}@{host}/{field}"
    elif isinstance(record, Event) and isinstance(record.fields.get("gpu"), str) and "@" not in record.fields["gpu"]:
        key = record.fields["gpu"]
        record.fields["gpu"] = f"{key}@{host}"
        if record.text.startswith(key):
            record.text = f"{key}@{host}{record.text[len(key):]}"
    return record


def _end(p: subprocess.Popen[bytes]) -> None:
    if p.poll() is None:
        try:
            p.terminate()
        except ProcessLookupError:
            pass

