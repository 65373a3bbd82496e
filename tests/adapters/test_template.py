"""The template reader: series and steps from shapes no specific format names, synthetic and real."""

from __future__ import annotations

import math

from tests.adapters.helpers import events, run, samples, series
from trainwatch.adapters import detect
from trainwatch.adapters.keyvalue import KeyValueAdapter
from trainwatch.adapters.prefix import PrefixStripper
from trainwatch.adapters.template import TemplateAdapter
from trainwatch.model import EventKind
from trainwatch.names import Canonicalizer, averaged


def read(lines: list[str]) -> list:  # type: ignore[type-arg]
    return run(TemplateAdapter("t"), lines)


# -- compact key:value with bracketed counters ------------------------------------------------------
def test_bracketed_counters_and_pipe_separated_metrics_give_epoch_times_total_plus_step() -> None:
    lines = [f"=== Epoch:[{e:3d}/4],step:[{s:3d}/50],img:[416],total_loss:{9 - e - s / 100:.4f}|loss_a:1.5|lr:0.0010"
             for e in range(2) for s in (0, 10, 20)]
    recs = read(lines)
    assert series(recs, "total_loss") == [(0, 9.0), (10, 8.9), (20, 8.8), (50, 8.0), (60, 7.9), (70, 7.8)]
    progress = [r for r in recs if getattr(r, "kind", None) == EventKind.PROGRESS]
    assert progress[-1].fields == {"step": 70, "total": 200}


def test_real_yolov4_line_reads_total_loss_and_skips_the_source_location() -> None:
    line = ("[2021-01-08 16:24:27,999]-[train.py line:229]:  === Epoch:[  0/120],step:[ 10/197],img_size:[416],"
            "total_loss:1777.3824|loss_ciou:2.1019|loss_conf:1773.8387|loss_cls:1.4414|lr:0.0000")
    recs = read([line])
    assert series(recs, "total_loss") == [(10, 1777.3824)]
    assert not [s for s in samples(recs) if "line" in s.name.lower()]


def test_bracketed_key_value_tokens_with_an_epoch_counter() -> None:
    lines = [f"[epoch:{e}/1200] [loss:{1 / e:.4f}] [lr:0.009] [Time:[2022-08-28 00:11:31]] [total time:0:02:28]"
             for e in range(1, 5)]
    recs = read(lines)
    assert [s for s, _ in series(recs, "loss")] == [1, 2, 3, 4]
    assert not samples(recs, "total time") and not samples(recs, "Time")


def test_compact_pairs_with_no_space_and_an_n_of_m_step() -> None:
    recs = read([f"iter:{i}/1000,loss:{2 - i / 1000:.3f},acc:{i / 10:.1f}" for i in (10, 20, 30)])
    assert series(recs, "loss") == [(10, 1.99), (20, 1.98), (30, 1.97)]


def test_a_count_of_something_else_is_no_counter() -> None:
    recs = read([f"GLOBAL_RANK: {r}, MEMBER: {r + 1}/5, loss:{r}" for r in range(3)])
    assert not [r for r in recs if getattr(r, "kind", None) == EventKind.PROGRESS]


# -- tables --------------------------------------------------------------------------------------
SB3 = """\
----------------------------------
| rollout/            |          |
|    ep_len_mean      | 56.7     |
|    ep_rew_mean      | {rew}     |
| time/               |          |
|    fps              | 754      |
|    total_timesteps  | {steps}    |
| train/              |          |
|    loss             | 1e-07    |
|    n_updates        | 20085    |
----------------------------------"""


def test_boxed_key_value_tables_are_one_record_stepped_by_total_timesteps() -> None:
    lines: list[str] = []
    for steps, rew in ((80443, 0.31), (80769, 0.34)):
        lines += SB3.format(rew=rew, steps=steps).split("\n")
    recs = read(lines)
    assert series(recs, "rollout/ep_rew_mean") == [(80443, 0.31), (80769, 0.34)]
    assert series(recs, "train/loss") == [(80443, 1e-07), (80769, 1e-07)]
    assert not samples(recs, "time/total_timesteps")
    canon = Canonicalizer()
    assert canon("rollout/ep_rew_mean") == "reward" and canon("train/loss") == "loss"


