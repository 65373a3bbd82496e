"""Plain key=value / key: value lines in the shapes real loops print."""

from __future__ import annotations

import math

from tests.adapters.helpers import events, run, samples, series
from trainwatch.adapters.keyvalue import KeyValueAdapter, _pairs
from trainwatch.model import EventKind
from trainwatch.names import Canonicalizer, Quality


def values(line: str) -> dict[str, tuple[int | None, float]]:
    return {s.name: (s.step, s.value) for s in samples(run(KeyValueAdapter(""), [line]))}


def test_step_prefix_with_equals_pairs() -> None:
    v = values("Step 10: loss=2.45, lr=6.67e-05, grad_norm=nan")
    assert v["loss"] == (10, 2.45) and v["lr"] == (10, 6.67e-05)
    assert v["grad_norm"][0] == 10 and math.isnan(v["grad_norm"][1])


def test_verl_dash_separated() -> None:
    v = values("step:12 - actor/entropy:0.41 - critic/score/mean:0.25 - actor/pg_loss:-0.031 - timing_s/gen:3.2")
    assert v == {"actor/entropy": (12, 0.41), "critic/score/mean": (12, 0.25), "actor/pg_loss": (12, -0.031),
                 "timing_s/gen": (12, 3.2)}


def test_numpy_scalars_printed_as_their_constructor_are_read_and_verls_actor_names_are_canonical() -> None:
    """NumPy 2 prints `np.float64(0.63)` where NumPy 1 printed `0.63`: the value inside is the value."""
    v = values("step:3 - actor/entropy:0.23 - actor/pg_loss:np.float64(0.0024) - actor/ppo_kl:np.float64(5.1e-05)"
               " - actor/grad_norm:np.float64(0.6369) - actor/lr:np.float64(1e-06) - rollout/n:np.int64(16)")
    assert v == {"actor/entropy": (3, 0.23), "actor/pg_loss": (3, 0.0024), "actor/ppo_kl": (3, 5.1e-05),
                 "actor/grad_norm": (3, 0.6369), "actor/lr": (3, 1e-06), "rollout/n": (3, 16.0)}
    canon = Canonicalizer()
    assert canon("actor/grad_norm") == "grad_norm" and canon("actor/lr") == "lr"


def test_nanogpt_iter_and_eval_lines_with_mfu_sentinel() -> None:
    recs = run(KeyValueAdapter(""), ["iter 0: loss 4.2012, time 1234.50ms, mfu -100.00%",
                                     "iter 100: loss 2.3114, time 45.10ms, mfu 31.20%",
                                     "step 500: train loss 2.1034, val loss 2.3391",
                                     "iter 510: loss nan, time 44.0ms, mfu 31.00%"])
    assert series(recs, "mfu") == [(100, 31.2), (510, 31.0)]  # the -100% sentinel is skipped
    assert series(recs, "time_ms")[0] == (0, 1234.5)
    canon = Canonicalizer()
    assert {canon(s.name) for s in samples(recs) if s.step == 500} == {"loss", "eval_loss"}
    assert math.isnan(series(recs, "loss")[-1][1])


def test_home_made_comma_format() -> None:
    v = values("ep: 0, batch: 20, time: 9.17, ntokens: 485.20/513, loss: 10.98")
    assert v == {"ep": (20, 0.0), "time": (20, 9.17), "ntokens": (20, 485.2), "loss": (20, 10.98)}


def test_torchtitan_double_spaced_with_units_and_thousands() -> None:
    v = values("step:  7  loss: 11.2031  memory: 41.02GiB(43.18%)  tps: 1,842  tflops: 9.1  mfu: 2.93%")
    assert v["tps"] == (7, 1842.0) and v["memory"] == (7, 41.02) and v["mfu"] == (7, 2.93)


def test_deepspeed_prefixes_and_spaced_keys() -> None:
    v = values("[2024-03-01 10:00:00,123] [INFO] [logging.py:96:log_dist] [Rank 0] step=30, skipped=1, lr=[0.0002]")
    assert v == {"skipped": (30, 1.0), "lr": (30, 0.0002)}
    v = values("steps: 40 loss: 2.7711 iter time (s): 0.498 samples/sec: 64.2")
    assert v == {"loss": (40, 2.7711), "iter time (s)": (40, 0.498), "samples/sec": (40, 64.2)}


def test_pipe_table_without_step_is_counted() -> None:
    recs = run(KeyValueAdapter(""), [
        "| epoch   1 |   200/ 2983 batches | lr 20.0000 | ms/batch 11.61 | loss  6.92 | ppl  1012.50",
        "| epoch   1 |   400/ 2983 batches | lr 20.0000 | ms/batch 11.02 | loss   nan | ppl      nan"])
    loss = samples(recs, "loss")
    assert [s.step for s in loss] == [1, 2] and all(s.step_inferred for s in loss)
    assert math.isnan(loss[1].value)


def test_olmo_block_held_until_it_ends_and_flushed_at_finish() -> None:
    lines = [
        "2025-11-02 10:01:02.500\tnode-a:0\tolmo.train:990\tINFO\t[step=20/5000,epoch=0]",
        "    optim/total_grad_norm=1.25",
        "    train/CrossEntropyLoss=8.512",
        "    train/Perplexity=4,971",
        "    System/Peak GPU Memory (MB)=31,204",
        "2025-11-02 10:01:40.100\tnode-a:0\tolmo.train:990\tINFO\t[step=30/5000,epoch=0]",
        "    train/CrossEntropyLoss=8.1",
    ]
    ad = KeyValueAdapter("")
    first = [r for n, ln in enumerate(lines[:5], 1) for r in ad.parse(ln, n)]
    assert first == []  # held: more lines of the block may follow
    recs = run(ad, lines[5:])
    assert series(recs, "train/CrossEntropyLoss") == [(20, 8.512), (30, 8.1)]  # the last one came from finish()
    assert series(recs, "train/Perplexity") == [(20, 4971.0)]
    assert series(recs, "System/Peak GPU Memory (MB)") == [(20, 31204.0)]
    assert samples(recs, "train/CrossEntropyLoss")[0].time is not None
    assert events(recs, EventKind.PROGRESS)[0].fields == {"step": 20, "total": 5000}


def test_keras_fit_verbose_2_and_1_and_keras_3() -> None:
    recs = run(KeyValueAdapter(""), [
        "Epoch 1/30",
        "256/256 - 6s - loss: 3.2051 - accuracy: 0.1502 - val_loss: 3.01 - 6s/epoch - 23ms/step",
        "Epoch 2/30",
        "\r1/4 [======>.......................] - ETA: 0s - loss: 5.9"
        "\r4/4 [==============================] - 0s 11ms/step - loss: 2.9876 - accuracy: 0.2011",
        "Epoch 3/30",
        "256/256 ━━━━━━━━━━━━━━━━━━━━ 5s 20ms/step - accuracy: 0.3001 - loss: 2.5012",
    ])
    assert series(recs, "loss") == [(1, 3.2051), (2, 2.9876), (3, 2.5012)]
    assert series(recs, "val_loss") == [(1, 3.01)]
    assert all(s.step_inferred for s in samples(recs))


def test_prose_is_not_metrics() -> None:
    for line in ["Total number of parameters: 151,879,680",
                 "Num examples = 80 | Num Epochs = 4 | Total steps = 250",
                 "The answer: there is an error in step 3 of the problem, so x = 4.",
                 "Peak GPU Memory (MB) before ddp: 610",
                 "Loading weights from /data/ckpt/step_3000.pt",
                 "logging_nan_inf_filter=True,",
                 "wandb: Tracking run with wandb version 0.26.1"]:
        assert values(line) == {}, line


def test_score_prefers_many_parsed_lines() -> None:
    good = "\n".join(f"Step {i}: loss={3 - i / 100:.3f}, lr=1e-4" for i in range(30)) + "\n"
    assert KeyValueAdapter.score(good, "x.log") >= 0.8
    prose = "\n".join(["Total number of parameters: 1,000"] * 30 + ["Step 1: loss=2.0"]) + "\n"
    assert KeyValueAdapter.score(prose, "x.log") < 0.3


def test_checkpoint_line() -> None:
    assert events(run(KeyValueAdapter(""), ["saving checkpoint to out-shakespeare"]), EventKind.CHECKPOINT)


def test_composer_block_and_logging_prefixes() -> None:
    recs = run(KeyValueAdapter(""), ["[batch=10/1000]:", "\t Train loss/train/total: 2.3456",
                                     "\t Train metrics/train/Accuracy: 0.51",
                                     "INFO:__main__:Step 12: loss=2.0, acc=0.5",
                                     "2024-05-01 10:00:00 INFO step 14 loss 1.9 lr 1e-4"])
    assert series(recs, "loss/train/total") == [(10, 2.3456)]
    assert series(recs, "loss") == [(12, 2.0), (14, 1.9)]
    assert samples(recs, "lr")[0].time is not None


def test_a_stepless_line_joins_the_last_printed_step() -> None:
    """An eval or summary line without a step, between training lines that print theirs, belongs to
    the step training reached, not to a count of its own (1, 2, 3...)."""
    lines = [f"step {s}: loss={2.0 - s / 1000:.3f}" for s in range(10, 510, 10)]
    lines.insert(25, "Eval accuracy: 0.5, eval loss: 1.9")
    got = {(s.name, s.step) for s in samples(run(KeyValueAdapter(""), lines))}
    assert ("eval loss", 250) in got and ("loss", 500) in got
    assert all(step >= 10 for _, step in got)


