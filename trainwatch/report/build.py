"""A report of judged runs: the page data (runs, curves, findings, differences) and its rendering."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from trainwatch.engine import Engine
from trainwatch.errors import SourceError
from trainwatch.report import compare, data, html, markdown

ALIGNS = ("step", "epoch", "tokens", "time")


class JudgedRun(Protocol):
    """One run as check judged it (trainwatch.cli.check.Judged)."""

    engine: Engine
    doc: dict[str, Any]
    files: dict[str, Path]


def page_data(runs: Sequence[JudgedRun], align: str = "step", strict: bool = True) -> dict[str, Any]:
    """Everything the page draws. Several runs are compared: each after the first against the first;
    `strict`: runs the user named apart must share a metric (runs found in one folder need not)."""
    labels = data.labels([[s["path"] for s in r.doc["sources"]] for r in runs])
    n = sum(1 for r in runs for s in r.engine.store if data.group_of(s.name))
    columns = data.columns_for(n)
    pages = [data.run_page(r.engine, r.doc, r.files, label, align, columns) for r, label in zip(runs, labels)]
    if align != "step":
        missing = [label for r, label in zip(runs, labels) if not _has(r, align)]
        if missing:
            raise SourceError(f"{', '.join(missing)}: no {align} was logged, so the runs cannot be aligned by it",
                              hint="align by step (the default)")
    for r, p in zip(runs, pages):
        _place_findings(r, p, align)
    out: dict[str, Any] = {"align": align, "runs": pages, "diff": []}
    if len(runs) > 1:
        by_name = [_main_curves(r) for r in runs]
        if strict:
            compare.check_comparable(labels, [{k: v for k, v in c.items() if data.group_of(k)} for c in by_name])
        out["diff"] = compare.in_words(labels, [r.doc for r in runs], by_name)
    return out


def _has(run: JudgedRun, metric: str) -> bool:
    if metric == "time":
        return any(data.time_curve(run.engine, s["path"]) is not None for s in run.doc["sources"])
    return any(s.name == metric for s in run.engine.store)


def _main_curves(run: JudgedRun) -> dict[str, data.Curve]:
    """A run's curves by metric name (its first source's, where sources share a name)."""
    out: dict[str, data.Curve] = {}
    for src in run.doc["sources"]:
        for c in data.curves(run.engine, src["path"]):
            out.setdefault(c.name, c)
    return out


def _place_findings(run: JudgedRun, page: dict[str, Any], align: str) -> None:
    """Each finding's x on the charts (its step, or the epoch or tokens at that step) and the chart its
    marker goes on: the one that draws its subject, else the first."""
    order = [g for g in (t for t, _ in data.GROUPS) if g in page["charts"]] + \
        [g for g in page["charts"] if g not in dict(data.GROUPS)]
    by: data.Curve | None = None
    if align == "time":
        by = next((c for c in (data.time_curve(run.engine, s["path"]) for s in run.doc["sources"]) if c), None)
    elif align != "step":
        by = _main_curves(run).get(align)
    homes = []
    for f in page["doc"]["findings"]:
        step = f.get("step")
        at: float | None = float(step) if isinstance(step, (int, float)) else None
        if at is not None and by is not None:
            fin = np.isfinite(by.y)
            at = float(np.interp(at, by.x[fin], by.y[fin])) if fin.any() else None
        f["at"] = at
        subject = str(f.get("subject") or "")
        group = data.group_of(subject) if subject else None
        names = {c["name"] for c in page["charts"].get(group or "", [])}
        homes.append(group if group in page["charts"] and subject in names else (order[0] if order else None))
    page["homes"] = homes


def render(runs: Sequence[JudgedRun], fmt: str = "html", align: str = "step", strict: bool = True) -> str:
    """The report as text: "html" (one self-contained page) or "md" (a Markdown summary); `strict` as
    for `page_data`."""
    if fmt == "md":
        labels = data.labels([[s["path"] for s in r.doc["sources"]] for r in runs])
        diff = []
        if len(runs) > 1:
            by_name = [_main_curves(r) for r in runs]
            if strict:
                compare.check_comparable(labels, [{k: v for k, v in c.items() if data.group_of(k)}
                                                  for c in by_name])
            diff = compare.in_words(labels, [r.doc for r in runs], by_name)
        return markdown.summary(labels, [r.doc for r in runs], diff)
    d = page_data(runs, align, strict)
    title = "trainwatch: " + " vs ".join(p["label"] for p in d["runs"])
    return html.page(d, title)


def write(text: str, out: Path) -> None:
    """`text` into `out` whole or not at all: written beside it, then renamed over it."""
    folder = out.parent if str(out.parent) else Path(".")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".tmp", dir=folder)
    except OSError as exc:
        raise SourceError(f"{out}: cannot write the report there: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        mask = os.umask(0)
        os.umask(mask)
        os.chmod(tmp, 0o666 & ~mask)  # as an ordinary new file (mkstemp makes it private)
        os.replace(tmp, out)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise SourceError(f"{out}: cannot write the report there: {exc.strerror or exc}") from None
