"""The format registry: adapters come from the `trainwatch.formats` entry-point group.

Ours are registered there by pyproject.toml like anyone else's, so a third-party package adds a
format with one entry point and nothing in trainwatch changes. A plugin that fails to load is
reported once on stderr and skipped; it never takes the others down.
"""

from __future__ import annotations

import sys
from functools import lru_cache
from importlib.metadata import entry_points

from trainwatch.adapters.base import Adapter
from trainwatch.adapters.prefix import strip_text
from trainwatch.errors import SourceError, UsageError

GROUP = "trainwatch.formats"
DETECT_THRESHOLD = 0.3


@lru_cache(maxsize=1)
def registry() -> dict[str, type[Adapter]]:
    """Every loadable adapter by name, ours first."""
    found: dict[str, type[Adapter]] = {}
    eps = sorted(entry_points(group=GROUP), key=lambda ep: (not ep.value.startswith("trainwatch."), ep.name))
    for ep in eps:
        if ep.name in found:
            continue
        try:
            cls = ep.load()
        except Exception as exc:  # a broken plugin must not stop the watcher
            print(f"trainwatch: warning: format plugin {ep.name!r} ({ep.value}) failed to load: {exc}",
                  file=sys.stderr)
            continue
        if not (isinstance(cls, type) and issubclass(cls, Adapter)):
            print(f"trainwatch: warning: format plugin {ep.name!r} is not an Adapter subclass; skipped",
                  file=sys.stderr)
            continue
        found[ep.name] = cls
    if not found:
        raise SourceError("no log formats are registered", hint="install trainwatch with pip so its entry points exist")
    return found


def get(name: str) -> type[Adapter]:
    formats = registry()
    try:
        return formats[name]
    except KeyError:
        raise UsageError(f"unknown format {name!r}", hint="known formats: " + ", ".join(formats)) from None


def scores(head: str, path: str) -> list[tuple[float, str]]:
    """Every adapter's confidence for one file, best first. Adapters that read lines without their
    launcher prefixes are scored on the head with the prefixes taken off too."""
    out = []
    stripped: str | None = None
    for name, cls in registry().items():
        text = head
        if getattr(cls, "strip_prefixes", False):
            if stripped is None:
                stripped = strip_text(head)
            text = stripped
        try:
            s = float(cls.score(text, path))
        except Exception:  # a plugin's scorer must not break detection
            s = 0.0
        out.append((s, name))
    out.sort(key=lambda t: -t[0])
    return out


def detect(head: str, path: str) -> str | None:
    """The best adapter's name, or None when nothing is confident enough."""
    ranked = scores(head, path)
    if ranked and ranked[0][0] >= DETECT_THRESHOLD:
        return ranked[0][1]
    return None
