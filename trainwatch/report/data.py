"""What a report page holds: each run's findings (check's document), its curves read from the engine's
store, and the log lines around each finding, as one JSON-ready dictionary."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from trainwatch.engine import Engine
from trainwatch.report.downsample import COLUMNS, minmax
from trainwatch.textsafe import plain

POINT_BUDGET = 200_000
"""Points a page holds in all, at most about: a log of hundreds of metrics gets fewer columns per curve
(never under MIN_COLUMNS), so the page stays a few MB whatever the log's width and length."""
MIN_COLUMNS = 150
CONTEXT_LINES = 6  # log lines shown before and after a finding's line
MAX_LINE_CHARS = 400  # a longer log line is cut: a page quotes, it does not copy

RANK = re.compile(r"(?:[/_.\-\[ ]?(?:rank|rk)[ _]?(\d+)\]?)", re.I)
GROUPS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("Loss", re.compile(r"loss|perplex|ppl", re.I)),
    ("Learning rate", re.compile(r"(^|[^a-z])lr([^a-z]|$)|learning_rate", re.I)),
    ("Gradient norm", re.compile(r"grad", re.I)),
    ("GPU", re.compile(r"gpu|mem|util|power|temp|mfu", re.I)),
    ("Quality", re.compile(r"acc|reward|map|err|bleu|rouge|f1|wer|score|kl|entropy", re.I)),
)
SKIPPED = re.compile(r"^(epoch|step|global_step|iter|time|timestamp|tokens?)$", re.I)
"""Counters a chart of their own would only draw as a straight rising line."""


@dataclass
class Curve:
    """One metric of one run, cut to at most COLUMNS spans: x is the step, y NaN where the log gave NaN/Inf."""

    name: str
    x: np.ndarray
    y: np.ndarray


def group_of(name: str) -> str | None:
    """The chart a metric is drawn on; None for a counter."""
    if SKIPPED.match(name):
        return None
    for title, pattern in GROUPS:
        if pattern.search(name):
            return title
    return "Other"


def curves(engine: Engine, source: str, columns: int = COLUMNS) -> list[Curve]:
    """Every metric the store holds for `source`, from its whole-run buckets (min, max and non-finite
    counts survive there, whatever the run's length)."""
    out = []
    for series in engine.store:
        if series.source != source:
            continue
        buckets = series.whole_run()
        if not buckets:
            continue
        x = np.fromiter((b.first_step for b in buckets), dtype=np.float64, count=len(buckets))
        last = np.fromiter((b.last_step for b in buckets), dtype=np.float64, count=len(buckets))
        lo = np.fromiter((b.minimum for b in buckets), dtype=np.float64, count=len(buckets))
        hi = np.fromiter((b.maximum for b in buckets), dtype=np.float64, count=len(buckets))
        bad = np.fromiter((b.nonfinite > 0 for b in buckets), dtype=bool, count=len(buckets))
        if len(x) and not bool((x[1:] >= x[:-1]).all()):  # steps that restart (a resume): in log order
            x = np.arange(len(x), dtype=np.float64) if not bool((last >= x).all()) else np.maximum.accumulate(x)
        xs, ys = minmax(x, lo, hi, bad, columns)
        out.append(Curve(series.name, xs, ys))
    return out


def time_curve(engine: Engine, source: str) -> Curve | None:
    """Seconds since the run's first printed time, by step (`--align time`): read off the metric of
    `source` that printed times on the most of its buckets; None when no row printed a time."""
    best: tuple[np.ndarray, np.ndarray] | None = None
    for series in engine.store:
        if series.source != source:
            continue
        buckets = series.whole_run()
        t = np.fromiter((b.first_time for b in buckets), dtype=np.float64, count=len(buckets))
        known = t == t
        if int(known.sum()) >= 2 and (best is None or int(known.sum()) > len(best[0])):
            x = np.fromiter((b.first_step for b in buckets), dtype=np.float64, count=len(buckets))
            best = (x[known], t[known])
    if best is None:
        return None
    x, t = best
    order = np.argsort(x, kind="stable")
    return Curve("time", x[order], t[order] - float(t.min()))


def value_at(curve: Curve, step: float) -> float | None:
    """The curve's last finite value at or before `step`, None when there is none."""
    at = int(np.searchsorted(curve.x, step, side="right"))
    ys = curve.y[:at]
    fin = np.flatnonzero(np.isfinite(ys))
    return float(ys[fin[-1]]) if len(fin) else None


