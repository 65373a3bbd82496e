"""The byte path (SourceParser.feed_bytes through the scanner) gives exactly the records of the line path
(decoded lines through SourceParser.feed), with either scanner and however the bytes are cut."""

from __future__ import annotations

import io
import math
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import trainwatch.scan as scan
from tests.examples import examples
from trainwatch import runner
from trainwatch.adapters import pipeline
from trainwatch.adapters.base import Adapter
from trainwatch.adapters.hf_console import HFConsoleAdapter
from trainwatch.adapters.jsonl import JsonLinesAdapter
from trainwatch.adapters.keyvalue import KeyValueAdapter
from trainwatch.adapters.pipeline import SourceParser
from trainwatch.model import Record
from trainwatch.scan.reference import Scanner as ReferenceScanner
from trainwatch.sources.files import iter_lines

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted(p for p in (ROOT / "examples/logs").glob("*") if p.suffix != ".md")
CORPUS = Path(os.environ.get("TRAINWATCH_CORPUS") or ROOT.parent / "shared" / "corpus")


def _scanners() -> list[Any]:
    out: list[Any] = [pytest.param(ReferenceScanner, id="reference")]
    try:
        from trainwatch.scan.native import Scanner as NativeScanner
    except ImportError:
        out.append(pytest.param(None, id="native", marks=pytest.mark.skip(reason="trainwatch._scan is not built")))
    else:
        out.append(pytest.param(NativeScanner, id="native"))
    return out


SCANNERS = _scanners()


