"""Hugging Face Trainer console output (also axolotl, TRL, LLaMA-Factory, unsloth).

The Trainer prints each log() call as a Python-repr dict without the step, between tqdm redraws
that share physical lines through carriage returns. The step is therefore inferred, and samples
say so with step_inferred=True: from a trainer_state.json next to the log when there is one; else
from the logging interval of a TrainingArguments dump; else from epoch x steps per epoch when
epochs print in full (transformers 5); else from the training bar's N/M before the dict; else
from rounded epochs. Steps never go backwards unless the log says the run resumed. Dicts dated only
by a guessed pace are held until a later line names a step, and re-dated by it (`restep`); a line
that makes a record of another kind, the end of the data, or a live reader that has caught up with
the file (`settle`) lets them go with the steps they have.
Bars alone are a weak witness: tqdm skips redraws, and block-buffered stdout prints dicts late.
Per-line work stays cheap because a log can be a gigabyte: lines without a dict only look at their
last carriage-return segments for a bar.
"""

from __future__ import annotations

import glob
import json
import math
import os
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np

from trainwatch.adapters import hf_console_columns as columns
from trainwatch.adapters.base import Adapter
from trainwatch.adapters.keras_history import history_samples, is_history
from trainwatch.adapters.restep import interval_steps
from trainwatch.batch import INT64_MAX, BatchBuilder, IntColumns, RecordList, RedrawColumns, column_step, progress_event
from trainwatch.model import Event, EventKind, Record

if TYPE_CHECKING:
    from trainwatch.adapters.pipeline import ChunkLines
    from trainwatch.scan import Chunk

PAIR = re.compile(
    r"""'([^'\\]{1,200})':\s*('[^'\\]*'|"[^"\\]*"|[-+]?(?:\d[\d.]*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|[A-Za-z_]\w*))"""
)
DICT_START = re.compile(r"\{'[^'\\]{1,200}':\s")
BAR = re.compile(r"(\d+)%\|[^|\r]{0,400}\|\s*(\d+)/(\d+)\s*\[")
SCORE_DICT = re.compile(r"\{'(?:loss|eval_[\w/-]+|train_runtime|learning_rate|grad_norm|epoch|reward)'\s*:")
SCORE_BAR = re.compile(r"(?:^|\r)\s*\d+%\|[^|\r\n]{0,400}\|\s*\d+/\d+\s*\[\d")
BANNER = re.compile(
    r"(?i)\b(num examples|num epochs|total steps|total optimization steps|(?:instantaneous )?batch size per device"
    r"|gradient accumulation steps|num gpus(?: used)?|number of trainable parameters|trainable parameters"
    r"|total (?:train )?batch size[^=|]*)\s*=\s*`?(\d[\d,]*)"
)
BANNER_FIELDS = {
    "num examples": "num_examples", "num epochs": "num_epochs", "total steps": "total_steps",
    "total optimization steps": "total_steps", "batch size per device": "batch_size",
    "instantaneous batch size per device": "batch_size", "gradient accumulation steps": "grad_accum",
    "num gpus": "world_size", "num gpus used": "world_size", "number of trainable parameters": "params",
    "trainable parameters": "params",
}
LOGGING_STEPS = re.compile(r"\blogging_steps=(\d+)")
NUM_EPOCHS = re.compile(r"\bnum_train_epochs=(\d+(?:\.\d+)?)")
CKPT_STEP = re.compile(r"checkpoint-(\d+)")
GLOBAL_STEP = re.compile(r"global step (\d+)")
STEP_OF_TOTAL = re.compile(r"""'global_step/max_steps':\s*['"](\d+)\s*/\s*(\d+)['"]""")  # ms-swift
STEP_KEYS = ("step", "global_step")
EVAL_PREFIXES = ("eval_", "test_", "predict_")
TRAIN_BARS = frozenset({"train", "training"})  # ms-swift names its training bar
SUMMARY_KEY = "train_runtime"
SUMMARY_LOSS = "train_loss"
KNOWN_KEYS = ("epoch", "loss", "learning_rate", "grad_norm", "train_runtime")
MAX_HELD = 10_000
"""Dicts held for a witness of their steps at most; past it they go with their guessed steps."""


