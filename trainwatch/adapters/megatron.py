"""Megatron-LM (and Megatron-DeepSpeed / Primus forks) iteration lines: `key: value |` fields.

Megatron never prints a NaN loss: it leaves `lm loss` out and counts the iteration in
`number of nan iterations`. That absence is turned back into a NaN loss sample here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import datetime

from trainwatch.adapters.base import Adapter, to_float
from trainwatch.model import Event, EventKind, Record, Sample

ITER = re.compile(r"\biteration\s+(\d+)\s*/\s*(\d+)\s*\|")
VALID = re.compile(r"\bvalidation loss at iteration\s+(\d+)(?:\s+on\s+([^|\n]*?))?\s*\|")
"""`validation loss at iteration 500 | ...`, and with the set it was taken on: `on test set`, `on validation
set`, Megatron-DeepSpeed's final `on 160-sample draw from validation set` (the run's last evaluation: a
report's last eval_loss is that one)."""
_TEST_SET = re.compile(r"(?i)\btest\b")
STAMP = re.compile(r"^\s*\[(\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d)(?:[.,]\d+)?\]")
NAN_KEY = "number of nan iterations"
LOSS_KEY = "lm loss"
SCORE_LINE = re.compile(r"iteration\s+\d+\s*/\s*\d+\s*\|.*(?:lm loss|learning rate|elapsed time per iteration)")


def _stamp(line: str) -> float | None:
    m = STAMP.match(line)
    if m is None:
        return None
    try:
        return datetime.fromisoformat(m.group(1).replace("T", " ")).timestamp()
    except ValueError:
        return None


def _fields(text: str) -> list[tuple[str, float]]:
    out = []
    for part in text.split("|"):
        key, sep, raw = part.rpartition(":")
        if not sep:
            continue
        key = key.strip()
        raw = raw.strip().split("/", 1)[0]  # forks print "13100.0/13240.9" pairs: the first is this rank's
        if not key or len(key) > 80:
            continue
        v = to_float(raw)
        if v is not None:
            out.append((key, v))
    return out


class MegatronAdapter(Adapter):
    name = "megatron"
    description = "Megatron-LM iteration lines (lm loss, loss scale, grad norm, nan/skipped iteration counts)"
    example = (" iteration      100/   10000 | consumed samples:        12800 |"
               " elapsed time per iteration (ms): 512.3 |"
               " learning rate: 3.000E-04 | global batch size:   128 | lm loss: 2.513870E+00 | loss scale: 1.0 |"
               " grad norm: 0.912 | number of skipped iterations:   0 | number of nan iterations:   0 |")

    @classmethod
    def score(cls, head: str, path: str) -> float:
        n = len(SCORE_LINE.findall(head))
        if n == 0:
            return 0.35 if "validation loss at iteration" in head else 0.0
        return min(0.97, 0.85 + 0.03 * n)

    def parse(self, line: str, lineno: int) -> Iterable[Record]:
        if "iteration" not in line:
            return ()
        m = ITER.search(line)
        if m is not None:
            return self._train(line, m, lineno)
        v = VALID.search(line)
        if v is not None:
            return self._valid(line, v, lineno)
        return ()

    def _train(self, line: str, m: re.Match[str], lineno: int) -> list[Record]:
        step, total = int(m.group(1)), int(m.group(2))
        when = _stamp(line)
        out: list[Record] = [Event(EventKind.PROGRESS, self.source, lineno, step=step, time=when,
                                   fields={"step": step, "total": total})]
        fields = _fields(line[m.end():])
        names = set()
        for key, value in fields:
            names.add(key)
            out.append(Sample(key, value, step, when, self.source, lineno, False))
        nan_count = dict(fields).get(NAN_KEY)
        if nan_count is not None and nan_count > 0 and LOSS_KEY not in names:
            out.append(Sample(LOSS_KEY, float("nan"), step, when, self.source, lineno, False))
        return out

    def _valid(self, line: str, m: re.Match[str], lineno: int) -> list[Record]:
        step = int(m.group(1))
        split = "test" if _TEST_SET.search(m.group(2) or "") else "validation"
        when = _stamp(line)
        out: list[Record] = []
        for key, value in _fields(line[m.end():]):
            low = key.lower()
            if low.endswith(" value"):
                name = f"{key[:-6]} {split}"
            elif low.endswith(" ppl"):
                name = f"{key[:-4]} {split} ppl"
            else:
                name = f"{key} {split}"
            out.append(Sample(name, value, step, when, self.source, lineno, False))
        return out