def test_an_epoch_step_that_goes_back_to_its_start_is_another_training() -> None:
    """Scripts that train several models in turn print `Epoch 01 ... Epoch 200` again: a new run."""
    lines = [f"Epoch {e:02d} loss {1.0 / e:.4f} | train 2.1s" for e in range(1, 41)] * 2
    recs = run(KeyValueAdapter(""), lines)
    starts = [e for e in events(recs) if e.kind is EventKind.INFO and e.fields.get("new_run")]
    assert len(starts) == 1 and starts[0].fields["new_run_step"] == 1
    assert [s.step for s in samples(recs) if s.name == "loss"][38:42] == [39, 40, 1, 2]


def test_a_decorated_epoch_heading_back_at_its_start_over_counted_records_is_another_training() -> None:
    """`====> Epoch: N` over records that print no step: the epochs going on are one training; the heading
    back at epoch 1 after records is a launch appended to the log (a new run, its count from 1 again),
    and one aborted at its heading (no records under it) adds none."""
    def launch(epochs: int) -> list[str]:
        out = ["====> Epoch: 1"]
        for e in range(1, epochs + 1):
            out += ([f"====> Epoch: {e}"] if e > 1 else []) + [f"loss: {1 / e:.4f}  accuracy: {e}.5 [ 50/900]"] * 2
        return out

    recs = run(KeyValueAdapter(""), launch(5) + launch(0) + launch(3))
    starts = [e for e in events(recs) if e.kind is EventKind.INFO and e.fields.get("new_run")]
    assert len(starts) == 1 and starts[0].fields["new_run_step"] == 1
    assert [s.step for s in samples(recs) if s.name == "loss"] == [*range(1, 11), *range(1, 7)]
    assert not [e for e in events(run(KeyValueAdapter(""), launch(8))) if e.fields.get("new_run")]


def test_a_file_of_a_few_lines_with_two_records_is_recognised() -> None:
    """A one-epoch MMEngine run logs two training lines among six: enough to know the format."""
    from trainwatch import adapters

    head = ("04/15 16:50:12 - mmengine - INFO - Checkpoints will be saved to /work/dirs.\n"
            "04/15 16:50:26 - mmengine - INFO - Epoch(train) [1][ 50/100]  lr: 1.98e-03  loss: 1.4919  loss_cls: 0.6\n"
            "04/15 16:50:33 - mmengine - INFO - Exp name: faster-rcnn\n"
            "04/15 16:50:40 - mmengine - INFO - Epoch(train) [1][100/100]  lr: 3.98e-03  loss: 0.9037  loss_cls: 0.3\n"
            "04/15 16:50:40 - mmengine - INFO - Saving checkpoint at 1 epochs\n")
    assert adapters.detect(head, "run.log") == "keyvalue"


def test_keras2_verbose2_lines_without_a_batch_count_and_several_fits() -> None:
    """Keras 2 with verbose=2 prints ` - 24s - loss: 0.18 - val_loss: 0.07` under each `Epoch N/M`;
    a new `Epoch 1/M` after them is another fit(), a new run."""
    lines = []
    for _ in range(2):
        for e in range(1, 6):
            lines += [f"Epoch {e}/5", f" - 24s - loss: {0.2 / e:.4f} - val_loss: {0.1 / e:.4f}"]
    recs = run(KeyValueAdapter(""), lines)
    losses = [(x.step, x.value) for x in samples(recs) if x.name == "loss"]
    assert [s for s, _ in losses] == [1, 2, 3, 4, 5] * 2
    assert len([e for e in events(recs) if e.kind is EventKind.INFO and e.fields.get("new_run")]) == 1


def test_torchvision_metric_logger_lines_step_by_epoch_and_iteration() -> None:
    """torchvision's reference scripts (and DeiT, DETR, MAE) print `Epoch: [e]  [i/n]` with running
    means in brackets; the last `Test:` line is the evaluation (its means over the set) at the step training
    reached."""
    lines = ["Epoch: [0]  [  0/313]  eta: 0:09:56  lr: 0.000100  loss: 2.3026 (2.3026)  acc1: 9.3750 (9.3750)  "
             "time: 1.9058  data: 1.5437  max mem: 2203",
             "Epoch: [0]  [300/313]  eta: 0:00:03  lr: 0.000100  loss: 1.5021 (1.8810)  acc1: 45.0 (33.1)  "
             "time: 0.2010  data: 0.0002  max mem: 2203",
             "Test:  [ 0/79]  eta: 0:00:41  loss: 1.4102 (1.4102)  acc1: 48.4375 (48.4375)  time: 0.5276",
             "Test:  [78/79]  eta: 0:00:00  loss: 1.3502 (1.3902)  acc1: 48.4375 (47.5)  time: 0.5276",
             "Epoch: [1]  [100/313]  eta: 0:00:45  lr: 0.000100  loss: nan (nan)  acc1: 10.0 (30.0)  time: 0.2"]
    got = [(x.name, x.step, x.value) for x in samples(run(KeyValueAdapter(""), lines))]
    names = {n for n, _, _ in got}
    assert not names & {"eta", "time", "data", "max mem"}
    assert ("loss", 300, 1.5021) in got and ("eval_loss", 300, 1.3902) in got
    assert [v for n, _, v in got if n == "eval_loss"] == [1.3902]
    nan = [(s, v) for n, s, v in got if n == "loss" and v != v]
    assert nan == [(413, nan[0][1])]


def test_pytorch_tutorial_epoch_batch_lines() -> None:
    """The PyTorch CIFAR tutorial prints `[epoch, batch] loss: x`, the batch count restarting each epoch."""
    lines = [f"[{e}, {b:5d}] loss: {2.0 - e * 0.1 - b / 100000:.3f}" for e in (1, 2) for b in (2000, 4000, 6000)]
    steps = [x.step for x in samples(run(KeyValueAdapter(""), lines)) if x.name == "loss"]
    assert steps == sorted(steps) and len(set(steps)) == 6 and steps[0] == 2000


def test_pytorch_transfer_learning_tutorial_epochs_and_models_in_turn() -> None:
    """`Epoch 0/24`, a rule of dashes, then `train Loss: .. Acc: ..` and `val Loss: ..`; scripts that
    compare models print the whole block again after the model's name: each is a new run."""
    lines = []
    for model in ("resnet-50", "resnet-18"):
        for e in range(3):
            lines += [f"{model} - Epoch {e}/2", "-" * 10, f"train Loss: {2.2 - e * 0.3:.4f} Acc: 0.{40 + e}",
                      f"val Loss: {1.9 - e * 0.2:.4f} Acc: 0.{45 + e}"]
    recs = run(KeyValueAdapter(""), lines)
    canon = Canonicalizer()
    got = [(canon(x.name), x.step) for x in samples(recs)]
    assert [s for n, s in got if n == "loss"] == [0, 1, 2, 0, 1, 2]
    assert [s for n, s in got if n == "eval_loss"] == [0, 1, 2, 0, 1, 2]
    assert len([e for e in events(recs) if e.kind is EventKind.INFO and e.fields.get("new_run")]) == 1


def test_metrics_in_a_bar_description_and_a_test_set_line_per_epoch() -> None:
    """`Train Epoch: 1 Loss: 5.87 Acc@1 3.6: 100%|####| 10010/10010 [...]` keeps its metrics (the bar
    goes); `Test set: Average loss: 5.02, Acc@1: 8.4%` is that epoch's evaluation, not training loss."""
    lines = []
    for e in range(1, 4):
        lines.append(f"Train Epoch: {e} Loss: {6 - e:.3f} Acc@1 {e * 5:.3f}: 100%|##########| 10010/10010 "
                     "[59:42<00:00,  2.79it/s]")
        lines.append(f"Test set: Average loss: {5.5 - e:.4f}, Acc@1: {e * 6:.3f}%")
    canon = Canonicalizer()
    got = [(canon(x.name), x.step, x.value) for x in samples(run(KeyValueAdapter(""), lines))]
    assert [(s, v) for n, s, v in got if n == "loss"] == [(1, 5.0), (2, 4.0), (3, 3.0)]
    assert [(s, v) for n, s, v in got if n == "eval_loss"] == [(1, 4.5), (2, 3.5), (3, 2.5)]


def test_keras_callback_messages_are_no_metrics_and_early_stopping_ends_the_run() -> None:
    lines = ["Epoch 1/10", " - 2s - loss: 0.1200 - val_loss: 0.1024",
             "Epoch 00000: val_loss improved from inf to 0.10237, saving model to ./weights.00.hdf5",
             "Epoch 2/10", " - 1s - loss: 0.0100 - val_loss: 0.0093",
             "Epoch 00001: val_loss did not improve",
             "Epoch 00001: ReduceLROnPlateau reducing learning rate to 0.0005.",
             "Epoch 00001: early stopping"]
    recs = run(KeyValueAdapter(""), lines)
    assert {x.name for x in samples(recs)} == {"loss", "val_loss"}
    assert [e.kind for e in events(recs)].count(EventKind.TRAIN_END) == 1


def test_epoch_batch_heads_with_and_without_the_epoch_length_share_one_step_scale() -> None:
    from trainwatch.adapters.pipeline import SourceParser

    parser = SourceParser(KeyValueAdapter("k"))  # with the launcher's `INFO:root:` taken off, as in a check
    recs = [r for n, line in enumerate([
        "INFO:root:[1,     0/ 2562] - train_losses - Parent Class: 6.963 - Children class: 0.681",
        "INFO:root:[1,     0] grad_stats: 0.5",
        "INFO:root:[1,    50/ 2562] - train_losses - Parent Class: 5.883 - Children class: 0.497",
        "INFO:root:[1,    50] grad_stats: 0.6",
        "INFO:root:[2,     0/ 2562] - train_losses - Parent Class: 4.1 - Children class: 0.4",
        "INFO:root:[2,     0] grad_stats: 0.7"], 1) for r in parser.feed(line, n)]
    # the first epoch printed is 1: epochs count from 1, so epoch 1's batch 50 is step 50, not 2562 + 50
    assert [s for s, _ in series(recs, "Parent Class")] == [0, 50, 2562]
    assert [s for s, _ in series(recs, "grad_stats")] == [0, 50, 2562]


