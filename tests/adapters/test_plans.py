"""The plan reader: a run's planned total in its unit, from every shape logs print it in, the run's own
counter in that unit, launches that set a new total, and early-stopping messages; prose and settings
that only look alike are left alone."""

from __future__ import annotations

import pytest

from trainwatch.adapters.keyvalue import KeyValueAdapter
from trainwatch.adapters.pipeline import SourceParser
from trainwatch.adapters.plans import PlanReader
from trainwatch.model import Event, EventKind


def read(lines: list[str]) -> list[Event]:
    r = PlanReader("log")
    out: list[Event] = []
    for n, line in enumerate(lines, 1):
        out.extend(r.feed(line, n))
    return out


def plans(lines: list[str]) -> list[tuple[str, int, int | None]]:
    return [(e.fields["unit"], e.fields["total"], e.fields["reached"]) for e in read(lines) if "unit" in e.fields]


TOTALS = [
    # (line, unit, total, counter value read on the same line)
    ("EPOCH 1 of 30", "epoch", 30, 1),
    ("=== Epoch:[  6/200 ],step:[ 10/197],img_size:[416],total_loss:3.5|lr:0.0001", "epoch", 200, 6),
    ("2025-05-14 16:02:53,777 - train - INFO - Epoch [11/25], Training Loss: 4.6271", "epoch", 25, 11),
    ("epoch 7/200 loss 0.31", "epoch", 200, 7),
    ("Epoch: [0/100]  [   0/1562]  eta: 2:41:33  loss: 10.776567 (10.776567)", "epoch", 100, 0),
    ("Epoch 3/10", "epoch", 10, 3),
    ("max_epochs=30", "epoch", 30, None),
    ("trainer: {max_epochs: 30, accelerator: gpu}", "epoch", 30, None),
    ("  num_train_epochs=3.0,", "epoch", 3, None),
    ('{"num_train_epochs": 3, "learning_rate": 2e-05}', "epoch", 3, None),
    ("Namespace(lr=0.0001, batch_size=2, weight_decay=0.0001, epochs=10, lr_drop=200, start_epoch=0)", "epoch", 10,
     None),
    ("epochs: 100", "epoch", 100, None),
    ("  Num Epochs = 3", "epoch", 3, None),
    ("python train.py --epochs 50 --lr 0.1", "epoch", 50, None),
    ("  train_iters ..................................... 500000", "step", 500000, None),
    ("python pretrain_gpt.py --train-iters 500000 --lr 0.00015", "step", 500000, None),
    ("  MAX_ITER: 18500", "step", 18500, None),
    ("lr_scheduler: {name: cosine, total_steps: 10000}", "step", 10000, None),
    ("  Total optimization steps = 1,000", "step", 1000, None),
    ("Training for 200000 kimg...", "kimg", 200000, None),
    ("Training for 20 epochs", "epoch", 20, None),
    ("running for 150 epochs", "epoch", 150, None),
]


@pytest.mark.parametrize(("line", "unit", "total", "reached"), TOTALS, ids=[t[0][:40] for t in TOTALS])
def test_each_shape_gives_its_total_in_its_unit(line: str, unit: str, total: int, reached: int | None) -> None:
    (e,) = read([line])
    assert e.kind is EventKind.PLAN
    assert (e.fields["unit"], e.fields["total"], e.fields["reached"], e.fields["since"]) == (unit, total, reached, 1)
    assert e.fields["declared"] == line.strip()


NOT_TOTALS = [
    "warmup_epochs: 10",
    "python train.py --warmup-epochs 5",
    "max_steps=-1",
    "max_update: 0",
    "{'loss': 1.02, 'grad_norm': 0.8, 'learning_rate': 1e-05, 'epoch': 0.97}",
    '{"step": 10, "train": {"epoch": 0.0001}}',
    "Epochs: 3/10",  # a count of epochs run so far, not a setting
    "Validation loss has not improved for 3 epochs.",
    "Accuracy at epoch 27 of the network on the 10000 test images: 0.5%",
    "epoch: 0.5 loss: 1.2",
    "num_train_epochs=2.5",
    # a field of an object inside the config: a part's setting, not the run's length
    "env_config EnvConfig(sim=SimConfig(high=BackoffWindow(min_steps=6, max_steps=18)), horizon=80)",
]


@pytest.mark.parametrize("line", NOT_TOTALS)
def test_lookalikes_give_no_total(line: str) -> None:
    assert plans([line]) == []


def test_a_bare_counter_moves_the_reached_value_of_the_total_before_it() -> None:
    lines = ["epochs: 100", "Epoch: [0]  [  0/782]  loss: 7.1", "Epoch: [0]  [ 10/782]  loss: 7.0",
             "Epoch: [1]  [  0/782]  loss: 6.9", "Accuracy at epoch 1 of the network: 0.5%", "Epoch: [2]  [0/782]"]
    assert plans(lines) == [("epoch", 100, None), ("epoch", 100, 0), ("epoch", 100, 1), ("epoch", 100, 2)]


def test_events_only_when_something_changes() -> None:
    """A counter printed on every line tells its value once, not once per line."""
    lines = [f"Epoch [{e}/25] batch {b} loss: 1.0" for e in range(1, 4) for b in range(50)]
    assert plans(lines) == [("epoch", 25, 1), ("epoch", 25, 2), ("epoch", 25, 3)]


