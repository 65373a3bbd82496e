"""Canonical metric names: one alias table in data, looked up once per distinct raw name."""

from __future__ import annotations

from importlib import resources

import yaml


def _table() -> dict[str, str]:
    text = resources.files("trainwatch").joinpath("data/aliases.yaml").read_text(encoding="utf-8")
    out: dict[str, str] = {}
    for canonical, names in yaml.safe_load(text).items():
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
            name = self._aliases.get(key.lower(), key)
            if len(self._cache) < 100_000:
                self._cache[raw] = name
        return name
