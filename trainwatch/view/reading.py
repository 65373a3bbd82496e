"""The engine as the views read it: the few questions the dashboard and the exporter ask, answered here.

Views never reach into the engine's store, sources or alert book themselves; this is the one place that
does, so those can change shape without the views following them. Callers hold the watcher's lock while
they read, as for any engine state.
"""

from __future__ import annotations

from collections.abc import Iterable

from trainwatch.engine import Engine
from trainwatch.model import Alert
from trainwatch.rules.base import SourceState
from trainwatch.store import Series


class EngineReading:
    """Read-only questions to one engine (the one exception, `fold_incidents`, only labels echoes)."""

    __slots__ = ("_engine",)

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    @property
    def preset(self) -> str:
        return self._engine.config.preset

    @property
    def changes(self) -> int:
        """How many alert changes the engine has made: it moves whenever an alert does."""
        return self._engine.changes

    def series(self) -> list[Series]:
        """Every stored series, in the store's order."""
        return list(self._engine.store)

    def series_of(self, name: str, source: str) -> Series | None:
        return self._engine.store.get(name, source)

    def sources(self) -> Iterable[SourceState]:
        """Each source's state, in the order the engine first saw them."""
        return self._engine.sources.values()

    def source_names(self) -> Iterable[str]:
        return self._engine.sources.keys()

    def fold_incidents(self) -> None:
        """A blow-up's spikes and NaN become echoes of its root, as the report shows them."""
        self._engine.fold_incidents()

    def alerts(self) -> Iterable[Alert]:
        """Every alert the engine holds, inhibited ones included."""
        return self._engine.book.all()

    def inhibited(self, alert: Alert) -> bool:
        return self._engine.book.is_inhibited(alert)
