"""The template reader on counters written as words and on table rows drawn as progress bars."""

from __future__ import annotations

from tests.adapters.helpers import events, run, samples, series
from trainwatch.adapters import detect
from trainwatch.adapters.template import TemplateAdapter
from trainwatch.model import EventKind


def read(lines: list[str]) -> list:  # type: ignore[type-arg]
    return run(TemplateAdapter("t"), lines)


# -- a counter that opens the line, with no separator ----------------------------------------------
def test_a_leading_worded_counter_dates_the_key_value_pairs_after_it() -> None:
    lines = [f"Global-step {s} --Accept update with alpha=1.0, kl=2.0e-07, old={-3 + s / 10:.2f}, new={-3 + s / 10:.2f}"
             for s in (5, 6, 7)]
    recs = read(lines)
    assert [s for s, _ in series(recs, "kl")] == [5, 6, 7]
    assert series(recs, "old") == [(5, -2.5), (6, -2.4), (7, -2.3)]


def test_a_leading_word_that_names_no_counter_gives_no_step() -> None:
    recs = read([f"Layer {n} --weights norm={n / 10}" for n in (5, 6, 7)])
    assert all(s.step != 5 for s in samples(recs, "norm"))


def test_a_metric_named_with_the_step_it_was_taken_at() -> None:
    lines = ["Global-step 32 --Accept update with alpha=1.0, kl=1e-09, old=-1.0, new=-1.0",
             "Total reward in global step 33: 1.3682",
             "Global-step 34 --Accept update with alpha=1.0, kl=1e-09, old=-1.0, new=-1.0",
             "Total reward in global step 333: 0.72"]
    assert series(read(lines), "Total reward") == [(33, 1.3682), (333, 0.72)]


# -- comma-separated `name value` phrases ----------------------------------------------------------
def test_comma_separated_phrases_with_a_worded_counter() -> None:
    lines = [f"epoch {e}, minibatch 120/120, validation error {90 - e:.6f} %" for e in (1, 2, 3)]
    recs = read(lines)
    got = series(recs, "validation error")
    assert [v for _, v in got] == [89.0, 88.0, 87.0]
    steps = [s for s, _ in got]
    assert steps == sorted(steps) and len(set(steps)) == 3


def test_a_phase_label_before_the_counter_is_no_metric() -> None:
    lines = [f"Pre-training layer {layer}, epoch {e}, cost  {0.2 - e / 100:.6f}" for layer in (0, 1) for e in range(3)]
    lines.append("Pre-training layer final, epoch 0, cost  0.18")
    recs = read(lines)
    assert [v for _, v in series(recs, "cost")] == [0.2, 0.19, 0.18, 0.2, 0.19, 0.18, 0.18]
    assert not [s for s in samples(recs) if "layer" in s.name.lower()]


def test_prose_with_commas_and_numbers_is_no_phrase_line() -> None:
    recs = read(["Loaded 3 files, 120 images, in 4 folders"] * 3)
    assert not samples(recs)


def test_theano_tutorial_console_is_detected_as_the_templates() -> None:
    head = "\n".join(["... pre-training the model"]
                     + [f"Pre-training layer 0, epoch {e}, cost  {0.2 - e / 1000:.6f}" for e in range(6)])
    assert detect(head, "run.out") == "template"


# -- a table row drawn as a progress bar's description (Ultralytics' console) -----------------------
HEADER = "      Epoch    GPU_mem   box_loss   seg_loss   cls_loss   dfl_loss  Instances       Size"


def _epoch(e: int, box: float) -> str:
    redraws = [f"\x1b[K      {e}/500      1.27G     {box + n / 100:.4f}      3.396      2.275      1.263"
               f"        {70 + n}        640: {2 * n}% ━━━━━━━━━━━━ {n}/50  9.3s" for n in (0, 25, 50)]
    return "\r" + "\r".join(redraws)


def test_ultralytics_rows_under_their_header_give_the_epochs_losses_and_their_sum() -> None:
    lines = ["Starting training for 500 epochs...", "", HEADER, _epoch(1, 0.8), "", HEADER, _epoch(2, 0.7)]
    recs = read([ln.replace("\x1b[K", "") for ln in lines])
    assert series(recs, "box_loss") == [(1, 1.3), (2, 1.2)]
    assert [s for s, _ in series(recs, "loss")] == [1, 2]
    assert abs(series(recs, "loss")[0][1] - (1.3 + 3.396 + 2.275 + 1.263)) < 1e-9
    assert not samples(recs, "GPU_mem")
    assert events(recs, EventKind.PROGRESS)[-1].fields == {"step": 2, "total": 500}


def test_older_ultralytics_rows_with_a_tqdm_bar_are_read_too() -> None:
    row = ("      3/100      2.1G     0.9512      1.204      1.311         64        640: 100%|██████████| 50/50 "
           "[00:09<00:00]")
    recs = read(["      Epoch    GPU_mem   box_loss   cls_loss   dfl_loss  Instances       Size", row])
    assert series(recs, "box_loss") == [(3, 0.9512)]
    assert series(recs, "loss") == [(3, 0.9512 + 1.204 + 1.311)]


def test_a_row_of_another_table_under_the_header_is_not_read_by_it() -> None:
    recs = read([HEADER, "                   all         18         18    0.00296      0.889    0.00614     0.0043"])
    assert not samples(recs, "box_loss")


# -- a console of tqdm bars whose postfix holds the metrics, between per-epoch summaries -------------
def test_bars_with_a_postfix_of_metrics_go_to_the_template_reader_whole() -> None:
    lines = []
    for e in (1, 2):
        lines += [f"Epoch {e}:  {2 * n}%|##  | {n}/48 [00:02<00:02, 10.30it/s, CE={1 / (e * n):.3f}, "
                  f"acc={80 + n / 10:.1f}%]" for n in range(1, 48, 3)]
        lines += ["", f"Epoch {e}", f"  Train - CE: {1 / e:.4f}, KL: 2.5673, acc: 74.6%",
                  f"  Val   - CE: {0.5 / e:.4f}, KL: 3.4609, acc: 93.3%", ""]
    head = "\n".join(lines) + "\n"
    assert detect(head, "train.txt") == "template"
    recs = read(lines)
    assert [s for s, _ in series(recs, "CE")][:2] == [1, 4]
