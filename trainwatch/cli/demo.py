"""`trainwatch demo`: replays a bundled real run into a temporary file and watches it, so a first-time
user sees curves move and an alert fire with its fixes within half a minute.

The bundled log (trainwatch/data/demo/hf_high_lr.log) is a real HF Trainer run on a tiny model with
the learning rate set far too high: the loss spikes a few steps in and the gradient norm goes Inf.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
from importlib import resources
from pathlib import Path

from trainwatch.errors import SourceError, UsageError

DEMO_LOG = "data/demo/hf_high_lr.log"
HEAD_LINES = 2  # written before watching starts, so the format is detected at once


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("demo", help="replay a bundled real run with an alert, in the TUI",
                       description="Replays a real training log (learning rate too high) at a readable pace "
                                   "into a temporary file and opens the TUI on it.")
    p.add_argument("--headless", action="store_true",
                   help="print alerts as they fire, in tail --headless's line format, instead of opening the TUI")
    p.add_argument("--interval", type=float, default=0.4, metavar="SECONDS",
                   help="seconds between replayed lines (default 0.4)")
    p.add_argument("--log", metavar="FILE", help="replay this log instead of the bundled one")
    p.add_argument("--theme", metavar="NAME", help="TUI theme: trainwatch-dark, trainwatch-light, trainwatch-contrast")
    p.add_argument("--refresh", type=float, default=0.5, metavar="SECONDS", help="TUI redraw interval")
    p.set_defaults(run=run)


def demo_lines(path: str | None = None) -> list[str]:
    if path:
        try:
            text = Path(path).read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            raise SourceError(f"{path}: cannot read: {exc.strerror}") from None
    else:
        text = resources.files("trainwatch").joinpath(DEMO_LOG).read_text(encoding="utf-8")
    return text.splitlines(keepends=True)


class Replayer(threading.Thread):
    """Appends the lines to `target` one by one; `done` is set when all are written or on stop()."""

    def __init__(self, lines: list[str], target: Path, interval: float) -> None:
        super().__init__(name="trainwatch-demo-replay", daemon=True)
        self.lines, self.target, self.interval = lines, target, interval
        self.done = threading.Event()
        self._stop = threading.Event()

    def run(self) -> None:
        try:
            with self.target.open("a", encoding="utf-8") as f:
                for line in self.lines:
                    if self._stop.wait(self.interval):
                        return
                    f.write(line)
                    f.flush()
        finally:
            self.done.set()

    def stop(self) -> None:
        self._stop.set()


def run(args: argparse.Namespace) -> int:
    if args.interval < 0:
        raise UsageError("--interval must be zero or more")
    from trainwatch.cli.tail import exit_code, is_terminal
    from trainwatch.live.watcher import Watcher

    lines = demo_lines(args.log)
    with tempfile.TemporaryDirectory(prefix="trainwatch-demo-") as tmp:
        target = Path(tmp) / "train.log"
        target.write_text("".join(lines[:HEAD_LINES]), encoding="utf-8")
        replay = Replayer(lines[HEAD_LINES:], target, args.interval)
        watcher = Watcher([str(target)], gpu=False)
        watcher.info_lines.append("demo: GPU telemetry is off; this replays a recorded run")
        try:
            replay.start()
            if not args.headless and not is_terminal():
                print("trainwatch: no terminal on stdin and stdout: alerts are printed as lines (as with --headless)",
                      file=sys.stderr)
                args.headless = True
            if args.headless:
                return _headless(watcher, replay)
            from trainwatch.tui.app import run_tui

            rc = run_tui(watcher, args)
            return rc if rc else exit_code(watcher)
        finally:
            replay.stop()
            watcher.stop()


def _headless(watcher: object, replay: Replayer) -> int:
    """Prints each alert as `tail --headless` does (the same Printer, the same line format); exit code
    from the worst severity."""
    from trainwatch.sinks.printer import Printer

    printer = Printer(sys.stdout)
    watcher.add_listener(printer.alert)  # type: ignore[attr-defined]
    watcher.start()  # type: ignore[attr-defined]
    replay.done.wait()
    watcher.stop()  # type: ignore[attr-defined]
    worst = watcher.engine.worst()  # type: ignore[attr-defined]
    print(f"demo finished: {'healthy' if worst is None else worst.label}", file=sys.stderr)
    return int(worst) if worst is not None else 0
