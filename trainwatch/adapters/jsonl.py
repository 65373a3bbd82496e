"""JSON lines: one record per line, step and time under their common names, nested keys joined by '/'."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from typing import Any

from trainwatch.adapters.base import Adapter
from trainwatch.model import Record, Sample

try:  # optional speed-up; it rejects NaN literals, so json stays the fallback
    import orjson

    _fast_loads: Any = orjson.loads
except ImportError:  # pragma: no cover - depends on the environment
    _fast_loads = None

STEP_KEYS = ("step", "global_step", "iter", "iteration", "_step", "trainer/global_step", "current_steps",
             "train/global_step", "num_updates", "update")
TIME_KEYS = ("time", "timestamp", "_timestamp", "wall_time", "walltime")
MAX_DEPTH = 6


def _loads(text: str) -> Any:
    if _fast_loads is not None:
        try:
            return _fast_loads(text)
        except ValueError:
            pass
    return json.loads(text)


def _flatten(obj: dict[str, Any], prefix: str, out: dict[str, Any], depth: int = 0) -> None:
    for k, v in obj.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            if depth < MAX_DEPTH:
                _flatten(v, key + "/", out, depth + 1)
        else:
            out[key] = v


def _number(v: Any) -> float | None:
    t = type(v)
    if t is float or t is int:
        return float(v)
    if t is str and v and len(v) < 40:
        try:
            return float(v)
        except ValueError:
            return None
    return None


class JsonLinesAdapter(Adapter):
    name = "jsonl"
    description = "JSON lines: one metrics object per line (step/time keys by common names, nested keys with '/')"
    example = '{"step": 10, "loss": 2.31, "lr": 0.0003, "train": {"grad_norm": 1.2}}'

    @classmethod
    def score(cls, head: str, path: str) -> float:
        lines = [ln for ln in head.split("\n")[:-1] if ln.strip()][:200]  # the last one may be cut off
        if not lines:
            lines = [ln for ln in head.split("\n") if ln.strip()][:1]
        if not lines:
            return 0.0
        good = 0
        for ln in lines:
            s = ln.strip()
            if not s.startswith("{"):
                continue
            try:
                obj = _loads(s)
            except (ValueError, RecursionError):
                continue
            if isinstance(obj, dict) and any(_number(v) is not None for v in obj.values() if type(v) is not bool):
                good += 1
        if not good:
            return 0.0
        frac = good / len(lines)
        bonus = 0.05 if path.endswith((".jsonl", ".ndjson")) else 0.0
        return min(0.95, 0.35 + 0.55 * frac + bonus)

    def parse(self, line: str, lineno: int) -> Iterable[Record]:
        s = line.strip()
        if not s.startswith("{"):
            return ()
        try:
            obj = _loads(s)
        except (ValueError, RecursionError):
            return ()
        if not isinstance(obj, dict):
            return ()
        flat: dict[str, Any] = {}
        _flatten(obj, "", flat)
        step: int | None = None
        for k in STEP_KEYS:
            v = flat.get(k)
            if v is not None and type(v) is not bool:
                n = _number(v)
                if n is not None and math.isfinite(n):
                    step = int(n)
                    break
        when: float | None = None
        time_key = ""
        for k in TIME_KEYS:
            v = flat.get(k)
            if v is not None and type(v) is not bool:
                n = _number(v)
                if n is not None and math.isfinite(n) and n > 1e8:  # smaller: a duration, kept as a metric
                    when = n / 1000.0 if n > 1e11 else n  # milliseconds since the epoch
                    time_key = k
                    break
        out = []
        for k, v in flat.items():
            if type(v) is bool or k in STEP_KEYS or k == time_key:
                continue
            n = _number(v)
            if n is not None:
                out.append(Sample(k, n, step, when, self.source, lineno, False))
        return out
