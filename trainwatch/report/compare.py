"""The difference between runs in words: what one run had that another did not, and where their main
curves stand at a step both reached. The first run is the one the others are compared with."""

from __future__ import annotations

from typing import Any

import numpy as np

from trainwatch.errors import SourceError
from trainwatch.report.data import Curve

COMPARED = ("eval_loss", "loss", "eval_accuracy", "accuracy", "reward")
"""Metrics whose values at a shared step are quoted, the first two both present first."""


def roots(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """A run's incidents: warning or critical findings that are not part of another (echo_of empty)."""
    return [f for f in doc["findings"] if f["severity"] in ("critical", "warning") and not f.get("echo_of")]


def _fmt(v: float) -> str:
    return f"{v:.3g}" if v != 0 and (abs(v) < 1e-3 or abs(v) >= 1e5) else f"{v:.4g}"


def in_words(labels: list[str], docs: list[dict[str, Any]], runs_curves: list[dict[str, Curve]]) -> list[str]:
    """Sentences saying how each run after the first differs from the first."""
    base, base_doc, base_curves = labels[0], docs[0], runs_curves[0]
    out = []
    for label, doc, cs in zip(labels[1:], docs[1:], runs_curves[1:]):
        if doc["status"] != base_doc["status"]:
            out.append(f"status: {base} {base_doc['status']}, {label} {doc['status']}")
        mine = {f["id"]: f for f in roots(doc)}
        theirs = {f["id"]: f for f in roots(base_doc)}
        for rule, f in theirs.items():
            if rule not in mine:
                out.append(f"{label}: no {f['title'].lower()} ({base}: {f['id']} at step {f.get('step')})")
        for rule, f in mine.items():
            if rule not in theirs:
                out.append(f"{label}: new {f['title'].lower()} at step {f.get('step')} ({f['id']}; not in {base})")
            elif f.get("step") != theirs[rule].get("step"):
                out.append(f"{f['id']}: step {theirs[rule].get('step')} in {base}, step {f.get('step')} in {label}")
        out.extend(_values(base, label, base_curves, cs))
    return out


def _values(base: str, label: str, a: dict[str, Curve], b: dict[str, Curve]) -> list[str]:
    out = []
    for name in COMPARED:
        if name not in a or name not in b:
            continue
        ca, cb = a[name], b[name]
        fa, fb = np.isfinite(ca.y), np.isfinite(cb.y)
        if not fa.any() or not fb.any():
            continue
        step = min(ca.x[fa][-1], cb.x[fb][-1])  # the last step both reached with a finite value
        va, vb = _at(ca, step), _at(cb, step)
        if va is None or vb is None:
            continue
        out.append(f"{name} at step {int(step) if float(step).is_integer() else _fmt(step)}: "
                   f"{_fmt(va)} ({base}) vs {_fmt(vb)} ({label})")
    return out


def _at(c: Curve, step: float) -> float | None:
    at = int(np.searchsorted(c.x, step, side="right"))
    ys = c.y[:at]
    fin = np.flatnonzero(np.isfinite(ys))
    return float(ys[fin[-1]]) if len(fin) else None


def check_comparable(labels: list[str], runs_curves: list[dict[str, Curve]]) -> None:
    """Runs that share no metric have nothing to draw together: an error, not an empty page. A run with
    no curve at all (a console log of errors and notices only) is still reported beside the others."""
    drawn = [(label, cs) for label, cs in zip(labels, runs_curves) if cs]
    if len(drawn) < 2:
        return
    shared = set(drawn[0][1])
    for _, cs in drawn[1:]:
        shared &= set(cs)
    if not shared:
        labels = [label for label, _ in drawn]
        raise SourceError(f"{', '.join(labels)}: these runs have no metric in common to compare",
                          hint="compare runs of the same kind, or report each on its own")
