"""What a format adapter is: a scorer for auto-detection and a parser from lines to records."""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, ClassVar

from trainwatch.model import Record

if TYPE_CHECKING:
    from trainwatch.adapters.pipeline import ChunkLines
    from trainwatch.batch import BatchBuilder
    from trainwatch.scan import Chunk


def to_float(text: str) -> float | None:
    """Reads a number as logs print it: quoted, with thousands separators, %, nan or inf."""
    t = text.strip().strip("'\"").rstrip("%").strip()
    if not t:
        return None
    try:
        return float(t)
    except ValueError:
        pass
    if "," in t:
        try:
            return float(t.replace(",", ""))
        except ValueError:
            return None
    low = t.lower().rstrip("0").removesuffix(".")
    if low in ("nan", "-nan", "+nan"):
        return float("nan")
    if low in ("inf", "-inf", "+inf"):
        # Lightning's progress bar prints a non-finite float as `nan.0` / `inf.0`.
        return float(low)
    return None


def json_number(v: Any) -> float | None:
    """A decoded JSON value as a metric: numbers, and numbers some writers quote ("2.5", "NaN"); not
    booleans, nulls, lists or text. Exact type checks: this runs once per value of every JSON line."""
    t = type(v)
    if t is float:
        return v
    if t is int:
        return int_number(v)
    if t is str and v and len(v) < 40:
        try:
            return float(v)
        except ValueError:
            return None
    return None


def int_number(v: int) -> float:
    """A JSON int as a float: infinite past the largest float, as json reads `1e400` (`float()` refuses
    such an int, and a line that held one used to be dropped whole)."""
    try:
        return float(v)
    except OverflowError:
        return math.inf if v > 0 else -math.inf


class Adapter(ABC):
    """One log format. One instance per source, so it may keep state between lines.

    Subclasses set the class attributes and implement `score` and `parse`; registering the class
    in `trainwatch.adapters.BUILTIN` (or a third party's `trainwatch.formats` entry point) is all
    that is needed for detection, `--format NAME` and `trainwatch formats`.
    """

    name: ClassVar[str]
    description: ClassVar[str]
    example: ClassVar[str]
    whole_file: ClassVar[bool] = False
    """True for formats read as one document (trainer_state.json): `parse_document` replaces `parse`."""
    task_hint: ClassVar[str] = ""
    """The task every log in this format comes from, when the format says it (a detector's results
    file: "vision"); trainwatch.task weighs it with the other clues."""
    text_signatures: ClassVar[bool] = True
    """Kept for plugins that set it; no longer consulted: every line of a line format is scanned for error
    signatures and tracebacks (a crash is printed as plain text whatever the metrics' format), and
    whole-file documents never are."""
    strip_prefixes: ClassVar[bool] = True
    """Whether launcher prefixes (rank tags, hosts, Ray pids, timestamps, levels) are taken off each line
    before `parse` and `score` see it. Formats whose lines are data cells (CSV) turn it off."""

    def __init__(self, source: str = "") -> None:
        self.source = source

    @classmethod
    @abstractmethod
    def score(cls, head: str, path: str) -> float:
        """Confidence from 0 to 1 that a file is in this format, from `head`: a sample of the file (its
        start, its end and pieces between, whole lines joined by newlines, at most about 320 KB)."""

    def parse(self, line: str, lineno: int) -> Iterable[Record]:
        """Records from one physical line (ANSI stripped, no newline, may hold `\\r` redraws)."""
        return ()

    chunk_keywords: ClassVar[tuple[str, ...]] = ()
    """For adapters that implement `parse_chunk`: literals at least one of which every line that `parse`
    would act on holds. The scanner finds them in the bytes; `parse_chunk` is told which lines hold one
    (`ChunkLines.hits`) and never needs to look at the others."""


    def parse_into(self, line: str, lineno: int, out: BatchBuilder) -> None:
        """`parse`, writing into a batch builder: an adapter that reads many values per line can put them
        straight into its columns (`out.sample(...)`) instead of making a Sample each."""
        out.extend(self.parse(line, lineno))
    def parse_chunk(self, chunk: Chunk, keys: list[str], lines: ChunkLines) -> Iterable[Record]:
        """Optional: records from a scanner chunk of complete lines (trainwatch.scan.Chunk, `keys` its
        key table), the same records `parse` gives line by line. Records come in log order and each
        carries the line that produced it, so error events can be placed between them. Lines not read
        from the arrays go through `lines.parse(i)` (the per-line path), in increasing order.

        Adapters that do not override it get `parse` on every decoded line, as before."""
        return ()

    def parse_document(self, text: str) -> Iterable[Record]:
        """Records from a whole file, for `whole_file` formats."""
        return ()

    def finish(self) -> Iterable[Record]:
        """Records held back for more lines (multi-line blocks), at the end of the data."""
        return ()

    def settle(self) -> Iterable[Record]:
        """Records held back for a later line, let go because a live reader has read all there is for now
        (a run that prints no step may go on for hours before a line names one)."""
        return ()
