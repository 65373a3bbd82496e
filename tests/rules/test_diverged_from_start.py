"""Issue 22, class 9: a first logged loss far above ln(vocab) (13.9 against ln 256 = 5.5) that never comes
down is a divergence dated at the first step, once the first trusted level says it stayed there. The
vocabulary size comes from the log's own config (trainwatch.task.vocab_size)."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest
from rulekit import Run

from tests.rules.rowref.compare import alerts, random_cuts, samples
from tests.rules.rowref.divergence_row import LossDiverging as RowLossDiverging
from trainwatch.model import Event, EventKind, Severity
from trainwatch.task import vocab_size


def stuck_high(n: int = 100, seed: int = 0, start: float = 13.9) -> list[float]:
    rng = random.Random(seed)
    return [start + 0.02 * i + rng.gauss(0, 0.3) for i in range(n)]


def run(losses: list[float], vocab: int | None) -> Run:
    r = Run()
    if vocab is not None:
        r.event(EventKind.INFO, vocab_size=vocab)
    for i, v in enumerate(losses):
        r.step(i + 1, loss=v)
    r.finish()
    return r


def test_a_loss_far_above_ln_vocab_from_the_first_step_diverged_there():
    a = run(stuck_high(), 256).alert("loss.diverging")
    assert a.severity is Severity.CRITICAL and a.first_step == 1
    assert "ln(256) = 5.545" in a.finding.message and a.finding.evidence["step"] == 1


def test_without_a_vocabulary_size_nothing_is_dated_at_the_first_step():
    r = run(stuck_high(), None)
    assert "loss.diverging" not in r.fired() or r.alert("loss.diverging").first_step != 1


def test_a_high_first_loss_that_comes_down_is_no_divergence():
    losses = [13.9 * 0.6 ** i + 2.0 for i in range(8)] + [2.0 - 0.005 * i for i in range(90)]
    assert "loss.diverging" not in run(losses, 256).fired()


def test_a_first_loss_near_ln_vocab_is_a_normal_start():
    assert "loss.diverging" not in run(stuck_high(start=5.6), 256).fired()


@pytest.mark.parametrize("seed", range(4))
def test_the_array_rule_dates_it_as_the_row_rule_does_however_the_rows_are_cut(seed):
    rows = [(i + 1, v) for i, v in enumerate(stuck_high(60, seed))]
    records = [Event(EventKind.INFO, source="run.log", line=0, fields={"vocab_size": 256}), *samples("loss", rows)]
    want = alerts("loss.diverging", RowLossDiverging, records, None)
    assert '"step": 1' in want
    for cuts in (None, random_cuts(len(records), seed)):
        assert alerts("loss.diverging", None, records, cuts) == want


@pytest.mark.parametrize("text,want", [("found vocab_size = 65 (inside data/shakespeare_char/meta.pkl)", 65),
                                       ('  "vocab_size": 32000,', 32000), ("vocab_size: 256", 256),
                                       ("n_vocab=50257 vocab_size=50304", 50304),
                                       ("vocab_size=256 ... vocab_size=32000", None), ("steps: 256", None)])
def test_the_vocabulary_size_is_read_from_a_config_line(text, want):
    assert vocab_size(text) == want


def test_check_reads_the_vocabulary_from_the_log_and_dates_the_divergence_at_the_first_step(tmp_path: Path):
    lines = ["config: n_layer=4, n_embd=128, vocab_size=256, block_size=128"]
    lines += [f"step {i + 1}: loss={v:.4f}, lr=1e-3" for i, v in enumerate(stuck_high())]
    log = tmp_path / "byte_lm.log"
    log.write_text("\n".join(lines) + "\n")
    proc = subprocess.run([sys.executable, "-m", "trainwatch", "check", "--json", str(log)], capture_output=True,
                          text=True, timeout=120)
    doc = json.loads(proc.stdout)
    div = next(f for f in doc["findings"] if f["id"] == "loss.diverging")
    assert doc["exit_code"] == 2 and div["step"] == 1 and div["severity"] == "critical"