def test_a_counter_past_the_total_is_not_the_runs() -> None:
    """A fine-tune of 50 epochs that loads a pretrained model `from epoch 66` is at epoch 2, not 66."""
    lines = ["'epochs': 50,", "INFO:root:loaded pretrained encoder from epoch 66 with msg: ok", "INFO:root:Epoch 1",
             "INFO:root:Epoch 2"]
    assert plans(lines)[-1] == ("epoch", 50, 2)


def test_a_counter_with_no_total_known_says_nothing() -> None:
    assert plans(["Epoch: [3]  [ 10/782]  loss: 7.0", "epoch 4"]) == []


def test_the_latest_launch_total_applies() -> None:
    """A resumed run prints its config again with a new MAX_ITER: that total, from that line, applies."""
    events = read(["  MAX_ITER: 18500", "iter: 19", "  MAX_ITER: 18500", "  MAX_ITER: 37000", "  MAX_ITER: 111000"])
    assert [(e.fields["total"], e.fields["since"]) for e in events] == [(18500, 1), (37000, 4), (111000, 5)]


def test_a_setting_printed_again_starts_a_new_launch_of_its_counter() -> None:
    """Appended runs: the second prints its config anew, and its counter starts from nothing again."""
    first = [f"Epoch: [{e}/100]  [0/10]" for e in range(100)]
    second = ["epochs: 100", "Epoch: [0]  [0/782]", "Epoch: [27]  [781/782]"]
    got = plans(first + second)
    assert got[-1] == ("epoch", 100, 27)
    assert ("epoch", 100, None) in got  # the new launch's total, before its counter


def test_a_counter_that_goes_back_is_a_new_launch() -> None:
    """Keras runs one after another: `Epoch 1/10` again starts a new count to its own total."""
    lines = [f"Epoch {e}/10" for e in range(1, 11)] + [f"Epoch {e}/20" for e in range(1, 4)] + ["Epoch 1/20"]
    got = plans(lines)
    assert got[-1] == ("epoch", 20, 1)
    assert ("epoch", 20, 3) in got


def test_units_are_kept_apart() -> None:
    events = read(["max_epochs=200", "max_steps=5000", "Epoch [7/200] step 100"])
    assert [(e.fields["unit"], e.fields["total"], e.fields["reached"]) for e in events] == [
        ("epoch", 200, None), ("step", 5000, None), ("epoch", 200, 7)]


EARLY_STOPS = [
    "2025-05-14 16:59:24,567 - train - INFO - Validation loss has not improved for 3 epochs. Stopping training.",
    "Epoch 00012: early stopping",
    "Monitored metric val_loss did not improve in the last 3 records. Best score: 0.744. Signaling Trainer to stop.",
    "Early stopping triggered after 5 evaluations without improvement",
    "Early stopping at epoch 14",
    "No improvement in 10 epochs, stopping.",
    "Stopping early: the validation metric did not improve",
]


@pytest.mark.parametrize("line", EARLY_STOPS)
def test_early_stopping_messages(line: str) -> None:
    (e,) = [e for e in read(["max_epochs=100", line]) if e.fields.get("early_stop")]
    assert e.line == 2 and e.text == line.strip()


NOT_EARLY_STOPS = [
    "early_stopping_patience: 3",
    "python train.py --early-stopping --patience 5",
    "EarlyStopping counter: 1 out of 7",
    "Metric val_loss improved by 0.012 >= min_delta = 0.0. New best score: 0.512",
    "Stopping training: loss is NaN",
    "use early stopping: True",
    # a data set printed whole: words of prose far apart on one long line say nothing about the training
    "[('He said that sacking players will not improve things. " + "The team played well. " * 40
    + "The announced stoppage of all transactions', {'entities': []})]",
    "[('There was no improvement in the talks. " + "Markets rose. " * 40 + "Traffic will stop at noon', {})]",
]


@pytest.mark.parametrize("line", NOT_EARLY_STOPS)
def test_settings_and_other_stops_are_no_early_stop(line: str) -> None:
    assert not [e for e in read([line]) if e.fields.get("early_stop")]


def test_the_byte_path_reads_the_same_plans_as_the_line_path() -> None:
    """Lines are only decoded for the reader when a keyword is in them: the same events either way, on a
    log whose metric lines (read by the key: value adapter) carry none."""
    text = "".join([
        "Namespace(lr=0.001, epochs=200)\n",
        *(f"step: {s} loss: {2 - s / 1000:.3f}\n" for s in range(1, 40)),
        "\x1b[32mEpoch [3/200]\x1b[0m step: 40 loss: 1.9\n",
        "Validation loss has not improved for 3 epochs. Stopping training.\n",
    ])

    def plan_events(records: list) -> list[tuple]:
        return [(r.line, r.text, tuple(sorted(r.fields.items()))) for r in records
                if isinstance(r, Event) and r.kind is EventKind.PLAN]

    by_line = SourceParser(KeyValueAdapter("log"))
    lined = [r for n, line in enumerate(text.splitlines(), 1) for r in by_line.feed(line, n)]
    by_bytes = SourceParser(KeyValueAdapter("log"))
    got = by_bytes.feed_bytes(text.encode()) + by_bytes.finish()
    assert plan_events(got) == plan_events(lined)
    assert [f for *_, f in plan_events(got)][-1] == (("early_stop", True),)
    assert len(plan_events(got)) == 3
