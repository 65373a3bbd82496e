"""Which JSON lines the JSON-lines adapter reads from the scanner's arrays, and which go through `parse`.

tests/adapters/test_byte_path.py proves both paths give the same records; this proves the fast path is
really taken for lines of numbers with nested objects (the common shape of JSON-lines metrics logs), and
that the lines whose meaning the arrays cannot say still reach `parse`.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import trainwatch.scan as scan
from tests.examples import examples
from trainwatch.adapters import jsonl
from trainwatch.adapters.jsonl import JsonLinesAdapter
from trainwatch.adapters.pipeline import SourceParser
from trainwatch.model import Sample
from trainwatch.scan import kernels, reference

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


def _native_rows() -> Any:
    try:
        from trainwatch import _scan  # type: ignore[attr-defined]
    except ImportError:
        return None
    return _scan.jsonl_rows


@pytest.mark.skipif(_native_rows() is None, reason="trainwatch._scan is not built")
@settings(max_examples=examples(1500), deadline=None)
@given(rows=st.lists(st.lists(st.tuples(st.integers(0, 5), st.sampled_from(
           [0.0, 1.0, 7.9, 8.2, -3.0, 99.0, 1e8, 1e8 + 1, 1.7e9, 1e11, 1.7e12, 2.5])), max_size=6), max_size=12),
       step_keys=st.permutations([0, 1, 2, 3, 4, 5]).map(lambda p: p[:3]), time_keys=st.sets(st.integers(0, 5)),
       n_step=st.integers(0, 3), last=st.one_of(st.none(), st.integers(-5, 100)))
def test_the_native_jsonl_rows_are_the_reference_ones(rows: list[list[tuple[int, float]]], step_keys: list[int],
                                                      time_keys: set[int], n_step: int, last: int | None) -> None:
    """Dicts of any keys: several step keys of different priority (or none), a key that is a step and
    a time at once, times either side of 1e8 and 1e11, steps that go back, empty dicts, any last step
    before them: the same columns, rows taken and last step from the native pass and the numpy one."""
    from trainwatch.adapters.jsonl_columns import KeyTables, rows_reference
    from trainwatch.batch import BatchBuilder

    names = [f"k{i}" for i in range(6)]
    tables = KeyTables(tuple(names[k] for k in step_keys[:n_step]), frozenset(names[k] for k in time_keys),
                       frozenset())
    tables.update(names, BatchBuilder("x"))
    key = np.array([k for r in rows for k, _ in r], dtype=np.int32)
    value = np.array([v for r in rows for _, v in r], dtype=np.float64)
    row = np.array([i for i, r in enumerate(rows) for _ in r], dtype=np.int64)
    lineno = np.arange(len(rows), dtype=np.int64) + 3
    want = rows_reference(key, value, row, lineno, tables, last)
    got = _native_rows()(key, value, row, lineno, tables.is_step, tables.rank, tables.is_time, tables.name, last)
    for w, g in zip(want[:5], got[:5]):
        assert np.asarray(w).tolist() == np.asarray(g).tolist() or np.array_equal(w, g, equal_nan=True)
    assert got[0].dtype == np.int32 and got[1].dtype == np.int64
    assert want[5:] == got[5:]


_LAYOUT_PIECES = [  # lines sharing key layouts with different nesting, and every reason to refuse one
    '{"step": 1, "loss": 2.5, "train": {"epoch": 0.1}}',
    '{"step": 2, "loss": 2.4, "train/epoch": 0.2}',
    '{"step": 3, "a": {"b": {"c": 1}}}',
    '{"step": 3, "a": {"b": {"c": 1}}, "z": {}}',  # the same keys as the line above, one object more
    '{"step": 4, "a": {"b/c": 1}}',
    '{"step": 5, "a/b": {"c": 1}}',
    '{"step": 6, "loss": NaN, "train": {"epoch": 0.3}}',
    '{"step": 7, "total_steps": 10, "loss": 1}',
    '{"step": 1e300, "loss": 1, "train": {"epoch": 1}}',
    '{"step": 9007199254740992, "loss": 1}',  # 2**53: the first step a float may not hold exactly
    '{"step": 9007199254740991, "loss": 1}',
    '{"step": 9, "loss": 1, "loss": 2}',
    '{"step": 10, "t": {"x": 1}, "t": {"y": 2}}',
    '{"step": 11, "loss": 1} {"step": 12}',
    ' {"step": 13, "loss": 1}',
    '{"step": 14, "loss": "1.5", "o": {"p": 2}}',
    '{"step": 15, "loss": {"inner": 1}}',
    '{"step": 16, "e": {}, "loss": 1}',
    '{"iter": 17, "train": {"epoch": 1, "grad": {"norm": 2.0}}, "loss": 3}',
    '{"iter": 18, "train": {"epoch": 1, "grad": {"norm": 2.0}}, "loss": Infinity}',
    'no object here',
]


def _native_readable(adapter: JsonLinesAdapter, chunk: Any, keys: list[str]) -> np.ndarray:
    """The adapter's readable lines from the native pass, whichever scanner TRAINWATCH_SCANNER chose."""
    from trainwatch import _scan

    original = kernels._core
    kernels._core = lambda: _scan  # type: ignore[assignment]
    try:
        got = adapter._readable_native(chunk, keys)
    finally:
        kernels._core = original
    assert got is not None
    return got