def test_a_held_line_is_never_dated_at_a_later_step_nor_sent_back_in_time() -> None:
    recs = run(KeyValueAdapter("k"), ["step 10: loss=1.0", "val_acc: 5", "val_acc: 6", "step 20: loss=0.9", "val_f1: 3",
                                      "step 30: loss=0.8", "val_f1: 4", "val_acc: 7"])
    steps = [s.step for s in samples(recs)]
    assert steps == sorted(steps)
    assert series(recs, "val_acc") == [(10, 5.0), (10, 6.0), (30, 7.0)]
    assert series(recs, "val_f1") == [(30, 4.0)]  # printed at 20, known a record only at 30: not dated 30


# -- separators and labels as home-made loops print them ------------------------------------------
def test_a_spaced_colon_separates_like_a_tight_one() -> None:
    v = values("iter 7, epoch 2 : loss : 0.5, acc : 0.9")
    assert v["loss"] == (7, 0.5) and v["acc"] == (7, 0.9)
    recs = run(KeyValueAdapter(""), ["iteration 50, epoch 0 : loss : 5.753381, lr: 0.000800",
                                     "iteration 100, epoch 0 : loss : 3.900187, lr: 0.000800"])
    assert series(recs, "loss") == [(50, 5.753381), (100, 3.900187)]


def test_a_label_of_words_before_the_pairs_is_no_key() -> None:
    lines = ["iter 10: loss 2.0", "Scores after the eval pass: mean_f1 : 0.25, best_f1 : 0.25",
             "iter 20: loss 1.5", "Scores after the eval pass: mean_f1 : 0.5, best_f1 : 0.5"]
    recs = run(KeyValueAdapter(""), lines)
    # task metrics on a stepless line are an evaluation, taken at once at the training step they follow
    assert series(recs, "eval_mean_f1") == [(10, 0.25), (20, 0.5)]
    assert series(recs, "eval_best_f1") == [(10, 0.25), (20, 0.5)]
    recs = run(KeyValueAdapter(""), ["iteration 125, epoch 0 : loss : 3.48, lr: 0.0008",
                                     "Testing performance in val model: mean_dice : 0.000000, best_dice : 0.000000",
                                     "iteration 250, epoch 1 : loss : 2.63, lr: 0.0008",
                                     "Testing performance in val model: mean_dice : 0.000004, best_dice : 0.000000"])
    assert series(recs, "test_mean_dice") == [(125, 0.0), (250, 0.000004)]
    # the split a label names stays in the keys: two evaluations are two series
    assert _pairs("Validation BLEU: BLEU-1 73.98, BLEU-2 68.28")[0] == [("validation_BLEU-1", 73.98),
                                                                         ("validation_BLEU-2", 68.28)]
    assert _pairs("Dev BLEU: BLEU-1 65.43, BLEU-2 60.65")[0][0] == ("dev_BLEU-1", 65.43)


def test_a_step_key_of_two_words_and_aligned_values() -> None:
    recs = run(KeyValueAdapter(""), [
        f"Global Step: {s:6d}, accuracy: {10 + s / 10:5.1f}%, loss = {2.3 - s / 100:.2f} (611.0 examples/sec, "
        "0.21 sec/batch)" for s in (10, 20)])
    assert series(recs, "loss") == [(10, 2.2), (20, 2.1)]
    assert series(recs, "accuracy") == [(10, 11.0), (20, 12.0)]
    assert not samples(recs, "Global Step")


def test_a_phase_word_padded_to_align_stays_with_its_key() -> None:
    recs = run(KeyValueAdapter(""), ["Epoch 3/20", "  Train Loss: 0.0045", "  Val   Loss: 0.0011",
                                     "Epoch 4/20", "  Train Loss: 0.0040", "  Val   Loss: 0.0012"])
    canon = Canonicalizer()
    got = {(canon(s.name), s.step, s.value) for s in samples(recs)}
    assert got == {("loss", 4, 0.004), ("eval_loss", 4, 0.0012)}  # (a lone key is read once it comes back)
    assert not [s for s in samples(recs) if s.name == "Loss"]  # the `Val` half is no field of its own


def test_comma_then_tab_separates_pairs_of_one_record() -> None:
    lines = [f"Epoch: {e}, \tavg train loss: {0.2 / e:.4f}, \tavg validation loss: {0.07 + e / 100:.4f}"
             for e in (1, 2, 3)]
    recs = run(KeyValueAdapter(""), lines)
    canon = Canonicalizer()
    assert [(s.step, canon(s.name)) for s in samples(recs) if "loss" in s.name] == [
        (1, "loss"), (1, "eval_loss"), (2, "loss"), (2, "eval_loss"), (3, "loss"), (3, "eval_loss")]
    # tab-separated prefixes (time, host, logger, level) still come off
    v = values("2025-11-02 10:01:02\tnode-a:0\ttrain:990\tINFO\tstep=5 loss=2.5")
    assert v == {"loss": (5, 2.5)}


def test_a_total_beside_its_parts_is_the_loss() -> None:
    recs = run(KeyValueAdapter(""), [
        f"2026-03-24 11:15:5{s},482 | INFO | epoch=0 step={s} lr=0.001 total=2.{s}92192 det=1.932989 kd=0.518404"
        for s in range(3)])
    canon = Canonicalizer()
    assert [(s.step, s.value) for s in samples(recs) if canon(s.name) == "loss"] == [
        (0, 2.092192), (1, 2.192192), (2, 2.292192)]
    v = values("step 3: total=512 correct=400 acc=0.78")  # a whole total counts something: no loss
    assert v["total"] == (3, 512.0)
    v = values("step 3: loss=0.5 total=2.5 aux=0.1")  # a line that names its loss keeps `total`
    assert "total" in v


def test_tab_separated_counters_are_part_of_the_record() -> None:
    def redraws(first: int) -> str:
        return "".join(f"\rEpisode {e}\tFrame {e * 23} \tAverage100 Score: {20 + e % 7:.2f}"
                       for e in range(first, first + 100))
    recs = run(KeyValueAdapter(""), [redraws(1), redraws(101), redraws(201)])
    assert series(recs, "Average100 Score") == [(100, 22.0), (200, 24.0), (300, 26.0)]
    assert not samples(recs, "Frame") and not samples(recs, "Episode")  # counters, not series
    real = "\rEpisode 101\tFrame 2481 \tAverage100 Score: 24.61\rEpisode 102\tFrame 2511 \tAverage100 Score: 24.65"
    assert values(real) == {"Average100 Score": (102, 24.65)}


def test_a_bracketed_head_holding_the_step_steps_the_line() -> None:
    # real shape: `[ep 1 step   300 t=    576s vram= 5904MB] L=0.4826  D=0.4781  PSNR= 3.21  R=0.3503 bpp`
    v = values("[ep 1 step   300 t=    576s vram= 5904MB] L=0.4826  D=0.4781  PSNR= 3.21  R=0.3503 bpp")
    assert v == {"L": (300, 0.4826), "D": (300, 0.4781), "PSNR": (300, 3.21), "R": (300, 0.3503)}
    assert values("[epoch 2 iter 40/100] loss: 0.5") == {"loss": (40, 0.5)}
    assert values("[INFO] step 7 loss=0.3") == {"loss": (7, 0.3)}  # a tag without a step still comes off


def test_a_step_tuple_with_named_metrics() -> None:
    # real shape (after its ANSI level):
    # `INFO :      fit progress: (1, 4.375000893138216, {'cen_accuracy': 0.0112}, 213.6)`
    v = values("INFO :      fit progress: (1, 4.375000893138216, {'cen_accuracy': 0.0112}, 213.6)")
    assert v == {"loss": (1, 4.375000893138216), "cen_accuracy": (1, 0.0112)}
    assert values('round summary: (12, 0.5, {"acc": 0.9, "f1": 0.8})') == {"loss": (12, 0.5), "acc": (12, 0.9),
                                                                           "f1": (12, 0.8)}
    assert values("shape: (3, 4, {'a': 1}, 2, 5)") == {}  # more than one trailing number: no such record


def test_a_bulleted_record() -> None:
    # real shape: `2023-08-25 09:25:51 INFO     \t * (global step 50: loss: 0.8082338571548462, lr: 0.001`
    v = values("2023-08-25 09:25:51 INFO     \t * (global step 50: loss: 0.8082338571548462, lr: 0.001")
    assert v == {"loss": (50, 0.8082338571548462), "lr": (50, 0.001)}
    assert values("* step: 7, loss: 0.25") == {"loss": (7, 0.25)}
    assert values("Outer Step: 10, LossTrajs: 1.71") == {"LossTrajs": (10, 1.71)}


def test_a_bare_progress_figure_between_pairs_and_epochs_logging_only_batch_zero() -> None:
    # real shape: `[train] epoch:0 iter:0/18 0.00% lr:0.001000 loss:1.298646 ETA:0.0min`
    lines = ["[train] epoch:0 iter:0/18 0.00% lr:0.001000 loss:1.298646 ETA:0.0min",
             "[train] epoch:1 iter:0/18 0.00% lr:0.000753 loss:0.608553 ETA:0.0min",
             "[train] epoch:2 iter:0/18 0.00% lr:0.000500 loss:0.5 ETA:0.0min"]
    assert series(run(KeyValueAdapter(""), lines), "loss") == [(0, 1.298646), (1, 0.608553), (2, 0.5)]


