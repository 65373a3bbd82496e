"""Rules that read another series when they judge a row see it as it was at that row, however many rows
the engine holds before the array rules judge them (a backlog is judged in rounds of rows, and the other
series has moved on meanwhile). Long logs where a round's lag once hid what came before the row: the
other series logged as often as the watched one, and far more often with no rule of its own holding it
back."""

from __future__ import annotations

import json
import math
import random
import subprocess
import sys
from pathlib import Path

from tests.rules.rulekit import Run
from trainwatch.model import Event, EventKind, Sample


def _check(path: Path, *extra: str) -> dict:
    out = subprocess.run([sys.executable, "-m", "trainwatch", "check", "--json", str(path), *extra],
                         capture_output=True, text=True, check=False)
    return json.loads(out.stdout)


def test_a_nan_is_diagnosed_from_the_grad_norms_logged_just_before_it(tmp_path: Path) -> None:
    rng = random.Random(3)
    rows = []
    for step in range(1, 8001):
        grad = 250.0 + 50 * (step - 995) if 995 <= step <= 999 else rng.gauss(1.0, 0.05)
        loss = float("nan") if step == 1000 else 2.0 - step / 20000 + rng.gauss(0, 0.005)
        rows.append(json.dumps({"step": step, "grad_norm": grad, "loss": loss}))
    path = tmp_path / "run.jsonl"
    path.write_text("\n".join(rows) + "\n")
    nan = [f for f in _check(path)["findings"] if f["id"] == "loss.nonfinite"]
    assert len(nan) == 1 and nan[0]["step"] == 1000
    assert nan[0]["evidence"]["diagnosis"] == "blow-up"
    assert nan[0]["evidence"]["grad_norm_before"][-1] == 450.0


def _plateau_check_with_lr_rules_off(path: Path) -> list[str]:
    """The ids `check --preset sft` finds on `path` with both LR rules off."""
    config = path.with_name("off.yaml")
    config.write_text("rules:\n  lr.no_warmup: {enabled: false}\n  lr.schedule: {enabled: false}\n")
    return [f["id"] for f in _check(path, "--preset", "sft", "--config", str(config))["findings"]]


def test_an_annealed_lr_explains_a_flat_loss_with_the_lr_rules_off(tmp_path: Path) -> None:
    """The plateau rule reads the LR itself: with no LR rule on, the LR series is still read whole."""
    rng = random.Random(4)
    rows = []
    for step in range(1, 12001):
        lr = min(1e-3, 2e-6 * step) if step <= 1500 else 1e-5
        loss = 3.0 - 0.5 * min(step, 1500) / 1500 + rng.gauss(0, 0.03)  # falls, then rests at the low LR
        rows.append(json.dumps({"step": step, "loss": round(loss, 4), "lr": lr}))
    path = tmp_path / "run.jsonl"
    path.write_text("\n".join(rows) + "\n")
    assert "loss.plateau" not in _plateau_check_with_lr_rules_off(path)


def test_a_nan_is_diagnosed_from_grad_norms_logged_more_often_than_the_loss(tmp_path: Path) -> None:
    """With the grad rules off no array rule holds the grad-norm back, and it is logged eight times per
    loss: a round still must not let it move so far past the NaN that its points before it are gone."""
    rng = random.Random(5)
    rows = []
    for step in range(1, 40001):
        row: dict[str, float | int] = {"step": step}
        row["grad_norm"] = 900.0 if step == 1599 else rng.gauss(1.0, 0.05)
        if step % 8 == 0:
            row["loss"] = float("nan") if step == 1600 else 2.0 - step / 80000 + rng.gauss(0, 0.005)
        rows.append(json.dumps(row))
    path = tmp_path / "run.jsonl"
    path.write_text("\n".join(rows) + "\n")
    config = tmp_path / "off.yaml"
    config.write_text("rules:\n  grad.nonfinite: {enabled: false}\n  grad.spike: {enabled: false}\n"
                      "  grad.range: {enabled: false}\n")
    nan = [f for f in _check(path, "--config", str(config))["findings"] if f["id"] == "loss.nonfinite"]
    assert len(nan) == 1 and nan[0]["step"] == 1600
    assert nan[0]["evidence"]["diagnosis"] == "blow-up"
    assert nan[0]["evidence"]["grad_norm_before"][-1] == 900.0