@pytest.mark.skipif(_native_rows() is None, reason="trainwatch._scan is not built")
@settings(max_examples=examples(400), deadline=None)
@given(picks=st.lists(st.integers(0, len(_LAYOUT_PIECES) - 1), max_size=40))
def test_the_native_readable_lines_are_the_reference_ones(picks: list[int]) -> None:
    """Any mix of lines that share layouts but not their nesting, with a `/`, a non-finite value, a total,
    a step past 2**53, a repeated key, two objects or an object not alone on its line: the native pass
    marks the same lines readable as the numpy one, the first of a layout in the chunk deciding for the
    layout's lines as numpy's `unique` has it decide."""
    from trainwatch.batch import BatchBuilder
    from trainwatch.scan.native import Scanner as NativeScanner

    scanner = NativeScanner(["{"])
    chunk = scanner.feed("".join(_LAYOUT_PIECES[i] + "\n" for i in picks).encode())
    adapter = JsonLinesAdapter("")
    adapter._tables.update(scanner.keys, BatchBuilder("x"))
    want = adapter._readable_reference(chunk, scanner.keys, scanner.positions)
    got = _native_readable(adapter, chunk, scanner.keys)
    assert got.tolist() == want.tolist()


_NUMBERS = ["1", "-0", "-0.0", "0.5", "1e22", "1e-400", "1e400", "9007199254740992", "9007199254740993", "2.5e-3",
            "1,234", ".5", "1.", "01", "+1", "NaN", "-Infinity", "123456789012345678901", "0.1e-7"]
_KEYS = ["step", "iter", "loss", "lr", "a/b", "train", "total_steps", "time", "e"]


@st.composite
def _objects(draw: st.DrawFn, depth: int = 0) -> str:
    """A JSON-ish object: keys that are steps, totals, or hold a `/`, numbers JSON may or may not read, and
    nested objects up to three deep."""
    parts = []
    for key in draw(st.lists(st.sampled_from(_KEYS), max_size=4)):
        value = draw(_objects(depth + 1)) if depth < 3 and draw(st.booleans()) and draw(st.booleans()) \
            else draw(st.sampled_from(_NUMBERS))
        parts.append(f'"{key}": {value}')
    return "{" + ", ".join(parts) + "}"


@st.composite
def _chunked_lines(draw: st.DrawFn) -> tuple[bytes, int]:
    """A few distinct lines repeated in any order (so lines of different nesting share layouts), each maybe
    redrawn after a `\\r`, ended by one, led by a space or followed by a second object; LF or CRLF, with or
    without a last newline; and where the bytes are cut in two for feeding."""
    pool = draw(st.lists(_objects(), min_size=1, max_size=5))
    decorate = st.sampled_from(["{}", "{} {}", "\r{}", "{}\r", " {}", "x {}"])
    lines = [draw(decorate).replace("{}", draw(st.sampled_from(pool)), 1).replace("{}", "{\"step\": 1}")
             for _ in range(draw(st.integers(1, 30)))]
    end = draw(st.sampled_from(["\n", "\r\n"]))
    data = (end.join(lines) + draw(st.sampled_from([end, ""]))).encode()
    return data, draw(st.integers(0, len(data)))


