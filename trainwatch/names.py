"""Canonical metric names: one alias table in data, looked up once per distinct raw name."""

from __future__ import annotations

import re
from importlib import resources

from trainwatch import yamltext

# A loss named by how it was averaged or over what (`EPOCH loss`, `Avg.Loss`, `average train loss`,
# `mean val loss`) is still the train or eval loss: the alias table cannot list every spelling.
_QUALIFIERS = r"(?:(?:epoch|avg|average|mean|running|smoothed|total|batch|step|iter|iteration|overall)[ _.]+)*"
_TRAIN_LOSS = re.compile(r"^" + _QUALIFIERS + r"(?:train(?:ing)?[ _.]+)?" + _QUALIFIERS + r"loss$")
_LOSS_TRAIN = re.compile(r"^loss[/_. ](?:train|training)(?:[/_. ](?:epoch|step))?$")  # Lightning's `loss/train`
_LOSS_EVAL = re.compile(r"^loss[/_. ](?:val|valid|validation|eval|test|dev)(?:[/_. ](?:epoch|step))?$")
_EVAL_LOSS = re.compile(r"^" + _QUALIFIERS + r"(?:val|valid|validation|eval|evaluation|dev|test)[ _.]+"
                        + _QUALIFIERS + r"loss$")


def _table() -> dict[str, str]:
    text = resources.files("trainwatch").joinpath("data/aliases.yaml").read_text(encoding="utf-8")
    out: dict[str, str] = {}
    for canonical, names in yamltext.load(text).items():
        out[canonical.lower()] = canonical
        for n in names:
            out[str(n).lower()] = canonical
    return out


class Canonicalizer:
    """Maps a raw metric name to its canonical one; the cache keeps the hot path to one dict lookup."""

    def __init__(self, extra: dict[str, str] | None = None) -> None:
        self._aliases = _table()
        for raw, canonical in (extra or {}).items():
            self._aliases[raw.lower()] = canonical
        self._cache: dict[str, str] = {}

    def __call__(self, raw: str) -> str:
        name = self._cache.get(raw)
        if name is None:
            key = raw.strip()
            name = self._aliases.get(key.lower()) or _by_shape(key.lower()) or key
            if len(self._cache) < 100_000:
                self._cache[raw] = name
        return name


def _by_shape(key: str) -> str | None:
    if "loss" not in key:
        return None
    if _EVAL_LOSS.match(key) or _LOSS_EVAL.match(key):
        return "eval_loss"
    if _TRAIN_LOSS.match(key) or _LOSS_TRAIN.match(key):
        return "loss"
    return None