def test_an_annealed_lr_logged_more_often_than_the_loss_explains_a_flat_loss(tmp_path: Path) -> None:
    """The LR logged on every step, the loss on every fourth, no LR rule on: the plateau rule must still
    see the LR's warmup peak, however many LR points a round stores before it judges the loss."""
    rng = random.Random(6)
    rows = []
    for step in range(1, 48001):
        row: dict[str, float | int] = {"step": step, "lr": min(1e-3, 2e-6 * step) if step <= 1500 else 1e-5}
        if step % 4 == 0:
            row["loss"] = round(3.0 - 0.5 * min(step, 1500) / 1500 + rng.gauss(0, 0.03), 4)
        rows.append(json.dumps(row))
    path = tmp_path / "run.jsonl"
    path.write_text("\n".join(rows) + "\n")
    assert "loss.plateau" not in _plateau_check_with_lr_rules_off(path)


def test_facts_printed_after_a_nan_are_not_read_into_its_finding(tmp_path: Path) -> None:
    """The batch size told by a banner after the NaN is not what the run had when the NaN was logged:
    the NaN's finding names no samples, however many rows a round holds (the rule that answers banners
    is off here, so only the engine can keep the order)."""
    off = tmp_path / "off.yaml"
    off.write_text("rules:\n  fp16.overflow: {enabled: false}\n")
    run = Run("sft", [off])
    records: list[Sample | Event] = [Sample("loss", math.nan if step == 100 else 2.0, step, source="run.log",
                                            line=step) for step in range(1, 201)]
    records.append(Event(EventKind.INFO, source="run.log", line=201,
                         fields={"batch_size": 8, "grad_accum": 4}))
    records += [Sample("loss", 2.0, step, source="run.log", line=step + 1) for step in range(201, 400)]
    run.changes.extend(run.engine.feed_all(records))
    nan = run.alert("loss.nonfinite")
    assert nan.first_step == 100
    assert "samples" not in nan.finding.evidence
    assert run.engine.sources["run.log"].facts["batch_size"] == 8  # the banner was read, after the NaN


def test_a_resume_logged_after_a_nan_lends_it_none_of_its_grad_norms(tmp_path: Path) -> None:
    """A hundred lines after the NaN the run resumes from step 101 with huge grad-norms: they have lower
    steps than the NaN's, but were logged after it, so they say nothing of its cause (it came on flat
    ones). Rounds of 1024 rows read the first of them (stored when a row rule stopped at the resume)."""
    rng = random.Random(7)
    rows = []
    for line in range(1, 1601):
        step = line if line <= 600 else line - 500
        grad = 1000.0 if line > 600 else rng.gauss(1.0, 0.05)
        loss = float("nan") if line == 500 else 2.0 + rng.gauss(0, 0.01)
        rows.append(json.dumps({"step": step, "grad_norm": grad, "loss": loss}))
    path = tmp_path / "run.jsonl"
    path.write_text("\n".join(rows) + "\n")
    nan = [f for f in _check(path)["findings"] if f["id"] == "loss.nonfinite"]
    assert nan and nan[0]["step"] == 500
    assert nan[0]["evidence"]["diagnosis"] == "bad sample or numerics"
    assert max(nan[0]["evidence"]["grad_norm_before"]) < 2.0


def test_a_nan_logged_before_the_first_grad_norm_reads_no_grad_norm(tmp_path: Path) -> None:
    """The grad-norm is first logged fifty lines after the NaN: when the NaN was logged there was no
    grad-norm series to read, as a round that judges the NaN after both are stored must also find."""
    rng = random.Random(8)
    rows = []
    for line in range(1, 3001):
        row = {"step": line, "loss": float("nan") if line == 50 else 2.0 + rng.gauss(0, 0.01)}
        if line > 100:
            row["grad_norm"] = rng.gauss(1.0, 0.05)
        rows.append(json.dumps(row))
    path = tmp_path / "run.jsonl"
    path.write_text("\n".join(rows) + "\n")
    nan = [f for f in _check(path)["findings"] if f["id"] == "loss.nonfinite"]
    assert nan and nan[0]["step"] == 50
    assert nan[0]["evidence"]["diagnosis"] == "unknown"
    assert "grad_norm_before" not in nan[0]["evidence"]
