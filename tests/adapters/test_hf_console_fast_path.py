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
from hypothesis import given, settings
from hypothesis import strategies as st

import trainwatch.scan as scan
from trainwatch.adapters import hf_console_columns as columns
from trainwatch.adapters.hf_console import HFConsoleAdapter
from trainwatch.adapters.pipeline import SourceParser
from trainwatch.model import Event, EventKind, Sample

from .test_byte_path import SCANNERS, by_bytes, by_lines


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
    assert len(adapter.parsed) == 1 and adapter.parsed[0].endswith(line.split("\x1b[2K")[-1])
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


@settings(max_examples=400, deadline=None)
@given(parts=BAR_PARTS)
def test_plain_bars_read_only_what_last_bar_reads_alike(parts: tuple[str, ...]) -> None:
    """The array reader of tqdm bars answers only for bars `_last_bar` reads the same way at once."""
    text = "".join(parts)
    raw = text.encode()
    p = raw.rfind(b"%|")
    if p < 0:
        return
    seg = raw.rfind(b"\r", 0, p) + 1
    buf = np.frombuffer(raw, dtype=np.uint8)
    ok, n, m = columns.plain_bars(buf, np.array([p]), np.array([seg]), np.array([len(raw)]))
    if ok[0]:
        assert HFConsoleAdapter._last_bar(text, 0, len(text)) == ("", int(n[0]), int(m[0]))


def test_plain_bars_take_the_trainers_own_bars() -> None:
    text = "  5%|#         | 5/100 [00:01<00:09, 9.9it/s]\r 45%|####5     | 45/100 [00:05<00:06, 8.8it/s]"
    raw = text.encode()
    p = raw.rfind(b"%|")
    ok, n, m = columns.plain_bars(np.frombuffer(raw, dtype=np.uint8), np.array([p]),
                                  np.array([raw.rfind(b"\r") + 1]), np.array([len(raw)]))
    assert ok.tolist() == [True] and (int(n[0]), int(m[0])) == (45, 100)
