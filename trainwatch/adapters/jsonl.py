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
STEP_SET = frozenset(STEP_KEYS)
TIME_SET = frozenset(TIME_KEYS)
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
        if line[:1] != "{":
            line = line.strip()
            if line[:1] != "{":
                return ()
        try:
            obj = _loads(line)
        except (ValueError, RecursionError):
            return ()
        if type(obj) is not dict:
            return ()
        step: int | None = None
        when: float | None = None
        pairs: list[tuple[str, float]] = []
        for k, v in obj.items():
            t = type(v)
            if t is float or t is int:
                pass
            elif t is dict:
                flat: dict[str, Any] = {}
                _flatten(v, k + "/", flat)
                for fk, fv in flat.items():
                    n = _number(fv)
                    if n is not None:
                        if fk in STEP_SET and step is None and math.isfinite(n):
                            step = int(n)
                        else:
                            pairs.append((fk, n))
                continue
            elif t is str:
                v = _number(v)
                if v is None:
                    continue
            else:
                continue  # bools, lists, null
            if k in STEP_SET:
                if step is None and math.isfinite(v):
                    step = int(v)
                    continue
            elif k in TIME_SET and when is None and v > 1e8 and math.isfinite(v):
                when = v / 1000.0 if v > 1e11 else v  # milliseconds since the epoch
                continue
            pairs.append((k, float(v)))
        src = self.source
        return [Sample(k, v, step, when, src, lineno, False) for k, v in pairs]
