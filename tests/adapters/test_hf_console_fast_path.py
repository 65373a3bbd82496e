"""Which Trainer console lines are read from the scanner's arrays, and which go through `parse`.

tests/adapters/test_byte_path.py proves both paths give the same records (every example and corpus log,
and random mixes of tricky lines cut anywhere); this proves the array path is really taken for the
lines a gigabyte log is made of (tqdm redraws and plain metric dicts, transformers 4 and 5), and that a
dict the two readers could read differently still reaches `parse`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import trainwatch.scan as scan
from tests.examples import examples
from trainwatch.adapters import hf_console_columns as columns
from trainwatch.adapters.hf_console import HFConsoleAdapter
from trainwatch.adapters.pipeline import SourceParser
from trainwatch.model import Event, EventKind, Sample
from trainwatch.scan import bars, census, find, kernels
from trainwatch.scan.reference import Scanner as ReferenceScanner

from .test_byte_path import SCANNERS, by_bytes, by_lines, scanner_class  # noqa: F401 (a fixture)


class Counting(HFConsoleAdapter):
    """The adapter, counting the lines that went through the per-line reader."""

    def __init__(self, source: str = "") -> None:
        super().__init__(source)
        self.parsed: list[str] = []

    def parse_into(self, line: str, lineno: int, out: Any) -> None:
        self.parsed.append(line)
        super().parse_into(line, lineno, out)


def _bars(a: int, b: int, total: int) -> str:
    return "".join(f" {100 * n // total:2d}%|#         | {n}/{total} [00:01<00:09, 9.9it/s]\r" for n in range(a, b))


def _log(quoted: bool) -> str:
    lines = []
    for k in range(1, 6):
        values = {"loss": 2.0 - k / 10, "grad_norm": 1.5, "learning_rate": 5e-05, "epoch": k / 100}
        body = ", ".join(f"'{name}': '{v}'" if quoted else f"'{name}': {v}" for name, v in values.items())
        lines.append(_bars(10 * k - 9, 10 * k + 1, 500) + "   {" + body + "}\n")
    lines.append(_bars(51, 55, 500) + "\n")
    return "".join(lines)


def _run(scanner: Any, text: str, monkeypatch: pytest.MonkeyPatch) -> tuple[Counting, list[Any]]:
    monkeypatch.setattr(scan, "Scanner", scanner)
    adapter = Counting("")
    parser = SourceParser(adapter)
    return adapter, parser.feed_bytes(text.encode()) + parser.finish()


@pytest.mark.parametrize("scanner", SCANNERS)
@pytest.mark.parametrize("quoted", [False, True], ids=["transformers4", "transformers5"])
def test_bars_and_plain_dicts_are_read_from_the_arrays(scanner: Any, quoted: bool,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    adapter, records = _run(scanner, _log(quoted), monkeypatch)
    assert adapter.parsed == []
    samples = [(r.name, r.value, r.step, r.step_inferred) for r in records if isinstance(r, Sample)]
    assert samples[:4] == [("loss", 1.9, 10, True), ("grad_norm", 1.5, 10, True),
                           ("learning_rate", 5e-05, 10, True), ("epoch", 0.01, 10, True)]
    assert [s[2] for s in samples[::4]] == [10, 20, 30, 40, 50]
    progress = [r.step for r in records if isinstance(r, Event) and r.kind is EventKind.PROGRESS]
    assert progress[-1] == 54  # the last line holds bars only


@pytest.mark.parametrize("scanner", SCANNERS)
@pytest.mark.parametrize("line", [
    "{'loss': 1,234, 'epoch': 0.5}",  # thousands: the scanner reads 1234, the regex 1
    "{'loss': '95%', 'epoch': 0.5}",  # the scanner reads 95, the reader nothing
    "{'loss': 2.0, 'loss': 3.0, 'epoch': 0.5}",  # a key twice: a Python dict keeps one
    "{'loss':2.0, 'epoch': 0.5}",  # no blank after the first colon: not the Trainer's print
    "{'a:b': 1.0, 'loss': 2.0}",  # a colon in a key
    "{'': 1.0, 'loss': 2.0}",  # an empty key the regex never matches
    "{'step': 7, 'loss': 2.0}",  # a printed step
    "{'loss': 2.0, 'mode': 'train'}",  # an entry without a number
    "{'loss': 2.0, 'nested': {'a': 1}}",  # a nested dict
    "{'train_runtime': 10.0, 'train_loss': 2.0, 'epoch': 1.0}",  # the summary ends training
    "{'loss': 2.0, 'epoch': 0.5}\r 12%|#         | 12/100 [00:01<00:09, 9.9it/s]",  # a bar after it
    "Epoch 1: {'loss': 2.0, 'epoch': 0.5}",  # text that may be a launcher prefix
    "\x1b[2K{'loss': 2.0, 'epoch': 0.5}",  # an escape code
])
def test_dicts_the_readers_could_disagree_on_go_through_parse(scanner: Any, line: str,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    head = "{'loss': 2.5, 'epoch': 0.1}\n"
    text = head + line + "\n" + head
    adapter, _ = _run(scanner, text, monkeypatch)
    odd = [p for p in adapter.parsed if p != head.strip()]  # dicts of no known pace go by parse too (restep)
    assert len(odd) == 1 and odd[0].endswith(line.split("\x1b[2K")[-1])
    monkeypatch.setattr(scan, "Scanner", scanner)
    raw = text.encode()
    assert by_bytes(SourceParser(HFConsoleAdapter("")), raw) == by_lines(SourceParser(HFConsoleAdapter("")), raw)


BAR_PARTS = st.tuples(
    st.sampled_from(["", "  ", " ", "\t", "Train: ", "x\r ", "12"]),
    st.sampled_from(["5", "45", "100", "", "\u0663"]),
    st.sampled_from(["%|", "%"]),
    st.sampled_from(["#####     ", "█▌   ", "", "a|b", "x\ry", "#" * 70]),
    st.sampled_from(["| ", "|", "|\t", "| \u00a0", ""]),
    st.sampled_from(["5/100", "45/100", "1234567890123456789/2", "5/", "/5", "\u0665/100"]),
    st.sampled_from([" [", "[", "  [", " x["]),
    st.sampled_from(["00:01<00:09, 9.9it/s", "00:00<?, ?it/s", "00:05, 1.50s/it", "9.9 examples/s",
                     "12.3MB/s", "", "00:01<00:09", "x" * 130]),
    st.sampled_from(["]", "", "] {'loss': 1.0}"]),
)


def _bar_readers() -> list[Any]:
    out = [pytest.param(bars.plain_bars, id="reference")]
    for scanner in SCANNERS:
        if scanner.values[0] is not None and scanner.values[0] is not ReferenceScanner:
            out.append(pytest.param(scanner.values[0].plain_bars, id="native"))
    return out


BAR_READERS = _bar_readers()


@pytest.mark.parametrize("read", BAR_READERS)
@settings(max_examples=examples(400), deadline=None)
@given(parts=BAR_PARTS)
def test_plain_bars_read_only_what_last_bar_reads_alike(read: Any, parts: tuple[str, ...]) -> None:
    """The array reader of tqdm bars answers only for bars `_last_bar` reads the same way at once."""
    text = "".join(parts)
    raw = text.encode()
    p = raw.rfind(b"%|")
    if p < 0:
        return
    seg = raw.rfind(b"\r", 0, p) + 1
    ok, n, m = read(raw, np.array([p]), np.array([seg]), np.array([len(raw)]))
    if ok[0]:
        assert HFConsoleAdapter._last_bar(text, 0, len(text)) == ("", int(n[0]), int(m[0]))


@pytest.mark.parametrize("read", BAR_READERS)
def test_plain_bars_take_the_trainers_own_bars(read: Any) -> None:
    text = "  5%|#         | 5/100 [00:01<00:09, 9.9it/s]\r 45%|####5     | 45/100 [00:05<00:06, 8.8it/s]"
    raw = text.encode()
    p = raw.rfind(b"%|")
    ok, n, m = read(raw, np.array([p]), np.array([raw.rfind(b"\r") + 1]), np.array([len(raw)]))
    assert ok.tolist() == [True] and (int(n[0]), int(m[0])) == (45, 100)


# a plain bar field by field (the first choice of each), and what else each field may be
_BAR_FIELDS = [
    ["", "\r", "x", "\r\r", "12"],
    ["  ", "", " ", " " * 7, " " * 8, " " * 9, "\t"],
    ["45", "", "5", "100", "1234567", "12345678"],
    ["%|", "%", "|"],
    ["#" * 10, "", "#" * 63, "#" * 64, "a\rb", "|"],
    ["|", "", "\r"],
    [" ", "", "  ", " " * 30, "\t"],
    ["45", "", "9" * 18, "9" * 19],
    ["/", "", "//"],
    ["100", "", "9" * 18, "9" * 19],
    [" ", "", " " * 30, "\t"],
    ["[", "", "]"],
    ["00:05<00:06, 8.8", "", "x" * 114, "x" * 115, "x" * 116, "x" * 120],
    ["it/s", "s/it", "it/", "/s", "s/s", ""],
    ["]", "", "]]"],
]
SHAPED_BAR = st.lists(st.tuples(st.integers(0, len(_BAR_FIELDS) - 1), st.integers(0, 9)), max_size=2).map(
    lambda changes: "".join(
        f[next((k % len(f) for i, k in changes if i == j), 0)] for j, f in enumerate(_BAR_FIELDS)))


@pytest.mark.skipif(len(BAR_READERS) < 2, reason="trainwatch._scan is not built")
@settings(max_examples=examples(3000), deadline=None)
@given(pieces=st.lists(SHAPED_BAR, min_size=1, max_size=4),
       at=st.lists(st.tuples(st.integers(-3, 400), st.integers(-3, 400), st.integers(-3, 400)), max_size=3),
       short=st.integers(0, 3))
def test_the_native_bar_reader_is_the_reference_one(pieces: list[str], at: list[tuple[int, int, int]],
                                                   short: int) -> None:
    """Same answers from both readers at every `%|`, at any position and limit, in the data or outside it."""
    raw = "".join(pieces).encode()
    marks = [i for i in range(len(raw) - 1) if raw[i:i + 2] == b"%|"]
    at = at + [(p, raw.rfind(b"\r", 0, p) + 1, len(raw) - short) for p in marks]
    if not at:
        return
    p, seg, limit = (np.array(c, dtype=np.int64) for c in zip(*at))
    inside = (p >= 0) & (p < len(raw)) & (seg >= 0) & (limit >= 0)
    want = bars.plain_bars(raw, p[inside], seg[inside], limit[inside])
    got = BAR_READERS[1].values[0](raw, p, seg, limit)
    assert got[0][~inside].sum() == 0  # a negative position, or a bar past the data, is no bar
    ok = want[0]
    assert (got[0][inside] == ok).all()
    assert (got[1][inside][ok] == want[1][ok]).all() and (got[2][inside][ok] == want[2][ok]).all()


def _bar(n: int, total: int) -> str:
    return f" {100 * n // max(total, 1):2d}%|#         | {n}/{total} [00:01<00:09, 9.9it/s]"


def _steady_line(kind: str, n: int, epoch: str) -> str:
    """One line of a generated Trainer log: `kind` says what it holds."""
    total = 1000
    body = f"'loss': {2 - n / 2000:.4f}, 'grad_norm': 1.5, 'learning_rate': 5e-05, 'epoch': {epoch}"
    return {
        "bar": _bar(n, total) + "\r" + _bar(n + 1, total) + "\n",
        "bar+dict": _bar(n, total) + "\r" + " " * 10 + "{" + body + "}\n",
        "dict": "{" + body + "}\n",
        "v5": _bar(n, total) + "\r{" + body.replace(": ", ": '").replace(", '", "', '") + "'}\n",
        "eval bar": _bar(n % 7, 7) + "\n",
        "eval dict": "{'eval_loss': 2.5, 'epoch': " + epoch + "}\n",
        "other dict": "{'lr_scale': 1.0}\n",
        "logging": "logging_steps=10,\n",
        "banner": "  Total optimization steps = 1,000\n",
        "text": "some text\n",
        "host": "node1: heartbeat\n",  # a line the prefix stripper looks at, between a run's lines
        "bar only": _bar(n, total) + "\n",  # a non-tty bar: each redraw a line of its own
    }[kind]


STEADY_KINDS = st.sampled_from(["bar", "bar+dict", "bar+dict", "bar+dict", "dict", "v5", "eval bar",
                                "eval dict", "other dict", "logging", "banner", "text", "host", "bar only",
                                "bar only"])
EPOCHS = st.sampled_from(["0.01", "0.5", "1.0", "0.0", "0.1234", "nan", "-0.5", "2.25"])


@pytest.mark.parametrize("scanner", SCANNERS)
@settings(max_examples=examples(150), deadline=None)
@given(start=st.booleans(), steps=st.lists(st.tuples(STEADY_KINDS, st.integers(-3, 40), EPOCHS), max_size=60),
       cuts=st.lists(st.integers(0, 6000), max_size=4))
def test_steady_runs_read_over_arrays_as_line_by_line(scanner: Any, start: bool, steps: list[tuple[str, int, str]],
                                                      cuts: list[int]) -> None:
    """Runs of bars and dicts read at once (`columns.steady`, here from one line on) give the records of the
    per-line reader: steps, redraws and the state left for the lines after them, whatever the lines."""
    lines = ["***** Running training *****\n  Total optimization steps = 1,000\n"] if start else []
    n = 0
    for kind, move, epoch in steps:
        n = max(0, n + move)
        lines.append(_steady_line(kind, n, epoch))
    raw = "".join(lines).encode()
    old = columns.STEADY_MIN, columns.STEADY_MAX, scan.Scanner
    try:
        columns.STEADY_MIN, columns.STEADY_MAX, scan.Scanner = 1, 5, scanner
        got = by_bytes(SourceParser(HFConsoleAdapter("")), raw, cuts)
    finally:
        columns.STEADY_MIN, columns.STEADY_MAX, scan.Scanner = old
    assert got == by_lines(SourceParser(HFConsoleAdapter("")), raw)


def test_a_long_steady_log_is_read_in_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    taken: list[int] = []
    steady = columns.steady

    def counting(*args: Any) -> Any:
        got = steady(*args)
        if not isinstance(got, int):
            taken.append(got.end - got.start)
        return got

    monkeypatch.setattr(columns, "steady", counting)
    text = "  Total optimization steps = 1,000\n" + "".join(
        _steady_line("bar+dict", 2 * k, f"{k / 100:.2f}") for k in range(1, 301))
    adapter, records = _run(SCANNERS[-1].values[0] or SCANNERS[0].values[0], text, monkeypatch)
    assert adapter.parsed[:1] == ["  Total optimization steps = 1,000"] and len(adapter.parsed) == 1
    assert sum(taken) > 250  # the first dicts go line by line until the state settles
    steps = [r.step for r in records if isinstance(r, Sample) and r.name == "loss"]
    assert steps == [2 * k for k in range(1, 301)]
    progress = [r.step for r in records if isinstance(r, Event) and r.kind is EventKind.PROGRESS]
    assert progress == [2 * k for k in range(1, 301)]


@pytest.mark.parametrize("scanner", SCANNERS)
def test_a_bar_total_no_int64_holds_reads_as_line_by_line(scanner: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Log text is untrusted: a bar may print a total of any length. Its redraws cannot be int64 columns,
    and must not cost the chunk (or raise): they are what the per-line reader makes of them."""
    monkeypatch.setattr(scan, "Scanner", scanner)
    huge = 10**20
    raw = "".join(f"  0%|          | {k}/{huge} [00:01<00:09, 9.9it/s]\r{{'loss': 1.0, 'epoch': 0.0{k}}}\n"
                  for k in range(1, 4)).encode()
    got = by_bytes(SourceParser(HFConsoleAdapter("")), raw)
    assert got == by_lines(SourceParser(HFConsoleAdapter("")), raw)
    progress = [r for r in SourceParser(HFConsoleAdapter("")).feed_bytes(raw)
                if isinstance(r, Event) and r.kind is EventKind.PROGRESS]
    assert [(e.step, e.fields.get("total")) for e in progress] == [(1, huge), (2, huge), (3, huge)]


