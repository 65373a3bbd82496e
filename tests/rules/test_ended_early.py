"""run.ended_early: a log that stopped short of its total with no summary, no error, and a quiet file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from rulekit import Run

from trainwatch.model import EventKind

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT.parent / "shared" / "corpus"


def check(path: Path) -> dict:
    proc = subprocess.run([sys.executable, "-m", "trainwatch", "check", "--json", str(path)],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode in (0, 1, 2), proc.stderr
    return json.loads(proc.stdout)


def ids(doc: dict) -> set[str]:
    return {f["id"] for f in doc["findings"]}


def cut(src: Path, dst: Path, lines: int, age_s: float) -> Path:
    dst.write_bytes(b"".join(src.read_bytes().splitlines(keepends=True)[:lines]))
    t = time.time() - age_s
    os.utime(dst, (t, t))
    return dst


def test_a_log_cut_short_and_quiet_for_hours_ended_early(tmp_path: Path) -> None:
    log = cut(ROOT / "examples/logs/hf_healthy.log", tmp_path / "run.log", 40, 3 * 3600)
    doc = check(log)
    f = next(f for f in doc["findings"] if f["id"] == "run.ended_early")
    assert f["severity"] == "warning"
    assert f["evidence"]["total_steps"] == 200 and f["step"] < 200
    assert "ended early at step" in f["message"]


def test_not_while_the_file_is_still_being_written(tmp_path: Path) -> None:
    log = cut(ROOT / "examples/logs/hf_healthy.log", tmp_path / "run.log", 40, 5)
    assert "run.ended_early" not in ids(check(log))


def test_not_on_a_finished_run_nor_a_crashed_one(tmp_path: Path) -> None:
    whole = cut(ROOT / "examples/logs/hf_healthy.log", tmp_path / "done.log", 10**6, 3 * 3600)
    assert "run.ended_early" not in ids(check(whole))
    crashed = cut(ROOT / "examples/logs/hf_bad_sample.log", tmp_path / "crash.log", 10**6, 3 * 3600)
    assert "run.ended_early" not in ids(check(crashed))


def test_real_log_killed_from_outside(tmp_path: Path) -> None:
    src = CORPUS / "olmo-150m-train.log"
    if not src.exists():
        pytest.skip(f"{src} not present (the shared corpus is only on machines that have it)")
    lines = src.read_bytes().splitlines()
    stop = next(i for i, line in enumerate(lines) if b"death signal" in line)
    silent = cut(src, tmp_path / "silent.log", stop, 3 * 3600)  # the same run, had it died without a word
    f = next(f for f in check(silent)["findings"] if f["id"] == "run.ended_early")
    assert (f["step"], f["evidence"]["total_steps"]) == (370, 10000)
    assert "run.ended_early" not in ids(check(cut(src, tmp_path / "signal.log", len(lines), 3 * 3600)))


def test_live_sees_the_silence_on_its_clock_and_not_without_a_total() -> None:
    for total in (100, None):
        r = Run()
        if total:
            r.event(EventKind.INFO, total_steps=total)
        for s in range(1, 31):
            r.step(s, loss=2.0 - s * 0.01)
        r.clock.t += 60
        r.changes.extend(r.engine.tick())
        assert "run.ended_early" not in r.fired()
        r.clock.t += 3 * 3600
        r.changes.extend(r.engine.tick())
        assert ("run.ended_early" in r.fired()) is bool(total)


def test_not_when_the_validation_loss_had_stopped_improving() -> None:
    """Early stopping ends a run short of its total on purpose; Keras and others may not say so."""
    for evals, expect in (([1.0, 0.9, 0.8, 0.75], True), ([1.0, 0.8, 0.85, 0.9], False)):
        r = Run()
        r.event(EventKind.INFO, total_steps=100)
        for s in range(1, 31):
            r.step(s, loss=2.0 - s * 0.01)
            if s % 7 == 0:
                r.step(s, eval_loss=evals[s // 7 - 1])
        r.clock.t += 3 * 3600
        r.changes.extend(r.engine.tick())
        assert ("run.ended_early" in r.fired()) is expect


SEFF_REPORT = (b"\nJOB STATISTICS\n==============\nJob ID: 4242\nState: RUNNING\nNodes: 1\n"
               b"Job Wall-clock time: 03:59:58\nMemory Utilized: 0.00 MB\n")


def test_a_job_report_after_a_trainer_log_without_its_summary_is_a_run_ended_early(tmp_path: Path) -> None:
    """A Slurm epilogue (seff's job statistics) says the job is over; the HF Trainer always prints its
    `train_runtime` summary when train() returns, and this log has none and no error: the job was stopped
    from outside, even while the file is fresh and whatever total the run had."""
    log = cut(ROOT / "examples/logs/hf_healthy.log", tmp_path / "job.out", 40, 5)
    log.write_bytes(log.read_bytes() + SEFF_REPORT)
    f = next(f for f in check(log)["findings"] if f["id"] == "run.ended_early")
    assert f["severity"] == "warning" and "job ended" in f["message"]
    text = log.read_bytes()
    assert f["evidence"]["report_line"] == text[:text.index(b"Job Wall-clock")].count(b"\n") + 1


def test_a_job_report_after_the_trainers_summary_is_a_finished_run(tmp_path: Path) -> None:
    log = cut(ROOT / "examples/logs/hf_healthy.log", tmp_path / "job.out", 10**6, 5)
    log.write_bytes(log.read_bytes() + SEFF_REPORT)
    assert "run.ended_early" not in ids(check(log))
