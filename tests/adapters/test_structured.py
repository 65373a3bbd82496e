"""trainer_state.json, JSON lines, Megatron and CSV adapters."""

from __future__ import annotations

import json
import math

from tests.adapters.helpers import events, run, samples, series
from trainwatch.adapters.csv_metrics import CsvMetricsAdapter
from trainwatch.adapters.jsonl import JsonLinesAdapter
from trainwatch.adapters.megatron import MegatronAdapter
from trainwatch.adapters.trainer_state import TrainerStateAdapter
from trainwatch.model import EventKind

STATE = {
    "best_metric": None, "epoch": 0.9, "global_step": 20,
    "log_history": [
        {"epoch": 0.45, "grad_norm": 2.75, "learning_rate": 1.8e-05, "loss": 1.14, "step": 10},
        {"epoch": 0.45, "eval_loss": 1.3, "eval_runtime": 4.2, "step": 10},
        {"epoch": 0.9, "grad_norm": float("nan"), "learning_rate": 1.6e-05, "loss": 1.02, "kl": None, "step": 20},
    ],
}


def test_trainer_state_entries_nan_and_nulls() -> None:
    recs = list(TrainerStateAdapter("s").parse_document(json.dumps(STATE)))
    assert series(recs, "loss") == [(10, 1.14), (20, 1.02)]
    assert series(recs, "eval_loss") == [(10, 1.3)]
    assert math.isnan(samples(recs, "grad_norm")[1].value)
    assert not samples(recs, "kl") and not samples(recs, "step")
    assert all(not s.step_inferred for s in samples(recs))


def test_trainer_state_reread_emits_only_new_entries() -> None:
    ad = TrainerStateAdapter("s")
    first = list(ad.parse_document(json.dumps(STATE)))
    assert samples(first)
    assert list(ad.parse_document(json.dumps(STATE))) == []
    grown = dict(STATE, log_history=STATE["log_history"] + [
        {"epoch": 0.9, "eval_loss": 1.25, "step": 20},
        {"epoch": 1.0, "step": 22, "total_flos": 1e15, "train_loss": 1.1, "train_runtime": 60.5}])
    again = list(ad.parse_document(json.dumps(grown)))
    assert series(again, "eval_loss") == [(20, 1.25)] and not samples(again, "loss")
    end = events(again, EventKind.TRAIN_END)
    assert end and end[0].fields["train_loss"] == 1.1 and end[0].step == 22


def test_trainer_state_max_steps_is_the_planned_total_told_once() -> None:
    ad = TrainerStateAdapter("s")
    first = events(list(ad.parse_document(json.dumps(dict(STATE, max_steps=5000, num_train_epochs=39)))),
                   EventKind.INFO)
    assert [e.fields for e in first] == [{"total_steps": 5000}]
    assert not events(list(ad.parse_document(json.dumps(dict(STATE, max_steps=5000)))), EventKind.INFO)
    for odd in (0, -1, None, "5000", True):
        assert not events(list(TrainerStateAdapter("s").parse_document(json.dumps(dict(STATE, max_steps=odd)))),
                          EventKind.INFO)


def test_trainer_state_half_written_file_is_ignored() -> None:
    ad = TrainerStateAdapter("s")
    assert list(ad.parse_document(json.dumps(STATE)[:50])) == []
    assert samples(list(ad.parse_document(json.dumps(STATE))))


def test_trainer_state_score() -> None:
    assert TrainerStateAdapter.score("{}", "/x/checkpoint-5/trainer_state.json") > 0.9
    assert TrainerStateAdapter.score('{\n  "best_metric": null,\n  "log_history": [', "state.json") >= 0.9
    assert TrainerStateAdapter.score("{'loss': 1.0}", "x.log") == 0.0


def test_jsonl_step_time_nested_nan_and_non_numbers() -> None:
    lines = ['{"_step": 3, "_timestamp": 1700000000.5, "train": {"loss": NaN, "acc": Infinity}, "ok": true, '
             '"name": "run", "lr": "3e-4"}',
             '{"trainer/global_step": 7, "loss": 2.0, "time": 45.5}',
             'not json', '{"truncated": ']
    recs = run(JsonLinesAdapter("j"), lines)
    first = samples(recs)[:3]
    assert {s.name for s in first} == {"train/loss", "train/acc", "lr"}
    assert all(s.step == 3 and s.time == 1700000000.5 for s in first)
    assert math.isnan(samples(recs, "train/loss")[0].value)
    assert not samples(recs, "ok") and not samples(recs, "name")
    assert series(recs, "loss") == [(7, 2.0)]
    assert series(recs, "time") == [(7, 45.5)]  # a duration, not a timestamp