def parse_repr_dict(text: str) -> dict[str, float]:
    """Numeric entries of a printed Python dict; quoted numbers (transformers 5) count, bools do not."""
    out: dict[str, float] = {}
    for key, raw in PAIR.findall(text):
        if raw[0] in "'\"":
            raw = raw[1:-1].strip()
        elif raw in ("True", "False", "None"):
            continue
        try:
            out[key] = float(raw)
        except ValueError:
            continue
    return out


class _StateSteps:
    """Steps of a trainer_state.json beside the log, matched to console dicts in order."""

    def __init__(self, source: str) -> None:
        self.dir = os.path.dirname(os.path.abspath(source)) if source else ""
        self.entries: list[tuple[str, float | None, int]] = []
        self.pos = 0
        self.path: str | None = None
        self.mtime = 0.0
        self.loaded = False

    def _find(self) -> str | None:
        if not self.dir:
            return None
        here = os.path.join(self.dir, "trainer_state.json")
        if os.path.isfile(here):
            return here
        found = glob.glob(os.path.join(glob.escape(self.dir), "checkpoint-*", "trainer_state.json"))
        return max(found, key=os.path.getmtime) if found else None

    def _load(self) -> None:
        self.loaded = True
        path = self._find()
        if path is None:
            return
        try:
            mtime = os.path.getmtime(path)
            if path == self.path and mtime == self.mtime:
                return
            with open(path, encoding="utf-8", errors="replace") as f:
                history = json.load(f).get("log_history") or []
        except (OSError, ValueError, AttributeError):
            return
        self.path, self.mtime = path, mtime
        entries = []
        for e in history:
            if isinstance(e, dict) and isinstance(e.get("step"), int):
                epoch = e.get("epoch")
                entries.append((_kind(e), float(epoch) if isinstance(epoch, (int, float)) else None, e["step"]))
        self.entries = entries

    def step_for(self, kind: str, epoch: float | None) -> int | None:
        if not self.loaded:
            self._load()
        if self.path is None:
            return None  # no state file beside the log when it was first looked for: none is looked for again
        for attempt in (0, 1):
            for i in range(self.pos, len(self.entries)):
                k, ep, step = self.entries[i]
                if k != kind:
                    continue
                if epoch is not None and ep is not None and abs(ep - epoch) > max(0.006, abs(epoch) * 1e-3):
                    continue
                self.pos = i + 1
                return step
            if attempt == 0 and self.path is not None:
                self._load()  # written again at the next checkpoint: newer entries may be there now
        return None


class _Run:
    """Dict lines read from the arrays since the last line read by `parse`: their samples go to the batch
    as columns at once, with the events met among them (it takes events as `out` does)."""

    def __init__(self) -> None:
        self._clear()

    def _clear(self) -> None:
        self.dicts = IntColumns(3)
        """Dict lines read: chunk dict, step, line number."""
        self.events: list[tuple[int, Event]] = []
        self.redraws = RedrawColumns()
        """Progress redraws as columns: samples before, events before, line, step, total."""
        self.samples = 0

    def append(self, event: Event) -> None:
        self.events.append((self.samples, event))

    def progress(self, step: int, total: int, lineno: int) -> None:
        self.redraws.add(self.samples, len(self.events), lineno, step, total)

    def place(self, bounds: np.ndarray, first: int) -> columns.RunPlace:
        """Where a steady run read now puts its rows."""
        return columns.RunPlace(bounds, first, self.samples, len(self.events))

    def bulk(self, cols: columns.RunColumns) -> None:
        """`dict` and `progress` for a steady run at once (its columns made for this buffer, `place`)."""
        self.redraws.add_arrays(*cols.redraws)
        self.dicts.add_arrays(*cols.dicts)
        self.samples += cols.entries

    def dict(self, d: int, step: int, lineno: int, entries: int) -> None:
        self.dicts.add(d, step, lineno)
        self.samples += entries

    def flush(self, out: BatchBuilder, chunk: Chunk, keys: columns.ConsoleKeys, bounds: np.ndarray) -> None:
        if len(self.dicts) or self.events or len(self.redraws):
            dicts, steps, linenos = self.dicts.columns()
            columns.emit(out, chunk, keys, bounds, dicts, steps, linenos, self.events, self.redraws)
            self._clear()


Out = RecordList | BatchBuilder  # where a line's records go: objects (one line) or columns (a chunk)


def _kind(d: dict[str, Any]) -> str:
    if SUMMARY_KEY in d:
        return "summary"
    if any(k.startswith(EVAL_PREFIXES) for k in d):
        return "eval"
    return "train"


