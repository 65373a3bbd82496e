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
    keywords: tuple[str, ...]
    declarations: tuple[tuple[re.Pattern[str], dict[str, str]], ...]  # regex, lower-cased key -> unit
    phrases: tuple[re.Pattern[str], ...]
    unit_of: dict[str, str]  # a unit word (`epochs`, `iters`) -> its unit
    counters: tuple[tuple[str, re.Pattern[str]], ...]
    early_stop: tuple[re.Pattern[str], ...]


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
            keys[re.sub(r"[-_ ]", "_", k.lower())] = unit
    alts = "|".join(_key_pattern(k) for k in sorted(keys, key=len, reverse=True))
    decl = re.compile(rf"(?<![\w-])(?:--?)?({alts})['\"]?\s*(?:[:=]|\.{{2,}})?\s*['\"]?{NUMBER}(?!\s*(?:/|of\b))",
                      re.IGNORECASE)
    return Patterns(
        keywords=tuple(data["keywords"]),
        declarations=((decl, keys),),
        phrases=tuple(re.compile(p, re.IGNORECASE) for p in data["phrases"]),
        unit_of=unit_of,
        counters=tuple((unit, re.compile(p, re.IGNORECASE)) for unit, pats in data["counters"].items() for p in pats),
        early_stop=tuple(re.compile(p, re.IGNORECASE) for p in data["early_stop"]),
    )


def plan_keywords() -> list[str]:
    """The literals a line must hold before the reader looks at it (the byte scanner's cheap first test)."""
    return list(patterns().keywords)


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
        self._stopped = False  # an early stop was told (once per source is enough)

    def wants(self, line: str) -> bool:
        return any(k in line for k in self._p.keywords)

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
        for pat, keys in p.declarations:
            for m in pat.finditer(seg):
                unit = keys.get(re.sub(r"[-_ ]", "_", m.group(1).lower()))
                if unit is not None:
                    self._declare(unit, _int(m.group(2)), lineno, seg, out)
        for pat in p.phrases:
            m = pat.search(seg)
            if m:
                unit = p.unit_of.get(m.group(2).lower())
                if unit is not None:
                    self._declare(unit, _int(m.group(1)), lineno, seg, out)
        for unit, pat in p.counters:
            m = pat.search(seg)
            if m:
                self._count(unit, int(m.group(1)), int(m.group(2)) if m.group(2) else None, lineno, seg, out)
        if not self._stopped and any(pat.search(seg) for pat in p.early_stop):
            self._stopped = True
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
        if u.reached is None or n > u.reached:
            u.reached = n
            self._tell(unit, lineno, text, out)

    def _tell(self, unit: str, lineno: int, text: str, out: list[Event]) -> None:
        u = self._units[unit]
        out.append(Event(EventKind.PLAN, self.source, lineno, text=text.strip()[:EVIDENCE_CHARS],
                         fields={"unit": unit, "total": u.total, "since": u.since, "reached": u.reached,
                                 "declared": u.text}))
