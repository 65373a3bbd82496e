"""The template reader on metrics told in words: a sentence with its counter (`The loss after 3 epochs is
0.218`), a file of unnamed numeric rows with such sentences between them, and a loop's counter alone on a
line (`[Round 10/100]`) dating the `Key: value` lines printed after it."""

from __future__ import annotations

from tests.adapters.helpers import events, run, series
from trainwatch.adapters import detect, shapes
from trainwatch.adapters.template import TemplateAdapter
from trainwatch.model import EventKind


def read(lines: list[str]) -> list:  # type: ignore[type-arg]
    return run(TemplateAdapter("t"), lines)


def test_a_sentence_with_its_counter_is_a_point_at_that_counter() -> None:
    recs = read(["The loss after 1 epochs is 0.266\t", "noise 3 4", "Loss at epoch 2: 0.241",
                 "validation accuracy after 3 epochs = 0.91."])
    assert series(recs, "loss") == [(1, 0.266)]
    assert series(recs, "Loss") == [(2, 0.241)]
    assert series(recs, "validation accuracy") == [(3, 0.91)]


def test_a_sentence_without_a_metric_word_is_no_series() -> None:
    assert shapes.prose_metric("The queue after 3 steps is 12") is None
    assert shapes.prose_metric("Seed at step 4: 7") is None
    assert shapes.prose_metric("The loss after 3 steps is 12") is not None


def test_headerless_numeric_rows_are_claimed_and_only_the_sentences_read() -> None:
    rows = [f"{i * 0.0437:.13f}\t{0.2 + (i % 7) / 30:.14f}\t" for i in range(300)]
    lines = rows[:100] + ["The loss after 1 epochs is 0.266\t"] + rows[100:200] + \
        ["The loss after 2 epochs is 0.241\t"] + rows[200:]
    assert detect("\n".join(lines), "run.out") == "template"
    recs = read(lines)
    assert series(recs, "loss") == [(1, 0.266), (2, 0.241)]
    assert {getattr(r, "name", None) for r in recs} == {"loss"}  # the unnamed columns stay unread


def test_a_few_numeric_lines_in_prose_are_not_a_table() -> None:
    lines = ["Starting the job on node 4"] * 30 + ["1 2", "3 4"]
    assert detect("\n".join(lines), "run.out") != "template"


def test_a_counter_alone_dates_the_key_value_lines_after_it() -> None:
    lines = []
    for r in (10, 20):
        lines += [f"[Round {r - 1}/20] training...", "  client 1/10...", f"[Round {r}/20]   ",
                  f"Averaged Train Loss: {1 / r:.4f}", f"Averaged Test Accuracy: {0.5 + r / 100:.4f}", "  took: 6.58s"]
    recs = read(lines)
    assert series(recs, "Averaged Train Loss") == [(10, 0.1), (20, 0.05)]
    assert series(recs, "Averaged Test Accuracy") == [(10, 0.6), (20, 0.7)]
    assert [e.fields for e in events(recs, EventKind.PROGRESS)][-1] == {"step": 20, "total": 20}
