"""`trainwatch stream PATH...`: the far end of a remote tail, run on the training node over SSH.

It follows the files (globs expanded again as it goes, so rank files that appear later are picked up)
and writes JSON lines on stdout for the local trainwatch to parse, judge and show: first a handshake
`{"trainwatch_stream": 1, "version": ...}`, then `{"path", "offset", "lineno", "line"}` per line, where
`offset` is the byte offset just after the line, so a reconnecting client resumes exactly there
(`--resume`). Redraws of an unfinished progress-bar line come with `"partial": true` and no offset.
GPU readings of the node come as `{"gpu": [...]}` records (not with --no-gpu), notices as
`{"notice": ...}`, and a heartbeat `{"alive": time}` every few seconds: writing it is also how a stream
whose client went away notices (the pipe breaks) and ends.

With `--prometheus [ADDR:]PORT` the node serves its own /metrics, so a fleet can be scraped without a
trainwatch following it elsewhere: a Watcher follows the same paths (as `tail` would: formats, rules,
alerts) and the exporter reads it through the dashboard's view, with the GPUs this stream samples. A
stream run that way is a service: stdin that is not a pipe (/dev/null under systemd or nohup) says
nothing about a client, so only a pipe's end stops it.
"""

from __future__ import annotations

import argparse
import glob
import os
import stat
import sys
import threading
import time
from pathlib import Path
from typing import IO, Any

from trainwatch import __version__
from trainwatch.model import Record
from trainwatch.sources.stream_protocol import (
    HANDSHAKE,
    HEARTBEAT_S,
    PROTOCOL,
    encode,
    parse_resume,
    record_to_json,
)
from trainwatch.sources.tail import REDRAW, FileFollower


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("stream", help="follow logs and GPUs as JSON lines (the remote end of 'tail host:PATH')",
                       description="Follow log files (and the GPUs) and write what is read as JSON lines on stdout; "
                                   "'trainwatch tail user@host:PATH' starts it on the node over SSH.")
    p.add_argument("paths", nargs="+", metavar="PATH", help="log files or globs (quote them)")
    p.add_argument("--no-gpu", action="store_true", help="no GPU telemetry")
    p.add_argument("--gpu-interval", type=float, default=1.0, metavar="SECONDS", help="GPU sampling period")
    p.add_argument("--interval", type=float, default=0.2, metavar="SECONDS", help="how often files are read")
    p.add_argument("--resume", metavar="JSON", default="{}",
                   help='where to start each file: {"PATH": [OFFSET, LINENO], ...} (default: the start)')
    p.add_argument("--gpu-replay", metavar="TRACE", help="GPU readings from a recorded JSON-lines trace")
    from trainwatch.sinks import prometheus

    p.add_argument("--prometheus", type=prometheus.parse_address, metavar="[ADDR:]PORT",
                   help="also serve this node's metrics, alerts and GPUs on ADDR:PORT/metrics "
                        f"(default address {prometheus.DEFAULT_HOST})")
    p.set_defaults(run=run)


class _FileTail:
    """One file followed by the local follower's code (FileFollower: truncation, rotation with the renamed
    file read on until quiet), its lines sent with the offset just after them in the file now at the path.

    A rotation is sent as a restart message before the new file's first line; the renamed file's late
    lines come without an offset (a client resuming after them resumes in the new file)."""

    def __init__(self, path: str, offset: int = 0, lineno: int = 0) -> None:
        self.path = path
        self.follower = FileFollower(Path(path), offsets=True, start=(offset, lineno) if offset else None)

    def read(self, out: _Out) -> None:
        chunk = self.follower.poll()
        for text in chunk.notices:
            out.notice(text)
        for i, ((lineno, line), end) in enumerate(zip(chunk.lines, chunk.ends, strict=True)):
            if chunk.restarted and i == chunk.restart_at:
                out.write({"path": self.path, "restart": True})  # line numbers start again
            msg: dict[str, Any] = {"path": self.path}
            if end == REDRAW:
                msg["partial"] = True
            elif end is not None:
                msg["offset"] = end
            msg["lineno"], msg["line"] = lineno, line
            out.write(msg)
        if chunk.restarted and chunk.restart_at >= len(chunk.lines):
            out.write({"path": self.path, "restart": True})

    def close(self) -> None:
        self.follower.close()


class _Out:
    """stdout as JSON lines, flushed per batch; a broken pipe means the client has gone."""

    def __init__(self, stream: IO[str]) -> None:
        self.stream = stream
        self.last = 0.0  # when something was last written: the heartbeat fills silences

    def write(self, obj: dict[str, Any]) -> None:
        self.stream.write(encode(obj))
        self.last = time.monotonic()

    def notice(self, text: str) -> None:
        self.write({"notice": text})

    def flush(self) -> None:
        self.stream.flush()


def run(args: argparse.Namespace) -> int:
    resume = parse_resume(args.resume)
    node = _Node.serve(args) if args.prometheus is not None else None  # a port in use: one line, exit 3
    try:
        return _follow(args, resume, node)
    finally:
        if node is not None:
            node.close()