def test_space_aligned_table_under_a_header_row() -> None:
    rows = [f"{e}       {3 - e:.2f}         {3.1 - e:.2f}       {50 + e}.00%" for e in range(1, 4)]
    lines = ["epoch   train loss   val loss   accuracy", *rows]
    recs = read(lines)
    assert series(recs, "train loss") == [(1, 2.0), (2, 1.0), (3, 0.0)]
    assert series(recs, "accuracy") == [(1, 51.0), (2, 52.0), (3, 53.0)]


def test_boxed_table_with_a_header_row() -> None:
    recs = read(["| step | loss | acc |", "| 10 | 0.9 | 0.5 |", "| 20 | 0.8 | 0.6 |"])
    assert series(recs, "loss") == [(10, 0.9), (20, 0.8)]


# -- quality metrics on their own lines ----------------------------------------------------------
def test_per_class_list_is_read_as_its_mean_at_the_step_printed_before() -> None:
    recs = read(["[0] 1140 4.40 0.24", "[0] 1150 4.36 0.25",
                 "Validation mIOU: [0.28632338378181343, 0.14035225081708233]",
                 "Validation loss: 5.871632844477035", "[1] 1160 4.67 0.23", "Validation mIOU: [0.3, 0.2]",
                 "Validation loss: 4.9"])
    miou = series(recs, "Validation mIOU")
    assert [s for s, _ in miou] == [1150, 1160]
    assert math.isclose(miou[0][1], (0.28632338378181343 + 0.14035225081708233) / 2)
    assert series(recs, "Validation loss") == [(1150, 5.871632844477035), (1160, 4.9)]
    assert Canonicalizer()("Validation mIOU") == "miou"


def test_epoch_on_its_own_line_steps_the_metrics_after_it() -> None:
    recs = read(["Epoch 1", "Validation mIOU: [0.5, 0.6]", "Epoch 2", "Validation mIOU: [0.6, 0.7]"])
    assert [s for s, _ in series(recs, "Validation mIOU")] == [1, 2]


def test_ids_in_a_list_are_no_scores() -> None:
    assert not samples(read(["Using GPUS: [0, 1, 2, 3]"]))


def test_a_metric_over_a_sample_count_is_named_by_the_metric() -> None:
    recs = read(["tick 1     kimg 50.1      time 7m 49s       sec/tick 315.6", "Validity over 64 molecules: 1.56%",
                 "tick 2     kimg 100.2     time 13m 05s      sec/tick 316.0", "Validity over 64 molecules: 3.12%"])
    assert series(recs, "Validity") == [(1, 1.56), (2, 3.12)]


# -- progress bars ------------------------------------------------------------------------------------
def lightning(epoch: int, n: int, total: int, loss: str) -> str:
    return (f"Epoch {epoch}:  31%|███       | {n}/{total} [35:01<1:19:18,  1.72s/it, v_num=29, "
            f"train_loss_step={loss}, val_loss=0.744]")


def test_lightning_postfix_one_record_per_step_from_many_redraws_on_one_line() -> None:
    line = "\r".join([lightning(0, 1, 4, "1.20"), lightning(0, 1, 4, "1.10"), lightning(0, 2, 4, "-.448"),
                      "Validation DataLoader 0:  50%|█████     | 2/4 [00:01<00:01, 9.1it/s]",
                      lightning(1, 1, 4, "0.923")]) + "[rank: 2] Received SIGTERM: 15"
    recs = read([line])
    assert series(recs, "train_loss_step") == [(1, 1.10), (2, -0.448), (5, 0.923)]
    assert series(recs, "val_loss") == [(1, 0.744)]  # shown at every redraw, taken once until it changes
    assert not samples(recs, "v_num")


def test_real_lightning_redraw() -> None:
    line = ("\rEpoch 0:  31%|███       | 1225/3999 [1:07:35<2:33:02,  3.31s/it, v_num=29, "
            "train_intent_loss_step=1.110, train_total_loss=0.375]")
    assert series(read([line]), "train_total_loss") == [(1225, 0.375)]


def test_lightning_prints_a_nonfinite_loss_as_nan_dot_zero() -> None:
    line = "\r".join(lightning(0, n, 4, "nan.0") for n in (1, 2)) + "\r" + lightning(0, 3, 4, "inf.0")
    got = series(read([line]), "train_loss_step")
    assert [s for s, _ in got] == [1, 2, 3]
    assert math.isnan(got[0][1]) and math.isnan(got[1][1]) and got[2][1] == math.inf