def test_jsonl_ints_past_the_largest_float_are_infinite_not_a_lost_line() -> None:
    """json reads `1e400` as inf but keeps `1` followed by 400 zeros an int, which float() refuses: such a
    value reads as inf like the other, and the line's step and other values are kept."""
    huge = "1" + "0" * 400
    lines = [f'{{"step": 4, "loss": {huge}, "acc": -{huge}, "o": {{"x": {huge}}}, "lr": 0.1}}',
             f'{{"step": {huge}, "loss": 2.0}}']
    recs = run(JsonLinesAdapter("j"), lines)
    assert series(recs, "loss")[0] == (4, math.inf) and series(recs, "acc") == [(4, -math.inf)]
    assert series(recs, "o/x") == [(4, math.inf)] and series(recs, "lr") == [(4, 0.1)]
    assert series(recs, "loss")[1] == (int(huge), 2.0)  # a step kept exact, as any int step is
    assert JsonLinesAdapter.score("\n".join(lines) + "\n", "m.jsonl") > 0.8


def test_jsonl_score() -> None:
    head = "".join(json.dumps({"step": i, "loss": 1.0 / (i + 1)}) + "\n" for i in range(20))
    assert JsonLinesAdapter.score(head, "m.jsonl") > 0.8
    assert JsonLinesAdapter.score("Step 1: loss=2\n" * 5, "m.log") == 0.0


MEGATRON = [
    " iteration      100/  159576 | consumed samples:        12800 | consumed tokens:     26214400 | elapsed time per "
    "iteration (ms): 31074.1 | learning rate: 5.997E-05 | global batch size:    80 | lm loss: 3.876781E+00 | "
    "loss scale: 4096.0 | grad norm: 3246.595 | num zeros: 0.0 | number of skipped iterations:   0 | "
    "number of nan iterations:   0 |",
    "   1:  iteration      110/  159576 | consumed samples:        13600 | elapsed time per iteration (ms): 870.0 | "
    "learning rate: 6.0E-05 | global batch size:    80 | loss scale: 2048.0 | number of skipped iterations:   1 | "
    "number of nan iterations:   3 |",
    "[2026-01-16 07:32:24] iteration      120/  159576 | consumed samples:        14400 | throughput per GPU "
    "(TFLOP/s/GPU): 13100.0/13240.9 | learning rate: 6.1E-05 | lm loss: 3.5E+00 | number of nan iterations:   0 |",
    " validation loss at iteration 120 | lm loss value: 3.402E+00 | lm loss PPL: 3.0E+01 | ",
    " validation loss at iteration 120 on 160-sample draw from validation set | lm loss value: 3.41E+00 | ",
    " validation loss at iteration 120 on test set | lm loss value: 3.5E+00 | ",
]


def test_an_epoch_log_txt_of_train_lr_and_train_loss_reads_as_lr_and_loss() -> None:
    """MAE / DeiT / BEiT write `{"train_lr": .., "train_loss": .., "epoch": N}` a line: the lr is the lr."""
    from trainwatch.names import Canonicalizer
    lines = [json.dumps({"train_lr": 3.1e-06 * (e + 1), "train_loss": 1.25 / (e + 1), "epoch": e}) for e in range(3)]
    canon = Canonicalizer()
    got = {canon(s.name) for s in samples(run(JsonLinesAdapter(""), lines))}
    assert {"lr", "loss"} <= got


