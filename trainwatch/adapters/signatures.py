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

import yaml

from trainwatch.model import Event, EventKind

TB_START = "Traceback (most recent call last):"
TB_CHAIN = ("During handling of the above exception", "The above exception was the direct cause")
TB_MAX_LINES = 400  # kept: the first TB_HEAD lines and the last TB_TAIL
TB_HEAD = 60
TB_TAIL = 200
TB_MAX_LINE_CHARS = 2000
EVENT_TEXT_CHARS = 4000
RANK_PREFIX = re.compile(r"^(?:\[(?:rank|Rank)\s*\d+\]:\s?|\[\d+,\d+\]<std(?:out|err)>:|\s*\d+: )")
CHILD_START = re.compile(r"ChildFailedError:\s*$")
EXC_LINE = re.compile(r"^([A-Za-z_][\w.]*)(?::\s?(.*))?$")
SIZE = re.compile(r"^([\d.]+)\s*([KMGT]?)i?B$")
SIZE_UNITS = {"": 1 / 2**30, "K": 1 / 2**20, "M": 1 / 2**10, "G": 1.0, "T": 2**10}


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
    data = yaml.safe_load(text)
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
                out[name] = _value(m.group(1))
                break
    extra = out.pop("reserved_unallocated_gib", None)
    if isinstance(extra, float) and isinstance(out.get("allocated_gib"), float) and "reserved_gib" not in out:
        out["reserved_gib"] = round(out["allocated_gib"] + extra, 6)  # new wording splits reserved in two
    if "gpu" in out and isinstance(out["gpu"], float):
        out["gpu"] = int(out["gpu"])
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
    """One traceback being collected, bounded in size."""

    def __init__(self, first: str, lineno: int) -> None:
        self.lineno = lineno
        self.head: list[str] = [first]
        self.tail: deque[str] = deque(maxlen=TB_TAIL)
        self.count = 1
        self.frames = 0
        self.exc_line: str | None = None
        self.blank_run = 0

    def add(self, line: str) -> None:
        self.count += 1
        if len(line) > TB_MAX_LINE_CHARS:
            line = line[:TB_MAX_LINE_CHARS] + " ..."
        if len(self.head) < TB_HEAD:
            self.head.append(line)
        else:
            self.tail.append(line)

    def event(self, source: str) -> Event:
        lines = list(self.head)
        cut = self.count - len(self.head) - len(self.tail)
        if cut > 0:
            lines.append(f"... {cut} lines left out ...")
        lines.extend(self.tail)
        exc, msg = "", ""
        if self.exc_line is not None:
            m = EXC_LINE.match(self.exc_line.strip())
            if m:
                exc = m.group(1).rsplit(".", 1)[-1]
                msg = (m.group(2) or "").strip()
            else:
                msg = self.exc_line.strip()
        return Event(kind=EventKind.TRACEBACK, source=source, line=self.lineno, text="\n".join(lines),
                     fields={"exception": exc, "message": msg[:TB_MAX_LINE_CHARS], "frames": self.frames,
                             "complete": self.exc_line is not None})


