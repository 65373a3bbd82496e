"""trainer_state.json: the Trainer's own log_history, where every entry carries its step.

The file is rewritten whole at each checkpoint, so a live reader re-reads it and must not report
the same entries twice: the adapter remembers the last step it emitted and what it emitted there.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from trainwatch.adapters.base import json_number
from trainwatch.adapters.document import JsonDocumentAdapter
from trainwatch.model import Event, EventKind, Record, Sample

SKIP_KEYS = frozenset({"step"})
SUMMARY_KEY = "train_runtime"


BARE_HISTORY = re.compile(r'\s*\[\s*\{[^{}]*"(?:loss|eval_loss|learning_rate|epoch)"\s*:[^{}]*"step"\s*:|'
                          r'\s*\[\s*\{[^{}]*"step"\s*:[^{}]*"(?:loss|eval_loss|learning_rate|epoch)"\s*:')


class TrainerStateAdapter(JsonDocumentAdapter):
    name = "trainer_state"
    description = "Hugging Face trainer_state.json (log_history entries, read whole on each change)"
    example = '{"log_history": [{"epoch": 0.1, "grad_norm": 2.75, "learning_rate": 1.8e-05, "loss": 1.14, "step": 50}]}'

    def __init__(self, source: str = "") -> None:
        super().__init__(source)
        self.last_step: int | None = None
        self.seen_at_last: set[str] = set()
        self.planned: int | None = None

    @classmethod
    def score(cls, head: str, path: str) -> float:
        if path.replace("\\", "/").rsplit("/", 1)[-1] == "trainer_state.json":
            return 0.97
        start = head.lstrip()[:1]
        if start == "{" and '"log_history"' in head:
            return 0.9
        if start == "[" and BARE_HISTORY.match(head):
            return 0.8  # `json.dump(trainer.state.log_history, f)`: the list without its wrapper
        return 0.0

    def records(self, data: Any) -> list[Record]:
        history = data.get("log_history") if isinstance(data, dict) else data if isinstance(data, list) else None
        if not isinstance(history, list):
            return []
        out: list[Record] = []
        planned = _max_steps(data)
        if planned is not None and planned != self.planned:
            self.planned = planned  # the Trainer's own total (max_steps, or epochs x steps per epoch)
            out.append(Event(EventKind.INFO, self.source, 0, fields={"total_steps": planned}))
        prev_step: int | None = None
        new_last, new_seen = self.last_step, set(self.seen_at_last)
        for entry in history:
            if not isinstance(entry, dict):
                continue
            raw_step = entry.get("step")
            step = int(raw_step) if isinstance(raw_step, (int, float)) and not isinstance(raw_step, bool) \
                and math.isfinite(raw_step) else prev_step  # some predict_* entries have no step
            if step is None:
                continue
            prev_step = step
            key = json.dumps(sorted(entry), separators=(",", ":"))
            if self.last_step is not None and (
                    step < self.last_step or (step == self.last_step and key in self.seen_at_last)):
                continue
            if new_last is None or step > new_last:
                new_last, new_seen = step, set()
            if step == new_last:
                new_seen.add(key)
            out.extend(self._records(entry, step))
        self.last_step, self.seen_at_last = new_last, new_seen
        return out

    def _records(self, entry: dict[str, Any], step: int) -> list[Record]:
        values = {k: v for k, v in ((k, json_number(v)) for k, v in entry.items() if k not in SKIP_KEYS)
                  if v is not None}
        if SUMMARY_KEY in entry:
            return [Event(EventKind.TRAIN_END, self.source, 0, step=step, fields=values)]
        return [Sample(k, v, step, None, self.source, 0, False) for k, v in values.items()]


def _max_steps(data: Any) -> int | None:
    """The run's planned total from the state's `max_steps` (the Trainer stores the total it computed,
    whether it was given max_steps or epochs); None for a bare history list or a missing or odd value."""
    if not isinstance(data, dict):
        return None
    v = data.get("max_steps")
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
        return None
    return int(v)