def test_stepless_epoch_averages_and_bleu_lines_take_the_step_training_reached() -> None:
    """Counted steps count the per-step loss records only: an epoch's average and its BLEU line are no
    steps of their own, so the second epoch's first batch is step 3, not 5."""
    lines = ["Epoch 1 - Batch loss: 2.5", "Epoch 1 - Batch loss: 2.1",
             "Epoch 1 - Average Train Loss: 2.3",
             "Epoch 1 - Validation BLEU: BLEU-1 40.5, BLEU-2 30.1, BLEU-3 20.2, BLEU-4 10.3",
             "Epoch 2 - Batch loss: 1.9"]
    recs = run(KeyValueAdapter(""), lines)
    assert series(recs, "Batch loss") == [(1, 2.5), (2, 2.1), (3, 1.9)]
    assert series(recs, "Average Train Loss") == [(2, 2.3)]
    assert series(recs, "validation_BLEU-2") == [(2, 30.1)]


def test_to_float_reads_lightning_nonfinite_forms() -> None:
    from trainwatch.adapters.base import to_float
    v = to_float("nan.0")
    assert v is not None and v != v
    assert to_float("inf.0") == float("inf") and to_float("-inf.0") == float("-inf")
    assert to_float("nano") is None and to_float("info") is None


def test_a_percentage_with_its_counts_in_parentheses_is_a_metric_line() -> None:
    """`test accuracy: 20.78%, (512570/2466133)` once an epoch: the counts behind the share are no prose."""
    lines = []
    for e, (loss, acc) in enumerate([(6.6, 20.78), (5.5, 24.24), (4.9, 27.41)], 1):
        lines += [f"epoch   {e}", f"loss: {loss}", f"test accuracy: {acc}%, ({int(acc * 1000)}/100000)"]
    assert [v for _, v in series(run(KeyValueAdapter(""), lines), "test accuracy")] == [20.78, 24.24, 27.41]
    assert _pairs("Validation mIOU: [0.28, 0.14]")[1] == 2  # a list's second figure still counts as a field


def test_a_batch_count_that_starts_again_after_its_passs_summary_is_the_next_epoch() -> None:
    """PaddlePaddle v1 prints `Batch=N ... CurrentCost=` lines with no epoch, then each pass's summary
    `Pass=E Batch=<last> AvgCost=`: the batch count starting again is the next pass, not a restart."""
    lines = []
    for p in range(3):
        lines += [f" Batch={b} samples={b * 128} AvgCost={12 - p - b / 1e4:.4f} CurrentCost={11 - p - b / 1e4:.4f}"
                  for b in (1000, 2000, 3000)]
        lines.append(f" Pass={p} Batch=3450 samples=441600 AvgCost={11.5 - p:.4f} Eval: error=0.15")
    steps = [s for s, _ in series(run(KeyValueAdapter(""), lines), "CurrentCost")]
    assert steps == [1000, 2000, 3000, 4450, 5450, 6450, 7900, 8900, 9900]
    passes = [s for s, _ in series(run(KeyValueAdapter(""), lines), "AvgCost")][3::4]
    assert passes == [3450, 6900, 10350]  # each pass's summary at the pass's last batch


def test_a_batch_count_that_starts_again_with_no_epoch_ever_said_is_left_as_printed() -> None:
    lines = [f"Batch={b} loss={2 - b / 1e4:.4f}" for b in (100, 200, 300)] * 2
    steps = [s for s, _ in series(run(KeyValueAdapter(""), lines), "loss")]
    assert steps == [100, 200, 300, 100, 200, 300]  # a restart (or not): nothing says which, nothing added


def test_a_bracketed_phase_names_whose_metrics_follow() -> None:
    """`[val] epoch 1 | loss: ..` is the validation's loss, never the training's; `[ Valid | 001/100 ]`
    also carries the epoch's counter."""
    canon = Canonicalizer()
    lines = ["[train-step] epoch 1 (progress=0.39) | loss: 0.8626 | lr: 0.000050",
             "[val] epoch 1 | loss: 0.2533 | acc: 0.8654 | f1_macro: 0.6027"]
    got = {(canon(s.name), s.value) for s in samples(run(KeyValueAdapter(""), lines))}
    assert ("loss", 0.8626) in got and ("eval_loss", 0.2533) in got and ("loss", 0.2533) not in got
    lines = [f"[ {phase} | {e:03d}/100 ] loss = {v:.5f}, acc = 0.4"
             for e in (1, 2) for phase, v in (("Train", 1.9 / e), ("Valid", 1.65 / e))]
    got = {(canon(s.name), s.step, s.value) for s in samples(run(KeyValueAdapter(""), lines))}
    assert ("eval_loss", 1, 1.65) in got and ("eval_loss", 2, 0.825) in got and ("loss", 2, 0.95) in got


def test_a_time_of_day_before_a_bracketed_phase_does_not_hide_the_evaluation() -> None:
    """`09:11:35    [val] step=2000  val_loss=0.22`: a clock with no date stamps the line; the phase tag and
    the step after it still start the record, so the validation loss is read at its own step."""
    canon = Canonicalizer()
    lines = []
    for s in range(100, 700, 100):
        lines.append(f"08:{s // 100:02d}:31  step={s}  loss={0.3 - s / 1e4:.4f}  lr=1.00e-03  elapsed={s}s")
        if s % 300 == 0:
            lines.append(f"08:{s // 100:02d}:59    [val] step={s}  val_loss={0.25 - s / 1e4:.4f}")
    got = {(canon(s.name), s.step, round(s.value, 4)) for s in samples(run(KeyValueAdapter(""), lines))}
    assert ("eval_loss", 300, 0.22) in got and ("eval_loss", 600, 0.19) in got
    assert ("loss", 600, 0.24) in got and not any(n == "loss" and v in (0.22, 0.19) for n, _, v in got)


def test_a_metric_dated_by_the_step_its_sentence_names() -> None:
    """`Loss at step 12: 8.49` after a time and a tab: the loss at step 12."""
    lines = [f"2017-08-18 02:43:{50 + s}:\tLoss at step {s}: {8.5 - s / 10:.6f}" for s in range(1, 6)]
    assert series(run(KeyValueAdapter(""), lines), "Loss") == [(s, 8.5 - s / 10) for s in range(1, 6)]


def test_a_metric_dated_by_its_sentence_then_more_pairs_of_the_same_evaluation() -> None:
    """`validation loss at step 10: 7.46, the acc is: 0.038`: the step is 10, not a metric, and the accuracy
    after it is the same evaluation's (`the .. is` is prose around its name)."""
    lines = ["validation loss at step 0: 7.573110, acc is 0.014273"]
    for s in range(1, 11):
        lines.append(f"step {s}/346 loss: {7.6 - s / 100:.6f}")
    lines.append("validation loss at step 10: 7.462667, the acc is: 0.038685")
    recs = run(KeyValueAdapter(""), lines)
    canon = Canonicalizer()
    got = {(canon(x.name), x.step, x.value) for x in samples(recs)}
    assert ("eval_loss", 0, 7.57311) in got and ("eval_loss", 10, 7.462667) in got
    assert {(x.name, x.step, x.value) for x in samples(recs) if "acc" in x.name} == {
        ("validation acc", 0, 0.014273), ("validation acc", 10, 0.038685)}
    assert not [x for x in samples(recs) if "step" in x.name]


def test_compact_pairs_with_a_comma_before_each_key() -> None:
    """AlphaZero's `kl:0.011,lr_multiplier:1.000,loss:5.31,entropy:4.37` (no space anywhere)."""
    v = values("kl:0.01113,lr_multiplier:1.000,loss:5.315903186798096,entropy:4.372379302978516")
    assert {k: x for k, (_, x) in v.items()} == {"kl": 0.01113, "lr_multiplier": 1.0, "loss": 5.315903186798096,
                                                 "entropy": 4.372379302978516}
    assert _pairs("tokens:1,024,000 loss:2.5")[0][-1] == ("loss", 2.5)  # a thousands comma is no key's


def test_basicsr_messages_step_by_their_iteration() -> None:
    """`[name..][epoch:  0, iter:     100, lr:(5.000e-04,)] [eta: 2 days, 17:41:47, time (data): 0.6 (0.02)] l_pix: ..`
    with or without its time and level before it: step 100, the LR and the losses after the eta block."""
    canon = Canonicalizer()
    for lead in ("2026-03-03 10:37:48,868 INFO: ", ""):
        lines = [f"{lead}[WDMam..][epoch:  0, iter: {i:7,d}, lr:(5.000e-04,)] [eta: 2 days, 17:41:47, time (data): "
                 f"0.612 (0.023)] l_pix: {0.1 / i:.4e} l_cr: 3.6749e+00" for i in (100, 200, 1000)]
        got = [(canon(s.name), s.step) for s in samples(run(KeyValueAdapter(""), lines))]
        assert ("loss", 1000) in got and ("lr", 100) in got and ("l_cr", 200) in got


def test_upper_case_metric_names_of_words_after_an_epoch_banner() -> None:
    """`##### EPOCH 3 #####` then one `TRAIN CROSS ENTROPY: 0.47` a line (a confusion matrix between): each
    line is read at the banner's epoch, and a cross-entropy naming its split is that split's loss."""
    canon = Canonicalizer()
    lines = []
    for e in range(3):
        lines += [f"################### EPOCH {e} #####################", "#" * 50, "",
                  f"TRAIN CROSS ENTROPY: 0.{4 - e}78496652367", f"VALID CROSS ENTROPY: 0.{5 - e}3155696",
                  "VALIDATION CONFUSION MATRIX:", "[[9 0 0]", " [0 7 1]]", "VALIDATION CLASSIFICATION RATE:0.875",
                  "BEST FOUND"]
    got = {(canon(s.name), s.step) for s in samples(run(KeyValueAdapter(""), lines))}
    assert {("loss", 2), ("eval_loss", 2), ("VALIDATION CLASSIFICATION RATE", 2)} <= got
    assert Quality()("VALIDATION CLASSIFICATION RATE").kind == "accuracy"  # type: ignore[union-attr]
    assert canon("valid_xent") == "eval_loss" and canon("training cross entropy") == "loss"
    # a cross-entropy that names no split may be one term of the loss beside it; an entropy is no loss
    assert canon("cross_entropy") == "cross_entropy" and canon("policy entropy") == "policy entropy"


