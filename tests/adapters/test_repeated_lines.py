"""A metric line written twice or more by two handlers on one file counts once (SourceParser._repeated)."""

from __future__ import annotations

from trainwatch.adapters.keyvalue import KeyValueAdapter
from trainwatch.adapters.pipeline import SourceParser
from trainwatch.model import Sample


def _log(lines: list[str]) -> bytes:
    return ("\n".join(lines) + "\n").encode()


def _triplicated() -> list[str]:
    out = []
    for k, (step, loss) in enumerate([(50, 0.3048), (100, 0.3164), (150, 0.2841)]):
        for copy in range(3):  # the same line, each copy stamped a little later
            out.append(f"2025-03-18 20:{10 + 3 * k + copy:02d}:49,158 - INFO - __main__ - Step {step}/1000, "
                       f"loss={loss}")
    return out


def _loss_points(records: list) -> list[tuple[int | None, float]]:  # type: ignore[type-arg]
    return [(r.step, r.value) for r in records if isinstance(r, Sample) and r.name == "loss"]


def test_a_line_repeated_word_for_word_counts_once_on_both_paths() -> None:
    lines = _triplicated()
    by_line = SourceParser(KeyValueAdapter("run.log"))
    got_lines = [r for n, line in enumerate(lines, 1) for r in by_line.feed(line, n)]
    by_bytes = SourceParser(KeyValueAdapter("run.log"))
    got_bytes = list(by_bytes.read_bytes(_log(lines)).records())
    want = [(50, 0.3048), (100, 0.3164), (150, 0.2841)]
    assert _loss_points(got_lines) == want
    assert _loss_points(got_bytes) == want


def test_the_same_values_at_a_new_step_are_a_new_point() -> None:
    lines = [f"Step {s}/1000, loss=0.6931" for s in (10, 20, 30)]
    got = list(SourceParser(KeyValueAdapter("run.log")).read_bytes(_log(lines)).records())
    assert _loss_points(got) == [(10, 0.6931), (20, 0.6931), (30, 0.6931)]


def test_a_repeat_after_another_metric_line_is_kept() -> None:
    lines = ["Step 10/100, loss=0.5", "Step 10/100, eval_loss=0.7", "Step 10/100, loss=0.5"]
    got = list(SourceParser(KeyValueAdapter("run.log")).read_bytes(_log(lines)).records())
    assert _loss_points(got) == [(10, 0.5), (10, 0.5)]


def test_lines_without_a_printed_step_are_never_dropped() -> None:
    lines = ["loss=0.6931, lr=0.001"] * 3
    got = list(SourceParser(KeyValueAdapter("run.log")).read_bytes(_log(lines)).records())
    assert len(_loss_points(got)) == 3
