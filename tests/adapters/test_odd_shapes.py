"""Logs in shapes and encodings the readers used to give up on: each is read, and judged, as its numbers say.

The logs are made up here in the shapes real ones take: a logging format that names the call site before
the level, a CSV whose columns carry units and count generations, a JSON file of per-epoch lists, a
progress bar rewritten with carriage returns and never a newline, a table row redrawn on one line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from trainwatch.adapters.prefix import PrefixStripper
from trainwatch.cli import main


def _check(path: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    main(["check", "--json", "--jobs", "1", str(path)])
    doc: dict[str, Any] = json.loads(capsys.readouterr().out)
    return doc


def _metrics(doc: dict[str, Any]) -> dict[str, Any]:
    return doc["sources"][0]["metrics"]


def test_a_call_site_then_a_colon_level_comes_off() -> None:
    """`%(asctime)s - %(filename)s[line:%(lineno)d] - %(levelname)s: %(message)s`."""
    line = "2021-06-01 09:00:00,001 - fit.py[line:88] - INFO: [Epoch 2][Batch 40], Speed: 3.1 samples/sec, NLL=0.52"
    got, info = PrefixStripper().strip(line)
    assert got == "[Epoch 2][Batch 40], Speed: 3.1 samples/sec, NLL=0.52" and info is not None


def test_bracketed_counters_behind_a_call_site_prefix_are_read(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "fit.log"
    log.write_text("".join(
        f"2021-06-01 09:{e:02d}:{b // 10:02d},001 - fit.py[line:88] - INFO: [Epoch {e}][Batch {b}], "
        f"Speed: 3.1 samples/sec, CrossEntropy={1.0 / (1 + e):.4f}, val_AP={0.1 + 0.02 * e:.3f}\n"
        for e in range(12) for b in (0, 40)))
    doc = _check(log, capsys)
    assert doc["sources"][0]["format"] != "text" and _metrics(doc)["val_AP"]["count"] == 24
    assert doc["exit_code"] != 3  # an AP says how training went: not unknown


def test_a_series_whose_direction_is_known_is_judged_not_unknown(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """Only a Dice, no loss: its numbers were read and judged, so the run is not "unknown"."""
    log = tmp_path / "eval.log"
    log.write_text("".join(f"epoch {e}: Dice = {0.5 + 0.01 * e:.4f}\n" for e in range(1, 31)))
    doc = _check(log, capsys)
    assert _metrics(doc)["Dice"]["count"] == 30
    assert doc["exit_code"] == 0 and doc["status"] == "ok"


def test_a_csv_with_units_in_its_header_and_a_generation_counter(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """`Generation,Best Fitness,Avg Fitness,Wall (s)` with CRLF: the generation is the step, fitness is
    higher-is-better, and its fall far below its best for the rest of the run is a collapse."""
    rows = ["Generation,Best Fitness,Avg Fitness,Wall (s)"]
    for g in range(1, 121):
        best = 10.0 + 5 * g if g <= 80 else 60.0 + (g % 3)
        rows.append(f"{g},{best},{best / 8:.3f},{12.5 + g % 4}")
    log = tmp_path / "ga.csv"
    log.write_bytes(("\r\n".join(rows) + "\r\n").encode())
    doc = _check(log, capsys)
    m = _metrics(doc)
    assert doc["sources"][0]["format"] == "csv"
    assert m["Best Fitness"]["count"] == 120 and m["Best Fitness"]["last_step"] == 120
    found = {f["id"] for f in doc["findings"]}
    assert "quality.collapse" in found and doc["exit_code"] == 1


def test_a_csv_whose_first_column_is_a_loop_index_named_i_has_it_as_the_step(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`i,time,loss,accuracy`: a loop's index in the first column is the step (steps 0, 100, ...), so
    findings are dated at the logged steps, not all at step 0."""
    rows = ["i,time,loss,accuracy"] + [f"{i * 100},{i * 10.5:.2f},{2.9 / (1 + i / 20):.4f},"
                                       f"{min(0.9, 0.05 + i / 200):.4f}" for i in range(300)]
    log = tmp_path / "train.csv"
    log.write_text("\n".join(rows) + "\n")
    doc = _check(log, capsys)
    m = _metrics(doc)
    assert m["loss"]["last_step"] == 29900 and m["loss"]["count"] == 300


