"""The live watcher: files followed through inotify (or polling), GPUs sampled, one engine thread.

The engine is synchronous and not thread-safe, so only one thread ever touches it: the engine
thread, which drains a bounded queue (file-change wake-ups from watchdog, GPU readings from the
sampler) and calls engine.tick() on a timer. Other threads only put items on the queue. Readers
such as the TUI take `lock` briefly to copy what they show.

What a file's new lines cost is mostly the array rules' rounds, a fixed cost per series whatever the
rows, so the rows read are held (`LiveSource.hold`) and all files' rows are judged together on the timer
(ROUND_SHARE), not once per file per write; while many files change, each is read at a pace
(`trainwatch/live/pacer.py`).
"""

from __future__ import annotations

import errno
import fnmatch
import glob
import os
import queue
import threading
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from trainwatch.alerts import AlertChange
from trainwatch.engine import Engine
from trainwatch.errors import SourceError, TrainwatchError
from trainwatch.live.crash_end import QUIET_S as CRASH_QUIET_S
from trainwatch.live.crash_end import CrashEnd
from trainwatch.live.pacer import GATHER_S, ReadPacer
from trainwatch.live.source import LiveSource
from trainwatch.model import Record
from trainwatch.runner import open_source
from trainwatch.session import Session
from trainwatch.sources.fifo import is_fifo
from trainwatch.sources.files import is_log_name, looks_binary, read_sample
from trainwatch.sources.gpu import Backend, GpuSampler
from trainwatch.sources.nvml import default_backend
from trainwatch.sources.runfolders import is_member, members, owner, path_format

QUEUE_MAX = 10_000
ROUND_SHARE = 0.05
"""The array rules judge the rows held (a round, `Engine.settle`) on the timer, at most this share of
the engine thread's time: a round that cost 25 ms of CPU is followed by the next one 0.5 s later at the
soonest. A round's cost is mostly fixed per series and rule, whatever the number of new rows, so with a
few files each is judged at every tick, and with hundreds the rounds come further apart and take more
rows each instead of taking a core (200 files at 10 lines/s: a round about every few seconds).
A non-finite value and any event a rule answers (an error, the end of training) are judged at once."""
RING_LINES = 2_000
INFO_MAX = 500
_STOP = object()


class _Spec:
    """One path argument: a file, a glob, or a directory, and where to watch for what it names."""

    def __init__(self, raw: str) -> None:
        self.raw = raw
        self.is_glob = any(c in raw for c in "*?[") and not Path(raw).exists()
        self.is_dir = not self.is_glob and Path(raw).is_dir()
        if self.is_glob:
            base = raw
            while any(c in base for c in "*?["):
                base = os.path.dirname(base)
            self.base = Path(base or ".")
        elif self.is_dir:
            self.base = Path(raw)
        else:
            self.base = Path(raw).parent if str(Path(raw).parent) else Path(".")
        self.recursive = self.is_dir or (self.is_glob and "**" in raw)

    def existing(self) -> list[Path]:
        if self.is_glob:
            return [Path(m) for m in sorted(glob.glob(self.raw, recursive=True)) if Path(m).is_file()]
        if self.is_dir:
            if not self.base.is_dir():
                return []
            return members(self.base, is_log_name)
        return [Path(self.raw)]

    def nothing_yet(self) -> str:
        """Why nothing is followed for this path yet (it is waited for, as `tail -F` waits)."""
        if self.is_glob:
            return "pattern matches no file yet; waiting for one"
        if self.is_dir:
            return "no log files in this directory yet; waiting for one to appear"
        return "does not exist yet; waiting for it"

    def wants(self, path: str) -> bool:
        if self.is_glob:
            return fnmatch.fnmatch(path, self.raw) or fnmatch.fnmatch(os.path.normpath(path),
                                                                      os.path.normpath(self.raw))
        if self.is_dir:
            p = Path(path)
            return is_member(p, is_log_name) and _under(p, self.base)
        return os.path.abspath(path) == os.path.abspath(self.raw)


def _under(p: Path, base: Path) -> bool:
    try:
        Path(os.path.abspath(p)).relative_to(os.path.abspath(base))
        return True
    except ValueError:
        return False


