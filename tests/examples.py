"""How hard the property tests search.

Each property test names the number of examples a deep search of it takes. An ordinary run (a
developer's, and CI's) tries a fraction of that, so the whole suite stays within its time budget; the
hypothesis database keeps every failure it has found and replays it first on the next run. Before a
release, or after touching a fast path or a kernel, run the deep search:

    TRAINWATCH_EXAMPLES=full python -m pytest -q tests/scan tests/adapters tests/rules

TRAINWATCH_EXAMPLES may also be a factor (`0.5`)."""

from __future__ import annotations

import os

from hypothesis import settings

DEFAULT_FACTOR = 0.25
"""The share of a test's deep count an ordinary run tries."""

LEAST = 10
"""No test tries fewer: below this a search hardly leaves the shrinker's favourite shapes."""


def _factor() -> float:
    raw = os.environ.get("TRAINWATCH_EXAMPLES", "").strip().lower()
    if raw in ("", "default"):
        return DEFAULT_FACTOR
    if raw == "full":
        return 1.0
    try:
        value = float(raw)
    except ValueError:
        raise SystemExit(f"TRAINWATCH_EXAMPLES must be 'full' or a factor, not {raw!r}") from None
    return max(value, 0.0)


FACTOR = _factor()


def examples(deep: int) -> int:
    """The examples to try for a test whose deep search takes `deep`."""
    return max(min(LEAST, deep), round(deep * FACTOR))


# tests that name no count get hypothesis's own default, scaled the same way
settings.register_profile("trainwatch", max_examples=examples(settings.default.max_examples))
settings.load_profile("trainwatch")
