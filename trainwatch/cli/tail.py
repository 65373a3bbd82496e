"""`trainwatch tail`: follow logs (and GPUs) live, in the TUI or headless with alerts as they fire.

Headless, it reads the backlog first, then follows; it ends when every run has ended (its summary,
or a crash and a quiet file: trainwatch/live/crash_end.py), on --exit-on, or on SIGINT/SIGTERM, and
exits with the worst severity seen (0/1/2). With --daemon it keeps following after a run ends (a
systemd service, say). The dashboard stays open until `q` (or,
with --until-done, until every run has ended, or on --exit-on) and exits the same way. Both attach
the same Sinks (--alert-log, --on-alert, --exit-on), built here before either starts. Without a terminal on stdin
and stdout (cron, nohup, `> file`) the dashboard would write escape codes into a file, so `tail`
falls back to headless output and says so on stderr. --prometheus serves the same state to Prometheus
with either front end (trainwatch/sinks/prometheus.py), bound before anything is followed.
"""

from __future__ import annotations

import argparse
import collections
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

from trainwatch.cli import EXIT_UNKNOWN, say_error
from trainwatch.cli.check import add_engine_options
from trainwatch.errors import SourceError, UsageError
from trainwatch.model import GPU_SOURCE, AlertState, Severity
from trainwatch.sinks import prometheus
from trainwatch.sinks.fanout import Sinks
from trainwatch.sinks.printer import Printer, stamp

# The bundled themes (themes/*.yaml); named here because importing the TUI for --help would load
# Textual. tests/test_cli.py checks the list against the files.
WAKE_S = 0.1  # how often the headless loop looks at the signals noted, the end and the status

THEMES_HELP = "trainwatch-dark (default), trainwatch-light, trainwatch-contrast (the prefix may be left out), " \
              "or a theme YAML file"


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("tail", help="follow logs and GPUs live (TUI, or --headless)",
                       description="Follow training logs (files, globs, directories) and GPU telemetry live: "
                                   "the dashboard in a terminal, alerts as lines with --headless (also the "
                                   "fallback without a terminal). Exit code: the worst severity seen, 0/1/2; "
                                   "3 when no log could be read. Severities: info, warning, critical.")
    p.add_argument("paths", nargs="+", metavar="PATH",
                   help="log files, globs (quote them) or directories; user@host:PATH or ssh://user@host:port/PATH "
                        "on another machine")
    add_follow_options(p)
    p.add_argument("--baseline", metavar="LOG",
                   help="dashboard: draw a finished run's curves beside the live ones (a log, folder or "
                        "trainer_state.json, read once; its findings are not the live run's)")
    p.set_defaults(run=run)


def add_follow_options(p: argparse.ArgumentParser, *, child: bool = False) -> None:
    """tail's options, shared with `trainwatch run` (`child`), which follows a log it writes itself from
    its start and ends with its child: --from-end and --daemon mean nothing there and default off."""
    add_engine_options(p)
    p.add_argument("--headless", action="store_true",
                   help="no TUI: print alerts as they fire (the default when stdin or stdout is not a terminal)")
    p.add_argument("--json", action="store_true", help="headless: one JSON object per alert/status/info line")
    if not child:
        p.add_argument("--from-end", action="store_true", help="skip the existing backlog, follow new lines only")
    p.add_argument("--poll", action="store_true", help="poll instead of inotify (network filesystems)")
    p.add_argument("--poll-interval", type=_positive, metavar="SECONDS",
                   help="polling period (default 0.5 with --poll; 5 as a safety net beside inotify)")
    p.add_argument("--no-gpu", action="store_true", help="no GPU telemetry")
    p.add_argument("--gpu-interval", type=_positive, default=1.0, metavar="SECONDS",
                   help="GPU sampling period (default 1)")
    p.add_argument("--gpu-replay", metavar="TRACE", help="GPU readings from a recorded JSON-lines trace")
    p.add_argument("--params", type=_model_size, metavar="N", help="model size for MFU, e.g. 7e9 or 7B")
    p.add_argument("--exit-on", type=_severity, metavar="SEVERITY",
                   help="exit once an alert this severe fires: info, warning or critical (default: never)")
    p.add_argument("--until-done", action="store_true",
                   help="close the dashboard when every run has ended (headless always does, unless --daemon)")
    if child:
        p.set_defaults(from_end=False, daemon=False)
    else:
        p.add_argument("--daemon", action="store_true", help="headless: never exit on a run's end; only on a signal")
    p.add_argument("--status-every", type=_positive, metavar="SECONDS", help="headless: a status line this often")
    p.add_argument("--alert-log", metavar="FILE", help="append every alert as a JSON line to FILE")
    p.add_argument("--on-alert", metavar="CMD", help="run CMD (no shell) per alert, the alert as JSON on stdin")
    p.add_argument("--state-file", metavar="FILE",
                   help="where --alert-log and --on-alert remember what they delivered, so a restart repeats "
                        "nothing (default: ALERT_LOG.state, or a file under $XDG_STATE_HOME/trainwatch)")
    p.add_argument("--no-state", action="store_true",
                   help="keep no delivery state: a restart delivers the backlog's alerts again")
    p.add_argument("--on-alert-severity", type=_severity, default=Severity.WARNING, metavar="SEVERITY",
                   help="lowest severity that runs the hook: info, warning or critical (default warning)")
    p.add_argument("--hook-timeout", type=_positive, default=10.0, metavar="SECONDS",
                   help="hook time limit (default 10)")
    p.add_argument("--no-fixes", action="store_true", help="headless text: leave out the suggested fixes")
    p.add_argument("--prometheus", type=prometheus.parse_address, metavar="[ADDR:]PORT",
                   help=f"serve /metrics for Prometheus on ADDR:PORT (default address {prometheus.DEFAULT_HOST})")
    p.add_argument("--remote-trainwatch", default="trainwatch", metavar="CMD",
                   help="remote paths (user@host:PATH): trainwatch's command on the node (default: trainwatch on "
                        "its PATH; without it, tail -F is used)")
    p.add_argument("--theme", metavar="NAME", help=f"TUI theme: {THEMES_HELP}")
    p.add_argument("--refresh", type=_positive, metavar="SECONDS", help="TUI refresh period (default 2)")