def test_counters_written_name_brackets_before_the_pairs() -> None:
    """`fold[1/5] epoch[3/100] loss: 3.01 train accuracy: 0.21`: the epoch steps the line, the fold does
    not, and a fold's epoch 1 after its last is another training."""
    lines = [f"fold[{f}/5] epoch[{e}/100] loss: {3.6 - e / 10:.6f} train accuracy: {e / 100:.6f}"
             for f in (1, 2) for e in (1, 2, 3)]
    recs = run(KeyValueAdapter(""), lines)
    assert [s for s, _ in series(recs, "loss")] == [1, 2, 3, 1, 2, 3]
    assert len([e for e in events(recs, EventKind.INFO) if e.fields.get("new_run")]) == 1
    v = values("2022-04-21 13:25:23,878 train_log INFO: iter[40/500] loss: 1.25")
    assert v["loss"] == (40, 1.25)


def test_an_evaluations_split_names_are_its_losses_and_a_title_is_no_field() -> None:
    canon = Canonicalizer()
    evals = ["[eval] iter 500: train 3.4484 val 3.4299 lr 3.00e-04",
             "[eval] iter 1000: train 2.7609 val 2.8159 lr 2.96e-04"]
    got = {(canon(s.name), s.step, s.value) for s in samples(run(KeyValueAdapter(""), evals))}
    assert ("eval_loss", 1000, 2.8159) in got and ("lr", 500, 3e-4) in got
    lines = [f"Epoch {e} completed | train_loss={0.08 - e / 1000:.4f} | global_step={324 * e}" for e in (1, 2)]
    lines = [x for e, line in zip((1, 2), lines) for x in (line, f"Validation done | val_loss={0.0566 + e / 1000:.4f}")]
    got = series(run(KeyValueAdapter(""), lines), "val_loss")  # (the first is held until its keys come back)
    assert (648, 0.0586) in got and all((s, v) in [(324, 0.0576), (648, 0.0586)] for s, v in got)


def test_an_epoch_counter_alone_in_brackets_steps_its_tab_separated_records() -> None:
    """`[EPOCH 3]\tTrain Acc: ..\tTrain Loss: ..` then the test split's line: the epoch is the step, and
    every field after the tabs is read (the bracket is no prefix to cut off at the last tab)."""
    canon = Canonicalizer()
    lines = [f"[EPOCH {e}]\t{phase} Acc: {0.7 + e / 100:.4f}\t{phase} Loss: {v / (e + 1):.4f}"
             for e in range(4) for phase, v in (("Train", 0.0022), ("Test", 0.0023))]
    got = {(canon(s.name), s.step, s.value) for s in samples(run(KeyValueAdapter(""), lines))}
    assert ("Train Acc", 3, 0.73) in got and ("Test Acc", 0, 0.7) in got
    assert ("loss", 1, 0.0011) in got and ("eval_loss", 3, round(0.0023 / 4, 4)) in got
    assert series(run(KeyValueAdapter(""), ["[Epoch 2/100] loss: 0.5, acc: 0.9"]), "loss") == [(2, 0.5)]


def test_a_known_metric_named_in_words_is_no_prose() -> None:
    """`Epoch: 002/099 | Current Learning Rate: 0.001` between the epoch's loss lines: the LR, named as the
    value in force now, is read (a key of several words is prose only when no metric has that name)."""
    canon = Canonicalizer()
    lines = []
    for e in range(1, 4):
        lines.append(f"Epoch: {e:03d}/099 | Current Learning Rate: {0.001 / e:.6f}")
        lines += [f"Epoch: {e:03d}/099 | Batch {b:04d}/0011 | Loss: {6 - e - b / 10:.6f}" for b in (0, 5, 10)]
    got = [(s.step, s.value) for s in samples(run(KeyValueAdapter(""), lines)) if canon(s.name) == "lr"]
    assert [v for _, v in got] == [0.001, 0.0005, 0.000333]
    assert canon("cur_lr") == "lr" and canon("Current Loss") == "loss" and canon("currency") == "currency"


def test_a_name_and_its_value_in_two_comma_separated_fields_are_one_pair() -> None:
    """`epoch 1, phase train, step 10, loss_train, 0.838`: a print of a CSV row's habit."""
    lines = [f"epoch 1, phase train, step {s}, loss_train, {1 - s / 100:.3f}" for s in (10, 20, 30)]
    assert series(run(KeyValueAdapter(""), lines), "loss_train") == [(10, 0.9), (20, 0.8), (30, 0.7)]
    assert _pairs("loss: 0.5, acc, 0.9")[0] == [("loss", 0.5), ("acc", 0.9)]
    assert _pairs("Saved, 3 files")[0] == []  # a number with words after it is no value of the name before


def test_a_metriclogger_evaluation_is_its_last_batch_means_and_its_summary_is_not_the_train_loss() -> None:
    """DINO/DeiT: `Epoch: [1/100]  [ 920/1562]` steps by epoch and batch; `Epoch: [1/100] Total time` has
    no step of its own; the `Test: [i/n]` batches give the evaluation once, at the last, with the means
    over the whole set (in parentheses); the `* Acc@1 .. loss ..` summary after it is no train loss."""
    canon = Canonicalizer()
    lines = [
        "Epoch: [1/100]  [   0/1562]  eta: 1:46:21  loss: 7.179945 (7.179945)  lr: 0.000013 (0.000013)",
        "Epoch: [1/100]  [1561/1562]  eta: 0:00:00  loss: 7.230438 (9.531198)  lr: 0.000012 (0.000006)",
        "Epoch: [1/100] Total time: 0:13:11 (0.506737 s / it)",
        "Averaged stats: loss: 7.230438 (9.531198)  lr: 0.000012 (0.000006)",
        "Test:  [ 0/79]  eta: 0:01:49  loss: 6.921075 (6.921075)  acc1: 0.000000 (0.000000)",
        "Test:  [78/79]  eta: 0:00:00  loss: 7.152440 (7.148013)  acc1: 0.781250 (0.740000)",
        "Test: Total time: 0:00:14 (0.180013 s / it)",
        "* Acc@1 0.740 Acc@5 2.540 loss 7.148",
        "Epoch: [2/100]  [   0/1562]  eta: 1:46:21  loss: 7.0 (7.0)  lr: 0.000013 (0.000013)",
    ]
    got = [(canon(s.name), s.step, s.value) for s in samples(run(KeyValueAdapter(""), lines))]
    train = [(st, v) for n, st, v in got if n == "loss"]
    assert train == [(1562, 7.179945), (3123, 7.230438), (3123, 7.230438), (3124, 7.0)]
    assert [(st, v) for n, st, v in got if n == "eval_loss"] == [(3123, 7.148013)]
    assert ("eval_acc1", 3123, 0.74) in got


def test_a_counter_then_tab_separated_pairs_keeps_every_pair() -> None:
    """`[1/6] Training loss: 20.35<TAB> Validation loss: 46.07`: the text before the tab is the record's own
    (a counter and a pair), not a prefix to drop, and the blank after the tab does not hide the second pair."""
    recs = run(KeyValueAdapter(""), ["[1/6] Training loss: 20.3545\t Validation loss: 46.0753",
                                     "[2/6] Training loss: 18.2439\t Validation loss: 43.9409"])
    assert series(recs, "Training loss") == [(1, 20.3545), (2, 18.2439)]
    assert series(recs, "Validation loss") == [(1, 46.0753), (2, 43.9409)]


def test_a_bare_counter_going_back_after_its_total_is_another_training() -> None:
    """A script fitting several models in turn: `[6/6]` then `[5/30]`, `[30/30]` then `[5/30]` start new
    trainings; a counter going back before its total is reached is not one."""
    lines = ["[5/6] Training loss: 2.1\t Validation loss: 3.1", "[6/6] Training loss: 2.0\t Validation loss: 3.0",
             "[5/30] Training loss: 9.1\t Validation loss: 9.9", "[30/30] Training loss: 1.5\t Validation loss: 4.1",
             "[5/30] Training loss: 8.1\t Validation loss: 8.8", "[3/30] Training loss: 8.0\t Validation loss: 8.7"]
    starts = [e for e in events(run(KeyValueAdapter(""), lines), EventKind.INFO) if e.fields.get("new_run")]
    assert [(e.line, e.fields["new_run_step"]) for e in starts] == [(3, 5), (5, 5)]


def test_tab_and_blank_between_the_epoch_and_its_pair_with_a_trailing_tab() -> None:
    """`epoch 1/60<TAB> reward 0.8919<TAB>`: the epoch and the reward are one record."""
    recs = run(KeyValueAdapter(""), ["epoch 1/60\t reward 0.8919175440073014\t",
                                     "epoch 2/60\t reward 0.8920045715570449\t"])
    assert series(recs, "reward") == [(1, 0.8919175440073014), (2, 0.8920045715570449)]


def test_boosting_rounds_are_steps_and_a_round_going_back_is_the_next_fit() -> None:
    """LightGBM `[50]<TAB>valid's binary_logloss: 0.5286` (padded), XGBoost `[0]<TAB>train-logloss:0.66<TAB>..`:
    the round is the step; a fold that starts again is a new run; the best round repeated after early
    stopping is no new point."""
    recs = run(KeyValueAdapter(""), ["[50]\tvalid's binary_logloss: 0.528584          ",
                                     "[100]\tvalid's binary_logloss: 0.527929         ",
                                     "[50]\tvalid's binary_logloss: 0.528695          ",
                                     "Early stopping, best iteration is:",
                                     "[50]\tvalid's binary_logloss: 0.528695          ",
                                     "[0]\ttrain-logloss:0.66\teval-logloss:0.67"])
    assert series(recs, "valid binary_logloss") == [(50, 0.528584), (100, 0.527929), (50, 0.528695)]
    assert series(recs, "eval logloss") == [(0, 0.67)] and series(recs, "train logloss") == [(0, 0.66)]
    starts = [e for e in events(recs, EventKind.INFO) if e.fields.get("new_run")]
    assert [e.line for e in starts] == [3, 6]


