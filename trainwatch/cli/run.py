"""`trainwatch run -- CMD ARGS...`: start the training as a child, keep its output in a log, watch that log.

The log file is the one source of truth: the child's output is written there as it comes
(trainwatch/sources/child.py), and the same Watcher `tail` uses follows it, so the dashboard and the
headless lines are exactly what `trainwatch tail LOG` would show. What only a parent knows is added:
the child's end arrives as a TRAIN_END event carrying its exit code or signal, fed after the last
line of the log was read, so the run is marked ended (never "stalled") and a failure is a finding
(rule run.child_exit). The exit code never calls a bad run a success: the child's failure code wins
(128 + N for signal N); a child that exits 0 gives the worst severity seen (0/1/2), so that
`trainwatch run -- train.py && deploy` stops after a critical finding; when --exit-on stopped the run,
the alert's code.
"""

from __future__ import annotations

import argparse
import os
import shlex
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any, BinaryIO

from trainwatch.cli import EXIT_CRITICAL, EXIT_OK, EXIT_WARNING, say_error
from trainwatch.cli.tail import WAKE_S, Headless, add_follow_options, build_watcher, is_terminal
from trainwatch.errors import SourceError, UsageError
from trainwatch.live.watcher import Watcher
from trainwatch.model import Event, EventKind
from trainwatch.sinks.fanout import Sinks
from trainwatch.sources.child import Child, ExitStatus, StartError, check_command

GRACE_S = 10.0  # after SIGTERM, this long before SIGKILL when trainwatch stops the child itself


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("run", help="run a training command, log its output and watch it live",
                       usage="trainwatch run [options] -- CMD [ARGS...]",
                       description="Start CMD (no shell) as a child, write its stdout and stderr (merged, through a "
                                   "pseudo-terminal) to a log file and watch that log as 'trainwatch tail' does. "
                                   "SIGINT and SIGTERM are passed on to the child. Exit code: the child's failure "
                                   "code wins (128+N for signal N); a child that exits 0 gives the worst severity "
                                   "seen (0 healthy, 1 warning, 2 critical), so a run with a critical finding is "
                                   "never a success; the alert's with --exit-on (the child is then stopped); "
                                   "127 or 126 when CMD cannot be started; 3 for bad usage or an existing log.")
    p.add_argument("--log", metavar="FILE",
                   help="the log file to write (default ./trainwatch-<UTC time>.log); never overwritten")
    p.add_argument("--grace", type=float, default=GRACE_S, metavar="SECONDS",
                   help=f"on every stop (a signal to trainwatch, --exit-on, the child's own end with processes left "
                        f"behind): seconds between SIGTERM to the child's whole process tree and SIGKILL "
                        f"(default {GRACE_S:g})")
    add_follow_options(p, child=True)
    p.add_argument("--report", metavar="FILE",
                   help="when the run ends, write an HTML report of its log there (as 'trainwatch report LOG -o "
                        "FILE' would, with the child's exit)")
    p.add_argument("child_argv", nargs=argparse.REMAINDER, metavar="-- CMD [ARGS...]",
                   help="the training command and its arguments")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    argv = list(args.child_argv)
    if argv[:1] == ["--"]:
        argv = argv[1:]
    if not argv:
        raise UsageError("run: no command given", hint="trainwatch run [options] -- CMD [ARGS...]")
    if not args.grace >= 0:
        raise UsageError("run: --grace must be zero or more")
    try:
        check_command(argv[0])
    except StartError as exc:  # before anything else is said or created
        return say_error(str(exc), exc.code, as_json=args.json)
    if args.report:
        _check_writable(Path(args.report))  # one line and exit 3 before the training starts, not after it
    sinks = Sinks.from_args(args)  # a bad --alert-log or --on-alert is one line, before the child starts
    try:
        path, log = _create_log(args.log)
        args.paths = [path]
        if not args.headless and not is_terminal():
            print("trainwatch: no terminal on stdin and stdout: alerts are printed as lines (as with --headless)",
                  file=sys.stderr)
            args.headless = True
        with log:
            watcher: RunWatcher = build_watcher(args, RunWatcher)
            teller = ExitTeller(watcher, str(Path(path)), argv)  # the name the watcher gives the log
            child = Child(argv, log, on_exit=teller, grace_s=args.grace)
            teller.child = child
            try:
                if args.headless:
                    rc = RunHeadless(watcher, args, sinks, child).run()
                else:
                    rc = _tui(watcher, args, sinks, child)
            except StartError as exc:  # found, but the system would not run it after all
                _remove_if_empty(path)
                return say_error(str(exc), exc.code, as_json=args.json)
        if args.report:
            _write_report(path, args, teller, child)
        return rc
    finally:
        sinks.close()