def run(args: argparse.Namespace) -> int:
    if args.daemon and args.until_done:
        raise UsageError("--daemon and --until-done contradict each other")
    from trainwatch.live.watcher import refuse_unfollowable

    refuse_unfollowable(args.paths, args.fmt)
    if not args.headless and not is_terminal():
        print("trainwatch: no terminal on stdin and stdout: alerts are printed as lines (as with --headless)",
              file=sys.stderr)
        args.headless = True
    if getattr(args, "baseline", None):
        if args.headless:
            if not Path(args.baseline).exists():
                raise SourceError(f"{args.baseline}: no such file or folder (--baseline)")
            print("trainwatch: --baseline is drawn by the dashboard; ignored with --headless", file=sys.stderr)
        else:
            args.baseline_run = load_baseline(args.baseline)  # a bad one is one line, exit 3, before any screen
    sinks = Sinks.from_args(args)  # a bad --alert-log or --on-alert is one line, before any screen
    exporter = None
    try:
        watcher = build_watcher(args)
        if getattr(args, "prometheus", None) is not None:  # bound before any screen: a port in use is one line, exit 3
            exporter = prometheus.serve(watcher, args.prometheus, lambda text: print(f"trainwatch: {text}",
                                                                                       file=sys.stderr))
        if not args.headless:
            return _tui(watcher, args, sinks)
        return Headless(watcher, args, sinks).run()
    finally:
        if exporter is not None:
            exporter.close()
        sinks.close()  # the watcher has stopped: no alert comes after this


def is_terminal() -> bool:
    """The dashboard needs a terminal both ways: to draw (stdout) and to read keys (stdin)."""
    try:
        return sys.stdin.isatty() and sys.stdout.isatty()
    except (AttributeError, ValueError):  # closed or replaced streams
        return False


def build_watcher(args: argparse.Namespace, cls: Any = None) -> Any:
    """The Watcher (or `cls`, a subclass: `trainwatch run`'s) over args.paths, with tail's options."""
    from trainwatch.live.watcher import Watcher

    cls = cls or Watcher
    from trainwatch.sources.gpu import ReplayBackend

    backend = ReplayBackend(args.gpu_replay, loop=True) if args.gpu_replay else None
    return cls(args.paths, fmt=args.fmt, preset=args.preset, configs=args.config, gpu=not args.no_gpu,
                   gpu_interval=args.gpu_interval, poll=args.poll, from_end=args.from_end, gpu_backend=backend,
                   poll_interval=args.poll_interval, params=args.params,
                   remote_trainwatch=getattr(args, "remote_trainwatch", "trainwatch"))


def load_baseline(path: str) -> Any:
    """The baseline run for the dashboard (`--baseline`), read and judged as `check` would, on its own
    engine: per metric, its whole run as (step, value) points, one per history bucket (bounded)."""
    from trainwatch.cli.check import judge
    from trainwatch.view.snapshot import Baseline

    judged, _ = judge([path], {}, None, None, None)
    curves: dict[str, tuple[tuple[int, float], ...]] = {}
    for run in judged:
        for series in run.engine.store:
            if series.name in curves:
                continue  # the first source that logged it (rank 0 of a folder of ranks)
            pts = tuple((b.last_step, b.mean if b.finite else b.last) for b in series.whole_run())
            if pts:
                curves[series.name] = pts
    return Baseline(Path(path).name or path, curves)