class SignatureScanner:
    """Per-source scanner: ERROR events for known messages, TRACEBACK events for whole tracebacks."""

    def __init__(self, source: str = "") -> None:
        self.source = source
        self._sigs, self._cf = _load()
        kws: dict[str, list[Signature]] = {}
        for s in self._sigs:
            for k in s.keywords:
                kws.setdefault(k, []).append(s)
        self._keywords = tuple(kws.items())
        self._tb: _Traceback | None = None
        self._child: dict[str, Any] | None = None

    # -- public -------------------------------------------------------------------------------
    def feed(self, line: str, lineno: int) -> list[Event]:
        out: list[Event] = []
        try:
            self._feed(line, lineno, out)
        except Exception:  # a scanner bug must cost one line, never the watcher
            self._tb = None
            self._child = None
        return out

    def finish(self) -> list[Event]:
        out: list[Event] = []
        if self._tb is not None:
            out.append(self._tb.event(self.source))
            self._tb = None
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
        if not (self._child is not None and self._child_line(seg, out)):
            if self._tb is not None:
                self._traceback_line(seg, lineno, out)
            elif TB_START in seg:
                self._tb = _Traceback(seg[seg.find(TB_START):], lineno)
            if self._child is None and self._cf.start in seg and CHILD_START.search(seg):
                self._child = {"lineno": lineno, "text": [seg.strip()], "root": False, "n": 0}
            else:
                self._signatures(line, lineno, out)

    def _signatures(self, line: str, lineno: int, out: list[Event]) -> None:
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
                        text = line
                        if "\r" in line:
                            text = line[line.rfind("\r", 0, m.start()) + 1:]
                            end = text.find("\r")
                            text = text if end < 0 else text[:end]
                        text = text.strip()
                        out.append(Event(kind=EventKind.ERROR, source=self.source, line=lineno,
                                         signature=sig.id, text=text[:EVENT_TEXT_CHARS],
                                         fields=_fields(sig, line)))
                        break

    def _traceback_line(self, line: str, lineno: int, out: list[Event]) -> None:
        tb = self._tb
        assert tb is not None
        body = RANK_PREFIX.sub("", line, count=1) if line[:1] in "[ 0123456789" else line
        stripped = body.strip()
        if tb.exc_line is not None:
            # after the final exception line: a chained section continues it, anything else ends it
            if not stripped and tb.blank_run < 2:
                tb.blank_run += 1
                tb.add(body)
                return
            if stripped.startswith(TB_CHAIN) or stripped.startswith(TB_START):
                tb.exc_line = None
                tb.blank_run = 0
                tb.add(body)
                return
            self._end_traceback(out)
            if TB_START in line:
                self._tb = _Traceback(line[line.find(TB_START):], lineno)
            return
        if not stripped:
            tb.add(body)
            return
        if body[:1] in " \t" or stripped.startswith(TB_CHAIN) or stripped.startswith(TB_START):
            if stripped.startswith("File "):
                tb.frames += 1
            tb.add(body)
            return
        tb.add(body)
        tb.exc_line = stripped
        tb.blank_run = 0

    def _end_traceback(self, out: list[Event]) -> None:
        if self._tb is not None:
            tb = self._tb
            # trailing blank lines are not part of it
            while tb.tail and not tb.tail[-1].strip():
                tb.tail.pop()
                tb.count -= 1
            while len(tb.head) > 1 and not tb.tail and not tb.head[-1].strip():
                tb.head.pop()
                tb.count -= 1
            out.append(tb.event(self.source))
            self._tb = None

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
        c["text"].append(body)
        if body.startswith("====") and "exitcode" in c:
            out.append(self._child_event())
            self._child = None
            return True
        if body.startswith("Root Cause"):
            c["root"] = True
            c.pop("exitcode", None)
            c.pop("rank", None)
        key, sep, value = body.partition(":")
        if sep:
            key = key.strip()
            if key == "exitcode" and ("exitcode" not in c or c["root"]):
                m = re.match(r"\s*(-?\d+)", value)
                if m:
                    c["exitcode"] = int(m.group(1))
            elif key == "rank" and ("rank" not in c or c["root"]):
                m = re.match(r"\s*(\d+)", value)
                if m:
                    c["rank"] = int(m.group(1))
        return True

    def _child_event(self) -> Event:
        c = self._child or {}
        code = c.get("exitcode")
        sig = self._cf.exit_codes.get(code, self._cf.default) if code is not None else self._cf.default
        fields: dict[str, Any] = {}
        if code is not None:
            fields["exitcode"] = code
        if "rank" in c:
            fields["rank"] = c["rank"]
        text = "\n".join(c.get("text", []))[:EVENT_TEXT_CHARS]
        return Event(kind=EventKind.ERROR, source=self.source, line=c.get("lineno", 0), signature=sig,
                     text=text, fields=fields)