def test_real_lightning_nan_redraw_followed_by_a_print() -> None:
    line = ("Epoch 0:   0%|          | 1/224174 [00:12<805:51:49,  0.08it/s, v_num=22, train_loss_step=nan.0]"
            "[Module] training_step -> batch_idx: 1")
    got = series(read([line]), "train_loss_step")
    assert len(got) == 1 and got[0][0] == 1 and math.isnan(got[0][1])


def test_evaluation_and_data_bars_never_set_the_training_step() -> None:
    recs = read(["\r".join(f"Epoch 1/25 [Train]:   0%|          | {n}/100 [00:23<7:11:26, 1.0s/it, loss=4.9, "
                           "last_nan_iter=None]" for n in (1, 2)),
                 "\r".join(f"Epoch 1/25 [Val]:   1%|          | {n}/9000 [00:00<00:48, 2.55it/s, val_loss=4.36, "
                           "last_nan_iter=None]" for n in (1, 8999)),
                 "\r".join(f"Running validation:   0%|          | {n}/289 [00:00<?, ?it/s, score=1.0]"
                           for n in (1, 288)),
                 "\r".join(f"Map: 50%|█████     | {n}/5000 [00:00<?, ?it/s, rows=3.0]" for n in (1, 4000)),
                 "Epoch [1/25], Training Loss: 4.6271, Validation Loss: 4.4707, Accuracy: 5.74%"])
    assert max(s.step or 0 for s in samples(recs)) == 2
    assert series(recs, "Accuracy") == [(2, 5.74)]
    assert not samples(recs, "last_nan_iter")  # None is no value, and no NaN


def test_bars_of_later_epochs_continue_the_step() -> None:
    recs = read([f"\rEpoch {e}/3 [Train]:  50%|█████     | {n}/10 [00:01<00:01, 9it/s, loss={e}.{n}]"
                 for e in (1, 2) for n in (5, 10)])
    assert [s for s, _ in series(recs, "loss")] == [5, 10, 15, 20]


# -- counters named otherwise ----------------------------------------------------------------------
def test_outer_and_round_counters_date_their_rows_and_a_nan_at_its_own_value() -> None:
    recs = read(["outer: 3, loss: 0.5", "outer: 4, loss: 0.4", "outer: 5, loss: nan"])
    got = series(recs, "loss")
    assert [s for s, _ in got] == [3, 4, 5] and math.isnan(got[-1][1])
    recs = run(KeyValueAdapter("k"), ["round 7: loss=0.3", "round 8: loss=nan"])
    assert [s for s, _ in series(recs, "loss")] == [7, 8]


# -- detection -----------------------------------------------------------------------------------
def test_template_claims_what_no_adapter_reads_and_yields_to_the_key_value_reader() -> None:
    compact = "\n".join(f"[epoch:{e}/1200] [loss:{1 / e:.4f}] [lr:0.009]" for e in range(1, 6)) + "\nKilled\n"
    assert detect(compact, "x.out") == "template"
    plain = "\n".join(f"Step {s}: loss={2 - s / 100:.3f}, lr=0.001" for s in range(1, 30)) + "\n"
    assert detect(plain, "x.log") == "keyvalue"
    prose = "Loading the model\nTraceback (most recent call last):\n  File \"x.py\", line 3\nValueError: bad\n"
    assert detect(prose, "x.log") == "text"


def test_a_json_dict_after_a_tag_is_read_and_a_stepless_dict_joins_the_step_reached() -> None:
    recs = read(['[2022-06-06 09:18:44,886][train_inner][INFO] - {"epoch": 1, "update": 0.252, "loss": "0.264", '
                 '"num_updates": "200", "lr": "1.099e-06"}',
                 '[2022-06-06 09:20:01,000][valid][INFO] - {"epoch": 1, "valid_loss": "0.261", '
                 '"valid_num_updates": "200"}'])
    assert series(recs, "loss") == [(200, 0.264)]
    assert series(recs, "valid_loss") == [(200, 0.261)]


def test_an_evaluation_metric_after_training_lines_joins_their_step() -> None:
    recs = read(["=== Epoch:[  0/120],step:[190/197],total_loss:3.1|lr:0.0001", "  ===test mAP:0.113",
                 "Saving weights to dir: 3"])
    assert series(recs, "test mAP") == [(190, 0.113)]
    assert not samples(recs, "Saving weights to dir")


