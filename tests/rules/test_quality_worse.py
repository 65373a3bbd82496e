"""A log that prints no loss, only progress lines and an evaluation metric (a StyleGAN2-ADA console: `tick`
lines and an FID report as a JSON object every few snapshots): the metric's reports are read at the last
printed step, an elapsed time in parts is no metric, and a metric that only got worse is told."""

from __future__ import annotations

import json
from pathlib import Path

from rulekit import run_log

from tests.adapters.helpers import run, series
from trainwatch.adapters.keyvalue import KeyValueAdapter


def _duration(seconds: int) -> str:
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}h {m:02d}m {s:02d}s" if h else f"{m}m {s:02d}s"


def _gan_console(fids: list[float], ticks_per_eval: int = 5) -> list[str]:
    """Progress lines every tick and a metric report after every `ticks_per_eval`-th, starting at tick 0."""
    lines = ["Training for 5000 kimg...", ""]
    for tick in range(ticks_per_eval * (len(fids) - 1) + 1):
        kimg = 200.0 + 4 * tick
        lines.append(f"tick {tick:<5d} kimg {kimg:<8.1f} time {_duration(70 + 600 * tick):<12s} "
                     f"sec/tick {600.0 + tick % 3:<7.1f} sec/kimg {150.0 + tick % 3:<7.2f} maintenance 0.0    "
                     f"cpumem 4.10   gpumem 8.20   augment {0.2 + 0.01 * tick:.3f}")
        if tick % ticks_per_eval == 0:
            k = tick // ticks_per_eval
            lines.append("Evaluating metrics...")
            lines.append(json.dumps({"results": {"fid50k_full": fids[k]}, "metric": "fid50k_full",
                                     "total_time": 1100.0, "total_time_str": "18m 20s", "num_gpus": 1,
                                     "snapshot_pkl": f"network-snapshot-{int(kimg):06d}.pkl",
                                     "timestamp": 1600000000.0 + 600 * tick}))
    return lines


def test_a_metric_report_line_is_read_at_the_last_printed_step_and_a_duration_in_parts_is_no_metric() -> None:
    recs = run(KeyValueAdapter(""), _gan_console([40.0, 38.5, 37.0]))
    assert series(recs, "fid50k_full") == [(0, 40.0), (5, 38.5), (10, 37.0)]
    assert series(recs, "time") == []  # `time 1h 03m 51s` is not a time of 1
    assert [v for _, v in series(recs, "sec/tick")][:3] == [600.0, 601.0, 602.0]
    # a JSON object whose `results` is not a dict of numbers is no report
    assert series(run(KeyValueAdapter(""), ['{"results": {"samples": ["a", "b"]}, "metric": "x"}']), "samples") == []


def test_an_fid_only_worse_in_a_log_without_losses_warns_one_improving_or_wobbling_does_not(tmp_path: Path) -> None:
    path = tmp_path / "log.txt"
    path.write_text("\n".join(_gan_console([50.0, 53.5, 55.0, 61.0, 58.5, 57.9, 57.0, 66.0])) + "\n")
    got = [a for a in run_log(path).alerts() if a.rule == "quality.worsened"]
    assert len(got) == 1
    ev = got[0].finding.evidence
    assert got[0].finding.subject == "fid50k_full" and ev["step"] == 0 and ev["value"] == 50.0
    assert ev["last_value"] == 66.0 and ev["last_step"] == 35 and ev["evaluations_since"] == 7
    # one that improves, or only wobbles around its level, is no finding
    for name, fids in (("better.txt", [90.0, 70.0, 55.0, 48.0, 44.0, 41.0, 40.0, 39.5]),
                       ("wobble.txt", [40.0, 41.0, 39.5, 40.8, 40.2, 41.1, 40.4, 41.0])):
        path = tmp_path / name
        path.write_text("\n".join(_gan_console(fids)) + "\n")
        assert not [a for a in run_log(path).alerts() if a.rule == "quality.worsened"], name


def test_a_metric_that_collapsed_is_told_as_the_collapse_alone(tmp_path: Path) -> None:
    """Worse since its best and far below it: quality.collapse tells it, quality.worsened stays quiet."""
    dice = [0.60 + 0.014 * e for e in range(10)] + [0.62, 0.63, 0.61, 0.08, 0.05, 0.06, 0.07, 0.30, 0.55, 0.60,
                                                    0.61, 0.62]
    path = tmp_path / "test.log"
    path.write_text("\n".join(f"Epoch {e + 1:04d} : Dice = {d:.4f}" for e, d in enumerate(dice)) + "\n")
    eng = run_log(path)
    assert {"quality.collapse", "quality.worsened"} <= {a.rule for a in eng.alerts()}
    told = {a.rule for a in eng.alerts(inhibited=False)}
    assert "quality.collapse" in told and "quality.worsened" not in told


def test_a_metric_near_0_all_run_is_told_as_not_learning_alone(tmp_path: Path) -> None:
    """Validity 7.81 % at its second evaluation and 0-1.56 % at every other: near 0 the whole run, one
    incident that quality.not_learning tells; 'worse since its best of 7.81 %' would be a second story
    made of noise at 0."""
    vals = [1.56, 7.81, 0.0, 1.56, 0.0, 0.0, 1.56, 0.0, 0.0, 0.0, 1.56, 0.0, 0.0, 0.0, 0.0, 0.0]
    path = tmp_path / "eval.log"
    path.write_text("\n".join(f"Epoch {e + 1:04d} : Validity = {v:.2f}%" for e, v in enumerate(vals)) + "\n")
    told = {a.rule for a in run_log(path).alerts(inhibited=False)}
    assert "quality.not_learning" in told and "quality.worsened" not in told