@pytest.fixture(params=SCANNERS)
def scanner_class(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setattr(scan, "Scanner", request.param)
    return request.param


def key(r: Record) -> tuple[Any, ...]:
    """A record as comparable values (NaN equal to NaN, which dataclass equality is not)."""
    def norm(v: Any) -> Any:
        if isinstance(v, float) and math.isnan(v):
            return "nan"
        if isinstance(v, dict):
            return tuple(sorted((k, norm(x)) for k, x in v.items()))
        if isinstance(v, list):
            return tuple(norm(x) for x in v)
        return v
    return (type(r).__name__, *(norm(getattr(r, f)) for f in r.__slots__))  # type: ignore[union-attr]


def by_lines(parser: SourceParser, data: bytes) -> list[tuple[Any, ...]]:
    out: list[Record] = []
    for lineno, line in iter_lines(io.BytesIO(data)):
        out.extend(parser.feed(line, lineno))
    out.extend(parser.finish())
    return [key(r) for r in out]


def by_bytes(parser: SourceParser, data: bytes, cuts: list[int] = ()) -> list[tuple[Any, ...]]:  # type: ignore[assignment]
    out: list[Record] = []
    at = 0
    for cut in sorted(cuts):
        out.extend(parser.feed_bytes(data[at:cut]))
        at = cut
    out.extend(parser.feed_bytes(data[at:]))
    out.extend(parser.finish())
    assert parser.errors == 0, "an adapter raised on a chunk: its records were dropped"
    return [key(r) for r in out]


def parsers(path: Path) -> tuple[SourceParser, SourceParser]:
    return runner.open_source(path).parser, runner.open_source(path).parser


def _logs() -> list[Path]:
    found = list(EXAMPLES)
    if CORPUS.is_dir():
        found += sorted(p for p in CORPUS.iterdir() if p.suffix in (".log", ".txt", ".jsonl", ".csv", ".out"))
    return found


@pytest.mark.parametrize("path", _logs(), ids=lambda p: p.name)
def test_every_log_reads_the_same_through_bytes(path: Path, scanner_class: Any) -> None:
    a, b = parsers(path)
    if a.adapter.whole_file:
        pytest.skip("a whole-file document is not read line by line")
    data = path.read_bytes()
    expected = by_lines(a, data)
    assert expected, "the oracle read nothing: the comparison would prove nothing"
    assert by_bytes(b, data, [len(data) // 3, len(data) // 3 + 1, 2 * len(data) // 3]) == expected
    assert b.lines == data.count(b"\n") + (0 if data.endswith(b"\n") else 1)


TRACEBACK = (
    "Traceback (most recent call last):\n"
    '  File "train.py", line 10, in <module>\n'
    "    main()\n"
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
)

CONSOLE_PIECES = [
    "{'loss': 2.31, 'grad_norm': 1.5, 'learning_rate': 5e-05, 'epoch': 0.01}\n",
    "{'loss': '2.1', 'grad_norm': '1.2', 'learning_rate': '4e-05', 'epoch': '0.02'}\n",
    " 10%|#         | 10/100 [00:01<00:09, 9.9it/s]\r 11%|#         | 11/100 [00:01<00:09, 9.9it/s]",
    "\r{'loss': nan, 'epoch': 0.03}\n",
    "***** Running training *****\n  Num examples = 1,000\n  Total optimization steps = 100\n",
    "***** Running Evaluation *****\n{'eval_loss': 2.5, 'epoch': 0.5}\n",
    "Saving model checkpoint to out/checkpoint-50\n",
    "[rank1]: RuntimeError: NCCL error in: ProcessGroupNCCL.cpp\n",
    "\x1b[31mRuntimeError\x1b[0m: CUDA out of \x1b[1mmemory\x1b[0m. Tried to allocate 2.00 GiB\n",
    "[2024-01-01 10:00:00] INFO step done\n",
    "0: hello from rank zero\r\n",
    "plain text that carries nothing\n",
    "node1: hello\n",  # host tags are trusted by how many of all lines they start: skipped lines count
    "node1: {'loss': 1.5, 'epoch': 0.04}\n",
    "+++ a line no prefix starts with\n",
    "\n",
    "caf\xe9 \udcff bytes\n",
    TRACEBACK,
    # dicts the scanner and the console reader's regex could read differently (the array path must
    # leave them to `parse`), and plain ones in the shapes the array path takes
    "{'loss': 1,234, 'epoch': 0.05}\n",
    "{'loss': '95%', 'epoch': 0.05}\n",
    "{'loss': 2.0, 'loss': 3.0, 'epoch': 0.05}\n",
    "{'loss':2.0, 'epoch': 0.05}\n",
    "{'loss' : 2.0, 'epoch': 0.05}\n",
    "{'a:b': 1.0, 'loss': 2.0, 'epoch': 0.05}\n",
    "{'': 1.0, 'loss': 2.0, 'epoch': 0.05}\n",
    "{'step': 7, 'loss': 2.0, 'epoch': 0.05}\n",
    "{'loss': 2.0, 'nested': {'a': 1}, 'epoch': 0.05}\n",
    "{'loss': 2.0, 'epoch': 0.06}\r 12%|#         | 12/100 [00:01<00:09, 9.9it/s]\n",
    "{'loss': np.float64(2.0), 'epoch': 0.06}\n",
    "{'loss': 2.0, 'mode': 'train', 'epoch': 0.06}\n",
    "{'loss': 2.0, 'ok': True, 'epoch': 0.06}\n",
    "{'loss': '1_000', 'epoch': 0.06}\n",
    "{'loss': -.5e1, 'grad_norm': 5.e-1, 'learning_rate': 'nan', 'epoch': ' 0.07 '}\n",
    "{'eval_loss': 2.5, 'eval_runtime': 1.0, 'epoch': 0.07}\n",
    "{'train_runtime': 100.0, 'train_loss': 2.0, 'epoch': 1.0}\n",
    "{'loss': 2.0, 'epoch': 0.08} {'loss': 1.9, 'epoch': 0.09}\n",
    "{'loss': 2.0, 'epoch': inf}\n",
    "{'loss|x': 1.0, 'epoch': 0.1}\n",
    "  5%|5         | 5/100 [00:00<?, ?it/s]{'loss': 2.0, 'epoch': 0.05}\n",
    "  6%|6         | 6/100 [00:00<00:10, 9.1it/s]\r  7%|7         | 7/100 [00:01<00:10, 9.1it/s]"
    "                     {'loss': '2.0', 'grad_norm': '1.5', 'learning_rate': '5e-05', 'epoch': '0.07'}\n",
    "  8%|8         | 8/100 [\r{'loss': 2.2, 'epoch': 0.08}\n",
    " 50%|#####     | 50/100 [00:05<00:05, 9.9 examples/s]\n",
    " Map:  50%|#####     | 50/100 [00:05<00:05, 9.9it/s]\n",
    " 60%|######    | 60/100 [00:06<00:04, 9.9it/s]\r 50%|#####     | 5/10 [00:00<00:00, 9.9it/s]\n",
    "   2: {'loss': 2.0, 'epoch': 0.1}\n",
    "  2: {'loss': 2.0, 'epoch': 0.1}\n",
    "Epoch 1: {'loss': 2.0, 'epoch': 0.1}\n",
    "\x1b[2K 10%|#         | 10/100 [00:01<00:09, 9.9it/s]{'loss': 2.0, 'epoch': 0.1}\n",
    "{'loss': 2.0, 'epoch': 0.1, 'grad_norm': 1e999}\n",
    "{'loss': 2.0, 'global_step/max_steps': '5/100', 'epoch': 0.1}\n",
    "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:\n"
    "============================================================\n[0]:\n  exitcode  : -9 (pid: 1)\n"
    "============================================================\n",
]

JSON_PIECES = [
    '{"step": 1, "loss": 2.5, "lr": 0.001}\n',
    '{"step": 2, "loss": NaN, "time": 1700000000.5}\n',
    '{"step": 3, "loss": 2.1, "train": {"grad_norm": 1.0}}\n',
    '{"mode": "val", "epoch": 1, "loss": 0.9}\n',
    '{"step": 4, "total_steps": 100, "loss": 2.0}\n',
    '{"step": 5, "loss": .5}\n',
    '{"step": 6, "loss": -0, "acc": 1e400}\n',
    '{"step": 7, "step": 8, "loss": 1}\n',
    '  {"iter": 9, "loss": 1.5}  \r\n',
    '[rank0]: {"step": 10, "loss": 1.4}\n',
    "{'step': 11, 'loss': 1.3}\n",
    '{"step": 12, "loss": "1.2"}\n',
    '{"step": 13, "train": {"epoch": 0.1, "grad": {"norm": 1.2}}, "loss": 2}\n',
    '{"step": 14, "train": {"a": 1}, "train": {"b": 2}}\n',
    '{"step": 15, "z": {"a": 1}, "z": 3, "y": 4, "y": {"b": 5}}\n',
    '{"step": 16, "train/x": 1.5, "train": {"x": 2.5}}\n',
    '{"step": 17, "loss": {"a": 1}, "e": {}, "f": {"g": {}}}\n',
    '{"step": 18, "d": ' + "".join(f'{{"k{k}": {k}, "n": ' for k in range(9)) + "{}" + "}" * 9 + "}\n",
    '{"step": 19, "l": [1, {"m": "]"}], "s": {"t": "}\\"{"}, "u": {"v": 1}}\n',
    '{"step": 20, "o": {"global_step": 1152921504606846977, "lr": 1e-3}}\n',
    '{"step": 21, "o": {"x": NaN, "y": 1e400, "w": -0}}\n',
    '{"step": 22, "a{": {"b": 1}}\n',
    '{"step": 2, "loss": {"a": 1.5}}\n',  # a step going back: `parse` sees a training hint, no eval row
    '{"iter": 30, "step": 25, "loss": 1.1}\n',  # two step keys: `step` wins
    '{"step": 26, "time": 1700000000123.0, "_timestamp": 1700000001, "loss": 1.0}\n',  # ms; a second time
    '{"step": 3, "acc": 0.5}\n',  # back, no training hint: an evaluation row at the step reached
    '{"acc": 0.7, "time": 5.5}\n',  # no step; a small `time` is a metric
    '{"step": 27, "train": {"global_step": 26}, "loss": 0.9}\n',  # a nested step key ranks after `step`
    "not json at all\n",
    TRACEBACK,
]


def _text(pieces: list[str]) -> st.SearchStrategy[bytes]:
    return st.lists(st.sampled_from(pieces), min_size=1, max_size=30).map(
        lambda xs: "".join(xs).encode("utf-8", "surrogateescape"))


def _cuts(data: bytes) -> st.SearchStrategy[list[int]]:
    return st.lists(st.integers(0, len(data)), max_size=8)


@pytest.mark.parametrize("scanner", SCANNERS)
@pytest.mark.parametrize("adapter_class,pieces", [
    (HFConsoleAdapter, CONSOLE_PIECES), (JsonLinesAdapter, JSON_PIECES), (KeyValueAdapter, CONSOLE_PIECES),
], ids=["hf_console", "jsonl", "keyvalue"])
@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_random_cuts_give_the_same_records(adapter_class: type[Adapter], pieces: list[str], scanner: Any,
                                           data: st.DataObject, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scan, "Scanner", scanner)
    raw = data.draw(_text(pieces))
    cuts = data.draw(_cuts(raw))
    expected = by_lines(SourceParser(adapter_class("")), raw)
    assert by_bytes(SourceParser(adapter_class("")), raw, cuts) == expected


def test_signature_scanner_is_skipped_on_lines_without_keywords(scanner_class: Any,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The point of the byte path: lines that carry no keyword never reach the signature scanner."""
    seen: list[int] = []
    parser = SourceParser(HFConsoleAdapter(""))
    assert parser.scanner is not None
    feed = parser.scanner.feed
    monkeypatch.setattr(parser.scanner, "feed", lambda line, n: seen.append(n) or feed(line, n))
    raw = ("{'loss': 1.0, 'epoch': 0.1}\n" * 50 + TRACEBACK + "{'loss': 1.0, 'epoch': 0.2}\n" * 50).encode()
    records = parser.feed_bytes(raw) + parser.finish()
    assert seen == [51, 52, 53, 54, 55]  # the traceback's lines and the line that ended it
    assert any(getattr(r, "kind", None) is not None and r.kind.value == "traceback" for r in records)


def test_busy_follows_open_blocks() -> None:
    from trainwatch.adapters.signatures import SignatureScanner

    s = SignatureScanner("x")
    assert not s.busy
    s.feed("Traceback (most recent call last):", 1)
    assert s.busy
    s.feed('  File "a.py", line 1, in <module>', 2)
    s.feed("ValueError: bad", 3)
    s.feed("next line", 4)
    assert not s.busy


def test_adapters_without_parse_chunk_get_every_line() -> None:
    """The bridge: a third-party adapter with only `parse` sees every decoded line, prefixes stripped."""
    class Plugin(Adapter):
        name = "plugin"
        description = "test"
        example = ""

        def __init__(self, source: str = "") -> None:
            super().__init__(source)
            self.seen: list[tuple[int, str]] = []

        @classmethod
        def score(cls, head: str, path: str) -> float:
            return 0.0

        def parse(self, line: str, lineno: int) -> list[Record]:
            self.seen.append((lineno, line))
            return []

    adapter = Plugin("p")
    parser = SourceParser(adapter)
    assert not pipeline.has_parse_chunk(adapter)
    parser.feed_bytes(b"a\r\n[rank0]: b\n\x1b[1mc\x1b[0m\nd")
    parser.finish()
    assert adapter.seen == [(1, "a\r"), (2, "b"), (3, "c"), (4, "d")]


def test_lines_the_adapter_never_sees_still_count_for_the_prefix_stripper(scanner_class: Any) -> None:
    """A host tag is trusted only when it starts enough of all lines, blank ones included: the byte path
    skips those lines, so it must still count them, or `node1: Training:` would lose its tag and its bar
    would be taken for the trainer's."""
    raw = (b"node1: hello\n\n\n\n"
           b"node1: Training:  10%|#         | 10/100 [00:01<00:09, 9.9it/s]\n"
           b"{'loss': 1.0, 'epoch': 0.5}\n")
    expected = by_lines(SourceParser(HFConsoleAdapter("")), raw)
    assert by_bytes(SourceParser(HFConsoleAdapter("")), raw) == expected
    with_tags = raw.replace(b"\n\n\n\n", b"\nnode1: a\nnode1: b\n")
    assert by_lines(SourceParser(HFConsoleAdapter("")), with_tags) != expected  # the case is a real one


@pytest.mark.parametrize("path", _logs(), ids=lambda p: p.name)
def test_reading_a_file_with_the_scanner_a_block_ahead_gives_the_same_records(path: Path) -> None:
    """`read_file` scans the next block on another thread while this one is read: the records are those
    of the blocks fed one after the other (small blocks, so there are many of them)."""
    a, b = parsers(path)
    if a.adapter.whole_file:
        pytest.skip("a whole-file document is not read in blocks")
    data = path.read_bytes()
    block = max(1, len(data) // 37)
    expected = by_bytes(a, data, list(range(block, len(data), block)))
    got: list[Record] = []
    for batch in b.read_file(io.BytesIO(data), block):
        got.extend(batch.records())
    got.extend(b.finish())
    assert [key(r) for r in got] == expected


def test_a_line_longer_than_the_scanner_keeps_reads_alike_by_every_reader(tmp_path: Path) -> None:
    """A finished line over MAX_LINE (a dump, then a dict) is cut where the scanners cut it by every reader:
    the byte path, the line path's `iter_lines`, the local follower and the remote node's stream. So
    `check` and `tail` agree on it: the dict past the cut is not read. (A line of `\r` redraws is handed
    over live in pieces as it grows, so there every piece is read.)"""
    from trainwatch.cli.stream import _FileTail
    from trainwatch.scan.chunk import MAX_LINE
    from trainwatch.sources.tail import FileFollower

    long_line = "config: " + "x" * (MAX_LINE + 500) + " {'loss': 9.5, 'epoch': 0.5}"
    text = "{'loss': 2.0, 'epoch': 0.1}\n" + long_line + "\r\n" + long_line + "\n{'loss': 1.0, 'epoch': 0.2}\n"
    raw = text.encode()
    expected = by_bytes(SourceParser(HFConsoleAdapter("")), raw)
    assert by_lines(SourceParser(HFConsoleAdapter("")), raw) == expected
    assert not any(9.5 in r for r in expected)  # the dicts past the cut are not read by either

    want = [(n, t) for n, t in iter_lines(io.BytesIO(raw))]
    assert [len(t.encode()) for _, t in want] == [27, MAX_LINE + 1, MAX_LINE, 27]  # the \r of \r\n kept
    path = tmp_path / "run.log"
    path.write_bytes(raw)
    follower = FileFollower(path)
    got = []
    while True:
        got.extend(follower.poll().lines)
        if not follower.more:
            break
    assert got == want
    out: list[dict[str, Any]] = []

    class Sink:
        def write(self, obj: dict[str, Any]) -> None:
            out.append(obj)

    reader = _FileTail(str(path))
    for _ in range(8):
        reader.read(Sink())  # type: ignore[arg-type]
    assert [(o["lineno"], o["line"]) for o in out if "line" in o] == want


def test_a_last_line_without_a_newline_is_cut_as_the_scanner_finishes_it() -> None:
    """The scanner's last line has no terminator, so a `\r` ending it past MAX_LINE bytes is not kept:
    `iter_lines` gives the same first MAX_LINE bytes (a `\r` within them stays, as in a short line)."""
    from trainwatch.scan import Scanner
    from trainwatch.scan.chunk import MAX_LINE

    for tail in (b"x" * MAX_LINE + b"\r", b"x" * (MAX_LINE + 7) + b"\r", b"x" * 5 + b"\r"):
        raw = b"a\n" + tail
        scanner = Scanner([])
        scanner.feed(raw)
        last = scanner.finish()
        assert len(last) == 1
        assert list(iter_lines(io.BytesIO(raw)))[-1] == (2, last.line(0).decode())


def test_a_file_truncated_inside_a_long_line_is_read_again_from_its_first_line(tmp_path: Path) -> None:
    """The local follower drops the rest of a line held past its limit; a truncation (or rotation) in the
    middle of one ends it, so the new text's first line is read, numbered 1."""
    from trainwatch.sources.files import MAX_LINE as HELD
    from trainwatch.sources.tail import FileFollower

    path = tmp_path / "run.log"
    path.write_bytes(b"")
    follower = FileFollower(path)

    def drain() -> list[tuple[int, str]]:
        got: list[tuple[int, str]] = []
        while True:
            got.extend(follower.poll().lines)
            if not follower.more:
                return got

    drain()
    with path.open("ab") as f:
        f.write(b"x" * (HELD + 100))  # no line end yet
    assert [n for n, _ in drain()] == [1]
    os.truncate(path, 0)
    drain()
    with path.open("ab") as f:
        f.write(b"a\nb\n")
    assert drain() == [(1, "a"), (2, "b")]


@settings(max_examples=examples(200), deadline=None)
@given(pieces=st.lists(st.binary(max_size=9), max_size=12), size=st.integers(1, 20))
def test_backlog_pieces_are_joined_into_blocks_of_at_least_the_size(pieces: list[bytes], size: int) -> None:
    """`tail` joins its backlog's reads into blocks of BACKLOG_BLOCK before the byte path reads them:
    the same bytes, every block but the last at least `size` and made of whole pieces."""
    blocks = list(pipeline.joined(pieces, size))
    assert b"".join(blocks) == b"".join(pieces)
    assert all(len(b) >= size for b in blocks[:-1]) and all(blocks)
    ends = {sum(len(p) for p in pieces[:i]) for i in range(len(pieces) + 1)}
    assert all(sum(len(b) for b in blocks[:i]) in ends for i in range(len(blocks) + 1))


def test_a_read_backlog_leaves_its_source_no_block_sized_buffer(scanner_class: Any, tmp_path: Path) -> None:
    """The native scanner builds each chunk in the last one's buffers. Once a backlog's blocks are read
    (`read_blocks`: check's whole file, one poll of tail's backlog) they are given back, or a check of
    many files held a block's worth per file until its end, and a follower for as long as it follows.
    Right after a feed the buffers are there: `release` gives them back and says their size."""
    path = tmp_path / "run.jsonl"
    path.write_bytes(b"".join(b'{"step": %d, "loss": 1.5}\n' % i for i in range(1, 40001)))
    data = path.read_bytes()
    fed = scanner_class([])
    fed.feed(data)
    assert fed.release() >= (0 if scanner_class is ReferenceScanner else len(data))
    assert fed.release() == 0
    parser = runner.open_source(path).parser
    with path.open("rb") as f:
        rows = sum(batch.size for batch in parser.read_file(f, 1 << 16))
    assert rows == 40000
    assert parser._bytes is not None and parser._bytes.scanner.release() == 0


def test_reading_blocks_ahead_takes_no_piece_past_the_end(tmp_path: Path) -> None:
    """`read_blocks` stops at the first empty piece; the scans queued ahead of the caller (READ_AHEAD)
    take nothing after it, so a piece past the end is neither read nor fed to the scanner."""
    path = tmp_path / "run.jsonl"
    path.write_bytes(b'{"step": 0, "loss": 1.6}\n')  # what the format is told by
    parser = runner.open_source(path).parser
    pieces = iter([b'{"step": 1, "loss": 1.5}\n', b"", b'{"step": 2, "loss": 1.4}\n', b'{"step": 3, "loss": 1.3}\n'])
    rows = sum(batch.size for batch in parser.read_blocks(pieces))
    assert rows == 1
    assert next(pieces) == b'{"step": 2, "loss": 1.4}\n'


def test_nul_padding_is_dropped_and_the_text_after_it_is_read(tmp_path: Path) -> None:
    from trainwatch.runner import open_source
    from trainwatch.sources.files import looks_binary

    body = "".join(f"step {s:5d} | loss {4.5 - s / 1000:.4f} | ppl 374.1 | lr 2.99e-04\r\n"
                   for s in range(710, 800, 10))
    padded = b"\x00" * 11000 + body.encode()
    assert not looks_binary(padded)
    assert looks_binary(b"\x7fELF\x02\x01\x01\x00\x00\x00" + b"abc" * 10)  # scattered NULs: binary still
    path = tmp_path / "train.log"
    path.write_bytes(padded)
    src = open_source(path)
    assert src.format == "keyvalue"
    got = [r for r in src.parser.feed_bytes(padded) + src.parser.finish() if getattr(r, "name", None) == "loss"]
    assert [(r.step, r.value) for r in got][:2] == [(710, 3.79), (720, 3.78)]


def test_a_parenthesised_step_in_a_coloured_crlf_terminal_capture_dates_its_loss(scanner_class: Any) -> None:
    """`[ESC[34m2024-07-18 18:59:44ESC[0m] (step=0000013) Train Loss: 0.5001, Train Steps/Sec: 0.51\\r\\n`: the
    colour codes and the carriage returns come off, the `(step=N)` in parentheses is the step, and the loss
    after it is read at that step (the `)` that closed the step had hidden it)."""
    lines = [f"[\x1b[34m2024-07-18 19:{s // 60:02d}:{s % 60:02d}\x1b[0m] (step={s:07d}) "
             f"Train Loss: {0.6 - s / 1e4:.4f}, Train Steps/Sec: 0.51\r\n" for s in range(13, 13 * 9, 13)]
    got = by_bytes(SourceParser(KeyValueAdapter("x")), "".join(lines).encode())
    losses = [(r[3], r[2]) for r in got if r[0] == "Sample" and r[1] == "Train Loss"]
    assert losses == [(s, round(0.6 - s / 1e4, 4)) for s in range(13, 13 * 9, 13)]