def test_a_markdown_log_epoch_bullets_quoted_values_and_a_time_stamp_field() -> None:
    """`* epoch 0`, then `* loss \\`6.55\\`, time \\`2021-10-17 21:28:52\\``: the heading steps the records under
    it, the quoted value is read, and the stamp is neither a metric nor words that make the line prose."""
    recs = run(KeyValueAdapter(""), ["* epoch 0", "\t * loss `6.550374507904053`, time `2021-10-17 21:28:52`  ",
                                     "\t * model saved to `../ckpt.pt` at epoch `0`",
                                     "* epoch 1", "\t * loss `5.505581855773926`, time `2021-10-17 21:29:27`  "])
    assert series(recs, "loss") == [(0, 6.550374507904053), (1, 5.505581855773926)]
    assert series(recs, "time") == []


def test_an_epoch_heading_does_not_step_a_log_that_prints_its_own_steps() -> None:
    recs = run(KeyValueAdapter(""), ["step 100: loss=2.0", "Epoch 2", "val loss: 1.9, acc: 0.5"])
    assert series(recs, "val loss") == [(100, 1.9)]


def test_a_round_between_rules_steps_one_pair_per_line_aligned_by_blanks_and_nan_is_read() -> None:
    """Federated learning's `--------------Round 50--------------`, then `local_val_loss                nan`:
    the round is the step, a name and its value aligned by blanks are one pair, and a NaN with no digit is a value."""
    recs = run(KeyValueAdapter(""), ["--------------Round 49--------------", "local_val_accuracy            0.7131",
                                     "local_val_loss                2.1970", "Eval Time Cost:               7.8303s",
                                     "--------------Round 50--------------", "local_val_accuracy            0.1702",
                                     "local_val_loss                nan"])
    assert series(recs, "local_val_accuracy") == [(49, 0.7131), (50, 0.1702)]
    got = series(recs, "local_val_loss")
    assert got[0] == (49, 2.197) and got[1][0] == 50 and math.isnan(got[1][1])
    assert Canonicalizer()("local_val_loss") == "eval_loss"


def test_a_step_count_that_stays_put_while_the_epoch_moves_is_the_epochs_length() -> None:
    """Time-Series-Library's `Epoch: 1, Steps: 4 | Train Loss: .. Vali Loss: nan Test Loss: ..`: `Steps` is the
    epoch's length, so the epoch is the step; `Vali` is the validation loss and the test loss keeps its own name."""
    lines = ["Epoch: 1 cost time: 0.27", "Epoch: 1, Steps: 4 | Train Loss: 1.5618593 Vali Loss: nan Test Loss: 1.19",
             "Validation loss decreased (inf --> nan).  Saving model ...",
             "Epoch: 2, Steps: 4 | Train Loss: 1.5637536 Vali Loss: nan Test Loss: 1.17"]
    recs = run(KeyValueAdapter(""), lines)
    assert series(recs, "Train Loss") == [(1, 1.5618593), (2, 1.5637536)]
    assert series(recs, "test_set Loss") == [(1, 1.19), (2, 1.17)]
    canon = Canonicalizer()
    assert canon("Vali Loss") == "eval_loss" and canon("test_set Loss") == "test_set Loss"
    counted = run(KeyValueAdapter(""), ["epoch: 1, steps: 100, loss: 2.0", "epoch: 1, steps: 200, loss: 1.9",
                                        "epoch: 2, steps: 300, loss: 1.8"])
    assert series(counted, "loss") == [(100, 2.0), (200, 1.9), (300, 1.8)]  # a position: kept


def test_a_sentence_opening_on_the_rounds_number_steps_its_metric() -> None:
    """`The 1 Communcation Accuracy: 21.09 Method: moon epoch loss: None`: round 1's accuracy; `None` is no value
    and prose that opens on a number with no named metric after it is no record."""
    recs = run(KeyValueAdapter(""), ["The 0 Communcation Accuracy: 12.42 Method: moon epoch loss: None",
                                     "The 1 Communcation Accuracy: 21.09 Method: moon epoch loss: None",
                                     "The 3 runs took 3.5 hours"])
    assert series(recs, "Communcation Accuracy") == [(0, 12.42), (1, 21.09)]
    assert {s.name for s in samples(recs)} == {"Communcation Accuracy"}


def test_a_boxed_table_row_is_not_joined_into_a_pair() -> None:
    """`|    fps                  | 8         |`: stable-baselines3's boxed table is read whole by the template
    reader (sections, the step from total_timesteps); the key-value reader takes no pair from one row."""
    assert _pairs("|    fps                  | 8         |")[0] == []
    assert _pairs("local_val_loss                1.2385")[0] == [("local_val_loss", 1.2385)]


def test_a_metric_under_a_bare_epoch_counter_is_stepped_by_it() -> None:
    """`Epoch: [3/80] loss: ..`: the epoch's bracketed counter is the step; only a line with no metric
    (`Epoch: [3/100] Total time: 0:13:07`) has no step of its own."""
    lines = ["Epoch: [1/80] loss: 2.1213 acc: 0.5000", "Epoch: [2/80] loss: 1.9341 acc: 0.5100",
             "Epoch: [2/80] Total time: 0:13:07 (0.5 s / it)", "Epoch: [3/80] loss: 1.7 acc: 0.52"]
    recs = run(KeyValueAdapter(""), lines)
    assert series(recs, "loss") == [(1, 2.1213), (2, 1.9341), (3, 1.7)]


def test_a_bare_batch_counter_going_back_with_the_loss_carrying_on_is_the_next_epoch() -> None:
    """`[100/100] loss: 0.41` then `[10/100] loss: 0.43`: the same total and a loss carrying on from where it
    was is a loop counting its batches alone, so the steps go on (200 + 10) and no new training is said; a
    loss back near where the count began is another training."""
    lines = ["[10/100] loss: 2.10", "[100/100] loss: 0.41", "[10/100] loss: 0.43", "[100/100] loss: 0.52",
             "[10/100] loss: 2.05"]
    recs = run(KeyValueAdapter(""), lines)
    assert [st for st, _ in series(recs, "loss")] == [10, 100, 110, 200, 10]
    starts = [e for e in events(recs, EventKind.INFO) if e.fields.get("new_run")]
    assert [e.line for e in starts] == [5]


def test_the_first_record_held_for_its_epoch_goes_out_before_a_later_step_without_one() -> None:
    """`loss: 2.5, epoch: 0, global_step: 10` is held until the next record tells whether its step is an
    epoch's length; a next record with a step and no epoch says it was a step, so it goes out then, in
    order, not at the end of the file after every later step."""
    recs = run(KeyValueAdapter(""), ["loss: 2.5000, epoch: 0, global_step: 10", "loss: 2.0, global_step: 20",
                                     "loss: 1.5, global_step: 30"])
    assert series(recs, "loss") == [(10, 2.5), (20, 2.0), (30, 1.5)]


def test_a_clock_among_the_pairs_is_skipped_and_the_pairs_after_it_are_read() -> None:
    """`Iter 100 eta: 0:12:34 lr: 0.001 loss: 1.2`: the ETA is no metric, and the pairs after it still are."""
    assert _pairs("Iter 100 eta: 0:12:34 lr: 0.001 loss: 1.2")[0] == [("Iter", 100.0), ("lr", 0.001), ("loss", 1.2)]


def test_an_iteration_counted_within_the_bracketed_epoch_counts_on_across_epochs() -> None:
    # real shape: `[epoch: 1/200, iter: 25/489] total: 1.712007`
    lines = [f"[epoch: {e}/200, iter: {i}/489] total: {1.7 - e / 10 - i / 10000:.4f}" for e in (1, 2) for i in (0, 25)]
    recs = run(KeyValueAdapter(""), lines)
    assert [s for s, _ in series(recs, "total_loss")] == [0, 25, 489, 514]  # the epoch's length from its total
    assert not samples(recs, "epoch")  # the epoch is the counter the step counts within, not a metric
    assert all(e.fields["total"] != 489 for e in events(recs, EventKind.PROGRESS))  # 489 is no run's length


def test_a_fractional_total_alone_on_a_counted_line_is_the_loss_but_not_a_count_nor_an_uncounted_one() -> None:
    assert values("[epoch: 3/200, iter: 25/489] total: 1.64") == {"total_loss": (25, 1.64)}
    assert values("iter 40/100 total: 12") == {"total": (40, 12.0)}  # a whole total counts something
    assert "total_loss" not in values("total: 1.64, acc: 0.5")  # no counter dates it: what total is, unsaid


def test_a_constant_printed_again_after_training_moved_on_is_a_series_not_a_config_echo() -> None:
    lines = ["learning rate = 0.0001000"]
    for e in (1, 2, 3):
        lines += [f"[epoch: {e}/200, iter: 0/489] total: 1.5", "learning rate = 0.0001000"]
    assert [s for s, _ in series(run(KeyValueAdapter(""), lines), "learning rate")] == [489, 978]
    echo = ["lr = 0.001", "lr = 0.001", "step 1: loss=2.0", "step 2: loss=1.9"]  # printed twice, per rank
    assert not samples(run(KeyValueAdapter(""), echo), "lr")


