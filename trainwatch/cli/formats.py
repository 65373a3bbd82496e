"""`trainwatch formats`: the registered log formats, or how each scores a given file."""

from __future__ import annotations

import argparse
import sys

from trainwatch import adapters
from trainwatch.cli import EXIT_OK, EXIT_UNKNOWN
from trainwatch.runner import FALLBACK_FORMAT
from trainwatch.sources.files import discover, looks_binary, read_sample
from trainwatch.textsafe import plain


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("formats", help="list log formats, or detect the format of files",
                       description="List the registered log formats with an example line each.")
    p.add_argument("--detect", nargs="+", metavar="PATH", help="show how every format scores these files")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    out = sys.stdout
    if not args.detect:
        for name, cls in adapters.registry().items():
            example = cls.example.replace("\n", "\n" + " " * 20)  # a header-and-row example stays indented
            out.write(f"{name:14} {cls.description}\n{'':14} e.g. {example}\n")
        return EXIT_OK
    worst = EXIT_OK
    for path in discover(args.detect):
        head = read_sample(path)
        if not head or looks_binary(head):
            out.write(f"{path}: {'empty' if not head else 'binary'}, no format\n")
            worst = EXIT_UNKNOWN
            continue
        ranked = adapters.scores(head.decode("utf-8", "replace"), str(path))
        best = ranked[0] if ranked and ranked[0][0] >= adapters.DETECT_THRESHOLD else None
        verdict = best[1] if best else f"no format recognised (read as {FALLBACK_FORMAT}: errors only)"
        out.write(f"{plain(str(path))}: {verdict}\n")
        size = path.stat().st_size
        if len(head) < size:
            out.write(f"  scored on {_size(len(head))} sampled from {_size(size)} (head, tail and pieces between)\n")
        for score, name in ranked:
            out.write(f"  {score:4.2f}  {name}\n")
        if best is None:
            worst = EXIT_UNKNOWN
    return worst


def _size(n: int) -> str:
    return f"{n / 1024:.0f} KiB" if n >= 1024 else f"{n} B"