def _follow(args: argparse.Namespace, resume: dict[str, tuple[int, int]], node: _Node | None) -> int:
    out = _Out(sys.stdout)
    out.write({HANDSHAKE: PROTOCOL, "version": __version__})
    sampler = _gpu(args, out) if not args.no_gpu else None
    if node is not None:
        node.start(sampler)
    tails: dict[str, _FileTail] = {}
    said: set[str] = set()
    gone = _watch_stdin()
    try:
        while not gone.is_set():
            for pattern in args.paths:
                matches = [m for m in sorted(glob.glob(pattern)) if os.path.isfile(m)]
                if not matches and pattern not in said:
                    said.add(pattern)
                    out.notice(f"{pattern}: no such file yet; waiting for it")
                for m in matches:
                    if m not in tails:
                        said.discard(pattern)
                        offset, lineno = resume.get(m, (0, 0))
                        tails[m] = _FileTail(m, offset, lineno)
            for t in tails.values():
                t.read(out)
            if sampler is not None:
                records = sampler.sample()
                if records:
                    out.write({"gpu": [record_to_json(r) for r in records]})
                    if node is not None:
                        node.watcher.put_records(records)
            if time.monotonic() - out.last >= HEARTBEAT_S:
                out.write({"alive": time.time()})
            out.flush()
            time.sleep(args.interval)  # the polling period of the follow loop, not a synchronisation
    except (BrokenPipeError, KeyboardInterrupt):
        try:
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - nothing may be flushed to the broken pipe at exit
        except OSError:
            pass
        return 0
    return 0


def _watch_stdin() -> threading.Event:
    """Set when stdin ends: the client's ssh closes it when trainwatch there ends, however it ended, so the
    stream stops with it rather than following for nobody. A terminal's stdin is left alone."""
    gone = threading.Event()
    try:
        if sys.stdin is None or not _is_pipe(sys.stdin.fileno()):
            return gone
    except (ValueError, OSError):
        return gone

    def read() -> None:
        try:
            while sys.stdin.buffer.read(4096):
                pass
        except (OSError, ValueError):
            pass
        gone.set()

    threading.Thread(target=read, name="trainwatch-stream-stdin", daemon=True).start()
    return gone


def _is_pipe(fd: int) -> bool:
    """A pipe or socket ends when its writer does; a terminal, /dev/null or a file says nothing of one."""
    mode = os.fstat(fd).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


class _Node:
    """What `--prometheus` serves: a Watcher over the same paths, with the GPUs this stream samples.

    The exporter reads it as it reads `tail`'s watcher (the WatchModel shape), so the node's series,
    alerts and GPU gauges are named exactly as a local tail would name them."""

    def __init__(self, watcher: Any) -> None:
        self.watcher = watcher
        self.sampler: _Sampler | None = None
        self.exporter: Any = None

    @classmethod
    def serve(cls, args: argparse.Namespace) -> _Node:
        from trainwatch.live.watcher import Watcher
        from trainwatch.sinks import prometheus

        node = cls(Watcher(list(args.paths), gpu=False))
        node.exporter = prometheus.serve(node, args.prometheus, lambda text: print(f"trainwatch: {text}",
                                                                                    file=sys.stderr, flush=True))
        return node

    def start(self, sampler: _Sampler | None) -> None:
        self.sampler = sampler
        self.watcher.start()

    def close(self) -> None:
        if self.exporter is not None:
            self.exporter.close()
        self.watcher.stop()

    # -- the WatchModel the exporter reads --------------------------------------------------------

    @property
    def engine(self) -> Any:
        return self.watcher.engine

    @property
    def lock(self) -> Any:
        return self.watcher.lock

    @property
    def finished(self) -> threading.Event:
        return self.watcher.finished

    @property
    def info_lines(self) -> list[str]:
        return self.watcher.info_lines

    @property
    def clock(self) -> Any:
        return self.watcher.clock

    def recent_lines(self, source: str, n: int) -> list[tuple[int, str]]:
        return self.watcher.recent_lines(source, n)

    def gpu_devices(self) -> list[dict[str, Any]]:
        return self.sampler.sampler.devices() if self.sampler is not None else []


class _Sampler:
    """The GPU sampler read at most every `interval` seconds from the follow loop."""

    def __init__(self, sampler: Any, interval: float) -> None:
        self.sampler = sampler
        self.interval = interval
        self.next = 0.0

    def sample(self) -> list[Record]:
        now = time.monotonic()
        if now < self.next:
            return []
        self.next = now + self.interval
        records: list[Record] = self.sampler.sample()
        return records


def _gpu(args: argparse.Namespace, out: _Out) -> _Sampler | None:
    from trainwatch.sources.gpu import GpuSampler, ReplayBackend
    from trainwatch.sources.nvml import default_backend

    backend = ReplayBackend(args.gpu_replay, loop=True) if args.gpu_replay else default_backend()
    sampler = GpuSampler(backend, interval=args.gpu_interval, notice=out.notice)
    if not sampler.open():
        return None
    return _Sampler(sampler, args.gpu_interval)
