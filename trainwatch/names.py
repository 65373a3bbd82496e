"""Names: canonical metric names (one alias table in data, looked up once per distinct raw name), and
the rank a source's file name carries (`rank3.log`), which the live reader, the dashboard and the exporter
all label a source by."""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from trainwatch import yamltext

# A loss named by how it was averaged or over what (`EPOCH loss`, `Avg.Loss`, `average train loss`,
# `mean val loss`) is still the train or eval loss: the alias table cannot list every spelling.
# Names glued in camel case (`TrainLoss`, `ValLoss`) are the same names with no separator.
# (`Ave Loss`: the average spelt short)
_QUALIFIERS = (r"(?:(?:epoch|avg|ave|average|averaged|mean|running|smoothed|total|tot|batch|step|iter|iteration"
               r"|overall)[ _.]+)*")
# `Training Phase Loss`, `validation stage loss`: the split named with the word for it, then the metric (not `set`:
# `test_set loss` is the name a test loss beside the validation one is kept apart under)
_SPLIT_WORD = r"(?:(?:phase|split|stage)[ _.]+)?"
# `avg loss so far`, `loss until now`: a running figure says it is one after the name
_SO_FAR = r"(?:[ _.]+(?:so[ _.]far|until[ _.]now|till[ _.]now))?"
# a boosting library's data set and loss (`valid_0 binary_logloss`, `train logloss`): the log loss is the loss
_LOSS_WORD = r"(?:(?:binary|multi)_?)?(?:log)?loss" + _SO_FAR + "$"
_TRAIN_LOSS = re.compile(r"^" + _QUALIFIERS + r"(?:train(?:ing)?(?:_\d)?[ _.]*" + _SPLIT_WORD + ")?" + _QUALIFIERS
                         + _LOSS_WORD)
_LOSS_TRAIN = re.compile(r"^loss[/_. ](?:train|training)(?:[/_. ](?:epoch|step))?$")  # Lightning's `loss/train`
_LOSS_EVAL = re.compile(r"^loss[/_. ](?:val|valid|validation|eval|test|dev)(?:[/_. ](?:epoch|step))?$")
# (`v_loss`: the short prefix some Lightning modules log their validation under)
_EVAL_LOSS = re.compile(r"^" + _QUALIFIERS
                        + r"(?:(?:val|vali|valid|validation|eval|evaluation|dev|test)(?:_\d)?[ _./]*" + _SPLIT_WORD
                        + r"|v[_/]+)" + _QUALIFIERS + _LOSS_WORD)

# a cross-entropy named with its split (`TRAIN CROSS ENTROPY`, `valid_xent`) is that split's loss; one that names
# no split stays as it is: beside a `loss` it is often one term of it
_CROSS_ENTROPY = r"(?:cross[ _.\-]?entropy|xent)$"
_TRAIN_CE = re.compile(r"^" + _QUALIFIERS + r"train(?:ing)?[ _.]+" + _QUALIFIERS + _CROSS_ENTROPY)
_EVAL_CE = re.compile(r"^" + _QUALIFIERS + r"(?:val|vali|valid|validation|eval|evaluation|dev|test)[ _.]+"
                      + _QUALIFIERS + _CROSS_ENTROPY)


def _table() -> dict[str, str]:
    text = resources.files("trainwatch").joinpath("data/aliases.yaml").read_text(encoding="utf-8")
    out: dict[str, str] = {}
    for canonical, names in yamltext.load(text).items():
        out[canonical.lower()] = canonical
        for n in names:
            out[str(n).lower()] = canonical
    return out


class Canonicalizer:
    """Maps a raw metric name to its canonical one; the cache keeps the hot path to one dict lookup."""

    def __init__(self, extra: dict[str, str] | None = None) -> None:
        self._aliases = _table()
        for raw, canonical in (extra or {}).items():
            self._aliases[raw.lower()] = canonical
        self._cache: dict[str, str] = {}

    def __call__(self, raw: str) -> str:
        name = self._cache.get(raw)
        if name is None:
            key = raw.strip()
            name = self._aliases.get(key.lower()) or _by_shape(key.lower()) or key
            if len(self._cache) < 100_000:
                self._cache[raw] = name
        return name


_AVERAGED = re.compile(r"(?:^|[ _.])(?:epoch|avg|ave|average|mean|running|smoothed)[ _.]|[ _.]so[ _.]far\b", re.I)


def averaged(raw: str) -> bool:
    """Whether a raw loss name says it is a statistic over many steps (`Average Train Loss`, `EPOCH loss`,
    `running loss`): beside a per-step loss of the same log it is another series, not more of its points."""
    return bool(_AVERAGED.search(raw.strip() + " "))


def step_loss(raw: str) -> bool:
    """Whether a raw name is the per-step training loss (`loss`, `Batch loss`, `train_loss`), not an
    average over an epoch or an evaluation's: the records that carry it are the steps of a log that
    prints none."""
    key = raw.strip().lower()
    return "loss" in key and (_by_shape(key) or _table_once().get(key)) == "loss" and not averaged(raw)


