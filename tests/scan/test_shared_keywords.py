"""Every source of a live glob scans with the same keyword list: its searchers are built once and shared,
so following 200 files does not hold 200 copies of the error signatures' automata (about 0.8 MB each)."""

from __future__ import annotations

from pathlib import Path

import pytest

from trainwatch.adapters.pipeline import CSI8, ESC, plan_keywords, trigger_keywords
from trainwatch.scan import Scanner, native


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


@pytest.mark.skipif(native() is None, reason="the reference scanner is in use")
def test_scanners_with_the_same_keywords_share_their_searchers():
    words = list(dict.fromkeys([ESC, CSI8, *trigger_keywords(), *plan_keywords()]))
    first = Scanner(words)  # the list's searchers are built here
    before = rss_mb()
    many = [Scanner(words) for _ in range(200)]
    grown = rss_mb() - before
    assert grown < 30, f"200 scanners took {grown:.0f} MB"
    line = b"Traceback (most recent call last):\nStep 3: loss=nan\n"
    chunks = [s.feed(line) for s in (first, many[0], many[-1])]
    hits = [tuple(zip(c.kw_line.tolist(), c.kw_id.tolist(), strict=True)) for c in chunks]
    assert hits[0] and hits[0] == hits[1] == hits[2]  # shared, and finding the same