def rescale(curve: Curve, by: Curve) -> Curve:
    """`curve` on the x of another metric (epoch, tokens, time), read off `by` at each step."""
    fin = np.isfinite(by.y)
    if not fin.any():
        return Curve(curve.name, curve.x[:0], curve.y[:0])
    return Curve(curve.name, np.interp(curve.x, by.x[fin], by.y[fin]), curve.y)


def log_context(files: dict[str, Path], wanted: Iterable[tuple[str, int]]) -> dict[str, dict[int, str]]:
    """The lines around each (source, line) wanted, by source and line number (1-based), read in one pass
    per file that stops after the last line needed. Text is made printable and cut; the page shows it as
    text, never as markup."""
    need: dict[str, set[int]] = {}
    for source, line in wanted:
        if line and line > 0:
            need.setdefault(source, set()).update(range(max(1, line - CONTEXT_LINES), line + CONTEXT_LINES + 1))
    out: dict[str, dict[int, str]] = {}
    for source, lines in need.items():
        path = files.get(source)
        if path is None or not path.is_file():
            continue
        top = max(lines)
        got: dict[int, str] = {}
        try:
            with open(path, "rb") as f:
                for number, raw in enumerate(f, 1):
                    if number in lines:
                        got[number] = plain(raw[:MAX_LINE_CHARS * 4].decode("utf-8", "replace"))[:MAX_LINE_CHARS]
                    if number >= top:
                        break
        except OSError:
            continue
        out[source] = got
    return out


def finite_or_none(values: np.ndarray) -> list[float | None]:
    """Numbers for JSON: NaN and Inf become null (a gap), with as few digits as keep the curve's shape."""
    return [None if not math.isfinite(v) else float(f"{v:.6g}") for v in values.tolist()]


def columns_for(curves_in_page: int) -> int:
    """Columns per curve so the page's points stay within POINT_BUDGET (each column is up to 3 points)."""
    return max(MIN_COLUMNS, min(COLUMNS, POINT_BUDGET // max(1, 3 * curves_in_page)))


def run_page(engine: Engine, doc: dict[str, Any], files: dict[str, Path], label: str,
             align: str = "step", columns: int = COLUMNS) -> dict[str, Any]:
    """One run as the page draws it: its label, check's document, curves by chart, and log context."""
    charts: dict[str, list[dict[str, Any]]] = {}
    nonfinite: list[dict[str, Any]] = []
    for src in doc["sources"]:
        cs = curves(engine, src["path"], columns)
        by = axis_of(engine, src["path"], cs, align)
        for c in cs:
            group = group_of(c.name)
            if group is None:
                continue
            if by is not None:
                c = rescale(c, by)
            name = c.name if len(doc["sources"]) == 1 else f"{c.name} ({Path(src['path']).name})"
            bad = np.flatnonzero(np.isnan(c.y))
            if len(bad):
                nonfinite.append({"metric": name, "x": finite_or_none(c.x[bad][:200])})
            rank = _rank(c.name)
            if rank is None and len(doc["sources"]) > 1:
                rank = _rank(Path(src["path"]).name)  # one file per rank (rank0.log, rank1.log)
            charts.setdefault(group, []).append({"name": name, "rank": rank,
                                                 "x": finite_or_none(c.x), "y": finite_or_none(c.y)})
    context = log_context(files, ((f["source"], f.get("line") or 0) for f in doc["findings"]))
    findings = []
    for f in doc["findings"]:
        lines = context.get(f["source"], {})
        line = f.get("line") or 0
        around = [[n, lines[n]] for n in range(max(1, line - CONTEXT_LINES), line + CONTEXT_LINES + 1)
                  if n in lines] if line else []
        findings.append({**f, "context": around})
    return {"label": label, "doc": {**doc, "findings": findings}, "charts": charts, "nonfinite": nonfinite,
            "align": align}


def axis_of(engine: Engine, source: str, cs: list[Curve], align: str) -> Curve | None:
    """The curve that maps a step of `source` onto the x of `align` (None for step itself)."""
    if align == "step":
        return None
    if align == "time":
        return time_curve(engine, source)
    return next((c for c in cs if c.name == align), None)


def _rank(name: str) -> int | None:
    m = RANK.search(name)
    return int(m.group(1)) if m else None


def labels(paths: list[list[str]]) -> list[str]:
    """Short names for runs: the file name of each run's first source, with its folder when two runs share it."""
    names = [Path(p[0]).name if p else "run" for p in paths]
    if len(set(names)) == len(names):
        return names
    return [str(Path(*Path(p[0]).parts[-2:])) if p else "run" for p in paths]