_TABLE: dict[str, str] = {}


def _table_once() -> dict[str, str]:
    if not _TABLE:
        _TABLE.update(_table())
    return _TABLE


def known(raw: str) -> bool:
    """Whether a raw name is one the alias table or a loss's shape gives a canonical name: a key of
    several words that is known (`Current Learning Rate`) is a metric, not prose."""
    key = raw.strip().lower()
    return key in _table_once() or _by_shape(key) is not None


# `Current Learning Rate`, `cur_lr`: a value named as the one in force now is that metric
_NOW = re.compile(r"^(?:current|curr|cur)[ _.]+")


def _by_shape(key: str) -> str | None:
    if key[:1] == "c" and (now := _NOW.match(key)) is not None:
        rest = key[now.end():]
        return _table_once().get(rest) or _by_shape(rest)
    if "loss" not in key:
        if "entropy" in key or "xent" in key:
            return "eval_loss" if _EVAL_CE.match(key) else "loss" if _TRAIN_CE.match(key) else None
        return None
    if _EVAL_LOSS.match(key) or _LOSS_EVAL.match(key):
        return "eval_loss"
    if _TRAIN_LOSS.match(key) or _LOSS_TRAIN.match(key):
        return "loss"
    return None


# -- which way is better ----------------------------------------------------------------------------

_TOKEN_SPLIT = re.compile(r"[^a-z0-9]+")
_TRAIN = {"train", "training", "trn"}
_EVAL = {"val", "vali", "valid", "validation", "eval", "evaluation", "test", "dev", "overall", "holdout"}


@dataclass(frozen=True)
class Direction:
    """What a metric's name says about it: its kind, which way is better, whether it is a share of the
    whole (0-1 or a percent), whether it trades against another metric, and whether it is measured on
    the train or the eval split ("" when the name does not say)."""

    kind: str
    higher: bool
    share: bool
    split: str
    tradeoff: bool = False  # one side of a trade-off (precision against recall): a fall is no failure alone
    guess: bool = False  # the direction is a guess from a generic name (a bare `score`), not a known metric

    @property
    def is_loss(self) -> bool:
        return self.kind == "loss"


def _kinds() -> tuple[list[tuple[str, bool, bool, bool, bool, re.Pattern[str]]], set[str]]:
    text = resources.files("trainwatch").joinpath("data/quality.yaml").read_text(encoding="utf-8")
    out = []
    table = yamltext.load(text)
    ignore = {str(t) for t in table.pop("ignore", [])}
    for kind, spec in table.items():
        pats = "|".join(f"(?:{p})" for p in spec["names"])
        out.append((str(kind), spec["better"] == "higher", bool(spec.get("share", False)),
                    bool(spec.get("tradeoff", False)), bool(spec.get("guess", False)),
                    re.compile(r"(?:^|_)(?:" + pats + r")(?:_|$)")))
    return out, ignore


class Quality:
    """Which way is better for a metric, by its (canonical or raw) name: the table in data/quality.yaml,
    extended by a user config's `directions` (name -> higher|lower). None for a metric whose name says
    nothing (a learning rate, a throughput). Cached per name: a rule may ask on every sample."""

    def __init__(self, extra: dict[str, str] | None = None) -> None:
        self._kinds, self._ignore = _kinds()
        self._extra = {k.strip().lower(): v.strip().lower() == "higher" for k, v in (extra or {}).items()}
        self._cache: dict[str, Direction | None] = {}

    def __call__(self, name: str) -> Direction | None:
        if name in self._cache:
            return self._cache[name]
        got = self._classify(name)
        if len(self._cache) < 100_000:
            self._cache[name] = got
        return got

    def _classify(self, name: str) -> Direction | None:
        low = name.strip().lower()
        tokens = [t for t in _TOKEN_SPLIT.split(low) if t]
        norm = "_".join(tokens)
        split = "train" if _TRAIN.intersection(tokens) else "eval" if _EVAL.intersection(tokens) else ""
        if low == "eval_loss":
            split = "eval"
        if low in self._extra:
            return Direction(low, self._extra[low], False, split)
        if self._ignore.intersection(tokens) or any(f"_{w}_" in f"_{norm}_" for w in self._ignore if "_" in w):
            return None  # (an entry of several tokens, `prob_perplexity`, matches them in a row)
        for kind, higher, share, tradeoff, guess, pat in self._kinds:
            if pat.search(norm):
                return Direction(kind, higher, share, split, tradeoff, guess)
        return None


_RANK = re.compile(r"rank[_-]?(\d+)", re.I)


def rank_of(name: str) -> int | None:
    """The rank a source's file name says (`train_rank3.log`: 3), or None."""
    m = _RANK.search(Path(name).name)
    return int(m.group(1)) if m else None
