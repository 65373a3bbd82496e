"""Known error messages and Python tracebacks, found in any text log's lines.

The patterns live in data/signatures.yaml so that adding a signature needs no code. Every line goes
through a few substring checks first; a regex only runs when one of its keywords is present, which
keeps the scanner close to free on the metric lines that make up almost all of a log.
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

from trainwatch import yamltext
from trainwatch.model import Event, EventKind

TB_START = "Traceback (most recent call last):"
UNRAISABLE = "Exception ignored in"
"""Python's header for an exception it could not raise (in an atexit callback, a __del__, a weakref
callback, a thread at shutdown): it prints the traceback that follows and goes on, so it ends nothing."""
THREAD_EXC = re.compile(r"Exception in thread (?P<name>.{1,120}?):\s*$")
"""Python's header for an exception that ended a thread other than the main one (threading.excepthook):
that thread died, the process did not (a thread's uncaught exception stops only its thread)."""
THREAD_WORD = "Exception in thread "
EXC_HEADS = "Exception i"
"""The start UNRAISABLE and THREAD_WORD share: one keyword of the byte-level prefilter for both (the native
scanner's fast pass holds at most 64 long keywords in all)."""
TB_CHAIN = ("During handling of the above exception", "The above exception was the direct cause")
TB_HEAD = 60  # a long traceback keeps its first TB_HEAD lines and its last TB_TAIL
TB_TAIL = 200
TB_MAX_LINE_CHARS = 2000
TB_MAX_SECTIONS = 64  # chained exception lines kept to find the root (a loop can chain thousands)
EVENT_TEXT_CHARS = 4000
RANK_PREFIX = re.compile(r"^(?:\[(?:rank|Rank)\s*\d+\]:\s?|\[\d+,\d+\]<std(?:out|err)>:|\s*\d+: )")
RANK_KEY = re.compile(r"\[(?:rank|Rank)\s*(\d+)\]:|\[\d+,(\d+)\]<std(?:out|err)>:")
CHILD_START = re.compile(r"ChildFailedError:\s*$")
CHILD_TEXT_LINES = 80  # the report's first lines kept as evidence (one entry per failed rank follows)
ENTRY_START = re.compile(r"^\[\d+\]:\s*$")
MAX_STRAYS = 3  # other output taken between a traceback's frames before a line must be its exception
HEADER_STRAY_CHARS = 8192
"""Other output skipped between a traceback's header and its first frame: Python prints a frame before
any exception line, so what comes there is another stream's output merged in (stdout flushed in one
block while stderr printed the traceback, a console capture joining both); one buffer's worth (8 KiB,
the usual stdio block) may fall between them."""
EXC_LINE = re.compile(r"^([A-Za-z_][\w.]*)(?:\(([A-Za-z_][\w.]*)\))?(?::\s?(.*))?$")
TEXT_FIELDS = frozenset({"job", "at", "what", "target", "message", "command"})  # text that may look like a number
SIZE = re.compile(r"^([\d.]+)\s*([KMGT]?)i?B$")
SIZE_UNITS = {"": 1 / 2**30, "K": 1 / 2**20, "M": 1 / 2**10, "G": 1.0, "T": 2**10}
LOG_PREFIX_MAX = 200  # longer text before a traceback's header is output glued to it, not a logger's prefix
WARNING_PREFIX = re.compile(r"^\[?[WI]\d{4} \d\d:|\b(?:WARN(?:ING)?|INFO|DEBUG)\b")
"""A logger's prefix of a warning or lower (glog's `W0530 14:48:26.433 ...]`, `WARNING:name:`): the
program printed the traceback of an exception it handled and went on."""


@dataclass(frozen=True, slots=True)
class Signature:
    id: str
    keywords: tuple[str, ...]
    patterns: tuple[re.Pattern[str], ...]
    fields: tuple[tuple[str, tuple[re.Pattern[str], ...]], ...]


@dataclass(frozen=True, slots=True)
class ChildFailedSpec:
    start: str
    max_lines: int
    exit_codes: dict[int, str]
    default: str


@lru_cache(maxsize=1)
def _load() -> tuple[tuple[Signature, ...], ChildFailedSpec]:
    text = resources.files("trainwatch").joinpath("data/signatures.yaml").read_text(encoding="utf-8")
    data = yamltext.load(text)
    sigs = []
    for entry in data["signatures"]:
        fields = tuple(
            (name, tuple(re.compile(p) for p in pats)) for name, pats in (entry.get("fields") or {}).items()
        )
        sigs.append(Signature(
            id=entry["id"],
            keywords=tuple(entry["keywords"]),
            patterns=tuple(re.compile(p) for p in entry["patterns"]),
            fields=fields,
        ))
    cf = data["child_failed"]
    spec = ChildFailedSpec(
        start=cf["start"],
        max_lines=int(cf.get("max_lines", 60)),
        exit_codes={int(k): str(v) for k, v in (cf.get("exit_codes") or {}).items()},
        default=str(cf["default"]),
    )
    return tuple(sigs), spec


def signature_ids() -> set[str]:
    """Every ERROR signature id the scanner can emit (rules with these ids need no code)."""
    sigs, cf = _load()
    return {s.id for s in sigs} | set(cf.exit_codes.values()) | {cf.default}


def signature_keywords() -> list[str]:
    """The literal strings a line must hold before any signature's pattern is tried (the scanner's cheap first test)."""
    return list(dict.fromkeys(k for s in _load()[0] for k in s.keywords))


def trigger_keywords() -> list[str]:
    """Every literal whose presence can make `SignatureScanner.feed` act on a line while it holds no open
    block: the signatures' keywords and the starts of a traceback and a child-failure report. A line with
    none of them (and no ANSI code, which the pipeline strips first) is a no-op for an idle scanner, so a
    byte-level search for these lets the pipeline skip every other line without decoding it."""
    sigs, cf = _load()
    return list(dict.fromkeys([*(k for s in sigs for k in s.keywords), TB_START, EXC_HEADS, cf.start]))


def _value(text: str) -> Any:
    m = SIZE.match(text.strip())
    if m:
        try:
            return round(float(m.group(1)) * SIZE_UNITS[m.group(2)], 6)
        except ValueError:
            return text
    try:
        return float(text)
    except ValueError:
        return text


def _fields(sig: Signature, line: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, pats in sig.fields:
        for p in pats:
            m = p.search(line)
            if m:
                out[name] = m.group(1) if name in TEXT_FIELDS else _value(m.group(1))
                break
    for key in [k for k in out if k.endswith("_bytes")]:
        v = out.pop(key)
        if isinstance(v, float):
            out[key[:-len("_bytes")] + "_gib"] = round(v / 2**30, 6)
    for key in ("gpu", "rank", "exitcode", "pid"):  # counts, not measures
        if isinstance(out.get(key), float) and out[key].is_integer():
            out[key] = int(out[key])
    return out


def _drop_bars(line: str) -> str:
    """The carriage-return segments of a line that are not bare progress-bar redraws."""
    keep = []
    for seg in line.split("\r"):
        tail = seg.rstrip()
        if not tail or (tail[-1] == "]" and "%|" in seg):
            continue
        keep.append(seg)
    return "\r".join(keep)


class _Traceback:
    """One traceback being collected, bounded in size.

    Chained sections are kept apart so the root can be named: after "During handling of the above
    exception" or "The above exception was the direct cause", the earlier exception is the cause; a
    traceback printed inside an exception's message (Ray, multiprocessing) is deeper than the one
    that quotes it.
    """

    def __init__(self, first: str, lineno: int, rank: int | None = None, prefix: str = "") -> None:
        self.lineno = lineno
        self.rank = rank
        self.prefix = _prefix_shape(prefix)  # a logger's prefix on every line of it, stripped before reading
        self.warning = self.prefix is not None and WARNING_PREFIX.search(prefix) is not None
        self.ignored = False  # an exception Python ignored and went on from (UNRAISABLE)
        self.thread: str | None = None  # the thread (not the main one) it ended (THREAD_EXC)
        self.head: list[str] = [first]
        self.tail: deque[str] = deque(maxlen=TB_TAIL)
        self.count = 1
        self.frames = 0
        self.exc_line: str | None = None
        self.blank_run = 0
        self.sections: list[str] = []  # exception lines of the sections before the last
        self.root = 0  # index in sections + [exc_line] of the root cause
        self.chained = False  # a chain phrase was seen since the last exception line
        self.signatures: list[str] = []  # known errors found on its lines: they explain it
        self.continued = False  # the last exception line took the line after it as the rest of its message
        self.strays = 0  # unindented lines inside the frames that were no exception line (other output)
        self.stray_chars = 0  # characters of other output between the header and the first frame

    def add(self, line: str) -> None:
        self.count += 1
        if len(line) > TB_MAX_LINE_CHARS:
            line = line[:TB_MAX_LINE_CHARS] + " ..."
        if len(self.head) < TB_HEAD:
            self.head.append(line)
        else:
            self.tail.append(line)

    def next_section(self, chained: bool) -> None:
        """The exception line just read is not the last: a chained or quoted traceback follows."""
        assert self.exc_line is not None
        if len(self.sections) < TB_MAX_SECTIONS:
            self.sections.append(self.exc_line[:TB_MAX_LINE_CHARS])
        self.exc_line = None
        self.blank_run = 0
        self.chained = chained

    def section_starts(self) -> None:
        """A new section's frames begin: a quoted (not chained) one is deeper than the root so far."""
        if self.sections and not self.chained:
            self.root = len(self.sections)
        self.chained = False

    def event(self, source: str) -> Event:
        lines = list(self.head)
        cut = self.count - len(self.head) - len(self.tail)
        if cut > 0:
            lines.append(f"... {cut} lines left out ...")
        lines.extend(self.tail)
        exc, msg = _split_exc(self.exc_line)
        chain = self.sections + ([self.exc_line.strip()] if self.exc_line is not None else [])
        fields: dict[str, Any] = {"exception": exc, "message": msg[:TB_MAX_LINE_CHARS], "frames": self.frames,
                                  "complete": self.exc_line is not None}
        if len(chain) > 1 and self.root < len(chain) - 1:
            root_exc, root_msg = _split_exc(chain[self.root])
            fields["root_exception"] = root_exc
            fields["root_message"] = root_msg[:TB_MAX_LINE_CHARS]
        if self.signatures:
            fields["signatures"] = list(dict.fromkeys(self.signatures))
        if self.rank is not None:
            fields["rank"] = self.rank
        if self.warning:
            fields["logged_as"] = "warning"
        if self.ignored:
            fields["ignored"] = True
        if self.thread is not None:
            fields["thread"] = self.thread
        return Event(kind=EventKind.TRACEBACK, source=source, line=self.lineno, text="\n".join(lines),
                     fields=fields)


def _prefix_shape(prefix: str) -> re.Pattern[str] | None:
    """A pattern for the logger's prefix written before a traceback's header, with its numbers (time,
    thread, source line) free, so that it matches the same prefix on the traceback's other lines.
    None when there is no such prefix (a rank prefix is handled apart, glued output is no prefix)."""
    text = RANK_PREFIX.sub("", prefix, count=1).rstrip()
    if not text or len(text) > LOG_PREFIX_MAX or not any(c.isalpha() for c in text):
        return None
    parts = [re.escape(p) if not p.isdigit() else r"\d+" for p in re.split(r"(\d+)", text) if p]
    return re.compile("".join(parts) + r" ?")


def _split_exc(line: str | None) -> tuple[str, str]:
    """('OutOfMemoryError', 'CUDA out of memory ...') from an exception line; ('', line) when it is not one."""
    if line is None:
        return "", ""
    m = EXC_LINE.match(line.strip())
    if not m:
        return "", line.strip()
    exc = m.group(1).rsplit(".", 1)[-1]
    if m.group(2):
        exc = f"{exc}({m.group(2).rsplit('.', 1)[-1]})"  # Ray: RayTaskError(AssertionError)
    return exc, (m.group(3) or "").strip()


def _rank_of(line: str) -> int | None:
    """The rank a launcher's prefix names (`[rank3]:`, `[1,3]<stderr>:`), else None."""
    if line[:1] != "[":
        return None
    m = RANK_KEY.match(line)
    if not m:
        return None
    return int(m.group(1) or m.group(2))


class SignatureScanner:
    """Per-source scanner: ERROR events for known messages, TRACEBACK events for whole tracebacks.

    Tracebacks are collected per rank when lines carry a rank prefix, so copies printed by several
    ranks at once, with their lines interleaved, stay whole and apart.
    """

    def __init__(self, source: str = "") -> None:
        self.source = source
        self._sigs, self._cf = _load()
        kws: dict[str, list[Signature]] = {}
        for s in self._sigs:
            for k in s.keywords:
                kws.setdefault(k, []).append(s)
        self._keywords = tuple(kws.items())
        self._tbs: dict[int | None, _Traceback] = {}
        self._child: dict[str, Any] | None = None
        self._ignored: dict[int | None, int] = {}  # per rank, the line of the last `Exception ignored in`
        self._thread: dict[int | None, tuple[int, str]] = {}  # per rank, the last `Exception in thread X:`

    # -- public -------------------------------------------------------------------------------
    @property
    def busy(self) -> bool:
        """True while a traceback or a child-failure report is open: every line then matters, keyword or
        not (frames, the exception line, the report's entries)."""
        return bool(self._tbs) or self._child is not None

    def feed(self, line: str, lineno: int) -> list[Event]:
        out: list[Event] = []
        try:
            self._feed(line, lineno, out)
        except Exception:  # a scanner bug must cost one line, never the watcher
            self._tbs.clear()
            self._child = None
        return out

    def finish(self) -> list[Event]:
        out: list[Event] = []
        for tb in sorted(self._tbs.values(), key=lambda t: t.lineno):
            out.append(tb.event(self.source))
        self._tbs.clear()
        if self._child is not None:
            out.append(self._child_event())
            self._child = None
        return out

    # -- internals ------------------------------------------------------------------------------
    def _feed(self, line: str, lineno: int, out: list[Event]) -> None:
        seg = line
        if "\r" in line:
            seg = line.rstrip("\r")
            idx = seg.find(TB_START)
            seg = seg[idx:] if idx >= 0 else seg[seg.rfind("\r") + 1:]
        if "%|" in line:
            line = _drop_bars(line)  # tqdm redraws are long and never errors: scan only the rest
        rank = _rank_of(seg)
        if UNRAISABLE in seg:
            self._ignored[rank] = lineno
        if THREAD_WORD in seg and (thread := THREAD_EXC.search(seg)) is not None:
            self._thread[rank] = (lineno, thread.group("name").strip())
        if self._child is not None and self._child_line(seg, out):
            return
        tb = self._tbs.get(rank)
        if tb is None and rank is not None and TB_START not in seg:
            bare = self._tbs.get(None)
            if bare is not None and bare.count == 1:  # a header cut from its rank prefix by a tqdm redraw
                tb = self._tbs[rank] = self._tbs.pop(None)
                tb.rank = rank
        if tb is not None:
            self._traceback_line(tb, seg, lineno, out)
        elif TB_START in seg:
            self._open(seg, lineno, rank)
        if self._child is None and self._cf.start in seg and CHILD_START.search(seg):
            self._ranks_done(rank, out)
            self._child = {"lineno": lineno, "text": [seg.strip()], "root": False, "n": 0, "entries": []}
            tb = self._tbs.get(rank)
            if tb is not None:
                tb.signatures.append(self._cf.default)  # the launcher's own stack: the report below says more
        else:
            self._signatures(line, lineno, out, rank)

    def _signatures(self, line: str, lineno: int, out: list[Event], rank: int | None) -> None:
        tried: set[str] = set()
        for kw, sigs in self._keywords:
            if kw not in line:
                continue
            for sig in sigs:
                if sig.id in tried:
                    continue
                tried.add(sig.id)
                for p in sig.patterns:
                    m = p.search(line)
                    if m:
                        text, at = line, m.start()
                        if "\r" in line:
                            cut = line.rfind("\r", 0, m.start()) + 1
                            text, at = line[cut:], at - cut
                            end = text.find("\r")
                            text = text if end < 0 else text[:end]
                        text = _unglued(text, at).strip()
                        fields = _fields(sig, line)
                        if rank is not None:
                            fields.setdefault("rank", rank)
                        tb = self._tbs.get(rank)
                        if tb is not None:
                            tb.signatures.append(sig.id)
                            fields["traceback_line"] = tb.lineno
                            if tb.warning:
                                fields["logged_as"] = "warning"
                        out.append(Event(kind=EventKind.ERROR, source=self.source, line=lineno,
                                         signature=sig.id, text=text[:EVENT_TEXT_CHARS], fields=fields))
                        break

    def _open(self, line: str, lineno: int, rank: int | None) -> None:
        at = line.find(TB_START)
        tb = self._tbs[rank] = _Traceback(line[at:], lineno, rank, prefix=line[:at])
        if self._ignored.get(rank) == lineno - 1:  # printed under `Exception ignored in ...`: Python went on
            tb.warning = tb.ignored = True
        thread_line, name = self._thread.get(rank, (0, ""))
        if thread_line == lineno - 1:  # printed under `Exception in thread X:`: X died, the program did not
            tb.thread = name

    def _traceback_line(self, tb: _Traceback, line: str, lineno: int, out: list[Event]) -> None:
        body = RANK_PREFIX.sub("", line, count=1) if line[:1] in "[ 0123456789" else line
        if tb.prefix is not None:
            m = tb.prefix.match(body)
            if m:
                body = body[m.end():]
        stripped = body.strip()
        if tb.exc_line is not None:
            # after the final exception line: a chained section continues it, anything else ends it
            if not stripped and tb.blank_run < 2:
                tb.blank_run += 1
                tb.add(body)
                return
            quoted = stripped.endswith(TB_START) and not stripped.startswith(TB_START)
            if stripped.startswith(TB_CHAIN) or stripped.startswith(TB_START) or quoted:
                # `Original Traceback (most recent call last):` (torch re-raising a worker's or replica's
                # error) quotes the deeper traceback that caused the one just read, as Ray's do
                tb.next_section(chained=stripped.startswith(TB_CHAIN))
                if stripped.startswith(TB_START) or quoted:
                    tb.section_starts()
                tb.add(body)
                return
            if tb.exc_line.endswith(":") and ": " in tb.exc_line and not tb.blank_run and not tb.continued:
                tb.exc_line = f"{tb.exc_line} {stripped}"  # the message goes on: "... the following error:"
                tb.continued = True
                tb.add(body)
                return
            if body[:1] in " \t" and stripped.startswith('File "') and not tb.blank_run:
                tb.next_section(chained=False)  # Ray: `RayTaskError(X): header`, then X's own frames
                tb.section_starts()
                tb.frames += 1
                tb.add(body)
                return
            self._end_traceback(tb, out)
            if TB_START in line:
                self._open(line, lineno, tb.rank)
            return
        if not stripped:
            tb.add(body)
            return
        if body[:1] in " \t" or stripped.startswith(TB_CHAIN) or stripped.startswith(TB_START):
            if stripped.startswith("File "):
                tb.frames += 1
            elif stripped.startswith(TB_START):
                tb.section_starts()
            tb.add(body)
            return
        if EXC_LINE.match(stripped) is None:
            if not tb.frames and tb.stray_chars + len(stripped) <= HEADER_STRAY_CHARS:
                tb.stray_chars += len(stripped)  # another stream's block between the header and its frames
                return
            if tb.strays < MAX_STRAYS:
                tb.strays += 1  # another process's output between two frames ("Loading extension module ...")
                return
        tb.add(body)
        tb.exc_line = stripped
        tb.blank_run = 0
        tb.continued = False

    def _ranks_done(self, rank: int | None, out: list[Event]) -> None:
        """The launcher reports its failed children: their ranks printed all they will. Their finished
        tracebacks (exception line read) are told now, before the report, so that the report is the echo
        of the ranks' error and not the other way round; otherwise they would wait for the end of the log."""
        for key, tb in sorted(self._tbs.items(), key=lambda kv: kv[1].lineno):
            if key is not None and key != rank and tb.exc_line is not None:
                self._end_traceback(tb, out)

    def _end_traceback(self, tb: _Traceback, out: list[Event]) -> None:
        # trailing blank lines are not part of it
        while tb.tail and not tb.tail[-1].strip():
            tb.tail.pop()
            tb.count -= 1
        while len(tb.head) > 1 and not tb.tail and not tb.head[-1].strip():
            tb.head.pop()
            tb.count -= 1
        out.append(tb.event(self.source))
        self._tbs.pop(tb.rank, None)

    def _child_line(self, line: str, out: list[Event]) -> bool:
        """Consumes a line of a ChildFailedError report; False when the report has ended."""
        c = self._child
        assert c is not None
        c["n"] += 1
        body = RANK_PREFIX.sub("", line.strip(), count=1)
        if c["n"] > self._cf.max_lines:
            out.append(self._child_event())
            self._child = None
            return False
        if len(c["text"]) < CHILD_TEXT_LINES:
            c["text"].append(body)
        if body.startswith("====") and c["entries"]:
            out.append(self._child_event())
            self._child = None
            return True
        if body.startswith("Root Cause"):
            c["root"] = True
        elif ENTRY_START.match(body):
            c["entries"].append({"root": c["root"]})
        key, sep, value = body.partition(":")
        key = key.strip()
        if sep and key in ("exitcode", "rank"):
            if not c["entries"] or key in c["entries"][-1]:
                c["entries"].append({"root": c["root"]})  # an older report without `[N]:` headers
            m = re.match(r"\s*(-?\d+)", value)
            if m:
                c["entries"][-1][key] = int(m.group(1))
        return True

    def _child_event(self) -> Event:
        c = self._child or {}
        entries = [e for e in c.get("entries", []) if "exitcode" in e or "rank" in e]
        roots = [e for e in entries if e["root"]] or entries[:1]
        root = roots[0] if roots else {}
        code = root.get("exitcode")
        sig = self._cf.exit_codes.get(code, self._cf.default) if code is not None else self._cf.default
        fields: dict[str, Any] = {}
        if code is not None:
            fields["exitcode"] = code
        if "rank" in root:
            fields["rank"] = root["rank"]
        others = [e for e in entries if e is not root]
        if others:
            fields["other_failures"] = ", ".join(
                f"rank {e.get('rank', '?')} exit {e.get('exitcode', '?')}" for e in others[:16])
        text = "\n".join(c.get("text", []))[:EVENT_TEXT_CHARS]
        return Event(kind=EventKind.ERROR, source=self.source, line=c.get("lineno", 0), signature=sig,
                     text=text, fields=fields)


def _unglued(text: str, at: int) -> str:
    """A message printed over a progress bar's last redraw with no line break (`... 3:40<38:10WARNING CUDA ...`)
    told from its level word on: the bar before it is another line's."""
    lead = text[:at]
    k = max(lead.rfind("WARNING"), lead.rfind("ERROR"))
    return text[k:] if k > 0 and "%" in lead[:k] else text
