"""--alert-log on a disk that fills up, and on a log left ending in a partial line (issue 27.4).

The full disk is a real one: a 64 KiB tmpfs mounted for the test (root only; skipped elsewhere), filled
by a real file, so the writes fail with the kernel's own ENOSPC and short writes.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from trainwatch.alerts import AlertChange
from trainwatch.model import Alert, AlertState, Finding, Severity
from trainwatch.sinks import alert_log as alert_log_module
from trainwatch.sinks.alert_log import AlertLog


def change(i: int) -> AlertChange:
    alert = Alert(rule="loss.nonfinite", severity=Severity.CRITICAL, family="loss", title="Loss is NaN or Inf",
                  finding=Finding(message=f"loss is NaN at step {i} " + "x" * 200), fixes=("Lower the LR",),
                  fingerprint=f"fp{i}", first_step=i)
    return AlertChange(alert, AlertState.FIRING)


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    mnt = tmp_path / "disk"
    mnt.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    got = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mnt)], capture_output=True, text=True)
    if got.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {got.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def fill(path: Path) -> None:
    """Writes until the disk refuses one more byte."""
    with open(path, "wb", buffering=0) as f:
        try:
            while True:
                f.write(b"\0" * 4096)
        except OSError:
            pass
        try:
            while True:
                f.write(b"\0")
        except OSError:
            pass


def records(path: Path) -> list[dict]:  # type: ignore[type-arg]
    text = path.read_text()
    assert text == "" or text.endswith("\n"), "the log ends in a partial line"
    return [json.loads(line) for line in text.splitlines()]


def test_a_full_disk_holds_records_back_whole_and_writes_them_when_space_returns(small_disk: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(alert_log_module, "RETRY_S", 3600.0)  # the test retries by writing, not by waiting
    said: list[str] = []
    log = AlertLog(small_disk / "alerts.jsonl", notice=said.append)
    log.write(change(1))
    filler = small_disk / "filler"
    fill(filler)
    for i in range(2, 41):  # the log's last page fills, then every write finds the disk full
        log.write(change(i))
        steps = [r["step"] for r in records(small_disk / "alerts.jsonl")]  # whole lines only, every time
        assert steps == list(range(1, len(steps) + 1))
    assert len(steps) < 40, "the disk never filled: the test proved nothing"
    assert len([s for s in said if "cannot write" in s]) == 1
    filler.unlink()
    log.write(change(41))
    assert [r["step"] for r in records(small_disk / "alerts.jsonl")] == list(range(1, 42))
    assert len([s for s in said if "writable again" in s]) == 1
    log.close()


def test_held_records_go_out_on_the_retry_timer_without_a_new_alert(small_disk: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(alert_log_module, "RETRY_S", 0.05)
    recovered = threading.Event()
    log = AlertLog(small_disk / "alerts.jsonl", notice=lambda text: recovered.set() if "again" in text else None)
    filler = small_disk / "filler"
    fill(filler)
    for i in range(1, 41):
        log.write(change(i))
    assert not recovered.is_set()
    filler.unlink()
    assert recovered.wait(10)
    assert [r["step"] for r in records(small_disk / "alerts.jsonl")] == list(range(1, 41))
    log.close()


def test_a_torn_last_line_is_moved_aside_once_and_the_next_record_is_valid(tmp_path: Path) -> None:
    path = tmp_path / "alerts.jsonl"
    whole = json.dumps({"id": "loss.spike", "step": 3}) + "\n"
    path.write_text(whole + '{"id": "loss.nonfinite", "st')
    said: list[str] = []
    log = AlertLog(path, notice=said.append)
    log.announce()
    log.announce()
    log.write(change(7))
    log.close()
    assert [r["step"] for r in records(path)] == [3, 7]
    assert (tmp_path / "alerts.jsonl.torn").read_text() == '{"id": "loss.nonfinite", "st\n'
    assert len(said) == 1 and "cut short" in said[0]


def test_a_whole_log_is_left_as_it_is(tmp_path: Path) -> None:
    path = tmp_path / "alerts.jsonl"
    path.write_text('{"step": 1}\n')
    log = AlertLog(path)
    log.close()
    assert path.read_text() == '{"step": 1}\n'
    assert log.opening_notes == [] and not (tmp_path / "alerts.jsonl.torn").exists()
