"""The template reader: metric lines of any shape that no specific adapter claims.

Home-made loops print their metrics in shapes no format names: `Epoch:[  0/120],step:[ 10/197],loss:1.48|lr:0.01`,
`[epoch:3/1200] [loss:0.0041]`, stable-baselines3's boxed `| key | value |` tables, space-aligned tables
under a header row, tqdm bars whose postfix holds the loss (PyTorch Lightning's console among them) or
whose description does (`Epoch [0][198/1200] ... Loss 200.35 (260.9) :  17%|`), training bars with no
metric at all (they still say how far training got),
`Validation mIOU: [0.60, 0.80]` after an `Epoch 3` line. Lines that recur with the same shape and other
numbers are series named by their keys or by the table's header; counters (epoch, step, iter, batch,
update, round, outer, tick, `a/b`) give the step, the training loop's own counter first, so that an
evaluation bar or a data-loading bar never moves it. Everything else is read as the key-value reader
reads it (this adapter is that reader with more shapes), so the fallback never knows less than it.

It claims a file only when the key-value reader does not and its own probe reads records: any adapter
that recognises a file keeps it, and a file of prose and errors stays with the `text` adapter.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable

import numpy as np

from trainwatch.adapters import shapes, table_rows
from trainwatch.adapters.cjk import translate
from trainwatch.adapters.jsonl import JsonLinesAdapter
from trainwatch.adapters.keyvalue import RUNNING_MEAN, STAMP, KeyValueAdapter, _pairs, _stamp
from trainwatch.adversarial import generator_as_loss
from trainwatch.model import Event, EventKind, Record, Sample

SCORE = 0.41  # over `text` (0.31) and a console of bare tqdm bars (0.4); under every format that names itself
TABLE_SCORE = 0.35  # a headerless numeric table: over `text`, under a probe that read records
MIN_RECORD_LINES = 3
PROBE_LINES = 2000  # the head lines detection parses
PROBE_TAIL_LINES = 1000  # and the last lines of a longer sample, parsed afresh
DETECT_THRESHOLD = 0.3
STEP_NAMES = ("total_timesteps", "timesteps", "global_step", "step", "steps", "iteration", "iterations", "iter",
              "n_updates", "epoch")


class TemplateAdapter(KeyValueAdapter):
    name = "template"
    description = ("Any other metric lines: bracketed counters, compact key:value|key:value, boxed and "
                   "aligned tables, tqdm/Lightning postfix bars, per-class lists")
    example = "=== Epoch:[  0/120],step:[ 10/197],total_loss:17.38|loss_ciou:2.10|lr:0.0001"

    def __init__(self, source: str = "") -> None:
        super().__init__(source)
        self.box: list[tuple[str, float]] | None = None  # a boxed table being gathered
        self.box_line = 0
        self.section = ""
        self.header: list[str] | None = None
        self.total_loss = False  # a `total` beside its parts was read as the loss
        self.headers: list[list[str]] = []  # the last few headers: a row under a banner is still its table's
        self.epoch_base: int | None = None  # 0 or 1: where this log's epochs count from
        self.bar_base = 0  # steps of the bars before, for bars with no epoch in their description
        self.alone_epoch: int | None = None  # the last `Epoch N` line alone, and whether metrics followed it
        self.alone_logged = False
        self.bar_last: tuple[int, int] | None = None
        self.bar_shown: dict[str, float] = {}  # the last value taken of each postfix key held between evaluations
        self.row_base = 0  # the same, for `[epoch] step` rows whose step restarts each epoch
        self.row_last: tuple[int, int] | None = None
        self.finer = False  # a counter finer than the epoch was seen: an `Epoch N` line no longer steps
        self.headed = False  # a counter alone on its line (`[Round 3/10]`) dates the metric lines after it
        self.rich_step: int | None = None  # the step of a Rich bar just read: its wrapped metric lines follow
        self.rich_read = False  # a Rich training bar showed a metric: a training log, even from one redraw
        self.json = JsonLinesAdapter(source)  # `[train_inner][INFO] - {"loss": "0.264", ...}`: a dict after a tag
        self._plan_of: list[str] | None = None  # the header `_plan` was made for (held: `is` stays true to it)
        self._plan: table_rows.RowPlan | None = None

    @classmethod
    def score(cls, head: str, path: str) -> float:
        lines = head.split("\n")
        if (plain := KeyValueAdapter.score(head, path)) >= DETECT_THRESHOLD:
            # the key-value reader claims it and reads it the same way, unless its records are a training
            # table's (`Epoch  Batch  loss` rows of `a/b` counters) that only this reader reads: then this
            # reader, which reads the key-value lines between the rows as that reader does, claims it; so it
            # does when its records are JSON dicts after a logger's tags, which the key-value reader does not read
            head_lines = lines[:PROBE_LINES]
            return plain + 0.001 if shapes.counted_table(head_lines) or shapes.tagged_dicts(head_lines) else 0.0
        if len(lines) > 1:  # the last may be cut off mid-line: its whole redraws are kept (a console that
            last = lines.pop()  # is one line of tqdm redraws has no other)
            if "\r" in last:
                lines.append(last[:last.rfind("\r")])
        # the head, and the tail read by a fresh probe: a preamble of thousands of lines (config dumps,
        # model summaries, debug prints) can hold every metric line past the head
        parts = [lines[:PROBE_LINES]]
        if len(lines) > PROBE_LINES:
            parts.append(lines[max(PROBE_LINES, len(lines) - PROBE_TAIL_LINES):])
        for part in parts:
            if cls._probe(part):
                return SCORE
        if shapes.numeric_table(lines):
            return TABLE_SCORE  # headerless rows: only the lines in words between them are read
        return 0.0

    @classmethod
    def _probe(cls, lines: list[str]) -> bool:
        """Whether `lines` hold enough records of one template to call the file this reader's."""
        probe = cls("")
        hits = 0
        for i, line in enumerate(lines):
            try:
                got = list(probe.parse(line, i + 1))
                if "\r" in line and "%|" not in line and len({r.step for r in got if type(r) is Sample}) < 2:
                    # each redraw of a table row a record, though the rows of one epoch share its step
                    hits += sum(any(type(r) is Sample for r in probe.parse(redraw, i + 1)) for redraw in _redraws(line))
            except Exception:
                got = []
            # records, not lines: one physical line of tqdm redraws holds a record per step
            hits += min(MIN_RECORD_LINES, len({r.step for r in got if type(r) is Sample or getattr(r, "kind", None)
                                                is EventKind.PROGRESS}))
            if hits >= MIN_RECORD_LINES:
                return True
        # a Rich bar is written once, at its end, when no terminal shows it: one redraw of a training bar
        # with its metrics is a training log (`Epoch 0/-2 ━━━ 150/150 ... train_loss: 1.059`)
        return probe.rich_read

    def parse(self, line: str, lineno: int) -> Iterable[Record]:
        out = self._parse(translate(line) if not line.isascii() else line, lineno)
        if self.alone_epoch is not None and not self.alone_logged and any(type(r) is Sample for r in out):
            self.alone_logged = True  # metrics after an `Epoch N` line: a later `Epoch 1` is a new training
        return out

    def _parse(self, line: str, lineno: int) -> list[Record]:
        if self.header is not None and (row := self._header_row(line, lineno)) is not None:
            return row
        if "%|" in line:
            return self._bars(line, lineno, "=" not in line)  # no postfix: the metrics are in the description
        if self.rich_step is not None:
            if (wrapped := shapes.RICH_WRAPPED.match(line.rstrip())) is not None:
                out_w: list[Record] = []
                self._emit(self.rich_step, shapes.rich_items(wrapped.group("items")), lineno, out_w)
                self.rich_read = self.rich_read or bool(out_w)
                return out_w
            self.rich_step = None
        if "•" in line and (rich := shapes.RICH_BAR.match(line.strip())) is not None:
            return self._rich_bar(rich, lineno)
        if "\r" in line:
            line = line.rstrip("\r")
            line = line[line.rfind("\r") + 1:]
        text = line.strip()
        out: list[Record] = []
        if text[:1] == "|" and text[-1:] == "|" and len(text) > 2:
            got = self._boxed(text, lineno)
            if got is not None:
                return got
        if self.box is not None:
            out.extend(self._flush_box())
        if not text or shapes.DIGIT.search(text) is None:
            if text and (cells := shapes.header_cells(text)) is not None:
                self.header = cells
                shapes.remember_header(self.headers, cells)
            return out
        if text[-1:] == "}" and (brace := text.find('{"')) > 0:
            got = list(self.json.parse(text[brace:], lineno))
            if got:
                self._json_step(got)
                return out + got
        when = None
        if text[:1] in "[0123456789" and (st := STAMP.match(text)) is not None:
            when = _stamp(st.group(1), st.group(2), st.group(3))
        if "[epoch:" in text[:80] and self._basicsr(text, lineno, when, out):
            return out  # BasicSR's `[epoch: 3, iter: 4,900, lr:(2e-4,)]`: the key-value reader's own shape, whole
        if self.header is not None and self.printed_step is not None \
                and (turned := shapes.transposed_row(text, self.header)) is not None:
            out.extend(Sample(k, v, self.printed_step, when, self.source, lineno, True) for k, v in turned)
            return out
        if (values := shapes.row_values(text)) is not None:
            if self.header is not None and len(values) == len(self.header):
                self._record(list(zip(self.header, values)), [], lineno, when, out)
            return out
        if (m := shapes.EPOCH_ALONE.match(text)) is not None:
            self._epoch_line(int(m.group("e")), lineno, out)
            return out
        if (m := shapes.COUNTER_ALONE.match(text)) is not None:
            self._loop_counter(int(m.group("n")), int(m.group("t") or 0), lineno, when, out)
            return out
        if (prose := shapes.prose_metric(text)) is not None:
            self._record([prose[:2]], [prose[2]], lineno, when, out)
            return out
        if text[:1] == "[" and (m := shapes.COUNTER_HEAD.match(text)) is not None:
            self._counter_row(int(m.group("e")), int(m.group("i")), text[m.end():].strip(), lineno, when, out)
            return out
        pairs, counters = shapes.compact_pairs(text) if ":" in text or "=" in text else ([], [])
        if pairs and not counters and (lead := shapes.lead_counter(text)) is not None:
            counters = [lead]  # `Global-step 34 --Accept update with kl=2e-07, old=-3.8`
        if pairs and all(c.name in shapes.EPOCH_NAMES for c in counters):
            pairs, counters = _headed(pairs, counters, text)
        elif not pairs and (worded := self._worded(text)) is not None:
            pairs, counters = worded
        if pairs and any(c.name not in shapes.EPOCH_NAMES for c in counters):
            self._record(pairs, counters, lineno, when, out)  # the training loop's counter: the step is exact
            return out
        if (self.finer or self.headed) and self.printed_step is not None and len(text) < 200 and ":" in text:
            lone, nfields, dirty = _pairs(text)
            if lone and not dirty and len(lone) == nfields and all(shapes.METRIC_WORDS.search(k) for k, _ in lone):
                # `Validation loss: 5.87` between counted training lines: an evaluation at the step they reached
                out.extend(Sample(k, v, self.printed_step, when, self.source, lineno, True) for k, v in lone)
                return out
        held = len(self.held)
        got = list(super().parse(line, lineno))
        read = any(type(r) is Sample for r in got) or len(self.held) != held  # held: read once its keys recur
        if pairs:
            if counters and not read:  # an epoch counter, on a line the key-value reader cannot read
                self._record(pairs, counters, lineno, when, out)
                return out
            if not read and self.printed_step is not None and len(pairs) <= 4 \
                    and any(shapes.METRIC_WORDS.search(k) for k, _ in pairs):
                # `===test mAP:0.113` after the training lines: an evaluation at the step they reached
                out.extend(Sample(k, v, self.printed_step, when, self.source, lineno, True) for k, v in pairs)
                return out
        return out + got

    # -- runs of plain table rows, from the bytes ----------------------------------------------------
    def read_rows(self, data: bytes, start: int, end: int, lineno: int) -> table_rows.Rows | None:
        """The rows of the table under the current header that start at data[start:end] (whole lines,
        the first numbered `lineno`), read at once: the records and the state `parse` would give them line
        by line (see trainwatch/adapters/table_rows.py), or None (nothing taken) when the first line is no
        such row or the reader is in a state where a row can mean more."""
        if self.header is None or self.rich_step is not None or self.box is not None:
            return None
        if self._plan_of is not self.header:
            self._plan_of, self._plan = self.header, table_rows.plan_for(self.header)
        plan = self._plan
        if plan is None:
            return None
        values = table_rows.run_values(plan, data, start, end)
        if values is None:
            return None
        rows = len(values)
        inner = np.trunc(values[:, plan.inner]).astype(np.int64)
        if plan.by_epoch:  # `_record`: the epoch is the step
            self._epoch_base(int(inner[0]))
            step, inferred = inner, np.zeros(rows, dtype=bool)
        elif plan.epoch < 0:  # the finest counter is the step
            self.finer = True
            step, inferred = inner, np.zeros(rows, dtype=bool)
        else:  # a batch counter beside the epoch: `_global_step`, row by row, as one pass
            self.finer = True
            epoch = np.trunc(values[:, plan.epoch])
            last = self.inner_last
            prev_e = np.empty(rows)
            prev_n = np.empty(rows, dtype=np.int64)
            prev_e[1:], prev_n[1:] = epoch[:-1], inner[:-1]
            prev_e[0], prev_n[0] = (last[0], last[1]) if last is not None else (np.inf, 0)
            restarted = (epoch > prev_e) & (inner <= prev_n)
            base = self.inner_base + np.cumsum(np.where(restarted, np.maximum(prev_n, 1), 0))
            step, inferred = base + inner, base > 0
            self.inner_base = int(base[-1])
            self.inner_last = (float(epoch[-1]), int(inner[-1]))
            self.inner_closed = True
        self.printed_step = int(step[-1])
        if self.alone_epoch is not None:
            self.alone_logged = True
        return table_rows.Rows(rows, plan.names, step, values[:, plan.kept], lineno + np.arange(rows), inferred)

    # -- shapes ---------------------------------------------------------------------------------
    def _json_step(self, got: list[Record]) -> None:
        """A dict's records without a step of their own (fairseq's `[valid]` summary) join the step the
        dicts before reached; those with one move it."""
        steps = [r.step for r in got if type(r) is Sample and r.step is not None]
        if steps:
            self.printed_step = steps[-1]
            return
        for r in got:
            if type(r) is Sample and self.printed_step is not None:
                r.step, r.step_inferred = self.printed_step, True

    def _bars(self, line: str, lineno: int, described: bool = False) -> list[Record]:
        """tqdm redraws: training bars give the step (epoch x total + position, or positions summed over
        bars that restart) and their postfix the metrics, one record per step with its last redraw's
        values. Evaluation, sanity-check and data bars are passed over: their counters are no steps.
        `described`: bars with no postfix, whose description holds the metrics (`Epoch [0][198/1200]
        Time/b 0.22 (0.32) Loss 200.35 (260.9) :  17%|...`)."""
        out: list[Record] = []
        pending: tuple[int, shapes.Bar, bool] | None = None
        plain: tuple[int, int | None] | None = None  # the last bare training bar: progress, no metric
        done: shapes.Bar | None = None  # the last finished evaluation bar: its postfix is the evaluation's result
        for bar in shapes.bars(line):
            # at 0 the postfix is the first batch's, shown again at 1
            if bar.n == 0:
                continue
            bare = False
            # a postfix set as one string (`loss 0.49`) has no `=`: the bar is still read by its postfix
            from_desc = described and not bar.training
            if not (bar.described if from_desc else bar.training):
                if bar.n == bar.total and "=" in bar.inner:
                    done = bar
                if not (from_desc and bar.bare_training):
                    continue
                bare = True
            ep = bar.epoch
            if ep is not None:
                step = max(0, ep[0] - self._epoch_base(ep[0])) * bar.total + bar.n
            else:
                if self.bar_last is not None and bar.n < self.bar_last[0]:
                    self.bar_base += self.bar_last[1]
                self.bar_last = (bar.n, bar.total)
                step = self.bar_base + bar.n
            if bare:
                total = (ep[1] or 0) * bar.total if ep is not None else bar.total if self.bar_base == 0 else 0
                plain = (step, total or None)
                continue
            if pending is not None and pending[0] != step:
                self._emit(pending[0], _bar_pairs(pending[1], pending[2]), lineno, out)
            pending = (step, bar, from_desc)
        if pending is not None:
            self._emit(pending[0], _bar_pairs(pending[1], pending[2]), lineno, out)
        elif plain is not None:  # a training bar that shows no metric still says how far training got
            self.printed_step = plain[0]
            if plain[1]:
                out.append(Event(EventKind.PROGRESS, self.source, lineno, step=plain[0],
                                 fields={"step": plain[0], "total": plain[1]}))
        if done is not None and self.printed_step is not None:
            self._evaluated(done, lineno, out)
        return out

    def _rich_bar(self, m: re.Match[str], lineno: int) -> list[Record]:
        """A Rich progress bar (Lightning's RichProgressBar): the step is the epoch times the batches per
        epoch plus the position, as for a tqdm bar; its metrics follow on the line and on the indented
        lines Rich wraps them onto (`rich_step` dates those)."""
        e, n, total = int(m.group("e")), int(m.group("n")), int(m.group("t"))
        step = max(0, e - self._epoch_base(e)) * total + n
        self.rich_step = step
        out: list[Record] = []
        pairs = shapes.rich_items(m.group("post"))
        if pairs:
            self._emit(step, pairs, lineno, out)
            self.rich_read = True
        else:
            self.printed_step = step
        return out

    def _evaluated(self, bar: shapes.Bar, lineno: int, out: list[Record]) -> None:
        """A finished evaluation bar (`Validate: 100%|...| 8/8 [..., Val Loss=0.61, Val Dice=0.10]`): its
        postfix is the evaluation's result, at the step training reached. Keys that do not say their split
        are named by the bar's (`Validation: ... loss=0.61` is `val loss`); a data or mapping bar says none
        and is passed over. A value the training bars show as well is taken once (see `_emit`)."""
        phase = shapes.eval_phase(bar.desc)
        step = self.printed_step
        for k, v in bar.postfix():
            if not k.lower().startswith(shapes.HELD_PREFIXES):
                if phase is None:
                    continue
                k = f"{phase} {k}"
            if self.bar_shown.get(k) == v:
                continue
            self.bar_shown[k] = v
            out.append(Sample(k, v, step, None, self.source, lineno, True))

    def _emit(self, step: int, pairs: list[tuple[str, float]], lineno: int, out: list[Record]) -> None:
        """One step's postfix. A validation or per-epoch value (`val_loss`, `train_loss_epoch`) stays in the
        postfix, unchanged, until the next evaluation or epoch: it is taken when it changes, not at every step."""
        self.printed_step = step
        self.finer = True
        shown = self.bar_shown
        for k, v in pairs:
            if k.lower().startswith(shapes.HELD_PREFIXES) or k.endswith("_epoch"):
                if shown.get(k) == v:
                    continue
                shown[k] = v
            out.append(Sample(k, v, step, None, self.source, lineno, False))

    def _boxed(self, text: str, lineno: int) -> list[Record] | None:
        """A `| key | value |` row of a boxed table (stable-baselines3): `| rollout/ | |` opens a section
        whose keys are prefixed with it; the table is one record, flushed at its closing rule."""
        cells = [c.strip() for c in text[1:-1].split("|")]
        if len(cells) != 2 or not cells[0]:
            return None
        key, raw = cells
        value = shapes.number(raw)
        if (raw and value is None) or shapes.number(key) is not None:
            return None  # a header row, or a row of numbers: a table with columns
        if self.box is None:
            self.box, self.box_line, self.section = [], lineno, ""
        if not raw:
            if key.endswith("/"):
                self.section = key
                return []
            return None
        assert value is not None
        indented = text[1:].startswith("  ")
        self.box.append((self.section + key if indented else key, value))
        return []

    def _flush_box(self) -> list[Record]:
        pairs, self.box = self.box or [], None
        if not pairs:
            return []
        out: list[Record] = []
        names = {k.rsplit("/", 1)[-1].lower(): k for k, _ in pairs}
        step_key = next((names[n] for n in STEP_NAMES if n in names), None)
        counters = []
        if step_key is not None:
            value = dict(pairs)[step_key]
            if math.isfinite(value):
                counters.append(shapes.Counter("step", int(value), None))
        self._record([(k, v) for k, v in pairs if k != step_key], counters, self.box_line, None, out)
        return out

    def _loop_counter(self, n: int, total: int, lineno: int, when: float | None, out: list[Record]) -> None:
        """`[Round 10/100]` alone: the loop's counter, the step of the metric lines printed after it (one
        `Key: value` a line), and how far the loop got of its total."""
        self.printed_step = n
        self.headed = True
        if total:
            out.append(Event(EventKind.PROGRESS, self.source, lineno, step=n, time=when,
                             fields={"step": n, "total": total}))

    def _header_row(self, line: str, lineno: int) -> list[Record] | None:
        """A row under the latest header it fits whose cells are drawn as a progress bar's description (Ultralytics'
        console: one physical line of redraws per epoch, the last one holding the epoch's losses), or
        with an `a/b` counter or a unit in a cell. Rows of plain numbers are read as tables are."""
        assert self.header is not None
        text = line.rstrip("\r")
        text = text[text.rfind("\r") + 1:].strip()
        if not text[:1].isdigit() or shapes.row_values(text) is not None:
            return None
        got = shapes.fitting_row(text, self.headers)
        if got is None:
            return None
        out: list[Record] = []
        self._record(shapes.parts_total(got[0]), got[1], lineno, None, out)
        return out

    @staticmethod
    def _worded(text: str) -> tuple[list[tuple[str, float]], list[shapes.Counter]] | None:
        """Counters and metrics written as words: `epoch 3, minibatch 120/120, validation error 12.5 %`
        or `Total reward in global step 33: 1.37`."""
        if "," in text and (phrased := shapes.phrase_pairs(text)) is not None:
            return phrased
        if (at := shapes.at_counter(text)) is not None:
            return [(at[0], at[1])], [at[2]]
        return None

    def _epoch_line(self, epoch: int, lineno: int, out: list[Record]) -> None:
        """`Epoch 3` alone: the lines after it belong to that epoch. It is their step while no finer
        counter was seen. `Epoch 1` again after later epochs that logged metrics is another training in
        the same log (a script that trains several models in turn): told as a new run, and its bars count
        from 0 again, so that its first losses are no rise from the last model's."""
        base = self._epoch_base(epoch)
        last = self.alone_epoch
        if last is not None and epoch <= base < last and self.alone_logged:
            self.runs += 1
            out.append(self._new_run(self.runs, lineno, f"epoch {epoch} after {last}", epoch, None))
            self.bar_base, self.bar_last, self.printed_step = 0, None, None
        self.alone_epoch, self.alone_logged = epoch, False
        if not self.finer:
            self.printed_step = epoch

    def _counter_row(self, epoch: int, n: int, rest: str, lineno: int, when: float | None,
                     out: list[Record]) -> None:
        """`[0] 1150 ...`: a bracketed epoch and a step (summed over epochs when it restarts in each)."""
        last = self.row_last
        if last is not None and epoch > last[0] and n <= last[1]:
            self.row_base += last[1]
        self.row_last = (epoch, n)
        step = self.row_base + n
        self.printed_step = step
        self.finer = True
        single = shapes.list_pair(rest)
        pairs = [single] if single is not None else shapes.compact_pairs(rest)[0]
        out.extend(Sample(k, v, step, when, self.source, lineno, False) for k, v in pairs)

    def _epoch_base(self, epoch: int) -> int:
        if self.epoch_base is None:
            self.epoch_base = 0 if epoch == 0 else 1
        return self.epoch_base

    def _record(self, pairs: list[tuple[str, float]], counters: list[shapes.Counter], lineno: int,
                when: float | None, out: list[Record]) -> None:
        """One record: its step from the counters (the training loop's own: the finest, combined with the
        epoch when it counts within one), else the step the log is at."""
        named = [(k, v) for k, v in pairs if k.lower() in shapes.COUNTER_RANK and math.isfinite(v)]
        counters = counters + [shapes.Counter(k.lower(), int(v), None) for k, v in named]
        kept = [(k, v) for k, v in pairs if k.lower() not in shapes.COUNTER_RANK]
        summed = shapes.letter_as_loss(shapes.total_as_loss(kept, self.total_loss))
        self.total_loss = self.total_loss or summed != kept  # a `total` once a loss stays one when it prints whole
        pairs = generator_as_loss(shapes.splits_as_loss(summed))
        if not pairs:
            return
        step: int | None = None
        inferred = False
        if counters:
            counters.sort(key=lambda c: shapes.COUNTER_RANK.get(c.name, 8))
            inner = counters[0]
            epoch = next((c for c in counters if c.name in shapes.EPOCH_NAMES), None)
            if inner.name in shapes.EPOCH_NAMES:
                step = inner.value
                self._epoch_base(inner.value)
                total = inner.total
            else:
                self.finer = True
                step, total = inner.value, inner.total
                if epoch is not None and inner.total:
                    step = max(0, epoch.value - self._epoch_base(epoch.value)) * inner.total + inner.value
                    total = epoch.total * inner.total if epoch.total else None
                    inferred = True
                elif epoch is not None:
                    step, inferred = self._global_step(inner.value, [("epoch", float(epoch.value))])
            self.printed_step = step
            if total:
                out.append(Event(EventKind.PROGRESS, self.source, lineno, step=step, time=when,
                                 fields={"step": step, "total": total}))
        else:
            step, inferred = self._stepless_step(pairs, lineno, out)
        out.extend(Sample(k, v, step, when, self.source, lineno, inferred) for k, v in pairs)

    def finish(self) -> Iterable[Record]:
        out = self._flush_box()
        out.extend(super().finish())
        return out