def _full_epoch(epoch: float) -> bool:
    """Whether an epoch is printed in full (or 4 digits), not rounded to 2 decimals: then epoch x
    steps-per-epoch is exact. An epoch like 1e308 is not (inf cents)."""
    cents = epoch * 100
    return math.isfinite(cents) and abs(cents - round(cents)) > 1e-6


class HFConsoleAdapter(Adapter):
    name = "hf_console"
    description = "Hugging Face Trainer console: printed metric dicts between tqdm bars (TRL, axolotl, unsloth)"
    example = "{'loss': 2.0592, 'grad_norm': 0.6914, 'learning_rate': 7.17e-05, 'epoch': 0.03}"

    def __init__(self, source: str = "") -> None:
        super().__init__(source)
        self.total: int | None = None  # the training bar's M
        self.bar_total: int | None = None  # M of the last bar seen while `total` is unknown
        self.buffered = False  # dicts arrive late (block-buffered stdout): bars are not their steps
        self.spe_floor = 0.0  # lower bound of steps per epoch, from bars that were on time
        self.spe_seen = 0.0  # steps per epoch from a dict's redrawn bar step and its full epoch
        self.first_epoch: float | None = None
        self.first_step_logged = False
        self.fine_epochs = False
        self.base = 0  # step a resumed run restarted from
        self.bar_step: int | None = None
        self.bar_used: int | None = None  # bar step a train dict already took
        self.progress_sent: int | None = None
        self.last_step: int | None = None
        self.last_train_step: int | None = None
        self.logging_steps: int | None = None
        self.num_epochs: int | None = None
        self.train_count = 0
        self.in_eval = False
        self.num_examples = 0  # from the banner: with the total batch size, the steps in an epoch
        self.total_batch = 0
        self.state = _StateSteps(source)
        self.exact = True  # whether the last train dict's step had a witness (not a guessed pace)
        self.train_sent = 0  # train dicts handed on (not held)
        self.held: list[tuple[str, dict[str, float], int, float | None, int | None]] = []
        self._keys = columns.ConsoleKeys(STEP_KEYS, SUMMARY_KEY, KNOWN_KEYS, EVAL_PREFIXES)

    @classmethod
    def score(cls, head: str, path: str) -> float:
        dicts = len(SCORE_DICT.findall(head))
        if dicts == 1 and not any(k in head for k in ("{'loss'", "'eval_", "'train_runtime'", "'reward'")):
            return 0.5  # one dict of settings (`{'learning_rate': 0.0001, 'momentum': 0.9, ...}`): an echo, unless
            # nothing else reads the log
        if dicts:
            return min(0.95, 0.85 + 0.02 * dicts)
        if is_history(head):
            return 0.5  # a Keras History printout; a fit log around it is the key-value reader's (higher)
        bars = len(SCORE_BAR.findall(head))
        hints = sum(h in head for h in ("***** Running training *****", "Unsloth", "TrainingArguments",
                                        "transformers", "Trainer"))
        if bars and hints:
            return 0.6
        if bars >= 3:
            return 0.4
        return 0.0

    # -- per chunk ----------------------------------------------------------------------------
    chunk_keywords = ("{'", "%|", "=", "***** ", "ing training from", "aving model checkpoint")
    """What `parse` tests a line for; a line with none of them makes no record and changes no state."""

    def parse_chunk(self, chunk: Chunk, keys: list[str], lines: ChunkLines) -> list[Record]:
        """Lines of nothing but tqdm bars and plain metric dicts are read from the scanner's arrays (see
        hf_console_columns); every other line through `parse`, its values straight into the batch."""
        self._keys.update(keys, lines.out)
        self._read_chunk(chunk, lines)
        return []

    def _read_chunk(self, chunk: Chunk, lines: ChunkLines) -> None:
        plan = columns.plan(chunk, lines, self._keys)
        if plan is None:
            for i in lines.hits:
                lines.parse_into(i)
            return
        data, first = chunk.data, chunk.first_lineno
        run = _Run()
        hits = lines.hits
        h, retry = 0, 0
        while h < len(hits):
            if h >= retry and not self.held and self._steady():
                assert self.total is not None and self.bar_step is not None
                got = columns.steady(plan.arrays, h, self.total, self.bar_step, self.bar_used, self.progress_sent,
                                     self.last_train_step, run.place(plan.bounds, first))
                if isinstance(got, int):
                    retry = got + 1  # the line it stopped at is read alone first
                else:
                    self._take(got, run)
                    lines.skip_plain_many(hits[h:got.end])
                    h = got.end
                    continue
            k, i = h, hits[h]
            h += 1
            how = int(plan.how[k])
            if how == columns.SLOW or self.held or (how == columns.DICT and not self.train_sent and self._may_hold(
                    plan.facts.of(int(plan.dict_of[k]))[2], bool(plan.plain_bar[k]) or int(plan.bar_from[k]) >= 0)):
                run.flush(lines.out, chunk, self._keys, plan.bounds)
                lines.parse_into(i)
                continue
            lines.skip_plain(i)
            lineno = first + i
            start = int(plan.bar_from[k])
            if plan.plain_bar[k]:
                self._bar(("", int(plan.bar_n[k]), int(plan.bar_m[k])), lineno, run)
            elif start >= 0:
                end = int(plan.bar_to[k])
                seg = data[start:end].decode("utf-8", "replace")
                bar = self._last_bar(seg, 0, len(seg))
                if bar is None and start > int(plan.line_from[k]):  # the bars before it, as `_last_bar` looks
                    whole = data[int(plan.line_from[k]):end].decode("utf-8", "replace")
                    bar = self._last_bar(whole, 0, len(whole))
                self._bar(bar, lineno, run)
            if how == columns.DICT:
                d = int(plan.dict_of[k])
                trainer, is_eval, epoch = plan.facts.of(d)
                if trainer:
                    step = self._judge("eval" if is_eval else "train", epoch, None)
                    run.dict(d, column_step(step), lineno,
                             int(plan.bounds[d + 1] - plan.bounds[d]))
            self._progress(lineno, run)
        run.flush(lines.out, chunk, self._keys, plan.bounds)

    def _steady(self) -> bool:
        """Whether the reader's state is in the regime `columns.steady` reads runs of lines in."""
        return (self.total is not None and self.bar_step is not None and not self.in_eval and not self.buffered
                and self.logging_steps is None and not self.fine_epochs and self.state.loaded
                and self.state.path is None and self.total <= INT64_MAX and self.bar_step <= INT64_MAX
                and (self.last_train_step or 0) < INT64_MAX // 2)  # numbers the arrays hold, with room

    def _take(self, got: columns.SteadyRun, run: _Run) -> None:
        """The state a steady run leaves, as `_bar`, `_judge` and `_progress` would line by line, and its
        dicts and redraws into the run buffer."""
        at = got.bar_at_train
        if len(at):
            per_epoch = got.columns.per_epoch
            if per_epoch == per_epoch:
                self.spe_floor = max(self.spe_floor, per_epoch)
            if self.first_epoch is None and not self.base:
                self.first_epoch = float(got.epochs[0])
            self.bar_used = int(at[-1])
            self.train_count += len(at)
            self.last_train_step = self.last_step = int(got.steps[-1])
        self.bar_step = self.progress_sent = got.bar_step
        run.bulk(got.columns)

    # -- per line -----------------------------------------------------------------------------
    def parse(self, line: str, lineno: int) -> Iterable[Record]:
        out = RecordList(self.source)
        self._parse(line, lineno, out)
        return out

    def parse_into(self, line: str, lineno: int, out: BatchBuilder) -> None:
        self._parse(line, lineno, out)

    def _parse(self, line: str, lineno: int, out: Out) -> None:
        if self.held:
            self._witness(line, out)
        if "{'" in line:
            self._dict_line(line, lineno, out)
        elif "%|" in line:
            self._bar(self._last_bar(line, 0, len(line)), lineno, out)
        if "=" in line:
            if " = " in line:
                self._banner(line, lineno, out)
            if "num_train_epochs=" in line and self.num_epochs is None:
                m = NUM_EPOCHS.search(line)
                if m:
                    self.num_epochs = max(1, int(float(m.group(1)) + 0.999))
            if "logging_steps=" in line and self.logging_steps is None:
                m = LOGGING_STEPS.search(line)
                if m and int(m.group(1)) > 0:
                    self.logging_steps = int(m.group(1))
                    out.append(Event(EventKind.INFO, self.source, lineno, fields={"logging_steps": self.logging_steps}))
        if "***** " in line:
            self._section(line, lineno, out)
        if "ing training from" in line:
            self._resume(line, lineno, out)
        if "aving model checkpoint" in line:
            m = CKPT_STEP.search(line)
            step = int(m.group(1)) if m else self.last_step
            out.append(Event(EventKind.CHECKPOINT, self.source, lineno, step=step, text=line.strip()[:500]))
        self._progress(lineno, out)

    def _section(self, line: str, lineno: int, out: Out) -> None:
        """The Trainer's `***** ... *****` banners: an evaluation starting (its bar counts batches, not
        steps), and `train metrics`, which `log_metrics("train")` prints once training has ended."""
        if "***** Running Evaluation *****" in line or "***** Running Prediction *****" in line:
            if not self.in_eval:
                self.in_eval = True
                out.append(Event(EventKind.EVAL_START, self.source, lineno, step=self.last_step))
        elif "***** train metrics *****" in line:
            out.append(Event(EventKind.TRAIN_END, self.source, lineno, step=self.last_step, text=line.strip()))

    def _dict_line(self, line: str, lineno: int, out: Out) -> None:
        pos = 0
        while True:
            m = DICT_START.search(line, pos)
            if m is None:
                break
            b = m.start()
            if "%|" in line[pos:b]:
                self._bar(self._last_bar(line, pos, b), lineno, out)
            end = line.find("}", b)
            end = len(line) if end < 0 else end + 1
            nxt = DICT_START.search(line, end)
            self._dict(line[b:end], lineno, out, self._redraw_after(line, end, nxt.start() if nxt else len(line)))
            pos = end
        if "%|" in line[pos:]:
            self._bar(self._last_bar(line, pos, len(line)), lineno, out)

    def _redraw_after(self, line: str, start: int, end: int) -> int | None:
        """N of the training bar that tqdm redraws right after a printed dict on the same physical line
        (`{...}\\r 12%|...| 30/250`): `tqdm.write` redraws the bar at the count the dict was logged at, so
        this N is the dict's step. Only the first redraw counts (later ones are the next steps)."""
        p = line.find("%|", start, end)
        if p < 0:
            return None
        cut = line.find("\r", p, end)
        bar = self._last_bar(line, start, end if cut < 0 else cut)
        if bar is None or self.total is None or bar[2] != self.total or self.in_eval:
            return None
        desc = bar[0]
        if desc and not desc.endswith(("]", ")")) and desc.rstrip(":").strip().lower() not in TRAIN_BARS:
            return None
        return bar[1]

    @staticmethod
    def _last_bar(line: str, start: int, end: int) -> tuple[str, int, int] | None:
        """The last tqdm bar in line[start:end]: found from its "%|" backwards, no scan of the whole line."""
        stop = end
        for _ in range(4):
            p = line.rfind("%|", start, stop)
            if p < 0:
                return None
            q = p
            while q > start and line[q - 1].isdigit():
                q -= 1
            m = BAR.match(line, q, end)
            if m is not None and q < p:
                cut = line.rfind("\r", start, q)
                desc = line[(start if cut < 0 else cut + 1):q].strip()
                close = line.find("]", m.end(), min(end, m.end() + 120))
                rate = line[m.end():close] if close > 0 else ""
                if ("/s" in rate or "s/" in rate) and "it/s" not in rate and "s/it" not in rate:
                    desc = rate.rsplit(" ", 1)[-1]  # examples/s, ba/s, MB/s: a data or download bar, no step
                return desc, int(m.group(2)), int(m.group(3))
            stop = q
        return None

    def _bar(self, bar: tuple[str, int, int] | None, lineno: int, out: Out | _Run) -> None:
        if bar is None:
            return
        desc, n, m = bar
        if desc and not desc.endswith(("]", ")")) and desc.rstrip(":").strip().lower() not in TRAIN_BARS:
            return  # dataset maps, shard loading, ...: not the trainer's bars
        if self.in_eval and m != self.total:
            return  # an evaluation's bar counts its batches
        if self.total is None:  # not known yet: the last bar before the first train dict is the trainer's
            self.bar_step, self.bar_total = n, m
            return
        if m == self.total:
            if self.bar_step is not None and n > self.bar_step:
                self.in_eval = False
            self.bar_step = n
        elif not self.in_eval and self.bar_step is not None:
            self.in_eval = True
            out.append(Event(EventKind.EVAL_START, self.source, lineno, step=self.bar_step,
                             fields={"total": m}))

    def _progress(self, lineno: int, out: Out | _Run) -> None:
        if self.total is not None and self.bar_step is not None and self.bar_step != self.progress_sent:
            if self.held and not isinstance(out, _Run):
                self._release(out)  # a redraw after held dicts: they go first, in the log's order
            self.progress_sent = self.bar_step
            if max(self.bar_step, self.total) <= INT64_MAX:
                out.progress(self.bar_step, self.total, lineno)
            else:  # a number no column holds (log text is untrusted): the redraw goes as an object
                out.append(progress_event(self.source, lineno, self.bar_step, self.total))

    def _dict(self, text: str, lineno: int, out: Out, redraw: int | None = None) -> None:
        if "[" in text and is_history(text):
            out.extend(history_samples(text, self.source, lineno))  # Keras print(history.history)
            return
        values = parse_repr_dict(text)
        if "epoch" not in values and "loss" not in values and not any(
                k in KNOWN_KEYS or k.startswith(EVAL_PREFIXES) for k in values):
            return  # some other printed dict (a config, a batch): not a Trainer log
        kind = "summary" if SUMMARY_KEY in values else "eval" if ("'eval_" in text or "'test_" in text
                                                                    or "'predict_" in text) else "train"
        printed = next((int(values.pop(k)) for k in STEP_KEYS if k in values and math.isfinite(values[k])), None)
        if printed is None and "global_step/" in text:
            m = STEP_OF_TOTAL.search(text)
            if m is not None:  # ms-swift prints the step and the total in every dict
                printed, total = int(m.group(1)), int(m.group(2))
                if total > 0 and total != self.total:
                    self.total = total
                    out.append(Event(EventKind.INFO, self.source, lineno, fields={"total_steps": total}))
        epoch = values.get("epoch")
        if epoch is not None and not math.isfinite(epoch):
            epoch = None  # a blown-up run can print `'epoch': inf`: the line's `'loss': nan` must still count
        if self.held and kind == "train" and redraw is not None and printed is None:
            self._release(out, redraw, at_record=True)  # the bar redrawn at this dict's step dates those held
        step = self._judge(kind, epoch, printed, redraw)
        if printed is None and kind != "summary" and self._holds(kind):
            self.held.append((kind, values, lineno, epoch, step))
            return
        if kind == "train":
            self.train_sent += 1
        if kind == "summary":
            out.append(Event(EventKind.TRAIN_END, self.source, lineno, step=step, text=text[:2000], fields=values))
            if self.train_count == 0 and SUMMARY_LOSS in values:
                # a run that logged no step (logging_steps past its length) printed only this: its mean
                # train loss is the one loss there is; beside logged steps it would read as a jump
                out.sample(SUMMARY_LOSS, values[SUMMARY_LOSS], step, lineno, None, True)
            return
        inferred = printed is None
        for k, v in values.items():
            out.sample(k, v, step, lineno, None, inferred)

    def _judge(self, kind: str, epoch: float | None, printed: int | None, redraw: int | None = None) -> int | None:
        """The step of a Trainer dict of this kind (train, eval, summary), with its finite epoch, the
        step it printed, if any, and the training bar's N redrawn right after it; moves the reader's state
        on. Both the line and the array path call it."""
        if kind == "train":
            self.exact = printed is not None
            step = printed if printed is not None else self._train_step(epoch, redraw)
            self.train_count += 1
            if step is not None:
                self.last_train_step = step
        else:
            step = printed
            if step is None:  # the step training reached: the last dict's, or the bar's when it is newer;
                # a bar that runs ahead of block-buffered dicts (`buffered`) is no step marker: the eval
                # was printed with the dicts, at the last dict's step, however far the bar has gone since
                bar = None if self.buffered and self.last_step is not None else self.bar_step
                known = [s for s in (self.last_step, bar) if s is not None]
                step = max(known) if known else None
            self.in_eval = False
        if step is not None:
            self.last_step = max(step, self.last_step or 0) if kind != "train" else step
        return step

    def _train_step(self, epoch: float | None, redraw: int | None = None) -> int | None:
        """The step of a train dict: trainer_state.json, then the bar redrawn right after the dict,
        epoch x steps per epoch, the logging interval, the bar; never going backwards. Bars alone are not
        trusted: tqdm skips redraws (mininterval) and block-buffered stdout prints dicts long after their
        bar; a redraw on the dict's own line is tqdm.write's, at the dict's step. Such a step with the
        dict's full epoch also gives the real steps per epoch, which a banner's total / epochs misstates
        when max_steps ends the run early."""
        if self.total is None and self.bar_total is not None:
            self.total = self.bar_total
        last = self.last_train_step
        fresh = self.bar_step is not None and self.bar_step != self.bar_used
        if last is not None and self.bar_step is not None and not fresh:
            self.buffered = True  # two dicts without a redraw between: the bar is no step marker
        if fresh:
            self.bar_used = self.bar_step
        if epoch is not None and epoch > 0:
            if self.first_epoch is None and not self.base:  # after a resume the first log is no step 1
                self.first_epoch = epoch
            if fresh and not self.buffered and self.bar_step:
                self.spe_floor = max(self.spe_floor, self.bar_step / epoch)
        step = self.state.step_for("train", epoch)
        if step is not None and last is not None and step <= last:
            step = None  # a stale or unrelated state file
        if step is None and redraw is not None and (last is None or redraw > last):
            step = redraw
            if epoch is not None and epoch > 0 and _full_epoch(epoch):
                self.spe_seen = redraw / epoch
        est = self._epoch_step(epoch) if step is None else None
        if step is None and self.logging_steps:
            if self.train_count == 0 and not self.base and epoch and est is not None and est < self.logging_steps / 2:
                self.first_step_logged = True  # logging_first_step: the first dict is step 1
                step = self.base + 1
            else:
                k = self.train_count + (0 if self.first_step_logged else 1)
                step = self.base + k * self.logging_steps
        witnessed = step is not None  # the state file, the bar redrawn at the dict, or the interval
        if not self.fine_epochs and epoch is not None and _full_epoch(epoch):
            self.fine_epochs = True  # epochs printed in full (or 4 digits): epoch x steps-per-epoch is exact
        if step is None and self.fine_epochs:
            step = est
            witnessed = est is not None and self._spe_exact()
        if step is None and fresh and not self.buffered:
            step = self.bar_step  # epochs rounded to 2 decimals: an on-time bar is closer
            witnessed = True
        if step is None:
            step = est
        if step is None and fresh and not self.buffered:
            step = self.bar_step
            witnessed = True
        if step is None:
            step = (last if last is not None else self.base) + (self.logging_steps or 1)
        if last is not None and step <= last:
            step = last + 1
        self.exact = witnessed
        return step

    def _spe_exact(self) -> bool:
        """Whether the steps per epoch are known, not bounded: seen at a redrawn bar, counted from the data,
        or a banner's total that is a whole number of epochs (a total that is not ends mid-epoch at max_steps)."""
        if self.spe_seen:
            return True
        if not (self.total and self.num_epochs):
            return False
        if self.num_examples and self.total_batch:
            by_data = math.ceil(self.num_examples / self.total_batch)
            if self.total < 0.9 * by_data * self.num_epochs:
                return True
        return self.total % self.num_epochs == 0

    def finish(self) -> list[Record]:
        return self.settle()

    def settle(self) -> list[Record]:
        out = RecordList(self.source)
        self._release(out)
        return out

    # -- dicts held for a witness of their steps (see `restep`) --------------------------------------------------
    def _may_hold(self, epoch: float | None, bar_ahead: bool) -> bool:
        """Whether a dict with this epoch could be held (so it is read line by line): nothing handed on yet,
        no known pace, and no bar on time to date it (`bar_ahead`: its line redraws one before it)."""
        if self.train_sent or self.logging_steps is not None or self.state.path is not None or self._spe_exact():
            return False
        fresh = self.bar_step is not None and self.bar_step != self.bar_used
        on_time = (bar_ahead or fresh) and not self.buffered
        return not on_time or self.fine_epochs or (epoch is not None and _full_epoch(epoch))

    def _holds(self, kind: str) -> bool:
        """Whether this dict, just judged, waits for a witness: a train dict dated by a guessed pace at the
        start of the run, or any dict behind one already waiting."""
        if self.held:
            return len(self.held) < MAX_HELD
        return kind == "train" and not self.exact and self.train_sent == 0 and self.train_count == 1

    def _witness(self, line: str, out: Out) -> None:
        """Before a line that is not one more held dict: a checkpoint names the step the held dicts reached;
        anything else that makes a record of its own (a bar, a banner, a section) lets them go as they are."""
        if not any(k in line for k in self.chunk_keywords):
            return  # a line the block reader would not show this adapter (it reads only lines with these)
        if "aving model checkpoint" in line:
            m = CKPT_STEP.search(line)
            self._release(out, int(m.group(1)) if m else None, at_record=False)
            return
        if "{'" not in line or "%|" in line.split("{'", 1)[0]:
            self._release(out)  # a dict line goes on holding: its own bar, if redrawn after it, is a witness

    def _release(self, out: Out, witness: int | None = None, at_record: bool = False) -> None:
        """Hand the held dicts on, re-dated when the witness step fixes their logging interval."""
        if not self.held:
            return
        held, self.held = self.held, []
        train = [h for h in held if h[0] == "train"]
        epochs = [h[3] for h in train]
        steps: list[int] | None = None
        if witness is not None and train and all(e is not None and e >= 0 for e in epochs):
            steps = interval_steps([float(e) for e in epochs if e is not None], witness, self.base, at_record)
        if steps is not None and not at_record and len(steps) > 1:
            interval = steps[-1] - steps[-2]
            self.logging_steps = interval  # the pace from here on, as a TrainingArguments dump would give it
            self.first_step_logged = steps[1] - steps[0] != interval
        t = 0
        step: int | None = None
        for kind, values, lineno, _epoch, guessed in held:
            if kind == "train":
                step = steps[t] if steps is not None else guessed
                t += 1
                self.train_sent += 1
            else:
                step = step if steps is not None and step is not None else guessed
            for k, v in values.items():
                out.sample(k, v, step, lineno, None, True)
        if steps is not None:
            self.last_train_step = steps[-1]
            self.last_step = max(self.last_step or 0, steps[-1])

    def _steps_per_epoch(self) -> float | None:
        if self.spe_seen:
            return self.spe_seen
        if self.total and self.num_epochs:
            by_data = math.ceil(self.num_examples / self.total_batch) if self.num_examples and self.total_batch else 0
            if by_data and self.total < 0.9 * by_data * self.num_epochs:
                return float(by_data)  # max_steps ends the run inside its first epoch: the data sets the pace
            return self.total / self.num_epochs
        floor = self.spe_floor
        if self.first_epoch:
            floor = max(floor, 1.0 / self.first_epoch)  # the first log is at step 1 or later
        if not 0 < floor < math.inf:  # an epoch like 5e-324 makes the floor infinite: no pace from it
            return None
        if abs(floor - round(floor)) < 1e-3 * floor:
            return float(round(floor))  # steps per epoch are whole numbers in the Trainer
        if self.total:
            epochs = max(1, int(self.total / floor + 1e-6))  # floor is a lower bound: fewest epochs that fit
            return self.total / epochs
        return floor

    def _epoch_step(self, epoch: float | None) -> int | None:
        if epoch is None:
            return None
        spe = self._steps_per_epoch()
        if spe is None:
            return None
        at = epoch * spe
        return int(round(at)) if math.isfinite(at) else None  # an epoch like 1e308 overflows: no step from it

    def _banner(self, line: str, lineno: int, out: Out) -> None:
        fields: dict[str, int] = {}
        for name, raw in BANNER.findall(line):
            key = BANNER_FIELDS.get(name.lower().strip())
            if key is None and name.lower().startswith(("total train batch size", "total batch size")):
                key = "total_batch_size"  # the Trainer's `(w. parallel, ...)`, unsloth's `(1 x 4 x 1)`
            if key is None:
                continue
            try:
                fields[key] = int(raw.replace(",", ""))
            except ValueError:
                continue
        if not fields:
            return
        if "total_steps" in fields:
            self.total = fields["total_steps"]
            if self.bar_step is not None and self.bar_step > self.total:
                self.bar_step = self.bar_total = None  # a bar past the training's end was not the trainer's
        if "num_epochs" in fields:
            self.num_epochs = fields["num_epochs"]
        if fields.get("num_examples", 0) > 0:
            self.num_examples = fields["num_examples"]
        if fields.get("total_batch_size", 0) > 0:
            self.total_batch = fields["total_batch_size"]
        out.append(Event(EventKind.INFO, self.source, lineno, text=line.strip()[:500], fields=fields))

    def _resume(self, line: str, lineno: int, out: Out) -> None:
        if "Resuming training from checkpoint" in line or "Continuing training from" in line:
            m = CKPT_STEP.search(line) or GLOBAL_STEP.search(line)
            step = int(m.group(1)) if m else None
            if step is not None:
                self.base, self.last_train_step, self.train_count = step, None, 0
            out.append(Event(EventKind.RESUME, self.source, lineno, step=step, text=line.strip()[:500],
                             fields={"step": step} if step is not None else {}))
