"""Metric names to engine ids: each name gets its series' rules once, and names past the caps are counted,
not kept."""

from __future__ import annotations

import fnmatch
import re

import numpy as np

from trainwatch.batch import Batch
from trainwatch.engine.state import EngineState
from trainwatch.names import averaged
from trainwatch.rules.array import ArrayRule
from trainwatch.rules.base import Rule

MAX_SERIES_PER_SOURCE = 2_000
"""Metric names kept per log. A log that prints a value per token, per sample or per class can hold
hundreds of thousands of names, each a series with its arrays and its rules, so memory would grow with
the names, not with the run. The cap is far above the metrics a training loop logs. Past it only the
names a rule watches by name (loss, grad_norm, the learning rate, ...) are still kept; the others are
counted and said once in the report."""
MAX_SERIES = 20_000
"""Metric names kept over all logs of one process (a glob of many runs), with the same exception."""


class MetricIndex(EngineState):
    """Names metrics and finds their rules (see the module)."""

    def _metric_ids(self, b: Batch) -> np.ndarray:
        """Engine metric ids for the batch's name table; a name seen for the first time gets its rules,
        unless it is past the caps (MAX_SERIES_PER_SOURCE, MAX_SERIES): then its rows are not kept."""
        known = self._ids_of.setdefault(b.source, {})
        out = np.empty(len(b.names), dtype=np.int64)
        for i, raw in enumerate(b.names):
            k = known.get(raw)
            if k is None:
                k = known[raw] = self._admit(b.source, self._own_name(known, raw))
            out[i] = k
        return out

    def _own_name(self, known: dict[str, int], raw: str) -> str:
        """The canonical name of `raw`, unless it is an average over steps (names.averaged) whose canonical
        name another raw name of the same log already holds: an epoch's mean loss printed after its batch
        losses is its own series, so the loss series, its steps and its "final" value stay per-step."""
        name = self.canon(raw)
        if name != raw and averaged(raw) and any(
                r != raw and k < len(self._names) and self._names[k] == name for r, k in known.items()):
            return raw
        return name

    def _admit(self, source: str, name: str) -> int:
        k = self._metric.get(name)
        kept = self._kept.get(source, 0)
        if (kept >= MAX_SERIES_PER_SOURCE or (k is None and len(self._names) >= MAX_SERIES)) \
                and not self._named_by_rules(name):
            self.dropped_names[source] = self.dropped_names.get(source, 0) + 1
            if self._dropped is None:
                self._dropped = self._new_metric("\x00past the cap", [])
            return self._dropped
        self._kept[source] = kept + 1
        return k if k is not None else self._new_metric(name, self._rules_for(name))

    def _new_metric(self, name: str, rules: list[Rule]) -> int:
        k = self._metric[name] = len(self._names)
        self._names.append(name)
        self.judged.update(r.spec.id for r in rules)
        self._arrays[name] = [r for r in rules if isinstance(r, ArrayRule)]
        self._hooks[name] = [(r, r.spec, r.spec.id) for r in rules if not isinstance(r, ArrayRule)]
        self._hooked = np.append(self._hooked, bool(self._hooks[name]))
        self._is_eval = np.append(self._is_eval, name.startswith("eval_"))
        return k

    def _named_by_rules(self, name: str) -> bool:
        """A rule watches this name by name or by a pattern narrower than everything."""
        if self._watched is None:
            patterns = {p for r in self.rules for p in r.watches if p != "*"}
            globs = [fnmatch.translate(p) for p in patterns if "*" in p or "?" in p or "[" in p]
            self._watched = (patterns, re.compile("|".join(globs)) if globs else None)
        names, globbed = self._watched
        return name in names or (globbed is not None and globbed.match(name) is not None)

    def cap_notes(self, source: str) -> list[str]:
        """What the caps cost a source, said once in its report."""
        n = self.dropped_names.get(source, 0)
        if not n:
            return []
        return [f"{n} metric names past the cap of {MAX_SERIES_PER_SOURCE} per log ({MAX_SERIES} in all) were "
                "not kept; every name a rule watches was"]

    def _rules_for(self, name: str) -> list[Rule]:
        out = []
        for rule in self.rules:
            for pattern in rule.watches:
                if pattern == name or pattern == "*" or (("*" in pattern or "?" in pattern)
                                                         and fnmatch.fnmatchcase(name, pattern)):
                    out.append(rule)
                    break
        return out
