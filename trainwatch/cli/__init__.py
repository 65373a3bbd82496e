"""The command line: one module per subcommand, each with `add_parser(subparsers)` and `run(args) -> int`.

Exit codes follow the monitoring-plugin convention: 0 healthy, 1 warning, 2 critical, 3 unknown
(unreadable input, no format recognised, bad config or usage). argparse's own exit 2 for usage
errors is replaced by 3, and every TrainwatchError becomes one line on stderr, or with --json one
JSON object on stdout (`say_error`).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping
from importlib import import_module
from typing import Any


def _quiet_blas() -> None:
    """numpy loads OpenBLAS, which starts a thread per core at import (some 50 ms of a command's start
    on a small machine) and spins them after any call: trainwatch makes no BLAS call, so the CLI loads
    it with one thread. The variable is read only then, and is taken away again at once, so a training
    run that `trainwatch run` starts, a hook or ssh gets the environment the user gave."""
    if "numpy" in sys.modules or "OPENBLAS_NUM_THREADS" in os.environ:
        return
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    try:
        import numpy  # noqa: F401
    finally:
        del os.environ["OPENBLAS_NUM_THREADS"]


_quiet_blas()

from trainwatch import __version__  # noqa: E402
from trainwatch.errors import TrainwatchError, UsageError  # noqa: E402

EXIT_OK, EXIT_WARNING, EXIT_CRITICAL, EXIT_UNKNOWN = 0, 1, 2, 3
COMMANDS = ("check", "report", "tail", "run", "stream", "formats", "rules", "gpus", "demo")


class _Parser(argparse.ArgumentParser):
    """argparse with trainwatch's one-line errors: "trainwatch: error: check: argument --format: ...",
    the subcommand named once, and its own --help as the hint."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.commands: Mapping[str, argparse.ArgumentParser] = {}  # the top level's subcommand parsers

    def error(self, message: str) -> None:  # type: ignore[override]
        command = self.prog.removeprefix("trainwatch").strip()
        raise UsageError(f"{command}: {message}" if command else message, hint=f"see '{self.prog} --help'")


def build_parser() -> _Parser:
    parser = _Parser(prog="trainwatch", description="Watch a training run and say what is going wrong.")
    parser.add_argument("--version", action="version", version=f"trainwatch {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    parser.commands = sub.choices
    for name in COMMANDS:
        try:
            module = import_module(f"trainwatch.cli.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"trainwatch.cli.{name}":
                continue  # a command not built yet
            raise
        module.add_parser(sub)
    return parser


def say_error(message: str, code: int = EXIT_UNKNOWN, *, as_json: bool = False) -> int:
    """An error the command ends on: one line on stderr, or with --json one JSON object on stdout
    (`{"error": ..., "exit_code": N}`), so a script that parses the output never meets text. Returns
    `code`."""
    if as_json:
        import json

        from trainwatch.textsafe import plain

        try:
            print(json.dumps({"error": plain(message), "exit_code": code}), flush=True)
        except BrokenPipeError:
            pass
    else:
        print(f"trainwatch: error: {message}", file=sys.stderr)
    return code


def _json_asked(argv: list[str] | None, args: argparse.Namespace | None) -> bool:
    """Whether --json was given: from the parsed arguments, or, when parsing itself failed, from the
    words before `--` (the training command's own words after it are not trainwatch's)."""
    if args is not None and hasattr(args, "json"):
        return bool(args.json)
    words = sys.argv[1:] if argv is None else argv
    if "--" in words:
        words = words[:words.index("--")]
    return "--json" in words


def main(argv: list[str] | None = None) -> int:
    args: argparse.Namespace | None = None
    try:
        parser = build_parser()
        args, extra = parser.parse_known_args(argv)
        if extra:  # said by the subcommand's parser, so the hint is its --help, not the top level's
            owner = parser.commands.get(getattr(args, "command", None) or "", parser)
            owner.error(f"unrecognized arguments: {' '.join(extra)}")
        if not getattr(args, "command", None):
            parser.print_help(sys.stderr)
            return EXIT_UNKNOWN
        return int(args.run(args))
    except TrainwatchError as exc:
        return say_error(str(exc), as_json=_json_asked(argv, args))
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return EXIT_OK
