"""A JSON file of per-epoch lists: `json.dump(history.history, f)` and the hand-made dicts like it.

`{"loss": [0.91, 0.52, 0.40], "val_loss": [0.70, 0.55, 0.50], "kl_loss": [...]}` holds a whole training,
one list per metric; element i is epoch i + 1. Keras' `History`, a PyTorch script's `history = {"train_loss":
[], ...}` saved at the end, and the same dict pretty-printed over many lines all fit. The one-line Python
printout (`print(history.history)`, single quotes) is read by keras_history through the console readers.

The file is one document, read whole; a script that rewrites it after every epoch makes each list longer,
so a live reader gives only the epochs past those it already gave.
"""

from __future__ import annotations

import re
from typing import Any

from trainwatch.adapters.base import json_number
from trainwatch.adapters.document import JsonDocumentAdapter
from trainwatch.adapters.shapes import METRIC_WORDS
from trainwatch.model import Record, Sample

# a JSON object whose first member is a list starting with a number (the head may be cut mid-list)
OPENS = re.compile(r'\s*\{\s*"([^"\\\n]{1,200})"\s*:\s*\[\s*[-+]?(?:\d|\.\d|NaN|Infinity)')
MEMBER = re.compile(r'"([^"\\\n]{1,200})"\s*:\s*\[\s*[-+]?(?:\d|\.\d|NaN|Infinity)')
WRAPPERS = ("history", "hist", "metrics", "logs")  # `{"history": {...}}`: the lists one level down
MAX_EPOCHS = 1_000_000


def _lists(data: Any) -> dict[str, list[float | None]]:
    """Name -> numbers of each member that is a list of numbers, None where an epoch has `null` (nothing
    logged then: no point, rather than a made-up one); members that are not lists of numbers are left out."""
    if not isinstance(data, dict):
        return {}
    inner = next((data[k] for k in WRAPPERS if isinstance(data.get(k), dict)), None)
    if inner is not None and not any(isinstance(v, list) for v in data.values()):
        data = inner
    out: dict[str, list[float | None]] = {}
    for key, values in data.items():
        if not isinstance(values, list) or not values or len(values) > MAX_EPOCHS:
            continue
        nums = [json_number(v) if v is not None else None for v in values]
        if all(n is None for n in nums) or any(n is None and v is not None for n, v in zip(nums, values)):
            continue  # text, nested objects: not a metric's epochs
        out[str(key)] = nums
    return out


class JsonHistoryAdapter(JsonDocumentAdapter):
    name = "json_history"
    description = "A JSON object of per-epoch lists (Keras history.history dumped with json, a script's own)"
    example = '{"loss": [0.91, 0.52, 0.4], "val_loss": [0.7, 0.55, 0.5]}'

    def __init__(self, source: str = "") -> None:
        super().__init__(source)
        self.given: dict[str, int] = {}  # name -> epochs already given (a rewritten file grows its lists)

    @classmethod
    def score(cls, head: str, path: str) -> float:
        m = OPENS.match(head)
        if m is None:
            return 0.0
        names = MEMBER.findall(head[:200_000])
        if len(names) >= 2 or METRIC_WORDS.search(m.group(1)):
            return 0.85 if any(METRIC_WORDS.search(n) for n in names) else 0.5
        return 0.4

    def records(self, data: Any) -> list[Record]:
        out: list[Record] = []
        for key, values in _lists(data).items():
            start = self.given.get(key, 0)
            if len(values) < start:
                start = 0  # a new run rewrote the file with shorter lists: its epochs from the first
            for i in range(start, len(values)):
                v = values[i]
                if v is not None:
                    out.append(Sample(key, v, i + 1, None, self.source, 0, True))  # the epoch stands in for the step
            self.given[key] = len(values)
        return out
