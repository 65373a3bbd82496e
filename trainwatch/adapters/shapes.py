"""Line shapes the template reader recognises, as pure functions of one line's text.

Each function answers for one shape and returns None when the line is not in it, so the reader can try
them in turn. Values are read as logs print them (`-.448`, `1e-07`, `55.15%`); `None` is no value (a
postfix's `last_nan_iter=None` is not a NaN) and a source location (`[train.py line:229]`) is no metric.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import lru_cache

NUM = r"[-+]?(?:\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|(?:nan|NaN|inf|Inf)(?:\.0+)?)"

# Counter names, by how close to the training loop they count: the first one a line holds gives the step
COUNTER_RANK = {"global_step": 0, "step": 1, "steps": 1, "iter": 2, "iters": 2, "iteration": 2, "it": 2,
                "update": 3, "updates": 3, "num_updates": 3, "batch": 4, "round": 5, "outer": 5, "tick": 6,
                "epoch": 9, "ep": 9}
EPOCH_NAMES = frozenset({"epoch", "ep"})

# `key:value`, `key=value`, `key:[ 3/120]` (or `key:[ 3 | 120 ]`), `key:7/200`, with no space needed around the
# separator; a key may hold up to four words (`Task Loss`, `total time`)
COMPACT = re.compile(
    r"(?:^|(?<=[\s\[,|;(:=]))(?P<k>[A-Za-z_][\w/.@\-]*(?: [A-Za-z_][\w/.@\-]*){0,3}?)\s*[:=]\s*"
    r"(?:\[\s*(?P<a>" + NUM + r")\s*(?:[/|]\s*(?P<at>\d+)\s*)?\]|(?P<v>" + NUM + r")(?:\s*/\s*(?P<vt>\d+))?)"
    r"(?P<pct>%)?(?![\w.:/\-])")
SOURCE_KEY = re.compile(r"(?:\.py\b|^line$|\bline$|lineno$)", re.I)

# tqdm: `Epoch 0:  31%|███       | 1225/3999 [35:01<1:19:18,  1.72s/it, v_num=29, loss=0.923]`
BAR_REST = re.compile(r"%\|[^|]*\|\s*(?P<n>\d+)/(?P<m>\d+)\s*\[(?P<inner>[^\]]*)\]")
BAR_EPOCH = re.compile(r"\bepoch\s*[:\[]?\s*(?P<e>\d+)(?:\s*/\s*(?P<t>\d+))?", re.I)
EVAL_WORDS = re.compile(r"(?i)(?:^|[^a-z])(?:val|valid|validation|validating|eval|evaluat\w*|test|testing|sanity|"
                        r"predict\w*|inference|map|download\w*|load\w*|tokeniz\w*|filter|generat\w*)(?:[^a-z]|$)")
NOT_METRICS = frozenset({"v_num", "it/s", "s/it"})
POSTFIX_KEY = re.compile(r"(?:^|,)\s*([^,=\s]+)\s*=")
# a postfix item set as a string (`set_postfix_str(f"loss {loss:.4f}")`): a name, a blank or colon, a value
SPACED_ITEM = re.compile(r"^\s*(?P<k>[A-Za-z_][\w/.\-]*)\s*(?::\s*|\s+)(?P<v>" + NUM + r")\s*$")
HELD_PREFIXES = ("val", "eval", "test")  # postfix keys of the last evaluation, shown until the next one

# `Validation mIOU: [0.28, 0.14]`: a value per class, read as their mean
LIST_PAIR = re.compile(r"^(?P<k>[A-Za-z][\w .@/\-]{0,40}?)\s*[:=]\s*\[(?P<l>\s*" + NUM + r"(?:\s*,\s*" + NUM
                       + r")+\s*)\]\s*$")
# `[Avg. Loss, Loss]: [10.44, 7.17]`, `(loss, acc) = (0.31, 0.92)`: a list of names, then the list of their values
_NAME = r"[A-Za-z][\w .@/\-]{0,40}?"
ZIPPED = re.compile(r"[\[(](?P<k>\s*" + _NAME + r"(?:\s*,\s*" + _NAME + r")+\s*)[\])]\s*[:=]\s*[\[(](?P<v>\s*" + NUM
                    + r"(?:\s*,\s*" + NUM + r")+\s*)[\])]")
ZIPPED_HINT = re.compile(r"[\])]\s*[:=]\s*[\[(]")
# `Validity over 64 molecules: 1.56%`, `Accuracy of the network on the 10000 test images: 54 %`
COUNT_PAIR = re.compile(r"^(?P<k>[A-Za-z][A-Za-z ]{0,40}?)\s+(?:over|on|of|for)\s+(?:the\s+)?\d+\s+[A-Za-z][\w ]{0,30}?"
                        r"\s*:\s*(?P<v>" + NUM + r")\s*%?\s*$")
# `[0] 1150 4.31 0.24` or `[0] 1150 IOU: [...]`: a bracketed epoch, then the step, then values
COUNTER_HEAD = re.compile(r"^\[\s*(?P<e>\d+)\s*(?:\]\s+|\|\s*)(?P<i>\d+)(?:\s*\])?(?=\s)")  # or `[ 3 | 1200 ]`
EPOCH_ALONE = re.compile(r"^(?:===+\s*)?Epoch\s*[:\[]?\s*(?P<e>\d+)\s*(?:(?:/|of\s)\s*(?P<t>\d+)\s*)?\]?\s*"
                         r"(?:===+)?\s*$", re.I)
# a loop's counter alone on its line, the metrics on the lines after it: `[Round 10/100]`, `Iteration 5 of 40:`,
# `[Round 11/100] training...` (words after it, no number)
COUNTER_ALONE = re.compile(r"^\[?\s*(?P<c>round|iteration|iter|step|outer|update)\s*[:#]?\s*(?P<n>\d+)\s*"
                           r"(?:(?:/|of\s)\s*(?P<t>\d+)\s*)?\]?\s*:?(?:\s+[^\d\s][^\d]*)?$", re.I)
ALL_NUMBERS = re.compile(r"^\s*" + NUM + r"%?(?:\s+" + NUM + r"%?)*\s*$")  # blanks between: no backtracking
WORDS = re.compile(r"^[A-Za-z_][\w/.@%()\-]*(?: [A-Za-z_][\w/.@%()\-]*)*$")
COLUMNS = re.compile(r"\s{2,}|\t")
DIGIT = re.compile(r"\d")
DESC_VALUE = re.compile(r"[A-Za-z]\s*[:=]?\s+" + NUM + r"(?![\w/])")  # `Loss 200.35` in a bar's description
TRAIN_DESC = re.compile(r"(?i)^(?:train(?:ing)?|epoch)\b")
TIMING = re.compile(r"(?i)^(?:time|data|eta|batch.?time|data.?time)\b")


# what a metric's name says it measures: a key-value pair on a line with no counter needs one of these
METRIC_WORDS = re.compile(r"(?i)loss|acc|map\b|iou|f1|dice|bleu|rouge|reward|auc|psnr|ssim|wer\b|cer\b|ppl|perplex|"
                          r"precision|recall|score|entropy|classification rate|error rate")


def number(text: str) -> float | None:
    """A value as printed, or None for words (`None`, `True`)."""
    t = text.strip().rstrip("%")
    try:
        return float(t)
    except ValueError:
        pass
    # Lightning's progress bar prints a non-finite float as `nan.0` / `inf.0`
    head, dot, zeros = t.partition(".")
    if dot and zeros and not zeros.strip("0") and head.lstrip("+-").lower() in ("nan", "inf"):
        return float(head)
    return None


@dataclass
class Counter:
    name: str
    value: int
    total: int | None


def compact_pairs(text: str) -> tuple[list[tuple[str, float]], list[Counter]]:
    """Metrics and counters of a `key:value|key:[a/b],...` line: counters are named ones (epoch, step,
    iter, ...) or any value printed as `a/b`; a source location is neither."""
    pairs: list[tuple[str, float]] = []
    counters: list[Counter] = []
    for m in COMPACT.finditer(text):
        key = m.group("k").strip()
        if SOURCE_KEY.search(key):
            continue
        raw = m.group("a") if m.group("a") is not None else m.group("v")
        total = m.group("at") or m.group("vt")
        value = number(raw)
        if value is None:
            continue
        low = key.lower()
        if low in COUNTER_RANK and math.isfinite(value) and value == int(value):
            counters.append(Counter(low, int(value), int(total) if total else None))
        elif total is None:  # `MEMBER: 1/5` counts something else than training
            pairs.append((key, value))
    return pairs, counters


@dataclass
class Bar:
    """One tqdm redraw: its description, position, total and the raw text of its postfix (read only for
    the redraws that are taken: a line may hold thousands of redraws of the same step)."""
    desc: str
    n: int
    total: int
    inner: str

    @property
    def epoch(self) -> tuple[int, int | None] | None:
        return _epoch_of(self.desc)

    @property
    def training(self) -> bool:
        """A bar that counts training steps: not an evaluation, sanity check or data loading, and one
        with metrics of its own (not only the last evaluation's)."""
        if _evaluating(self.desc):
            return False
        if "=" in self.inner:
            keys = [k for k in POSTFIX_KEY.findall(self.inner) if k not in NOT_METRICS]
        else:
            keys = [k for k, _ in self._spaced()]
        return bool(keys) and not all(k.lower().startswith(HELD_PREFIXES) for k in keys)

    def _spaced(self) -> list[tuple[str, str]]:
        """The `name value` items of a postfix set as one string: tqdm prints the elapsed time and the
        rate first, neither of which is a word then a number."""
        if " " not in self.inner:
            return []
        return [(m.group("k"), m.group("v")) for item in self.inner.split(",")[1:]
                if (m := SPACED_ITEM.match(item)) is not None and m.group("k") not in NOT_METRICS]

    @property
    def described(self) -> bool:
        """A training bar with no postfix whose description holds `key value` metrics."""
        desc = self.desc
        return "=" not in self.inner and not _evaluating(desc) and METRIC_WORDS.search(desc) is not None \
            and DESC_VALUE.search(desc) is not None

    @property
    def bare_training(self) -> bool:
        """A bar with no metric at all that says it counts training (`Training:  5%|...| 640/30000000`)."""
        return "=" not in self.inner and TRAIN_DESC.search(self.desc) is not None and not _evaluating(self.desc)

    def postfix(self) -> list[tuple[str, float]]:
        out: list[tuple[str, float]] = []
        if "=" not in self.inner:
            return [(k, value) for k, v in self._spaced() if (value := number(v)) is not None]
        for item in self.inner.split(","):
            k, eq, v = item.partition("=")
            k = k.strip()
            if not eq or not k or k in NOT_METRICS:
                continue
            value = number(v)
            if value is None and ":" in v:  # `loss=Loss: 0.99`: the value printed with its own label
                value = number(v.rpartition(":")[2])
            if value is not None:
                out.append((k, value))
        return out


@lru_cache(maxsize=256)
def _evaluating(desc: str) -> bool:
    """Whether a bar's description names an evaluation or data work (descriptions repeat: cached)."""
    return EVAL_WORDS.search(desc.replace("Epoch", "")) is not None


EVAL_PHASE = re.compile(r"(?i)(?:^|[^a-z])(?:(?P<val>val|valid|validat\w*)|(?P<eval>eval|evaluat\w*)|(?P<test>test\w*))"
                        r"(?:[^a-z]|$)")


@lru_cache(maxsize=256)
def eval_phase(desc: str) -> str | None:
    """The split an evaluation bar's description names (`Validate`: val, `Testing`: test), or None for a
    bar that names none (data loading, mapping, generation)."""
    m = EVAL_PHASE.search(desc.replace("Epoch", ""))
    if m is None:
        return None
    return next(name for name in ("val", "eval", "test") if m.group(name))


@lru_cache(maxsize=256)
def _epoch_of(desc: str) -> tuple[int, int | None] | None:
    m = BAR_EPOCH.search(desc)
    return None if m is None else (int(m.group("e")), int(m.group("t")) if m.group("t") else None)


# Lightning's RichProgressBar: `Epoch 0/-2 ━━━━━━━━ 150/150 0:01:20 • 0:00:00 2.82it/s v_num: 0.000 train_loss: 1.059`.
# Rich draws a bar of box characters, not tqdm's `%|`; its metrics follow the rate as `key: value` items and
# wrap onto indented lines of their own when the console is narrow. Captured without a terminal, a bar is
# written once, at its end: a run of one epoch leaves a single redraw.
RICH_BAR = re.compile(r"^(?P<desc>Epoch\s+(?P<e>\d+)(?:/-?\d+)?)\s+[━╸╺╾╼─\s]*[━╸╺╾╼─]\s+(?P<n>\d+)/(?P<t>\d+)\s+"
                      r"[\d:]+\s+•\s+[-\d:]+(?:\s+" + NUM + r"\s*(?:it/s|s/it))?"
                      r"(?P<post>(?:\s+\S+:\s*" + NUM + r")*)\s*$")
RICH_ITEM = re.compile(r"(?P<k>[A-Za-z_][\w/.\-]*):\s*(?P<v>" + NUM + r")(?!\S)")
RICH_WRAPPED = re.compile(r"^\s{8,}(?P<items>(?:[A-Za-z_][\w/.\-]*:\s*" + NUM + r"\s*)+)$")


def rich_items(text: str) -> list[tuple[str, float]]:
    """The `key: value` items of a Rich bar's metrics, without the logger's version (`v_num`)."""
    out = []
    for m in RICH_ITEM.finditer(text):
        v = number(m.group("v"))
        if v is not None and m.group("k") not in NOT_METRICS:
            out.append((m.group("k"), v))
    return out


def bars(line: str) -> list[Bar]:
    """Every tqdm redraw in one physical line (redraws are separated by `\\r`), in order. Linear in the
    line: a 3 MB line of 26k redraws is common."""
    out: list[Bar] = []
    for seg in line.split("\r"):
        at = seg.find("%|")
        if at < 0:
            continue
        m = BAR_REST.match(seg, at)
        if m is None:
            continue
        desc = seg[:at].rstrip("0123456789 ").rstrip(":").strip()
        out.append(Bar(desc, int(m.group("n")), int(m.group("m")), m.group("inner")))
    return out


TOTALS = frozenset({"total", "tot", "sum"})


def total_as_loss(pairs: list[tuple[str, float]], whole: bool = False,
                  counted: bool = False) -> list[tuple[str, float]]:
    """`total=2.147 det=1.913 kd=0.469`: a loss summed from the parts printed beside it, on a line where no
    key says loss, is the loss (`total_loss`). So is a `total` that is the one metric of a line a training
    counter dates (`counted`: `[epoch: 3/200, iter: 25/489] total: 1.64`), what a loop sums and prints at each
    step. A whole `total` is a count of something, not a loss, unless it is negative (no count is) or `whole`
    says the log's `total` was a loss before (a loss printed to three figures is whole once it passes 100, or
    once it reaches -10)."""
    metrics = [k.lower() for k, _ in pairs if k.lower() not in COUNTER_RANK]
    alone = counted and len(metrics) == 1 and metrics[0] in TOTALS
    if (len(pairs) < 3 and not alone) or not any(k.lower() in TOTALS for k, _ in pairs) \
            or any("loss" in k.lower() for k, _ in pairs):
        return pairs
    return [("total_loss", v) if k.lower() in TOTALS and (whole or not (math.isfinite(v) and v == int(v) and v >= 0))
            else (k, v) for k, v in pairs]


SPLIT_TRAIN = frozenset({"train", "training", "trn"})
SPLIT_EVAL = frozenset({"val", "vali", "valid", "validation", "eval", "dev", "test"})
LOSS_WORDS = re.compile(r"loss|cost|nll|xent|entropy", re.I)


def splits_as_loss(pairs: list[tuple[str, float]]) -> list[tuple[str, float]]:
    """`Epoch 3: Train=0.41  Val=0.44  MAE=12.1`: values named by their split alone, the train split's beside an
    evaluation's, on a line where no key names a loss, are each split's loss (what a loop prints first, and
    unnamed, is its objective). A test value beside a validation one keeps a name of its own (`test_set loss`):
    one eval loss is one curve. A split alone (`Train: 0.93`) says no more than that, and is left as it is; so
    are splits whose values are all whole numbers above 1 (`Train:[5994], Val:[5794]`): their sizes."""
    keys = [k.strip().lower() for k, _ in pairs]
    if not SPLIT_TRAIN.intersection(keys) or not SPLIT_EVAL.intersection(keys) \
            or any(LOSS_WORDS.search(k) for k in keys):
        return pairs
    if all(math.isfinite(v) and v == int(v) and v > 1 for (_, v), key in zip(pairs, keys)
           if key in SPLIT_TRAIN or key in SPLIT_EVAL):
        return pairs  # counts of examples (or batches) per split, not a loss
    apart = "test" in keys and len(SPLIT_EVAL.intersection(keys)) > 1
    return [(("test_set loss" if apart and key == "test" else f"{k.strip()} loss"), v)
            if key in SPLIT_TRAIN or key in SPLIT_EVAL else (k, v) for (k, v), key in zip(pairs, keys)]


def letter_as_loss(pairs: list[tuple[str, float]]) -> list[tuple[str, float]]:
    """`L: 7.94, L_crf: 7.07, L_selection: 0.87`: a loss written as the letter of the papers, with its terms
    as `L_<term>` beside it, is the loss. The letter alone says nothing (a length, a layer count), so it is
    read as the loss only beside its terms, on a line where no key says loss."""
    if len(pairs) < 2 or not any(k == "L" for k, _ in pairs) \
            or not any(k.startswith("L_") and len(k) > 2 for k, _ in pairs) \
            or any("loss" in k.lower() for k, _ in pairs):
        return pairs
    return [("loss", v) if k == "L" else (k, v) for k, v in pairs]


# a round's summary printed as a tuple (`fit progress: (3, 3.04, {'cen_accuracy': 0.206}, 1915.6)`): the step,
# the loss, then its named metrics, then the seconds elapsed (Flower's history; any `(step, loss, {...})`)
STEP_TUPLE = re.compile(r"^[:\s]*[A-Za-z][\w ]{0,40}?\s*:\s*\(\s*(?P<n>\d+)\s*,\s*(?P<loss>" + NUM
                        + r")\s*,\s*\{(?P<d>[^{}]{0,600})\}\s*(?:,\s*" + NUM + r"\s*)?\)\s*$")
DICT_ITEM = re.compile(r"['\"](?P<k>[A-Za-z_][\w/.\-]{0,60})['\"]\s*:\s*(?P<v>" + NUM + r")")


def step_tuple(text: str) -> tuple[int, list[tuple[str, float]]] | None:
    """`label: (step, loss, {'name': value, ...}[, seconds])` as (step, [("loss", loss), (name, value)...])."""
    m = STEP_TUPLE.match(text)
    if m is None:
        return None
    pairs = [("loss", float(m.group("loss")))]
    pairs += [(d.group("k"), float(d.group("v"))) for d in DICT_ITEM.finditer(m.group("d"))]
    return int(m.group("n")), pairs


def list_pair(text: str) -> tuple[str, float] | None:
    """`key: [a, b, ...]` as (key, mean of the values)."""
    m = LIST_PAIR.match(text)
    if m is None:
        return None
    values = [float(v) for v in m.group("l").split(",")]
    if all(v == int(v) for v in values if math.isfinite(v)):
        return None  # `GPUs: [0, 1, 2, 3]`: ids, not scores
    return m.group("k").strip(), sum(values) / len(values)


def zip_names(text: str) -> str:
    """`Epoch 10 [Avg. Loss, Loss]: [10.44, 7.17]` as `Epoch 10 Avg. Loss: 10.44, Loss: 7.17`: each name of a
    printed list paired with the value at its place in the next list, when both lists are as long."""
    if ZIPPED_HINT.search(text) is None:
        return text

    def pair(m: re.Match[str]) -> str:
        names = [n.strip() for n in m.group("k").split(",")]
        values = [v.strip() for v in m.group("v").split(",")]
        if len(names) != len(values) or not all(names):
            return m.group()
        return ", ".join(f"{n}: {v}" for n, v in zip(names, values))

    return ZIPPED.sub(pair, text)


def count_pair(text: str) -> tuple[str, float] | None:
    """`Validity over 64 molecules: 1.56%` as ("Validity", 1.56): the count names the sample, not the metric."""
    m = COUNT_PAIR.match(text)
    if m is None:
        return None
    value = number(m.group("v"))
    if value is None:
        return None
    return m.group("k").split(" of ")[0].strip(), value


def header_cells(text: str) -> list[str] | None:
    """The column names of a table's header row: at least two cells, each of words only (cells split by
    pipes, else by runs of blanks, else by single blanks when every word is one cell)."""
    text = text.strip()
    piped = [[c.strip() for c in text.strip("|").split("|")]]
    options = piped if "|" in text else [COLUMNS.split(text), text.split()]
    for cells in options:
        if len(cells) >= 2 and all(c and WORDS.match(c) for c in cells):
            return cells
    return None


TRANSPOSED_HEADS = frozenset({"metric", "metrics", "name"})
SPLIT_PREFIX = {"train": "epoch", "training": "epoch", "val": "val", "valid": "val", "validation": "val",
                "eval": "eval", "test": "test", "dev": "dev"}
"""The columns of a table whose rows are metrics (`METRIC | TRAIN | VALIDATION`): the prefix each split's
cells take. A training column holds the epoch's average (`epoch Loss`), never the per-step loss."""


def transposed_row(text: str, header: list[str]) -> list[tuple[str, float]] | None:
    """`Loss | 0.0876 | 0.0697` under `METRIC | TRAIN | VALIDATION`: (`epoch Loss`, 0.0876), (`val Loss`, 0.0697)."""
    if header[0].strip().lower() not in TRANSPOSED_HEADS or not all(
            c.strip().lower() in SPLIT_PREFIX for c in header[1:]):
        return None
    cells = [c.strip() for c in text.strip().strip("|").split("|")] if "|" in text else COLUMNS.split(text.strip())
    if len(cells) != len(header) or not WORDS.match(cells[0]):
        return None
    out = []
    for split, cell in zip(header[1:], cells[1:]):
        value = number(cell)
        if value is None:
            return None
        out.append((f"{SPLIT_PREFIX[split.strip().lower()]} {cells[0]}", value))
    return out


def row_values(text: str) -> list[float] | None:
    """A table row of numbers only (`| 3 | 0.52 |` or `3   0.52   0.81`)."""
    body = text.replace("|", " ") if "|" in text else text
    if not ALL_NUMBERS.match(body):
        return None
    return [float(v.rstrip("%")) for v in body.split()]



# a metric told in a sentence with its counter: `The loss after 3 epochs is 0.218`, `Loss at epoch 3: 0.52`,
# `validation accuracy after 10 epochs = 0.91`
PROSE_METRIC = re.compile(
    r"^(?:the\s+)?(?P<k>[A-Za-z][\w ]{0,30}?)\s+(?:after|at|for|of)\s+(?:(?P<c>epoch|step|iteration|iter|round|batch)"
    r"s?\s+(?P<n>\d+)|(?P<n2>\d+)\s+(?P<c2>epoch|step|iteration|iter|round|batch)s?)\s*(?:is|was|=|:)\s*(?P<v>"
    + NUM + r")\s*[.,;]?\s*$", re.I)
PROSE_COUNTER = {"iteration": "iter"}


def prose_metric(text: str) -> tuple[str, float, Counter] | None:
    """A metric named in a sentence with the counter it was reached at, as (name, value, counter); only for a
    name that says it is a metric (loss, accuracy, ...), so that other prose with numbers is no series."""
    m = PROSE_METRIC.match(text)
    if m is None or METRIC_WORDS.search(m.group("k")) is None:
        return None
    unit = (m.group("c") or m.group("c2")).lower()
    return m.group("k").strip(), float(m.group("v")), Counter(PROSE_COUNTER.get(unit, unit), int(m.group("n") or
                                                                                                m.group("n2")), None)


def numeric_table(lines: list[str], least: int = 20, share: float = 0.8) -> bool:
    """Whether most lines are rows of numbers only, all as wide (at least two columns): a headerless table
    (a loop that prints `progress<TAB>loss`). Its columns have no names, but what the log says in words
    between them (a summary sentence) can still be read."""
    widths: dict[int, int] = {}
    filled = 0
    for line in lines:
        text = line.strip()
        if not text:
            continue
        filled += 1
        if ALL_NUMBERS.match(text):
            n = len(text.split())
            widths[n] = widths.get(n, 0) + 1
    if not widths or filled < least:
        return False
    width, rows = max(widths.items(), key=lambda kv: kv[1])
    return width >= 2 and rows >= share * filled

def counted_table(lines: list[str], least: int = 3) -> bool:
    """Whether `lines` hold at least `least` rows under a header row whose cells hold the loop's `a/b`
    counters (`0/29  40/165  0.172  1.99` under `Epoch  Batch  box  conf`): a training table, whatever
    key-value lines (an evaluation's `AP: 0.41`) are printed between its rows."""
    headers: list[list[str]] = []
    rows = 0
    for line in lines:
        text = line.strip()
        if not text:
            continue
        if DIGIT.search(text) is None:
            if (cells := header_cells(text)) is not None:
                remember_header(headers, cells)
            continue
        if not headers or not text[:1].isdigit() or "/" not in text:
            continue
        got = fitting_row(text, headers)
        if got is not None and got[1]:
            rows += 1
            if rows >= least:
                return True
    return False


TAGGED_DICT_KEY = re.compile(r'"[A-Za-z_][\w/.\-]{0,60}"\s*:\s*"?' + NUM + r'"?\s*[,}]')


def tagged_dicts(lines: list[str], least: int = 3) -> bool:
    """Whether `lines` hold at least `least` records that are a JSON dict of metrics after a logger's tags
    (fairseq under hydra: `[2022-04-08 18:48:05,372][train_inner][INFO] - {"epoch": 1, "loss": "9.276", ..}`,
    its values numbers or numbers in quotes): a log of such dicts, whatever key-value lines are between them."""
    rows = 0
    for line in lines:
        text = line.rstrip()
        if text[-1:] != "}" or (brace := text.find('{"')) <= 0:
            continue
        if len(TAGGED_DICT_KEY.findall(text, brace)) >= 2:
            rows += 1
            if rows >= least:
                return True
    return False


# -- counters and metrics written as words: `Global-step 34 --Accept update with kl=2e-07, old=-3.8`,
# `epoch 1, minibatch 120/120, validation error 86.93 %`, `Total reward in global step 33: 1.37`
LEAD_COUNTER = re.compile(r"^[\s=>#*\-]*(?P<c>[A-Za-z][A-Za-z_\- ]{0,20}?)\s*[:#]?\s*(?P<n>\d+)(?:\s*/\s*(?P<t>\d+))?"
                          r"(?![\w.%/])")
PHRASE = re.compile(r"^(?P<k>[A-Za-z][A-Za-z_\- ]{0,48}?)\s+(?P<v>" + NUM + r")(?:\s*/\s*(?P<t>\d+))?\s*(?P<pct>%)?$")
AT_COUNTER = re.compile(r"^(?P<k>[A-Za-z][A-Za-z_\- ]{0,40}?)\s+(?:in|at|after|of)\s+(?:the\s+)?"
                        r"(?P<c>[A-Za-z][A-Za-z_\- ]{0,20}?)\s*(?P<n>\d+)\s*[:=]\s*(?P<v>" + NUM + r")\s*%?\s*$")


def counter_name(words: str) -> str | None:
    """The counter a phrase names (`Global-step`, `minibatch`, `Epoch`), as COUNTER_RANK spells it."""
    low = re.sub(r"[\s\-]+", "_", words.strip().lower())
    if low in COUNTER_RANK:
        return low
    if low.startswith("mini") and low[4:].lstrip("_") in COUNTER_RANK:  # `minibatch`, `mini-batch`
        return low[4:].lstrip("_")
    return None


def lead_counter(text: str) -> Counter | None:
    """A training counter that opens the line, named in words with no separator (`Global-step 34 ...`,
    `Iter 120: ...`, `Step 7/200 ...`)."""
    m = LEAD_COUNTER.match(text)
    if m is None:
        return None
    name = counter_name(m.group("c"))
    if name is None:
        return None
    return Counter(name, int(m.group("n")), int(m.group("t")) if m.group("t") else None)


# the words before a line's first pair: the counters they name with no separator of their own (`Epoch 001
# (686 steps) / update 50 total update 00050: loss=..`), and a number before its counter's name only after
# `after`/`at` (`Eval after 250 updates:`): `(686 steps)` is a count, not a position
HEAD_COUNTER = re.compile(r"(?:^|(?<=[\s(/,\[|]))(?:(?:after|at)\s+(?P<n2>\d+)\s+(?P<c2>[A-Za-z]{2,20})|"
                          r"(?P<c>[A-Za-z][A-Za-z_\-]{0,20})\s*[:#]?\s*(?P<n>\d+)(?:\s*/\s*(?P<t>\d+))?)(?![\w.%/])")
HEAD_PHASE = re.compile(r"^[\s=>#*\-\[]*(?P<p>eval|evaluation|evaluating|val|valid|validation|test|testing|dev)\b",
                        re.I)


def head_counters(text: str) -> tuple[list[Counter], str]:
    """The counters named in words before a line's first `key=value` pair, and the evaluation the words
    open with (`Eval after 250 updates: tot_loss=3.4`: "eval"), "" when they name none."""
    first = COMPACT.search(text)
    head = text[:first.start()] if first is not None else ""
    if not head.strip():
        return [], ""
    out: list[Counter] = []
    for m in HEAD_COUNTER.finditer(head):
        word = m.group("c") or m.group("c2")
        name = counter_name(word) or (counter_name(word[:-1]) if word[-1:] in "sS" else None)
        if name is not None and all(c.name != name for c in out):
            out.append(Counter(name, int(m.group("n") or m.group("n2")), int(m.group("t")) if m.group("t") else None))
    phase = HEAD_PHASE.match(head)
    return out, "" if phase is None else phase.group("p").lower()


def phrase_pairs(text: str) -> tuple[list[tuple[str, float]], list[Counter]] | None:
    """A line of comma-separated `name value` phrases with a counter among them (Theano tutorials'
    `epoch 3, minibatch 120/120, validation error 12.5 %`). A whole number named before the first counter
    labels a phase (`Pre-training layer 0, epoch 4, cost 0.19`): it is no measurement and is dropped;
    a phrase that is no `name value` (`layer final`) is skipped, but most of them must be."""
    fields = [f.strip() for f in text.split(",")]
    if len(fields) < 2 or len(fields) > 16:
        return None
    pairs: list[tuple[str, float]] = []
    counters: list[Counter] = []
    matched = 0
    for f in fields:
        m = PHRASE.match(f)
        if m is None:
            continue
        value = number(m.group("v"))
        if value is None:
            continue
        matched += 1
        name = counter_name(m.group("k"))
        whole = math.isfinite(value) and value == int(value)
        if name is not None and whole:
            counters.append(Counter(name, int(value), int(m.group("t")) if m.group("t") else None))
        elif m.group("t") is None and not (whole and not counters):
            pairs.append((" ".join(m.group("k").split()), value))
    if not counters or not pairs or 2 * matched < len(fields):
        return None
    return pairs, counters


def at_counter(text: str) -> tuple[str, float, Counter] | None:
    """`Total reward in global step 33: 1.37`: a metric dated by the counter its name gives."""
    m = AT_COUNTER.match(text)
    if m is None:
        return None
    name = counter_name(m.group("c"))
    value = number(m.group("v"))
    if name is None or value is None:
        return None
    return " ".join(m.group("k").split()), value, Counter(name, int(m.group("n")), None)


# a table row drawn as a progress bar's description (Ultralytics: `  3/500  1.27G  0.81  2.83  73  640: 100% ━━━ 50/50`
# or `...: 100%|████| 50/50` under the header `Epoch GPU_mem box_loss seg_loss Instances Size`)
BAR_TAIL = re.compile(r":?\s+\d{1,3}%\s*(?:\||[^\x00-\x7f]|\s+\d+/\d+).*$")
COUNT_CELL = re.compile(r"^(?P<n>\d+)/(?P<t>\d+)$")


def header_row(text: str, header: list[str]) -> tuple[list[tuple[str, float]], list[Counter]] | None:
    """A row of the table under `header`, with a progress bar after its cells or none: its values by column
    name; an `a/b` cell is a counter (its column names it), a cell with a unit (`1.27G`) is passed over."""
    body = BAR_TAIL.sub("", text).split()
    if len(body) != len(header):
        return None
    pairs: list[tuple[str, float]] = []
    counters: list[Counter] = []
    for name, cell in zip(header, body):
        if (m := COUNT_CELL.match(cell)) is not None:
            counters.append(Counter(counter_name(name) or name.lower(), int(m.group("n")), int(m.group("t"))))
        elif (value := number(cell)) is not None:
            pairs.append((name, value))
        elif not cell[:1].isdigit():
            return None  # a word where the header has a column: another table
    return (pairs, counters) if pairs else None


HEADERS_KEPT = 4


def remember_header(headers: list[list[str]], cells: list[str]) -> None:
    """Keep `cells` as the latest header of `headers` (the last few distinct ones): a log prints a banner
    (`dataset summary`) or an evaluation's table between a training table's header and its rows."""
    if cells in headers:
        headers.remove(cells)
    headers.append(cells)
    del headers[:-HEADERS_KEPT]


def fitting_row(text: str, headers: list[list[str]]) -> tuple[list[tuple[str, float]], list[Counter]] | None:
    """`header_row` under the latest of `headers` the row fits (as many cells, a number or counter in each)."""
    for header in reversed(headers):
        if (got := header_row(text, header)) is not None:
            return got
    return None


YOLO5_PARTS = frozenset({"box", "obj", "cls", "seg"})


def parts_total(pairs: list[tuple[str, float]]) -> list[tuple[str, float]]:
    """A loss printed only in parts (`box_loss seg_loss cls_loss dfl_loss`) is also given as their sum, `loss`.
    YOLOv5's console heads its parts `box obj cls` (and `seg`): with both `box` and `obj` there, those are."""
    keys = {k.lower() for k, _ in pairs}
    if {"box", "obj"} <= keys:
        parts = [v for k, v in pairs if k.lower() in YOLO5_PARTS]
    else:
        parts = [v for k, v in pairs if k.lower().endswith("_loss")]
    if len(parts) < 2 or any(k.lower() in ("loss", "total_loss") for k, _ in pairs) or not any(parts):
        return pairs
    return pairs + [("loss", sum(parts))]
