"""Adapters and the scanner never raise, whatever the log holds."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.examples import examples
from trainwatch.adapters import registry
from trainwatch.adapters.signatures import SignatureScanner

FRAGMENTS = ["{'loss': ", "'nan'", "nan", "inf", "-inf", "}", "{'", "\r", " 10/100 [", "%|", "|", ": ", "=", ", ",
             " - ", "step", "iter ", "iteration ", "Epoch 1/3", "[step=5/10,epoch=0]", "    k=1,000",
             "Traceback (most recent call last):",
             "  File \"x.py\", line 1", "ChildFailedError: ", "exitcode  : -9", "====", "CUDA out of memory",
             "Tried to allocate 1.0 GiB", "\t", "\x00", "\ufffd", "1e309", "-0", "9" * 40, ",", "\"", "'", "[", "]",
             "Total steps = 1,0,0", "logging_steps=", "num_train_epochs=x"]
lines = st.lists(st.one_of(st.text(max_size=200), st.sampled_from(FRAGMENTS)), max_size=12).map("".join)
byte_lines = st.binary(max_size=300).map(lambda b: b.decode("utf-8", "replace"))
NAMES = sorted(registry())
FUZZ = settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize("name", NAMES)
@FUZZ
@given(batch=st.lists(st.one_of(lines, byte_lines), max_size=25))
def test_adapters_never_raise(name: str, batch: list[str]) -> None:
    cls = registry()[name]
    cls.score("\n".join(batch), "fuzz.log")
    ad = cls("")
    if cls.whole_file:
        list(ad.parse_document("\n".join(batch)))
    for n, line in enumerate(batch, 1):
        list(ad.parse(line, n))
    list(ad.finish())


@FUZZ
@given(batch=st.lists(st.one_of(lines, byte_lines), max_size=40))
def test_scanner_never_raises(batch: list[str]) -> None:
    sc = SignatureScanner("f")
    for n, line in enumerate(batch, 1):
        for ev in sc.feed(line, n):
            assert ev.signature or ev.kind.value == "traceback"
    sc.finish()


@pytest.mark.parametrize("name", NAMES)
def test_huge_lines(name: str) -> None:
    cls = registry()[name]
    huge = ["{'loss': " * 20000, "\r 5%|#| 5/100 [" * 20000, "step 1: " + "a=1, " * 50000, "x" * 2_000_000]
    cls.score("\n".join(huge)[:1 << 16], "big.log")
    ad = cls("")
    for n, line in enumerate(huge, 1):
        list(ad.parse(line, n))
    list(ad.finish())
    sc = SignatureScanner("")
    for n, line in enumerate(huge, 1):
        sc.feed(line, n)
    sc.finish()


PREFIX_FRAGMENTS = ["[rank3]:", "[default0]:", "[1,0]<stdout>:", "0: ", "  12: ", "node-3: ", "localhost: ",
                    "10.0.0.1: ", "(main_task pid=12)", "(raylet)", "2024-05-01 12:00:00,123", "[2024-05-01 12:00:00]",
                    "2024-13-45T99:99:99Z", " - INFO - ", "[INFO]", "INFO:root:", "W1222 19:29:33.885000 1 a.py:8] ",
                    "loss: ", "1.5", " ", "\t", "-"]
prefixed = st.lists(st.one_of(st.sampled_from(PREFIX_FRAGMENTS), st.text(max_size=20)), max_size=10).map("".join)


@FUZZ
@given(batch=st.lists(st.one_of(prefixed, byte_lines), max_size=30))
def test_prefix_stripper_never_raises_and_only_cuts_the_front(batch: list[str]) -> None:
    from trainwatch.adapters.prefix import PrefixStripper, strip_text

    s = PrefixStripper()
    for line in batch:
        text, info = s.strip(line)
        assert line.endswith(text) and (info is None) == (text == line)
    strip_text("\n".join(batch))
