"""Key/value pairs of a run's configuration, found in the text of its log, each with where it was said.

Trainers print their configuration in a handful of shapes: a dataclass or argparse repr
(`TrainingArguments(...)`, `SftArguments(` one key a line, `Namespace(lr=..., ...)`), JSON (DeepSpeed,
an FSDP override), YAML (Hydra, axolotl, LLaMA-Factory), a dotted dump (`micro_batch_size ..... 1` from
Megatron and DeepSpeed), a banner (`max_length = 16384`) and the command line (`--max_length 16384`).
Only the keys asked for are looked for, in one pass; the shape a pair came in decides how much it is
trusted when two places disagree: the trainer's own dump of its parsed arguments beats a config file,
which beats the command line (a default the trainer applied is not on it), which beats a banner.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

DUMP, DOTTED, JSON, COMMAND_LINE, YAML, LOG_LINE = "dump", "dotted", "json", "command line", "yaml", "log line"
TRUST = {DUMP: 5, DOTTED: 5, JSON: 4, COMMAND_LINE: 3, YAML: 3, LOG_LINE: 2}

_METRIC_ROW = re.compile(r"""(?i)(?<![\w/])(?:train_|lm[ _])?(?:loss|grad_norm)['"]?\s*[:=]\s*['"]?"""
                         r"""(?:[-+]?\d|[-+]?nan\b|[-+]?inf)""")
"""A line that logs a loss value is a metric record: its `learning_rate` is the schedule's, not the config's."""
_BLOCK_OPEN = re.compile(r"(?<![\w.])([A-Z]\w*)\(\s*$")  # `args: SftArguments(` with one key a line after it
_INLINE_REPR = re.compile(r"(?<![\w.])(Namespace|[A-Z]\w*(?:Arguments|Args|Config))\(")
_VALUE = r"""'[^'\n]*'|"[^"\n]*"|\{|\[[^\]\n]*\]|[^\s,;)}\]'"`]+"""
MAX_LINE = 20_000  # longer lines are data, not a configuration


@dataclass(frozen=True)
class Pair:
    """One `key <sep> value` found in the log."""

    key: str
    raw: str  # the value as written, quotes stripped
    origin: str  # DUMP, JSON, ...: the shape it came in
    where: str  # the dump's own name (`TrainingArguments`, `Namespace`) when it has one, else the shape
    line: int  # 1-based line of the text it was found on
    pos: int  # order of appearance

    @property
    def trust(self) -> int:
        return TRUST[self.origin]


def pattern(keys: Iterable[str]) -> re.Pattern[str]:
    """The matcher of `keys`: a key quoted or not, after `--` or not, then `=`, `:`, dots or (after
    `--`) blanks, then a value. A command line may spell `_` as `-` (`--micro-batch-size 1`)."""
    alt = "|".join(sorted((re.escape(k).replace("_", "[-_]") for k in set(keys)), key=len, reverse=True))
    return re.compile(rf"""(?<![\w.\-/])(--)?(["']?)({alt})\2(?![\w\-])"""
                      rf"""(\s*[=:]\s*|\s+\.{{2,}}\s+|\s+)({_VALUE})""")


def pairs(text: str, matcher: re.Pattern[str]) -> list[Pair]:
    """Every pair `matcher` finds in `text`, in order, each labelled with the shape of its line."""
    out: list[Pair] = []
    block = ""
    for lineno, line in enumerate(text.splitlines(), 1):
        if len(line) > MAX_LINE:
            continue
        opened = _BLOCK_OPEN.search(line)
        if opened:
            block = opened.group(1)
            continue
        if block and line.strip() in (")", "),"):
            block = ""
            continue
        if _METRIC_ROW.search(line):
            continue
        inline = _INLINE_REPR.search(line)
        for m in matcher.finditer(line):
            dashes, quote, key, sep, value = m.groups()
            if sep.strip() == "" and not dashes:
                continue  # `key value` is only a pair on a command line
            origin, where = _shape(line, m, block, inline, bool(dashes), quote, sep)
            out.append(Pair(key, _unquote(value), origin, where, lineno, len(out)))
    return out


def _shape(line: str, m: re.Match[str], block: str, inline: re.Match[str] | None, dashes: bool, quote: str,
           sep: str) -> tuple[str, str]:
    if dashes:
        return COMMAND_LINE, COMMAND_LINE
    if inline is not None and inline.start() < m.start():
        return DUMP, inline.group(1)
    if block:
        return DUMP, block
    if "." in sep:
        return DOTTED, "arguments dump"
    if quote == '"' and ":" in sep:
        return JSON, "JSON config"
    if ":" in sep and line[:m.start()].strip() in ("", "-"):
        return YAML, "YAML config"
    return LOG_LINE, LOG_LINE


def _unquote(v: str) -> str:
    if len(v) >= 2 and v[0] == v[-1] and v[0] in "'\"":
        return v[1:-1]
    return v
