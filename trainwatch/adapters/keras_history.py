"""Keras `History` printouts: `print(history.history)` gives one dict of per-epoch lists.

`{'loss': [0.91, 0.52, 0.40], 'accuracy': [0.61, 0.80, 0.86], 'val_loss': [0.70, 0.55, 0.50]}` holds a
whole training; element i is epoch i + 1. Scripts that fit with verbose=0 print nothing else, so this
is their only record. Both the console-dict and the key-value readers hand such lines here.
"""

from __future__ import annotations

import re

from trainwatch.model import Sample

LIST = re.compile(r"""['"]([^'"\\]{1,200})['"]\s*:\s*\[([^\[\]]{0,200000})\]""")
MARK = re.compile(r"""\{\s*['"][^'"\\]{1,200}['"]\s*:\s*\[""")
MAX_EPOCHS = 100000


def is_history(text: str) -> bool:
    """A printed dict whose first value is a list, with a loss among its keys."""
    return MARK.search(text) is not None and "loss" in text


def history_samples(text: str, source: str, lineno: int) -> list[Sample]:
    """One sample per key and epoch (steps 1..N, marked inferred: the epoch stands in for the step)."""
    out: list[Sample] = []
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
    if not any("loss" in k for k in lists):
        return out
    for key, values in lists.items():
        out.extend(Sample(key, v, i + 1, None, source, lineno, True) for i, v in enumerate(values))
    return out
