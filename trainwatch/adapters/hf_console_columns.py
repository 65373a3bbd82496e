"""Which lines of a Trainer console chunk can be read from the scanner's arrays, and what they hold.

The per-line reader (`HFConsoleAdapter._parse`) finds each printed dict with a regex and reads its
numbers with `float`, which is most of the time a gigabyte log takes. The scanner has found the dicts
and parsed their numbers already, but its grammar is wider than the reader's (thousands separators,
`95%`, nested objects, JSON quotes, `'a':1`, repeated keys), so its numbers stand in only for dicts where
the two readings provably agree: a plain repr of numbers, quoted or not, each key once, nothing else
inside. The line must also hold nothing but such a dict and tqdm bars before it, carry no escape codes
and take no launcher prefix. Every other line goes through the per-line reader, so what a line means
is still decided in one place: the adapter's state machine, which both paths call.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

from trainwatch.adapters.spans import entry_bounds, ranges, repeated_keys
from trainwatch.batch import BatchBuilder, RedrawColumns
from trainwatch.scan import kernels

if TYPE_CHECKING:
    from trainwatch.adapters.pipeline import ChunkLines, SpanCensus
    from trainwatch.model import Event
    from trainwatch.scan import Chunk

SLOW, BAR, DICT = 0, 1, 2
"""What a hit line is: for the per-line reader; a bar and nothing else; a dict (after bars, maybe)."""

# Bytes a plain dict may hold between its braces: printable ASCII, but none the two readers take
# differently (`"` keys, `%` numbers, `[` lists and Keras histories, `\\` escapes, nested braces).
_ALLOWED = np.zeros(256, dtype=bool)
_ALLOWED[0x20:0x7F] = True
for _ch in "\"%[]\\{}":
    _ALLOWED[ord(_ch)] = False
_QUOTE, _COLON, _COMMA, _SPACE = ord("'"), ord(":"), ord(","), ord(" ")


class ConsoleKeys:
    """What each scanner key means to the Trainer reader, as arrays indexed by key id (ids are stable,
    the table only grows)."""

    def __init__(self, step_keys: tuple[str, ...], summary_key: str, known: tuple[str, ...],
                 eval_prefixes: tuple[str, ...]) -> None:
        self._step_keys = frozenset(step_keys)
        self._summary = summary_key
        self._known = frozenset(("epoch", "loss", *known))
        self._eval = eval_prefixes
        self.size = 0
        self.slow = np.zeros(0, dtype=bool)  # a dict holding it goes to the per-line reader
        self.epoch = np.zeros(0, dtype=bool)
        self.eval = np.zeros(0, dtype=bool)
        self.known = np.zeros(0, dtype=bool)  # makes a dict the Trainer's
        self.name = np.zeros(0, dtype=np.int32)  # id in the batch builder's name table

    def update(self, keys: list[str], out: BatchBuilder) -> None:
        if len(keys) == self.size:
            return
        new = keys[self.size:]
        # a printed step, the end-of-training summary and ms-swift's `global_step/max_steps` each change
        # what the dict means; an empty key the reader's regex never matches
        slow = [k in self._step_keys or k == self._summary or "global_step/" in k or not k for k in new]
        self.slow = np.append(self.slow, slow)
        self.epoch = np.append(self.epoch, [k == "epoch" for k in new])
        self.eval = np.append(self.eval, [k.startswith(self._eval) for k in new])
        self.known = np.append(self.known, [k in self._known or k.startswith(self._eval) for k in new])
        self.name = np.append(self.name, [out.name_id(k) for k in new]).astype(np.int32)
        self.size = len(keys)


@dataclass
class LinePlan:
    """Per hit line of a chunk (in `ChunkLines.hits` order); the Python loop reads only the lines no steady
    run takes, one element at a time."""

    how: np.ndarray
    """SLOW, BAR or DICT."""
    bar_from: np.ndarray
    """Offset in the chunk's data where the `\\r`-segment of the line's last `%|` before `bar_to` starts;
    -1 when the line has no `%|` there (no bar to read)."""
    bar_to: np.ndarray
    """Offset the bar is read before: the dict's `{`, or the line's end."""
    line_from: np.ndarray
    """Offset of the line's first byte (a bar not found in its segment is looked for in the whole line)."""
    dict_of: np.ndarray
    """Chunk dict index of a DICT line."""
    bounds: np.ndarray
    """Entries of chunk dict d are [bounds[d], bounds[d + 1])."""
    facts: DictFacts
    """Per chunk dict, what the per-line loop asks of it."""
    plain_bar: np.ndarray
    """Per hit line: its bar is tqdm's plain shape, read here (`plain_bars`), with N and M below."""
    bar_n: np.ndarray
    bar_m: np.ndarray
    arrays: PlanArrays
    """The same facts as arrays, for reading runs of lines at once (`steady`)."""


