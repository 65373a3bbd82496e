"""Which JSON lines the JSON-lines adapter reads from the scanner's arrays, and which go through `parse`.

tests/adapters/test_byte_path.py proves both paths give the same records; this proves the fast path is
really taken for lines of numbers with nested objects (the common shape of JSON-lines metrics logs), and
that the lines whose meaning the arrays cannot say still reach `parse`.
"""

from __future__ import annotations

from typing import Any

import pytest

import trainwatch.scan as scan
from trainwatch.adapters import jsonl
from trainwatch.adapters.jsonl import JsonLinesAdapter
from trainwatch.adapters.pipeline import SourceParser
from trainwatch.model import Sample
from trainwatch.scan import reference

from .test_byte_path import SCANNERS


class Counting(JsonLinesAdapter):
    """The adapter, counting the lines that went through `parse`."""

    def __init__(self, source: str = "") -> None:
        super().__init__(source)
        self.parsed: list[str] = []

    def parse(self, line: str, lineno: int) -> Any:
        self.parsed.append(line)
        return super().parse(line, lineno)


def _run(scanner: Any, text: str, monkeypatch: pytest.MonkeyPatch) -> tuple[Counting, list[Any]]:
    monkeypatch.setattr(scan, "Scanner", scanner)
    adapter = Counting("")
    parser = SourceParser(adapter)
    records = parser.feed_bytes(text.encode()) + parser.finish()
    return adapter, records


@pytest.mark.parametrize("scanner", SCANNERS)
def test_nested_objects_of_numbers_are_read_from_the_arrays(scanner: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    lines = [f'{{"step": {s}, "loss": 2.5, "train": {{"epoch": 0.{s}, "grad": {{"norm": 1.5}}}}, "e": {{"a": 1}}}}'
             for s in range(1, 6)]
    adapter, records = _run(scanner, "\n".join(lines) + "\n", monkeypatch)
    assert adapter.parsed == []
    samples = [(r.name, r.value, r.step) for r in records if isinstance(r, Sample)]
    assert samples[:4] == [("loss", 2.5, 1), ("train/epoch", 0.1, 1), ("train/grad/norm", 1.5, 1), ("e/a", 1.0, 1)]
    assert len(samples) == 20


@pytest.mark.parametrize("scanner", SCANNERS)
@pytest.mark.parametrize("line", [
    '{"step": 1, "mode": "train", "loss": 1}',  # a string: MMEngine's mode
    '{"step": 1, "t": {"a": 1}, "t": {"b": 2}}',  # an object key repeated: json keeps the last
    '{"step": 1, "t/a": 1, "t": {"b": 2}}',  # a `/` in a key: paths would be ambiguous
    '{"step": 1, "loss": {"a": 1}}',  # a training hint named by an object
    '{"step": 1, "e": {}, "loss": 1}',  # an empty object
    '{"step": 1, "l": [1, 2], "loss": 1}',  # a list
    '{"step": 1, "o": {"x": NaN}}',  # not JSON numbers
])
def test_lines_the_arrays_cannot_say_go_through_parse(scanner: Any, line: str,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    adapter, _ = _run(scanner, line + "\n", monkeypatch)
    assert adapter.parsed == [line]


def test_the_scanner_flattens_exactly_as_deep_as_the_adapter() -> None:
    assert reference.MAX_LEVEL == jsonl.MAX_DEPTH + 1  # _flatten's depth counts from the first nested object
