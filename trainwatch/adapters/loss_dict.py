"""A dict of losses printed after a label (`Losses {'ner': 172.9}`), and the running totals it may hold.

spaCy's training loops pass one `losses` dict to every `nlp.update(..., losses=losses)` of an epoch and
print it after each batch: each component's loss is ADDED to its entry, so the printed value is the epoch's
running total. It climbs through the epoch and falls back near 0 when the next epoch starts with a fresh
dict. Read as a per-batch loss, every epoch would look like a divergence. So the values are held until
their shape is known: a running total (a long climb that never falls, or that only falls back to under half
at an epoch's start) is read as one record per epoch, its last printed value (the epoch's total, as logged);
anything else (a loss that falls and rises batch by batch) is read record by record, as printed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from trainwatch.adapters.shapes import NUM

# `Losses {'ner': 172.9}`, `losses: {"textcat": 0.5, "tok2vec": 1.2}`: a label naming losses, then a dict of
# component names to numbers, nothing after it
LOSS_DICT = re.compile(r"^(?P<label>[A-Za-z][\w ]{0,30}?)\s*[:=]?\s*\{(?P<body>\s*['\"][^{}]{0,2000})\}\s*$")
LOSS_LABEL = re.compile(r"(?i)\blosse?s?\b|\w+_losses?\b")
ITEM = re.compile(r"['\"](?P<k>[A-Za-z_][\w/.\-]{0,60})['\"]\s*:\s*(?P<v>" + NUM + r")\s*(?:,|$)")

MIN_CLIMB = 8  # records that only climb before a fall back to under half: a running total, reset
MAX_HELD = 512  # records that only climbed: a running total whose epoch is long (a loss never climbs so long)
RESET = 0.5  # a running total starts again from near 0: its fall takes it under this share of the value before


def loss_dict(text: str) -> list[tuple[str, float]] | None:
    """The losses of a `Losses {'ner': 172.9}` line, one per component: `loss` alone when there is one
    component (the run's loss), else `<component> loss` each. None for any other line."""
    if text[-1:] != "}":
        return None
    m = LOSS_DICT.match(text)
    if m is None or LOSS_LABEL.search(m.group("label")) is None:
        return None
    body = m.group("body").strip()
    items = [(i.group("k"), float(i.group("v"))) for i in ITEM.finditer(body)]
    if not items or len(items) != body.count(":"):
        return None  # (a value that is no number: not a dict of losses)
    if len(items) == 1:
        return [("loss", items[0][1])]
    return [(k if "loss" in k.lower() else f"{k} loss", v) for k, v in items]


@dataclass(slots=True)
class Printed:
    """One printed dict: its losses, line and time."""

    pairs: list[tuple[str, float]]
    line: int
    time: float | None


@dataclass(slots=True)
class RunningTotals:
    """Tells a dict of running totals from one of per-batch losses, and gives the records to read.

    `feed` and `finish` return the records to emit now: each as printed while the dict is per-batch, or an
    epoch's last record (its total) once it is known to hold running totals."""

    cumulative: bool | None = None  # None: not known yet
    held: list[Printed] = field(default_factory=list)
    last: Printed | None = None  # the epoch's latest record, when the dict holds running totals

    def feed(self, rec: Printed) -> list[Printed]:
        if self.cumulative is False:
            return [rec]
        if self.cumulative:
            assert self.last is not None
            done = [self.last] if _reset(self.last, rec) else []
            self.last = rec
            return done
        prev = self.held[-1] if self.held else None
        if prev is None or not _fell(prev, rec):
            self.held.append(rec)
            if len(self.held) >= MAX_HELD:
                return self._decide(True, None)
            return []
        if _reset(prev, rec) and len(self.held) >= MIN_CLIMB:
            return self._decide(True, rec)
        self.held.append(rec)
        return self._decide(False, None)

    def finish(self) -> list[Printed]:
        if self.cumulative is None:
            # a climb that was never seen to fall: a running total when it is long enough to be one
            return self._decide(len(self.held) >= MIN_CLIMB and _climbed(self.held), None) + self.finish()
        last, self.last = self.last, None
        return [last] if last is not None else []

    def _decide(self, cumulative: bool, rec: Printed | None) -> list[Printed]:
        held, self.held = self.held, []
        self.cumulative = cumulative
        if not cumulative:
            return held
        self.last = rec if rec is not None else held[-1]
        return [held[-1]] if rec is not None else []


def _fell(prev: Printed, rec: Printed) -> bool:
    before = dict(prev.pairs)
    return any(k in before and v < before[k] for k, v in rec.pairs)


def _reset(prev: Printed, rec: Printed) -> bool:
    """Every component fell to under half of its value before (or stayed at 0): a new epoch's fresh dict."""
    before = dict(prev.pairs)
    return _fell(prev, rec) and all(k in before and (v <= RESET * before[k] or before[k] == v == 0)
                                    for k, v in rec.pairs)


def _climbed(held: list[Printed]) -> bool:
    return any(b.pairs != a.pairs for a, b in zip(held, held[1:]))