def test_a_json_file_of_per_epoch_lists_is_read_as_series(tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    hist = {"train_loss": [1.0 / (1 + e) for e in range(40)], "test_loss": [1.1 / (1 + e) for e in range(40)],
            "note": ["not", "numbers"], "beta": [0.5] * 40}
    log = tmp_path / "history.json"
    log.write_text(json.dumps(hist, indent=2))
    doc = _check(log, capsys)
    m = _metrics(doc)
    assert doc["sources"][0]["format"] == "json_history"
    assert m["loss"]["count"] == 40 and m["loss"]["last_step"] == 40 and m["eval_loss"]["count"] == 40
    assert "note" not in m


def test_a_rewritten_history_file_gives_only_its_new_epochs() -> None:
    from trainwatch.adapters.json_history import JsonHistoryAdapter

    a = JsonHistoryAdapter("h.json")
    first = list(a.parse_document(json.dumps({"loss": [3.0, 2.0], "val_loss": [3.5, 2.5]})))
    again = list(a.parse_document(json.dumps({"loss": [3.0, 2.0, 1.5], "val_loss": [3.5, 2.5, 2.2]})))
    assert len(first) == 4
    assert [(s.name, s.step, s.value) for s in again] == [("loss", 3, 1.5), ("val_loss", 3, 2.2)]  # type: ignore[union-attr]


def test_a_bar_rewritten_with_carriage_returns_only_is_read_redraw_by_redraw(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A nohup file with no newline at all: every redraw is a record, and `L` beside its `L_<term>` parts
    is the loss."""
    redraws = [f"L: {50.0 / n:.2f}, L_ce: {40.0 / n:.2f}, L_reg: {10.0 / n:.2f}, epoch: 0/20:: "
               f"{n * 100 // 900:3d}%|#         | {n}/900 [00:{n % 60:02d}<10:00,  2.0it/s]" for n in range(1, 201)]
    log = tmp_path / "nohup.out"
    log.write_bytes(("\r" + "\r".join(redraws)).encode())
    doc = _check(log, capsys)
    m = _metrics(doc)
    assert m["loss"]["count"] >= 100 and m["loss"]["last"] == 0.25
    assert doc["exit_code"] in (0, 1)


def test_a_table_row_redrawn_on_one_line_is_detected(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An Ultralytics-style console cut short in its first epoch: one physical line of `\\r` redraws under
    the column header (a bar drawn in box characters, no `%|`)."""
    head = "      Epoch    GPU_mem   box_loss   cls_loss   dfl_loss  Instances       Size\n"
    redraws = [f"\x1b[K        1/50      3.2G      {2.0 - n / 1000:.3f}      {4.0 - n / 500:.3f}     1.100"
               f"         20        640: {n * 100 // 800}% \u2501\u2501\u2501\u2500\u2500\u2500 {n}/800 2.1it/s "
               f"0:{n % 60:02d}<5:00"
               for n in range(0, 120)]
    log = tmp_path / "yolo.log"
    log.write_text("Starting training for 50 epochs...\n\n" + head + "\r".join(redraws) + "\n")
    doc = _check(log, capsys)
    assert doc["sources"][0]["format"] == "template"
    assert _metrics(doc)["box_loss"]["last"] == pytest.approx(1.881)
    assert doc["exit_code"] != 3


def test_a_large_cr_only_logs_sample_start_ends_at_a_line_end(tmp_path: Path) -> None:
    """The sample's unbroken start is counted on the same bytes the sample is taken from (its CRs made
    line ends), so it ends where a line does."""
    from trainwatch.sources.files import read_sample, read_sample_start

    log = tmp_path / "big.out"
    log.write_bytes("".join(f"\rloss: {1.0 / n:.6f}, step {n} of 90000 ....." for n in range(1, 12001)).encode())
    start = read_sample_start(log)
    assert start is not None and read_sample(log)[start:start + 1] == b"\n"  # the head piece ends, then the next