@pytest.mark.skipif(_native_rows() is None, reason="trainwatch._scan is not built")
@settings(max_examples=examples(300), deadline=None)
@given(case=_chunked_lines())
def test_the_native_readable_lines_are_the_reference_ones_on_any_chunking(case: tuple[bytes, int]) -> None:
    """Generated lines (numbers at the edges of what JSON and a float say, CR redraws, CRLF, a cut last
    line, a feed cut mid-line): for every chunk whose lines are whole, the native pass marks the lines
    the numpy reference marks."""
    from trainwatch.batch import BatchBuilder
    from trainwatch.scan.native import Scanner as NativeScanner

    data, cut = case
    scanner = NativeScanner(["{"])
    chunks = [scanner.feed(data[:cut]), scanner.feed(data[cut:]), scanner.finish()]
    judged = 0
    for chunk in chunks:
        if not len(chunk) or chunk._cut_line_starts is not None:
            continue
        adapter = JsonLinesAdapter("")
        adapter._tables.update(scanner.keys, BatchBuilder("x"))
        want = adapter._readable_reference(chunk, scanner.keys, scanner.positions)
        got = _native_readable(adapter, chunk, scanner.keys)
        assert got.tolist() == want.tolist()
        judged += len(chunk)
    assert judged > 0 or not data.strip()


class TwoSteps(Counting):
    """The adapter without the one native pass: which lines are readable, then their rows (the reference)."""

    def _take_native(self, chunk: Any, keys: list[str], lines: Any, hits: np.ndarray) -> int:
        return 0


def _records_and_parsed(adapter: Counting, data: bytes, cuts: list[int]) -> tuple[list[Any], list[str]]:
    from .test_byte_path import by_bytes

    return by_bytes(SourceParser(adapter), data, cuts), adapter.parsed


@pytest.mark.skipif(_native_rows() is None, reason="trainwatch._scan is not built")
@pytest.mark.parametrize("max_shapes", [jsonl.MAX_SHAPES, 1])
@settings(max_examples=examples(200), deadline=None)
@given(case=_chunked_lines(), picks=st.lists(st.integers(0, len(_LAYOUT_PIECES) - 1), max_size=30),
       cuts=st.lists(st.floats(0, 1), max_size=4))
def test_the_one_native_pass_reads_what_the_two_steps_read(case: tuple[bytes, int], picks: list[int],
                                                            cuts: list[float], max_shapes: int) -> None:
    """Generated lines and lines sharing layouts but not their nesting, steps going back, fed in any cuts
    (so layouts judged in one chunk are looked up in the next): the one native pass gives the records of
    the two-step path, whether the layouts' verdicts are remembered (MAX_SHAPES) or each given for one
    dict (a limit of 1), and sends to `parse` only lines the two steps send there too. (It may read more
    from the arrays: it judges a layout for each count of nested objects, where the two steps refuse a
    line whose count differs from the first of its layout in the chunk.) (test_byte_path checks the byte path against
    the line-by-line one; this input holds steps past int64, which a batch holds as no step.)"""
    from trainwatch.scan.native import Scanner as NativeScanner

    data = case[0] + "".join(_LAYOUT_PIECES[i] + "\n" for i in picks).encode()
    at = sorted(int(f * len(data)) for f in cuts)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(scan, "Scanner", NativeScanner)
        mp.setattr(jsonl, "MAX_SHAPES", max_shapes)
        fused, fused_parsed = _records_and_parsed(Counting(""), data, at)
        two, two_parsed = _records_and_parsed(TwoSteps(""), data, at)
    assert fused == two
    assert not Counter(fused_parsed) - Counter(two_parsed)


