"""Formats of other people's tools: YOLO results.csv, Keras CSVLogger and fit output, Detectron2, MMEngine,
LLaMA-Factory and ms-swift logs, read as their writers print them."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from tests.adapters.helpers import corpus_file, events, run, samples, series
from trainwatch import adapters
from trainwatch.adapters.csv_metrics import CsvMetricsAdapter
from trainwatch.adapters.hf_console import HFConsoleAdapter
from trainwatch.adapters.jsonl import JsonLinesAdapter
from trainwatch.adapters.keyvalue import KeyValueAdapter
from trainwatch.adapters.pipeline import SourceParser
from trainwatch.model import EventKind, Record, Sample

ROOT = Path(__file__).resolve().parents[2]
KERAS = ROOT / "examples" / "keras_tiny"


corpus = corpus_file


def parse_file(adapter_cls, path: Path) -> list[Record]:  # type: ignore[no-untyped-def]
    parser = SourceParser(adapter_cls(str(path)))
    out: list[Record] = []
    text = path.read_bytes().decode("utf-8", "replace")
    for n, line in enumerate(text.split("\n"), 1):  # as the sources split: on \n only, \r kept
        out.extend(parser.feed(line, n))
    out.extend(parser.finish())
    return out


# -- Ultralytics results.csv -------------------------------------------------------------------------

YOLO_COLUMNS = ["epoch", "train/box_loss", "train/cls_loss", "train/dfl_loss", "metrics/precision(B)",
                "metrics/recall(B)", "metrics/mAP50(B)", "metrics/mAP50-95(B)", "val/box_loss", "val/cls_loss",
                "val/dfl_loss", "lr/pg0", "lr/pg1", "lr/pg2"]


def yolo_csv(rows: list[list[float]]) -> str:
    """The layout Ultralytics 8.0 writes: every cell right-aligned in a 23-wide field, CRLF line ends."""
    head = ",".join(f"{c:>23}" for c in YOLO_COLUMNS)
    body = [",".join(f"{v:>23}" for v in row) for row in rows]
    return "\r\n".join([head, *body]) + "\r\n"


def test_yolo_padded_crlf_csv_sums_loss_parts_and_uses_epoch_as_step(tmp_log) -> None:  # type: ignore[no-untyped-def]
    path = tmp_log("results.csv", yolo_csv([
        [0, 1.6878, 3.3859, 2.143, 0.17, 0.2, 0.16, 0.056, 2.335, 2.822, 3.3394, 0.0705, 0.0033, 0.0033],
        [1, 1.267, 1.9629, 1.8428, 0.34, 0.31, 0.26, 0.125, 2.2896, 2.6209, 3.4364, 0.0403, 0.0063, 0.0063],
    ]))
    head = Path(path).read_text()
    assert adapters.detect(head, path) == "csv"
    recs = parse_file(CsvMetricsAdapter, Path(path))
    loss = series(recs, "loss")
    assert [s for s, _ in loss] == [0, 1]
    assert loss[0][1] == pytest.approx(1.6878 + 3.3859 + 2.143)
    assert series(recs, "eval_loss")[1][1] == pytest.approx(2.2896 + 2.6209 + 3.4364)
    assert series(recs, "train/box_loss") == [(0, 1.6878), (1, 1.267)]  # the parts are kept
    assert series(recs, "metrics/mAP50-95(B)")[1] == (1, 0.125)


def test_yolo_total_is_not_invented_when_a_loss_column_exists(tmp_log) -> None:  # type: ignore[no-untyped-def]
    path = tmp_log("m.csv", "epoch,train/loss,train/box_loss,train/cls_loss\n0,3.0,1.0,2.0\n")
    recs = parse_file(CsvMetricsAdapter, Path(path))
    assert series(recs, "loss") == [] and series(recs, "train/loss") == [(0, 3.0)]


@pytest.mark.parametrize("name, epochs", [("yolov8-fire-smoke-results.csv", 25),
                                          ("yolov8-wheat-weed-results.csv", 102)])
def test_real_yolo_results(name: str, epochs: int) -> None:
    path = corpus(name)
    assert adapters.detect(path.read_text(encoding="utf-8", errors="replace"), str(path)) == "csv"
    recs = parse_file(CsvMetricsAdapter, path)
    loss, val = series(recs, "loss"), series(recs, "eval_loss")
    assert len(loss) == len(val) == epochs
    steps = [s for s, _ in loss]
    assert steps == sorted(steps) and len(set(steps)) == epochs
    assert all(math.isfinite(v) and v > 0 for _, v in loss + val)


# -- Keras ------------------------------------------------------------------------------------------

def test_keras_csvlogger_from_a_real_run() -> None:
    path = KERAS / "csvlogger.csv"
    recs = parse_file(CsvMetricsAdapter, path)
    loss = series(recs, "loss")
    assert [s for s, _ in loss] == list(range(12))  # epoch from 0 is the step
    assert {s.name for s in samples(recs)} >= {"accuracy", "learning_rate", "val_loss", "val_accuracy"}
    lrs = [v for _, v in series(recs, "learning_rate")]
    assert lrs[0] > lrs[-1]  # ReduceLROnPlateau halved it on the way


def test_keras_csvlogger_corpus_reads_63_epochs() -> None:
    recs = parse_file(CsvMetricsAdapter, corpus("keras-csvlogger-en-jv-lstm.csv"))
    assert [s for s, _ in series(recs, "loss")] == list(range(63))


def test_keras_fit_console_two_trainings_from_a_real_run() -> None:
    """verbose=2 then, for a second model, verbose=1 (Keras 3 bar with ANSI colours and backspaces)."""
    recs = parse_file(KeyValueAdapter, KERAS / "fit_console.log")
    loss = series(recs, "loss")
    assert [s for s, _ in loss] == list(range(1, 13)) + list(range(1, 7))
    runs = [e for e in events(recs, EventKind.INFO) if e.fields.get("new_run")]
    assert len(runs) == 1 and runs[0].fields["new_run"] == 2 and runs[0].step == 1


def test_keras_epoch_back_without_logged_epochs_is_no_new_run() -> None:
    recs = run(KeyValueAdapter(""), ["Epoch 1/3", "Epoch 1/3", "4/4 - 0s - loss: 2.0 - accuracy: 0.5"])
    assert not [e for e in events(recs, EventKind.INFO) if e.fields.get("new_run")]


def test_keras_fit_corpus_five_trainings() -> None:
    recs = parse_file(KeyValueAdapter, corpus("keras-fit-verbose2-lstm.txt"))
    runs = [e for e in events(recs, EventKind.INFO) if e.fields.get("new_run")]
    assert [e.fields["new_run"] for e in runs] == [2, 3, 4, 5]


# -- JSON lines of detection and fine-tuning frameworks ------------------------------------------------

def test_detectron2_metrics_json() -> None:
    recs = run(JsonLinesAdapter(""), [
        '{"data_time": 0.0021, "eta_seconds": 410.2, "fast_rcnn/cls_accuracy": 0.91, "iteration": 19, '
        '"loss_box_reg": 0.31, "loss_cls": 0.62, "lr": 0.00039962, "time": 0.35, "total_loss": 1.63}',
        '{"data_time": 0.0020, "iteration": 39, "loss_box_reg": 0.29, "loss_cls": 0.41, "lr": 0.00079922, '
        '"time": 0.34, "total_loss": 1.12}',
        '{"bbox/AP": 31.2, "bbox/AP50": 52.0, "iteration": 39}',
    ])
    assert series(recs, "total_loss") == [(19, 1.63), (39, 1.12)]
    assert series(recs, "bbox/AP") == [(39, 31.2)]
    assert next(s for s in samples(recs) if s.name == "time").time is None  # iteration seconds, not a clock


def test_mmengine_json_log_step_not_inner_iter_and_val_rows_stay_put() -> None:
    recs = run(JsonLinesAdapter(""), [
        '{"lr": 0.02, "data_time": 0.01, "loss": 1.20, "loss_cls": 0.7, "time": 0.4, "epoch": 1, "iter": 50, '
        '"memory": 3512, "step": 50}',
        '{"lr": 0.02, "data_time": 0.01, "loss": 0.95, "loss_cls": 0.5, "time": 0.4, "epoch": 2, "iter": 10, '
        '"memory": 3512, "step": 60}',
        '{"coco/bbox_mAP": 0.21, "data_time": 0.003, "time": 0.09, "step": 2}',
    ])
    assert series(recs, "loss") == [(50, 1.2), (60, 0.95)]
    assert series(recs, "coco/bbox_mAP") == [(60, 0.21)]  # keyed by epoch 2 in the file: not a step back


def test_mmcv_epoch_runner_inner_iter_is_made_global_and_val_loss_renamed() -> None:
    recs = run(JsonLinesAdapter(""), [
        '{"mode": "train", "epoch": 1, "iter": 50, "lr": 0.02, "memory": 3000, "data_time": 0.01, '
        '"loss": 1.5, "time": 0.3}',
        '{"mode": "train", "epoch": 1, "iter": 100, "lr": 0.02, "memory": 3000, "data_time": 0.01, '
        '"loss": 1.2, "time": 0.3}',
        '{"mode": "val", "epoch": 1, "iter": 25, "lr": 0.02, "loss": 1.4, "bbox_mAP": 0.2}',
        '{"mode": "train", "epoch": 2, "iter": 50, "lr": 0.02, "memory": 3000, "data_time": 0.01, '
        '"loss": 1.0, "time": 0.3}',
    ])
    assert series(recs, "loss") == [(50, 1.5), (100, 1.2), (150, 1.0)]
    assert series(recs, "eval_loss") == [(100, 1.4)] and series(recs, "bbox_mAP") == [(100, 0.2)]


def test_llamafactory_trainer_log_gives_step_and_total() -> None:
    recs = run(JsonLinesAdapter(""), [
        '{"current_steps": 5, "total_steps": 93, "loss": 5.7013, "lr": 1.0000000000000002e-06, "epoch": 0.16, '
        '"percentage": 5.38, "elapsed_time": "0:02:03", "remaining_time": "0:36:15"}',
        '{"current_steps": 10, "total_steps": 93, "loss": 4.169, "lr": 2.25e-06, "epoch": 0.33, "percentage": 10.75, '
        '"elapsed_time": "0:04:02", "remaining_time": "0:33:29"}',
    ])
    assert series(recs, "loss") == [(5, 5.7013), (10, 4.169)]
    progress = events(recs, EventKind.PROGRESS)
    assert [e.fields["total"] for e in progress] == [93]
    assert not series(recs, "total_steps")


# -- ms-swift console -------------------------------------------------------------------------------

def test_swift_dict_step_and_total_from_global_step_max_steps() -> None:
    recs = run(HFConsoleAdapter(""), [
        "Train:   3%|▎         | 1/30 [00:08<04:09,  8.62s/it]  {'loss': '1.922', 'grad_norm': '33.25', "
        "'learning_rate': '3.33e-06', 'token_acc': '0.6417', 'epoch': '0.0002125', 'global_step/max_steps': '1/30', "
        "'elapsed_time': '9s', 'remaining_time': '4m 11s', 'memory(GiB)': '68.78', 'train_speed(s/it)': '8.66'}",
        "{'loss': '2.713', 'grad_norm': '246', 'learning_rate': '6.67e-06', 'epoch': '0.0004251', "
        "'global_step/max_steps': '2/30', 'memory(GiB)': '76.27'}",
    ])
    assert series(recs, "loss") == [(1, 1.922), (2, 2.713)]
    assert not any(s.step_inferred for s in samples(recs, "loss"))
    assert [e.fields["total_steps"] for e in events(recs, EventKind.INFO) if "total_steps" in e.fields] == [30]


def test_swift_corpus_steps_with_format_forced() -> None:
    recs = parse_file(HFConsoleAdapter, corpus("swift-gemma4-fsdp2-full-epoch.log"))
    steps = [s for s, _ in series(recs, "loss")]
    assert steps[:3] == [1, 2, 3] and steps == sorted(steps) and len(steps) > 2000


# -- generic reader ---------------------------------------------------------------------------------

def test_t5_batch_loss_with_spaced_keys_is_counted() -> None:
    recs = parse_file(KeyValueAdapter, corpus("t5-finetune-custom-batchloss.log"))
    loss = samples(recs, "Batch loss")
    assert len(loss) > 7000 and all(s.step_inferred for s in loss)
    steps = [s.step for s in loss]
    assert steps == sorted(steps) and len(set(steps)) == len(steps)
    assert loss[0].value == 12.1336 and loss[0].time is not None  # the logging timestamp is kept
    assert not [s for s in samples(recs) if "saved" in s.name]  # "New best model saved with BLEU-2" is prose


def test_home_made_llm_pretrain_lines() -> None:
    recs = parse_file(KeyValueAdapter, corpus("llm-pretrain-custom.log"))
    assert [s for s, _ in series(recs, "loss")][:3] == [20, 40, 60]
    assert series(recs, "ntokens")[0] == (20, 485.2)


def test_is_and_and_sentences() -> None:
    recs = run(KeyValueAdapter(""), ["grpo_loss is 0.12 and kl is 0.03", "grpo_loss is 0.10 and kl is 0.04"])
    assert series(recs, "grpo_loss") == [(1, 0.12), (2, 0.10)] and series(recs, "kl") == [(1, 0.03), (2, 0.04)]


def test_epoch_only_lines_use_the_epoch_as_step() -> None:
    recs = run(KeyValueAdapter(""), ["Epoch 1 - train loss: 0.9, val loss: 1.0",
                                     "Epoch 2 - train loss: 0.7, val loss: 0.8",
                                     "Epoch 3 - train loss: 0.6, val loss: 0.75"])
    assert [s for s, _ in series(recs, "train loss")] == [1, 2, 3]


@pytest.mark.parametrize("lines", [
    ["Loading 3 shards took 12.5 seconds", "Model has 124 million parameters"],  # prose
    ["Map: 100%|██████████| 80126/80126 [00:12<00:00, 6500.1 examples/s]"] * 4,  # a datasets map() bar
    ["  warmup_steps: 100", "  weight_decay: 0.01", "  seed: 42"],  # a config echo, one key a line
    ["New best model saved with BLEU-2: 65.76"],
    ["rank: 0, local_rank: 0, world_size: 8, local_world_size: 8", "nnodes=1, num_local_procs=6, node_rank=0"],
    ["Process 3752008 exits successfully."] * 3,
    ["[INFO:swift] max_length: 16384", "[INFO:swift] router_aux_loss_coef: 0.0"] * 2,  # a config echoed twice
])
def test_generic_reader_leaves_prose_bars_and_configs(lines: list[str]) -> None:
    parser = SourceParser(KeyValueAdapter(""))
    assert [r for n, line in enumerate(lines, 1) for r in parser.feed(line, n)
            if isinstance(r, Sample)] == []


def test_generic_reader_does_not_steal_structured_files(tmp_log) -> None:  # type: ignore[no-untyped-def]
    head = ("epoch,accuracy,learning_rate,loss,val_accuracy,val_loss\n"
            "0,0.75,0.005,1.93,0.79,1.42\n1,0.8,0.005,1.34,0.81,1.27\n")
    assert adapters.detect(head, "training_log.csv") == "csv"
    jsonl = "".join(f'{{"iteration": {i}, "total_loss": {2 - i / 100}, "lr": 0.01}}\n' for i in range(10))
    assert adapters.detect(jsonl, "metrics.json") == "jsonl"


# -- steps come from the training loop ----------------------------------------------------------------

def test_datasets_map_bar_is_not_the_training_step() -> None:
    recs = run(HFConsoleAdapter(""), [
        "Map: 100%|██████████| 80126/80126 [00:12<00:00, 6500.12 examples/s]",
        "100%|██████████| 80126/80126 [00:05<00:00, 15000.00ex/s]",
        "  Total optimization steps = 1,677",
        "  0%|          | 0/1677 [00:00<?, ?it/s]\r  1%|          | 10/1677 [00:10<28:00,  1.00it/s]"
        "{'loss': 2.5, 'grad_norm': 1.0, 'learning_rate': 1e-05, 'epoch': 0.01}",
    ])
    progress = [e.fields["step"] for e in events(recs, EventKind.PROGRESS)]
    assert progress and max(progress) <= 1677
    assert series(recs, "loss") == [(10, 2.5)]


# -- Keras History printouts -------------------------------------------------------------------------

def test_keras_history_printout_from_a_real_run() -> None:
    text = (KERAS / "history.txt").read_text(encoding="utf-8")
    assert adapters.detect(text, "history.txt") == "hf_console"
    recs = parse_file(HFConsoleAdapter, KERAS / "history.txt")
    loss = series(recs, "loss")
    assert [s for s, _ in loss] == [1, 2, 3, 4] and loss[0][1] > loss[-1][1]
    assert len(series(recs, "val_loss")) == 4


def test_history_after_fit_lines_is_not_read_twice() -> None:
    line = "{'loss': [2.0, 1.5], 'accuracy': [0.3, 0.5]}"
    recs = run(KeyValueAdapter(""), ["Epoch 1/2", "4/4 - 0s - loss: 2.0 - accuracy: 0.3", "Epoch 2/2",
                                     "4/4 - 0s - loss: 1.5 - accuracy: 0.5", line])
    assert series(recs, "loss") == [(1, 2.0), (2, 1.5)]
    alone = run(KeyValueAdapter(""), [line])
    assert series(alone, "loss") == [(1, 2.0), (2, 1.5)]


def test_a_dict_of_lists_without_a_loss_is_no_history() -> None:
    recs = run(HFConsoleAdapter(""), ["{'layers': [1, 2, 3], 'sizes': [4, 5]}"])
    assert samples(recs) == []


def test_batch_counter_that_restarts_each_epoch_becomes_a_global_step() -> None:
    recs = run(KeyValueAdapter(""), ["ep: 0, batch: 20, time: 9.17, ntokens: 485.20/513, loss: 10.98",
                                     "ep: 0, batch: 40, time: 8.38, ntokens: 431.70/513, loss: 10.97",
                                     "ep: 1, batch: 20, time: 8.35, ntokens: 428.90/513, loss: 9.98"])
    loss = samples(recs, "loss")
    assert [s.step for s in loss] == [20, 40, 60] and [s.step_inferred for s in loss] == [False, False, True]


def test_a_json_config_with_lists_is_no_history() -> None:
    head = ('{\n  "architectures": [\n    "Gemma"\n  ],\n  "loss_type": null\n}\n'
            "{'layers': [1, 2], 'loss_type': ['ce']}\n")
    assert HFConsoleAdapter.score(head, "run.log") == 0.0


def test_stepless_keys_are_taken_once_they_come_back() -> None:
    """A line of plain keys is held until the same keys return; then both lines are records, in order."""
    recs = run(KeyValueAdapter(""), ["acc: 0.50, f1: 0.40", "acc: 0.60, f1: 0.45", "acc: 0.70, f1: 0.50"])
    assert series(recs, "acc") == [(1, 0.5), (2, 0.6), (3, 0.7)]
    assert [s.line for s in samples(recs, "acc")] == [1, 2, 3]


# -- MMEngine console -------------------------------------------------------------------------------

def test_mmengine_console_epoch_steps_are_exact_and_val_results_stay_at_the_training_step() -> None:
    parser = SourceParser(KeyValueAdapter(""))
    lines = [
        "2022/12/13 19:00:12 - mmengine - INFO - Epoch(train) [1][  50/3104]  lr: 1.0000e-02  eta: 0:26:28  "
        "time: 0.1285  data_time: 0.0040  memory: 2581  loss: 0.7176  loss_rpn_cls: 0.1582  loss_cls: 0.3771",
        "2022/12/13 19:00:18 - mmengine - INFO - Epoch(train) [1][ 100/3104]  lr: 1.0000e-02  eta: 0:25:32  "
        "time: 0.1204  data_time: 0.0024  memory: 2581  loss: 0.5537  loss_rpn_cls: 0.0577  loss_cls: 0.3012",
        "2022/12/13 19:00:20 - mmengine - INFO - Exp name: faster-rcnn_r50_fpn_1x_voc",
        "07/14 08:26:50 - mmengine - INFO - Epoch(val) [1][ 10/28]    eta: 0:00:01  time: 0.0796  data_time: 0.0178",
        "07/14 08:26:51 - mmengine - INFO - Epoch(val) [1][28/28]  accuracy/top1: 70.7207  "
        "data_time: 0.0004  time: 0.0601",
        "2022/12/13 19:06:12 - mmengine - INFO - Epoch(train) [2][  50/3104]  lr: 1.0000e-02  eta: 0:20:00  "
        "time: 0.1200  data_time: 0.0020  memory: 2581  loss: 0.4100  loss_rpn_cls: 0.0400  loss_cls: 0.2500",
    ]
    recs = [r for n, line in enumerate(lines, 1) for r in parser.feed(line, n)]
    assert series(recs, "loss") == [(50, 0.7176), (100, 0.5537), (3154, 0.41)]
    assert series(recs, "accuracy/top1") == [(100, 70.7207)]
    assert len(series(recs, "time")) == 3  # the evaluation's timings are not mixed into the training's
    assert not series(recs, "eta") and len(events(recs, EventKind.EVAL_START)) == 1
    assert samples(recs, "loss")[0].time is not None


def test_mmengine_iter_based_gives_step_and_total() -> None:
    recs = run(KeyValueAdapter(""), ["Iter(train) [  50/20000]  lr: 1.0e-02  eta: 3:00:00  time: 0.5  loss: 1.25"])
    assert series(recs, "loss") == [(50, 1.25)]
    assert [e.fields["total"] for e in events(recs, EventKind.PROGRESS)] == [20000]


def test_swift_train_bar_is_the_trainers_and_gives_progress_after_the_last_dict() -> None:
    recs = run(HFConsoleAdapter(""), [
        "Train:   3%|▎         | 1/30 [00:08<04:09,  8.62s/it]{'loss': '1.922', 'learning_rate': '3.33e-06', "
        "'epoch': '0.0002', 'global_step/max_steps': '1/30'}",
        "Train:   7%|▋         | 2/30 [00:11<02:27,  5.26s/it]",
    ])
    assert [e.fields["step"] for e in events(recs, EventKind.PROGRESS)][-1] == 2


# -- end to end: what check says about these real logs -----------------------------------------------

def check_json(*args: str) -> dict:  # type: ignore[type-arg]
    import json
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", "trainwatch", "check", "--json", *args],
                          capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert proc.returncode in (0, 1, 2), proc.stderr
    return json.loads(proc.stdout)


def test_two_keras_trainings_in_one_log_are_no_resume() -> None:
    report = check_json(str(KERAS / "fit_console.log"))  # detected: its backspace redraws are text
    assert report["sources"][0]["format"] == "keyvalue"
    ids = {f["id"] for f in report["findings"]}
    assert not ids & {"resume.detected", "resume.loss_jump", "resume.sched_reset", "loss.spike"}
    assert report["exit_code"] == 0


def test_yolo_corpus_reads_total_losses_end_to_end() -> None:
    path = corpus("yolov8-fire-smoke-results.csv")
    metrics = check_json(str(path))["sources"][0]["metrics"]
    assert metrics["loss"]["count"] == 25 and metrics["eval_loss"]["count"] == 25 and "lr" in metrics


def test_three_trainings_in_one_epoch_log_are_three_healthy_runs(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Each run starts high again at `Epoch 01`: neither a divergence nor a loss that never fell."""
    import random

    rnd = random.Random(7)
    lines = []
    for start in (12.6, 26.4, 37.6):
        for e in range(1, 121):
            lines.append(f"Epoch {e:02d} loss {0.5 + start * 0.6 ** e + rnd.uniform(-0.02, 0.02):.4f} | train 2.1s")
        lines.append("Acc 99.2% | infer 4.3s")
    log = tmp_path / "runs.log"
    log.write_text("\n".join(lines) + "\n")
    report = check_json(str(log))
    assert report["exit_code"] == 0, [(f["id"], f["step"]) for f in report["findings"]]
