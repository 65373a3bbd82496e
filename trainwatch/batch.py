"""Batches: what adapters hand the engine. Columns of samples in log order, plus the events between them.

A batch belongs to one source. Samples are columns (metric id, step, value, line, time, inferred)
rather than one object each, so a gigabyte of backlog crosses from the parser to the rules as arrays
and rules that work over arrays never touch a Python object per value. Events (errors, progress,
eval and checkpoint markers, the end of training, a resume) are rare next to samples and stay objects;
each one records how many samples came before it, so the engine can replay the log's order exactly.
Progress redraws are the exception: a console log redraws its bar for every printed dict, so they are
columns too (`Redraws`), each placed by the samples and the events before it.

`check` feeds large batches, `tail` feeds whatever arrived, and a batch of one sample is still a
batch: there is one path for both.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

import numpy as np

from trainwatch.model import Event, EventKind, Record, Sample

NO_STEP = np.iinfo(np.int64).min
"""A sample whose log printed no step: the engine gives it the source's current step."""
INT64_MAX = int(np.iinfo(np.int64).max)
"""The largest step or total a column holds; a log may print larger ones (they stay objects)."""


@dataclass(frozen=True, eq=False)
class Redraws:
    """Progress redraws as columns (what `Event(PROGRESS, step=s, fields={"step": s, "total": t})` says,
    without an object each). A redraw comes after the first `pos` samples and the first `rank` events of
    its batch, and before the rest."""

    pos: np.ndarray  # int64
    rank: np.ndarray  # int64
    line: np.ndarray  # int64
    step: np.ndarray  # int64
    total: np.ndarray  # int64, -1 where the bar gave none

    @classmethod
    def of(cls, pos: list[int], rank: list[int], line: list[int], step: list[int], total: list[int]) -> Redraws:
        return cls(*(np.asarray(c, dtype=np.int64) for c in (pos, rank, line, step, total)))

    def __len__(self) -> int:
        return len(self.pos)

    def event(self, source: str, i: int) -> Event:
        return progress_event(source, int(self.line[i]), int(self.step[i]), int(self.total[i]))

    def with_rank(self, rank: np.ndarray) -> Redraws:
        return Redraws(self.pos, np.asarray(rank, dtype=np.int64), self.line, self.step, self.total)


NO_REDRAWS = Redraws.of([], [], [], [], [])


class IntColumns:
    """int64 columns being collected, one row at a time or a run of rows as arrays, kept in the order
    they came. A steady run of a console log hands over thousands of rows at once: as arrays they are
    never turned into lists and back."""

    __slots__ = ("_n", "_pieces", "_single", "_width")

    def __init__(self, width: int) -> None:
        self._width = width
        self._single: tuple[list[int], ...] = tuple([] for _ in range(width))
        self._pieces: list[tuple[np.ndarray, ...]] = []
        self._n = 0  # rows in the pieces

    def __len__(self) -> int:
        return self._n + len(self._single[0])

    def add(self, *row: int) -> None:
        for col, v in zip(self._single, row):
            col.append(v)

    def add_arrays(self, *cols: np.ndarray) -> None:
        if not len(cols[0]):
            return
        self._flush()
        self._pieces.append(tuple(np.asarray(c, dtype=np.int64) for c in cols))
        self._n += len(cols[0])

    def columns(self) -> tuple[np.ndarray, ...]:
        """Every column of the rows so far, in order."""
        self._flush()
        if len(self._pieces) == 1:
            return self._pieces[0]
        if not self._pieces:
            return tuple(np.zeros(0, dtype=np.int64) for _ in range(self._width))
        return tuple(np.concatenate([p[i] for p in self._pieces]) for i in range(self._width))

    def cut(self, n: int) -> None:
        """Keeps the first n rows only."""
        self._flush()
        kept: list[tuple[np.ndarray, ...]] = []
        left = n
        for piece in self._pieces:
            if left <= 0:
                break
            kept.append(piece if len(piece[0]) <= left else tuple(c[:left] for c in piece))
            left -= len(piece[0])
        self._pieces = kept
        self._n = sum(len(p[0]) for p in kept)

    def _flush(self) -> None:
        if self._single[0]:
            self._pieces.append(tuple(np.asarray(c, dtype=np.int64) for c in self._single))
            self._n += len(self._single[0])
            self._single = tuple([] for _ in range(self._width))


