"""The two ways a duration is written: in a sentence, and on the dashboard's clock face."""

from __future__ import annotations

import math

from trainwatch.timefmt import clock, span


def test_span_grows_units_as_the_time_grows() -> None:
    assert [span(s) for s in (0, 44.6, 89, 90, 185, 5399, 5400, 7530, 2 * 86400 - 1, 2 * 86400, 3 * 86400 + 4 * 3600)] \
        == ["0s", "45s", "89s", "1m 30s", "3m 05s", "89m 59s", "1h 30m", "2h 05m", "47h 59m", "2d 00h", "3d 04h"]


def test_clock_reads_like_a_stopwatch_and_says_unknown_plainly() -> None:
    assert clock(3725) == "1:02:05" and clock(59.9) == "0:00:59"
    assert clock(2 * 86400 + 3 * 3600) == "2d03:00:00"
    assert clock(None) == clock(math.nan) == clock(-1.0) == "—"
