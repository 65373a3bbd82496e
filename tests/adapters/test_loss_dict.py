"""`Losses {'ner': 172.9}`: a dict of losses after a label, read as printed or as an epoch's running total."""

from __future__ import annotations

import math

from tests.adapters.helpers import run, series
from trainwatch.adapters.keyvalue import KeyValueAdapter
from trainwatch.adapters.loss_dict import loss_dict


def _running_totals(epochs: list[list[float]]) -> list[str]:
    """spaCy's loop: one `losses` dict per epoch, each batch's loss added to it and the dict printed."""
    lines = ["Training Start !"]
    for batch_losses in epochs:
        total = 0.0
        for loss in batch_losses:
            total += loss
            lines.append(f"Losses {{'ner': {total!r}}}")
    return lines + ["Training End !"]


def test_a_dict_of_one_loss_is_the_loss_and_of_several_each_components_loss() -> None:
    assert loss_dict("Losses {'ner': 172.94969073783977}") == [("loss", 172.94969073783977)]
    assert loss_dict('losses: {"tok2vec": 1.5, "textcat": 0.25}') == [("tok2vec loss", 1.5), ("textcat loss", 0.25)]
    assert loss_dict("Settings {'lr': 0.001}") is None  # not a dict of losses
    assert loss_dict("Losses {'ner': 'n/a'}") is None


def test_running_totals_of_each_epoch_are_read_as_the_epochs_totals_not_as_a_climbing_loss() -> None:
    """The printed value climbs through an epoch and falls back at the next: each epoch is one record, its
    last printed value (the total as logged, on its own line), never the climb inside it."""
    epochs = [[50.0 / (1 + b) for b in range(30)], [3.0 / (1 + b) for b in range(20)],
              [1e-12] + [0.5 / (1 + b) for b in range(20)]]
    lines = _running_totals(epochs)
    got = series(run(KeyValueAdapter(""), lines), "loss")
    totals = [sum(e) for e in epochs]
    assert [s for s, _ in got] == [1, 2, 3]
    assert all(math.isclose(v, t) for (_, v), t in zip(got, totals))
    ends = [i + 1 for i, line in enumerate(lines) if line.startswith("Losses")
            and (i + 1 == len(lines) or not lines[i + 1].startswith("Losses")
                 or float(lines[i + 1].split(": ")[1].rstrip("}")) < float(line.split(": ")[1].rstrip("}")))]
    lines_read = [r.line for r in run(KeyValueAdapter(""), lines) if getattr(r, "name", None) == "loss"]
    assert lines_read == ends


def test_a_dict_of_per_batch_losses_is_read_record_by_record() -> None:
    """A loop that prints each batch's own losses (a fresh dict each time): they fall and rise, so every
    printed value is a record."""
    values = [2.0, 1.7, 1.9, 1.4, 1.5, 1.2, 1.3, 1.0, 1.1, 0.9, 1.0, 0.8]
    got = series(run(KeyValueAdapter(""), [f"Losses {{'ner': {v}}}" for v in values]), "loss")
    assert [v for _, v in got] == values and [s for s, _ in got] == list(range(1, len(values) + 1))