class RedrawColumns(IntColumns):
    """Progress redraws as the five columns of `Redraws`: samples before, events before, line, step,
    total."""

    __slots__ = ()

    def __init__(self) -> None:
        super().__init__(5)


def _fits(step: object) -> bool:
    """Whether an int64 column holds this step (anything but a Python int is left as it is)."""
    return type(step) is not int or NO_STEP < step <= INT64_MAX


def column_step(step: int | None) -> int:
    """A sample's step as its int64 column holds it: NO_STEP for none, and for one no int64 holds (log
    text is untrusted; a reader counting on from a printed step near the limit passes it too)."""
    return step if step is not None and _fits(step) else NO_STEP


def _steps_that_fit(event: Event) -> None:
    """A step no int64 holds (log text is untrusted: `step 10**20`) is no step: the engine keeps steps in
    int64 columns. Such an event says no step, as a sample with such a step does (`sample`)."""
    if not _fits(event.step):
        event.step = None
    if not _fits(event.fields.get("step")):
        event.fields["step"] = None


def progress_event(source: str, line: int, step: int, total: int | None) -> Event:
    """A redraw as an event object (the line path's, and a batch's for whoever wants objects)."""
    fields = {"step": step} if total is None or total < 0 else {"step": step, "total": total}
    return Event(EventKind.PROGRESS, source, line, step=step, fields=fields)


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
    redraws: Redraws = NO_REDRAWS

    def __len__(self) -> int:
        return len(self.value)

    @property
    def empty(self) -> bool:
        return not len(self.value) and not self.events and not len(self.redraws)

    @property
    def size(self) -> int:
        """Samples and events: the records the batch stands for."""
        return len(self.value) + len(self.events) + len(self.redraws)

    def all_events(self) -> list[tuple[int, Event]]:
        """`events` with the redraws among them as event objects, in log order."""
        red = self.redraws
        if not len(red):
            return self.events
        out: list[tuple[int, Event]] = []
        r = 0
        ranks = red.rank.tolist()
        for i, item in enumerate([*self.events, None]):
            while r < len(ranks) and ranks[r] <= i:
                out.append((int(red.pos[r]), red.event(self.source, r)))
                r += 1
            if item is not None:
                out.append(item)
        return out

    def redraws_as_events(self) -> Batch:
        """This batch with its redraws as event objects (for a rule that answers progress)."""
        return Batch(self.source, self.names, self.name, self.step, self.value, self.line, self.time,
                     self.inferred, self.all_events())

    def keep_events(self, keep: Callable[[Event], bool]) -> None:
        """Drops the events `keep` refuses; the redraws keep their places among the rest."""
        kept = [keep(e) for _, e in self.events]
        if all(kept):
            return
        if len(self.redraws):
            before = np.concatenate(([0], np.cumsum(kept, dtype=np.int64)))
            self.redraws = self.redraws.with_rank(before[self.redraws.rank])
        self.events = [item for item, k in zip(self.events, kept) if k]

    def records(self) -> Iterator[Record]:
        """The batch as records again, in log order (for sinks and plugins that want objects)."""
        at = 0
        for pos, event in self.all_events():
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

    def with_events(self, found: list[tuple[int, list[Event]]]) -> Batch:
        """This batch with more events, each list read at a line (in line order), put where reading line by
        line would have met them: after the samples and events of that line and of every line before."""
        if not found:
            return self
        out: list[tuple[int, Event]] = []
        k = 0
        mine = self.events
        for lineno, events in found:
            pos = int(np.searchsorted(self.line, lineno, side="right"))
            while k < len(mine) and (mine[k][0] < pos or (mine[k][0] == pos and mine[k][1].line <= lineno)):
                out.append(mine[k])
                k += 1
            out.extend((pos, e) for e in events)
        out.extend(mine[k:])
        red = self.redraws
        if len(red):  # after the events found on the lines before its own, before those found on it
            lines = np.repeat([ln for ln, _ in found], [len(ev) for _, ev in found])
            red = red.with_rank(red.rank + np.searchsorted(lines, red.line, side="left"))
        return Batch(self.source, self.names, self.name, self.step, self.value, self.line, self.time,
                     self.inferred, out, red)


