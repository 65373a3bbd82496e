"""HF Trainer console: dict parsing, step inference, bars, banners, and the traps of formats.md §1."""

from __future__ import annotations

import json
import math

from tests.adapters.helpers import events, run, samples, series
from trainwatch.adapters.hf_console import HFConsoleAdapter, parse_repr_dict
from trainwatch.model import EventKind

BAR = "{pct:3d}%|#         | {n}/{m} [00:{n:02d}<00:30,  1.50it/s]"


def bar(n: int, m: int) -> str:
    return BAR.format(pct=n * 100 // m, n=n, m=m)


def test_repr_dict_with_nan_inf_quoted_values_and_odd_keys() -> None:
    d = parse_repr_dict("{'loss': nan, 'grad_norm': inf, 'x': -inf, 'rewards/fmt_fn/mean': '0.625', "
                        "'eval_rouge-1': 0.41, 'profiling/Time taken: gen': 1.5, 'flag': True, 'name': 'abc', "
                        "'none': None, 'kl': '7.382e-06'}")
    assert math.isnan(d["loss"]) and d["grad_norm"] == math.inf and d["x"] == -math.inf
    assert d["rewards/fmt_fn/mean"] == 0.625 and d["eval_rouge-1"] == 0.41
    assert d["profiling/Time taken: gen"] == 1.5 and d["kl"] == 7.382e-06
    assert "flag" not in d and "name" not in d and "none" not in d


def test_v4_dicts_after_bars_get_the_bar_step_and_are_marked_inferred() -> None:
    lines = [
        "\r" + bar(0, 40) + "\r" + bar(5, 40)
        + "{'loss': 2.3051, 'grad_norm': 1.25, 'learning_rate': 5e-05, 'epoch': 0.12}",
        "\r" + bar(10, 40) + "{'loss': 1.9, 'grad_norm': nan, 'learning_rate': 4e-05, 'epoch': 0.25}",
    ]
    recs = run(HFConsoleAdapter(""), lines)
    assert series(recs, "loss") == [(5, 2.3051), (10, 1.9)]
    gn = samples(recs, "grad_norm")
    assert math.isnan(gn[1].value)  # NaN is a value, never dropped
    assert all(s.step_inferred for s in samples(recs))
    progress = events(recs, EventKind.PROGRESS)
    assert progress and progress[-1].fields == {"step": 10, "total": 40}


def test_v5_quoted_values_and_logging_first_step_from_epochs() -> None:
    # transformers 5: every value is a string; fast training leaves the bar behind (mininterval)
    lines = [
        bar(0, 80) + "   {'loss': '5.551', 'grad_norm': '0.6607', 'learning_rate': '0', 'epoch': '0.0125'}",
        bar(1, 80) + "   {'loss': '5.544', 'grad_norm': '0.6945', 'learning_rate': '0.0006', 'epoch': '0.0625'}",
        bar(6, 80) + "   {'loss': '5.447', 'grad_norm': '0.7255', 'learning_rate': '0.0005', 'epoch': '0.125'}",
        "{'loss': '5.1', 'grad_norm': '0.8', 'learning_rate': '0.0004', 'epoch': '0.1875'}",
    ]
    recs = run(HFConsoleAdapter(""), lines)
    assert [s for s, _ in series(recs, "loss")] == [1, 5, 10, 15]
    assert series(recs, "loss")[2][1] == 5.447


def test_buffered_stdout_burst_keeps_steps_rising() -> None:
    # block-buffered stdout: the bar is far ahead and several dicts arrive together
    lines = ["Num examples = 80 | Num Epochs = 1 | Total steps = 80"] + [bar(n, 80) for n in range(1, 31)]
    lines += [f"{{'loss': '{2 - k / 10}', 'epoch': '{k * 5 / 80}'}}" for k in range(1, 5)]
    recs = run(HFConsoleAdapter(""), lines)
    assert [s for s, _ in series(recs, "loss")] == [5, 10, 15, 20]


def test_an_eval_dict_behind_a_bar_that_ran_ahead_of_buffered_dicts_keeps_the_last_dicts_step() -> None:
    # block-buffered stdout: train dicts arrive together, then the eval of the last one's step shares a line
    # with the bar, which has run 44 steps on; the eval was logged at step 40, not at the bar's 84
    lines = ["TrainingArguments(", "logging_steps=10,", ")", bar(3, 800)]
    lines += [f"{{'loss': {2 - k / 10}, 'epoch': {k * 10 / 400:.2f}}}" for k in range(1, 5)]
    lines += [bar(84, 800) + "{'eval_loss': 1.5, 'eval_runtime': 9.0, 'epoch': 0.1}"]
    recs = run(HFConsoleAdapter(""), lines)
    last_train = series(recs, "loss")[-1][0]
    assert last_train < 84 and series(recs, "eval_loss") == [(last_train, 1.5)]


def test_logging_steps_from_arguments_dump_and_coarse_epochs() -> None:
    lines = ["TrainingArguments(", "logging_nan_inf_filter=True,", "logging_steps=10,", "num_train_epochs=2,", ")"]
    lines += ["{'loss': 0.61, 'grad_norm': 3.3, 'learning_rate': 7e-05, 'epoch': 0.0}"] * 3
    recs = run(HFConsoleAdapter(""), lines)
    assert [s for s, _ in series(recs, "loss")] == [10, 20, 30]
    # the dump itself is no metric, and logging_nan_inf_filter=True is not a NaN
    assert not [s for s in samples(recs) if s.line <= 5]


def test_trainer_state_beside_the_log_gives_exact_steps(tmp_log) -> None:  # type: ignore[no-untyped-def]
    state = {"global_step": 14, "log_history": [
        {"epoch": 0.5, "loss": 2.0, "step": 7}, {"epoch": 0.5, "eval_loss": 2.2, "step": 7},
        {"epoch": 1.0, "loss": 1.5, "step": 14}]}
    log = tmp_log("train.log", "")
    tmp_log("trainer_state.json", json.dumps(state))
    lines = ["{'loss': 2.0, 'epoch': 0.5}", "{'eval_loss': 2.2, 'eval_runtime': 1.0, 'epoch': 0.5}",
             "{'loss': 1.5, 'epoch': 1.0}"]
    recs = run(HFConsoleAdapter(log), lines)
    assert series(recs, "loss") == [(7, 2.0), (14, 1.5)]
    assert series(recs, "eval_loss") == [(7, 2.2)]


def test_summary_is_a_train_end_event_not_samples() -> None:
    lines = [bar(50, 50) + "{'loss': 1.2, 'epoch': 1.0}",
             "{'train_runtime': 39860.6586, 'train_samples_per_second': 1.407, 'train_steps_per_second': 0.044, "
             "'train_loss': 1.3628, 'epoch': 3.0}"]
    recs = run(HFConsoleAdapter(""), lines)
    end = events(recs, EventKind.TRAIN_END)
    assert len(end) == 1 and end[0].fields["train_loss"] == 1.3628 and end[0].fields["train_runtime"] == 39860.6586
    assert not samples(recs, "train_loss") and not samples(recs, "train_runtime")


def test_eval_bar_gives_eval_start_and_eval_dict_takes_the_train_step() -> None:
    lines = ["\r" + bar(20, 100) + "{'loss': 1.0, 'epoch': 0.2}",
             "\r" + bar(0, 8) + "\r" + bar(4, 8) + "\r" + bar(8, 8),
             "{'eval_loss': 1.3, 'eval_runtime': 2.0, 'epoch': 0.2}"]
    recs = run(HFConsoleAdapter(""), lines)
    assert len(events(recs, EventKind.EVAL_START)) == 1
    assert series(recs, "eval_loss") == [(20, 1.3)]


def test_dict_sharing_a_line_with_bars_and_a_warning() -> None:
    line = ("{'loss': '7.811e-06', 'grad_norm': '0.3151', 'epoch': '0.375'}\r" + bar(30, 250)
            + "Both `max_new_tokens` (=512) and `max_length`(=100) seem to have been set.")
    recs = run(HFConsoleAdapter(""), ["Total steps = 250", line])
    assert series(recs, "loss")[0][1] == 7.811e-06
    assert events(recs, EventKind.PROGRESS)[-1].fields == {"step": 30, "total": 250}


def test_other_printed_dicts_and_sets_are_ignored() -> None:
    lines = ["Passing `generation_config` together with arguments=({'pad_token_id', 'disable_compile'}) is deprecated",
             "{'r': 8, 'lora_alpha': 16, 'lora_dropout': 0.05}"]
    assert not samples(run(HFConsoleAdapter(""), lines))


def test_unsloth_banner_with_thousands_separators() -> None:
    lines = ["==((====))==  Unsloth - 2x faster free finetuning | Num GPUs used = 1",
             "   \\\\   /|    Num examples = 12,800 | Num Epochs = 2 | Total steps = 1,600",
             "O^O/ \\_/ \\    Batch size per device = 2 | Gradient accumulation steps = 4",
             ' "-____-"     Trainable parameters = 18,464,768 of 1,562,179,072 (1.18% trained)']
    info = events(run(HFConsoleAdapter(""), lines), EventKind.INFO)
    fields: dict[str, int] = {}
    for e in info:
        fields.update(e.fields)
    assert fields == {"world_size": 1, "num_examples": 12800, "num_epochs": 2, "total_steps": 1600,
                      "batch_size": 2, "grad_accum": 4, "params": 18464768}


def test_resume_and_checkpoint_events() -> None:
    lines = ["Resuming training from checkpoint out/checkpoint-500",
             "Saving model checkpoint to out/checkpoint-600"]
    recs = run(HFConsoleAdapter(""), lines)
    assert events(recs, EventKind.RESUME)[0].fields == {"step": 500}
    assert events(recs, EventKind.CHECKPOINT)[0].step == 600


def test_score() -> None:
    assert HFConsoleAdapter.score("{'loss': 1.0, 'epoch': 0.1}\n", "x.log") >= 0.85
    assert HFConsoleAdapter.score("Step 10: loss=2.45\n", "x.log") == 0.0


def test_state_in_newest_checkpoint_dir_and_unrelated_state_ignored(tmp_path) -> None:  # type: ignore[no-untyped-def]
    ck = tmp_path / "checkpoint-20"
    ck.mkdir()
    (ck / "trainer_state.json").write_text(json.dumps({"log_history": [
        {"epoch": 0.3, "loss": 2.0, "step": 6}, {"epoch": 0.6, "loss": 1.8, "step": 12}]}))
    log = str(tmp_path / "train.log")
    lines = ["{'loss': 2.0, 'epoch': 0.3}", "{'loss': 1.8, 'epoch': 0.6}", "{'loss': 1.7, 'epoch': 0.9}"]
    steps = [s for s, _ in series(run(HFConsoleAdapter(log), lines), "loss")]
    assert steps[:2] == [6, 12] and steps[2] > 12  # the third is past the state file: inferred, still rising


def test_resume_restarts_the_count_from_the_checkpoint() -> None:
    lines = ["logging_steps=10,", "{'loss': 2.0, 'epoch': 0.0}", "{'loss': 1.9, 'epoch': 0.0}",
             "Resuming training from checkpoint out/checkpoint-100",
             "{'loss': 1.5, 'epoch': 0.5}", "{'loss': 1.4, 'epoch': 0.6}"]
    assert [s for s, _ in series(run(HFConsoleAdapter(""), lines), "loss")] == [10, 20, 110, 120]


def test_an_infinite_epoch_does_not_cost_the_line_its_nan_loss() -> None:
    from tests.adapters.helpers import run, samples
    from trainwatch.adapters.hf_console import HFConsoleAdapter

    lines = ["{'loss': 2.0, 'epoch': 0.1}", "{'loss': 1.9, 'epoch': 0.2}", "{'loss': nan, 'epoch': inf}"]
    got = [s for s in samples(run(HFConsoleAdapter(""), lines)) if s.name == "loss"]
    assert len(got) == 3 and got[-1].value != got[-1].value


def test_an_eval_dict_takes_the_bars_step_when_the_bar_is_newer_than_the_last_dict() -> None:
    """Excerpted logs (and logging intervals longer than the eval interval) show an eval right after a
    bar far past the last train dict: the eval ran at the bar's step."""
    from tests.adapters.helpers import run, samples
    from trainwatch.adapters.hf_console import HFConsoleAdapter

    lines = ["   15%|#5        | 2000/13605 [3:38:47<21:07:24,  6.55s/it]",
             "{'loss': 0.0145, 'grad_norm': 0.004, 'learning_rate': 4.26e-05, 'epoch': 0.73}",
             "   88%|########8 | 12000/13605 [27:54:35<3:02:12,  6.81s/it]",
             "{'eval_loss': nan, 'eval_runtime': 3468.0, 'epoch': 4.41}"]
    got = {s.name: s.step for s in samples(run(HFConsoleAdapter(""), lines))}
    assert got["loss"] == 2000 and got["eval_loss"] == 12000


def test_trainer_banners_mark_the_evaluation_and_the_end_of_training() -> None:
    """`***** Running Evaluation *****` starts an evaluation whose bar counts batches, not steps;
    `***** train metrics *****` is what log_metrics("train") prints once training has ended."""
    from tests.adapters.helpers import events, run
    from trainwatch.adapters.hf_console import HFConsoleAdapter
    from trainwatch.model import EventKind

    lines = ["***** train metrics *****", "  epoch                    =     0.9997",
             "  train_loss               =     2.6578", "***** Running Evaluation *****",
             "  Num examples = 50000", "100%|##########| 3125/3125 [01:34<00:00, 33.23it/s]"]
    recs = run(HFConsoleAdapter(""), lines)
    kinds = [e.kind for e in events(recs)]
    assert EventKind.TRAIN_END in kinds and EventKind.EVAL_START in kinds
    assert not [e for e in events(recs) if e.kind is EventKind.PROGRESS and e.fields.get("step") == 3125]


def test_max_steps_inside_the_first_epoch_steps_by_the_data_not_by_the_total() -> None:
    """Unsloth/Trainer banners say `Num Epochs = 1 | Total steps = 300` when max_steps stops the run at
    epoch 0.16: an epoch is examples / total batch steps (1869), not 300."""
    from tests.adapters.helpers import run, samples
    from trainwatch.adapters.hf_console import HFConsoleAdapter

    lines = ["==((====))==  Unsloth - 2x faster free finetuning | Num GPUs used = 1",
             "   \\\\   /|    Num examples = 7,473 | Num Epochs = 1 | Total steps = 300",
             "O^O/ \\_/ \\    Batch size per device = 1 | Gradient accumulation steps = 4",
             "\\        /    Data Parallel GPUs = 1 | Total batch size (1 x 4 x 1) = 4"]
    lines += [f"{{'loss': 0.01, 'grad_norm': 0.05, 'learning_rate': 1e-05, 'epoch': {e:.2f}}}"
              for e in (0.05, 0.1, 0.16)]
    steps = [x.step for x in samples(run(HFConsoleAdapter(""), lines)) if x.name == "loss"]
    assert steps[-1] is not None and 290 <= steps[-1] <= 305 and steps == sorted(steps)


def test_a_run_that_printed_only_its_summary_reads_its_mean_train_loss() -> None:
    summary = ("{'train_runtime': 11.2237, 'train_samples_per_second': 0.713, 'train_steps_per_second': 0.713, "
               "'train_loss': 1.527357816696167, 'epoch': 1.0}")
    recs = run(HFConsoleAdapter(""), ["Training adapter1", summary, "100% 8/8 [00:11<00:00,  1.40s/it]"])
    assert [s.value for s in samples(recs, "train_loss")] == [1.527357816696167]
    assert events(recs, EventKind.TRAIN_END)
    logged = run(HFConsoleAdapter(""), ["{'loss': 2.0592, 'learning_rate': 7.17e-05, 'epoch': 0.5}", summary])
    assert not samples(logged, "train_loss")  # beside logged steps, the mean over the run is no point of the series


def test_a_bar_redrawn_after_a_dict_is_its_step_and_sets_the_pace() -> None:
    """max_steps stops the run inside epoch 4: the banner's total / epochs (250 / 4) misstates the pace.
    The bar tqdm.write redraws after a dict on its own line is the dict's step (30 at epoch 0.375), and
    from it the later dicts' epochs give their steps (epoch 1.25 -> 100, not 78)."""
    q = "'epoch': '{e}'}}"
    lines = ["   \\\\   /|    Num examples = 80 | Num Epochs = 4 | Total steps = 250",
             "{'loss': '0.1', " + q.format(e="0.375") + "\r" + bar(30, 250) + "\r" + bar(31, 250),
             "{'loss': '0.2', " + q.format(e="1.25"),
             "{'loss': '0.3', " + q.format(e="3.125")]
    assert series(run(HFConsoleAdapter(""), lines), "loss") == [(30, 0.1), (100, 0.2), (250, 0.3)]