def _tui(watcher: Any, args: argparse.Namespace, sinks: Any = None) -> int:
    try:
        from trainwatch.tui.app import run_tui
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.startswith("trainwatch.tui"):
            print("trainwatch: error: the TUI is not available in this build; use --headless", file=sys.stderr)
            return EXIT_UNKNOWN
        raise
    rc = int(run_tui(watcher, args, sinks))
    # as headless, also after --exit-on closed it: the worst severity seen (acknowledged or not)
    return rc if rc else exit_code(watcher)


class Headless:
    """The headless loop: the printer and the shared sinks attached to the watcher, then wait for an end
    condition (every run ended, --exit-on, a signal)."""

    def __init__(self, watcher: Any, args: argparse.Namespace, sinks: Sinks | None = None) -> None:
        self.watcher = watcher
        self.args = args
        self.printer = Printer(sys.stdout, as_json=args.json, fixes=not args.no_fixes)
        self.sinks = sinks
        self.done = threading.Event()
        self.hopeless = False
        # Signals are only noted by the handler and acted on by the loop: a handler runs on the main thread
        # between two of its bytecodes, so taking a lock there (the printer's, an Event's) can deadlock
        # against the very code it interrupted. A deque's append and popleft take no Python-level lock.
        self.signals: collections.deque[int] = collections.deque()

    def run(self) -> int:
        self.watcher.add_info_listener(self._info)
        self.watcher.add_listener(self.printer.alert)  # printed first, then logged, hooked, exit-on checked
        if self.sinks is not None:
            self.sinks.attach(self.watcher, on_exit=lambda severity: self.done.set(), notice=self._info)
        old = {s: signal.signal(s, self._signal) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            self.watcher.start()
            self._wait()
        finally:
            self.watcher.stop()
            for s, h in old.items():
                signal.signal(s, h)
        if self.hopeless:
            return say_error("nothing left to follow: every path given was given up on (see above)",
                             as_json=self.args.json)
        return exit_code(self.watcher)

    def _wait(self) -> None:
        every = self.args.status_every
        next_status = time.monotonic() + every if every else None
        while not self.done.is_set():
            timeout = WAKE_S if next_status is None else max(0.0, min(WAKE_S, next_status - time.monotonic()))
            self.done.wait(timeout)
            self._take_signals()
            if self.done.is_set() or self._ended():
                break
            if next_status is not None and time.monotonic() >= next_status:
                self.printer.status(self._status())
                next_status = time.monotonic() + every

    def _ended(self) -> bool:
        """Whether following is over: every run ended (unless --daemon), or nothing is left to follow.
        `trainwatch run` ends on its child's exit instead."""
        if self.watcher.finished.is_set() and not self.args.daemon:
            return True
        if self.watcher.hopeless():
            self.hopeless = True
            return True
        return False

    def _info(self, text: str) -> None:
        self.printer.info(text, sys.stderr)

    def _signal(self, signum: int, frame: Any) -> None:
        self.signals.append(signum)

    def _take_signals(self) -> None:
        while self.signals:
            self._on_signal(self.signals.popleft())

    def _on_signal(self, signum: int) -> None:
        """SIGINT or SIGTERM, acted on outside the handler: following ends."""
        self.done.set()

    def _status(self) -> dict[str, Any]:
        w = self.watcher
        with w.lock:
            eng = w.engine
            sources = []
            for src in w.sources():
                st = eng.sources.get(src.name)
                sources.append({"source": src.name, "label": src.label, "format": st.format if st else "",
                                "step": st.step if st else None, "lines": st.lines if st else 0,
                                "ended": bool(st and st.ended)})
            firing = [a for a in eng.alerts() if a.state is AlertState.FIRING]
            worst = eng.worst()
        return {"time": stamp(time.time()), "sources": sources, "firing": len(firing),
                "worst": worst.label if worst is not None else None, "gpus": w.gpu_devices()}


def exit_code(watcher: Any) -> int:
    """The worst severity seen (0/1/2); 3 when nothing was understood from any log (missing, binary,
    a wrong --format), since nothing read is no verdict. The TUI's badge counts it the same way."""
    with watcher.lock:
        eng = watcher.engine
        worst = eng.worst()
        read = any(s.count for s in eng.store if s.source != GPU_SOURCE) or \
            any(st.events for name, st in eng.sources.items() if name != GPU_SOURCE)
    if worst is not None:
        return int(worst)
    return 0 if read else EXIT_UNKNOWN


def _positive(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not v > 0:
        raise argparse.ArgumentTypeError("must be greater than 0")
    return v


def _severity(text: str) -> Severity:
    try:
        return Severity.parse(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


_SUFFIX = {"k": 1e3, "m": 1e6, "b": 1e9, "g": 1e9, "t": 1e12}


def _model_size(text: str) -> float:
    t = text.strip().lower()
    mult = _SUFFIX.get(t[-1:], 1.0)
    if t[-1:] in _SUFFIX:
        t = t[:-1]
    try:
        v = float(t) * mult
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a parameter count like 7e9 or 7B, got {text!r}") from None
    if v <= 0:
        raise argparse.ArgumentTypeError("must be greater than 0")
    return v