@dataclass
class DictFacts:
    """Per chunk dict: whether it holds a key that makes it a Trainer log (else the reader ignores it),
    whether it is an evaluation's, and its epoch (NaN when absent or not finite), as arrays; the per-line
    loop reads one dict's at a time."""

    trainer: np.ndarray
    is_eval: np.ndarray
    epoch: np.ndarray

    def of(self, d: int) -> tuple[bool, bool, float | None]:
        """Dict d's facts, its epoch None when it has no finite one."""
        e = float(self.epoch[d])
        return bool(self.trainer[d]), bool(self.is_eval[d]), None if math.isnan(e) else e


@dataclass
class PlanArrays:
    """Per hit line, what `steady` reads a run of lines from, as arrays."""

    hits: np.ndarray
    """The hit lines' indices in the chunk."""
    how: np.ndarray
    plain: np.ndarray
    bar_n: np.ndarray
    bar_m: np.ndarray
    dict_of: np.ndarray
    train: np.ndarray
    """Per hit line: it holds a Trainer train dict (not an evaluation's)."""
    epoch: np.ndarray
    """Per hit line: the epoch of its Trainer dict; NaN when none or not finite."""
    breaks: np.ndarray
    """Hit lines no steady run crosses, ascending (see `steady`)."""

    @cached_property
    def break_list(self) -> list[int]:
        """`breaks` as a list, for `steady` to find the next one by bisection without a numpy call."""
        return self.breaks.tolist()


def plan(chunk: Chunk, lines: ChunkLines, keys: ConsoleKeys) -> LinePlan | None:
    """Which hit lines are read from the arrays; None when none can be (a cut line shifts the data).
    Worked out in the native extension when it is in use (native/src/formats/console.rs), else over numpy
    arrays (`plan_reference`): the same plan either way."""
    hits = lines.hit_lines
    if chunk._cut_line_starts is not None or not len(hits):
        return None
    others = lines.escaped() | ~lines.unprefixed()
    for word in lines.declared():
        if word not in ("{'", "%|"):
            others |= lines.with_keyword(word)
    fine = ~others[hits]
    has_dict = lines.with_keyword("{'")[hits]
    has_bar = lines.with_keyword("%|")[hits]
    got = kernels.console_plan(chunk, hits, (fine, has_dict, has_bar), (keys.slow, keys.known, keys.eval, keys.epoch))
    if got is None:
        return plan_reference(chunk, lines, keys, hits, fine, has_dict, has_bar)
    how, plain, bar_n, bar_m, dict_of = got.how, got.plain, got.bar_n, got.bar_m, got.dict_of
    arrays = PlanArrays(hits, how, plain, bar_n, bar_m, dict_of, got.train, got.train_epoch, got.breaks)
    return LinePlan(how, got.bar_from, got.limit, got.line_from, dict_of, got.bounds,
                    DictFacts(got.trainer, got.is_eval, got.epoch), plain, bar_n, bar_m, arrays)


