"""Keras `History` printouts: `print(history.history)` gives one dict of per-epoch lists.

`{'loss': [0.91, 0.52, 0.40], 'accuracy': [0.61, 0.80, 0.86], 'val_loss': [0.70, 0.55, 0.50]}` holds a
whole training; element i is epoch i + 1. Scripts that fit with verbose=0 print nothing else, so this
is their only record. Both the console-dict and the key-value readers hand such lines here.
"""

from __future__ import annotations

import re

from trainwatch.model import Sample

LIST = re.compile(r"'([^'\\\n]{1,200})':\s*\[([^\[\]\n]{0,200000})\]")
MARK = re.compile(r"\{'[^'\\\n]{1,200}':\s*\[")  # Python's repr: single quotes, all on one line
MAX_EPOCHS = 100000
MAX_TRIES = 20


def _lists(text: str) -> dict[str, list[float]]:
    """Key -> numbers of a printed dict of lists; keys whose lists are not all numbers are left out."""
    lists: dict[str, list[float]] = {}
    for key, body in LIST.findall(text):
        values: list[float] = []
        for raw in body.split(","):
            raw = raw.strip().removeprefix("np.float32(").removeprefix("np.float64(").rstrip(")")
            try:
                values.append(float(raw))
            except ValueError:
                values = []
                break
        if values and len(values) <= MAX_EPOCHS:
            lists[key] = values
    return lists


def _dict_at(text: str, start: int) -> str:
    """The dict starting at `start`, up to its closing brace or the end of its line."""
    stop = len(text)
    end = text.find("}", start)
    if end >= 0:
        stop = end + 1
    nl = text.find("\n", start, stop)
    return text[start:nl if nl >= 0 else stop]


def is_history(text: str) -> bool:
    """Whether `text` holds a printed History dict: a one-line dict of number lists, a loss among them."""
    for i, m in enumerate(MARK.finditer(text)):
        if i >= MAX_TRIES:
            break
        if any("loss" in k for k in _lists(_dict_at(text, m.start()))):
            return True
    return False


def history_samples(text: str, source: str, lineno: int) -> list[Sample]:
    """One sample per key and epoch (steps 1..N, marked inferred: the epoch stands in for the step)."""
    out: list[Sample] = []
    lists = _lists(text)
    if not any("loss" in k for k in lists):
        return out
    for key, values in lists.items():
        out.extend(Sample(key, v, i + 1, None, source, lineno, True) for i, v in enumerate(values))
    return out
