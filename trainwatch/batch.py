"""Batches: what adapters hand the engine. Columns of samples in log order, plus the events between them.

A batch belongs to one source. Samples are columns (metric id, step, value, line, time, inferred)
rather than one object each, so a gigabyte of backlog crosses from the parser to the rules as arrays
and rules that work over arrays never touch a Python object per value. Events (errors, progress,
eval and checkpoint markers, the end of training, a resume) are rare next to samples and stay objects;
each one records how many samples came before it, so the engine can replay the log's order exactly.

`check` feeds large batches, `tail` feeds whatever arrived, and a batch of one sample is still a
batch: there is one path for both.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

import numpy as np

from trainwatch.model import Event, Record, Sample

NO_STEP = np.iinfo(np.int64).min
"""A sample whose log printed no step: the engine gives it the source's current step."""


@dataclass
class Batch:
    """The samples and events of one source, in the order the log printed them."""

    source: str
    names: list[str]
    """Metric names as the adapter read them; `name` indexes this list."""
    name: np.ndarray  # int32
    step: np.ndarray  # int64, NO_STEP where the log gave none
    value: np.ndarray  # float64
    line: np.ndarray  # int64
    time: np.ndarray  # float64, NaN where the log gave none
    inferred: np.ndarray  # bool: the adapter inferred the step (the log did not print it)
    events: list[tuple[int, Event]] = field(default_factory=list)
    """(samples before it, event), in log order."""

    def __len__(self) -> int:
        return len(self.value)

    @property
    def empty(self) -> bool:
        return not len(self.value) and not self.events

    def records(self) -> Iterator[Record]:
        """The batch as records again, in log order (for sinks and plugins that want objects)."""
        at = 0
        for pos, event in self.events:
            yield from self._samples(at, pos)
            at = pos
            yield event
        yield from self._samples(at, len(self.value))

    def _samples(self, lo: int, hi: int) -> Iterator[Sample]:
        names, src = self.names, self.source
        for i in range(lo, hi):
            step = int(self.step[i])
            t = float(self.time[i])
            yield Sample(names[int(self.name[i])], float(self.value[i]), None if step == NO_STEP else step,
                         None if math.isnan(t) else t, src, int(self.line[i]), bool(self.inferred[i]))


class BatchBuilder:
    """Collects samples and events for one source, then hands them over as a `Batch`.

    Python adapters (and third-party format plugins) append here; the native scanner's adapters fill
    the columns directly. Appends are plain list appends: the arrays are built once, in `build`."""

    __slots__ = (
        "_events",
        "_ids",
        "_inferred",
        "_line",
        "_name",
        "_names",
        "_step",
        "_time",
        "_value",
        "source",
    )

    def __init__(self, source: str) -> None:
        self.source = source
        self._ids: dict[str, int] = {}
        self._names: list[str] = []
        self._reset()

    def _reset(self) -> None:
        self._name: list[int] = []
        self._step: list[int] = []
        self._value: list[float] = []
        self._line: list[int] = []
        self._time: list[float] = []
        self._inferred: list[bool] = []
        self._events: list[tuple[int, Event]] = []

    def __len__(self) -> int:
        return len(self._value) + len(self._events)

    def name_id(self, name: str) -> int:
        i = self._ids.get(name)
        if i is None:
            i = self._ids[name] = len(self._names)
            self._names.append(name)
        return i

    def sample(self, name: str, value: float, step: int | None, line: int, time: float | None = None,
               inferred: bool = False) -> None:
        self._name.append(self.name_id(name))
        self._step.append(NO_STEP if step is None else step)
        self._value.append(value)
        self._line.append(line)
        self._time.append(math.nan if time is None else time)
        self._inferred.append(inferred)

    def event(self, event: Event) -> None:
        self._events.append((len(self._value), event))

    def record(self, record: Record) -> None:
        if type(record) is Sample:
            self.sample(record.name, record.value, record.step, record.line, record.time, record.step_inferred)
        else:
            self.event(record)  # type: ignore[arg-type]

    def extend(self, records: Iterable[Record]) -> None:
        for r in records:
            self.record(r)

    def build(self) -> Batch:
        """The batch so far; the builder starts empty again (the name table is kept)."""
        b = Batch(self.source, list(self._names),
                  np.asarray(self._name, dtype=np.int32), np.asarray(self._step, dtype=np.int64),
                  np.asarray(self._value, dtype=np.float64), np.asarray(self._line, dtype=np.int64),
                  np.asarray(self._time, dtype=np.float64), np.asarray(self._inferred, dtype=bool),
                  self._events)
        self._reset()
        return b


def from_records(source: str, records: Iterable[Record]) -> Batch:
    """A batch of records already made (the bridge from per-line adapters)."""
    b = BatchBuilder(source)
    b.extend(records)
    return b.build()