def test_megatron_fields_nan_inference_and_validation() -> None:
    recs = run(MegatronAdapter("m"), MEGATRON)
    loss = series(recs, "lm loss")
    assert loss[0] == (100, 3.876781) and loss[2] == (120, 3.5)
    assert loss[1][0] == 110 and math.isnan(loss[1][1])  # no `lm loss:` but nan iterations > 0
    assert series(recs, "number of nan iterations")[1] == (110, 3.0)
    assert series(recs, "throughput per GPU (TFLOP/s/GPU)") == [(120, 13100.0)]
    # the final evaluation after training (`on 160-sample draw from validation set`) is read too: it is
    # the run's last validation loss; one `on test set` is the test split's
    assert series(recs, "lm loss validation") == [(120, 3.402), (120, 3.41)]
    assert series(recs, "lm loss test") == [(120, 3.5)]
    assert samples(recs, "lm loss")[2].time is not None
    assert events(recs, EventKind.PROGRESS)[0].fields == {"step": 100, "total": 159576}
    assert MegatronAdapter.score("\n".join(MEGATRON), "x.log") > 0.85


def test_csv_sparse_rows_rewritten_header_and_ragged_rows() -> None:
    lines = ["epoch,step,train_loss_step,val_loss", "0,49,7.62,", "0,99,,7.1", "0,149,7.3",
             "epoch,lr-AdamW,step,train_loss_step,val_loss", "1,0.0003,199,6.9,,extra", "1,,249,nan,"]
    recs = run(CsvMetricsAdapter("c"), lines)
    assert series(recs, "train_loss_step")[:3] == [(49, 7.62), (149, 7.3), (199, 6.9)]
    assert series(recs, "val_loss") == [(99, 7.1)]
    assert series(recs, "lr-AdamW") == [(199, 0.0003)]
    assert math.isnan(series(recs, "train_loss_step")[3][1])
    assert not samples(recs, "step")
    assert series(recs, "epoch")[0] == (49, 0.0)


def test_csv_score() -> None:
    head = "epoch,step,train_loss_step\n0,49,7.6\n0,99,7.5\n"
    assert CsvMetricsAdapter.score(head, "metrics.csv") > 0.8
    assert CsvMetricsAdapter.score("hello, world\nthis is, prose\n", "x.txt") < 0.3


def test_tab_separated_metrics_read_like_csv() -> None:
    """`step<TAB>loss` files (a loop writing with csv's excel-tab dialect) are CSV with tabs."""
    from tests.adapters.helpers import run, samples
    from trainwatch import adapters
    from trainwatch.adapters.csv_metrics import CsvMetricsAdapter

    lines = ["step\tloss\tlr"] + [f"{s}\t{8.5 - s / 100:.4f}\t3e-4" for s in range(10, 200, 10)]
    assert adapters.detect("\n".join(lines) + "\n", "train.log") == "csv"
    got = {(x.name, x.step): x.value for x in samples(run(CsvMetricsAdapter(""), lines))}
    assert got[("loss", 100)] == 7.5 and got[("lr", 190)] == 3e-4


def test_a_bare_log_history_list_is_read_as_trainer_state() -> None:
    """`json.dump(trainer.state.log_history, f)` writes the list without its trainer_state wrapper."""
    import json as _json

    from trainwatch import adapters
    from trainwatch.adapters.trainer_state import TrainerStateAdapter

    history = [{"loss": 0.37 - s / 10000, "learning_rate": 2e-5, "epoch": s / 1250, "step": s}
               for s in range(500, 3001, 500)]
    text = _json.dumps(history, indent=2)
    assert adapters.detect(text, "log_history.json") == "trainer_state"
    got = [r for r in TrainerStateAdapter("").parse_document(text) if getattr(r, "name", "") == "loss"]
    assert [r.step for r in got] == [500, 1000, 1500, 2000, 2500, 3000]


def test_yolo_zero_val_losses_while_validation_is_off_are_no_eval_loss() -> None:
    from tests.adapters.helpers import run, samples
    from trainwatch.adapters.csv_metrics import CsvMetricsAdapter

    head = "epoch,train/box_loss,train/cls_loss,train/dfl_loss,val/box_loss,val/cls_loss,val/dfl_loss"
    rows = [f"{e},1.{9 - e},2.{9 - e},1.{5 - e},0,0,0" for e in range(1, 4)] + ["4,1.5,2.5,1.1,1.2,1.4,1.0"]
    evals = [(x.step, round(x.value, 3)) for x in samples(run(CsvMetricsAdapter(""), [head, *rows]))
             if x.name == "eval_loss"]
    assert evals == [(4, 3.6)]