def plan_reference(chunk: Chunk, lines: ChunkLines, keys: ConsoleKeys, hits: np.ndarray, fine: np.ndarray,
                   has_dict: np.ndarray, has_bar: np.ndarray) -> LinePlan:
    """`plan` over numpy arrays, given each hit line's flags: `fine` (no escape code, no launcher prefix,
    none of the per-line reader's other keywords), a `{'` and a `%|`."""
    base = chunk.base_offset
    buf = np.frombuffer(chunk.data, dtype=np.uint8)
    ls = chunk.line_start[hits] - base
    le = chunk.line_end[hits] - base

    # a dict line: the only `{` of the line is a plain dict, and no bar follows it
    nd = int(chunk.dict_line.shape[0])
    bounds = entry_bounds(chunk)
    d = np.minimum(np.searchsorted(chunk.dict_line, hits), max(nd - 1, 0))
    one_dict = np.zeros(len(hits), dtype=bool)
    if nd:
        per_line = np.bincount(chunk.dict_line, minlength=len(chunk))[hits]
        braces = lines.positions(chunk.data, b"{")
        brace_line = np.searchsorted(chunk.line_start - base, braces, side="right") - 1
        one_brace = np.bincount(brace_line, minlength=len(chunk))[hits] == 1
        one_dict = fine & has_dict & (per_line == 1) & one_brace
        cand = np.flatnonzero(one_dict)
        one_dict[cand[~_plain_dicts(chunk, buf, d[cand], bounds, keys, lines.span_census)]] = False
    ds = np.where(one_dict, chunk.dict_start[d] - base if nd else 0, le)
    de = np.where(one_dict, chunk.dict_end[d] - base if nd else 0, le)

    pct = lines.positions(chunk.data, b"%|")  # where tqdm's bar begins
    last = np.searchsorted(pct, le) - 1
    bar_after = (last >= 0) & (pct[np.maximum(last, 0)] >= de) & one_dict if len(pct) else np.zeros(len(hits), bool)
    dict_line = one_dict & ~bar_after
    bar_line = fine & ~has_dict & has_bar

    limit = np.where(dict_line, ds, le)
    j = np.searchsorted(pct, limit) - 1
    p = pct[np.maximum(j, 0)] if len(pct) else np.zeros(len(hits), dtype=np.int64)
    bar = (j >= 0) & (p >= ls) if len(pct) else np.zeros(len(hits), dtype=bool)
    bar_line &= bar  # the keyword is there, so is its position: this only guards the arithmetic
    cr = lines.positions(chunk.data, b"\r")
    k = np.searchsorted(cr, p) - 1
    seg = np.where((k >= 0) & (cr[np.maximum(k, 0)] >= ls), cr[np.maximum(k, 0)] + 1, ls) if len(cr) else ls

    how = np.where(dict_line, DICT, np.where(bar_line, BAR, SLOW))
    facts = _dict_facts(chunk, keys, nd)
    read = bar & (how != SLOW)
    plain, bar_n, bar_m = np.zeros(len(hits), dtype=bool), np.zeros(len(hits), dtype=np.int64), \
        np.zeros(len(hits), dtype=np.int64)
    at = np.flatnonzero(read)
    if len(at):
        plain[at], bar_n[at], bar_m[at] = lines.plain_bars(chunk.data, p[at], seg[at], limit[at])
    arrays = _arrays(hits, how, bar, plain, bar_n, bar_m, d, facts)
    return LinePlan(how, np.where(bar, seg, -1), limit, ls, d, bounds, facts, plain, bar_n, bar_m, arrays)


def _arrays(hits: np.ndarray, how: np.ndarray, bar: np.ndarray, plain: np.ndarray, bar_n: np.ndarray, bar_m: np.ndarray,
            d: np.ndarray, facts: DictFacts) -> PlanArrays:
    is_dict = how == DICT
    if len(facts.trainer):
        t = facts.trainer[d] & is_dict
        ev = facts.is_eval[d]
        e = facts.epoch[d]
    else:
        t, ev, e = np.zeros(len(how), dtype=bool), np.zeros(len(how), dtype=bool), np.full(len(how), math.nan)
    e = np.where(t & ~ev, e, math.nan)
    with np.errstate(invalid="ignore", over="ignore"):
        fine = np.abs(e * 100 - np.round(e * 100)) > 1e-6
        unsettled = t & (ev | ~(e > 0) | fine)
    breaks = np.flatnonzero((how == SLOW) | (bar & ~plain) | unsettled)
    return PlanArrays(hits, how, plain & bar, bar_n, bar_m, d, t & ~ev, e, breaks)


def _plain_dicts(chunk: Chunk, buf: np.ndarray, dicts: np.ndarray, bounds: np.ndarray,
                 keys: ConsoleKeys, census: SpanCensus) -> np.ndarray:
    """For the given chunk dicts: whether the per-line reader would read exactly the scanner's entries.

    Printable ASCII only, without the bytes the two grammars take differently; one `:` per entry, each
    right after a key's closing quote and before a space (the reader's regex wants `'key': `), so no
    entry lacks a number and no key holds a colon; one `,` between entries, so no number has thousands
    separators; the first key right after `{`; each key once, none of those that change a dict's
    meaning (a printed step, the summary)."""
    base = chunk.base_offset
    start = chunk.dict_start[dicts] - base
    inner = np.maximum(chunk.dict_end[dicts] - base - start - 2, 0)  # bytes between the braces
    n = len(dicts)
    if not n:
        return np.zeros(0, dtype=bool)
    bad, colons, misplaced, commas = census(chunk.data, start + 1, inner, _ALLOWED, _COLON, _QUOTE, _SPACE, _COMMA)
    entries = bounds[dicts + 1] - bounds[dicts]
    opened = buf[np.minimum(start + 1, len(buf) - 1)] == _QUOTE

    # per dict of the chunk: a key that makes the dict slow, or a key twice
    nd = int(chunk.dict_line.shape[0])
    owner, key = chunk.ent_dict, chunk.ent_key
    slow = np.bincount(owner[keys.slow[key]], minlength=nd)[dicts]
    twice = repeated_keys(owner, key, nd)[dicts]
    return ((bad == 0) & (colons == entries) & (misplaced == 0) & (commas == entries - 1) & opened
            & (entries > 0) & (slow == 0) & ~twice)


