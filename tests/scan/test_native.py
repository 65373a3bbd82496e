"""The Rust scanner (trainwatch._scan) on the contract's cases, small inputs with known answers."""

from __future__ import annotations

import math
import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

pytest.importorskip("trainwatch._scan", reason="the native scanner is not built (pip install . needs Rust)")

from trainwatch.scan.chunk import MAX_LINE, Chunk, concat
from trainwatch.scan.native import Scanner


def scan(data: bytes, keywords: list[str] | None = None, cuts: list[int] | None = None) -> tuple[Chunk, Scanner]:
    """Feed `data` cut at `cuts` (one feed when None), finish, and join the chunks."""
    scanner = Scanner(keywords or [])
    bounds = [0, *sorted(cuts or []), len(data)]
    chunks = [scanner.feed(data[a:b]) for a, b in zip(bounds, bounds[1:])]
    chunks.append(scanner.finish())
    return concat(chunks), scanner


def entries(chunk: Chunk, scanner: Scanner) -> list[dict[str, float]]:
    out: list[dict[str, float]] = [{} for _ in range(len(chunk.dict_line))]
    for d, k, v in zip(chunk.ent_dict, chunk.ent_key, chunk.ent_value):
        out[int(d)][scanner.keys[int(k)]] = float(v)
    return out


def tokens(chunk: Chunk, scanner: Scanner) -> list[tuple[str, float]]:
    return [(scanner.keys[int(k)], float(v)) for k, v in zip(chunk.kv_key, chunk.kv_value)]


def test_tqdm_redraws_stay_in_one_line_and_the_last_segment_is_visible() -> None:
    data = b" 10%|#   | 1/10 [00:01]\r 20%|##  | 2/10 [00:02]\r      \r\n"
    c, _ = scan(data)
    assert len(c) == 1 and c.line_end.tolist() == [len(data) - 2]
    assert c.visible(0) == b" 20%|##  | 2/10 [00:02]\r      "
    assert (c.prog_line.tolist(), c.prog_n.tolist(), c.prog_total.tolist()) == ([0], [2], [10])


def test_tokens_are_read_only_in_the_visible_segment() -> None:
    c, s = scan(b"loss: 9 | old\rstep 3 | loss: 1.5 | lr=2e-5\n")
    assert tokens(c, s) == [("loss", 1.5), ("lr", 2e-5)]
    assert c.kv_pos.tolist() == [c.line_start[0] + 23, c.line_start[0] + 35]


def test_partial_lines_wait_for_their_newline_across_feeds() -> None:
    s = Scanner(["Traceback"])
    a = s.feed(b"{'loss': 1.0}\nTrace")
    assert len(a) == 1 and s.pending == 5
    b = s.feed(b"back (most")
    assert len(b) == 0 and (b.first_lineno, b.base_offset) == (2, 14) and s.pending == 15
    c = s.feed(b" recent call last):\r\nnext")
    assert (c.first_lineno, c.line(0), c.kw_line.tolist(), c.kw_id.tolist()) == (
        2, b"Traceback (most recent call last):", [0], [0])
    assert c.data == b"Traceback (most recent call last):\r\n"
    d = s.finish()
    assert (d.first_lineno, d.line(0), s.pending) == (3, b"next", 0)
    assert len(s.finish()) == 0


def test_nan_infinity_and_quoted_transformers_5_values() -> None:
    c, s = scan(b"{'loss': NaN, 'grad_norm': Infinity, 'x': -inf, 'epoch': '1.0', 'lr': \"2e-05\", 'tag': 'v5'}\n")
    got = entries(c, s)[0]
    assert math.isnan(got.pop("loss"))
    assert got == {"grad_norm": math.inf, "x": -math.inf, "epoch": 1.0, "lr": 2e-05}
    assert s.keys == ["loss", "grad_norm", "x", "epoch", "lr"]  # 'tag' carries no number: never interned


def test_thousands_separators_and_percent() -> None:
    c, s = scan(b"{'tokens': 1,234,567, 'acc': 95.5%} seen: 12,345 | bad: 1,2345 | n=1,000.5\n")
    assert entries(c, s) == [{"tokens": 1234567.0, "acc": 95.5}]
    assert tokens(c, s) == [("seen", 12345.0), ("bad", 1.0), ("n", 1000.5)]


def test_nested_objects_are_flattened_and_lists_skipped() -> None:
    line = b'{"step": 10, "train": {"loss": 0.5, "g": {"n": 2}}, "eval": [1, {"x": "]"}]} {"a": 1}\n'
    c, s = scan(line)
    assert entries(c, s) == [{"step": 10.0, "train/loss": 0.5, "train/g/n": 2.0}, {"a": 1.0}]
    assert c.dict_start.tolist() == [0, line.index(b'{"a"')]
    assert c.dict_end.tolist() == [line.index(b"]}") + 2, len(line) - 1]


def test_deep_nesting_neither_overflows_nor_slows_down() -> None:
    c, _ = scan(b"{'a': " + b"[" * 10_000 + b"\n" + b"{'a': " * 100_000 + b"\n" + b'{"a": [' * 100_000 + b"\n")
    assert c.dict_line.size == 0
    line = b"{'a': " * 10_000 + b"1" + b"}" * 10_000
    c, s = scan(line + b"\n")
    assert c.dict_end.tolist() == [len(line)] and s.keys == []  # the number lies below the 7 levels kept


def test_multi_word_keys_joined_by_single_spaces() -> None:
    line = b" iteration 10/500 | consumed samples: 640 | lm loss: 2.3E+00 | a b c d e: 1 | x  y: 2 |\n"
    c, s = scan(line)
    assert tokens(c, s) == [("consumed samples", 640.0), ("lm loss", 2.3), ("b c d e", 1.0), ("y", 2.0)]