@pytest.mark.skipif(_native_rows() is None, reason="trainwatch._scan is not built")
def test_a_nesting_layout_is_judged_once_for_every_chunk_after(monkeypatch: pytest.MonkeyPatch) -> None:
    """The native pass looks a judged layout up by the scanner's layout id: fed in many pieces, lines of
    one layout of keys, some holding an empty object besides (another count of nested objects), are
    judged once, and the lines `_flatten` names exactly are read from the arrays."""
    from trainwatch import _scan
    from trainwatch.scan.native import Scanner as NativeScanner

    monkeypatch.setattr(scan, "Scanner", NativeScanner)
    monkeypatch.setattr(kernels, "_core", lambda: _scan)  # the native pass, whichever scanner is chosen
    asked: list[tuple[int, ...]] = []

    class Asking(Counting):
        def _nesting_of(self, keys: list[str], ids: list[int]) -> int:
            asked.append(tuple(ids))
            return super()._nesting_of(keys, ids)

    lines = [f'{{"step": {s}, "train": {{"loss": 1.5}}, "e": {{"a": {s}}}}}' if s % 3 else
             f'{{"step": {s}, "train": {{"loss": 1.5}}, "e": {{"a": {s}}}, "z": {{}}}}' for s in range(1, 301)]
    data = "".join(line + "\n" for line in lines).encode()
    adapter = Asking("")
    parser = SourceParser(adapter)
    records = [r for at in range(0, len(data), 997) for r in parser.feed_bytes(data[at:at + 997])]
    records += parser.finish()
    assert len(asked) == 1
    assert len(adapter.parsed) == 100  # the lines with an empty object: `parse` says what they mean
    assert sum(isinstance(r, Sample) for r in records) == 2 * 300


@pytest.mark.skipif(_native_rows() is None, reason="trainwatch._scan is not built")
def test_layouts_past_every_table_leave_the_chunk_to_the_two_steps(monkeypatch: pytest.MonkeyPatch) -> None:
    """Once the scanner's table of key layouts is full, a nested line whose keys come in an order not met
    before gets a layout id of its own, which no verdict table can hold: the native pass leaves the rest
    of such a chunk to the two steps (which judge all its layouts in one pass) rather than stopping at
    every line to ask, and reads what the two steps read."""
    from trainwatch import _scan  # type: ignore[attr-defined]
    from trainwatch.scan.native import Scanner as NativeScanner

    monkeypatch.setattr(scan, "Scanner", NativeScanner)
    calls = Counter[str]()

    class Ext:
        def __getattr__(self, name: str) -> Any:
            calls[name] += 1
            return getattr(_scan, name)

    monkeypatch.setattr(kernels, "_core", lambda: Ext())
    fill = "".join(f'{{"k{i}": 1}}\n' for i in range(5000)).encode()  # more key layouts than any table holds
    past = "".join(f'{{"step": {s}, "j{s}": 1.5, "n": {{"a": {s}}}}}\n' for s in range(2000)).encode()
    fused, two = SourceParser(Counting("")), SourceParser(TwoSteps(""))
    assert fused.feed_bytes(fill) == two.feed_bytes(fill)
    calls.clear()
    got = fused.feed_bytes(past) + fused.finish()
    assert got == two.feed_bytes(past) + two.finish()
    assert sum(isinstance(r, Sample) for r in got) == 2 * 2000
    assert calls["jsonl_take"] <= 2


@pytest.mark.parametrize("scanner", SCANNERS)
def test_a_settings_record_without_a_step_gives_no_metrics(scanner: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A script that echoes its arguments as the log's first record (`{"type": "config", "args": {..}}`,
    or only `{"hparams": {..}}` of numbers) logs constants, not metrics: none of them becomes a series.
    A record with a step keeps what it nests under such a name, and a stepless record its other numbers."""
    lines = ['{"type": "config", "argv": ["train.py", "--lr", "2e-5"], "args": {"lr": 2e-05, "steps": 500}, '
             '"seed": 7}',
             '{"hparams": {"batch_size": 16, "warmup": 10}}',
             '{"note": "eval", "accuracy": 0.5, "settings": {"k": 3}}',
             *(f'{{"step": {s}, "loss": {1 - s / 100}, "config": {{"beta": 0.1}}}}' for s in range(0, 40, 10))]
    _, records = _run(scanner, "\n".join(lines) + "\n", monkeypatch)
    names = {r.name for r in records if isinstance(r, Sample)}
    assert names == {"accuracy", "loss", "config/beta"}
