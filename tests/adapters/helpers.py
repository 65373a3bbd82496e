"""Helpers for adapter tests: run lines through an adapter (and the scanner) like the engine does."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

import pytest

from trainwatch.adapters.base import Adapter
from trainwatch.model import Event, EventKind, Record, Sample


def run(adapter: Adapter, lines: Iterable[str]) -> list[Record]:
    out: list[Record] = []
    for n, line in enumerate(lines, 1):
        out.extend(adapter.parse(line, n))
    out.extend(adapter.finish())
    return out


def samples(records: Iterable[Record], name: str | None = None) -> list[Sample]:
    return [r for r in records if isinstance(r, Sample) and (name is None or r.name == name)]


def events(records: Iterable[Record], kind: EventKind | None = None) -> list[Event]:
    return [r for r in records if isinstance(r, Event) and (kind is None or r.kind == kind)]


def series(records: Iterable[Record], name: str) -> list[tuple[int | None, float]]:
    return [(s.step, s.value) for s in samples(records, name)]




def corpus_file(name: str) -> Path:
    """A log of the shared corpus (beside the checkout, or where $TRAINWATCH_CORPUS says); skips without it."""
    env = os.environ.get("TRAINWATCH_CORPUS")
    base = Path(env) if env else Path(__file__).resolve().parents[3] / "shared" / "corpus"
    path = base / name
    if not path.is_file():
        pytest.skip(f"{path} is not here (the shared corpus is only on some machines)")
    return path