def test_a_list_of_names_then_the_list_of_their_values_pairs_them() -> None:
    # real shape (after its logging prefix): `Epoch 10    [Avg. Loss, Loss]: [10.4449, 7.1693], 0`
    recs = run(KeyValueAdapter(""), [f"Epoch {e}    [Avg. Loss, Loss]: [{9 - e / 10:.4f}, {7 - e / 10:.4f}], 0"
                                     for e in (10, 20, 30)])
    assert series(recs, "Loss") == [(10, 6.0), (20, 5.0), (30, 4.0)]
    assert [s for s, _ in series(recs, "Avg. Loss")] == [10, 20, 30]
    assert values("(loss, acc) = (0.31, 0.92)") == {"loss": (1, 0.31), "acc": (1, 0.92)}
    assert values("step 3 [a, b]: [1.5, 2.5, 3.5]") == {}  # lists of other lengths are not paired


def test_the_steps_own_loss_comes_before_its_average_on_one_line() -> None:
    recs = run(KeyValueAdapter(""), ["step 1: Avg. Loss: 9.0, Loss: 7.0"])
    assert [s.name for s in samples(recs)] == ["Loss", "Avg. Loss"]  # the engine keeps the first as `loss`


def test_a_sentence_before_a_key_is_prose_but_an_abbreviation_is_part_of_the_name() -> None:
    # real shape: `Changed learning rate. Current lr = 0.0005`
    assert _pairs("Changed learning rate. Current lr = 0.0005")[0] == [("Current lr", 0.0005)]
    assert _pairs("Saving best model. val loss: 0.3")[0] == [("val loss", 0.3)]
    assert _pairs("Avg. Loss: 3.5")[0] == [("Avg. Loss", 3.5)]
    assert _pairs("Train Avg. Loss: 3.5")[0] == [("Train Avg. Loss", 3.5)]


def test_a_config_dump_printed_as_a_repr_gives_no_metrics() -> None:
    """A trainer that prints its settings as a dataclass repr on one line (dozens of `name=value` fields,
    nested reprs inside) states settings, one value each: the reader takes no metric from it, and the
    records after it are read as usual."""
    fields = ", ".join(f"knob_{i}={i / 10}" for i in range(20))
    dump = (f"2025-01-02 10:00:00\tINFO\tRunConfig(run_name='x', seed=7, model=ModelSettings(d_model=768, "
            f"n_layers=12, {fields}), optimizer=OptimSettings(learning_rate=0.0006, eps=1e-08), "
            f"auxiliary_loss_multiplier=0.0001)")  # (a setting named like a loss)
    lines = [dump] + [f"step {s}: loss={5 - 0.1 * s:.2f}, lr=0.0006" for s in range(1, 6)]
    recs = run(KeyValueAdapter(), lines)
    names = {s.name for s in samples(recs)}
    assert not any(n.startswith("knob") or "multiplier" in n or n in ("seed", "d_model", "n_layers", "eps")
                   for n in names), names
    assert len(series(recs, "loss")) == 5


def test_a_record_printed_as_a_short_repr_is_still_read() -> None:
    recs = run(KeyValueAdapter(), [f"Step {s}: Metrics(loss={2 - 0.1 * s:.2f}, acc={0.5 + 0.01 * s:.2f})"
                                   for s in range(1, 5)])
    assert len(series(recs, "acc")) == 4  # (a repr of a few fields is a record, not a config dump)


def test_a_python_config_echoed_into_the_log_is_no_metric_record() -> None:
    """MMCV prints its config file's source before training: an IoU threshold set there is a setting,
    not an IoU the model reached; the metric lines after it are read as before."""
    lines = ["model = dict(",
             "    train_cfg=dict(",
             "        rpn=dict(",
             "            pos_iou_thr=0.7,",
             "            neg_iou_thr=0.3,",
             "            min_pos_iou=0.3),",
             "        rcnn=dict(",
             "            pos_iou_thr=0.5,",
             "            neg_iou_thr=0.5,",
             "            min_pos_iou=0.5),",
             "        nms=dict(type='nms', iou_threshold=0.5),",
             "        nms=dict(type='nms', iou_threshold=0.7),",
             "    ))",
             "Epoch [1][50/361]\tlr: 2.473e-04, time: 1.122, loss_cls: 1.1899, acc: 73.9214, loss: 1.4563"]
    names = {s.name for s in samples(run(KeyValueAdapter(""), lines))}
    assert "loss" in names and "acc" in names
    assert not {n for n in names if "iou" in n}


def test_a_phase_word_before_a_dash_names_the_split_of_the_pairs_after_it() -> None:
    """`Epoch 1 Validation - Loss: 18.49, Mod Acc: 0.0`: the validation loss is the eval loss, not a train
    loss that jumped from 1.2 to 18.5; the training line's pairs stay the train split's."""
    recs = samples(run(KeyValueAdapter(""), [
        "Epoch 1 Training - Loss: 1.2084, Mod Acc: 0.8061, Time: 16.9s",
        "Epoch 1 Validation - Loss: 18.4914, Mod Acc: 0.0000, Mod F1: 0.0000"]))
    canon = Canonicalizer()
    got = {canon(s.name): s.value for s in recs}
    assert got["loss"] == 1.2084 and got["eval_loss"] == 18.4914
    assert any(s.name.lower().startswith("validation") and "acc" in s.name.lower() for s in recs)


def _strided_eval_log(epochs: int, every: int = 10, batches: int = 250, evals: int = 242,
                      summary: bool = True) -> list[str]:
    """The PyTorch ImageNet example's shape: `Epoch: [e][b/n]` and `Test: [b/n]` lines printed every `every`
    batches, tab-separated `Name value (running mean)`; the evaluation's count (242) is no multiple of
    `every`, so its last printed batch is 240, not 241. The eval mean falls to epoch 10, then rises."""
    out: list[str] = []
    for e in range(epochs):
        for b in range(0, batches, every):
            out.append(f"Epoch: [{e}][{b}/{batches}]\tTime 1.150 (1.210)\tData 0.360 (0.370)\t"
                       f"Loss {3.0 / (1 + e) + b / 10000:.4f} ({3.0 / (1 + e):.4f})")
        level = 2.5 - 0.05 * e if e <= 10 else 2.0 + 0.08 * (e - 10)
        for b in range(0, evals, every):
            out.append(f"Test: [{b}/{evals}]\tTime 0.640 (0.640)\tLoss {level + 0.5:.4f} ({level + b / 100000:.4f})")
        if summary:
            out.append(f" * Prec@1 {60 + e / 2:.3f} Prec@5 {85 + e / 5:.3f}")
    return out


def test_an_evaluation_printed_every_k_batches_is_read_at_its_last_printed_batch() -> None:
    """`Test: [240/242]` printed every 10 batches is the evaluation's last line (the next would be past the
    end): its running mean is the evaluation's, once per evaluation, at the step training reached."""
    from trainwatch.adapters.template import TemplateAdapter

    want = [(240, 2.5024), (490, 2.4524), (740, 2.4024)]
    for adapter in (KeyValueAdapter, TemplateAdapter):
        assert series(run(adapter(""), _strided_eval_log(3)), "eval_Loss") == want, adapter.__name__
        # no summary after it: the next training line ends an evaluation, the log's end its last one
        assert series(run(adapter(""), _strided_eval_log(3, summary=False)), "eval_Loss") == want
        # cut in the middle of its last evaluation: that one is no evaluation's result
        cut = _strided_eval_log(3, summary=False)[:-10]
        assert series(run(adapter(""), cut), "eval_Loss") == want[:2]
    # torchvision's MetricLogger prints every k batches and the last one (`[156/157]`): the evaluation is
    # read there, not at the batch before it (`[100/157]`), however far apart they are
    lines = ["Epoch: [0]  [300/313]  eta: 0:00:03  loss: 1.5021 (1.8810)  time: 0.2010",
             "Test:  [  0/157]  eta: 0:00:41  loss: 1.4102 (1.4102)  acc1: 48.4375 (48.4375)  time: 0.5276",
             "Test:  [100/157]  eta: 0:00:20  loss: 1.3001 (1.3802)  acc1: 50.0 (47.9)  time: 0.5276",
             "Test:  [156/157]  eta: 0:00:00  loss: 1.3502 (1.3902)  acc1: 48.4375 (47.5)  time: 0.5276",
             "Epoch: [1]  [  0/313]  eta: 0:00:45  loss: 1.4 (1.4)  time: 0.2"]
    got = run(KeyValueAdapter(""), lines)
    assert series(got, "eval_loss") == [(300, 1.3902)] and series(got, "eval_acc1") == [(300, 47.5)]
    # two evaluations in a row, each printed every 10 batches: its batches starting again end the first
    two = [lines[0]] + [f"{split}: [{b}/25]\tTime 0.6 (0.6)\tLoss 9.0 ({v + b / 1000:.3f})"
                        for split, v in (("Val", 1.0), ("Test", 2.0)) for b in (0, 10, 20)] + [lines[-1]]
    assert series(run(KeyValueAdapter(""), two), "eval_Loss") == [(300, 1.02), (300, 2.02)]


def test_a_strided_evaluation_that_rises_while_the_train_loss_falls_is_overfitting(tmp_path) -> None:
    from tests.rules.rulekit import run_log, told

    p = tmp_path / "train.log"
    p.write_text("\n".join(_strided_eval_log(30)) + "\n")
    eng = run_log(p)
    assert "loss.overfit" in told(eng)


def test_split_sizes_are_no_split_losses() -> None:
    """`Train:[5994], Val:[5794]` counts each split's examples: whole numbers are no loss (the same line with
    fractions is each split's loss)."""
    assert not samples(run(KeyValueAdapter(""), ["Dataset Name:bird, Train:[5994], Val:[5794]"]))
    assert series(run(KeyValueAdapter(""), ["Epoch 3: Train=0.41  Val=0.44"]), "Val loss") == [(3, 0.44)]


