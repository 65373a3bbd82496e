"""An RL episode monitor (stable-baselines3's / baselines' `monitor.csv`): a JSON comment, then `r,l,t` rows,
one per finished episode. The reward is read as `reward`, stepped by the episode's number."""

from __future__ import annotations

from tests.adapters.helpers import run, samples, series
from trainwatch.adapters import detect
from trainwatch.adapters.csv_metrics import CsvMetricsAdapter
from trainwatch.names import Quality

MONITOR = ['#{"t_start": 1700000000.5, "env_id": "CartPole-v1"}', "r,l,t",
           "12.0,12,0.51", "30.0,30,1.25", "9.0,9,1.6", "200.0,200,9.75"]


def test_a_monitor_file_is_detected_as_csv_behind_its_comment() -> None:
    assert detect("\n".join(MONITOR) + "\n", "/runs/0.monitor.csv") == "csv"
    assert CsvMetricsAdapter.score("\n".join(MONITOR), "monitor.csv") >= 0.6


def test_monitor_rows_are_episodes_with_their_reward_length_and_time() -> None:
    recs = run(CsvMetricsAdapter("monitor.csv"), MONITOR)
    assert series(recs, "reward") == [(1, 12.0), (2, 30.0), (3, 9.0), (4, 200.0)]
    assert series(recs, "episode_length") == [(1, 12.0), (2, 30.0), (3, 9.0), (4, 200.0)]
    assert not samples(recs, "r") and not samples(recs, "t")  # `t` is each row's time, not a metric
    assert [s.time for s in samples(recs, "reward")] == [1700000000.5 + t for t in (0.51, 1.25, 1.6, 9.75)]
    assert all(not s.step_inferred for s in samples(recs))


def test_monitor_extra_info_columns_stay_metrics_and_no_comment_means_no_time() -> None:
    recs = run(CsvMetricsAdapter("monitor.csv"), ["r,l,t,is_success", "1.0,5,0.2,0", "3.0,7,0.4,1"])
    assert series(recs, "reward") == [(1, 1.0), (2, 3.0)]
    assert series(recs, "is_success") == [(1, 0.0), (2, 1.0)]
    assert all(s.time is None for s in samples(recs))
    direction = Quality()("reward")
    assert direction is not None and direction.higher  # the monitor's main metric is judged higher-is-better


def test_a_csv_that_is_no_monitor_keeps_its_names_and_comments_over_its_header_are_skipped() -> None:
    lines = ["# exported by hand", "r,loss", "1,0.5", "2,0.4"]
    assert CsvMetricsAdapter.score("\n".join(lines), "m.csv") >= 0.6
    recs = run(CsvMetricsAdapter("m.csv"), lines)
    assert series(recs, "loss") == [(None, 0.5), (None, 0.4)]
    assert [v for _, v in series(recs, "r")] == [1.0, 2.0]
