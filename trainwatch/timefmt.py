"""Lengths of time as people read them: one home for the two ways trainwatch writes a duration."""

from __future__ import annotations

import math


def span(seconds: float) -> str:
    """A duration inside a sentence (a finding's message): 45s, 3m 05s, 2h 05m, 3d 04h."""
    s = int(round(seconds))
    if s < 90:
        return f"{s}s"
    if s < 5400:
        return f"{s // 60}m {s % 60:02d}s"
    if s < 2 * 86400:
        return f"{s // 3600}h {s % 3600 // 60:02d}m"
    return f"{s // 86400}d {s % 86400 // 3600:02d}h"


def clock(seconds: float | None) -> str:
    """A duration on a clock face (the dashboard's elapsed and ETA): 1:02:05, 2d03:00:00; — when unknown."""
    if seconds is None or not math.isfinite(seconds) or seconds < 0:
        return "—"
    d, s = divmod(int(seconds), 86400)
    h, s = divmod(s, 3600)
    m, s = divmod(s, 60)
    return f"{d}d{h:02d}:{m:02d}:{s:02d}" if d else f"{h}:{m:02d}:{s:02d}"
