"""CSV metrics: a header, then rows keyed by step, or by epoch when there is no step column.
Tab-separated files are read the same way when their header is split by tabs.

Lightning's CSVLogger (sparse rows, a step column), Keras' CSVLogger (`epoch,accuracy,...,val_loss`,
epoch from 0) and Ultralytics' results.csv (space-padded headers, CRLF, losses split in parts) all fit.
Lightning rewrites the file with a wider header when new keys appear, so a line that looks like a
header (no numbers, a step or epoch column) replaces the current one wherever it turns up.
When the loss is only logged in parts (YOLO's `train/box_loss`, `train/cls_loss`, `train/dfl_loss`
and their `val/` twins) their sum is also given as `loss` / `eval_loss`, the totals rules know.
A GAN's `Gen Loss,Disc Loss` row gives its generator's loss as `loss` too (shapes.generator_as_loss).
TensorBoard's CSV export (`Wall time,Step,Value`) names its one series nowhere inside: the value is named by
the export's file name (`run-<run>-tag-<tag>.csv`, or the one metric word the name holds) and the wall time
is each point's time.
An RL episode monitor (stable-baselines3's and OpenAI baselines' `monitor.csv`: a `#{"t_start": ..}` comment,
then `r,l,t` and any extra info columns) has one row per finished episode: `r` is the episode's reward, `l` its
length, `t` seconds since `t_start`; the episode's number is the step. Lines opening with `#` are comments.
"""

from __future__ import annotations

import csv
import json
import math
import re
from collections.abc import Iterable
from pathlib import PurePath

from trainwatch.adapters.base import Adapter
from trainwatch.adapters.shapes import METRIC_WORDS
from trainwatch.adversarial import generator_as_loss
from trainwatch.model import Record, Sample

STEP_COLUMNS = ("step", "global_step", "trainer/global_step", "iteration", "iter")
EPOCH_COLUMNS = ("epoch", "epochs")  # the step of epoch-only logs
# counters of the other loops a training can count in, read as the step when no step or epoch column is
# there: a genetic algorithm's generation, an RL script's episode
COUNTER_COLUMNS = ("generation", "gen", "episode")
# a loop index's short names, taken as the step only in the first column, where a loop writes its counter
# (`i,time,loss,...`): elsewhere `n` or `i` may be anything
FIRST_COUNTERS = ("i", "it", "idx", "index", "n", "iters", "batch", "update", "round")
# what a column name may hold besides letters and digits: separators, and a unit in brackets
# (`Run Time (s)`, `acc[%]`, `lr@peak`)
UNIT_MARKS = re.compile(r"[_/\-. ()\[\]%@#]")
HEADER_HINTS = ("step", "epoch", "global_step", "iteration", "iter")
PART_PREFIXES = (("train/", "loss"), ("val/", "eval_loss"))  # loss parts by phase, and the total's name
TOTAL_NAMES = ("loss", "train/loss", "train_loss", "val/loss", "val_loss", "eval_loss")
TB_EXPORT = ["wall time", "step", "value"]  # TensorBoard's scalar download, in its column order
MONITOR = ["r", "l", "t"]  # an RL episode monitor's first columns: reward, length, seconds since its t_start
MONITOR_NAMES = ("reward", "episode_length")  # what `r` and `l` are
TB_TAG = "-tag-"  # its file name: run-<run>-tag-<tag, slashes as underscores>.csv


def export_name(source: str) -> str:
    """The series a TensorBoard export holds, from its file name: the tag after `-tag-`, else a name that is
    one word, else the one metric word among the name's words; `value` when the name does not say."""
    stem = PurePath(source).stem if source else ""
    if TB_TAG in stem:
        return stem.rsplit(TB_TAG, 1)[1] or "value"
    words = [w for w in re.split(r"[^A-Za-z0-9]+", stem) if w]
    if len(words) == 1 and not words[0].isdigit():
        return words[0]
    named = {w.lower() for w in words if METRIC_WORDS.search(w)}
    return named.pop() if len(named) == 1 else "value"


def _delimiter(header: str) -> str:
    """Tab-separated files (`step<TAB>loss`) are read like comma-separated ones; the header decides."""
    return "\t" if "\t" in header and "," not in header else ","


def _cells(line: str, delim: str = ",") -> list[str]:
    if '"' in line:
        try:
            return next(csv.reader([line], delimiter=delim))
        except (csv.Error, StopIteration):
            return line.split(delim)
    return line.split(delim)


def _is_number(cell: str) -> bool:
    try:
        float(cell)
        return True
    except ValueError:
        return False


def _cell_float(cell: str) -> float | None:
    try:
        return float(cell)
    except ValueError:
        return None


def _comment_start(line: str) -> float | None:
    """The start time a monitor's `#{"t_start": 1699895683.2, ...}` comment gives, or None."""
    try:
        meta = json.loads(line.lstrip("#"))
    except ValueError:
        return None
    start = meta.get("t_start") if isinstance(meta, dict) else None
    return float(start) if isinstance(start, (int, float)) and not isinstance(start, bool) else None