def _check_writable(out: Path) -> None:
    folder = out.parent if str(out.parent) else Path(".")
    if not folder.is_dir() or not os.access(folder, os.W_OK) or out.is_dir():
        raise SourceError(f"{out}: cannot write the report there", hint="name a file in a writable folder")


def _write_report(path: str, args: argparse.Namespace, teller: ExitTeller, child: Child) -> None:
    """The report of the finished run: its log judged as `check` judges it, and the child's end (what only
    this parent knows) fed after the log. A failure here is one line; the run's exit code stands."""
    from trainwatch.cli.check import judge
    from trainwatch.errors import TrainwatchError
    from trainwatch.report import build

    status = child.status
    end = teller.event(status) if status is not None else None

    def feed_end(engine: Any) -> None:
        if end is not None:
            engine.feed(end)

    try:
        judged, _ = judge([path], {}, args.fmt, args.preset, args.config, after=feed_end)
        build.write(build.render(judged), Path(args.report))
    except TrainwatchError as exc:
        say_error(f"run: report not written: {exc}")
        return
    print(f"trainwatch: report written to {args.report}", file=sys.stderr)


def default_log_name(now: float | None = None) -> str:
    return time.strftime("trainwatch-%Y%m%dT%H%M%SZ.log", time.gmtime(now))


def _create_log(given: str | None) -> tuple[str, BinaryIO]:
    """Creates the log; an existing file is never overwritten (a previous run's evidence)."""
    path = given or default_log_name()
    try:
        return path, open(path, "xb")
    except FileExistsError:
        raise SourceError(f"{path}: already exists; trainwatch run never overwrites a log",
                          hint="name another with --log") from None
    except OSError as exc:
        raise SourceError(f"{path}: cannot create the log: {exc.strerror or exc}") from None


def _remove_if_empty(path: str) -> None:
    try:
        if os.path.getsize(path) == 0:
            os.unlink(path)
    except OSError:
        pass


