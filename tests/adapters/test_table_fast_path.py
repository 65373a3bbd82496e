"""The template reader's table rows read from the bytes (trainwatch/adapters/table_rows.py) give exactly
the records of the line path: names, steps, values, line numbers, events, and what the pipeline drops
(a row repeated whole), on table logs of the shapes real loops print."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

import trainwatch.scan as scan
from tests.adapters.test_byte_path import SCANNERS, by_bytes, by_lines
from trainwatch.adapters.pipeline import SourceParser
from trainwatch.adapters.template import TemplateAdapter
from trainwatch.scan import kernels
from trainwatch.scan.reference import Scanner as ReferenceScanner
from trainwatch.scan.reference import kernels as ref

HEADER = f"{'epoch':>5}  {'iter':>8}  {'loss':>9}  {'lr':>9}  {'grad_norm':>9}  {'acc':>7}\n"


def _row(rng: random.Random, epoch: int, it: int) -> str:
    loss = rng.choice((f"{rng.uniform(0.5, 3):.{rng.choice((3, 4, 5))}f}", f"{rng.uniform(0.5, 3):.3e}"))
    return f"{epoch:>5}  {it:>8}  {loss:>9}  {1e-4:>9.2e}  {rng.uniform(0.5, 2):>9.3f}  {rng.random():>7.4f}\n"


def table_log(seed: int) -> bytes:
    """A table under a header printed again each epoch, with what real table logs hold between rows."""
    rng = random.Random(seed)
    out = ["Loading data...\n", "model: resnet18, 11.2M parameters\n", HEADER]
    it = 0
    for epoch in range(1, 7):
        restart = epoch >= 4  # the iteration counter starts again each epoch from here on
        if restart:
            it = 0
        for _ in range(rng.randint(20, 60)):
            it += 1
            out.append(_row(rng, epoch, it))
            roll = rng.random()
            if roll < 0.03:
                out.append("\n")  # a blank line
            elif roll < 0.05:
                out.append(out[-1] if out[-1].strip() else _row(rng, epoch, it))  # a row printed twice
            elif roll < 0.07:
                out.append(f"{epoch:>5}  {it:>8}  {'nan':>9}  {1e-4:>9.2e}  {'NaN':>9}  {'inf':>7}\n")
            elif roll < 0.08:
                out.append(f"{epoch:>5}  {it:>8}  2.5\n")  # a row cut short
            elif roll < 0.09:
                out.append(f"{epoch:>5}  {'nan':>8}  2.5  1e-4  1.0  0.5\n")  # a counter that is no number
            elif roll < 0.10:
                out.append(f"{epoch:>5}  {it:>8}  2.5%  1e-4  1.0  0.5\n")
            elif roll < 0.11:
                out.append(f"{epoch:>5}\t{it}\t2.5\t1e-4\t1.0\t0.5\r\n")
            elif roll < 0.12:
                out.append(f"{epoch:>5}  {it:>8}  -inf  1e-4  1.0  0.5\n")
            elif roll < 0.13:
                out.append(f"Epoch {epoch}: saving checkpoint to ckpt/{it}.pt\n")  # prose between rows
            elif roll < 0.14:
                out.append(f"val_loss: {rng.uniform(1, 2):.4f}, val_acc: {rng.random():.3f}\n")
        out.append(f"epoch {epoch} done in {rng.uniform(50, 60):.1f}s\n")
        if epoch == 3:  # a header that changes mid-file: other columns, in another order
            out.append("Epoch  step  train_loss  val_loss  total_time\n")
            for k in range(rng.randint(10, 30)):
                out.append(f"  {epoch}  {k * 10}  {rng.uniform(1, 2):.4f}  {rng.uniform(1, 2):.4f}  {k * 1.5:.1f}\n")
        out.append(HEADER)
    out.append("RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB\n")
    out.append(_row(rng, 9, 1).rstrip("\n"))  # the last line cut off, no newline
    return "".join(out).encode()


def other_tables() -> list[bytes]:
    """Tables whose rows the fast path must leave alone or read with the state the lines around set."""
    return [
        b"epoch  loss  acc\n" + b"".join(b"%d  %.3f  0.5\n" % (e, 2.0 / (e + 1)) for e in range(0, 30)),
        b"epoch  loss  total\n" + b"".join(b"%d  %.3f  %d\n" % (e, 2.0 / e, e * 7) for e in range(1, 30)),
        b"step  L  L_ce\n" + b"".join(b"%d  %.3f  0.5\n" % (s, 2.0 / s) for s in range(1, 30)),
        b"metric  train  val\n" + b"".join(b"loss  %.3f  0.5\nnan  1  2\n" % (2.0 / s) for s in range(1, 30)),
        b"Epoch 1\n" + b"iter  loss\n" + b"".join(b"%d  %.3f\n" % (s, 2.0 / s) for s in range(1, 30))
        + b"Epoch 1\n" + b"".join(b"%d  %.3f\n" % (s, 2.0 / s) for s in range(1, 30)),
        b"| epoch | loss |\n" + b"".join(b"| %d | %.3f |\n" % (e, 2.0 / e) for e in range(1, 30)),
        b"loss  acc\n" + b"".join(b"%.3f  0.5\n" % (2.0 / s) for s in range(1, 30)),
        b"ep  batch  loss\n" + b"".join(b"%d  %d  %.2f\n" % (e, b, 1.0) for e in range(3) for b in (0, 5, 10, 5)),
        # an epoch that logged only its batch 0 still moves the count on
        b"epoch  batch  loss\n" + b"".join(b"%d  %d  1.0\n" % eb for eb in ((0, 0), (1, 0), (2, 0), (2, 3))),
        # the same row again after a blank line: a repeat, though the blank line ends the run
        b"step  loss\n1  0.5\n2  0.4\n\n2  0.4\n\n3  0.3\n",
        # an epoch table that counts from 0, then a bar whose step counts epochs from where the log does
        b"epoch  loss  acc\n" + b"".join(b"%d  %.3f  0.5\n" % (e, 2.0 / (e + 1)) for e in range(0, 5))
        + b"Epoch 2:  50%|#####     | 5/10 [00:01<00:01, 4.0it/s, loss=0.5]\n",
        # `Epoch 1` after epoch 2 logged rows: another training in the same log
        b"Epoch 1\niter  loss\n1  0.9\n2  0.8\nEpoch 2\n3  0.7\n4  0.6\nEpoch 1\n1  0.95\n2  0.85\n",
        # host tags are trusted by how many of all lines they start: the rows count
        b"step  loss\n" + b"".join(b"%d  %.3f\n" % (s, 1.0 / s) for s in range(1, 40))
        + b"".join(b"gpu-node1:   %d  %.3f\n" % (s, 0.5) for s in range(40, 100)),
    ]


def _parser() -> SourceParser:
    return SourceParser(TemplateAdapter("t.log"))


def state(parser: SourceParser) -> str:
    """What the reader and the prefix stripper hold after reading: the next lines read by it."""
    held = {k: v for k, v in vars(parser.adapter).items() if k not in ("_plan_of", "_plan", "json")}
    return repr((sorted(held.items()), sorted(vars(parser.prefixes).items())))


def both(data: bytes, cuts: list[int]) -> None:
    """The records and the state after them are the line path's."""
    lines, chunks = _parser(), _parser()
    assert by_bytes(chunks, data, cuts) == by_lines(lines, data)
    assert state(chunks) == state(lines)