def _looks_like_header(cells: list[str]) -> bool:
    names = [c.strip() for c in cells]
    if len(names) < 2 or any(not c for c in names) or any(_is_number(c) for c in names):
        return False
    return any(c.lower() in HEADER_HINTS for c in names) or all(
        UNIT_MARKS.sub("", c).isalnum() for c in names)


class CsvMetricsAdapter(Adapter):
    name = "csv"
    description = "CSV metrics with a header row (Lightning and Keras CSVLogger, Ultralytics results.csv)"
    example = "epoch,step,train_loss_step,val_loss\n0,49,2.4513,"  # header and one row
    strip_prefixes = False  # cells, not log lines: "0:" or a date in the first column is data

    def __init__(self, source: str = "") -> None:
        super().__init__(source)
        self.header: list[str] | None = None
        self.delim = ","  # or a tab, as the first header says
        self.step_col = -1
        self.parts: list[tuple[str, list[int]]] = []  # (total's name, columns of its parts)
        self.time_col = -1  # a wall-clock column (TensorBoard's export): each point's time, not a metric
        self.adversarial = False  # a GAN's generator and discriminator columns
        self.episodes = False  # an RL episode monitor: each row is the next episode, its number the step
        self.rows = 0  # rows read since the header
        self.t_start: float | None = None  # a monitor's start time: `t` plus it is the row's time

    @classmethod
    def score(cls, head: str, path: str) -> float:
        lines = [ln.rstrip("\r") for ln in head.split("\n") if ln.strip()]
        while lines and lines[0].startswith("#"):
            lines.pop(0)  # comments over the header (an episode monitor's `#{"t_start": ..}`)
        if not lines:
            return 0.0
        delim = _delimiter(lines[0])
        first = _cells(lines[0], delim)
        if not _looks_like_header(first):
            return 0.0
        rows = lines[1:21]
        if rows and not all(r.count(delim) >= 1 and any(_is_number(c) for c in _cells(r, delim))
                            for r in rows[:-1] or rows):
            return 0.1
        score = 0.6
        if any(c.strip().lower() in HEADER_HINTS for c in first):
            score += 0.25
        if path.endswith(".csv"):
            score += 0.1
        return min(score, 0.95)

    def _set_header(self, cells: list[str]) -> None:
        self.header = [c.strip() for c in cells]
        lowered = [c.lower() for c in self.header]
        self.time_col = -1
        self.rows = 0
        if lowered == TB_EXPORT:
            self.header[2] = export_name(self.source)
            self.time_col = 0
        self.episodes = lowered[:3] == MONITOR
        if self.episodes:
            self.header[:2] = MONITOR_NAMES
            self.time_col = 2
        self.adversarial = len(generator_as_loss([(h, 0.0) for h in self.header])) > len(self.header)
        self.step_col = next((lowered.index(k) for k in STEP_COLUMNS + EPOCH_COLUMNS + COUNTER_COLUMNS
                              if k in lowered), 0 if lowered and lowered[0] in FIRST_COUNTERS else -1)
        self.parts = []
        if not any(n in lowered for n in TOTAL_NAMES):
            for prefix, total in PART_PREFIXES:
                cols = [i for i, c in enumerate(lowered) if c.startswith(prefix) and c.endswith("_loss")]
                if len(cols) >= 2:
                    self.parts.append((total, cols))

    def parse(self, line: str, lineno: int) -> Iterable[Record]:
        line = line.rstrip("\r")
        if line.startswith("#"):
            if self.header is None:
                self.t_start = _comment_start(line)
            return ()
        if self.header is None and line.strip():
            self.delim = _delimiter(line)
        delim = self.delim
        if not line.strip() or delim not in line:
            return ()
        cells = _cells(line, delim)
        if not (line[0] in "0123456789-+.," and self.header is not None) and _looks_like_header(cells):
            self._set_header(cells)  # the first header, or a rewritten wider one
            return ()
        if self.header is None:
            return ()
        header = self.header or []
        self.rows += 1
        step: int | None = self.rows if self.episodes else None
        if 0 <= self.step_col < len(cells):
            try:
                v = float(cells[self.step_col])
                step = int(v) if math.isfinite(v) else None
            except ValueError:
                step = None
        out = []
        src = self.source
        when = _cell_float(cells[self.time_col]) if 0 <= self.time_col < len(cells) else None
        if self.episodes:
            when = when + self.t_start if when is not None and self.t_start is not None else None
        for i, cell in enumerate(cells[:len(header)]):  # ragged rows: extra cells have no name
            if not cell or i == self.step_col or i == self.time_col:
                continue
            try:
                value = float(cell)
            except ValueError:
                continue
            out.append(Sample(header[i], value, step, when, src, lineno, False))
        if self.adversarial:
            named = [(s.name, s.value) for s in out]
            out.extend(Sample(k, v, step, when, src, lineno, False) for k, v in generator_as_loss(named)[len(named):])
        for total, cols in self.parts:
            values = [_cell_float(cells[i]) for i in cols if i < len(cells)]
            if len(values) == len(cols) and all(v is not None for v in values) and any(values):
                # (all parts 0: Ultralytics' placeholder while validation is off, not a perfect loss)
                out.append(Sample(total, sum(values), step, None, src, lineno, False))  # type: ignore[arg-type]
        return out
