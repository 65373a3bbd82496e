"""Plain-text metric lines: `key=value`, `key: value` and `key value` pairs, as home-made loops print them.

Covers `Step 10: loss=2.45, lr=6.7e-05`, verl's `step:10 - actor/entropy:0.41 - ...`, nanoGPT's
`iter 100: loss 2.31, time 45.1ms, mfu 31.2%`, torchtitan's double-space fields, DeepSpeed's
`steps: 10 loss: 2.34 iter time (s): 0.51`, OLMo/Composer blocks (`[step=10/10000,epoch=0]` then
indented `key=value` lines, held until the block ends), Keras fit lines after `Epoch N/M` (and
`print(history.history)`), and MMEngine's `Epoch(train) [3][ 50/3104]  lr: ...  loss: ...` lines.
Lines with no step at all (`Epoch 1 - Batch loss: 12.1`, `grpo_loss is 0.12 and kl is 0.03`) are
counted, or stepped by their epoch when every line has its own, and marked inferred.
Prose is not metrics: a line without a step counts only when its pairs make up most of it with no
words left over, and, unless a loss is among two or more keys, once the same keys come back with
other values (a banner or config echo prints each key set once, or twice with the same values).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from datetime import datetime
from typing import TypedDict

from trainwatch.adapters.base import Adapter
from trainwatch.adapters.cjk import translate
from trainwatch.adapters.keras_history import history_samples, is_history
from trainwatch.adapters.loss_dict import Printed, RunningTotals, loss_dict
from trainwatch.adapters.metric_report import report_results
from trainwatch.adapters.shapes import (
    METRIC_WORDS,
    at_counter,
    count_pair,
    letter_as_loss,
    list_pair,
    splits_as_loss,
    step_tuple,
    total_as_loss,
    zip_names,
)
from trainwatch.adapters.signatures import TB_START
from trainwatch.adapters.tune_result import HEAD as TUNE_HEAD
from trainwatch.adapters.tune_result import TuneResult
from trainwatch.adversarial import generator_as_loss
from trainwatch.model import Event, EventKind, Record, Sample
from trainwatch.names import Canonicalizer, Quality, averaged, known, step_loss

NUM = r"[-+]?(?:\d[\d,]*\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|(?:nan|NaN|inf|Inf|Infinity|-inf)(?:\.0+)?)"
PAIR = re.compile(
    r"(?P<k>[A-Za-z_][\w/.\-()%@ ]{0,60}?)\s*(?:[:=]\s*|\s+is\s+|\s+)\[?(?P<v>" + NUM + r")(?![\w.])?"
    r"(?P<u>%|[A-Za-z]{1,3}\b)?"
)
STEP_PREFIX = re.compile(
    r"^(?:train(?:ing)?\s+)?(?P<k>step|steps|iter|iters|iteration|it|global_step|batch|update|outer|round|tick)\b"
    r"\s*[:=#]?\s*(?P<n>\d+)(?:\s*/\s*(?P<m>\d+))?(?![\d.])"
    r"\s*[:,|\])\-]?\s*", re.I)  # (`(step=0000013) Train Loss: ..`: the bullet's `(` came off, its `)` closes the step)
FIELD_SPLIT = re.compile(r",\s+|;\s+|\s+-\s+|\s+and\s+|\t|\s{2,}")
# blanks that align rather than separate: `Val   Loss: 0.0002` (a phase word padded to the width of `Train`), and
# `Global Step:     10, accuracy:  10.9%` (values padded, on a line whose fields are split by commas); closed up
# before fields are split at runs of blanks
ALIGNED_PHASE = re.compile(r"\b(train|val|test|eval|dev)[ \t]{2,}(?=[A-Za-z])", re.I)
PHASE_HINT = re.compile(r"[nltvNLTV][ \t]{2}")
ALIGNED_VALUE = re.compile(r"([:=])[ \t]{2,}(?=[-+.\d])")
PAREN_COUNTS = re.compile(r"^\(\s*\d+(?:\s*/\s*\d+)?\s*\)\W*$")  # `(512570/2466133)` after `acc: 20.78%`
# BasicSR / MMCV's IterBasedRunner message: `[name..][epoch:  0, iter:     100, lr:(5.000e-04,)] [eta: 2 days,
# 17:41:47, time (data): 0.612 (0.023)] l_pix: 1.0079e-01 l_LL: 1.6e-01`: the iteration is the run's, the losses follow
BASICSR_HEAD = re.compile(r"\[epoch:\s*(?P<e>\d+),\s*iter:\s*(?P<i>[\d,]+),\s*lr:\((?P<lr>[-+.\deE]+)[^)]*\)\]\s*"
                          r"(?:\[eta:[^\]]*\]\s*)?")
# `fold[1/5] epoch[3/100] loss: 3.01 train accuracy: 0.21`: counters written `name[i/n]` before the pairs
# (`Epoch[001/100], Step[0100/0196], Avg Loss: ..`: commas between them; `Val Step[0100/3125], ..`: an evaluation's
# counter, titled by its phase; `----- Epoch[001/100], Train Loss: ..`: an epoch's summary under a rule of dashes)
NAMED_COUNTERS = re.compile(r"^(?:[-=*#>~]{3,}\s*)?(?:(?P<p>train|training|val|valid|validation|eval|evaluation|dev"
                            r"|test|testing)\s+(?=[A-Za-z_]{1,12}\[))?(?:[A-Za-z_]{1,12}\[\s*\d+\s*\]\s*(?=[A-Za-z_]{1,12}"
                            r"\[\s*\d+\s*/))?(?:[A-Za-z_]{1,12}\[\s*\d+\s*/\s*\d+\s*\]"
                            r"(?:\s*,\s*|\s*))+", re.I)
# (`Epoch[1] Iteration[50/3385] Loss: ..`, reid-baseline's ignite loop: the first counter may say no total)
NAMED_COUNTER = re.compile(r"([A-Za-z_]{1,12})\[\s*(\d+)\s*(?:/\s*(\d+)\s*)?\]")
COMPACT_SPLIT = re.compile(r",(?=[A-Za-z_])")
VALUE_COMMA_KEY = re.compile(r"(?<=\d),(?=[A-Za-z_][\w ]{0,30}?\s*[:=])")  # a value, a comma, then the next key
PIPE_SPLIT = re.compile(r"\s*\|\s*")  # aligned `| key   value |` tables: pipes are the only separators
STEP_KEYS = frozenset({"step", "steps", "global_step", "iter", "iters", "iteration", "it", "batch", "update",
                       "num_updates", "trainer/global_step", "_step", "outer", "outer_step", "round", "tick",
                       "episode", "frame", "frames"})
STAMP = re.compile(r"^\[?(\d{4}-\d\d-\d\d)[ T](\d\d:\d\d:\d\d)(?:[.,](\d{1,6}))?\]?\s*")
# a time of day with no date before the record (`09:11:35    [val] step=2000  val_loss=0.22`): the line's stamp,
# taken off so that what follows it (a phase tag, a step) starts the record; no date, so no time is kept
CLOCK = re.compile(r"^\[?\d{1,2}:\d\d:\d\d(?:[.,]\d{1,6})?\]?[ \t]+(?=\S)")
LEVEL_TOKEN = re.compile(r"^(?:\[[^\]]{0,60}\]\s*)+")
# a bracketed head that holds the step among other counters (`[ep 1 step   300 t=    576s vram= 5904MB] L=0.48`):
# not a level tag to drop, the line's step
BRACKET_STEP = re.compile(r"^\[[^\]]{0,40}?\b(?P<k>step|iter|iteration|global_step)\s*[:=#]?\s*(?P<n>\d+)"
                          r"(?:\s*/\s*(?P<m>\d+))?\b[^\]]{0,80}\]\s*(?=[A-Za-z])", re.I)
# `[EPOCH 3]\tTrain Acc: ..`, `[Epoch 3/100] loss: ..`: a bracket that holds only the epoch's counter
# (`[epoch: 3/200, iter: 25/489] total: 1.64`: an iteration counted within the epoch the bracket also holds)
BRACKET_EPOCH_OF = re.compile(r"\b(?:epoch|ep)\s*[:=#]?\s*(\d+)", re.I)
BRACKET_EPOCH = re.compile(r"^\[\s*(?:epoch|ep)\s*[:=#]?\s*(?P<n>\d+)(?:\s*/\s*(?P<m>\d+))?\s*\]\s*(?=[A-Za-z])", re.I)
LEVEL_WORD = re.compile(r"^(?:INFO|WARNING|DEBUG|ERROR)(?::[\w.]*:|\s+-\s+|\s+)")
# Python logging's `%(name)s %(levelname)s:` or `%(name)s - %(levelname)s - ` after the time came off
NAMED_LEVEL = re.compile(r"^[A-Za-z_][\w.\-]{0,60}(?::|\s+-)?\s+(?:INFO|WARNING|DEBUG)(?:\s*:|\s+-)\s+")
# one evaluated sample's running scores (`Sample: 246, Validation pixAcc: 0.026`): the overall line says it
EVAL_SAMPLE = re.compile(r"^(?:sample|image|img)s?\s*[:#]?\s*\d+\s*[,:|]", re.I)
BLOCK_HEAD = re.compile(r"^\[(?P<k>step|batch|iter)=(?P<n>\d+)(?:/(?P<m>\d+))?(?:,\s*epoch=(?P<e>\d+))?\]:?\s*$")
BLOCK_LINE = re.compile(r"^\s+(?P<k>[^=:\s][^=]{0,80}?)\s*[=:]\s*(?P<v>" + NUM + r")")
# `Epoch 3/20` alone on its line: Keras' fit, and PyTorch's transfer-learning tutorial (`Epoch 0/24`,
# then `train Loss: .. Acc: ..` and `val Loss: ..`), sometimes after a model's name (`resnet-50 - Epoch 0/49`)
KERAS_EPOCH = re.compile(r"^(?:[\w.\-]{1,40}\s+-\s+)?(?:Epoch|EPOCH|epoch):? ?(\d+)\s*(?:/|\s+of\s+)\s*(\d+)\s*$")
# (or `EPOCH 3 of 30`: the same, spelled out)
# Keras callbacks: `Epoch 00002: val_loss improved from 0.00093 to 0.00091, saving model to ...`,
# `Epoch 00005: early stopping`, `Epoch 00012: ReduceLROnPlateau reducing learning rate to 0.0005.`
KERAS_CALLBACK = re.compile(r"^Epoch \d+: (?P<what>\w+ (?:improved|did not improve)|early stopping|"
                            r"ReduceLROnPlateau|saving model)")
# torchvision/DeiT/DETR's MetricLogger: `Epoch: [1]  [7500/9465]  eta: ...  loss: 0.9978 (1.1933)`,
# `Test:  [ 50/157]  ...`; and the PyTorch tutorial's `[30,  2200] loss: 1.344` (epoch, batch)
LOGGER_HEAD = re.compile(r"^(?:(?P<label>[A-Za-z][\w ]{0,40}):\s*)?(?:\[\s*(?P<e>\d+)\s*(?:/\s*\d+\s*)?\]\s*)?"
                         r"\[\s*(?P<i>\d+)\s*/\s*(?P<n>\d+)\s*\]\s+")
TUTORIAL_HEAD = re.compile(r"^\[\s*(?P<e>\d+)\s*,\s*(?P<i>\d+)\s*(?:/\s*(?P<n>\d+)\s*)?\]\s*")
# gradient boosting's evaluation per round: LightGBM's `[50]\tvalid_0's binary_logloss: 0.5286\ttraining's auc: 0.7`,
# XGBoost's `[0]\ttrain-logloss:0.66\teval-logloss:0.67`: the round is the step, each field a data set's metric
BOOST_ROUND = re.compile(r"^\[(\d+)\]\t")
BOOST_PAIR = re.compile(r"^(?P<set>[A-Za-z_]\w{0,40}?)(?:'s\s+|-)(?P<m>[A-Za-z_][\w@.\-]{0,40}?)\s*:\s*"
                        r"(?P<v>" + NUM + r")\s*$")
BOOST_BEST = re.compile(r"best iteration is", re.I)  # the best round printed again after early stopping
DATE_OR_CLOCK = re.compile(r"\d{4}-\d\d-\d\d|\d{1,2}:\d\d:\d\d")
# `* epoch 3` alone on its line (a bullet or a heading over the epoch's records): the step of the lines under it
# (or a round of federated learning between rules: `--------------Round 50--------------`)
EPOCH_HEAD = re.compile(r"^(?:[*•\-#]+\s+|[-=*#]{2,}\s*)?(?:epoch|ep|round)\s+#?(\d+)\s*(?::|[-=*#]{2,})?$", re.I)
# `====> Epoch: 3`, `--- epoch 3 ---`: a line that only numbers the epoch, however decorated. Where the
# records print no step and are counted, its going back to the start is the one sign of a new training
EPOCH_MARK = re.compile(r"^[-=*#>•~\s]*(?:epoch|ep)\s*[:#]?\s*(\d+)\s*[-=*#<~]*$", re.I)
# `The 0 Communcation Accuracy: 12.42 ...`: a sentence that opens on the round's number, then a named metric
ORDINAL_HEAD = re.compile(r"^The\s+(\d+)\s+(?=(?:[A-Za-z]+\s+){0,3}[A-Za-z]+\s*:\s*[-+.\d])")
INLINE_CODE = re.compile(r"`([^`]{1,80})`")  # a log written as Markdown quotes its values: loss `6.55`, epoch `0`
BULLET = re.compile(r"^(?:[*•]\s+)?\((?=[A-Za-z])|^[*•]\s+(?=[A-Za-z])")
# `[val] epoch 1 | loss: 0.25 | acc: 0.87`, `[ Valid | 001/100 ] loss = 1.65, acc = 0.38`, `[train-step] ...`:
# the phase in brackets names whose metrics follow (and may carry the epoch's counter)
PHASE_BRACKET = re.compile(r"^\[\s*(?P<p>train|training|val|valid|validation|eval|evaluation|dev|test|testing)"
                           r"(?:[-_ ]?step)?\s*(?:\|\s*(?P<i>\d+)\s*/\s*(?P<n>\d+)\s*)?\]\s*", re.I)
# `Epoch 3/200 [Val]   loss: 0.63`: a phase tag after the epoch's counter names whose metrics follow
# (after a logger's name, `trainer: Epoch 3/200 [Train] ..`, which comes off with it)
EPOCH_PHASE = re.compile(r"^(?:[A-Za-z_][\w.]{0,40}:\s+)?(?P<e>(?:epoch|ep)\s*[:#]?\s*\d+(?:\s*/\s*\d+)?)\s*"
                         r"\[\s*(?P<p>train|training|val|valid|validation|eval|evaluation|dev|test|testing)\s*\]\s*",
                         re.I)
# `Epoch [3]/[99]`, `epoch 3/99`, `Ep: 3` ending a tab-separated prefix: the epoch of the record after the tab
TAB_EPOCH = re.compile(r"\b(?:epoch|ep)\s*[:#]?\s*\[?\s*(\d+)\s*\]?(?:\s*/\s*\[?\s*\d+\s*\]?)?\s*$", re.I)
# `Validation Phase Loss: 0.06  Accuracy: 0.69`: a first key naming its split as a phase names the line's
PHASE_KEY = re.compile(r"^(?P<p>val|valid|validation|eval|evaluation|dev|test|testing|train|training)[ _]"
                       r"(?:phase|split|stage)\b", re.I)
# `- Valid Summary | Epoch 3 | Loss=0.21 | ...`, `Train | Epoch 3 | 143/573 | ...`: a pipe-separated line titled
# by its phase (an eval's batch `| 1/3 |` under way is not its result yet)
PIPE_TITLE = re.compile(r"^(?:[-*•]\s+)?(?P<p>train|training|val|valid|validation|eval|evaluation|dev|test|testing)"
                        r"(?:\s+(?:summary|results?|stats|metrics|phase|set))?\s*\|\s*", re.I)
PIPE_COUNT = re.compile(r"\|\s*(\d+)\s*/\s*(\d+)\s*(?:\||$)")
# `Starting epoch 3 ...`, `Begin epoch 3`, `Now training epoch 3. LR=..`: the epoch that starts, then what it
# starts with
STARTED = re.compile(r"^(?:now\s+)?(?:starting|start|started|begin|beginning|begins|entering|training)\s+"
                     r"(?=(?:epoch|ep|round)\s*[:#]?\s*\d)", re.I)
SPLIT_NAMES = frozenset({"train", "val", "valid", "test"})
UNPHASED = frozenset({"train", "val", "valid", "test", "lr", "learning_rate", "epoch"})  # not an eval's own
PHASE_LABEL = re.compile(r"^(?P<p>test|val|valid|validation|eval|evaluation|dev)(?:\s+set)?\s*:\s+(?=\D)", re.I)
BAR_TAIL = re.compile(r":?\s*\d{1,3}%\|")
# a tqdm bar at the start of a line with text after it (`Validation: |   | 0/? [00:00<?, ?it/s][12/09/24] INFO ..`)
BAR_LEAD = re.compile(r"^[^|\[]{0,80}?(?:\d{1,3}%)?\|[^|]{0,200}\|\s*\d+/(?:\d+|\?)\s*\[[^\]]{0,80}\]")
RUNNING_MEAN = re.compile(r"\s\((?:[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|nan|inf)\)", re.I)
# a value then its running mean in brackets: `loss 0.0392 (0.1691)`
VALUE_MEAN = re.compile(r"(?<=\d)\s\((?:[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|nan|inf)\)", re.I)
EVAL_LABELS = ("test", "val", "eval")
LOGGER_TIMES = frozenset({"eta", "time", "data", "max mem", "total time"})  # MetricLogger's timings: no metrics
_RUN_NUM = r"(?:[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|nan|inf)"
WHOLE_MEAN = re.compile(r"(" + _RUN_NUM + r")\s\((" + _RUN_NUM + r")\)", re.I)  # `7.152 (7.148)`: window (all)
MM_HEAD = re.compile(  # MMEngine: `Epoch(train) [3][ 50/3104]` or `Iter(train) [  50/20000]`, then `key: value` pairs
    r"^(?P<by>Epoch|Iter)\((?P<mode>\w+)\)\s*(?:\[\s*(?P<e>\d+)\s*\])?\[\s*(?P<i>\d+)\s*/\s*(?P<n>\d+)\s*\]\s*")
MM_TIMING = frozenset({"eta", "time", "data_time", "memory"})  # an evaluation's own timings are no training series
# Keras fit lines: `32/32 [====] - 1s 5ms/step - loss: ...`, or Keras 2's verbose=2 ` - 24s - loss: ...`
KERAS_LINE = re.compile(r"^\s*(?:\d+/\d+\s+(?:\[[=>.]*\]\s+|━+\s+)?)?(?:-\s+)?\d+m?s\b")
KERAS_PAIR = re.compile(r"(?:^|\s)-\s+(?P<k>[A-Za-z_][\w]*):\s+(?P<v>" + NUM + r")")
BARE_NUMBER = re.compile(NUM + r"%?\s+(?=[A-Za-z_])")
# the parts after the first of a duration written in units (`1d 14h 14m`, `2h 03m 51s`, `1m 03s`)
DURATION_REST = re.compile(r"(?:\s+\d{1,2}[hms]\b)+")
SKIP = re.compile(r"\S*\s*(?:[:=|]\s+)?")  # a unit, `/513`, or a spaced separator (`epoch 0 : loss : 5.7`)
LABEL_PHASE = re.compile(r"(?i)\b(?:train|training|val|valid|validation|dev|test|testing|eval|evaluation)\b")
LABEL = re.compile(r"^[A-Za-z][A-Za-z ]{0,60}?:\s+(?=[A-Za-z_])")  # `Testing performance in val model: mean_dice : 0.1`
CONFIG_REPR = re.compile(r"\b[A-Z][A-Za-z0-9_]*\(\s*[a-z_][a-z0-9_]*=")
CONFIG_KEYS = 16
"""A line holding a `CamelCase(name=...` repr with at least this many `=` is a config dump
(`TrainConfig(run_name=..., model=ModelConfig(d_model=768, ...))`, `Namespace(lr=0.02, ...)`): its numbers are
settings, one of each, not metrics; a record printed as a repr has a few fields."""
CONFIG_SOURCE = re.compile(r"=\s*dict\(|^\s*[A-Za-z_]\w*\s*=\s*[^=\s][^=]*,\s*$")
"""A line of a Python config file echoed into the log (MMCV's `Config.pretty_text`): `nms=dict(type='nms',
iou_threshold=0.5),`, or one keyword argument alone on its line, ending in a comma (`        pos_iou_thr=0.7,`).
Its numbers are settings (an IoU threshold is no IoU), not metrics."""
DIGIT = re.compile(r"\d")
NONFINITE_VALUE = re.compile(r"[\s:=](?:nan|NaN|inf|Inf|Infinity)\b")
WORD = re.compile(r"[A-Za-z]{2}")
EPOCH_KEYS = frozenset({"epoch", "ep", "pass"})  # (PaddlePaddle counts its epochs as passes)
INNER_KEYS = frozenset({"batch", "it", "iter", "iteration"})  # may count within the epoch
MAX_KEY_WORDS = 4  # "Average Train Loss" is a key; "New best model saved with BLEU" is prose
KEYSETS_KEPT = 256
TAKE, HOLD = object(), object()  # verdicts on a line without a step
MFU_SENTINEL = -100.0
SCORE_LINES = 400
_QUALITY = Quality()  # which keys name a task metric (accuracy, mIoU...): data/quality.yaml
SCORE_MIN_HITS = 8


def _number(raw: str) -> float | None:
    raw = raw.rstrip(",")
    try:
        return float(raw)
    except ValueError:
        try:
            return float(raw.replace(",", ""))
        except ValueError:
            return None


# NumPy 2 prints a scalar as its constructor (`actor/grad_norm:np.float64(0.63)`): the value is inside
NP_SCALAR = re.compile(r"\b(?:np|numpy)\.(?:float|int|uint)(?:16|32|64|128)?\(\s*(" + NUM + r")\s*\)")
# and PyTorch a 0-d tensor as its repr (`acc: tensor(0.33, device='cuda:0', dtype=torch.float64)`): the same
TENSOR_SCALAR = re.compile(r"\btensor\(\s*(" + NUM + r")\s*(?:,[^()\[\]]*)?\)")

# `Changed learning rate. Current lr = 0.0005`: a sentence of words before the key is prose, the name starts after
# it (two words or more, the last a whole word: `Avg. Loss` and `Valid. loss` keep their abbreviation)
LEAD_SENTENCE = re.compile(r"^(?:[A-Za-z]+\s+)+[A-Za-z]{4,}\.\s+(?=[A-Za-z])")
PROSE_KEY = re.compile(r"^(?:the|our|current)\s+|\s+(?:is|was|are|were)$", re.I)  # `the acc is: 0.04`

NAME_ONLY = re.compile(r"[A-Za-z_][\w/.\-]{0,60}\Z")
NUMBER_ONLY = re.compile(NUM + r"\Z")


def _joined_pairs(fields: list[str]) -> list[str]:
    """`step 10, loss_train, 0.838`: a field that is only a name, then one that is only a number, is one
    pair written as two comma-separated fields (a CSV row's habit in a print statement), or as two columns
    aligned by blanks (`local_val_loss                1.2385`)."""
    out: list[str] = []
    i, n = 0, len(fields)
    while i < n:
        f = fields[i]
        if i + 1 < n and NAME_ONLY.match(f) and NUMBER_ONLY.match(fields[i + 1].strip()):
            out.append(f"{f}: {fields[i + 1].strip()}")
            i += 2
            continue
        out.append(f)
        i += 1
    return out


def _pairs(text: str) -> tuple[list[tuple[str, float]], int, int]:
    """(key, value) pairs of a line, how many fields it had, and how many of those ended in words
    that are no pair (`Process 3752008 exits successfully.`: prose around a number). A field that is only
    counts in parentheses (`(512570/2466133)`, behind a percentage) is not counted: it adds nothing. A bare
    number is (`[0.28, 0.14]` is a list, not a pair and a stray figure)."""
    if "  " in text or "\t" in text:
        if PHASE_HINT.search(text) is not None:  # (the last letter of a phase word, then blanks: cheap to look for)
            text = ALIGNED_PHASE.sub(r"\1 ", text)
        if ", " in text:
            text = ALIGNED_VALUE.sub(r"\1 ", text)
    if " " not in text and "," in text:  # `kl:0.011,lr_multiplier:1.000,loss:5.31`: compact, a comma before each key
        fields = [f for f in COMPACT_SPLIT.split(text) if f]
    else:
        if "," in text and (glued := VALUE_COMMA_KEY.sub(", ", text)) != text:
            text = glued  # `step:100/6176,Loc Loss: 0.68,Cls Loss: 0.70`: a comma with no blank still ends a pair
        fields = [f.lstrip() for f in (PIPE_SPLIT if "|" in text else FIELD_SPLIT).split(text) if f.strip()]
        if len(fields) > 1 and (", " in text or "|" not in text):
            # (`loss_train, 0.838`, or a name and its value aligned by blanks: `local_val_loss   1.24`; a boxed
            # `| fps | 8 |` table is the template reader's, with its sections and its step)
            fields = _joined_pairs(fields)
    out: list[tuple[str, float]] = []
    dirty = bare_fields = 0
    phase = ""  # the split a dropped label named (`Dev BLEU: BLEU-1 65.4`): its keys say it
    for field in fields:
        pos = 0
        while pos < len(field):
            m = PAIR.match(field, pos)
            if m is None and pos == 0 and (label := LABEL.match(field)) is not None:
                m = PAIR.match(field, label.end())  # a label of words before a metric: not a key of its own
                if m is not None and METRIC_WORDS.search(m.group("k")) is None:
                    m = None  # (`Initializing distributed: GLOBAL_RANK: 0`: no metric, no label)
                elif m is not None and (word := LABEL_PHASE.search(label.group())) is not None:
                    phase = word.group().lower().replace("ing", "") + "_"  # `Testing ..`: test
            if m is None and pos > 0 and (bare := BARE_NUMBER.match(field, pos)) is not None:
                pos = bare.end()  # `iter:0/18 0.00% lr:0.001`: a bare progress figure between pairs
                continue
            if m is None:
                break
            if (clock := DATE_OR_CLOCK.match(field, m.start("v"))) is not None:
                gap = field.find(" ", clock.end())
                if pos == 0 and (gap < 0 or PAIR.match(field, gap + 1) is None):
                    bare_fields += 1  # `time 2021-10-17 21:28:52`: a time stamp, neither a metric nor prose
                    pos = len(field)
                    break
                # `Iter 100 eta: 0:12:34 lr: 0.001`: a clock among the pairs is no metric; the pairs after it are
                # (and after one that leads them: `eta: 0:29:06 epoch: 1 iter: 45 loss: ..`, maskrcnn-benchmark's)
                pos = len(field) if gap < 0 else gap + 1
                continue
            if m.group("u") in ("d", "h", "m") and (rest := DURATION_REST.match(field, m.end())) is not None:
                pos = rest.end()  # `time 1h 03m 51s`: an elapsed time in parts is no metric, nor its first part
                continue
            value = _number(m.group("v"))
            key = m.group("k").strip()
            if value is None or not key:
                break
            while ". " in key and (lead := LEAD_SENTENCE.match(key)) is not None:
                key = key[lead.end():]
            if m.group("u") == "ms" and not key.lower().endswith("ms"):
                key += "_ms"
            if phase and not key.lower().startswith(phase[:3]):
                key = phase + key
            out.append((key, value))
            pos = m.end()
            skip = SKIP.match(field, pos)  # a unit or "/513" stuck to the value
            pos = skip.end() if skip else len(field)
        if pos < len(field) and (alone := LABEL_PHASE.fullmatch(field[pos:].strip())) is not None:
            phase = alone.group().lower().replace("ing", "") + "_"  # `Epoch 1 Validation - Loss: 18.49`: its split
            if pos == 0:
                bare_fields += 1
        elif pos < len(field) and WORD.search(field, pos):
            dirty += 1
            if pos == 0 and DIGIT.search(field) is None:
                bare_fields += 1  # a title among the fields (`Validation done | val_loss=0.0566`): no field of its own
        elif pos == 0 and PAREN_COUNTS.match(field):
            bare_fields += 1
    return out, len(fields) - bare_fields, dirty


_CANON = Canonicalizer()


def _test_apart(pairs: list[tuple[str, float]]) -> list[tuple[str, float]]:
    """`Train Loss: 1.56 Vali Loss: nan Test Loss: 1.19`: the validation and the test loss would both be the
    eval loss, one series of two curves; the validation one keeps that name, the test one a name of its own."""
    evals = [k for k, _ in pairs if _CANON(k) == "eval_loss"]
    if len(evals) < 2 or all(k[:4].lower() == "test" for k in evals):
        return pairs
    return [(f"test_set {k[4:].strip(' _./')}" if k[:4].lower() == "test" and k in evals else k, v) for k, v in pairs]


def _record_fields(before: str) -> bool:
    """Whether the text before a line's last tab is part of its record (fields ending in a comma, or only
    `key value` pairs) rather than tab-separated prefixes (a time, a host, a logger, a level)."""
    before = before.rstrip()
    if before.endswith((",", ";")):
        return True
    if before[:1] == "[" and (head := LOGGER_HEAD.match(before)) is not None and not head.group("label"):
        before = before[head.end():]  # `[1/6] Training loss: 20.35\t Validation loss: 46.07`: a counter, then pairs
    pairs, nfields, dirty = _pairs(before)
    return bool(pairs) and not dirty and len(pairs) == nfields


def _tab_record(text: str) -> str:
    """The record of a tab-separated line: the fields after its prefixes (a time, a host, a logger, a level).
    It starts at the first tab after which every field but the last is a pair (`Epoch [3]/[99] \t Train Loss:
    0.07 \t Accuracy: 0.59`: two fields of metrics, not only the last); an epoch's counter in the field before it
    is the record's epoch. `Epoch: 3, \tavg train loss: ..`, `Episode 4\tFrame 109 \t..` and `[EPOCH 3]\t..`
    are records whole."""
    tab = text.rfind("\t")
    if _record_fields(text[:tab]) or BRACKET_EPOCH.match(text) is not None:
        return text
    cut = text.find("\t")
    while cut < tab:
        rest = text[cut + 1:]
        if _record_fields(rest[:rest.rfind("\t")]):
            epoch = TAB_EPOCH.search(text, max(0, text.rfind("\t", 0, cut) + 1), cut)
            return f"epoch: {epoch.group(1)}, {rest}" if epoch is not None else rest
        cut = text.find("\t", cut + 1)
    return text[tab + 1:]


def _is_epoch(key: str) -> bool:
    """`epoch`, `ep`, or the epoch named by its phase (`Train Epoch: 3`)."""
    low = key.lower()
    if low in EPOCH_KEYS:
        return True
    words = low.split()
    return len(words) == 2 and words[0] in ("train", "training") and words[1] in EPOCH_KEYS


def _stamp(date: str, clock: str, frac: str | None) -> float | None:
    try:
        dt = datetime.fromisoformat(f"{date} {clock}")
    except ValueError:
        return None
    return dt.timestamp() + (float("0." + frac) if frac else 0.0)


class _Block(TypedDict):
    """An OLMo-style metrics block being gathered: its `[step/total]` head, then one pair per line."""
    step: int
    total: str | None
    epoch: str | None
    line: int
    time: float | None
    pairs: list[tuple[str, float]]


class KeyValueAdapter(Adapter):
    name = "keyvalue"
    description = ("Plain key=value / key: value metric lines "
                   "(custom loops, nanoGPT, verl, OLMo blocks, Keras fit, no-step logs)")
    example = "Step 10: loss=2.45, lr=6.67e-05, grad_norm=1.02"

    def __init__(self, source: str = "") -> None:
        super().__init__(source)
        self.block: _Block | None = None
        self.tune: TuneResult | None = None  # a Ray Tune `Result for` block being read
        self.tune_trial: str | None = None  # the first trial whose results were read
        self.keras_epoch: int | None = None
        self.keras_logged = False  # a fit line followed the last `Epoch N/M`
        self.keras_runs = 1
        self.mm_step: int | None = None  # the last MMEngine training step
        self.mm_eval = False
        self.count = 0  # records without a printed step
        self.loss_seen = False  # a stepless record carried the per-step training loss
        self.held: dict[frozenset[str], tuple[int, float | None, list[tuple[str, float]], int | None]] = {}
        self.taken: set[frozenset[str]] = set()  # key sets of stepless lines seen more than once
        self.last_epoch: float | None = None
        self.epoch_repeats = False  # several records per epoch: the epoch is no step
        self.epoch_keys: set[frozenset[str]] = set()  # key sets of the records seen in the current epoch
        self.printed_step: int | None = None  # the last step a line printed: stepless records join it
        self.runs = 1  # trainings in this log, told apart by an epoch-as-step that goes back to its start
        self.inner_base = 0  # batches of the epochs before, when the batch counter restarts each epoch
        self.inner_last: tuple[float, int] | None = None  # (epoch, batch) of the last such record
        self.inner_closed = False  # that record said its epoch and the ones between say none (a pass's summary)
        self.absorbed = 0  # block lines taken (for scoring)
        self.epoch_len: int | None = None  # batches per epoch, once a `[epoch, i/n]` head said it
        self.in_eval = False  # a MetricLogger evaluation (`Test: [i/n]`) is under way: its `* Acc@1` summary repeats it
        self.eval_held: tuple[str, int, float | None, int | None, int, int, int] | None = None
        """The last batch line of that evaluation printed so far, not its last batch (n - 1): (its text after
        the counter, line, time, the step training had reached, batch, batch before it, n). A log that prints
        every k batches may never print batch n - 1: the evaluation's last printed line is known only once
        the evaluation is over."""
        self.counter_last: tuple[int, int] | None = None  # the last bare `[i/n]` counter
        self.tutorial_epoch0: int | None = None  # the first epoch a `[epoch, batch]` counter said: 0 or 1
        self.counter_base = 0  # the counts of the epochs a bare `[i/n]` counter went through before this one
        self.counter_losses: tuple[float | None, float | None] = (None, None)  # its training's first and last loss
        self.epoch_head: int | None = None  # the epoch an `* epoch N` heading said: the step of the records under it
        self.epoch_step: tuple[float, int] | None = None  # (epoch, step) of the last record that printed both
        self.epoch_len_steps: int | None = None  # a step count that stayed put while the epoch moved on
        self.epoch_within = False  # a step count that went back as the epoch moved on: it counts within the epoch
        self.epoch_first: list[Sample] = []  # the first record printing an epoch and a step, until the next
        self.boost_round = False  # the last printed step was a boosting round's
        self.boost_best = False  # `Best iteration is:` came: the next round line repeats that round
        self.mark: tuple[int, int] | None = None  # (epoch, records counted) at the last EPOCH_MARK heading
        self.mark_first: int | None = None  # the epoch the first such heading said: where a training starts
        self.totals = RunningTotals()  # `Losses {'ner': 172.9}` dicts: running totals per epoch, or per batch

    _last_score: tuple[str, str, float] | None = None  # detection asks twice: once here, once for the template reader

    @classmethod
    def score(cls, head: str, path: str) -> float:
        last = KeyValueAdapter._last_score
        if last is not None and last[0] is head and last[1] == path:
            return last[2]
        got = cls._score(head)
        KeyValueAdapter._last_score = (head, path, got)
        return got

    @classmethod
    def _score(cls, head: str) -> float:
        lines = head.split("\n")
        if len(lines) > 1:
            lines = lines[:-1]  # the last may be cut off mid-line
        probe = KeyValueAdapter("")
        hits = total = 0
        crashed: bool | None = False  # None: inside a traceback
        for i, line in enumerate(lines[:SCORE_LINES]):
            if not line.strip():
                continue
            if TB_START in line or crashed is None:
                crashed = None if TB_START in line or line[:1] in " \t" else True  # its last line is the error
                continue  # a traceback's lines are the crash's, not the log's: they take no share from it
            total += 1
            before = probe.absorbed
            try:
                got = list(probe.parse(line, i + 1))
            except Exception:
                got = []
            if probe.absorbed > before or any(isinstance(r, Sample) for r in got):
                hits += 1
        # a whole file of a few lines may hold two records, and one that is only the first record and a crash, one
        if total == 0 or hits < (3 if total > 6 else 2 if crashed is False else min(2, total)):
            return 0.05 * hits
        frac = hits / total
        # enough records (8 reach the threshold alone) and a large share of the lines: a few stray
        # `TP=4, PP=1` echoes in a long banner are not a key-value log
        return min(0.85, 0.3 * min(1.0, hits / SCORE_MIN_HITS) + 0.55 * min(1.0, 2 * frac))

    # -- per line -----------------------------------------------------------------------------
    def parse(self, line: str, lineno: int) -> Iterable[Record]:
        if not line.isascii():
            line = translate(line)  # `训练损失: 32.13`: Chinese names in the English words the tables know
        if "\r" in line:
            line = line.rstrip("\r")
            line = line[line.rfind("\r") + 1:]
        if "\b" in line:
            line = line.replace("\b", "")
        if "np." in line or "numpy." in line:
            line = NP_SCALAR.sub(r"\1", line)
        if "tensor(" in line:
            line = TENSOR_SCALAR.sub(r"\1", line)
        if ("/s]" in line or "s/it]" in line or "?]" in line) and (lead := BAR_LEAD.match(line)) is not None \
                and line[lead.end():].strip():
            line = line[lead.end():]  # a bar left on the line, then a log line written over it
        out: list[Record] = []
        if self.tune is not None:
            if self.tune.feed(line):
                self.absorbed += 1
                return out
            out.extend(self._tune_flush())
        if line[:11] == "Result for " and (head := TUNE_HEAD.match(line)) is not None:
            self.tune = TuneResult(head.group("trial"), lineno)  # Ray Tune's result dict, as indented YAML
            self.absorbed += 1
            return out
        if self.block is not None:
            m = BLOCK_LINE.match(line) if line[:1] in " \t" else None
            if m is not None:
                value = _number(m.group("v"))
                if value is not None:
                    key = m.group("k").strip()
                    if key.startswith("Train "):  # Composer prefixes each training metric with its phase
                        key = key[6:]
                    self.block["pairs"].append((key, value))
                self.absorbed += 1
                return out
            out.extend(self._flush())
        if not line.strip() or len(line) > 20000:
            return out
        if "iteration is" in line and BOOST_BEST.search(line) is not None:
            self.boost_best = True
            return out
        when = None
        text = line
        if text[:1] in "[0123456789":
            m = STAMP.match(text)
            if m is not None:
                when = _stamp(m.group(1), m.group(2), m.group(3))
                text = text[m.end():]
            elif (clock := CLOCK.match(text)) is not None:
                text = text[clock.end():]
        if text[:1] == "[" and (boost := BOOST_ROUND.match(text)) is not None \
                and self._boosting(int(boost.group(1)), text[boost.end():], lineno, when, out):
            return out
        if "\t" in text:
            text = _tab_record(text)
        text = text.strip()
        if "`" in text:
            text = INLINE_CODE.sub(r"\1", text)
        if text[:1] == "[":
            b = BLOCK_HEAD.match(text)
            if b is not None:
                self.block = {"step": int(b.group("n")), "total": b.group("m"), "epoch": b.group("e"),
                              "line": lineno, "time": when, "pairs": []}
                self.absorbed += 1
                return out
            if self._counter_line(text, lineno, when, out):  # `[30,  2200] loss:` before tags come off
                return out
            if (bs := BRACKET_STEP.match(text)) is not None:
                total = f"/{bs.group('m')}" if bs.group("m") else ""
                key, epoch = bs.group("k").lower(), ""
                if key in INNER_KEYS and (ep := BRACKET_EPOCH_OF.search(text, 1, bs.start("k"))) is not None:
                    epoch = f"epoch: {ep.group(1)}, "  # the iteration restarts with it: the step counts on
                else:
                    key = "step"
                self._generic(f"{key} {bs.group('n')}{total}: {epoch}{text[bs.end():]}", lineno, when, out)
                return out
            if (be := BRACKET_EPOCH.match(text)) is not None:
                total = f"/{be.group('m')}" if be.group("m") else ""
                self._generic(f"epoch: {be.group('n')}{total}, {text[be.end():]}", lineno, when, out)
                return out
            if "[epoch:" in text[:80] and self._basicsr(text, lineno, when, out):
                return out
            if PHASE_BRACKET.match(text) is None:  # (`[val] ..` names the phase: _generic reads it)
                text = LEVEL_TOKEN.sub("", text, count=1)
        if text[:1] in "IWDE":
            text = LEVEL_WORD.sub("", text, count=1)
        elif ("INFO" in text[:70] or "WARNING" in text[:70]) and (lv := NAMED_LEVEL.match(text)) is not None:
            text = text[lv.end():]
        if text[:1] in "SsIi" and EVAL_SAMPLE.match(text):
            return out
        if text[:6] == "Epoch " and (cb := KERAS_CALLBACK.match(text)) is not None:
            if cb.group("what").startswith("early stopping"):  # EarlyStopping ended the fit on purpose
                out.append(Event(EventKind.TRAIN_END, self.source, lineno, step=self.printed_step, text=text[:500]))
            return out  # ModelCheckpoint / ReduceLROnPlateau messages: numbers, but no metrics
        if len(text) < 80 and self.printed_step is None and (mark := EPOCH_MARK.match(text)) is not None \
                and not _pairs(text)[0]:  # (`Epoch: 3` is a record of its own: `_stepless_step` reads it)
            self._epoch_mark(int(mark.group(1)), lineno, out)
        if len(text) < 80 and (head := EPOCH_HEAD.match(text)) is not None \
                and (self.printed_step is None or self.printed_step == self.epoch_head):
            self.epoch_head = self.printed_step = int(head.group(1))  # (unless the log prints steps of its own)
            return out  # (no record of its own: a heading alone does not make a log the key-value reader's)
        if ("Epoch" in text[:48] or "EPOCH" in text[:48] or "epoch" in text[:48]) \
                and (m := KERAS_EPOCH.match(text)) is not None:
            self._keras_epoch(int(m.group(1)), int(m.group(2)), lineno, out)
            return out
        if text[:1] in "EI" and text[1:5] in ("poch", "ter(") and (mm := MM_HEAD.match(text)) is not None:
            self._mmengine(mm, text[mm.end():], lineno, when, out)
            return out
        if self.keras_epoch is not None and KERAS_LINE.match(text):
            self._keras(text, lineno, out)
            return out
        if text[:1] == "{" and is_history(text):
            if self.keras_epoch is None:  # after fit lines it repeats what they said
                out.extend(history_samples(text, self.source, lineno))
            return out
        if text[:1] == "{" and (report := report_results(text)) is not None:
            step, inferred = self._stepless_step(report, lineno, out)  # the snapshot the last printed step wrote
            out.extend(Sample(k, v, step, when, self.source, lineno, inferred) for k, v in report)
            return out
        if text[:1] in "sS" and text.lower().startswith("saving checkpoint to"):
            out.append(Event(EventKind.CHECKPOINT, self.source, lineno, text=text[:500]))
            return out
        if text[-1:] == ")" and "{" in text and (tup := step_tuple(text)) is not None:
            self.printed_step = tup[0]
            out.extend(Sample(k, v, tup[0], when, self.source, lineno) for k, v in tup[1])
            return out
        if text[-1:] in "]%0123456789" and (single := list_pair(text) or count_pair(text)) is not None:
            # `Validation mIOU: [0.60, 0.80]`, `Validity over 64 molecules: 1.56%`: one metric, at the step reached
            step, inferred = self._stepless_step([single], lineno, out)
            out.append(Sample(single[0], single[1], step, when, self.source, lineno, inferred))
            return out
        if text[:4] == "The " and (ordinal := ORDINAL_HEAD.match(text)) is not None:
            text = f"step {ordinal.group(1)}: {text[ordinal.end():]}"
        if text[-1:] == "}" and (losses := loss_dict(text)) is not None:
            self._printed_losses(self.totals.feed(Printed(losses, lineno, when)), out)
            return out
        self._generic(text, lineno, when, out)
        return out

    def finish(self) -> Iterable[Record]:
        held: list[Record] = list(self.epoch_first)
        self.epoch_first = []
        self._eval_over(held, at_end=True)
        out: list[Record] = []
        self._printed_losses(self.totals.finish(), out)
        return held + out + self._flush() + self._tune_flush()

    def _printed_losses(self, records: list[Printed], out: list[Record]) -> None:
        """The records a dict of losses gives (each as printed, or an epoch's running total at its end),
        counted as records that print no step."""
        for rec in records:
            step, inferred = self._stepless_step(rec.pairs, rec.line, out)
            out.extend(Sample(k, v, step, rec.time, self.source, rec.line, inferred) for k, v in rec.pairs)

    def _tune_flush(self) -> list[Record]:
        """The samples of the `Result for` block just read, at its training iteration."""
        block, self.tune = self.tune, None
        if block is None:
            return []
        step, pairs = block.pairs()
        if not pairs:
            return []
        if self.tune_trial is None:
            self.tune_trial = block.trial
        elif block.trial != self.tune_trial:
            pairs = [(f"{block.trial}/{k}", v) for k, v in pairs]
        out: list[Record] = []
        inferred = False
        if step is None:
            step, inferred = self._stepless_step(pairs, block.line, out)
        else:
            self.printed_step = step
        out.extend(Sample(k, v, step, None, self.source, block.line, inferred) for k, v in pairs)
        return out

    # -- shapes ---------------------------------------------------------------------------------
    def _generic(self, text: str, lineno: int, when: float | None, out: list[Record]) -> None:
        if DIGIT.search(text, 0, 4000) is None and NONFINITE_VALUE.search(text, 0, 4000) is None:
            return  # (`local_val_loss   nan`: a value with no digit is still one)
        if text.count("=") >= CONFIG_KEYS and CONFIG_REPR.search(text) is not None:
            return  # the run's settings as a dataclass or Namespace repr: read by runconfig, not a record
        if "=" in text and CONFIG_SOURCE.search(text) is not None:
            return  # a config file's source echoed (settings, not a record)
        if "%|" in text and (bar := BAR_TAIL.search(text)) is not None:
            postfix = "=" in text[bar.end():]
            text = text[:bar.start()]  # a tqdm bar whose description holds the metrics: keep those only
            if not text.strip() or (postfix and ":" not in text and "=" not in text):
                return  # (`Epoch 3` before a postfix of metrics: the template reader reads that bar whole)
        if "," in text and ("]" in text or ")" in text):
            text = zip_names(text)  # `[Avg. Loss, Loss]: [10.44, 7.17]`: the names and their values, paired
        step: int | None = None
        total: int | None = None
        if "[" in text[:48] and "/" in text[:64] and self._counter_line(text, lineno, when, out):
            return
        if "[epoch:" in text[:80] and self._basicsr(text, lineno, when, out):
            return
        if " at " in text and self._at_counter(text, lineno, when, out):
            return
        lead_pairs: list[tuple[str, float]] = []
        word: str | None = None
        named_within = False  # a named step counter beside the epoch's counted within it (inferred)
        if "[" in text[:24] and (named := NAMED_COUNTERS.match(text)) is not None:
            epoch_at: int | None = None
            for c in NAMED_COUNTER.finditer(named.group()):  # the step's and the epoch's; an outer one (a fold) no
                key = c.group(1).lower()
                if key in STEP_KEYS and step is None:
                    step, total = int(c.group(2)), int(c.group(3)) if c.group(3) else None
                elif _is_epoch(key):
                    lead_pairs.append(("epoch", float(c.group(2))))
                    epoch_at = int(c.group(2))
            if named.group("p") is not None:
                word = named.group("p").lower()
                if not word.startswith("train") and step is not None and total is not None and step + 1 < total:
                    return  # `Val Step[0100/3125], Avg Loss: ..`: an evaluation's running figures, not its result
            if step is not None and epoch_at is not None and (word is None or word.startswith("train")):
                # `Epoch[002/100], Step[0000/0196]` after `Epoch[001/100], Step[0100/0196]`: a count that goes
                # back as the epoch moves on counts within it (its total is the epoch's length): the batches of
                # the epochs before are added, marked inferred. Its total is no run's length either way.
                step, named_within = self._global_step(step, [("epoch", float(epoch_at))], total)
                total = None
            text = text[named.end():]
        if text[:1] in "*•(":
            if self.in_eval and text[:1] == "*":
                self._eval_over(out)
                return  # `* Acc@1 0.74 Acc@5 2.54 loss 7.148`: the evaluation's means, read off its last batch
            text = BULLET.sub("", text, count=1)  # `* (global step 50: loss: 0.81, lr: 0.001`: a bulleted record
        if word is None and "[" in text[:80] and (tagged := EPOCH_PHASE.match(text)) is not None:
            word = tagged.group("p").lower()
            text = f"{tagged.group('e')} {text[tagged.end():]}"
        if text[:1] == "[" and (bracket := PHASE_BRACKET.match(text)) is not None:
            text = text[bracket.end():]
            word = bracket.group("p").lower()
            if bracket.group("i") is not None:  # `[ Valid | 001/100 ]`: the epoch's counter, the step here
                step, total = int(bracket.group("i")), int(bracket.group("n"))
        m = STEP_PREFIX.match(text) if step is None else None
        if m is not None:
            step = int(m.group("n"))
            total = int(m.group("m")) if m.group("m") else None
            text = text[m.end():]
        verb = STARTED.match(text) if text[:1] in "SsBbEeNnTt" else None
        started = verb is not None
        if verb is not None:  # `Starting epoch 3 current lr is 0.001`: the epoch under way, and what it starts with
            text = text[verb.end():]
        phase = PHASE_LABEL.match(text)
        if phase is not None:  # `Test set: Average loss: 5.01, Acc@1: 8.4%`: the evaluation's own names
            text = text[phase.end():]
            word = phase.group("p").lower()
        elif word is None and "|" in text and (title := PIPE_TITLE.match(text)) is not None:
            word = title.group("p").lower()
            if not word.startswith("train") and (count := PIPE_COUNT.search(text)) is not None \
                    and int(count.group(1)) < int(count.group(2)):
                return  # a batch of an evaluation under way: its running figures, not the evaluation's result
            text = text[title.end():]
        means = " (" in text and len(VALUE_MEAN.findall(text)) >= 2
        if means:  # `loss 0.0392 (0.1691) acc 84.4 (88.1)` (Dassl): each value then its running mean; the value
            text = VALUE_MEAN.sub("", text)  # is the step's, the mean in brackets goes (the timings too)
        pairs, nfields, dirty = _pairs(text)
        if means and (kept := [(k, v) for k, v in pairs if k.lower() not in LOGGER_TIMES]) != pairs:
            pairs, nfields = kept, max(len(kept), nfields - (len(pairs) - len(kept)))  # (fewer fields with them)
        if word is None and pairs and (named := PHASE_KEY.match(pairs[0][0] if not _is_epoch(pairs[0][0]) or
                                                                len(pairs) < 2 else pairs[1][0])) is not None:
            word = named.group("p").lower()  # (its other keys, `Accuracy`, are that phase's)
        if lead_pairs and pairs:
            pairs, nfields = lead_pairs + pairs, nfields + len(lead_pairs)
        if word is not None and not word.startswith("train"):
            if sum(k.lower() in SPLIT_NAMES for k, _ in pairs) >= 2 and not any("loss" in k.lower() for k, _ in pairs):
                # `[eval] iter 500: train 3.44 val 3.43`: an evaluation's estimate of each split's loss
                pairs = [(f"{k} loss" if k.lower() in SPLIT_NAMES else k, v) for k, v in pairs]
            else:
                pairs = [(k if k.lower().startswith(word) or k.lower() in UNPHASED else f"{word} {k}", v)
                         for k, v in pairs]
        pairs = splits_as_loss(pairs)  # (before a line without a step is judged: `Train=..  Val=..` is a loss)
        step_key = m.group("k").lower() if m is not None else None
        step_raw = None
        if step is None:
            for k, v in pairs:
                low = k.lower()
                if " " in low:
                    low = low.replace(" ", "_")  # `Global Step: 10`
                if low in STEP_KEYS and math.isfinite(v):
                    step, step_key, step_raw = int(v), low, k
                    break
        inferred = named_within
        hold_first = False
        if step is not None and step_raw is not None and step_key not in INNER_KEYS:  # (a batch: _global_step's)
            step, inferred, hold_first = self._epoch_length(step, pairs, out)
        within: int | None = None  # the epoch's length in steps, when the line's counter counts within it
        if step is not None and step_key in INNER_KEYS:
            within = total if any(_is_epoch(k) for k, _ in pairs) else None
            step, inferred = self._global_step(step, pairs, within)
            if within is not None:
                total = None  # (`epoch: 2, iter: 25/489`: the epoch's length, not the run's)
        counted = step is not None  # (a line whose own counter dates it)
        if step is not None:
            self.printed_step = step
        else:
            if "%|" in text:
                return  # a progress bar (dataset map, download): not a training record
            verdict = self._stepless_verdict(pairs, nfields, dirty)
            if verdict is None:
                return
            if verdict is HOLD and started:
                verdict = TAKE  # (an epoch that starts is under way now, not a configuration printed once)
            if verdict is HOLD and self.epoch_head is not None and self.printed_step == self.epoch_head \
                    and any("loss" in k.lower() or known(k) or _QUALITY(k) is not None for k, _ in pairs):
                verdict = TAKE  # a metric under an `* epoch N` heading: that epoch's record, no echo
            if verdict is HOLD:
                keys = frozenset(k.lower() for k, _ in pairs)
                held = self.held.get(keys)
                if held is None:
                    if len(self.held) < KEYSETS_KEPT:
                        self.held[keys] = (lineno, when, pairs, self.printed_step)
                    return
                moved = held[3] is not None and self.printed_step is not None and self.printed_step > held[3]
                if held[2] == pairs and not moved:
                    self.held[keys] = (lineno, when, pairs, self.printed_step)  # dated from here on
                    return  # the same keys and values again: a config printed twice (per rank), not metrics
                # (the same again after training moved on: a constant printed with every epoch, `lr = 0.0001`)
                del self.held[keys]
                if len(self.taken) < KEYSETS_KEPT:
                    self.taken.add(keys)
                h_line, h_when, h_pairs, h_printed = held  # the keys came back: the first line was a record too
                # it belongs to the step printed before it, not to the one now; when training has moved on
                # since, it is dropped rather than sent back in time (steps only go back on a resume)
                stale = h_printed is not None and self.printed_step is not None and h_printed < self.printed_step
                if h_printed is not None:
                    h_step, h_inferred = h_printed, True
                else:
                    h_step, h_inferred = self._stepless_step(h_pairs, h_line, out)
                if not stale:
                    out.extend(Sample(k, v, h_step, h_when, self.source, h_line, h_inferred)
                               for k, v in h_pairs if k.lower() not in STEP_KEYS)
            step, inferred = self._stepless_step(pairs, lineno, out)
        if not pairs:
            return
        pairs = generator_as_loss(letter_as_loss(total_as_loss(pairs, counted=counted)))
        if self.epoch_first and step_raw is None:
            out.extend(self.epoch_first)  # another kind of record: the first one held is what it said
            self.epoch_first = []
        if len(pairs) > 1 and any(k[:4].lower() == "test" and "loss" in k.lower() for k, _ in pairs):
            pairs = _test_apart(pairs)
        if len(pairs) > 1 and sum("loss" in k.lower() for k, _ in pairs) > 1:
            pairs = sorted(pairs, key=lambda p: averaged(p[0]))  # `Avg. Loss, Loss`: the step's own loss names first
        if total is not None:
            out.append(Event(EventKind.PROGRESS, self.source, lineno, step=step, time=when,
                             fields={"step": step, "total": total}))
        for k, v in pairs:
            low = k.lower()
            if low in STEP_KEYS or k == step_raw or ((within is not None or started) and _is_epoch(k)):
                continue  # (the epoch a step counts within is a counter too, and so is the one a line starts)
            if low == "mfu" and v == MFU_SENTINEL:
                continue  # nanoGPT prints -100% until it has measured a few iterations
            (self.epoch_first if hold_first else out).append(Sample(k, v, step, when, self.source, lineno, inferred))

    def _at_counter(self, text: str, lineno: int, when: float | None, out: list[Record]) -> bool:
        """`Loss at step 12: 8.49`: a metric dated by the step its name gives, and the pairs after it in the
        same record (`validation loss at step 10: 7.46, the acc is: 0.038`), of the same split as it."""
        said = at_counter(text)
        rest = ""
        if said is None and ", " in text:
            head, _, rest = text.partition(", ")
            said = at_counter(head)
        if said is None or said[2].name not in STEP_KEYS:
            return False
        name, value, counter = said
        self.printed_step = counter.value
        out.append(Sample(name, value, counter.value, when, self.source, lineno))
        more, _, dirty = _pairs(rest) if rest else ([], 0, 0)
        split = LABEL_PHASE.search(name)
        word = split.group().lower() if split is not None and split.start() == 0 else ""
        for k, v in more if not dirty else []:
            k = PROSE_KEY.sub("", k) or k  # `the acc is`: the name is `acc`
            if word and not LABEL_PHASE.match(k) and k.lower() not in UNPHASED:
                k = f"{word} {k}"
            out.append(Sample(k, v, counter.value, when, self.source, lineno))
        return True

    def _basicsr(self, text: str, lineno: int, when: float | None, out: list[Record]) -> bool:
        """BasicSR's (and MMCV's iteration runner's) message: the step is its `iter`, the LR the first of its
        groups', the losses follow the `[eta: ...]` block."""
        head = BASICSR_HEAD.search(text, 0, 200)
        if head is None:
            return False
        step = int(head.group("i").replace(",", ""))
        self.printed_step = step
        lr = _number(head.group("lr"))
        pairs = [("lr", lr)] if lr is not None else []
        pairs += _pairs(text[head.end():].strip())[0]
        out.extend(Sample(k, v, step, when, self.source, lineno) for k, v in pairs)
        return True

    def _counter_line(self, text: str, lineno: int, when: float | None, out: list[Record]) -> bool:
        """Lines stepped by bracketed counters rather than a `step` key. MetricLogger's `[i/n]` within
        epoch `[e]` gives the step e*n+i (marked inferred: whether epochs count from 0 is not said);
        its running means in brackets are dropped; `Test:`/`Val:` lines are the evaluation at the
        step training reached. The tutorial's `[epoch, batch]` restarts the batch count each epoch;
        `[epoch, batch/total]` says how many batches an epoch has."""
        m = LOGGER_HEAD.match(text)
        if m is not None:
            pairs = _pairs(RUNNING_MEAN.sub("", text[m.end():]))[0]
            pairs = [(k, v) for k, v in pairs if k.lower() not in LOGGER_TIMES]
            label = (m.group("label") or "").strip().lower()
            if not pairs:
                # `Epoch: [3/100] Total time: 0:13:07`: the epoch's timing, no metric (nor a step of its own)
                return label in EPOCH_KEYS and m.group("e") is None
            # (`Epoch: [3/100] loss: 0.5`: a metric under the epoch's counter alone is stepped by it)
            if label.startswith(EVAL_LABELS):
                i, n = int(m.group("i")), int(m.group("n"))
                held = self.eval_held if self.in_eval else None
                self.in_eval = True
                if held is not None and i <= held[4]:
                    self._eval_over(out)  # its batches start again: another evaluation (a second split)
                    held = None
                if i + 1 < n:  # a batch of the evaluation: its window's figures, not the evaluation's yet
                    before = held[4] if held is not None else -1
                    self.eval_held = (text[m.end():], lineno, when, self.printed_step, i, before, n)
                    return True
                self.eval_held = None
                self._eval_means(text[m.end():], lineno, when, self.printed_step, out)
                return True
            self._eval_over(out)  # training went on: the evaluation's last printed batch was its last
            self.in_eval = False
            i, n = int(m.group("i")), int(m.group("n"))
            if m.group("e") is not None:
                step = int(m.group("e")) * n + i
            else:
                step = self._counter_restart(i, n, pairs, lineno, out) + i
            self.printed_step = step
            out.extend(Sample(k, v, step, when, self.source, lineno, True) for k, v in pairs)
            return True
        m = TUTORIAL_HEAD.match(text)
        if m is None:
            return False
        pairs = _pairs(text[m.end():])[0]
        if not pairs:
            return False
        if m.group("n") is not None:  # `[7,  1450/ 2562]`: the epoch's length is printed, the step exact
            self.epoch_len = int(m.group("n"))
        if self.tutorial_epoch0 is None:
            self.tutorial_epoch0 = min(int(m.group("e")), 1)  # a log whose first epoch is 1 counts them from 1
        if self.epoch_len is not None:  # and `[7,  1450]` lines beside those count the same way
            step = max(0, int(m.group("e")) - self.tutorial_epoch0) * self.epoch_len + int(m.group("i"))
        else:
            step, _ = self._global_step(int(m.group("i")), [("epoch", float(m.group("e")))])
        self.printed_step = step
        out.extend(Sample(k, v, step, when, self.source, lineno, True) for k, v in pairs)
        return True

    def _eval_means(self, rest: str, lineno: int, when: float | None, step: int | None, out: list[Record]) -> None:
        """An evaluation's last batch line: in parentheses, each metric's mean over the whole evaluation,
        at the step training had reached."""
        pairs = _pairs(WHOLE_MEAN.sub(r"\2", rest))[0]
        pairs = [(k, v) for k, v in pairs if k.lower() not in LOGGER_TIMES]
        out.extend(Sample(k if k.lower().startswith("eval") else f"eval_{k}", v, step, when,
                          self.source, lineno, True) for k, v in pairs)

    def _eval_over(self, out: list[Record], *, at_end: bool = False) -> None:
        """The evaluation under way is over (training went on, its `*` summary came): its last printed
        batch line, held, was its last. At the end of the log only when the next print, as far on as that
        line was from the one before, would have been past the end: else the log was cut mid-evaluation."""
        held, self.eval_held = self.eval_held, None
        if held is None:
            return
        rest, lineno, when, step, i, before, n = held
        if at_end and not (0 <= before < i and 2 * i - before >= n):
            return
        self._eval_means(rest, lineno, when, step, out)

    def _boosting(self, rnd: int, rest: str, lineno: int, when: float | None, out: list[Record]) -> bool:
        """A boosting round's evaluation (`[50]\tvalid_0's binary_logloss: 0.5286`): each field is named
        `<data set> <metric>`. A round that goes back is the next fit (a cross-validation fold, a search's
        trial: boosters do not resume within a log), said as a new run; the best round printed again after
        `Best iteration is:` is no new point."""
        pairs: list[tuple[str, float]] = []
        for field in rest.split("\t"):
            m = BOOST_PAIR.match(field.strip())
            if m is None:
                return False
            value = _number(m.group("v"))
            if value is None:
                return False
            pairs.append((f"{m.group('set')} {m.group('m')}", value))
        if not pairs:
            return False
        if self.boost_best:
            self.boost_best = False
            return True
        last = self.printed_step if self.boost_round else None
        if last is not None and rnd < last:
            self.keras_runs += 1
            out.append(self._new_run(self.keras_runs, lineno, f"round [{rnd}] after [{last}]", rnd, rnd))
        self.boost_round = True
        self.printed_step = rnd
        out.extend(Sample(k, v, rnd, when, self.source, lineno) for k, v in pairs)
        return True

    def _epoch_length(self, step: int, pairs: list[tuple[str, float]], out: list[Record]) -> tuple[int, bool, bool]:
        """(step, inferred, hold). `Epoch: 2, Steps: 4 | Train Loss: ..` after `Epoch: 1, Steps: 4 | ..`: a step
        count that stays put while the epoch moves on is the epoch's length in steps, not a position; the
        epoch is then the step (marked inferred), as for records that print no step. The first record with
        both is held until the second tells which it is."""
        epoch = next((v for k, v in pairs if _is_epoch(k) and math.isfinite(v)), None)
        if epoch is None:
            if self.epoch_first:  # a record with a step and no epoch: the first one held was a step's too
                out.extend(self.epoch_first)
                self.epoch_first = []
            return step, False, False
        if self.epoch_within:
            return *self._global_step(step, pairs), False
        if self.epoch_len_steps is not None:
            return (int(epoch), True, False) if step == self.epoch_len_steps else (step, False, False)
        last = self.epoch_step
        self.epoch_step = (epoch, step)
        if last is None:
            return step, False, True
        held, self.epoch_first = self.epoch_first, []
        if step == last[1] and epoch > last[0] and step > 0 and epoch == int(epoch) and last[0] == int(last[0]):
            self.epoch_len_steps = step
            out.extend(Sample(h.name, h.value, int(last[0]), h.time, h.source, h.line, True) for h in held)
            return int(epoch), True, False
        out.extend(held)
        if step < last[1] and epoch > last[0]:
            # `Epoch 1, Step 25` after `Epoch 0, Step 125`: the step went back as the epoch moved on, so it counts
            # within the epoch; the steps of the epochs before are added (as for a batch counter), marked inferred
            self.epoch_within = True
            self.inner_last, self.inner_closed = last, True
            return *self._global_step(step, pairs), False
        return step, False, False

    def _counter_restart(self, i: int, n: int, pairs: list[tuple[str, float]], lineno: int,
                         out: list[Record]) -> int:
        """`[1/6] loss ..` after `[6/6] ..` or `[30/30] ..`: a bare `[i/n]` counter going back. With another
        total, or with the loss back near where the last count began, it is the next training of a script
        that fits several models in turn (said as a new run); with the same total and the loss carrying on
        from where it was, it is the next epoch of a loop that counts its batches alone. Returns the count
        of the counters before this one, which the step adds to `i`."""
        last = self.counter_last
        self.counter_last = (i, n)
        loss = next((v for k, v in pairs if "loss" in k.lower() and math.isfinite(v)), None)
        if last is not None and i < last[0] and (last[0] >= last[1] or n != last[1]):
            first, latest = self.counter_losses
            epoch = n == last[1] and loss is not None and first is not None and latest is not None \
                and abs(loss - latest) < abs(loss - first)
            if epoch:
                self.counter_base += n
            else:
                self.keras_runs += 1
                self.counter_base = 0
                self.counter_losses = (None, None)
                out.append(self._new_run(self.keras_runs, lineno, f"[{i}/{n}] after [{last[0]}/{last[1]}]", i, i))
        if loss is not None:
            self.counter_losses = (self.counter_losses[0] if self.counter_losses[0] is not None else loss, loss)
        return self.counter_base

    def _global_step(self, n: int, pairs: list[tuple[str, float]], length: int | None = None) -> tuple[int, bool]:
        """`ep: 1, batch: 20` after `ep: 0, batch: 260`: the batch counter restarted with the epoch. The
        batches of the epochs before (the epoch's `length` when the counter prints it, else the last logged,
        a slight undercount) are added; marked inferred."""
        epoch = next((v for k, v in pairs if _is_epoch(k) and math.isfinite(v)), None)
        last = self.inner_last
        if epoch is None:
            # PaddlePaddle's `Batch=1000 ... CurrentCost=..` lines say no epoch; only the pass's summary
            # (`Pass=0 Batch=22582 AvgCost=..`) does. A batch count that starts again after such a summary
            # is the next epoch, not a restart of the run.
            if last is None or not self.inner_closed:
                return n, self.inner_base > 0
            if n <= last[1]:
                self.inner_base += max(last[1], 1)
                last = (last[0] + 1, n)
            self.inner_last = (last[0], n)
            return self.inner_base + n, True
        if last is not None and epoch > last[0] and n <= last[1]:
            self.inner_base += length or max(last[1], 1)  # (an epoch that logged only its batch 0 still moved on)
        self.inner_last = (epoch, n)
        self.inner_closed = True
        return self.inner_base + n, self.inner_base > 0

    def _stepless_verdict(self, pairs: list[tuple[str, float]], nfields: int, dirty: int) -> object | None:
        """Whether a line without a step is a metrics record: TAKE, HOLD (only once the same keys come
        back: a config echo or a banner prints each key set once) or None (prose). A loss among the keys
        is taken at once when it has company, and so are pairs half of which name task metrics; keys with spaces
        (`Batch loss`) need a loss, or a task metric's name (`Overall validation pixAcc`)."""
        if not pairs or len(pairs) < 0.6 * nfields:
            return None
        keys = [k.lower() for k, _ in pairs]
        if any(k.count(" ") >= MAX_KEY_WORDS for k in keys):
            return None
        lossy = any("loss" in k for k in keys)
        if not lossy and (dirty or any(" " in k and _QUALITY(k) is None and not known(k) for k in keys)):
            return None  # a key of words is prose unless it names a task metric (`Overall validation pixAcc`)
        if len(pairs) >= 2 and (lossy or 2 * sum(_QUALITY(k) is not None for k in keys) >= len(keys)):
            return TAKE  # task metrics side by side (`precision: 0.00%; recall: 0.00%; FB1: 0.00`, `mean_dice: 0.0,
            # best_dice: 0.0`) are an evaluation even when it is printed once, at the end
        return TAKE if frozenset(keys) in self.taken else HOLD

    def _stepless_step(self, pairs: list[tuple[str, float]], lineno: int, out: list[Record]) -> tuple[int, bool]:
        """The step of a record that prints none. In a log whose other lines print steps, it belongs to
        the last printed one (an eval or an epoch summary between training lines). Otherwise records
        are counted, and an epoch that changes with every record is the step itself; such an epoch
        going back to its start is another training in the same log (scripts that train several
        models in turn), told as a new run so that it is neither a resume nor a divergence. Once a
        record has carried the per-step training loss, only such records advance the count: an epoch's
        average or its BLEU line takes the step training reached."""
        # a record that says its own epoch (`Epoch 1 - Batch loss: 12.1`) is counted, whatever heading it is under
        headed = self.epoch_head is not None and self.printed_step == self.epoch_head
        if self.printed_step is not None and not (headed and any(_is_epoch(k) for k, _ in pairs)):
            if self.keras_epoch is not None:
                self.keras_logged = True  # a record under `Epoch N/M`: a later `Epoch 0/M` starts another run
            return self.printed_step, True
        training = any(step_loss(k) for k, _ in pairs)
        if training or not self.loss_seen:
            self.count += 1  # once the per-step loss is seen, only its records are steps
        self.loss_seen = self.loss_seen or training
        epoch = next((v for k, v in pairs if _is_epoch(k) and math.isfinite(v)), None)
        if epoch is None and self.last_epoch is not None and not self.epoch_repeats:
            return int(self.last_epoch), True  # an epoch's evaluation line, after the epoch's own record
        if epoch is not None:
            last = self.last_epoch
            if last is not None and not self.epoch_repeats and epoch < last and epoch <= 1 < last:
                self.runs += 1
                out.append(self._new_run(self.runs, lineno, f"epoch {epoch:g} after {last:g}", int(epoch), int(epoch)))
            elif last is not None and epoch < last:
                self.epoch_repeats = True
            elif last is not None and epoch == last:
                keys = frozenset(k.lower() for k, _ in pairs)
                if keys in self.epoch_keys:
                    self.epoch_repeats = True  # the same record twice in one epoch: batches, not epochs
                elif len(self.epoch_keys) < KEYSETS_KEPT:
                    self.epoch_keys.add(keys)  # another record of the same epoch (its header, its summary)
            if epoch != last:
                self.epoch_keys = {frozenset(k.lower() for k, _ in pairs)}
            self.last_epoch = epoch
            if not self.epoch_repeats and epoch == int(epoch):
                return int(epoch), True  # the epoch stands in for the step: still not a printed step
        return self.count, True

    def _epoch_mark(self, epoch: int, lineno: int, out: list[Record]) -> None:
        """An epoch heading over records that print no step (they are counted). Back at the epoch the
        first heading said, after records were counted under the heading before, it is another training
        appended to the same log (a script launched again and again, each launch from epoch 1): told as a
        new run, and the count starts over, so that its first loss is not read against the last one's low."""
        if self.mark_first is None:
            self.mark_first = epoch
        if self.mark is not None and epoch <= self.mark_first and self.count > self.mark[1]:
            self.runs += 1
            out.append(self._new_run(self.runs, lineno, f"epoch {epoch} after {self.mark[0]}", epoch, None))
            self.count = 0
        self.mark = (epoch, self.count)

    def _mmengine(self, m: re.Match[str], rest: str, lineno: int, when: float | None, out: list[Record]) -> None:
        """MMEngine's console: the training step is exact (epoch x iterations per epoch + iteration);
        evaluation lines belong to the step training reached, and only their results are kept."""
        i, n = int(m.group("i")), int(m.group("n"))
        pairs = [(k, v) for k, v in _pairs(rest)[0] if k.lower() != "eta"]
        if m.group("mode") != "train":
            if i < n:
                if not self.mm_eval:
                    self.mm_eval = True
                    out.append(Event(EventKind.EVAL_START, self.source, lineno, step=self.mm_step, time=when,
                                     fields={"total": n}))
                return
            self.mm_eval = False
            out.extend(Sample(k, v, self.mm_step, when, self.source, lineno, False)
                       for k, v in pairs if k.lower() not in MM_TIMING)
            return
        self.mm_eval = False
        if m.group("by") == "Epoch" and m.group("e") is not None:
            step = (int(m.group("e")) - 1) * n + i
        else:
            step = i
            out.append(Event(EventKind.PROGRESS, self.source, lineno, step=step, time=when,
                             fields={"step": step, "total": n}))
        self.mm_step = step
        out.extend(Sample(k, v, step, when, self.source, lineno, False) for k, v in pairs)

    def _new_run(self, runs: int, lineno: int, why: str, first: int, step: int | None) -> Event:
        """Another training starts in the same log (a script that trains several models in turn): an INFO
        fact, so that the engine starts its curves afresh and it is neither a resume nor a divergence.
        `first` is the counter it starts at; `step` the event's step (None where that counter is no step)."""
        return Event(EventKind.INFO, self.source, lineno, step=step, text=f"training {runs} starts ({why})",
                     fields={"new_run": runs, "new_run_step": first})

    def _keras_epoch(self, epoch: int, total: int, lineno: int, out: list[Record]) -> None:
        """`Epoch N/M`: the step of the fit lines that follow. An epoch number that goes back after
        epochs were logged is another `fit()` (scripts train several models one after another): a new
        run, said with an INFO fact so that it is not mistaken for a resume of the last one."""
        if self.keras_epoch is not None and epoch <= self.keras_epoch and self.keras_logged:
            self.keras_runs += 1
            out.append(self._new_run(self.keras_runs, lineno, f"Epoch {epoch}/{total}", epoch, epoch))
        self.keras_epoch = self.printed_step = epoch
        self.keras_logged = False
        out.append(Event(EventKind.PROGRESS, self.source, lineno, step=epoch, fields={"step": epoch, "total": total}))

    def _keras(self, text: str, lineno: int, out: list[Record]) -> None:
        for m in KERAS_PAIR.finditer(text):
            value = _number(m.group("v"))
            if value is not None:
                self.keras_logged = True
                out.append(Sample(m.group("k"), value, self.keras_epoch, None, self.source, lineno, True))

    def _flush(self) -> list[Record]:
        b = self.block
        self.block = None
        if b is None:
            return []
        step = b["step"]
        line = b["line"]
        when = b["time"]
        out: list[Record] = []
        if b["total"]:
            out.append(Event(EventKind.PROGRESS, self.source, line, step=step, time=when,
                             fields={"step": step, "total": int(b["total"])}))
        if b["epoch"] is not None:
            out.append(Sample("epoch", float(b["epoch"]), step, when, self.source, line, False))
        for k, v in b["pairs"]:
            out.append(Sample(k, v, step, when, self.source, line, False))
        return out