@pytest.fixture(params=SCANNERS)
def scanner_class(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Each scanner, and with the reference scanner the reference kernel too (as TRAINWATCH_SCANNER=reference
    runs), so the regular-expression reading of the rows is held to the line path as the native one is."""
    monkeypatch.setattr(scan, "Scanner", request.param)
    if request.param is ReferenceScanner:
        monkeypatch.setattr(kernels, "_core", lambda: None)
    return request.param


@pytest.mark.parametrize("seed", range(6))
def test_table_rows_read_from_bytes_are_the_line_paths(seed: int, scanner_class: Any) -> None:
    data = table_log(seed)
    expected = by_lines(_parser(), data)
    assert sum(1 for r in expected if r[0] == "Sample") > 500
    rng = random.Random(seed)
    cuts = sorted(rng.randrange(len(data)) for _ in range(rng.randint(0, 5)))
    assert by_bytes(_parser(), data, cuts) == expected
    both(data, cuts)


@pytest.mark.parametrize("i", range(len(other_tables())))
def test_tables_the_fast_path_reads_with_care_read_alike(i: int, scanner_class: Any) -> None:
    data = other_tables()[i]
    both(data, [len(data) // 2])


def test_rows_are_read_without_the_line_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """Most rows of a table log never reach `TemplateAdapter.parse`: they are read as a run."""
    calls = 0
    parse = TemplateAdapter.parse

    def counted(self: TemplateAdapter, line: str, lineno: int) -> Any:
        nonlocal calls
        calls += 1
        return parse(self, line, lineno)

    monkeypatch.setattr(TemplateAdapter, "parse", counted)
    data = table_log(0)
    got = by_bytes(_parser(), data)
    assert got
    assert calls < data.count(b"\n") // 4


CELLS = ["0", "12", "-3", "+4", "1.5", "-.5", "5.", ".5e3", "1e400", "-1e-400", "2.5E+07", "nan", "NaN",
         "-inf", "Inf", "+nan", "007", "1.7976931348623157e308", "4.9e-324",
         # no cells of a plain row
         "nan.0", "5%", "1e", "e5", ".", "-", "1-2", "inf5", "NAN", "1.2.3", "0x10", "1_0", "Infinity"]


@pytest.mark.parametrize("seed", range(40))
def test_the_native_kernel_reads_the_cells_the_reference_reads(seed: int) -> None:
    ext = kernels._core()
    if ext is None:
        pytest.skip("trainwatch._scan is not built")
    rng = random.Random(seed)
    width = rng.randint(1, 4)
    lines = []
    for _ in range(rng.randint(0, 12)):
        cells = [rng.choice(CELLS[:19] if rng.random() < 0.9 else CELLS) for _ in range(width + (rng.random() < 0.05))]
        seps = [rng.choice((" ", "  ", "\t", " \t ")) for _ in cells]
        lines.append(rng.choice(("", " ", "\t")) + "".join(c + s for c, s in zip(cells, seps)).rstrip()
                     + rng.choice(("", " ")) + rng.choice(("\n", "\n", "\n", "\r\n", "")))
    data = b"xx\n" + "".join(lines).encode()
    for start, end in ((3, len(data)), (3, rng.randint(3, len(data)))):
        want, rows = ref.table_cells(data, start, end, width)
        got, got_rows = ext.table_cells(data, start, end, width)
        assert got_rows == rows
        assert np.array_equal(np.asarray(got), want, equal_nan=True)
        assert np.array_equal(np.signbit(np.asarray(got)), np.signbit(want))
        if rows:  # and each cell is the number `float` reads
            assert np.array_equal(want, [float(c) for c in data[start:end].split()[:rows * width]], equal_nan=True)