def _dict_facts(chunk: Chunk, keys: ConsoleKeys, nd: int) -> DictFacts:
    """Per chunk dict: a Trainer dict, an evaluation's, and its finite epoch (NaN when absent or not)."""
    owner, key, value = chunk.ent_dict, chunk.ent_key, chunk.ent_value
    trainer = np.bincount(owner[keys.known[key]], minlength=nd) > 0
    is_eval = np.bincount(owner[keys.eval[key]], minlength=nd) > 0
    epoch = np.full(nd, np.nan)
    has = keys.epoch[key]
    epoch[owner[has]] = value[has]
    epoch[~np.isfinite(epoch)] = np.nan
    return DictFacts(trainer, is_eval, epoch)


def emit(out: BatchBuilder, chunk: Chunk, keys: ConsoleKeys, bounds: np.ndarray, dicts: np.ndarray,
         steps: np.ndarray, linenos: np.ndarray, events: list[tuple[int, Event]],
         redraws: RedrawColumns) -> None:
    """The samples of a run of dict lines read from the arrays, as columns, with the events and progress
    redraws met among them (each after the samples of the dicts before it)."""
    if len(redraws):
        out.redraws_ahead(*redraws.columns())
    if events:
        out.events_ahead(events)
    if not len(dicts):
        return
    got = kernels.dict_entries(chunk, dicts, steps, linenos, bounds, keys.name)  # one pass in the extension
    if got is not None:
        name, step, value, line = got
    else:
        cnt = bounds[dicts + 1] - bounds[dicts]
        ent, _, _ = ranges(bounds[dicts], cnt)
        name, step, value, line = (keys.name[chunk.ent_key[ent]], np.repeat(steps, cnt), chunk.ent_value[ent],
                                   np.repeat(linenos, cnt))
    out.columns(name, step, value, line, inferred=np.ones(len(value), dtype=bool))


STEADY_MIN = 16
"""Fewest hit lines read as one steady run: a shorter run costs less read one line at a time."""
STEADY_MAX = 4096
"""Most hit lines looked at for one run, so a run cut short early costs a bounded look."""


@dataclass
class RunColumns:
    """A steady run as the run buffer takes it, and what the reader's state takes from it."""

    dicts: tuple[np.ndarray, np.ndarray, np.ndarray]
    """Per train dict: chunk dict, step, line number."""
    redraws: tuple[np.ndarray, ...]
    """Per redraw, `RedrawColumns`' five: samples before, events before, line number, step, total."""
    entries: int
    """Samples the run adds."""
    per_epoch: float
    """The most steps per epoch a bar past 0 shows; NaN when none is past 0."""


@dataclass
class SteadyRun:
    """Hit lines [start, end) of a chunk read at once (see `steady`): what the adapter's state machine
    would have made of them one line at a time."""

    start: int
    end: int
    bar_step: int
    """The training bar's step after the run."""
    train: np.ndarray
    """Hit lines (chunk hit indices) holding a train dict."""
    bar_at_train: np.ndarray
    """The bar's step at each of those dicts."""
    epochs: np.ndarray
    """The epoch each of them printed."""
    steps: np.ndarray
    """The step each of them gets."""
    redraws: np.ndarray
    """Hit lines after which a progress redraw is sent (the bar moved)."""
    redraw_steps: np.ndarray
    columns: RunColumns


@dataclass
class RunPlace:
    """Where a steady run's rows go: the chunk's dict bounds and first line number, and how many samples
    and events the run buffer holds before it."""

    bounds: np.ndarray
    first: int
    samples: int
    events: int