def test_key_value_reader_reads_a_metric_over_a_count_and_a_per_class_list() -> None:
    recs = run(KeyValueAdapter("k"), ["tick 1     kimg 50.1      sec/tick 315.6", "Validity over 64 molecules: 1.56%",
                                      "tick 2     kimg 100.2     sec/tick 316.0", "Validation mIOU: [0.5, 0.7]"])
    assert series(recs, "Validity") == [(1, 1.56)]
    assert series(recs, "Validation mIOU") == [(2, 0.6)]


def test_an_epoch_and_step_counter_pair_in_brackets_with_a_pipe() -> None:
    recs = read(["[ 0 |  100 ] loss: 2.5, acc: 0.1", "[ 0 |  200 ] loss: 2.4, acc: 0.2",
                 "[ 1 |  300 ] loss: 2.3, acc: 0.3"])
    assert series(recs, "loss") == [(100, 2.5), (200, 2.4), (300, 2.3)]


def test_a_lightning_console_of_one_line_of_redraws_is_claimed() -> None:
    bar = "Epoch 0:  {p}%|███       | {n}/200 [00:10<00:20,  1.72it/s, v_num=3, train_loss_step={v:.3f}]"
    redraws = "\r".join(bar.format(p=n // 2, n=n, v=3 - n / 100) for n in range(1, 201))
    head = "GPU available: True (cuda), used: True\n" + redraws + "\nTrainer.fit stopped: `max_epochs=1` reached.\n"
    assert detect(head, "train.log") == "template"


def test_a_lightning_console_after_a_long_preamble_is_claimed() -> None:
    preamble = "".join(f"[Check] tensor_{i}: nan=False, inf=False, shape=torch.Size([1, 16])\n" for i in range(3000))
    bars = "".join(lightning(0, n, 4000, "nan.0") + "\n" for n in range(1, 6))
    assert detect(preamble + bars, "train.log") == "template"
    assert detect(preamble, "train.log") != "template"


# -- shapes of issue 22's public sample ----------------------------------------------------------
def test_bracketed_counters_with_a_pipe_and_aligned_pairs() -> None:
    lines = [f"Epoch:[ {e} | 19 ]    Batch:[ {b} | 2068 ]    loss_giou: 5.6838    loss_conf: 45.7363    "
             f"loss: {90 - e - b / 100:.4f}    lr: 0.0001" for e in (0, 1) for b in (0, 100)]
    recs = read(lines)
    assert series(recs, "loss") == [(0, 90.0), (100, 89.0), (2068, 89.0), (2168, 88.0)]
    assert series(recs, "loss_giou")[0] == (0, 5.6838)


def test_metrics_in_a_bars_description_when_it_has_no_postfix() -> None:
    def redraw(i: int, n: int, loss: float) -> str:
        return (f"Epoch [1][{i}/100] Time/b 0.22 (0.32) Loss {loss:.4f} ({loss + 7:.3f}) :   "
                f"{n}%|          | {n}/100 [00:00<08:17,  2.41it/s]")
    line = "\r" + "\r".join([redraw(0, 0, 9.0), redraw(0, 1, 9.0), redraw(1, 1, 8.0), redraw(1, 2, 8.0),
                             redraw(2, 2, 7.5)])
    recs = read([line])
    assert series(recs, "Loss") == [(1, 8.0), (2, 7.5)]  # each step its last redraw
    assert not [s for s in samples(recs) if s.name.lower().startswith("time")]
    real = ("\rEpoch [0][1/1200] Time/b 0.22 (0.32) Loss 115.9429 (223.459) :   0%|          | 1/1200 "
            "[00:00<08:17,  2.41it/s]")
    assert series(read([real]), "Loss") == [(1, 115.9429)]
    # the whole redraws of a console's last line count toward detection (the file is that one line)
    console = "\r" + "\r".join(redraw(n, n, 9.0 - n / 10) for n in range(6))
    assert detect("\n".join(["noise", console]), "x.out") == "template"


def test_a_log_line_written_over_a_bar_is_read_and_v_loss_is_the_eval_loss() -> None:
    canon = Canonicalizer()
    lines = [f"\rValidation: |          | 0/? [00:00<?, ?it/s][12/09/24 14:0{e}:31] INFO   Epoch {e}: "
             f"v_recons 4.545e-01  recons 4.626e-01  v_loss {4.5 - e / 10:.3e}  loss {5.3 - e / 10:.3e}"
             for e in range(3)]
    recs = run(KeyValueAdapter("k"), lines)
    got = {(canon(s.name), s.step) for s in samples(recs)}
    assert {("eval_loss", 0), ("loss", 0), ("eval_loss", 2), ("loss", 2)} <= got
    assert canon("v_loss") == "eval_loss" and canon("v/loss") == "eval_loss" and canon("vloss") == "vloss"


def test_epoch_n_of_m_steps_the_metrics_after_it() -> None:
    lines = ["2024-05-26 16:04:46 - INFO - train.py - 65 - ", "EPOCH 1 of 30",
             "2024-05-26 16:25:29 - INFO - train.py - 128 - ", "EPOCH loss: 0.535859936185811",
             "EPOCH 2 of 30", "EPOCH loss: 0.48", "EPOCH 3 of 30", "EPOCH loss: 0.45"]
    recs = run(KeyValueAdapter("k"), lines)
    assert [s for s, _ in series(recs, "EPOCH loss")] == [2, 3]
    progress = [r.fields for r in recs if getattr(r, "kind", None) == EventKind.PROGRESS]
    assert progress[-1] == {"step": 3, "total": 30}
    assert not samples(recs, "of")


def test_a_training_bar_with_no_metric_says_how_far_training_got() -> None:
    line = "\r" + "\r".join(f"Training:   0%|          | {n}/30000000 [00:00<1:24:00, 5951.32step/s]"
                            for n in (0, 640, 1408, 2176))
    recs = read([line])
    assert not samples(recs)
    progress = [r.fields for r in recs if getattr(r, "kind", None) == EventKind.PROGRESS]
    assert progress == [{"step": 2176, "total": 30000000}]
    more = ["\r".join(f"Training:   0%|          | {n}/30000000 [00:01<1:15:28, 6623.88step/s]" for n in (k, k + 768))
            for k in (2944, 4480, 6016)]
    assert detect("\n".join(["Using device: cuda", line, *more]), "x.log") == "template"
    # an evaluation's or a data loader's bar says nothing of training
    data = "\r".join(f"Map:  50%|█████     | {n}/5000 [00:00<?, ?it/s]" for n in (1, 2, 3))
    assert not [r for r in read([data]) if getattr(r, "kind", None) == EventKind.PROGRESS]


def test_epoch_one_again_after_epochs_with_metrics_is_another_training() -> None:
    """A script that trains several models in turn prints `Epoch 1/2` again: a new run, whose bars count
    from the start again (its first losses are no rise from the last model's)."""
    def training(losses: list[float]) -> list[str]:
        lines = []
        for e, pair in ((1, losses[:2]), (2, losses[2:])):
            lines.append(f"Epoch {e}/2")
            lines += [f"Training: {50 * n}%|#####     | {n}/2 [00:0{n}<00:01,  1.00it/s, loss={v}]"
                      for n, v in enumerate(pair, 1)]
        return lines

    recs = run(TemplateAdapter(""), training([0.9, 0.8, 0.5, 0.4]) + training([0.7, 0.6, 0.3, 0.2]))
    starts = [e for e in events(recs, EventKind.INFO) if e.fields.get("new_run")]
    assert len(starts) == 1 and starts[0].line == 7
    assert [s.step for s in samples(recs, "loss")] == [1, 2, 3, 4, 1, 2, 3, 4]


def test_a_loss_printed_only_in_parts_is_also_their_sum() -> None:
    from trainwatch.adapters.shapes import parts_total

    assert parts_total([("box_loss", 1.0), ("cls_loss", 0.5)])[-1] == ("loss", 1.5)
    # YOLOv5's console heads them `box obj cls`: with box and obj there, they are the parts
    assert parts_total([("box", 0.02), ("obj", 0.03), ("cls", 0.005), ("labels", 12.0)])[-1] == ("loss", 0.055)
    assert parts_total([("cls", 3.0), ("labels", 12.0)]) == [("cls", 3.0), ("labels", 12.0)]  # a class count alone


def test_a_table_whose_rows_are_metrics_gives_each_splits_column_its_name() -> None:
    """`METRIC | TRAIN | VALIDATION` then `Loss | 0.0876 | 0.0697`: the validation's loss, and the
    training column as the epoch's average (never more points of the per-step loss)."""
    canon = Canonicalizer()
    lines = []
    for e in (1, 2):
        lines += [f"Epoch {e}/2"]
        lines += [f"Training: {50 * n}%|#####     | {n}/2 [00:0{n}<00:01,  1.00it/s, loss={0.5 / (e + n)}]"
                  for n in (1, 2)]
        lines += ["METRIC     | TRAIN      | VALIDATION", f"Loss       | {0.2 / e:.4f}     | {0.15 / e:.4f}",
                  f"Accuracy   | 0.9{e}       | 0.8{e}"]
    recs = samples(run(TemplateAdapter(""), lines))
    got = {(canon(s.name), s.step, s.value) for s in recs}
    assert ("eval_loss", 2, 0.15) in got and ("eval_loss", 4, 0.075) in got
    raw = {(s.name, s.step, s.value) for s in recs}
    assert ("epoch Loss", 2, 0.2) in raw and averaged("epoch Loss")  # kept apart from the per-step loss
    assert not any(n == "loss" and v in (0.2, 0.1) for n, _, v in raw)


def test_a_postfix_value_printed_with_its_own_label_is_read() -> None:
    """`loss=Loss: 0.99, step=Step: 0`: a value formatted as `Name: x` inside tqdm's postfix."""
    from trainwatch.adapters.shapes import bars
    (bar,) = bars("Progress: 0.65%:   1%|          | 1/154 [00:14<36:04, 14.15s/it, loss=Loss: 0.9898, step=Step: 0]")
    assert ("loss", 0.9898) in bar.postfix()


def test_a_postfix_set_as_one_string_of_name_and_value_is_read() -> None:
    """`set_postfix_str(f"loss {loss:.4f}")`: no `=` in the postfix, a name then its value; the elapsed
    time and the rate before it are no metric."""
    def redraw(n: int, loss: str) -> str:
        return f"SFT:   3%|▎         | {n}/300 [02:09<1:13:19, 12.05s/it, loss {loss}]"
    line = "\r".join(["SFT:   0%|          | 0/300 [00:00<?, ?it/s]",
                      "SFT:   3%|▎         | 9/300 [02:08<1:13:19, 12.05s/it]",
                      redraw(10, "6.0530"), redraw(11, "6.0530"), redraw(20, "0.4931"), redraw(20, "0.4000")])
    recs = read([line])
    assert series(recs, "loss") == [(10, 6.053), (11, 6.053), (20, 0.4)]
    assert not [s for s in samples(recs) if s.name != "loss"]
    assert series(read(["\r".join(f"Train:  50%|█████     | {n}/10 [00:01<00:01, 9it/s, loss: {n / 10}]"
                                  for n in (4, 5))]), "loss") == [(4, 0.4), (5, 0.5)]


def test_a_counter_named_in_words_before_the_pairs_is_the_step_and_an_eval_head_names_the_phase() -> None:
    """`Epoch 001 (686 steps) / update 50 total update 00050: train_loss=..`: the update counter, not the epoch,
    is the step (`(686 steps)` is a count); `Eval after 250 updates: tot_loss=..` is an evaluation at 250."""
    lines = ["Eval after 0 updates: tot_loss=6.4459 best_loss=6.4459 patience_steps_left=10"]
    for u in (50, 100, 150, 200, 250):
        lines.append(f"Epoch 001 (686 steps) / update {u} total update {u:05d}: train_loss={10 - u / 50:.4f} "
                     f"last_lr={u * 1e-7:.2E} peak_cuda_mem=60.74GB bsz=120.0")
    lines.append("Eval after 250 updates: tot_loss=4.3590 best_loss=4.3590 patience_steps_left=10")
    recs = read(lines)
    assert series(recs, "train_loss") == [(50, 9.0), (100, 8.0), (150, 7.0), (200, 6.0), (250, 5.0)]
    assert series(recs, "eval tot_loss") == [(0, 6.4459), (250, 4.359)]
    assert not samples(recs, "tot_loss")


def test_a_scheduler_last_lr_and_an_evaluation_tot_loss_have_their_canonical_names() -> None:
    """`last_lr` (the scheduler's get_last_lr()) is the learning rate; `tot` is `total` written short."""
    canon = Canonicalizer()
    assert canon("last_lr") == "lr" and canon("eval tot_loss") == "eval_loss" and canon("tot_loss") == "loss"
    assert canon("eval best_loss") != "eval_loss"


def test_a_finished_evaluation_bars_postfix_is_the_evaluation_at_the_step_training_reached() -> None:
    def train(e: int, loss: float) -> str:
        return (f"Train Epoch {e}: 100%|██████████| 30/30 [00:04<00:00,  7.2it/s, Loss={loss:.4f}, Dice=0.14, "
                "LR=1.00e-04]")
    lines = [train(0, 0.47), "Validate: 100%|██████████| 8/8 [00:00<00:00, 19.1it/s, Val Loss=0.6106, Val Dice=0.000]",
             train(1, 0.24), train(2, 0.19),
             "\r".join(f"Validating:  {n * 12}%|█         | {n}/8 [00:00<00:00, 19.9it/s, loss=0.{n}]" for n in (1, 8)),
             train(3, 0.18)]
    recs = read(lines)
    assert series(recs, "Loss") == [(30, 0.47), (60, 0.24), (90, 0.19), (120, 0.18)]
    assert series(recs, "Val Loss") == [(30, 0.6106)] and series(recs, "Val Dice") == [(30, 0.0)]
    assert series(recs, "val loss") == [(90, 0.8)]  # the bar names the split its keys do not
    assert Canonicalizer()("Val Loss") == "eval_loss"
    # an unfinished evaluation, and a data bar, say no result
    more = read([train(0, 0.47), "Validate:  50%|█████     | 4/8 [00:00<00:00, 19.1it/s, Val Loss=0.9]",
                 "Map: 100%|██████████| 8/8 [00:00<00:00, 19.1it/s, rows=3.0]"])
    assert [s.name for s in samples(more)] == ["Loss", "Dice", "LR"]


def test_basicsr_messages_are_read_whole_when_the_template_reader_has_the_file() -> None:
    """A BasicSR console after a long config dump falls to this reader: its `[epoch: E, iter: I, lr:(x,)]` head
    is the key-value reader's shape, the LR inside the tuple and the iteration (thousands separated) the step."""
    lines = [f"2025-02-04 16:48:00,314 INFO: [basel..][epoch: {i // 50:2d}, iter: {i:7,d}, "
             f"lr:({3e-5 - i * 1e-9:.3e},)] "
             f"[eta: 2:37:00, time (data): 2.064 (0.521)] l_mos: {1e-3 / i:.4e} train_metrics/srcc: 8.0588e-01 "
             for i in (100, 200, 4900)]
    recs = read(lines)
    assert series(recs, "lr") == [(100, 2.99e-05), (200, 2.98e-05), (4900, 2.51e-05)]
    assert [s for s, _ in series(recs, "l_mos")] == [100, 200, 4900]


def test_a_training_table_with_a_i_of_n_counters_under_a_header_is_claimed_and_read_past_banners() -> None:
    """`Epoch  Batch  box  conf  id  total  nTargets  time` then rows `0/29  40/165  0.172 ...`, each behind a
    logging prefix, with banners (`dataset summary`) and an evaluation's `AP: 0.41` between: the rows are the
    training's (step epoch x batches + batch), `total` beside its parts is the loss even when negative or
    whole, and the key-value lines still join the step reached."""
    def row(e: int, b: int, total: str) -> str:
        return (f"2021-01-25 05:58:59 [INFO]:   {e:3d}/29   {b:4d}/165     0.0827     0.729      17.3   {total:>6}"
                "    82.2   7.08")
    head = ("2021-01-25 05:58:00 [INFO]:    Epoch       Batch       box      conf        id     total  nTargets"
            "      time")
    lines = [head, "dataset summary", "total # identities: 548", "start index",
             row(0, 0, "51.4"), row(0, 40, "-5.37"), row(0, 80, "-10"), "AP: 0.0073", "AP: 0.11", head,
             row(1, 0, "-12.5"), "Extracting features...", "TPR@FAR=0.0000010: 0.0011", "AP: 0.13"]
    text = "\n".join(lines * 3) + "\n"
    assert detect(text, "train.txt") == "template"
    strip = PrefixStripper()
    recs = read([strip.strip(line)[0] for line in lines])
    assert series(recs, "total_loss") == [(0, 51.4), (40, -5.37), (80, -10.0), (165, -12.5)]
    assert [s for s, _ in series(recs, "box")] == [0, 40, 80, 165]
    assert series(recs, "AP")[-1] == (165, 0.13)
