"""JSON lines: one record per line, step and time under their common names, nested keys joined by '/'.

Framework logs this reads besides plain W&B/custom dumps: Detectron2's metrics.json (`iteration`,
`total_loss`, evaluation rows with `bbox/AP`), MMEngine/mmcv JSON logs (`"mode": "train"|"val"`,
`epoch` with an `iter` that restarts every epoch, `step`), LLaMA-Factory's trainer_log.jsonl
(`current_steps` of `total_steps`). Evaluation rows never move the step backwards: MMEngine keys
them by epoch, and a val row's `loss` is a validation loss.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np

from trainwatch.adapters.base import Adapter, int_number, json_number
from trainwatch.adapters.jsonl_columns import KeyTables, emit_rows, layouts, unsayable
from trainwatch.adapters.spans import byte_counts, entry_bounds
from trainwatch.batch import INT64_MAX
from trainwatch.model import Event, EventKind, Record, Sample
from trainwatch.scan import kernels

if TYPE_CHECKING:
    from trainwatch.adapters.pipeline import ChunkLines, Positions
    from trainwatch.scan import Chunk

try:  # optional speed-up; it rejects NaN literals, so json stays the fallback
    import orjson

    _fast_loads: Any = orjson.loads
except ImportError:  # pragma: no cover - depends on the environment
    _fast_loads = None

# a record that names its step after its phase (fairseq's `"valid_num_updates": "3176"` on a validation
# line, `train_num_updates` on an epoch's summary) is dated by it; an unphased step key comes first
PHASED_STEP_KEYS = tuple(f"{phase}_{key}" for key in ("num_updates", "global_step", "step")
                         for phase in ("train", "valid", "val", "eval", "test"))
STEP_KEYS = ("step", "global_step", "iter", "iteration", "_step", "trainer/global_step", "current_steps",
             "train/global_step", "num_updates", "update", *PHASED_STEP_KEYS)
TIME_KEYS = ("time", "timestamp", "_timestamp", "wall_time", "walltime")
STEP_SET = frozenset(STEP_KEYS)
TIME_SET = frozenset(TIME_KEYS)
TOTAL_KEYS = ("total_steps", "max_steps", "max_iters", "train_iters")
TOTAL_SET = frozenset(TOTAL_KEYS)
TRAIN_HINTS = ("loss", "total_loss", "lr", "learning_rate")  # a row with one of these is a training row
# a record with no step that nests its numbers under one of these names, or says it is one (`"type":
# "config"`), is the run's settings echoed once (`{"type": "config", "argv": [..], "args": {"lr": 2e-5}}`):
# constants, not metrics. runconfig reads the settings from the text; here they would be one-point series
CONFIG_SECTIONS = frozenset(("args", "arguments", "config", "cfg", "hparams", "hyperparameters",
                             "hyper_parameters", "params", "settings", "options", "opts", "flags"))
RECORD_KINDS = ("type", "kind", "event", "record_type")
EVAL_MODES = ("val", "eval", "test", "valid", "validation")
MAX_DEPTH = 6
MAX_SHAPES = 4096  # nested key layouts remembered (a log has a handful; a bound, not a tuning knob)
SAFE_INT = float(2**53)  # steps are ints: beyond this a float no longer says which int was printed
_INT64_MIN = -INT64_MAX - 1
_PARSE, _JUDGE = 1, 2  # why the native pass stopped (`kernels.Stop.why`): 0 is at the end


def _loads(text: str) -> Any:
    if _fast_loads is not None:
        try:
            return _fast_loads(text)
        except ValueError:
            pass
    return json.loads(text)


def array_lines(chunk: Chunk) -> np.ndarray:
    """Per line of the chunk, the index of its dict when the line is nothing but one object of plain JSON
    numbers (the scanner's `dict_json`: nested objects allowed; no strings, literals, lists, NaN or
    lenient numbers), else -1. Such a line means to `json` what the scanner's arrays say, up to repeated
    keys and totals/huge steps, which the caller checks from the keys and values. Whole arrays, no loop
    per line."""
    n = len(chunk)
    out = np.full(n, -1, dtype=np.int64)
    if not chunk.dict_line.shape[0] or chunk._cut_line_starts is not None:
        return out
    single = np.flatnonzero(np.bincount(chunk.dict_line, minlength=n) == 1)
    d = np.searchsorted(chunk.dict_line, single)
    whole = chunk.dict_json[d] & (chunk.dict_start[d] == chunk.line_start[single]) \
        & (chunk.dict_end[d] == chunk.line_end[single])
    out[single[whole]] = d[whole]
    return out


def _flatten(obj: dict[str, Any], prefix: str, out: dict[str, Any], depth: int = 0) -> None:
    for k, v in obj.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            if depth < MAX_DEPTH:
                _flatten(v, key + "/", out, depth + 1)
        else:
            out[key] = v


def _not_settings(obj: dict[str, Any], pairs: list[tuple[str, float]]) -> list[tuple[str, float]]:
    """The pairs of a record without a step that are no settings: none when the record calls itself a
    config, else those not under a section named like one (CONFIG_SECTIONS)."""
    for k in RECORD_KINDS:
        kind = obj.get(k)
        if isinstance(kind, str) and kind.lower() in CONFIG_SECTIONS:
            return []
    return [(k, v) for k, v in pairs if k.split("/", 1)[0].lower() not in CONFIG_SECTIONS]


class JsonLinesAdapter(Adapter):
    name = "jsonl"
    description = "JSON lines: one metrics object per line (custom, Detectron2, MMEngine, LLaMA-Factory)"
    example = '{"step": 10, "loss": 2.31, "lr": 0.0003, "train": {"grad_norm": 1.2}}'

    def __init__(self, source: str = "") -> None:
        super().__init__(source)
        self.last_step: int | None = None
        self.total: int | None = None
        self.epoch_base = 0  # mmcv: steps of the epochs before this one (its `iter` restarts each epoch)
        self.epoch_of_base: float | None = None
        self.last_iter = 0
        self._shapes: dict[tuple[int, ...], int] = {}  # see _nesting_of
        self._nesting = np.full(0, -1, dtype=np.int64)  # see _judge_layout
        self._tables = KeyTables(STEP_KEYS, TIME_SET, TOTAL_SET)

    @classmethod
    def score(cls, head: str, path: str) -> float:
        lines = [ln for ln in head.split("\n")[:-1] if ln.strip()][:200]  # the last one may be cut off
        if not lines:
            lines = [ln for ln in head.split("\n") if ln.strip()][:1]
        if not lines:
            return 0.0
        good = 0
        for ln in lines:
            s = ln.strip()
            if not s.startswith("{"):
                continue
            try:
                obj = _loads(s)
            except (ValueError, RecursionError):
                continue
            if isinstance(obj, dict) and any(json_number(v) is not None for v in obj.values() if type(v) is not bool):
                good += 1
        if not good:
            return 0.0
        frac = good / len(lines)
        bonus = 0.05 if path.endswith((".jsonl", ".ndjson")) else 0.0
        return min(0.95, 0.35 + 0.55 * frac + bonus)

    chunk_keywords = ("{",)  # every line `parse` reads holds an opening brace

    def parse_chunk(self, chunk: Chunk, keys: list[str], lines: ChunkLines) -> list[Record]:
        """Lines that are one object of numbers, nested objects included, are read from the scanner's
        arrays a run of lines at a time (jsonl_columns: nested keys come flattened, as `_flatten` names
        them); every other line with a brace (strings such as MMEngine's "mode", lists, totals, non-finite
        values, repeated keys, JSON the scanner reads more leniently than `json` does, a step that goes
        back) goes through `parse`, so meaning stays the same. With the native scanner one pass decides
        and reads the lines (`_take_native`); the two-step path (`_take_runs`) is its reference."""
        hits = lines.hit_lines
        if not len(hits):
            return []
        self._tables.update(keys, lines.out)
        start = 0
        if chunk._cut_line_starts is None:
            start = self._take_native(chunk, keys, lines, hits)
        if start < len(hits):
            self._take_runs(chunk, keys, lines, hits, start)
        return []

    def _take_runs(self, chunk: Chunk, keys: list[str], lines: ChunkLines, hits: np.ndarray, start: int) -> None:
        """Hit lines `hits[start:]` in two steps: which lines are readable (`_readable`), then the rows of
        each run of readable lines (`emit_rows`)."""
        out = lines.out
        hits = hits[start:]
        readable = self._readable(chunk, keys, lines.positions)[hits]
        ok = readable >= 0
        cuts = np.flatnonzero(ok[1:] != ok[:-1]) + 1
        for a, b in zip([0, *cuts.tolist()], [*cuts.tolist(), len(hits)]):
            if not ok[a]:
                for i in hits[a:b].tolist():
                    lines.parse_into(i)
                continue
            while a < b:
                took, self.last_step = emit_rows(chunk, self._tables, readable[a:b], out, self.last_step)
                if took:
                    lines.skip(int(hits[a + took - 1]))
                a += took
                if a < b:  # its step went back: the per-line rules say what it is
                    lines.parse_into(int(hits[a]))
                    a += 1

    def _take_native(self, chunk: Chunk, keys: list[str], lines: ChunkLines, hits: np.ndarray) -> int:
        """The hit lines read by the native pass (native/src/formats/jsonl.rs), which decides each line as
        `_readable` does and gives the rows of the readable ones as `emit_rows` does, in one call up to
        the lines for `parse` (it says how many follow) or a nesting layout to judge (`_judge_layout`
        does it here and remembers). Returns where the two-step path must go on: at the end of `hits`,
        at the first line met while the last step is past int64 (which only Python's ints hold), or at
        a line whose layout no table holds (past MAX_SHAPES: a log printing its keys in ever new orders,
        where asking line by line would cost a round trip each; the two steps judge a chunk's at once).
        At 0 when the native core is not in use: the two steps are its reference."""
        ch, t = chunk, self._tables
        given = kernels.jsonl_take_input(ch, (t.is_step, t.is_total, t.rank, t.is_time, t.name), hits)
        if given is None:
            return 0
        out = lines.out
        k, n, asked = 0, len(hits), -1
        while k < n:
            if self.last_step is not None and not _INT64_MIN <= self.last_step <= INT64_MAX:
                return k
            rows, (stop, count, d, _) = kernels.jsonl_take(given, self._nesting, k, ch.first_lineno, self.last_step,
                                                           SAFE_INT)
            took, self.last_step = rows.take, rows.last_step
            out.columns(*rows.columns)
            if took:
                lines.skip(int(hits[k + took - 1]))
                k += took
            if stop == _PARSE:
                for i in hits[k:k + count].tolist():
                    lines.parse_into(i)
                k += count
            elif stop == _JUDGE:
                if k == asked or not self._judge_layout(ch, keys, d):
                    return k  # (asked again where it was just answered: never so, but no endless loop)
                asked = k
        return n

    def _judge_layout(self, chunk: Chunk, keys: list[str], d: int) -> bool:
        """Judges the nesting layout of dict `d` and remembers by the scanner's layout id the one count
        of nested objects with which its lines are readable (`_nesting_of`; 0 when none is), so the
        native pass asks once per layout whatever counts its lines hold. False when the layout id is past
        MAX_SHAPES (the scanner gives such ids to one dict each): nothing is remembered."""
        layout = int(chunk.dict_layout[d])
        if not 0 <= layout < MAX_SHAPES:
            return False
        a, b = chunk.ent_dict.searchsorted((d, d + 1)).tolist()
        count = self._nesting_of(keys, chunk.ent_key[a:b].tolist())
        if layout >= len(self._nesting):
            grown = np.full(min(MAX_SHAPES, max(16, 2 * (layout + 1))), -1, dtype=np.int64)
            grown[:len(self._nesting)] = self._nesting
            self._nesting = grown
        self._nesting[layout] = max(count, 0)
        return True

    def _readable(self, chunk: Chunk, keys: list[str], positions: Positions) -> np.ndarray:
        """Per line of the chunk, its dict when the arrays say everything `_records` needs of it, else -1:
        a whole-line object of JSON numbers (`array_lines`) that `unsayable` does not rule out, and, when
        it nests objects, no `/` inside and a layout `_nesting_known` accepts. The native extension
        decides all but the last in one pass without the GIL (native/src/formats/readable.rs); this numpy path
        is its reference."""
        if chunk._cut_line_starts is None:
            got = self._readable_native(chunk, keys)
            if got is not None:
                return got
        return self._readable_reference(chunk, keys, positions)

    def _readable_reference(self, chunk: Chunk, keys: list[str], positions: Positions) -> np.ndarray:
        """`_readable` over numpy arrays."""
        per_line = array_lines(chunk)
        at = np.flatnonzero(per_line >= 0)
        if not len(at):
            return per_line
        bounds = entry_bounds(chunk)
        dicts = per_line[at]
        bad = unsayable(chunk, self._tables, dicts, SAFE_INT)
        start, end = chunk.dict_start[dicts], chunk.dict_end[dicts]
        objects = byte_counts(chunk, positions, b"{", start, end) - 1
        nested = np.flatnonzero(objects > 0)
        if len(nested):
            bad[nested[byte_counts(chunk, positions, b"/", start[nested], end[nested]) > 0]] = True
            layout, first = layouts(chunk, dicts[nested])
            verdict = np.array([self._nesting_known(keys, chunk.ent_key[bounds[d]:bounds[d + 1]].tolist(),
                                                    int(objects[nested[f]]))
                                for f, d in zip(first.tolist(), dicts[nested][first].tolist())], dtype=bool)
            same_objects = objects[nested] == objects[nested][first][layout]
            fine = same_objects & verdict[layout]
            bad[nested[~fine]] = True
        per_line[at[bad]] = -1
        return per_line

    def _readable_native(self, chunk: Chunk, keys: list[str]) -> np.ndarray | None:
        """`_readable` from the native pass (None when the native core is not in use): only the layouts
        of nested objects are judged here, one line per layout (the pass has already ruled out a line
        whose count of objects differs from it)."""
        ch, t = chunk, self._tables
        got = kernels.jsonl_readable(ch, t.is_step, t.is_total, SAFE_INT)
        if got is None:
            return None
        per_line, group, first, objects = got
        if len(first):
            a = ch.ent_dict.searchsorted(first)
            b = ch.ent_dict.searchsorted(first + 1)
            verdict = np.array([self._nesting_known(keys, ch.ent_key[i:j].tolist(), n)
                                for i, j, n in zip(a.tolist(), b.tolist(), objects.tolist())], dtype=bool)
            nested = np.flatnonzero(group >= 0)
            per_line[nested[~verdict[group[nested]]]] = -1
        return per_line

    def _nesting_known(self, keys: list[str], ids: list[int], objects: int) -> bool:
        """Whether the flattened entries `ids` of a line holding `objects` nested objects (and no `/` in
        any key, so every `/` in a name joins a path) say the line's meaning exactly (`_nesting_of`)."""
        return self._nesting_of(keys, ids) == objects

    def _nesting_of(self, keys: list[str], ids: list[int]) -> int:
        """The one count of nested objects with which a line whose flattened entries are `ids` (and no
        `/` in any key, so every `/` in a name joins a path) says its meaning exactly, else -1: each
        nested object has its own path that some number lies under (so no object key is repeated within
        an object, none is empty or deeper than `_flatten` goes), no path is also a number's key, and no
        top-level object is named like a training hint (`parse` tests those keys for presence, not for
        numbers) or like settings (CONFIG_SECTIONS: `parse` keeps them only in a record with a step).
        Lines of a log share a few layouts, so the answer is remembered per layout."""
        shape = tuple(ids)
        known = self._shapes.get(shape)
        if known is None:
            names = [keys[k] for k in ids]
            paths = {name[:j] for name in names for j, ch in enumerate(name) if ch == "/"}
            known = len(paths) if paths.isdisjoint(names) and paths.isdisjoint(TRAIN_HINTS) \
                and not any(q.lower() in CONFIG_SECTIONS for q in paths) else -1
            if len(self._shapes) >= MAX_SHAPES:
                self._shapes.clear()
            self._shapes[shape] = known
        return known

    def parse(self, line: str, lineno: int) -> Iterable[Record]:
        if line[:1] != "{":
            line = line.strip()
            if line[:1] != "{":
                return ()
        try:
            obj = _loads(line)
        except (ValueError, RecursionError):
            return ()
        if type(obj) is not dict:
            return ()
        return self._records(obj, lineno)

    def _records(self, obj: dict[str, Any], lineno: int) -> list[Record]:
        step: int | None = None
        when: float | None = None
        pairs: list[tuple[str, float]] = []
        steps: dict[str, int] = {}  # step-like keys found; the first of STEP_KEYS wins (MMEngine: step, not iter)
        for k, v in obj.items():
            t = type(v)
            if t is float:
                pass
            elif t is int:
                if v.bit_length() > 1000:  # maybe past the largest float: as a step exact, else as json reads 1e400
                    if k in STEP_SET and k not in steps:
                        steps[k] = v
                        continue
                    v = int_number(v)
            elif t is dict:
                flat: dict[str, Any] = {}
                _flatten(v, k + "/", flat)
                for fk, fv in flat.items():
                    n = json_number(fv)
                    if n is not None:
                        if fk in STEP_SET and fk not in steps and math.isfinite(n):
                            steps[fk] = int(n)
                        else:
                            pairs.append((fk, n))
                continue
            elif t is str:
                v = json_number(v)
                if v is None:
                    continue
            else:
                continue  # bools, lists, null
            if k in STEP_SET:
                if k not in steps and math.isfinite(v):
                    steps[k] = int(v)
                    continue
            elif k in TIME_SET and when is None and v > 1e8 and math.isfinite(v):
                when = v / 1000.0 if v > 1e11 else v  # milliseconds since the epoch
                continue
            pairs.append((k, float(v)))
        if steps:
            step = next(steps[k] for k in STEP_KEYS if k in steps)
        elif pairs:
            pairs = _not_settings(obj, pairs)
        src = self.source
        out: list[Record] = []
        mode = obj.get("mode")
        evaluating = isinstance(mode, str) and mode.lower() in EVAL_MODES
        inferred = False
        if evaluating or (step is not None and self.last_step is not None and step < self.last_step
                          and not any(k in obj for k in TRAIN_HINTS)):
            step = self.last_step  # an evaluation row keyed by its epoch: it belongs where training is
            if evaluating:
                pairs = [("eval_" + k if k.startswith("loss") else k, v) for k, v in pairs]
        elif isinstance(mode, str) and "iter" in steps and len(steps) == 1 and "epoch" in obj:
            step, inferred = self._mmcv_step(obj, steps["iter"])
        if step is not None and not evaluating:
            self.last_step = step
            total = next((obj[k] for k in TOTAL_KEYS if type(obj.get(k)) is int and obj[k] > 0), None)
            pairs = [(k, v) for k, v in pairs if k not in TOTAL_KEYS]
            if total is not None and total != self.total:
                self.total = total
                out.append(Event(EventKind.PROGRESS, src, lineno, step=step, time=when,
                                 fields={"step": step, "total": total}))
        out.extend(Sample(k, v, step, when, src, lineno, inferred) for k, v in pairs)
        return out

    def _mmcv_step(self, obj: dict[str, Any], it: int) -> tuple[int, bool]:
        """mmcv's epoch-based runner logs the iteration within the epoch: the steps of the epochs
        before (the last iteration each logged, a slight undercount) are added, and marked inferred."""
        epoch = obj.get("epoch")
        if isinstance(epoch, (int, float)) and self.epoch_of_base is not None and epoch > self.epoch_of_base \
                and it <= self.last_iter:
            self.epoch_base += self.last_iter
        if isinstance(epoch, (int, float)):
            self.epoch_of_base = float(epoch)
        self.last_iter = it
        return self.epoch_base + it, self.epoch_base > 0