def steady(a: PlanArrays, start: int, total: int, bar_step: int, bar_used: int | None,
           progress_sent: int | None, last: int | None, place: RunPlace) -> SteadyRun | int:
    """`steady_reference`, in the native extension when it is in use (and every number fits its int64).
    Most lines a chunk's loop asks about lie too close to the next break for a run: that answer (both
    readings' first test) is given here, by bisection in a list."""
    k = bisect_left(a.break_list, start)
    end = min(a.break_list[k] if k < len(a.break_list) else len(a.how), start + STEADY_MAX)
    if end - start < STEADY_MIN:
        return end
    got = kernels.console_steady((a.breaks, a.plain, a.bar_n, a.bar_m, a.train, a.epoch), start,
                                 (STEADY_MIN, STEADY_MAX), total, bar_step, bar_used, progress_sent, last,
                                 (a.dict_of, a.hits, place.bounds, place.first, place.samples, place.events))
    if isinstance(got, int):
        return got
    if got is not None:
        r, c = got
        return SteadyRun(start, r.end, r.bar_step, r.train, r.bar_at_train, r.epochs, r.steps, r.redraws,
                         r.redraw_steps,
                         RunColumns((c.dicts, r.steps, c.lines),
                                    (c.redraw_samples, c.redraw_events, c.redraw_lines, r.redraw_steps,
                                     c.redraw_totals), c.entries, c.per_epoch))
    return steady_reference(a, start, total, bar_step, bar_used, progress_sent, last, place)


def run_columns(a: PlanArrays, place: RunPlace, total: int, train: np.ndarray, at: np.ndarray,
                epochs: np.ndarray, steps: np.ndarray, redraws: np.ndarray, redraw_steps: np.ndarray) -> RunColumns:
    """The run buffer's columns of a steady run (its fields as `SteadyRun` names them), over numpy arrays."""
    moved = at > 0  # `_train_step` learns steps per epoch from a bar that is past 0
    per_epoch = float((at[moved] / epochs[moved]).max()) if moved.any() else math.nan
    d = a.dict_of[train]
    ends = place.samples + np.concatenate(([0], np.cumsum(place.bounds[d + 1] - place.bounds[d])))
    k = len(redraws)
    return RunColumns((d, steps, place.first + a.hits[train]),
                      (ends[np.searchsorted(train, redraws, side="right")], np.full(k, place.events),
                       place.first + a.hits[redraws], redraw_steps, np.full(k, total)),
                      int(ends[-1]) - place.samples, per_epoch)


def steady_reference(a: PlanArrays, start: int, total: int, bar_step: int, bar_used: int | None,
                     progress_sent: int | None, last: int | None, place: RunPlace) -> SteadyRun | int:
    """The longest run of hit lines from `start` in the Trainer's steady regime, read over arrays; when
    it is shorter than STEADY_MIN, the hit line it stops at (nothing is read).

    The regime (the caller checks the adapter's state is in it: total known, no evaluation running, no
    logging interval, epochs rounded, dicts on time, no trainer_state.json) holds while every line is
    tqdm's plain training bar (M == total) and plain train dicts whose epoch is rounded, positive and
    finite, each after a bar that moved since the last dict. There `_train_step` gives each dict the
    bar's step, raised to one past the previous dict's: step[i] = max(bar[i], step[i - 1] + 1), that is
    i + the running max of bar[j] - j. A redraw is sent after each line where the bar's step changed."""
    k = int(np.searchsorted(a.breaks, start))
    end = min(int(a.breaks[k]) if k < len(a.breaks) else len(a.how), start + STEADY_MAX)
    if end - start < STEADY_MIN:
        return end
    plain, n = a.plain[start:end], a.bar_n[start:end]
    other = np.flatnonzero(plain & (a.bar_m[start:end] != total))  # an evaluation's bar
    if len(other):
        end = start + int(other[0])
    idx = np.maximum.accumulate(np.where(plain[:end - start], np.arange(end - start), -1))
    bar = np.where(idx >= 0, n[np.maximum(idx, 0)], bar_step)  # the bar's step at each line
    train = np.flatnonzero(a.train[start:end])
    at = bar[train]
    prev = np.concatenate(([-1 if bar_used is None else bar_used], at[:-1]))  # steps are never negative
    stale = np.flatnonzero(at == prev)
    if len(stale):  # a dict without a redraw since the last one: stdout is buffered, the regime ends
        cut = int(train[stale[0]])
        end, train, at, bar = start + cut, train[:stale[0]], at[:stale[0]], bar[:cut]
    if end - start < STEADY_MIN:
        return end
    j = np.arange(len(at))
    lift = np.maximum.accumulate(at - j) if len(at) else at
    if last is not None and len(at):
        lift = np.maximum(lift, last + 1)
    before = np.concatenate(([-1 if progress_sent is None else progress_sent], bar[:-1]))
    redraws = np.flatnonzero(bar != before)
    fields = (train + start, at, a.epoch[train + start], j + lift, redraws + start, bar[redraws])
    return SteadyRun(start, end, int(bar[-1]), *fields, run_columns(a, place, total, *fields))
