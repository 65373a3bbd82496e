"""The pure-Python scanner: the oracle the native `trainwatch._scan` is tested against, and its fallback.

It implements the scanner contract (lines, `\\r` redraws, keyword hits, dicts with nested ones flattened,
`key: value` tokens, progress bars) with `re` on bytes, `bytes.find` and numpy, so that no Python loop
runs per byte: the regexes walk the whole chunk in C and Python only touches what they found (objects
that are not flat are read token by token). It never decodes log bytes, so invalid UTF-8 cannot make
it raise.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from trainwatch.scan import bars, census, find
from trainwatch.scan.chunk import ARRAY_FIELDS, MAX_LINE, Chunk

MAX_LAYOUTS = 4096
"""Layouts remembered (the native scanner's MAX_LAYOUTS): past them, a sequence of keys not met before
gets a new id each time it comes, so memory stays bounded however the keys of a log's lines are ordered."""
MAX_KEY_BYTES = 64  # longest `key: value` key
_WORD_BYTES = rb"A-Za-z0-9_./\-"

# A number as logs print it: thousands separators in the integer part, nan/inf words, an optional `%`.
_NUM = (rb"[+-]?(?:(?:\d+(?:,\d{3}(?!\d))*(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?"
        rb"|(?i:nan|inf(?:inity)?)(?![A-Za-z0-9_]))%?")
_WS = rb"[ \t]*"
_KEY = rb"(?:'[^'\\\n]{0,200}'|\"[^\"\\\n]{0,200}\")"
_STR = rb"(?:'[^'\\\n]*(?:\\[^\n][^'\\\n]*)*'|\"[^\"\\\n]*(?:\\[^\n][^\"\\\n]*)*\")"
_LITERALS = (b"true", b"false", b"True", b"False", b"null", b"None")
_VALUE = rb"(?:" + _NUM + rb"|" + _STR + rb"|" + b"|".join(_LITERALS) + rb")"
_ENTRY = _KEY + _WS + rb":" + _WS + _VALUE

NUMBER = re.compile(_NUM)
# A flat dict. The entries are matched inside a lookahead and consumed by a backreference, which makes
# them atomic: when no `}` follows, `re` gives up on this `{` at once instead of backtracking through
# every entry (a nested value made JSON lines several times slower); `_parse_nested` then reads the
# object that the regex could not.
DICT = re.compile(rb"\{(?=(" + _WS + rb"(?:" + _ENTRY + _WS + rb"(?:," + _WS + _ENTRY + _WS + rb")*)?))\1\}")
# An object whose values are flat ones or flat objects (one level of nesting, the usual JSON-lines record).
_FLAT_OBJ = rb"\{" + _WS + rb"(?:" + _ENTRY + _WS + rb"(?:," + _WS + _ENTRY + _WS + rb")*)?\}"
_ENTRY1 = _KEY + _WS + rb":" + _WS + rb"(?:" + _VALUE + rb"|" + _FLAT_OBJ + rb")"
_NEST1 = rb"\{(?=(" + _WS + rb"(?:" + _ENTRY1 + _WS + rb"(?:," + _WS + _ENTRY1 + _WS + rb")*)?))\2\}"
# At a `{`: a whole flat object (group 1 set), one with flat objects in it (group 2 set), else just the
# brace, where the nested parser takes over.
OBJECT_START = re.compile(DICT.pattern + rb"|" + _NEST1 + rb"|\{")
ENTRY1 = re.compile(rb"(?:'([^'\\\n]{0,200})'|\"([^\"\\\n]{0,200})\")" + _WS + rb":" + _WS
                    + rb"(?:(" + _VALUE + rb")|(" + _FLAT_OBJ + rb"))")
MAX_LEVEL = 7  # deepest nested object whose entries are reported (the outer one is level 0)
KEY_AT = re.compile(rb"'([^'\\\n]{0,200})'|\"([^\"\\\n]{0,200})\"")
STRING_AT = re.compile(rb"'[^'\\]*(?:\\.[^'\\]*)*'|\"[^\"\\]*(?:\\.[^\"\\]*)*\"", re.S)
LITERAL_AT = re.compile(b"|".join(_LITERALS))
LIST_TOKEN = re.compile(rb"[\[\]{}'\"]")
_SPACES = re.compile(_WS)
# Plain JSON of numbers (the `dict_json` flag): `"`-quoted printable-ASCII keys, JSON numbers (no bare -0).
_JSON_KEY = rb'"[\x20\x21\x23-\x5b\x5d-\x7e]{0,200}"'
_JSON_NUM = rb"(?!-0(?![.eE0-9]))-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?"
_JSON_ENTRY = _JSON_KEY + _WS + rb":" + _WS + _JSON_NUM
JSON_FLAT = re.compile(rb"\{" + _WS + rb"(?:" + _JSON_ENTRY + _WS + rb"(?:," + _WS + _JSON_ENTRY + _WS + rb")*)?\}")
_JSON_ENTRY1 = _JSON_KEY + _WS + rb":" + _WS + rb"(?:" + _JSON_NUM + rb"|" + JSON_FLAT.pattern + rb")"
JSON_NEST1 = re.compile(rb"\{" + _WS + rb"(?:" + _JSON_ENTRY1 + _WS + rb"(?:," + _WS + _JSON_ENTRY1 + _WS + rb")*)?\}")
JSON_RUN = re.compile(_JSON_ENTRY + _WS + rb"(?:," + _WS + _JSON_ENTRY + _WS + rb")*")
JSON_KEY = re.compile(_JSON_KEY)
JSON_NUMBER = re.compile(_JSON_NUM)
# Entries whose values are not objects or lists, with the commas between them and the blanks after.
FLAT_RUN = re.compile(_ENTRY + _WS + rb"(?:," + _WS + _ENTRY + _WS + rb")*")
ENTRY = re.compile(rb"(?:'([^'\\\n]{0,200})'|\"([^\"\\\n]{0,200})\")" + _WS + rb":" + _WS + rb"(" + _VALUE + rb")")
# A key: up to 4 words joined by single spaces, each word a whole run of word bytes starting with a
# letter or `_` (the lookbehind keeps `ms/step` of `20ms/step`, or `s` of a value `1.5s`, from being one).
_WORD = rb"[A-Za-z_][" + _WORD_BYTES + rb"]*"
KV = re.compile(rb"(?<![" + _WORD_BYTES + rb"])(" + _WORD + rb"(?: " + _WORD + rb"){0,3})"
                + _WS + rb"[:=]" + _WS + rb"(" + _NUM + rb")")
BAR = re.compile(rb"\| *(\d{1,18})/(\d{1,18})(?!\d)")
LAST_BAR = re.compile(rb".*" + BAR.pattern, re.S)  # greedy: the line's last bar


def to_float(token: bytes) -> float:
    """The value of a token matched by NUMBER: float() reads nan/inf words; commas and `%` go first."""
    if b"," in token or token.endswith(b"%"):
        return float(token.rstrip(b"%").replace(b",", b""))
    return float(token)


def value_of(raw: bytes) -> float | None:
    """A dict value's number: bare, or a quoted string that is wholly a number; None for anything else."""
    if raw[:1] in (b"'", b'"'):
        inner = raw[1:-1].strip(b" \t")
        return to_float(inner) if NUMBER.fullmatch(inner) else None
    if raw in _LITERALS:
        return None
    return to_float(raw)


@dataclass
class _Found:
    """What the scan of one chunk found so far, as Python lists that become arrays once, at the end."""

    line_start: list[int] = field(default_factory=list)
    line_end: list[int] = field(default_factory=list)
    visible_start: list[int] = field(default_factory=list)
    kw_line: list[int] = field(default_factory=list)
    kw_id: list[int] = field(default_factory=list)
    dict_line: list[int] = field(default_factory=list)
    dict_start: list[int] = field(default_factory=list)
    dict_end: list[int] = field(default_factory=list)
    dict_json: list[bool] = field(default_factory=list)
    ent_dict: list[int] = field(default_factory=list)
    ent_name: list[bytes] = field(default_factory=list)  # raw key bytes; ids are given after the scan
    ent_line: list[int] = field(default_factory=list)
    ent_value: list[float] = field(default_factory=list)
    kv_line: list[int] = field(default_factory=list)
    kv_name: list[bytes] = field(default_factory=list)
    kv_value: list[float] = field(default_factory=list)
    kv_pos: list[int] = field(default_factory=list)
    prog_line: list[int] = field(default_factory=list)
    prog_n: list[int] = field(default_factory=list)
    prog_total: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class _Run:
    """Lines lying one after another in `view`, none longer than MAX_LINE (or already cut to it).

    Offsets are relative to `view`; `view_abs` is the absolute offset of view[0]. `ends` are the true line
    ends (they may point past a cut line's view); `scan_ends` end the part that is scanned. `data` is what
    the run adds to the chunk's `data`: its lines as fed, terminators included, a cut line's first
    MAX_LINE bytes only (see Chunk).
    """

    data: bytes
    view: bytes
    view_abs: int
    starts: np.ndarray
    ends: np.ndarray
    scan_ends: np.ndarray


class _Keywords:
    """Finds which keywords each line holds in a few numpy passes, however many keywords there are.

    Each keyword of two bytes or more is looked for only where its rarest byte pair (counted on the
    start of the run at hand) occurs; those places are then compared with the whole keyword in numpy.
    A `re` alternation, by contrast, tries every keyword at every byte: several times slower.
    """

    SAMPLE = 1 << 18  # bytes whose byte pairs are counted to pick each keyword's rarest pair
    SMALL = 1 << 14  # up to this many bytes (a live feed), plain `in` and `find` cost less than numpy

    def __init__(self, words: list[bytes]) -> None:
        """Keep the searchable keywords with their ids: an empty one, or one with `\\n`, never matches."""
        usable = [(kid, w) for kid, w in enumerate(words) if w and b"\n" not in w]
        self._words = usable
        self._count = len(words)
        self._singles = [(kid, w[0]) for kid, w in usable if len(w) == 1]
        self._longer = [(kid, np.frombuffer(w, dtype=np.uint8), _pairs(np.frombuffer(w, dtype=np.uint8)))
                        for kid, w in usable if len(w) > 1]

    def hits(self, run: _Run) -> tuple[np.ndarray, np.ndarray]:
        """(line index in the run, keyword id) of every line holding a keyword in its scanned part."""
        lo, hi = int(run.starts[0]), int(run.scan_ends[-1])
        found: list[tuple[np.ndarray, int, int]] = []  # (start positions in text, keyword id, length)
        if hi - lo <= self.SMALL:
            region = run.view[lo:hi]
            found = [(_positions(region, w), kid, len(w)) for kid, w in self._words if w in region]
        else:
            text = np.frombuffer(run.view, dtype=np.uint8)[lo:hi]
            found = [(np.flatnonzero(text == byte), kid, 1) for kid, byte in self._singles]
            if self._longer:
                found += self._longer_hits(text)
        if not found:
            return np.empty(0, np.int64), np.empty(0, np.int64)
        codes = []
        for pos, kid, length in found:
            pos = pos + lo
            lines = np.searchsorted(run.starts, pos, side="right") - 1
            inside = pos + length <= run.scan_ends[lines]
            codes.append(lines[inside] * self._count + kid)
        unique = np.unique(np.concatenate(codes))
        return unique // self._count, unique % self._count

    def _longer_hits(self, text: np.ndarray) -> list[tuple[np.ndarray, int, int]]:
        """Start positions of each keyword of two bytes or more, found through its rarest byte pair."""
        sample = text[: self.SAMPLE + 1]
        pair_counts = np.bincount(_pairs(sample), minlength=1 << 16).astype(np.int64)
        byte_counts = np.bincount(sample, minlength=256).astype(np.int64)
        # The rarest pair; among equally rare ones, the one whose first byte is rarest (the byte table
        # below lets through every place holding a chosen pair's first byte).
        chosen = [(kid, word, int(np.argmin(pair_counts[wp] * (len(sample) + 1) + byte_counts[word[:-1]])))
                  for kid, word, wp in self._longer]
        wanted = np.zeros(1 << 16, dtype=bool)
        first_bytes = np.zeros(256, dtype=bool)
        for _, word, k in chosen:
            wanted[int(word[k]) | int(word[k + 1]) << 8] = True
            first_bytes[word[k]] = True
        where = np.flatnonzero(first_bytes[text[:-1]])  # a byte table first: cheaper than every pair
        pairs = text[where].astype(np.uint16) | (text[where + 1].astype(np.uint16) << 8)
        hit = wanted[pairs]
        where, pairs = where[hit], pairs[hit]
        if not len(where):
            return []
        order = np.argsort(pairs, kind="stable")
        where, pairs = where[order], pairs[order]
        out = []
        for kid, word, k in chosen:
            pair = int(word[k]) | int(word[k + 1]) << 8
            a, b = np.searchsorted(pairs, [pair, pair + 1])
            pos = where[a:b] - k
            pos = pos[(pos >= 0) & (pos + len(word) <= len(text))]
            for j, byte in enumerate(word.tolist()):
                if not len(pos):
                    break
                pos = pos[text[pos + j] == byte]
            out.append((pos, kid, len(word)))
        return out


def _positions(text: bytes, word: bytes) -> np.ndarray:
    """Every place `word` starts in `text`, overlapping ones included."""
    out = []
    pos = text.find(word)
    while pos >= 0:
        out.append(pos)
        pos = text.find(word, pos + 1)
    return np.array(out, dtype=np.int64)


def _pairs(data: np.ndarray) -> np.ndarray:
    """Each byte with the next one, as one uint16 (first byte low)."""
    return data[:-1].astype(np.uint16) | (data[1:].astype(np.uint16) << 8)


class Scanner:
    """Turns log bytes, fed in pieces of any size, into chunks of complete lines and what is in them."""

    plain_bars = staticmethod(bars.plain_bars)
    span_census = staticmethod(census.span_census)
    positions = staticmethod(find.positions)

    def __init__(self, keywords: Iterable[str] = ()) -> None:
        """Keep the keywords (searched as UTF-8 bytes) and start with an empty key table and no partial line."""
        if isinstance(keywords, (str, bytes)):
            raise TypeError("keywords must be a list of str, not one string")
        words = list(keywords)
        for word in words:
            if not isinstance(word, str):
                raise TypeError(f"keywords must be str, not {type(word).__name__}")
        self._keywords = _Keywords([w.encode("utf-8") for w in words])
        self._key_ids: dict[bytes, int] = {}
        self._layouts: dict[tuple[int, ...], int] = {}  # sequences of entry key ids -> layout id
        self._next_layout = 0
        self._keys: list[str] = []
        self._pending = bytearray()  # the held start of the partial line (at most MAX_LINE bytes)
        self._pending_len = 0  # the partial line's full length, dropped bytes included
        self._last = -1  # the partial line's last byte, held or not (tells whether a `\r` precedes `\n`)
        self._offset = 0  # absolute offset of the partial line's first byte
        self._lineno = 1  # number of the next line to complete

    @property
    def keys(self) -> list[str]:
        """The key table: `ent_key` and `kv_key` index it; it only grows, so ids stay valid."""
        return list(self._keys)

    @property
    def pending(self) -> int:
        """Bytes of the partial line held (at most MAX_LINE)."""
        return len(self._pending)

    def feed(self, data: bytes) -> Chunk:
        """Scan the complete lines that `data` finishes; keep its trailing partial line for later."""
        if type(data) is not bytes:
            data = bytes(memoryview(data))  # bytearray or memoryview; an int is refused, not zero bytes
        last_nl = data.rfind(b"\n")
        if last_nl < 0:
            self._hold(data)
            return Chunk.empty(self._lineno, self._offset)
        if self._pending_len > len(self._pending):
            runs = self._runs_after_cut_line(data, last_nl)
        else:
            runs = self._runs_of(bytes(self._pending) + data[: last_nl + 1], self._offset)
        chunk = self._chunk(runs)
        self._advance(self._pending_len + last_nl + 1, len(chunk))
        self._hold(data[last_nl + 1:])
        return chunk

    def release(self) -> int:
        """The native scanner's: no buffer is kept between chunks here, so none is given back."""
        return 0

    def finish(self) -> Chunk:
        """The held partial line as a last line (it has no `\\n`, so a trailing `\\r` stays in it)."""
        if not self._pending_len:
            return Chunk.empty(self._lineno, self._offset)
        kept = bytes(self._pending)
        run = _Run(kept, kept + b"\n", self._offset, np.array([0]), np.array([self._pending_len]),
                   np.array([len(kept)]))
        chunk = self._chunk([run])
        self._advance(self._pending_len, 1)
        return chunk

    # -- lines ---------------------------------------------------------------------------------------

    def _hold(self, data: bytes) -> None:
        """Add bytes to the partial line, keeping only its first MAX_LINE bytes (the part that is scanned)."""
        if not data:
            return
        room = MAX_LINE - len(self._pending)
        if room > 0:
            self._pending += data[:room]
        self._pending_len += len(data)
        self._last = data[-1]

    def _advance(self, nbytes: int, nlines: int) -> None:
        """Move past bytes and lines that a chunk has reported, emptying the partial line."""
        self._offset += nbytes
        self._lineno += nlines
        self._pending = bytearray()
        self._pending_len = 0
        self._last = -1

    def _runs_after_cut_line(self, data: bytes, last_nl: int) -> list[_Run]:
        """Runs of a feed that completes a held line whose bytes past MAX_LINE were dropped."""
        first_nl = data.find(b"\n")
        before_nl = data[first_nl - 1] if first_nl else self._last
        terminator = b"\r\n" if before_nl == 0x0D else b"\n"
        length = self._pending_len + first_nl + 1 - len(terminator)
        kept = bytes(self._pending[:length])
        runs = [_Run(kept + terminator, kept + b"\n", self._offset, np.array([0]), np.array([length]),
                     np.array([len(kept)]))]
        rest_abs = self._offset + self._pending_len + first_nl + 1
        return runs + self._runs_of(data[first_nl + 1: last_nl + 1], rest_abs)

    @staticmethod
    def _runs_of(buf: bytes, buf_abs: int) -> list[_Run]:
        """Split `buf` (complete lines, each ending in `\\n`) into runs; each line over MAX_LINE is its own run."""
        if not buf:
            return []
        arr = np.frombuffer(buf, dtype=np.uint8)
        newlines = np.flatnonzero(arr == 0x0A)
        starts = np.empty_like(newlines)
        starts[0] = 0
        starts[1:] = newlines[:-1] + 1
        has_cr = (newlines > starts) & (arr[newlines - 1] == 0x0D)
        ends = newlines - has_cr
        cut = np.flatnonzero(ends - starts > MAX_LINE)
        if not len(cut):
            return [_Run(buf, buf, buf_abs, starts, ends, ends)]
        runs: list[_Run] = []
        first = 0
        for i in (*cut.tolist(), len(starts)):
            if i > first:  # the uncut lines before this cut one
                lo, hi = int(starts[first]), int(newlines[i - 1]) + 1
                runs.append(_Run(buf[lo:hi], buf, buf_abs, starts[first:i], ends[first:i], ends[first:i]))
            if i < len(starts):
                s, e = int(starts[i]), int(ends[i])
                kept = buf[s: s + MAX_LINE]
                runs.append(_Run(kept + buf[e: int(newlines[i]) + 1], kept + b"\n", buf_abs + s,
                                 np.array([0]), np.array([e - s]), np.array([MAX_LINE])))
            first = i + 1
        return runs

    # -- one chunk -----------------------------------------------------------------------------------

    def _chunk(self, runs: Sequence[_Run]) -> Chunk:
        """Scan every run in order and build the chunk's arrays (keys interned in the contract's order)."""
        found = _Found()
        for run in runs:
            self._scan_run(run, found)
        ent_key, kv_key = self._intern(found)
        arrays = {name: getattr(found, name) for name, _ in ARRAY_FIELDS
                  if name not in ("ent_key", "kv_key", "dict_layout")}
        arrays["ent_key"] = ent_key
        arrays["kv_key"] = kv_key
        arrays["dict_layout"] = self._layout_ids(found.ent_dict, ent_key, len(found.dict_line))
        data = runs[0].data if len(runs) == 1 else b"".join(run.data for run in runs)
        return Chunk.from_arrays(self._lineno, self._offset, data, arrays)

    def _scan_run(self, run: _Run, found: _Found) -> None:
        """Find lines, keywords, dicts, tokens and bars in one run, appending to `found` in line order."""
        first_line = len(found.line_start)
        found.line_start.extend((run.starts + run.view_abs).tolist())
        found.line_end.extend((run.ends + run.view_abs).tolist())
        visible = _visible_starts(run)
        found.visible_start.extend((visible + run.view_abs).tolist())
        self._find_keywords(run, first_line, found)
        dicts = _find_dicts(run, first_line, found)
        _find_tokens(run, visible, dicts, first_line, found)
        _find_bars(run, first_line, found)

    def _find_keywords(self, run: _Run, first_line: int, found: _Found) -> None:
        """One hit per (line, keyword), sorted by line then keyword id."""
        lines, ids = self._keywords.hits(run)
        found.kw_line.extend((lines + first_line).tolist())
        found.kw_id.extend(ids.tolist())

    def _layout_ids(self, owner: list[int], keys: list[int], n: int) -> list[int]:
        """Per dict, the id of its sequence of entry keys, numbered in the order sequences are first met."""
        table = self._layouts
        out: list[int] = []
        at = 0
        for d in range(n):
            end = at
            while end < len(owner) and owner[end] == d:
                end += 1
            seq = tuple(keys[at:end])
            got = table.get(seq)
            if got is None:
                got, self._next_layout = self._next_layout, self._next_layout + 1
                if len(table) < MAX_LAYOUTS:  # memory stays bounded: past it, a new sequence is not kept
                    table[seq] = got
            out.append(got)
            at = end
        return out

    def _intern(self, found: _Found) -> tuple[list[int], list[int]]:
        """Give ids to the keys seen first in this chunk, in order: by line, dict keys before token keys."""
        table = self._key_ids
        new = {k for k in found.ent_name if k not in table} | {k for k in found.kv_name if k not in table}
        if new:
            # Each list is in printed order, so a key's first place in it is its first occurrence there.
            first: dict[bytes, tuple[int, int, int]] = {}
            for j in range(len(found.kv_name) - 1, -1, -1):
                first[found.kv_name[j]] = (found.kv_line[j], 1, j)
            for j in range(len(found.ent_name) - 1, -1, -1):
                name = found.ent_name[j]
                place = (found.ent_line[j], 0, j)
                if name not in first or place < first[name]:
                    first[name] = place
            for name in sorted(new, key=first.__getitem__):
                table[name] = len(self._keys)
                self._keys.append(name.decode("utf-8", errors="replace"))
        return [table[k] for k in found.ent_name], [table[k] for k in found.kv_name]


# -- what is found in a run (module functions: they need no scanner state) ----------------------------

def _visible_starts(run: _Run) -> np.ndarray:
    """Where each line's last non-empty `\\r`-segment starts (the line start when it has no `\\r`)."""
    visible = run.starts.copy()
    view = run.view
    lo, hi = int(run.starts[0]), int(run.scan_ends[-1])
    if view.find(b"\r", lo, hi) < 0:
        return visible
    arr = np.frombuffer(view, dtype=np.uint8)
    crs = np.flatnonzero(arr[lo:hi] == 0x0D) + lo
    lines = np.searchsorted(run.starts, crs, side="right") - 1
    lines = np.unique(lines[crs < run.scan_ends[lines]])
    for i in lines.tolist():
        visible[i] = _last_visible(view, int(run.starts[i]), int(run.scan_ends[i]))
    return visible


def _last_visible(view: bytes, start: int, end: int) -> int:
    """Start of the last `\\r`-segment of view[start:end] holding more than spaces and tabs, else `start`."""
    while end > start:
        cr = view.rfind(b"\r", start, end)
        if cr < 0:
            return start
        if view[cr + 1: end].strip(b" \t"):
            return cr + 1
        end = cr
    return start


def _find_dicts(run: _Run, first_line: int, found: _Found) -> list[tuple[int, int]]:
    """Every object of the run (nested ones flattened), with its numeric entries; returns their spans.

    Flat objects, by far the most common, are matched whole by one regex; at any other `{` the
    iterative parser `_parse_nested` runs. Either way the search goes on where the attempt ended or
    stopped, as the native scanner does.
    """
    view = run.view
    lo, hi = int(run.starts[0]), int(run.scan_ends[-1])
    spans: list[tuple[int, int]] = []
    json: list[bool] = []
    per_dict: list[tuple[list[bytes], list[bytes]]] = []
    starts: list[int] | None = None
    pos = lo
    while (m := OBJECT_START.search(view, pos, hi)) is not None:
        s = m.start()
        if m.group(1) is not None:  # a flat object: its entries come from ENTRY below
            spans.append(m.span())
            json.append(JSON_FLAT.fullmatch(view, s, m.end()) is not None)
            entries = ENTRY.findall(view, s + 1, m.end() - 1)
            per_dict.append(([single or double for single, double, _ in entries], [raw for _, _, raw in entries]))
            pos = m.end()
            continue
        if m.group(2) is not None:  # flat objects inside: their entries come with the keys joined
            spans.append(m.span())
            json.append(JSON_NEST1.fullmatch(view, s, m.end()) is not None)
            per_dict.append(_one_level(view, s, m.end()))
            pos = m.end()
            continue
        if starts is None:
            starts = run.starts.tolist()
        line_end = int(run.scan_ends[bisect.bisect_right(starts, s) - 1])
        parsed = _parse_nested(view, s, line_end)
        if isinstance(parsed, int):
            pos = max(parsed, s + 1)
            continue
        end, names, raws, is_json = parsed
        spans.append((s, end))
        json.append(is_json)
        per_dict.append((names, raws))
        pos = end
    if not spans:
        return spans
    lines = np.searchsorted(run.starts, [s for s, _ in spans], side="right") - 1 + first_line
    first_dict = len(found.dict_line)
    found.dict_line.extend(lines.tolist())
    found.dict_start.extend([run.view_abs + s for s, _ in spans])
    found.dict_end.extend([run.view_abs + e for _, e in spans])
    found.dict_json.extend(json)
    names = [name for dict_names, _ in per_dict for name in dict_names]
    raws = [raw for _, dict_raws in per_dict for raw in dict_raws]
    if not names:
        return spans
    counts = [len(dict_names) for dict_names, _ in per_dict]
    ent_dict = np.repeat(np.arange(first_dict, first_dict + len(spans)), counts)
    ent_line = np.repeat(lines, counts)
    try:  # the common case: every value a bare number that float() reads as it stands
        values = [float(raw) for raw in raws]
    except ValueError:
        maybe = [value_of(raw) for raw in raws]
        keep = [v is not None for v in maybe]
        values = [v for v in maybe if v is not None]
        if len(values) < len(maybe):
            mask = np.array(keep)
            ent_dict, ent_line = ent_dict[mask], ent_line[mask]
            names = [n for n, k in zip(names, keep, strict=True) if k]
    found.ent_dict.extend(ent_dict.tolist())
    found.ent_line.extend(ent_line.tolist())
    found.ent_name.extend(names)
    found.ent_value.extend(values)
    return spans


def _one_level(view: bytes, start: int, end: int) -> tuple[list[bytes], list[bytes]]:
    """Entry names and raw values of an object matched by `_NEST1` (flat objects' keys joined by `/`)."""
    names: list[bytes] = []
    raws: list[bytes] = []
    for single, double, raw, inner in ENTRY1.findall(view, start + 1, end - 1):
        key = single or double
        if not inner:
            names.append(key)
            raws.append(raw)
            continue
        prefix = key + b"/"
        for inner_single, inner_double, inner_raw in ENTRY.findall(inner, 1, len(inner) - 1):
            names.append(prefix + (inner_single or inner_double))
            raws.append(inner_raw)
    return names, raws


def _parse_nested(view: bytes, start: int, end: int) -> tuple[int, list[bytes], list[bytes], bool] | int:
    """Parse the object opening at view[start] within view[:end] without recursion.

    Returns (one past its `}`, entry names, raw values, whether it is plain JSON of numbers) for the
    entries that may hold a number (nested keys joined with `/`, levels deeper than MAX_LEVEL left out),
    or, when it does not parse, the position where parsing stopped (the contract's clarification 14).
    """
    names: list[bytes] = []
    raws: list[bytes] = []
    path: list[bytes] = []  # keys of the nested objects open, down to MAX_LEVEL
    json = True
    level = 0
    i = _skip_ws(view, start + 1, end)
    expect_key = False  # True after `,`; otherwise `}` may close an empty object
    after = False  # a value was read: `,` or `}` comes next
    while True:
        c = view[i:i + 1] if i < end else b""
        if (after or not expect_key) and c == b"}":
            if level == 0:
                return i + 1, names, raws, json
            if level <= MAX_LEVEL:
                path.pop()
            level -= 1
            i = _skip_ws(view, i + 1, end)
            after, expect_key = True, False
            continue
        if after:
            if c != b",":
                return i
            i = _skip_ws(view, i + 1, end)
            after, expect_key = False, True
            continue
        run = FLAT_RUN.match(view, i, end)
        if run is not None:  # entries with flat values, read as one (what this loop would read one by one)
            json = json and JSON_RUN.fullmatch(view, i, run.end()) is not None
            if level <= MAX_LEVEL:
                for single, double, raw in ENTRY.findall(view, i, run.end()):
                    key = single or double
                    names.append(b"/".join((*path, key)) if level else key)
                    raws.append(raw)
            i = run.end()
            after = True
            continue
        m = KEY_AT.match(view, i, end)
        if m is None:
            return i
        key = m.group(1) if m.group(1) is not None else m.group(2)
        json = json and JSON_KEY.fullmatch(view, i, m.end()) is not None
        i = _skip_ws(view, m.end(), end)
        if view[i:i + 1] != b":" or i >= end:
            return i
        i = _skip_ws(view, i + 1, end)
        c = view[i:i + 1] if i < end else b""
        if c == b"{":
            level += 1
            if level <= MAX_LEVEL:
                path.append(key)
            i = _skip_ws(view, i + 1, end)
            after = expect_key = False
            continue
        if c == b"[":
            i = _list_end(view, i, end)
            if i < 0:
                return -i
            json = False
        else:
            v = NUMBER.match(view, i, end) or STRING_AT.match(view, i, end)
            word = v is None
            if v is None:
                if c in (b"'", b'"'):
                    return end  # an unclosed string: parsing stopped at the line's end
                v = LITERAL_AT.match(view, i, end)
                if v is None:
                    return i
            json = json and JSON_NUMBER.fullmatch(v.group()) is not None
            if not word and level <= MAX_LEVEL:
                names.append(b"/".join((*path, key)) if level else key)
                raws.append(v.group())
            i = v.end()
        i = _skip_ws(view, i, end)
        after = True


def _skip_ws(view: bytes, i: int, end: int) -> int:
    """The first position from `i` that is not a space or tab (or `end`)."""
    m = _SPACES.match(view, i, end)
    return m.end() if m is not None else i


def _list_end(view: bytes, i: int, end: int) -> int:
    """One past the `]` closing the list that opens at view[i]; minus the stop position if it does not
    close (brackets `[]{}` pair up outside quoted strings; an unclosed string or list stops at `end`)."""
    closers = [b"]"]
    j = i + 1
    while (m := LIST_TOKEN.search(view, j, end)) is not None:
        c = m.group()
        j = m.end()
        if c in (b"[", b"{"):
            closers.append(b"]" if c == b"[" else b"}")
        elif c in (b"]", b"}"):
            if closers.pop() != c:
                return -m.start()
            if not closers:
                return j
        else:
            s = STRING_AT.match(view, m.start(), end)
            if s is None:
                return -end
            j = s.end()
    return -end


def _kv_matches(view: bytes, lo: int, hi: int) -> list[re.Match[bytes]]:
    """All `key SEP number` tokens in view[lo:hi], left to right, none overlapping.

    A key over MAX_KEY_BYTES is retried from a later word, which yields its longest suffix that fits.
    """
    out: list[re.Match[bytes]] = []
    pos = lo
    while True:
        m = KV.search(view, pos, hi)
        while m is not None and m.end(1) - m.start(1) > MAX_KEY_BYTES:
            m = KV.search(view, m.start() + 1, hi)
        if m is None:
            return out
        out.append(m)
        pos = m.end()


def _byte_table(allowed: bytes) -> np.ndarray:
    """A 256-entry boolean table: is this byte one of `allowed`?"""
    table = np.zeros(256, dtype=bool)
    table[np.frombuffer(allowed, dtype=np.uint8)] = True
    return table


_WORD_TABLE = bytes(range(ord("a"), ord("z") + 1)) + bytes(range(ord("A"), ord("Z") + 1)) + b"0123456789_./-"
_BEFORE_SEP = _byte_table(_WORD_TABLE + b" \t")  # what a token's key (or the blanks after it) ends with
_AFTER_SEP = _byte_table(b"0123456789.+-nNiI \t")  # what can follow SEP in a token


def _token_lines(run: _Run, visible: np.ndarray) -> list[int]:
    """Lines whose visible segment has a `:` or `=` that a token could hang on (a cheap, generous filter)."""
    view = run.view
    lo, hi = int(run.starts[0]), int(run.scan_ends[-1])
    arr = np.frombuffer(view, dtype=np.uint8)
    part = arr[lo:hi]
    seps = np.flatnonzero((part == 0x3A) | (part == 0x3D)) + lo
    seps = seps[(seps > lo) & (seps + 1 < len(arr))]
    if not len(seps):
        return []
    seps = seps[_BEFORE_SEP[arr[seps - 1]] & _AFTER_SEP[arr[seps + 1]]]
    lines = np.searchsorted(run.starts, seps, side="right") - 1
    return np.unique(lines[seps >= visible[lines]]).tolist()


def _find_tokens(run: _Run, visible: np.ndarray, dicts: list[tuple[int, int]], first_line: int,
                 found: _Found) -> None:
    """`key: value` tokens in each line's visible segment, outside the dicts found there."""
    view = run.view
    d_starts = [s for s, _ in dicts]
    for i in _token_lines(run, visible):
        for m in _kv_matches(view, int(visible[i]), int(run.scan_ends[i])):
            k = bisect.bisect_right(d_starts, m.start()) - 1
            if k >= 0 and m.start() < dicts[k][1]:
                continue  # inside a dict: its entries are reported as the dict's
            found.kv_line.append(first_line + i)
            found.kv_name.append(m.group(1))
            found.kv_value.append(to_float(m.group(2)))
            found.kv_pos.append(run.view_abs + m.start(1))


def _find_bars(run: _Run, first_line: int, found: _Found) -> None:
    """The last `| N/M` counter of each line that has one."""
    view = run.view
    lo, hi = int(run.starts[0]), int(run.scan_ends[-1])
    if view.find(b"/", lo, hi) < 0:
        return
    arr = np.frombuffer(view, dtype=np.uint8)
    pipes = np.flatnonzero(arr[lo:hi] == 0x7C) + lo
    if not len(pipes):
        return
    lines = np.unique(np.searchsorted(run.starts, pipes, side="right") - 1)
    for i in lines.tolist():
        m = LAST_BAR.match(view, int(run.starts[i]), int(run.scan_ends[i]))
        if m is not None:
            found.prog_line.append(first_line + i)
            found.prog_n.append(int(m.group(1)))
            found.prog_total.append(int(m.group(2)))