def _redraws(line: str) -> list[str]:
    """The redraws of a progress line other than tqdm's (Ultralytics' `  1/100  6.15G  3.33 ...  0% ━━━ 0/6848`
    table row, rewritten after each `\\r`), a few of them: parsed whole, such a line gives its last redraw
    only, one record for an epoch, and an epoch cut short is then no evidence of the format; each redraw
    is a row of it. Only detection reads them apart."""
    parts = [p for p in line.split("\r") if p.strip()]
    return parts[-(MIN_RECORD_LINES + 1):] if len(parts) > MIN_RECORD_LINES else []


def _headed(pairs: list[tuple[str, float]], counters: list[shapes.Counter],
            text: str) -> tuple[list[tuple[str, float]], list[shapes.Counter]]:
    """The training loop's counter named in the words before the pairs (`Epoch 001 (686 steps) / update 50:
    loss=..`), and an evaluation they name (`Eval after 250 updates: tot_loss=..`): its keys say it."""
    worded, phase = shapes.head_counters(text)
    if not any(c.name not in shapes.EPOCH_NAMES for c in worded):
        return pairs, counters
    named = {c.name for c in worded}
    counters = worded + [c for c in counters if c.name not in named]
    if phase:
        pairs = [(k if k.lower().startswith(shapes.HELD_PREFIXES + ("dev", phase)) else f"{phase} {k}", v)
                 for k, v in pairs]
    return pairs, counters


def _bar_pairs(bar: shapes.Bar, described: bool) -> list[tuple[str, float]]:
    """A taken redraw's metrics: its postfix, or its description's pairs without the counters, the
    timings and the running means in parentheses."""
    if not described:
        return bar.postfix()
    pairs = _pairs(RUNNING_MEAN.sub("", bar.desc))[0]
    return [(k, v) for k, v in pairs if k.lower() not in shapes.COUNTER_RANK and not shapes.TIMING.match(k)]
