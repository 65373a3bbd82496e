"""Launcher prefixes taken off the front of a log line before a format adapter reads it.

The same training loop prints the same line whatever launched it, but torchrun (`[rank3]:`,
`[default0]:`), Horovod/mpirun (`[1,0]<stdout>:`), `srun -l` (`0: `), pdsh and DeepSpeed's
multi-node runner (`node-3: `), Ray (`(main_task pid=123)`, `(WorkerDict pid=9, ip=10.0.0.2)`),
timestamps and logging levels (Python logging, fairseq's `| INFO | name |`,
glog's `W1222 19:29:33.885000 3154626 run.py:803]`) put their own tags in front of it. Adapters are
written for the bare line, so the tags go first; the rank, host and time they carried are kept beside the text.

Care is needed not to eat metrics: `loss: 0.5` and `ep: 0, batch: 20` look like `host: ` tags, and
`100: loss 2.3` like an `srun -l` rank. A host tag must look like a host name, be followed by text that
is not a number, and behave like a launcher's (tagging most lines, this one again); a bare numeric tag
is only trusted once the same number has tagged earlier lines.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from trainwatch.textsafe import strip_escapes

LEVEL_WORDS = frozenset({"INFO", "WARNING", "WARN", "ERROR", "DEBUG", "CRITICAL", "FATAL", "TRACE", "NOTICE"})
LEVELS = "(?:" + "|".join(sorted(LEVEL_WORDS, key=len, reverse=True)) + ")"

RANK = re.compile(r"\[(?:rank|default)(\d{1,5})\]:[ \t]?|\[(\d{1,5}),\d{1,5}\]<std(?:out|err)>:[ \t]?")
RAY = re.compile(
    r"\((?:raylet|gcs_server|autoscaler[^)]{0,40}|(?:[A-Za-z_][\w.]*\s+)?pid=\d+)(?:,\s*ip=[\w.:\-]+)?\)[ \t]?")
STAMP = re.compile(
    r"\[?(\d{4}[-/]\d\d[-/]\d\d|\d\d/\d\d)[ T_](\d\d:\d\d:\d\d)(?:[.,](\d{1,9}))?(?:Z|[+-]\d\d:?\d\d)?\]?"
    r"(?:[ \t]*-(?=[ \t]))?[ \t]*")
LEVEL = re.compile(
    # [INFO], ms-swift's [INFO:swift], PaddleNLP's `[    INFO] - ` (the level padded to its width, then a dash),
    # `[INFO]: ` (a format of `[%(levelname)s]: %(message)s`)
    r"\[[ \t]*" + LEVELS + r"(?::[\w.\-]{1,40})?[ \t]*\](?::|[ \t]+-(?=[ \t]))?[ \t]*"
    r"|-?[ \t]*(?:[\w.<>\[\]]{1,80}[ \t]+-[ \t]+)?" + LEVELS + r"[ \t]+-[ \t]+"  # - INFO - / name - INFO -
    # `%(filename)s[line:%(lineno)d] - %(levelname)s: %(message)s`: a file and its line, then the level and a colon
    r"|-?[ \t]*[\w.<>\-]{1,80}\[line[: ]?\s*\d+\][ \t]+-[ \t]+" + LEVELS + r"(?::[ \t]*|[ \t]+-[ \t]+)"
    r"|" + LEVELS + r":[\w.]*:"  # logging.basicConfig: INFO:root:
    r"|" + LEVELS + r"(?::[ \t]*|[ \t]+)"  # INFO msg / WARNING: msg
)
# fairseq's logging format `%(asctime)s | %(levelname)s | %(name)s | %(message)s`: the level and the logger's
# name between pipes (`| INFO | fairseq.trainer | `)
PIPED_LEVEL = re.compile(r"\|[ \t]*" + LEVELS + r"[ \t]*\|[ \t]*(?:[A-Za-z_][\w.<>\-]{0,80}[ \t]*\|[ \t]*)?")
GLOG = re.compile(r"[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+\s+\d+ [\w./\-]+:\d+\][ \t]?")  # torch C++ and elastic
# Python logging's `%(filename)s %(funcName)s [line:%(lineno)d] %(levelname)s`: up to three words, then the
# call site in brackets, then the level (FLGo's `__init__.py log_once [line:227] INFO local_val_loss  1.94`)
NAMED_SITE = re.compile(r"(?:[\w.<>\-]{1,80}[ \t]+){0,3}\[(?:line[: ]?\s*\d+|[\w.\-]+\.py:\d+)\][ \t]+" + LEVELS
                        + r"(?::[ \t]*|[ \t]+-[ \t]+|[ \t]+)")
SITE = re.compile(r"\[[\w.\-]+\.py:\d+(?::[\w<>]+)?\][ \t]*")  # DeepSpeed's [logging.py:96:log_dist]
HOST = re.compile(
    r"(localhost|\d{1,3}(?:\.\d{1,3}){3}|(?!(?i:step|iter|epoch|batch|ep|top|acc|rouge|bleu|layer|f)\d)"
    r"(?=[A-Za-z0-9.\-]*\d)[A-Za-z][A-Za-z0-9.\-]{0,62}[A-Za-z0-9]):[ \t]+(?![-+]?\.?\d)(?=\S)")
SRUN = re.compile(r"[ \t]{0,4}(\d{1,4}):[ \t]+(?=\S)")
STARTS = frozenset("[(0123456789 \t-" + "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")
MAX_ROUNDS = 6


@dataclass(slots=True)
class Prefix:
    """What the stripped tags said."""

    rank: int | None = None
    host: str | None = None
    time: float | None = None


def _when(date: str, clock: str, frac: str | None) -> float | None:
    if len(date) == 5:
        return None  # MMEngine's `08/05 23:04:34` has no year: stripped, but no clock time to give
    date = date.replace("/", "-")
    try:
        t = datetime.fromisoformat(f"{date} {clock}").timestamp()
    except ValueError:
        return None
    return t + float("0." + frac) if frac else t


def _maybe_level(head: str) -> bool:
    """Cheap test before the LEVEL regex: a level word first, or a ` - ` separator near the start."""
    first = head.split(None, 1)[0] if head.strip() else ""
    return first.split(":", 1)[0].strip("[]-") in LEVEL_WORDS or " - " in head


def _maybe_host(head: str) -> bool:
    """Cheap test before the HOST regex: `name: ` near the start, the name one word holding a digit."""
    k = head.find(": ")
    return 0 < k <= 64 and " " not in head[:k] and (head.startswith("localhost")
                                                     or any(ch.isdigit() for ch in head[:k]))


class PrefixStripper:
    """Strips one source's launcher prefixes. Keeps a little state: the numeric tags seen so far."""

    def __init__(self) -> None:
        self._numeric: dict[str, int] = {}  # srun -l tag -> lines it tagged
        self._hosts: dict[str, int] = {}  # host-like tag -> lines it started
        self._host_lines = 0  # lines that started with a host-like tag
        self._lines = 0

    def strip(self, line: str) -> tuple[str, Prefix | None]:
        """The line without its leading tags, and what they said (None when there were none)."""
        self._lines += 1
        if not line or line[0] not in STARTS:
            return line, None
        pos = 0
        info: Prefix | None = None
        stamped = levelled = False
        for _ in range(MAX_ROUNDS):
            c = line[pos:pos + 1]
            if not c:
                break
            m = None
            if c == "[":
                m = RANK.match(line, pos)
                if m is not None:
                    info = info or Prefix()
                    info.rank = int(m.group(1) or m.group(2))
                elif not stamped and (m := STAMP.match(line, pos)) is not None:
                    info = info or Prefix()
                    info.time = _when(m.group(1), m.group(2), m.group(3))
                    stamped = True
                elif (m := LEVEL.match(line, pos)) is not None or (m := SITE.match(line, pos)) is not None:
                    levelled = True
            elif c == "(":
                m = RAY.match(line, pos)
            elif c.isdigit():
                if not stamped and (m := STAMP.match(line, pos)) is not None:
                    info = info or Prefix()
                    info.time = _when(m.group(1), m.group(2), m.group(3))
                    stamped = True
                else:
                    m = self._srun(line, pos, info)
                    if m is not None:
                        info = info or Prefix()
                        info.rank = int(m.group(1))
                    elif (m := HOST.match(line, pos)) is not None and m.group(1).count(".") == 3:
                        info = info or Prefix()
                        info.host = m.group(1)
            elif c in " \t":
                m = self._srun(line, pos, info)
                if m is not None:
                    info = info or Prefix()
                    info.rank = int(m.group(1))
                elif stamped or levelled or info is not None:
                    m = LEVEL.match(line, pos)  # a level after a tab or a run of spaces
                    if m is not None and m.end() > pos and line[pos:m.start(0) + 1].strip(" \t-") == "":
                        levelled = True
                    else:
                        m = None
            elif c == "|" and not levelled and (m := PIPED_LEVEL.match(line, pos)) is not None:
                levelled = True
            elif c in "IWEF" and not stamped and (m := GLOG.match(line, pos)) is not None:
                stamped = levelled = True
            else:
                head = line[pos:pos + 100]
                sited = "[line" in head or ".py:" in head  # (what NAMED_SITE's call site needs)
                if not levelled and ((_maybe_level(head) and (m := LEVEL.match(line, pos)) is not None)
                                     or (sited and (m := NAMED_SITE.match(line, pos)) is not None)):
                    levelled = True
                elif (info is None or info.host is None) and _maybe_host(head):
                    m = self._host(line, pos)
                    if m is not None:
                        info = info or Prefix()
                        info.host = m.group(1)
            if m is None or m.end() == pos:
                break
            pos = m.end()
        if pos == 0:
            return line, None
        return line[pos:], info or Prefix()

    def count(self, lines: int) -> None:
        """Lines that went by without a look: ones whose first character is none a prefix starts with,
        for which `strip` would only have counted them."""
        self._lines += lines

    def _host(self, line: str, pos: int) -> re.Match[str] | None:
        """A `name: ` tag taken for a host only when it behaves like one: pdsh and multi-node runners tag
        every line, so host-like tags must start at least half the lines so far, and this one must have
        been seen before. A log's own named lines (`wikitext2: loss 3.9`, `fold1: acc ...`) are rare
        among its lines and stay whole. An IP address or `localhost` is a host at once."""
        m = HOST.match(line, pos)
        if m is None:
            return None
        tag = m.group(1)
        if tag == "localhost" or (tag.count(".") == 3 and tag.replace(".", "").isdigit()):
            return m
        seen = self._hosts.get(tag, 0)
        if seen or len(self._hosts) < 1024:
            self._hosts[tag] = seen + 1
        self._host_lines += 1
        return m if seen >= 1 and 2 * self._host_lines >= self._lines else None

    def _srun(self, line: str, pos: int, info: Prefix | None) -> re.Match[str] | None:
        """`srun -l` / torchrun `--tee` rank tags: a bare number trusted once it tagged earlier lines."""
        if info is not None and info.rank is not None:
            return None
        m = SRUN.match(line, pos)
        if m is None:
            return None
        tag = m.group(1)
        seen = self._numeric.get(tag, 0)
        if len(self._numeric) > 1024 and not seen:
            return None  # a step counter, not a rank: too many distinct numbers
        self._numeric[tag] = seen + 1
        return m if seen >= 1 and int(tag) < 4096 else None


def strip_text(text: str) -> str:
    """A whole head of text with ANSI codes and each line's prefixes taken off (for format detection)."""
    text = strip_escapes(text)
    stripper = PrefixStripper()
    out = []
    for line in text.split("\n"):
        out.append(stripper.strip(line)[0])
    return "\n".join(out)
