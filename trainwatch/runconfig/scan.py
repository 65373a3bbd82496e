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

import bisect
import re
from collections.abc import Iterable
from dataclasses import dataclass

DUMP, DOTTED, JSON, COMMAND_LINE, YAML, LOG_LINE = "dump", "dotted", "json", "command line", "yaml", "log line"
TRUST = {DUMP: 5, DOTTED: 5, JSON: 4, COMMAND_LINE: 3, YAML: 3, LOG_LINE: 2}

_METRIC_ROW = re.compile(r"""(?i)(?<![\w/])(?:train_|lm[ _])?(?:loss|grad_norm)\b['"]?[^:=\n\d]{0,24}[:=]\s*['"]?"""
                         r"""(?:[-+]?\d|[-+]?nan\b|[-+]?inf)""")
"""A line that logs a loss value is a metric record: its `learning_rate` is the schedule's, not the config's."""
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


@dataclass(frozen=True)
class Occurrence:
    """A key's name as the log writes it (`micro-batch-size` on a command line), where it ends, and what
    stands around it: a quote (`'`, `"` or none) and whether `--` comes before it."""

    name: str
    start: int
    end: int
    quote: str
    dashes: bool

    @property
    def key(self) -> str:
        return self.name.replace("-", "_")


_AFTER = re.compile(rf"""(\s*[=:]\s*|\s+\.{{2,}}\s+|\s+)({_VALUE})""")
_NAME_CHAR = re.compile(r"[\w.\-/]")


def occurrences(text: str, keys: Iterable[str]) -> list[Occurrence]:
    """Each key found in `text` as a whole name, in order (a name inside a longer one, `lr` in `clr` or
    `lr_backbone`, is passed over). Found with `str.find`, one name at a time: a regex alternation of
    sixty names tries every position of a 320 KB sample (80 ms); the searches take a few."""
    names = set(keys)
    names |= {k.replace("_", "-") for k in names if "_" in k}  # a command line's spelling
    found: dict[int, str] = {}
    n = len(text)
    for name in names:
        i = text.find(name)
        while i >= 0:
            j = i + len(name)
            if (j >= n or not (text[j].isalnum() or text[j] in "_-")) and len(name) > len(found.get(i, "")):
                found[i] = name
            i = text.find(name, i + 1)
    out = []
    for i in sorted(found):
        p = i
        quote = text[p - 1] if p and text[p - 1] in "'\"" else ""
        p -= len(quote)
        dashes = p >= 2 and text.startswith("--", p - 2)
        if dashes:
            p -= 2
        if p and _NAME_CHAR.match(text, p - 1):
            continue
        out.append(Occurrence(found[i], i, i + len(found[i]), quote, dashes))
    return out


_OPENS = re.compile(r"\([ \t]*$", re.M)  # a line ending in `(`: a dump with one key a line may follow
_NAME_BEFORE = re.compile(r"(?<![\w.])([A-Z]\w*)$")
_CLOSES = re.compile(r"^[ \t]*\),?[ \t]*$", re.M)


def pairs(text: str, found: list[Occurrence]) -> list[Pair]:
    """The `key <sep> value` pairs at the keys `found` in `text` (see `occurrences`), in order, each
    labelled with the shape of its line; only the lines that hold a key are examined."""
    if not found:
        return []
    starts = [0] + [m.end() for m in re.finditer("\n", text)]
    blocks = _blocks(text)
    out: list[Pair] = []
    seen_line = -1
    skip = False
    line = ""
    inline: re.Match[str] | None = None
    for m in found:
        end, quote, dashes = m.end, m.quote, m.dashes
        if quote:
            if not text.startswith(quote, end):
                continue
            end += 1
        after = _AFTER.match(text, end)
        if after is None:
            continue
        sep, value = after.groups()
        if sep.strip() == "" and not dashes:
            continue  # `key value` is only a pair on a command line
        lineno = bisect.bisect_right(starts, m.start)
        if lineno != seen_line:
            seen_line = lineno
            lo = starts[lineno - 1]
            hi = starts[lineno] - 1 if lineno < len(starts) else len(text)
            line = text[lo:hi]
            skip = len(line) > MAX_LINE or bool(_METRIC_ROW.search(line)) or _is_opener(line)
            inline = _INLINE_REPR.search(line)
        if skip:
            continue
        at = m.start - starts[lineno - 1]
        origin, where = _shape(line, at, sep, _block_at(blocks, m.start), inline, dashes, quote)
        out.append(Pair(m.key, _unquote(value), origin, where, lineno, len(out)))
    return out


def _is_opener(line: str) -> bool:
    return bool(_OPENS.search(line)) and bool(_NAME_BEFORE.search(line.rstrip()[:-1]))


def _blocks(text: str) -> list[tuple[int, int, str]]:
    """(start, end, name) of each dump printed one key a line: from `Name(` ending a line to a `)` line."""
    out = []
    closes = [m.start() for m in _CLOSES.finditer(text)]
    for m in _OPENS.finditer(text):
        line_start = text.rfind("\n", 0, m.start()) + 1
        name = _NAME_BEFORE.search(text, line_start, m.start())
        if name is None:
            continue
        i = bisect.bisect_left(closes, m.end())
        out.append((m.end(), closes[i] if i < len(closes) else len(text), name.group(1)))
    return out


def _block_at(blocks: list[tuple[int, int, str]], pos: int) -> str:
    for start, end, name in reversed(blocks):
        if start <= pos < end:
            return name
        if start <= pos:
            break
    return ""


def _shape(line: str, at: int, sep: str, block: str, inline: re.Match[str] | None, dashes: bool,
           quote: str) -> tuple[str, str]:
    if dashes:
        return COMMAND_LINE, COMMAND_LINE
    if inline is not None and inline.start() < at:
        return DUMP, inline.group(1)
    if block:
        return DUMP, block
    if "." in sep:
        return DOTTED, "arguments dump"
    if quote == '"' and ":" in sep:
        return JSON, "JSON config"
    if ":" in sep and line[:at].strip() in ("", "-"):
        return YAML, "YAML config"
    return LOG_LINE, LOG_LINE


def _unquote(v: str) -> str:
    if len(v) >= 2 and v[0] == v[-1] and v[0] in "'\"":
        return v[1:-1]
    return v