class BatchBuilder:
    """Collects samples and events for one source, then hands them over as a `Batch`.

    Adapters that read line by line (and third-party format plugins) append records; adapters that read
    the scanner's arrays append whole columns with `columns`. Appends of single samples are plain list
    appends: the arrays are built once, in `build`."""

    __slots__ = (
        "_events",
        "_ids",
        "_inferred",
        "_line",
        "_n",
        "_name",
        "_names",
        "_pieces",
        "_redraws",
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
        self._redraws = RedrawColumns()
        self._pieces: list[tuple[np.ndarray, ...]] = []
        self._n = 0  # samples in the pieces

    def __len__(self) -> int:
        return self._n + len(self._value) + len(self._events) + len(self._redraws)

    @property
    def samples(self) -> int:
        return self._n + len(self._value)

    @property
    def names_table(self) -> list[str]:
        """The names by id (`name_id`)."""
        return self._names

    def name_id(self, name: str) -> int:
        i = self._ids.get(name)
        if i is None:
            i = self._ids[name] = len(self._names)
            self._names.append(name)
        return i

    def sample(self, name: str, value: float, step: int | None, line: int, time: float | None = None,
               inferred: bool = False) -> None:
        self._name.append(self.name_id(name))
        self._step.append(column_step(step))
        self._value.append(value)
        self._line.append(line)
        self._time.append(math.nan if time is None else time)
        self._inferred.append(inferred)

    def columns(self, name: np.ndarray, step: np.ndarray, value: np.ndarray, line: np.ndarray,
                time: np.ndarray | None = None, inferred: np.ndarray | None = None) -> None:
        """Samples as arrays of equal length; `name` holds ids from `name_id`."""
        k = len(value)
        if not k:
            return
        self._flush()
        self._pieces.append((
            np.asarray(name, dtype=np.int32), np.asarray(step, dtype=np.int64),
            np.asarray(value, dtype=np.float64), np.asarray(line, dtype=np.int64),
            np.full(k, np.nan) if time is None else np.asarray(time, dtype=np.float64),
            np.zeros(k, dtype=bool) if inferred is None else np.asarray(inferred, dtype=bool)))
        self._n += k

    def _flush(self) -> None:
        """The single samples appended so far become one piece, so pieces stay in log order."""
        if not self._value:
            return
        self._pieces.append((
            np.asarray(self._name, dtype=np.int32), np.asarray(self._step, dtype=np.int64),
            np.asarray(self._value, dtype=np.float64), np.asarray(self._line, dtype=np.int64),
            np.asarray(self._time, dtype=np.float64), np.asarray(self._inferred, dtype=bool)))
        self._n += len(self._value)
        self._name, self._step, self._value, self._line, self._time, self._inferred = [], [], [], [], [], []

    def event(self, event: Event) -> None:
        _steps_that_fit(event)
        self._events.append((self.samples, event))

    def events_ahead(self, events: Iterable[tuple[int, Event]]) -> None:
        """Events that come after the first `k` samples of those the next `columns` call appends, each
        given as (k, event) in log order: an adapter that collects a run of lines as columns meets the
        events among them before it has the columns."""
        base = self.samples
        for k, e in events:
            _steps_that_fit(e)
            self._events.append((base + k, e))

    def progress(self, step: int, total: int | None, line: int) -> None:
        """A progress redraw: the bar stands at `step` of `total` (see `Redraws`), both at most INT64_MAX
        (a larger one goes in as `progress_event`)."""
        self._redraws.add(self.samples, len(self._events), line, step, -1 if total is None else total)

    def redraws_ahead(self, k: np.ndarray, e: np.ndarray, line: np.ndarray, step: np.ndarray,
                      total: np.ndarray) -> None:
        """`events_ahead` for redraws, as columns: each after the first k[i] samples of those the next
        `columns` call appends and the first e[i] events of those the next `events_ahead` gives (call it
        before that), with its line, step and total."""
        self._redraws.add_arrays(k + self.samples, e + len(self._events), line, step, total)

    def mark(self) -> tuple[int, int, int, int]:
        """Where the builder is now, for `rollback` and `fill_time`."""
        return len(self._pieces), len(self._value), len(self._events), len(self._redraws)

    def rollback(self, at: tuple[int, int, int, int]) -> None:
        """Drops what was appended since `mark` (a line whose adapter failed halfway gives nothing)."""
        pieces, singles, events, redraws = at
        if len(self._pieces) != pieces:
            self._flush()
            del self._pieces[pieces + (1 if singles else 0):]
            if singles:
                kept = self._pieces[pieces]
                self._pieces[pieces] = tuple(col[:singles] for col in kept)
            self._n = sum(len(p[2]) for p in self._pieces)
        else:
            for col in (self._name, self._step, self._value, self._line, self._time, self._inferred):
                del col[singles:]
        del self._events[events:]
        if len(self._redraws) != redraws:
            self._redraws.cut(redraws)

    def stepped_samples_since(self, at: tuple[int, int, int, int]) -> tuple[tuple[int, int, float], ...] | None:
        """What was appended since `mark` as (name id, step, value) rows, when it is samples given one at a
        time each with the step its line printed (no events, redraws or columns: a plain metric line);
        None otherwise."""
        pieces, singles, events, redraws = at
        steps = self._step
        if (len(self._pieces) != pieces or len(steps) <= singles or len(self._events) != events
                or len(self._redraws) != redraws or NO_STEP in steps[singles:] or any(self._inferred[singles:])):
            return None
        return tuple(zip(self._name[singles:], steps[singles:], self._value[singles:]))

    def fill_time(self, at: tuple[int, int, int, int], t: float, line: int) -> None:
        """Samples of `line` appended one at a time since `mark` without a time get `t` (its launcher
        prefix's). Columns appended since then keep the times they came with: an adapter writing a line's
        values as columns gives them their time itself; samples of earlier lines that an adapter held back
        until this line are not this line's."""
        pieces, singles = at[0], at[1]
        if len(self._pieces) == pieces:
            times, lines = self._time, self._line
            for i in range(singles, len(times)):
                if times[i] != times[i] and lines[i] == line:
                    times[i] = t

    def record(self, record: Record) -> None:
        if type(record) is Sample:
            self.sample(record.name, record.value, record.step, record.line, record.time, record.step_inferred)
        else:
            self.event(record)  # type: ignore[arg-type]

    append = record

    def extend(self, records: Iterable[Record]) -> None:
        for r in records:
            self.record(r)

    def build(self) -> Batch:
        """The batch so far; the builder starts empty again (the name table is kept)."""
        self._flush()
        pieces = self._pieces
        if len(pieces) == 1:
            cols = list(pieces[0])
        elif pieces:
            cols = [np.concatenate([p[i] for p in pieces]) for i in range(6)]
        else:
            cols = [np.zeros(0, dtype=d) for d in (np.int32, np.int64, np.float64, np.int64, np.float64, bool)]
        name, step, value, line, time, inferred = cols
        red = Redraws(*self._redraws.columns()) if len(self._redraws) else NO_REDRAWS
        b = Batch(self.source, list(self._names), name, step, value, line, time, inferred, self._events, red)
        self._reset()
        return b


class RecordList(list[Record]):
    """A plain list of records that also takes `sample(...)` as a `BatchBuilder` does, so an adapter can
    write one stream of records into either: objects for a line, columns for a chunk."""

    def __init__(self, source: str = "") -> None:
        super().__init__()
        self.source = source

    def sample(self, name: str, value: float, step: int | None, line: int, time: float | None = None,
               inferred: bool = False) -> None:
        self.append(Sample(name, value, step, time, self.source, line, inferred))

    def progress(self, step: int, total: int | None, line: int) -> None:
        self.append(progress_event(self.source, line, step, total))


def from_records(source: str, records: Iterable[Record]) -> Batch:
    """A batch of records already made (the bridge from per-line adapters)."""
    b = BatchBuilder(source)
    b.extend(records)
    return b.build()