def test_named_step_counter_within_the_epoch_and_an_evaluations_running_batches() -> None:
    """`Epoch[002/100], Step[0100/0196], Avg Loss: ..`: the step counts within the epoch (its total is the
    epoch's length), so the run's step adds the epochs before; `Now training epoch 2. LR=..` says the
    epoch's LR; `Val Step[i/n], Avg Loss: ..` are an evaluation's running figures under way (its first
    batches far from its mean), not training points; its result line is the eval loss."""
    canon = Canonicalizer()
    lines = []
    for e in (1, 2, 3):
        lines.append(f"2023-01-02 10:0{e}:00,000 Now training epoch {e}. LR={e * 0.00003:.6f}")
        for i, v in ((0, 0.9 - e / 10), (50, 0.95 - e / 10)):
            lines.append(f"2023-01-02 10:0{e}:10,000 Epoch[{e:03d}/100], Step[{i:04d}/0080], Avg Loss: {v:.4f}, "
                         f"Avg Acc: 0.8000")
        lines.append(f"2023-01-02 10:0{e}:20,000 ----- Epoch[{e:03d}/100], Train Loss: {0.96 - e / 10:.4f}, "
                     "Train Acc: 0.8100, time: 170.12")
    lines.append("2023-01-02 10:05:00,000 ----- Validation after Epoch: 3")
    lines += [f"2023-01-02 10:05:0{k},000 Val Step[{i:04d}/0500], Avg Loss: {v:.4f}, Avg Acc@1: 0.6000"
              for k, (i, v) in enumerate(((0, 2.5), (100, 1.4), (200, 1.38)))]
    lines.append("2023-01-02 10:06:00,000 ----- Epoch[003/100], Validation Loss: 1.3809, Validation Acc@1: 0.7034")
    recs = run(KeyValueAdapter(""), lines)
    got = [(canon(s.name), s.step, s.value) for s in samples(recs)]
    avg = [(s.step, s.value) for s in samples(recs) if s.name == "Avg Loss"]
    assert avg == [(0, 0.8), (50, 0.85), (80, 0.7), (130, 0.75), (160, 0.6), (210, 0.65)]  # the epochs before added
    epochs = [(s.step, s.value) for s in samples(recs) if s.name == "Train Loss"]
    assert epochs == [(50, 0.86), (130, 0.76), (210, 0.66)]
    assert ("eval_loss", 210, 1.3809) in got
    assert [(step, v) for name, step, v in got if name == "lr"][-1][1] == 0.00009


def test_a_named_iteration_counter_that_never_goes_back_is_the_runs_own() -> None:
    """`Epoch[2/3] Iter[1100/3000] loss: ..`: an iteration that carries on across the epochs counts the run,
    not the epoch: it is the step as printed, with nothing added."""
    lines = [f"Epoch[{1 + i // 1000}/3] Iter[{i}/3000] loss: {2.0 - i / 3000:.4f}" for i in range(100, 3000, 500)]
    got = series(run(KeyValueAdapter(""), lines), "loss")
    assert [s for s, _ in got] == [100, 600, 1100, 1600, 2100, 2600]


def test_a_bare_grad_beside_the_loss_is_the_gradient_norm() -> None:
    """`Step: 99 (0) | Loss: 1.2 | Grad: 19.8 | Lr: 1e-06`: one number named `Grad` is the gradient's norm."""
    canon = Canonicalizer()
    lines = [f"Step: {s} ({s // 500}) | Loss: {1.0 / (s + 1):.5f} | Grad: {2.0 - s / 1000:.5f} | Lr: {s * 1e-8:.3e}"
             for s in range(99, 1000, 100)]
    got = {(canon(s.name), s.step) for s in samples(run(KeyValueAdapter(""), lines))}
    assert ("grad_norm", 99) in got and ("grad_norm", 999) in got and ("lr", 999) in got


def test_an_epoch_counter_without_its_total_before_a_counted_iteration() -> None:
    """`Epoch[2] Iteration[50/300] Loss: .., Base Lr: ..` (reid-baseline's ignite loop): the epoch's bracket says no
    total, the iteration's does; the iteration counts within the epoch, and `Base Lr` is the rate."""
    canon = Canonicalizer()
    lines = [f"Epoch[{e}] Iteration[{i}/300] Loss: {1.0 - e / 10 - i / 3000:.3f}, Acc: 0.8, Base Lr: {e * 1e-5:.2e}"
             for e in (1, 2, 3) for i in (100, 200, 300)]
    got = [(canon(s.name), s.step, s.value) for s in samples(run(KeyValueAdapter(""), lines))]
    assert ("loss", 100, 0.867) in got and ("epoch", 100, 1.0) in got
    assert ("lr", 300, 1e-05) in got and ("accuracy", 100, 0.8) in got
    losses = [(step, v) for name, step, v in got if name == "loss"]
    assert [s for s, _ in losses] == sorted(s for s, _ in losses) and len(losses) == 9


def test_a_phase_tag_after_the_epochs_counter_names_the_split() -> None:
    """`trainer: Epoch 3/50 [Val]   loss: ..` after `Epoch 3/50 [Train] loss: ..`: the tag says whose loss it is."""
    canon = Canonicalizer()
    lines = []
    for e in (1, 2, 3):
        lines.append(f"2024-05-01 10:0{e}:00 [INFO] trainer: Epoch {e}/50 [Train] loss: {0.5 - e / 100:.3f}, "
                     f"l1: 0.1, lr_G: 0.0002")
        lines.append(f"2024-05-01 10:0{e}:30 [INFO] trainer: Epoch {e}/50 [Val]   loss: {0.7 + e / 100:.3f}, l1: 0.2")
    got = [(canon(s.name), s.step, s.value) for s in samples(run(KeyValueAdapter(""), lines))]
    assert [(st, v) for n, st, v in got if n == "loss"] == [(1, 0.49), (2, 0.48), (3, 0.47)]
    assert [(st, v) for n, st, v in got if n == "eval_loss"] == [(1, 0.71), (2, 0.72), (3, 0.73)]


def test_values_each_followed_by_their_running_mean_in_brackets() -> None:
    """`epoch [1/9] batch [5/40] time 0.2 (0.5) loss 2.5 (2.1) acc 84.3 (88.1) lr 1.0e-05 eta 0:10:00` (Dassl):
    each value is the step's, the bracketed one its running mean; the names after the first are read too."""
    lines = [f"epoch [{e}/9] batch [{b}/40] time 0.237 (0.573) data 0.000 (0.261) loss {3.0 - e - b / 100:.4f} "
             f"({3.5 - e:.4f}) acc 84.3750 (88.1250) lr {e * 1e-5:.4e} eta 0:10:00" for e in (1, 2) for b in (20, 40)]
    recs = run(KeyValueAdapter(""), lines)
    assert [v for _, v in series(recs, "loss")] == [1.8, 1.6, 0.8, 0.6]
    assert [v for _, v in series(recs, "lr")] == [1e-05, 1e-05, 2e-05, 2e-05]
    assert not series(recs, "time")
    # (tab-separated under `Epoch: [e][i]`, SwAV's: the timings go, the loss and the rate stay)
    tabbed = [f"Epoch: [0][{i}]\tTime 2.1 (1.9)\tData 0.000 (0.014)\tLoss {4.3 - i / 100:.4f} (4.2)\tLr: 0.0019"
              for i in (0, 50, 100)]
    recs = run(KeyValueAdapter(""), tabbed)
    assert [v for _, v in series(recs, "Loss")] == [4.3, 3.8, 3.3] and not series(recs, "Time")


def test_a_leading_eta_clock_leaves_the_pairs_after_it() -> None:
    """`eta: 0:29:06 epoch: 1 iter: 30 .. loss: 1.52 (2.28) .. lr: 0.0001 max mem: 900` (maskrcnn-benchmark's
    MetricLogger, single blanks): the clock that leads is no metric, and the pairs after it are the record."""
    lines = [f"2024-01-01 10:0{e}:00,000 training INFO: eta: 0:2{9 - e}:06 epoch: {e} iter: 30 data: 0.0044 (0.0341) "
             f"loss: {2.0 - e / 10:.4f} (2.2802) loss_afm: 4.2888 (4.1966) time: 1.2761 (1.3073) lr: 0.000100 "
             "max mem: 900" for e in (1, 2, 3)]
    recs = run(KeyValueAdapter(""), lines)
    assert [v for _, v in series(recs, "loss")] == [1.9, 1.8, 1.7]
    assert [v for _, v in series(recs, "lr")] == [0.0001] * 3
    assert not series(recs, "eta")


def test_a_torch_scalar_printed_as_its_repr_is_its_value() -> None:
    """`train loss: 1.9, acc: tensor(0.33, device='cuda:0', dtype=torch.float64)<br>` under `#### Epoch 3/9`
    headings (a log kept as Markdown): the number inside the tensor's repr is the value."""
    canon = Canonicalizer()
    lines = ["## Training", ""]
    for e in range(3):
        lines += [f"#### Epoch {e}/9",
                  f"train loss: {1.9 - e / 10:.4f}, acc: tensor({0.3 + e / 10:.4f}, device='cuda:0', "
                  "dtype=torch.float64)<br>",
                  f"val loss: {1.5 - e / 10:.4f}, acc: tensor(0.6000, device='cuda:0', dtype=torch.float64)<br>", ""]
    got = [(canon(s.name), s.value) for s in samples(run(KeyValueAdapter(""), lines))]
    assert [v for n, v in got if n == "loss"] == [1.9, 1.8, 1.7]
    assert [v for n, v in got if n == "eval_loss"] == [1.5, 1.4, 1.3]
    assert ("accuracy", 0.3) in got and ("accuracy", 0.5) in got