@pytest.mark.parametrize("scanner", SCANNERS)
def test_lines_between_a_steady_runs_lines_still_teach_the_prefix_stripper(scanner: Any,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """A run read at once skips its lines, but the lines between them that a launcher prefix may start
    still reach the prefix stripper (it trusts a host tag by how many lines it started): a later bar
    behind that tag is the Trainer's once the tag is trusted, as line by line."""
    monkeypatch.setattr(scan, "Scanner", scanner)
    lines = ["  Total optimization steps = 1,000\n"]
    for k in range(1, 41):
        lines.append("node1: heartbeat\n")
        lines.append("\r" + _bar(k, 1000) + "\r{'loss': 1.5, 'grad_norm': 1.5, 'epoch': " + f"{k / 100:.2f}" + "}\n")
    lines.append("node1: Training:" + _bar(45, 1000) + "\n")  # ms-swift names its bar
    raw = "".join(lines).encode()
    want = by_lines(SourceParser(HFConsoleAdapter("")), raw)
    assert [r[1:4] for r in want if r[0] == "Event"][-1] == (EventKind.PROGRESS, "", 82)  # the tagged bar
    assert by_bytes(SourceParser(HFConsoleAdapter("")), raw) == want


@pytest.mark.parametrize("scanner", SCANNERS)
def test_a_steady_run_starts_one_step_past_the_last_dict(scanner: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A bar that went back since the last dict: the next dict, read in a run, still gets the step after
    the last one (as `_train_step` gives it), not the bar's."""
    monkeypatch.setattr(scan, "Scanner", scanner)
    monkeypatch.setattr(columns, "STEADY_MIN", 1)
    raw = "".join(_bar(n, 1000) + "\r{'loss': 1.5, 'epoch': 0.01}\n" for n in (1, 0, 3)).encode()
    want = by_lines(SourceParser(HFConsoleAdapter("")), raw)
    assert [r[3] for r in want if r[0] == "Sample" and r[1] == "loss"] == [1, 2, 3]
    assert by_bytes(SourceParser(HFConsoleAdapter("")), raw) == want


@pytest.mark.skipif(len(BAR_READERS) < 2, reason="trainwatch._scan is not built")
@settings(max_examples=examples(1500), deadline=None)
@given(raw=st.lists(st.sampled_from([b"'", b":", b" ", b",", b"a", b"{", b"}", b"\xe9", b"\"", b"%", b"\x00",
                                     b"'loss': 1.5, ", b"x" * 300]), max_size=30).map(b"".join),
       spans=st.lists(st.tuples(st.integers(0, 2000), st.integers(0, 2000)), min_size=1, max_size=8))
def test_the_native_byte_census_is_the_reference_one(raw: bytes, spans: list[tuple[int, int]]) -> None:
    """Spans anywhere in the data, short and long (the reference counts those two ways), touching its
    start or its end: the same counts from both, marks with neighbours outside the data included."""
    from trainwatch.adapters.hf_console_columns import _ALLOWED

    n = len(raw)
    start = np.array([min(a, n) for a, _ in spans], dtype=np.int64)
    length = np.array([min(b, n - s) for (_, b), s in zip(spans, start.tolist())], dtype=np.int64)
    args = (_ALLOWED, ord(":"), ord("'"), ord(" "), ord(","))
    want = census.span_census(raw, start, length, *args)
    native = next(s.values[0] for s in SCANNERS if s.values[0] not in (None, ReferenceScanner))
    got = native.span_census(raw, start, length, *args)
    for w, g in zip(want, got):
        assert w.tolist() == g.tolist()


@pytest.mark.skipif(len(BAR_READERS) < 2, reason="trainwatch._scan is not built")
@settings(max_examples=examples(1500), deadline=None)
@given(raw=st.lists(st.sampled_from([b"{", b"\r", b"%", b"|", b"%|", b"a", b"\xe9", b"\x00", b"x" * 70]),
                    max_size=40).map(b"".join),
       needle=st.sampled_from([b"{", b"\r", b"%|", b"||", b"|||", b"%|%", b"", b"\x00"]))
def test_the_native_byte_finder_is_the_reference_one(raw: bytes, needle: bytes) -> None:
    """Needles of one byte and longer, self-overlapping ones (`||` in `|||`) and the empty one, at the
    data's ends and cut by them: the same offsets from both, each a real occurrence."""
    want = find.positions(raw, needle)
    native = next(s.values[0] for s in SCANNERS if s.values[0] not in (None, ReferenceScanner))
    got = native.positions(raw, needle)
    assert got.dtype == want.dtype == np.int64
    assert got.tolist() == want.tolist()
    assert want.tolist() == [i for i in range(len(raw)) if needle and raw.startswith(needle, i)]


def _same(got: Any, want: Any) -> None:
    """Two plans or steady runs field by field (arrays as values, NaN equal to NaN)."""
    assert type(got) is type(want)
    if got is None or isinstance(got, int):
        assert got == want
        return
    for name in got.__dataclass_fields__:
        _same_value(getattr(got, name), getattr(want, name), name)


def _same_value(a: Any, b: Any, name: str) -> None:
    if hasattr(b, "__dataclass_fields__"):
        _same(a, b)
    elif isinstance(b, tuple):
        assert len(a) == len(b), name
        for x, y in zip(a, b):
            _same_value(x, y, name)
    elif isinstance(b, np.ndarray):
        np.testing.assert_array_equal(np.asarray(a), b, err_msg=name)
        assert np.asarray(a).dtype.kind == b.dtype.kind, name
    elif isinstance(b, float):
        assert a == b or (a != a and b != b), name
    else:
        assert a == b, name


@pytest.fixture
def both_plans(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Every plan and steady run the adapter asks for is worked out natively and over numpy arrays
    (`plan_reference`, `steady_reference`), and the two must be the same."""
    if not kernels.native_in_use():
        pytest.skip("the native extension is not in use")
    seen = {"plans": 0, "runs": 0}
    plan, steady = columns.plan, columns.steady

    def plan_both(chunk: Any, lines: Any, keys: Any) -> Any:
        got = plan(chunk, lines, keys)
        core = kernels._core
        monkeypatch.setattr(kernels, "_core", lambda: None)
        try:
            want = plan(chunk, lines, keys)
        finally:
            monkeypatch.setattr(kernels, "_core", core)
        _same(got, want)
        seen["plans"] += got is not None
        return got

    def steady_both(*args: Any) -> Any:
        got = steady(*args)
        _same(got, columns.steady_reference(*args))
        seen["runs"] += not isinstance(got, int)
        return got

    monkeypatch.setattr(columns, "plan", plan_both)
    monkeypatch.setattr(columns, "steady", steady_both)
    return seen


def _console_logs() -> list[Any]:
    from pathlib import Path

    from trainwatch.adapters import detect

    root = Path(__file__).resolve().parents[2]
    paths = sorted((root / "examples" / "logs").glob("*")) + sorted((root.parent / "shared" / "corpus").rglob("*"))
    out = []
    for p in paths:
        if p.is_file() and p.suffix not in (".md", ".json") and p.stat().st_size < 64 << 20:
            head = p.read_bytes()[:65536].decode("utf-8", "replace")
            if detect(head, str(p)) == "hf_console":
                out.append(pytest.param(p, id=p.name))
    return out


@pytest.mark.parametrize("path", _console_logs())
def test_the_native_plan_is_the_reference_one_on_real_logs(path: Any, both_plans: dict[str, int]) -> None:
    parser = SourceParser(HFConsoleAdapter(""))
    with open(path, "rb") as f:
        for _ in parser.read_file(f, 1 << 16):
            pass
    parser.finish()
    assert both_plans["plans"] > 0


BARS = st.sampled_from([_bar(3, 100), _bar(4, 100), _bar(4, 100), _bar(5, 7), "Map: " + _bar(2, 9), "  %|x| 1/2 [",
                        " 50%|##| 5/10 [00:01<00:01, 9.9 examples/s]", "", "\x1b[A"])
DICTS = st.sampled_from([
    "{'loss': 1.5, 'epoch': 0.01}", "{'loss': '1.5', 'grad_norm': '2', 'epoch': '0.02'}", "{'loss': 1.5}",
    "{'eval_loss': 2.5, 'epoch': 1.0}", "{'loss': 1,234, 'epoch': 0.5}", "{'loss': 2.0, 'loss': 3.0}",
    "{'train_runtime': 5.0, 'epoch': 1.0}", "{'step': 7, 'loss': 1.0}", "{'a': {'b': 1}}",
    "{'loss': nan, 'epoch': inf}",
    "{'loss':1.0}", "{ 'loss': 1.0}", "{'loss': 1.0, 'epoch': 0.1234}", "{'loss': 1.0, 'epoch': -0.5}",
    "{'loss': 1.0, 'epoch': 0.0}", "{'loss': 1.0, 'epoch': 0.015}", "{'lr_scale': 1.0}", "{'loss': 1.0, 'x': 'é'}",
    "{'loss': 1.0, 'epoch': 1e-09}", "{'loss': 1.0, 'epoch': 0.01000005}",
    "{'loss': 95%}", "{\"loss\": 1.0}", "{'loss': [1]}", "{}", "",
])
TAILS = st.sampled_from(["", "", " {", "}", "\r" + _bar(6, 100), " " + _bar(6, 100), "\x1b[0m", "é",
                         "{'loss': 2.0}", " ***** Running Evaluation *****", " Saving model checkpoint to x"])
HEADS = st.sampled_from(["", "", "", "[rank0]: ", "node1: ", "\x1b[31m", "\r", "  ", "logging_steps=5, "])
CONSOLE_LINE = st.builds(lambda head, bars, d, tail: head + "\r".join(bars) + ("\r" if bars else "") + d + tail + "\n",
                         HEADS, st.lists(BARS, max_size=3), DICTS, TAILS)


def test_the_native_steady_runs_are_the_reference_ones(both_plans: dict[str, int]) -> None:
    text = "  Total optimization steps = 1,000\n" + "".join(
        _steady_line("bar+dict", 2 * k, f"{k / 100:.2f}") for k in range(1, 301))
    by_bytes(SourceParser(HFConsoleAdapter("")), text.encode(), [5000, 9000])
    assert both_plans["runs"] > 2


@settings(max_examples=examples(400), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(banner=st.booleans(), lines=st.lists(CONSOLE_LINE, max_size=60), cuts=st.lists(st.integers(0, 6000), max_size=3))
def test_the_native_plan_is_the_reference_one_on_any_mix(banner: bool, lines: list[str], cuts: list[int],
                                                         both_plans: dict[str, int]) -> None:
    """Bars, dicts of every shape the two readers could take differently, redraws, escape codes, launcher
    prefixes and other keywords, in any order and cut anywhere: the same plan and runs either way."""
    old = columns.STEADY_MIN
    head = "  Total optimization steps = 100\n" if banner else ""
    try:
        columns.STEADY_MIN = 2
        by_bytes(SourceParser(HFConsoleAdapter("")), (head + "".join(lines)).encode(), cuts)
    finally:
        columns.STEADY_MIN = old


@pytest.mark.usefixtures("scanner_class")
@pytest.mark.parametrize("odd", ["1e308", "5e-324"])
def test_an_epoch_whose_step_overflows_costs_no_block(odd: str) -> None:
    """An epoch printed as 1e308 is a finite float, but times the steps per epoch it is infinite (and
    5e-324 makes the steps per epoch so): the reader gives that dict no step from its epoch instead of
    raising and dropping the whole block."""
    text = "  Total optimization steps = 100\n" + "".join(
        _bar(k, 100) + "\r{'loss': " + f"{2 - k / 10}, 'epoch': " + (odd if k == 3 else f"{k / 100}") + "}\n"
        for k in range(1, 6))
    got = by_bytes(SourceParser(HFConsoleAdapter("")), text.encode())
    assert sum("loss" in r for r in got) == 5