def test_keys_are_interned_once_and_ids_stay_stable() -> None:
    s = Scanner([])
    a = s.feed(b"loss: 1 {'lr': 2, 'loss': 3}\n")
    assert s.keys == ["lr", "loss"] and a.ent_key.tolist() == [0, 1] and a.kv_key.tolist() == [1]
    b = s.feed(b"{'new': 1} lr=4\n")
    assert s.keys == ["lr", "loss", "new"] and b.ent_key.tolist() == [2] and b.kv_key.tolist() == [0]


def test_invalid_utf8_never_breaks_anything_and_keys_decode_with_replacement() -> None:
    c, s = scan(b"\xff\xfe{'\xffk': 1.5}\x80\n\xc0 loss: 2\n", ["\u00e9"])
    assert len(c) == 2 and entries(c, s) == [{"\ufffdk": 1.5}] and tokens(c, s) == [("loss", 2.0)]
    assert c.kw_line.size == 0


def test_keywords_one_hit_per_line_and_keyword() -> None:
    c, _ = scan(b"out of memory; out of memory\nnothing\nTraceback out of memory\n", ["Traceback", "out of memory"])
    assert list(zip(c.kw_line.tolist(), c.kw_id.tolist())) == [(0, 1), (2, 0), (2, 1)]
    assert (c.kw_line.dtype, c.kw_id.dtype) == (np.int64, np.int32)


def test_a_2_mib_line_is_one_line_cut_to_its_first_mib_however_it_is_fed() -> None:
    head = b"Traceback {'a': 1} loss: 2 | 3/4 "
    tail = b"out of memory {'b': 5} lr: 6 | 7/8"
    line = head + b"x" * (2 * MAX_LINE - len(head) - len(tail)) + tail
    data = line + b"\r\nnext: 3\n"
    whole, s = scan(data, ["Traceback", "out of memory"])
    assert len(whole) == 2 and whole.line_end.tolist() == [len(line), len(data) - 1]
    assert whole.kw_id.tolist() == [0] and entries(whole, s) == [{"a": 1.0}] and whole.prog_n.tolist() == [3]
    assert tokens(whole, s) == [("loss", 2.0), ("next", 3.0)]
    assert len(whole.data) == MAX_LINE + len(b"\r\nnext: 3\n")
    assert whole.line(0) == line[:MAX_LINE] and whole.line(1) == b"next: 3"
    for cuts in ([5, MAX_LINE - 3, MAX_LINE + 10, len(line), len(line) + 1], [len(line) + 1]):
        assert whole.differences(scan(data, ["Traceback", "out of memory"], cuts)[0]) == []


def test_the_held_partial_line_is_capped() -> None:
    s = Scanner([])
    s.feed(b"a" * (MAX_LINE - 1))
    s.feed(b"b" * 100)
    assert s.pending == MAX_LINE


def test_types_and_arguments() -> None:
    s = Scanner()
    with pytest.raises(TypeError):
        s.feed("text")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        Scanner([b"bytes"])  # type: ignore[list-item]
    c = s.feed(b"")
    assert len(c) == 0 and c.line_start.dtype == np.int64 and c.ent_value.dtype == np.float64


def test_the_gil_is_released_while_scanning() -> None:
    line = b"{'loss': 1.25, 'grad_norm': 0.5, 'learning_rate': 2e-05, 'epoch': 0.01} step: 3 | lr=1e-4\n"
    data = line * 200_000
    t = time.perf_counter()
    Scanner(["out of memory"]).feed(data)
    # Long enough that the edges (a switch interval or two) are a small part of it, on any machine.
    data *= max(1, min(16, math.ceil(0.4 / (time.perf_counter() - t))))
    s = Scanner(["out of memory"])
    stamps: list[float] = []
    window: list[float] = []
    done = threading.Event()

    def work() -> None:
        window.append(time.perf_counter())
        s.feed(data)
        window.append(time.perf_counter())
        done.set()

    worker = threading.Thread(target=work)
    worker.start()
    while not done.is_set():
        stamps.append(time.perf_counter())
    worker.join()
    start, end = window
    # At either edge the worker holds the GIL for a while (switch intervals, building the Chunk); the
    # middle half of the window is the scan itself, where a GIL-holding scanner lets nothing run.
    quarter = (end - start) / 4
    inside = [t for t in stamps if start + quarter < t < end - quarter]
    assert inside, f"no Python ran in another thread during the {end - start:.2f}s the scanner worked"


@pytest.mark.parametrize(("setting", "expected"), [("reference", "reference"), ("native", "native")])
def test_an_environment_variable_picks_the_scanner(setting: str, expected: str) -> None:
    env = {**os.environ, "TRAINWATCH_SCANNER": setting}
    out = subprocess.run([sys.executable, "-c", "from trainwatch.scan import implementation, Scanner; "
                          "print(implementation(), type(Scanner([]).feed(b'a\\n')).__name__)"],
                         capture_output=True, text=True, env=env, timeout=60)
    assert out.stdout.split() == [expected, "Chunk"], out.stderr


def test_forcing_a_missing_native_scanner_is_one_clear_error() -> None:
    env = {**os.environ, "TRAINWATCH_SCANNER": "native"}
    code = ("import sys; sys.modules['trainwatch._scan'] = None\n"
            "from trainwatch.errors import UsageError\n"
            "from trainwatch.scan import Scanner\n"
            "try:\n    Scanner([])\nexcept UsageError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 0 and "not built" in out.stdout and len(out.stdout.strip().splitlines()) == 1
