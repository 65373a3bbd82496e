"""A run's planned length and how far its own counter got, read from any text log's lines.

Whether a run stopped short can only be told against the total it was launched for, and logs print
that total in many ways besides a `N/M` step counter: `EPOCH 1 of 30`, `Epoch:[ 6/200 ]`, `max_epochs=30`,
`epochs=10` in an argparse Namespace, `train_iters ..... 500000` in Megatron's argument dump, `MAX_ITER:
18500` in a detectron2 config, `Training for 200000 kimg...`. Those lines are no metric adapter's business
(they sit in banners and config dumps, or carry the epoch of a step counter), so this reader runs beside
the signature scanner on every line of every text log, whatever its format. The patterns live in
data/plans.yaml.

It emits PLAN events, one each time what it knows changes (never one per line):
- `{"unit", "total", "since", "reached"}`: the planned total in its unit, the line that set it, and the
  highest value the run's own counter in that unit reached since (None while none was read). A setting
  printed again starts a new launch (a resumed or appended run prints its config anew), and so does a
  `N/M` counter that goes back or changes its total: the latest launch's total applies.
- `{"early_stop": True}`: the training said it stopped itself because a metric stopped improving.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

from trainwatch import yamltext
from trainwatch.model import Event, EventKind

EVIDENCE_CHARS = 300
NUMBER = r"(\d{1,3}(?:,\d{3})+|\d+)(?:\.0+)?(?![\w.,]?\d)"  # 500000, 1,000, 3.0; not 2.5, not 10e3


@dataclass(frozen=True, slots=True)
class Patterns:
    """The compiled data/plans.yaml. Every regex is searched in the lowercased line (Python's
    case-insensitive matching costs several times more), and only after a plain substring test says
    it can match: the keywords are broad (`poch` is on every line of many logs), so a line costs a few
    `in` tests unless it holds a setting, a counter or a stop."""

    keywords: tuple[str, ...]
    declaration: re.Pattern[str]
    keys: dict[str, str]  # a setting's key, lowercased with `_` between its words -> its unit
    key_parts: tuple[str, ...]  # substrings one of which each key holds (`epochs`, `max_epoch`, `steps`)
    phrases: tuple[re.Pattern[str], ...]
    unit_of: dict[str, str]  # a unit word (`epochs`, `iters`) -> its unit
    counters: tuple[tuple[str, re.Pattern[str]], ...]  # (unit, regex): the unit's name is in what it matches
    early_stop: tuple[re.Pattern[str], ...]


def _flat(text: str) -> str:
    """`Num Epochs`, `num-epochs` and `num_epochs` alike (lowercased first)."""
    return text.replace("-", "_").replace(" ", "_")


def _key_pattern(key: str) -> str:
    """A key that matches with `_`, `-` or a space between its words."""
    return "[-_ ]".join(re.escape(w) for w in re.split(r"[-_ ]", key))


@lru_cache(maxsize=1)
def patterns() -> Patterns:
    text = resources.files("trainwatch").joinpath("data/plans.yaml").read_text(encoding="utf-8")
    data = yamltext.load(text)
    unit_of = {w.lower(): unit for unit, words in data["units"].items() for w in words}
    keys: dict[str, str] = {}
    for unit, names in data["declarations"].items():
        for k in names:
            keys[_flat(k.lower())] = unit
    plural = {w.lower() for words in data["units"].values() for w in words if w.endswith("s")}
    parts = {k.rsplit("_", 1)[-1] if k.rsplit("_", 1)[-1] in plural else k for k in keys}
    parts = {q for q in parts if not any(o != q and o in q for o in parts)}  # `max_iter` holds `max_iters`'
    alts = "|".join(_key_pattern(k) for k in sorted(keys, key=len, reverse=True))
    decl = re.compile(rf"(?<![\w-])(?:--?)?({alts})['\"]?\s*(?:[:=]|\.{{2,}})?\s*['\"]?{NUMBER}(?!\s*(?:/|of\b))")
    return Patterns(
        keywords=tuple(data["keywords"]),
        declaration=decl,
        keys=keys,
        key_parts=tuple(sorted(parts)),
        phrases=tuple(re.compile(p) for p in data["phrases"]),
        unit_of=unit_of,
        counters=tuple((unit, re.compile(p)) for unit, pats in data["counters"].items() for p in pats),
        early_stop=tuple(re.compile(p) for p in data["early_stop"]),
    )


def plan_keywords() -> list[str]:
    """The literals a line must hold before the reader looks at it (the byte scanner's cheap first test)."""
    return list(patterns().keywords)


def _holds(text: str, words: tuple[str, ...]) -> bool:
    """Whether one of the words is in the text (a plain loop: several times quicker than any() over a
    generator, and it runs on every line that holds a keyword)."""
    for w in words:  # noqa: SIM110 (any() over a generator costs several times more)
        if w in text:
            return True
    return False


def _nested(text: str, at: int) -> bool:
    """Whether `at` lies inside an object printed inside another: `Config(..., backoff=Window(min_steps=6,
    max_steps=18))`. A setting of the run is a field of its config (`Namespace(epochs=10)`, one level
    deep); one level further down it belongs to a part of the run (a scheduler's window, a sub-module)."""
    head = text[:at]
    return head.count("(") - head.count(")") >= 2


def _int(text: str) -> int:
    return int(text.replace(",", ""))


@dataclass(slots=True)
class _Unit:
    """What is known of one unit's plan: its total, the line that set it, the counter's best since."""

    total: int
    since: int
    text: str  # the line that set it (evidence)
    reached: int | None = None
    last_n: int | None = None  # the last `N/M` counter's N: one that goes back is a new launch


class PlanReader:
    """Per-source reader of planned totals, the run's counters and early-stopping messages."""

    def __init__(self, source: str = "") -> None:
        self.source = source
        self._p = patterns()
        self._units: dict[str, _Unit] = {}
        self._stopped = -1  # the line of the last early stop told: each training of a log (a fold) tells its own
        self._counted: dict[str, str] = {}  # unit -> the counter's text last read: the same again is skipped

    def wants(self, line: str) -> bool:
        return _holds(line, self._p.keywords)

    def feed(self, line: str, lineno: int) -> list[Event]:
        if not self.wants(line):
            return []
        out: list[Event] = []
        try:
            self._feed(line, lineno, out)
        except Exception:  # a reader bug must cost one line, never the watcher
            pass
        return out

    # -- internals ------------------------------------------------------------------------------
    def _feed(self, line: str, lineno: int, out: list[Event]) -> None:
        seg = line[line.rfind("\r") + 1:] if "\r" in line else line  # a redraw: only what is shown last
        if not seg.strip():
            seg = line
        p = self._p
        low = seg.lower()
        flat = _flat(low)
        if _holds(flat, p.key_parts):
            for m in p.declaration.finditer(low):
                unit = p.keys.get(_flat(m.group(1)))
                if unit is not None and not _nested(low, m.start()):
                    self._declare(unit, _int(m.group(2)), lineno, seg, out)
        if " for " in low and ("train" in low or "running" in low):
            for pat in p.phrases:
                said = pat.search(low)
                if said:
                    unit = p.unit_of.get(said.group(2))
                    if unit is not None:
                        self._declare(unit, _int(said.group(1)), lineno, seg, out)
        for unit, pat in p.counters:
            at = low.find(unit)
            if at < 0:
                continue
            last = self._counted.get(unit)
            if last and low.startswith(last, at) and not low[at + len(last):at + len(last) + 1].isdigit():
                continue  # the counter as on the line before (a counter on every line of an epoch)
            c = pat.search(low, max(at - 1, 0))  # from the unit's name on: quicker
            if c:
                self._counted[unit] = c.group(0)
                self._count(unit, int(c.group(1)), int(c.group(2)) if c.group(2) else None, lineno, seg, out)
        if lineno > self._stopped + 1 and "stop" in low and any(pat.search(low) for pat in p.early_stop):
            self._stopped = lineno  # (the same stop said on the next line again is one stop)
            out.append(Event(EventKind.PLAN, self.source, lineno, text=seg.strip()[:EVIDENCE_CHARS],
                             fields={"early_stop": True}))

    def _declare(self, unit: str, total: int, lineno: int, text: str, out: list[Event]) -> None:
        if total <= 0:
            return
        u = self._units.get(unit)
        if u is not None and u.total == total and u.reached is None:
            return  # the same setting again with nothing counted since: nothing to start afresh
        self._units[unit] = _Unit(total, lineno, text.strip()[:EVIDENCE_CHARS])
        self._tell(unit, lineno, text, out)

    def _count(self, unit: str, n: int, total: int | None, lineno: int, text: str, out: list[Event]) -> None:
        u = self._units.get(unit)
        if total is not None:
            if total <= 0 or n > total + 1:
                return  # not a counter of a total (a ratio, a date)
            if u is None or u.total != total or (u.last_n is not None and n < u.last_n):
                # a new launch, counting to its own total
                u = self._units[unit] = _Unit(total, lineno, text.strip()[:EVIDENCE_CHARS])
                u.last_n, u.reached = n, n
                self._tell(unit, lineno, text, out)
                return
            u.last_n = n
        if u is None:
            return  # a counter with no total known: nothing to compare it with
        if n > u.total + 1:
            return  # not this run's counter (`loaded pretrained encoder from epoch 66` in a 50-epoch run)
        if u.reached is None or n > u.reached:
            u.reached = n
            self._tell(unit, lineno, text, out)

    def _tell(self, unit: str, lineno: int, text: str, out: list[Event]) -> None:
        u = self._units[unit]
        out.append(Event(EventKind.PLAN, self.source, lineno, text=text.strip()[:EVIDENCE_CHARS],
                         fields={"unit": unit, "total": u.total, "since": u.since, "reached": u.reached,
                                 "declared": u.text}))