class Watcher:
    def __init__(self, paths: list[str], *, fmt: str | None = None, preset: str | None = None,
                 configs: list[str] | None = None, gpu: bool = True, gpu_interval: float = 1.0,
                 poll: bool = False, from_end: bool = False, clock: Callable[[], float] = time.time,
                 gpu_backend: Backend | None = None, tick_interval: float = 0.5,
                 poll_interval: float | None = None, params: float | None = None,
                 ring_lines: int = RING_LINES, remote_trainwatch: str = "trainwatch",
                 crash_quiet_s: float = CRASH_QUIET_S) -> None:
        self.fmt = fmt
        self.clock = clock
        self.poll = poll
        self.from_end = from_end
        self.tick_interval = tick_interval
        self.poll_interval = poll_interval if poll_interval is not None else (0.5 if poll else 5.0)
        self.params = params
        self.ring_lines = ring_lines
        self.lock = threading.RLock()
        self.finished = threading.Event()
        self._crash_end = CrashEnd(clock, crash_quiet_s)
        self.info_lines: list[str] = []
        self.dropped = 0  # queue items dropped because the engine thread fell far behind
        self._info_listeners: list[Callable[[str], None]] = []
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=QUEUE_MAX)
        self._pending: set[str] = set()
        self._pending_lock = threading.Lock()
        self._stopping = threading.Event()
        self.pacer = ReadPacer(GATHER_S if tick_interval >= GATHER_S else 0.0)  # see trainwatch/live/pacer.py
        from trainwatch.sources.remote import looks_remote

        self._specs = [_Spec(p) for p in paths if not looks_remote(p)]
        remote_paths = [p for p in paths if looks_remote(p)]
        # A source is known by one name everywhere (engine, TUI, status lines, recent_lines): the path as
        # typed or found, e.g. "run.log". `_by_file` only routes file events, which name the absolute path.
        self._sources: dict[str, LiveSource] = {}
        self._by_file: dict[str, LiveSource] = {}
        self._thread: threading.Thread | None = None
        self._observer: Any = None
        self._watched: set[str] = set()
        self._stopped = False
        self._started = False
        self.engine = self._build_engine(preset, configs)
        self._remote: list[Any] = []  # Feeds of user@host:/path arguments (trainwatch/live/remote.py)
        self._remote_link: Any = None
        if remote_paths:
            from trainwatch.live.remote import feeds

            self._remote_link, self._remote = feeds(self, remote_paths, trainwatch=remote_trainwatch, gpu=gpu)
        self.sampler: GpuSampler | None = None
        if gpu and (self._specs or not remote_paths):  # remote logs only: the GPUs that matter are the node's
            self.sampler = GpuSampler(gpu_backend or default_backend(), interval=gpu_interval, clock=clock,
                                      emit=self._put_records, notice=self._notice)

    # -- public API -------------------------------------------------------------------------------

    def add_listener(self, fn: Callable[[AlertChange], None]) -> None:
        with self.lock:
            self.engine.listeners.append(fn)

    def add_info_listener(self, fn: Callable[[str], None]) -> None:
        """fn(text) for each one-line notice (file waiting, rotated, NVML missing, ...)."""
        self._info_listeners.append(fn)

    def recent_lines(self, source: str, n: int) -> list[tuple[int, str]]:
        with self.lock:
            src = self._sources.get(source)
            if src is None:
                return []
            lines = list(src.lines)
        return lines[-n:] if n > 0 else []

    def sources(self) -> list[LiveSource]:
        with self.lock:
            return list(self._sources.values())

    def gpu_devices(self) -> list[dict[str, Any]]:
        """This machine's GPUs, then the remote nodes' (named gpu0@node1, ...)."""
        local = self.sampler.devices() if self.sampler is not None else []
        return local + (self._remote_link.gpus.devices() if self._remote_link is not None else [])

    def hopeless(self) -> bool:
        """Nothing is or ever will be followed: every path named is a file given up on (binary, say).

        A glob or a directory may still gain a log, and a missing file may appear, so those keep hope."""
        if self._remote or any(spec.is_glob or spec.is_dir for spec in self._specs):
            return False
        with self.lock:
            srcs = list(self._sources.values())
        return bool(srcs) and all(s.gave_up for s in srcs)

    def start(self) -> None:
        if self._started:
            return
        self._started = True
        with self.lock:
            for spec in self._specs:
                found = spec.existing()
                if not found:
                    self._notice(f"{spec.raw}: {spec.nothing_yet()}")
                for p in found:
                    self._add(p)
            self._read_all()  # the backlog first, so history and rules are complete
        if not self.poll:
            self._start_observer()
        if self.sampler is not None and self.sampler.open():
            self.sampler.start()
        for feed in self._remote:
            feed.start()
        self._thread = threading.Thread(target=self._run, name="trainwatch-engine", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stops following; what was already written is read and fed first. Safe to call twice."""
        if self._stopped:
            return
        self._stopped = True
        if self._observer is not None:
            try:
                self._observer.stop()
                self._observer.join(timeout=5)
            except Exception:
                pass
        if self.sampler is not None:
            self.sampler.stop()
        for feed in self._remote:
            feed.stop()
        if self._thread is not None:
            self._stopping.set()
            self._queue_put(_STOP, block=True)
            self._thread.join(timeout=30)
        with self.lock:
            self._read_all()
            while any(s.follower is not None and s.follower.more for s in self._sources.values()):
                self._read_all()
            self.engine.settle()  # the rows held for the next round
            for src in self._sources.values():
                self._guard(src, partial(src.close, self.engine))
                state = self.engine.sources.get(src.name)
                if state is not None and state.ended:
                    self.engine.finish(src.name)

    def wake(self, path: str) -> None:
        """A file or directory changed (called from watchdog's thread): schedule a read."""
        with self._pending_lock:
            if path in self._pending:
                return
            self._pending.add(path)
        self._queue_put(("fs", path))

    # -- hooks for sources fed by other threads (remote logs) ----------------------------------------

    def call_soon(self, fn: Callable[[], Any]) -> None:
        """Runs fn() on the engine thread, with the lock held."""
        self._queue_put(("call", fn))

    def add_source(self, src: LiveSource) -> LiveSource:
        """Registers a source known by name only (no local file); the one already there if any. Lock held."""
        src.hold = True
        return self._sources.setdefault(src.name, src)

    def poll_source(self, src: LiveSource) -> None:
        self._guard(src, partial(src.poll, self.engine))

    def put_records(self, records: list[Record]) -> None:
        self._put_records(records)

    def notify(self, text: str) -> None:
        self._notice(text)

    # -- the engine thread ----------------------------------------------------------------------

    def _run(self) -> None:
        mono = time.monotonic
        next_tick = mono() + self.tick_interval
        next_poll = mono() + self.poll_interval
        next_round = next_tick
        pacer = self.pacer
        while True:
            timeout = max(0.0, min(next_tick, next_poll, pacer.next_due()) - mono())
            try:
                item = self._queue.get(timeout=timeout)
            except queue.Empty:
                item = None
            items = [] if item is None else [item]
            while True:  # take everything waiting, so a burst costs one lock
                try:
                    items.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            with self.lock:
                now = mono()
                for it in items:
                    if it is _STOP:
                        return
                    if isinstance(it, tuple) and it[0] == "fs":
                        if pacer.admit(os.path.abspath(it[1]), now):  # else kept pending until due
                            self._read(it[1])
                    else:
                        self._handle(it)
                for path in pacer.due(now):
                    self._read(path)
                now = mono()
                if now >= next_poll:
                    self._read_all(unread_since=now - self.poll_interval)
                    self._rescan()
                    next_poll = now + self.poll_interval
                if now >= next_tick:
                    settle = now >= next_round and self.engine.holding
                    cpu = time.thread_time()
                    self.engine.tick(settle=settle)
                    if settle:  # see ROUND_SHARE
                        next_round = now + max(self.tick_interval, (time.thread_time() - cpu) / ROUND_SHARE)
                    next_tick = now + self.tick_interval
                    pacer.retune()
                    self._check_finished()  # (at each tick, not each read: it looks at every source)

    def _read(self, path: str) -> None:
        """A file wake-up read, its cost told to the pacer."""
        cpu = time.thread_time()
        self._handle(("fs", path))
        self.pacer.read(os.path.abspath(path), time.monotonic(), time.thread_time() - cpu)

    def _handle(self, item: Any) -> None:
        kind, payload = item
        if kind == "call":
            payload()
            return
        if kind == "records":
            self.engine.feed_all(payload, more=True)  # judged in the next round
            return
        path = payload
        with self._pending_lock:
            self._pending.discard(path)
        src = self._by_file.get(os.path.abspath(path))
        if src is None:  # a metric file written inside a run folder that is one source (MLflow)
            folder = owner(Path(path), [s.path for s in self._sources.values()])
            src = self._by_file.get(os.path.abspath(folder)) if folder is not None else None
        if src is not None:
            self._guard(src, partial(src.poll, self.engine))
            return
        for spec in self._specs:
            if spec.wants(path) and (spec.is_glob or spec.is_dir) and os.path.isfile(path):
                new = self._add(Path(path))
                if new is not None:
                    self._guard(new, partial(new.poll, self.engine))
                return
        # a directory event (a file moved in or out): look at every source of that directory
        for src in self._sources.values():
            if os.path.dirname(os.path.abspath(src.path)) == os.path.abspath(path):
                self._guard(src, partial(src.poll, self.engine))

    def _read_all(self, unread_since: float | None = None) -> None:
        """Reads every source; with `unread_since` (the safety poll, for wake-ups that never came), only
        those no wake-up had read since then: a file that inotify keeps waking needs no second read."""
        for src in list(self._sources.values()):
            if unread_since is not None and self.pacer.read_since(os.path.abspath(src.path), unread_since):
                continue
            self._guard(src, partial(src.poll, self.engine))

    def _rescan(self) -> None:
        for spec in self._specs:
            if spec.is_glob or spec.is_dir:
                for p in spec.existing():
                    new = self._add(p)
                    if new is not None:
                        self._guard(new, partial(new.poll, self.engine))
        if self._observer is not None:
            self._schedule_all()

    def _check_finished(self) -> None:
        """Every followed run has ended: its end-of-training summary was seen, or it crashed and its log
        has been quiet since (`CrashEnd`)."""
        followed = [s for s in self._sources.values() if s.follower is not None]
        done = bool(followed)
        for src in followed:
            st = self.engine.sources.get(src.name)
            if st is None or (not st.ended and not self._crash_end.ended(src.name, str(src.path), st)):
                done = False
            elif not st.ended and src.name not in self._crash_end.told:
                self._crash_end.told.add(src.name)
                self._notice(f"{src.name}: the run crashed ({self._crash_end.why(st)}) and its log has been "
                             f"quiet for {self._crash_end.quiet_s:g} s since: it has ended")
        if done:
            self.finished.set()

    # -- sources ----------------------------------------------------------------------------------

    def _add(self, path: Path) -> LiveSource | None:
        key = os.path.abspath(path)
        if key in self._by_file:
            return None  # the same file named twice (say "run.log" and "./logs/../run.log"): followed once
        from_end = self.from_end and self._thread is None and path.exists()  # later files: from their start
        src = LiveSource(path, fmt=self.fmt, from_end=from_end, ring=self.ring_lines, notice=self._notice,
                         params=self.params, wake=partial(self.wake, key))
        src.hold = True  # its rows wait for the next round (ROUND_SHARE)
        self._sources[src.name] = src
        self._by_file[key] = src
        return src

    def _guard(self, src: LiveSource, fn: Callable[[], Any]) -> None:
        try:
            fn()
        except Exception as exc:  # one bad source must not stop the others
            self._notice(f"{src.name}: error while following ({type(exc).__name__}: {exc}); continuing")
            return
        if src.follower is not None and src.follower.more:
            self.wake(os.path.abspath(src.path))  # the rest of a long backlog: next turn, after readers had the lock

    # -- inotify ------------------------------------------------------------------------------------

    def _start_observer(self) -> None:
        from watchdog.observers import Observer

        self._observer = Observer(timeout=0.2)
        self._schedule_all()
        if self._observer is None:
            return
        try:
            self._observer.start()
        except OSError as exc:
            self._fall_back(exc)

    def _schedule_all(self) -> None:
        handler = _Handler(self)
        wanted: list[tuple[Path, bool]] = [(spec.base, spec.recursive) for spec in self._specs]
        for path, recursive in wanted:
            key = f"{os.path.abspath(path)}|{recursive}"
            if key in self._watched or not path.is_dir() or self._observer is None:
                continue
            try:
                self._observer.schedule(handler, str(path), recursive=recursive)
                self._watched.add(key)
            except OSError as exc:
                self._fall_back(exc)
                return

    def _fall_back(self, exc: OSError) -> None:
        why = "inotify watch limit reached" if exc.errno in (errno.ENOSPC, errno.EMFILE) else \
            f"inotify unavailable ({exc.strerror or exc})"
        self._notice(f"{why}; following by polling every {min(self.poll_interval, 0.5):g} s")
        obs, self._observer = self._observer, None
        try:
            if obs is not None and obs.is_alive():
                obs.stop()
        except Exception:
            pass
        self.poll = True
        self.poll_interval = min(self.poll_interval, 0.5)

    # -- plumbing ---------------------------------------------------------------------------------

    def _build_engine(self, preset: str | None, configs: list[str] | None) -> Engine:
        opened = []
        for spec in self._specs:
            for p in spec.existing():
                if is_fifo(p):
                    continue  # opening a pipe to sample it would block until a writer comes, and eat its lines
                try:
                    opened.append(open_source(p, self.fmt))
                except TrainwatchError:
                    pass  # not there or not recognised yet: said when it is followed
        self.session = Session(opened, preset=preset, configs=configs, clock=self.clock, waiting=True)
        return self.session.engine

    def _put_records(self, records: list[Record]) -> None:
        self._queue_put(("records", records))

    def _queue_put(self, item: Any, block: bool = False) -> None:
        try:
            self._queue.put(item, block=block, timeout=5 if block else None)
        except queue.Full:
            self.dropped += 1
            if isinstance(item, tuple) and item[0] == "fs":
                with self._pending_lock:
                    self._pending.discard(item[1])  # the safety poll will read it

    def _notice(self, text: str) -> None:
        self.info_lines.append(text)
        if len(self.info_lines) > INFO_MAX:
            del self.info_lines[: len(self.info_lines) - INFO_MAX]
        for fn in list(self._info_listeners):
            try:
                fn(text)
            except Exception:
                pass


class _Handler:
    """watchdog's callbacks: every event only wakes the engine thread for the paths involved."""

    def __init__(self, watcher: Watcher) -> None:
        self.watcher = watcher

    def dispatch(self, event: Any) -> None:
        if event.event_type in ("opened", "closed_no_write"):
            return
        for attr in ("src_path", "dest_path"):
            p = getattr(event, attr, "")
            if p:
                p = os.fsdecode(p)
                self.watcher.wake(p)
                if event.is_directory is False and event.event_type in ("deleted", "moved"):
                    self.watcher.wake(os.path.dirname(p))


def refuse_unfollowable(paths: list[str], fmt: str | None) -> None:
    """Raises SourceError when every path named is an existing binary file: `tail -F` would wait on it
    for ever, and there is nothing else to follow. With other paths beside it, a binary file is only
    a notice and the rest is followed."""
    reasons = []
    for raw in paths:
        spec = _Spec(raw)
        p = Path(raw)
        if spec.is_glob or spec.is_dir or fmt is not None or not p.is_file() or path_format(p) is not None:
            return
        try:
            head = read_sample(p)
        except (OSError, TrainwatchError):
            return  # unreadable now: the source says so and retries
        if not head or not looks_binary(head):
            return
        reasons.append(f"{raw}: binary data, not a text log")
    if reasons:
        raise SourceError("; ".join(reasons), hint="nothing to follow")