class RunWatcher(Watcher):
    """A Watcher that says when it has started (read its backlog), so the child's end is told after it."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.started = threading.Event()
        self.closing = False  # the front end is done: the child's end is no longer told

    def start(self) -> None:
        super().start()
        self.started.set()


class ExitTeller:
    """Called once, on the child's waiter thread, after its last byte reached the log: reads the log to
    its end, then feeds the end as an event through the engine, as any record is fed."""

    def __init__(self, watcher: RunWatcher, source: str, argv: list[str]) -> None:
        self.watcher = watcher
        self.source = source
        self.command = shlex.join(argv)[:200]
        self.child: Child | None = None

    def __call__(self, status: ExitStatus) -> None:
        w = self.watcher
        w.started.wait()
        with w.lock:
            if w.closing:
                return
            for src in w.sources():  # the lines written before the end, then the end
                src.poll(w.engine)
                while src.follower is not None and src.follower.more:
                    src.poll(w.engine)
            w.engine.feed(self.event(status))

    def event(self, status: ExitStatus) -> Event:
        fields: dict[str, Any] = {"exit_code": status.shell_code, "command": self.command,
                                  "pid": self.child.pid if self.child else None}
        if status.signal is not None:
            fields["signal"] = status.signal_name
        sent = self.child.sent if self.child else []
        if sent:
            fields["requested"] = " then ".join(dict.fromkeys(signal.Signals(s).name for s in sent))
        return Event(EventKind.TRAIN_END, source=self.source, time=time.time(),
                     text=f"{self.command}: {status.describe()}", fields=fields)


class RunHeadless(Headless):
    """tail's headless loop, ended by the child's end instead of the log's; SIGINT/SIGTERM go to the child."""

    def __init__(self, watcher: RunWatcher, args: argparse.Namespace, sinks: Sinks, child: Child) -> None:
        super().__init__(watcher, args, sinks)
        self.child = child
        self.stopped_by_alert = False

    def run(self) -> int:
        rc = super().run()
        return _exit_code(self.child, self.sinks if self.stopped_by_alert else None, rc)

    def _wait(self) -> None:
        self.child.start()  # the watcher follows the log and the signal handlers are in place
        self._info(_started(self.child))
        super()._wait()
        if self.child.running:  # --exit-on tripped first: stop the training, and let its end be told
            self.stopped_by_alert = True
            self._info(f"stopping {self.child.argv[0]} (pid {self.child.pid}): --exit-on "
                       f"{self.args.exit_on.label} tripped")
            self.child.stop(self.args.grace)
        while not self.child.ended.wait(WAKE_S):  # a second Ctrl-C during the wait still reaches the child
            self._take_signals()
        status = self.child.status
        if status is not None and not status.failed:
            self._info(f"{self.child.argv[0]} {status.describe()}")

    def _ended(self) -> bool:
        return self.child.ended.is_set()

    def _on_signal(self, signum: int) -> None:
        """SIGINT or SIGTERM goes on to the child; following ends with the child's end, not with the signal."""
        if self.child.forward(signum):
            self._info(f"passed {signal.Signals(signum).name} on to {self.child.argv[0]} (pid {self.child.pid})")


def _tui(watcher: RunWatcher, args: argparse.Namespace, sinks: Sinks, child: Child) -> int:
    from trainwatch.cli.tail import _tui as tail_tui

    def forward(signum: int, frame: Any) -> None:
        child.forward(signum)

    old = {s: signal.signal(s, forward) for s in (signal.SIGINT, signal.SIGTERM)}
    stopped_by_alert = False
    try:
        child.start()
        watcher.info_lines.append(_started(child))
        rc = tail_tui(watcher, args, sinks)
    finally:
        watcher.closing = True
        watcher.started.set()  # a dashboard that never started its watcher: nothing waits on it
        if child.running:  # the dashboard was closed (q, or --exit-on) while the training still ran
            stopped_by_alert = sinks.tripped is not None
            print(f"trainwatch: stopping {child.argv[0]} (pid {child.pid})", file=sys.stderr)
            child.terminate(args.grace)
        for s, h in old.items():
            signal.signal(s, h)
    child.ended.wait()
    return _exit_code(child, sinks if stopped_by_alert else None, rc)


def _started(child: Child) -> str:
    return f"running {shlex.join(child.argv)} (pid {child.pid}, output through a {child.mode}) into {child.log.name}"


def _exit_code(child: Child, stopped_by: Sinks | None, watched_rc: int) -> int:
    """The alert's code when --exit-on stopped the child; else the child's failure code (128 + N for
    signal N); else, the child having exited 0, the worst severity seen (`watched_rc`), because a run
    that went NaN and exited 0 anyway is not a success. A log with nothing in it understood is no
    failure of a child that succeeded: 0, not 3."""
    if stopped_by is not None and stopped_by.tripped is not None:
        return int(stopped_by.tripped)
    status = child.status
    if status is not None and status.shell_code != 0:
        return status.shell_code
    return watched_rc if watched_rc in (EXIT_WARNING, EXIT_CRITICAL) else EXIT_OK
