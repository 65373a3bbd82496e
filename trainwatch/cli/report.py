"""`trainwatch report`: a page (or Markdown) to send after a run, or two runs compared side by side."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from trainwatch.cli.check import format_name, judge, with_local_paths


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("report", help="write a self-contained HTML report (or Markdown) of runs",
                       description="Judge the logs as `check` does and write what it found, with the curves, "
                                   "as one HTML file that opens offline; two or more runs are compared.")
    p.add_argument("paths", nargs="+", metavar="PATH",
                   help="log files, globs or directories (user@host:PATH on another machine); "
                        "several runs are compared, the first with each other")
    p.add_argument("-o", "--output", metavar="FILE", help="where to write (default: Markdown on stdout)")
    p.add_argument("--format", dest="out_format", choices=("html", "md"),
                   help="html (default with -o FILE) or md, a summary for a PR comment")
    p.add_argument("--align", choices=("step", "epoch", "tokens", "time"), default="step",
                   help="x axis the runs are drawn and compared on: time is seconds since each run's first "
                        "printed time (default: step)")
    p.add_argument("--log-format", dest="fmt", type=format_name, metavar="NAME",
                   help="force the logs' format (see 'trainwatch formats'; default: detected per file)")
    p.add_argument("--preset", metavar="NAME", help="as for check (default: chosen from the task the logs show)")
    p.add_argument("--config", action="append", metavar="FILE", help="YAML overrides (repeatable)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from trainwatch.errors import UsageError

    fmt = args.out_format or ("html" if args.output else "md")
    if fmt == "html" and not args.output:
        raise UsageError("report: an HTML report needs -o FILE", hint="or --format md for Markdown on stdout")
    return with_local_paths(args.paths, lambda paths, names: _report(args, paths, names, fmt))


def _report(args: argparse.Namespace, paths: list[str], names: dict[str, str], fmt: str) -> int:
    from trainwatch.report import build
    from trainwatch.sinks.report import combine

    judged, _skipped = judge(paths, names, args.fmt, args.preset, args.config)
    text = build.render(judged, fmt, args.align, strict=len(args.paths) > 1)  # runs named apart must compare
    if args.output:
        build.write(text, Path(args.output))
        print(f"trainwatch: report written to {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return int(combine([j.doc for j in judged])["exit_code"])  # check's exit code for the same logs
