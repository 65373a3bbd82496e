"""The pure-Python scanner against the scanner contract, on small inputs, hypothesis input and real logs."""

from __future__ import annotations

import math
import random
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.examples import examples
from trainwatch.scan.chunk import ARRAY_FIELDS, Chunk, concat
from trainwatch.scan.reference import MAX_LINE, Scanner, _Keywords

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT.parent / "shared" / "corpus"


def scan(data: bytes, keywords: list[str] | None = None, cuts: list[int] | None = None) -> tuple[Chunk, Scanner]:
    """Feed `data` cut at `cuts` (one feed when None), then finish; the chunks joined into one."""
    scanner = Scanner(keywords or [])
    bounds = [0, *sorted(cuts or []), len(data)]
    chunks = [scanner.feed(data[a:b]) for a, b in zip(bounds, bounds[1:])]
    chunks.append(scanner.finish())
    return concat(chunks), scanner


def dicts(chunk: Chunk, scanner: Scanner) -> list[dict[str, float]]:
    """Each found dict as {key: value} of its numeric entries."""
    out: list[dict[str, float]] = [{} for _ in range(len(chunk.dict_line))]
    for d, k, v in zip(chunk.ent_dict, chunk.ent_key, chunk.ent_value):
        out[int(d)][scanner.keys[int(k)]] = float(v)
    return out


def tokens(chunk: Chunk, scanner: Scanner) -> list[tuple[str, float]]:
    """The key/value tokens as (key, value) in order."""
    return [(scanner.keys[int(k)], float(v)) for k, v in zip(chunk.kv_key, chunk.kv_value)]


# -- lines ---------------------------------------------------------------------------------------------

def test_lines_offsets_and_numbers_are_absolute_across_feeds() -> None:
    s = Scanner([])
    a = s.feed(b"first\nsec")
    assert (a.first_lineno, len(a), a.line(0), s.pending) == (1, 1, b"first", 3)
    b = s.feed(b"ond\r\n\nthird")
    assert b.first_lineno == 2 and b.base_offset == 6
    assert b.line_start.tolist() == [6, 14] and b.line_end.tolist() == [12, 14]
    assert [b.line(i) for i in range(len(b))] == [b"second", b""]
    assert b.data == b"second\r\n\n"
    c = s.finish()
    assert (c.first_lineno, c.line_start.tolist(), c.line(0), s.pending) == (4, [15], b"third", 0)
    assert len(s.finish()) == 0


def test_a_feed_without_newline_is_an_empty_chunk_that_says_where_the_next_line_starts() -> None:
    s = Scanner([])
    s.feed(b"ab\n")
    c = s.feed(b"cd")
    assert len(c) == 0 and c.first_lineno == 2 and c.base_offset == 3 and c.data == b""


def test_cr_before_newline_split_across_feeds_is_not_part_of_the_line() -> None:
    whole, _ = scan(b"abc\r\nx\n")
    split, _ = scan(b"abc\r\nx\n", cuts=[4])
    assert whole.same_as(split)
    assert whole.line_end.tolist() == [3, 6]


def test_finish_keeps_a_trailing_cr_and_the_scanner_goes_on_after_it() -> None:
    s = Scanner([])
    assert s.finish().line_start.size == 0
    s.feed(b"ab\r")
    c = s.finish()
    assert c.line_end.tolist() == [3]
    d = s.feed(b"c\n")
    assert (d.first_lineno, d.line_start.tolist()) == (2, [3])


def test_visible_start_is_the_last_segment_holding_more_than_blanks() -> None:
    c, _ = scan(b"plain\n 10%|#| 1/10\r 20%|##| 2/10\r    \t\r\n\r  \r\t\nx\r\n")
    assert [c.visible(i) for i in range(len(c))] == [b"plain", b" 20%|##| 2/10\r    \t", b"\r  \r\t", b"x"]
    assert c.visible_start[2] == c.line_start[2]


def test_invalid_utf8_is_scanned_and_keys_are_decoded_with_replacement() -> None:
    c, s = scan(b"\xff\xfe{'\xffkey': 1.5}\x80 caf\xc3 =2\n\xc0\n", ["\ufffd", "caf"])
    assert len(c) == 2
    assert dicts(c, s) == [{"\ufffdkey": 1.5}]
    assert c.kw_line.tolist() == [0] and c.kw_id.tolist() == [1]  # U+FFFD is not in the raw bytes


# -- keywords ------------------------------------------------------------------------------------------

def test_keywords_one_hit_per_line_and_keyword_sorted() -> None:
    data = b"out of memory out of memory Traceback\nno hit here\nTraceback\r 5%|\rCUDA out of memory\n"
    c, _ = scan(data, ["Traceback", "out of memory", "traceback", "memory"])
    assert list(zip(c.kw_line.tolist(), c.kw_id.tolist())) == [(0, 0), (0, 1), (0, 3), (2, 0), (2, 1), (2, 3)]
    assert c.kw_id.dtype == np.int32 and c.kw_line.dtype == np.int64


def test_keywords_never_cross_a_line_end_and_empty_ones_never_match() -> None:
    c, _ = scan(b"Trace\nback\nab\r\ncd\n", ["Traceback", "", "b\r", "x\ny", "b"])
    assert list(zip(c.kw_line.tolist(), c.kw_id.tolist())) == [(1, 4), (2, 4)]


def test_keywords_must_be_a_list_of_text_and_data_bytes_like() -> None:
    with pytest.raises(TypeError):
        Scanner([b"bytes"])  # type: ignore[list-item]
    with pytest.raises(TypeError):
        Scanner("Traceback")
    s = Scanner(["b"])
    assert s.feed(bytearray(b"ab\n")).kw_line.tolist() == [0] and s.feed(memoryview(b"b\n")).kw_line.tolist() == [0]
    with pytest.raises(TypeError):
        s.feed(5)  # type: ignore[arg-type]


def test_keyword_hits_match_a_plain_search_past_the_sample_the_finder_counts() -> None:
    rng = random.Random(7)
    words = ["out of memory", "Traceback", "NCCL", "xy", "e", "mem"]
    pieces = [rng.choice([b"loss: 1.0 ", b"\n", b"memory ", b"NCC", b"L", b"x", b"y", b"\r\n", b"Trace", b"back",
                          b"out of ", b"e", b"\xff"]) for _ in range(120_000)]
    data = b"".join(pieces)
    c, _ = scan(data, words)
    expected = [(i, k) for i in range(len(c)) for k, w in enumerate(words) if w.encode() in c.line(i)]
    assert list(zip(c.kw_line.tolist(), c.kw_id.tolist(), strict=True)) == expected
    assert len(data) > 2**18 and len(expected) > 1000  # the pair counts see only the first 256 KiB


# -- dicts ---------------------------------------------------------------------------------------------

def test_dict_values_nan_infinity_quoted_numbers_separators_and_percent() -> None:
    line = (b"{'a': NaN, 'b': Infinity, 'c': -Infinity, 'd': nan, 'e': -inf, 'f': '1.0', 'g': \" 2e-3 \", "
            b"'h': 1,234.5, 'i': 95%, 'j': .5, 'k': -1, 'l': 1.5e-05, 'm': '12,000', 'n': 'INF'}\n")
    c, s = scan(line)
    got = dicts(c, s)[0]
    assert math.isnan(got.pop("a")) and math.isnan(got.pop("d"))
    assert got == {"b": math.inf, "c": -math.inf, "e": -math.inf, "f": 1.0, "g": 0.002, "h": 1234.5,
                   "i": 95.0, "j": 0.5, "k": -1.0, "l": 1.5e-05, "m": 12000.0, "n": math.inf}
    assert c.dict_start.tolist() == [0] and c.dict_end.tolist() == [len(line) - 1]


def test_entries_without_a_number_are_left_out_but_the_dict_counts() -> None:
    data = b"""x {'loss': 2.0, 'ok': True, 'm': None, 'name': 'llama', "q": "it's", 'z': false} y {}\n"""
    c, s = scan(data)
    assert dicts(c, s) == [{"loss": 2.0}, {}]
    assert s.keys == ["loss"]
    assert c.dict_start.tolist() == [2, data.index(b"{}")]
    assert c.dict_end.tolist() == [data.index(b"} y") + 1, len(data) - 1]


def test_nested_objects_are_flattened_with_their_key_paths() -> None:
    c, s = scan(b'{"step": 1, "train": {"epoch": 0.5, "grad": {"norm": 1.2}}, "loss": 2}\n'
                b"{'h': [1, [2, '[']], 'l': 3, 'e': {}} {'l': 4}\n")
    assert dicts(c, s) == [{"step": 1.0, "train/epoch": 0.5, "train/grad/norm": 1.2, "loss": 2.0},
                           {"l": 3.0}, {"l": 4.0}]
    assert c.dict_line.tolist() == [0, 1, 1]
    assert s.keys == ["step", "train/epoch", "train/grad/norm", "loss", "l"]


def _deep(levels: int) -> bytes:
    """An object with `levels` objects nested in it, each holding a number and the next one."""
    return b"".join(b'{"k%d": %d, "n": ' % (k, k) for k in range(levels)) + b'{"leaf": 9}' + b"}" * levels


def test_nesting_deeper_than_seven_levels_is_parsed_but_its_entries_dropped() -> None:
    c, s = scan(_deep(7) + b"\n" + _deep(8) + b"\n")
    first, second = dicts(c, s)
    assert first["n/n/n/n/n/n/n/leaf"] == 9.0 and len(first) == 8
    assert len(second) == 8 and not any(k.endswith("leaf") for k in second)


@pytest.mark.parametrize("line", [
    b'{"a": ["x", "]", \'[\', "\\"]"], "b": 1}', b'{"a": [[[]], {"c": [1]}], "b": 1}',
    b'{"s": {"t": "}\\"{"}, "b": 1}', b"{'a': [], 'b': 1}",
])
def test_lists_are_skipped_whole_with_brackets_matched_outside_strings(line: bytes) -> None:
    c, s = scan(line + b"\n")
    assert dicts(c, s) == [{"b": 1.0}] and c.dict_end.tolist() == [len(line)]


@pytest.mark.parametrize("line", [b"{'a': [1}, 'b': 1}", b"{'a': [1, 'x], 'b': 1}", b"{'a': {'b': 1}",
                                  b"{'a': [1]"])
def test_unbalanced_lists_and_objects_do_not_parse(line: bytes) -> None:
    c, _ = scan(line + b"\n")
    assert c.dict_line.size == 0


def test_scanning_resumes_where_a_failed_object_stopped() -> None:
    # The inner object of an outer one that fails is not retried on its own; a `{` after the stop is.
    c, s = scan(b"{'a': {'b': 1}, 'c': tensor(1)} {'d': 2}\n{ {'e': 3}\n{'f': 'open {'g': 4}\n")
    assert dicts(c, s) == [{"d": 2.0}, {"e": 3.0}]


def test_adversarial_nesting_is_linear() -> None:
    c, _ = scan(b"{'a': " * 100_000 + b"\n" + b'{"a": [' * 100_000 + b"\n" + b"{'a': " + b"[" * 10_000 + b"\n")
    assert c.dict_line.size == 0 and len(c) == 3


def test_json_objects_with_double_quotes_and_no_spaces() -> None:
    c, s = scan(b'{"loss":1.25,"lr":1e-4,"grad_norm":NaN,"tag":"a\\"b"}\n')
    got = dicts(c, s)[0]
    assert got["loss"] == 1.25 and got["lr"] == 1e-4 and math.isnan(got["grad_norm"])


@pytest.mark.parametrize("text", [
    b"{'a': 1,}", b"{'a' 1}", b"{a: 1}", b"{'a': 1 'b': 2}", b"{'a\\'b': 1}", b"{'a': np.float64(1.0)}",
    b"{'a': 1,2345}", b"{'a': 'open}", b"{'a': 1\r}", b"{'" + b"k" * 201 + b"': 1}",
])
def test_objects_that_do_not_parse_are_skipped(text: bytes) -> None:
    c, _ = scan(text + b"\n")
    assert c.dict_line.size == 0


def test_keys_up_to_200_bytes_are_kept() -> None:
    c, s = scan(b"{'" + b"k" * 200 + b"': 1}\n")
    assert s.keys == ["k" * 200] and c.ent_value.tolist() == [1.0]


# -- key: value tokens -----------------------------------------------------------------------------------

def test_megatron_style_multi_word_keys() -> None:
    line = (b" iteration       10/  500000 | consumed samples:          640 | lm loss: 2.3E+00 | "
            b"number of skipped iterations:   0 | elapsed time per iteration (ms): 512.3 |\n")
    c, s = scan(line)
    assert tokens(c, s) == [("consumed samples", 640.0), ("lm loss", 2.3), ("number of skipped iterations", 0.0)]
    assert c.kv_pos.tolist() == [line.index(b"consumed"), line.index(b"lm loss"), line.index(b"number")]


def test_key_equals_value_and_tokens_right_after_each_other() -> None:
    c, s = scan(b"step 10 | loss: 2.31 | lr=1e-4, acc = 95.2%lr=1 loss=nan b=2 train/loss:3 loss=0.5x=1\n")
    got = tokens(c, s)
    assert [k for k, _ in got] == ["loss", "lr", "acc", "lr", "loss", "b", "train/loss", "loss"]
    assert math.isnan(got[4][1]) and [v for _, v in got[:4]] == [2.31, 1e-4, 95.2, 1.0]
    assert [v for _, v in got[5:]] == [2.0, 3.0, 0.5]  # `x` starts inside the value 0.5x: not a word


def test_key_runs_stop_at_non_words_and_keep_at_most_four_words_and_64_bytes() -> None:
    long_word = b"w" * 70
    c, s = scan(b"Epoch 3/10 ... val loss: 0.2 a b c d e: 1 --lr=3 20ms/step - loss: 4 x  y: 5 "
                + long_word + b": 6 " + b"q" * 40 + b" " + b"r" * 30 + b": 7\n")
    assert tokens(c, s) == [("val loss", 0.2), ("b c d e", 1.0), ("loss", 4.0), ("y", 5.0), ("r" * 30, 7.0)]


def test_values_need_no_boundary_but_words_do() -> None:
    c, s = scan(b"time: 1.5s mem=12GB status: information mode=nanogpt, n: 1,234,567 x=inf y: -Infinity\n")
    assert tokens(c, s) == [("time", 1.5), ("mem", 12.0), ("n", 1234567.0), ("x", math.inf),
                            ("y", -math.inf)]


@pytest.mark.parametrize(("text", "value"), [
    (b"a: +1", 1.0), (b"a: -nan", math.nan), (b"a: 3epochs", 3.0), (b"a: 1e", 1.0), (b"a: 1.e5", 1e5),
    (b"a: 1,2345", 1.0), (b"a: 1,234,56", 1234.0), (b"a: 1.5,000", 1.5), (b"a: -.5e-3%", -0.0005),
    (b"a: infinity", math.inf), (b"a: 1e999", math.inf), (b"a = \t 7", 7.0),
])
def test_the_number_grammar_of_token_values(text: bytes, value: float) -> None:
    c, _ = scan(text + b"\n")
    assert c.kv_value.size == 1 and (c.kv_value[0] == value or (math.isnan(value) and math.isnan(c.kv_value[0])))


def test_tokens_only_in_the_visible_segment_and_outside_dicts() -> None:
    c, s = scan(b"loss: 9 hidden\rloss: 1 {'a': 2, 'b': 'c d: 5'} e: 3\n")
    assert tokens(c, s) == [("loss", 1.0), ("e", 3.0)]
    assert dicts(c, s) == [{"a": 2.0}]


def test_keys_interned_by_line_dicts_before_tokens_and_stable_across_feeds() -> None:
    s = Scanner([])
    c = s.feed(b"z: 1 {'b': 2} y=3 {'a': 4}\nx: 5\n")
    assert s.keys == ["b", "a", "z", "y", "x"]
    assert c.ent_key.tolist() == [0, 1] and c.kv_key.tolist() == [2, 3, 4]
    c2 = s.feed(b"{'new': 1, 'a': 2} x: 3\n")
    assert s.keys[:5] == ["b", "a", "z", "y", "x"] and s.keys[5] == "new"
    assert c2.ent_key.tolist() == [5, 1] and c2.kv_key.tolist() == [4]


# -- progress ----------------------------------------------------------------------------------------------

def test_progress_last_bar_in_the_line_wins() -> None:
    data = (b" 10%|#    | 10/100 [00:01<00:09]\r 20%|##   | 20/100 [00:02<00:08]\r{'loss': 1}\n"
            b"no bar | here\n| 12345678901234567890/5 |\t3/4 |  7/8\n")
    c, _ = scan(data)
    assert c.prog_line.tolist() == [0, 2] and c.prog_n.tolist() == [20, 7] and c.prog_total.tolist() == [100, 8]


# -- long lines ------------------------------------------------------------------------------------------

def test_a_2_mib_line_is_one_line_and_only_its_first_mib_is_scanned() -> None:
    head = b"Traceback {'a': 1} loss: 2 | 3/4 "
    line = head + b"x" * (2 * MAX_LINE - len(head) - 40) + b"out of memory {'b': 5} lr: 6 | 7/8"
    data = line + b"\nnext loss: 3\n"
    one, s1 = scan(data, ["Traceback", "out of memory"])
    assert len(one) == 2 and one.line_end.tolist() == [len(line), len(data) - 1]
    assert one.kw_id.tolist() == [0] and dicts(one, s1) == [{"a": 1.0}]
    assert tokens(one, s1) == [("loss", 2.0), ("next loss", 3.0)] and one.prog_n.tolist() == [3]
    assert one.line(1) == b"next loss: 3"
    assert one.data == line[:MAX_LINE] + b"\nnext loss: 3\n"  # a cut line keeps its first MiB in data
    split, _ = scan(data, ["Traceback", "out of memory"], cuts=[5, MAX_LINE - 3, MAX_LINE + 10, len(line)])
    assert split.differences(one) == []


def test_a_held_partial_line_is_capped_and_later_lines_still_slice() -> None:
    s = Scanner(["zz"])
    s.feed(b"a" * (MAX_LINE - 1))
    s.feed(b"b" * 100 + b"zz")
    assert s.pending == MAX_LINE
    c = s.feed(b"tail\r\nnext: 1\n")
    assert c.line_start.tolist() == [0, MAX_LINE + 107] and c.line_end.tolist() == [MAX_LINE + 105, MAX_LINE + 114]
    assert c.line(0) == b"a" * (MAX_LINE - 1) + b"b" and c.line(1) == b"next: 1" and c.kw_line.size == 0
    assert c.data == c.line(0) + b"\r\nnext: 1\n" and c.base_offset == 0


def test_a_line_of_exactly_one_mib_before_crlf_is_not_cut_even_when_held() -> None:
    line = b"x" * (MAX_LINE - 8) + b"Traceback"[:8]
    whole, _ = scan(line + b"\r\nok\n", ["Traceback"[:8]])
    split, _ = scan(line + b"\r\nok\n", ["Traceback"[:8]], cuts=[MAX_LINE + 1])
    assert whole.differences(split) == [] and whole.kw_line.tolist() == [0]
    assert whole.data == line + b"\r\nok\n"


# -- properties --------------------------------------------------------------------------------------------

FRAGMENTS = [b"\n", b"\r\n", b"\r", b" ", b"  ", b"\t", b"{", b"}", b"'", b'"', b":", b"=", b",", b"|", b"/",
             b"{'loss': 1.5, 'epoch': '2.0'}", b'{"a": NaN, "b": [1]}', b"lm loss: 2.3E+00", b"lr=1e-4",
             b" 45%|####  | 450/1000 [", b"Traceback", b"out of memory", b"1,234.5%", b"nan", b"-inf", b"x",
             b"\xff\xc3", b"\\"]
LOGS = st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.binary(max_size=8)), max_size=60).map(b"".join)
KEYWORDS = ["Traceback", "out of memory", "loss", ":", "\r"]


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(LOGS, st.lists(st.integers(min_value=0, max_value=400), max_size=8))
def test_any_chunking_gives_the_arrays_of_one_feed(data: bytes, cuts: list[int]) -> None:
    whole, s1 = scan(data, KEYWORDS)
    split, s2 = scan(data, KEYWORDS, [min(c, len(data)) for c in cuts])
    assert whole.differences(split) == []
    assert s1.keys == s2.keys
    assert len(whole) == data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)


@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(LOGS, st.lists(st.sampled_from(["Traceback", "out of memory", "oo", "o", "\r", ":", "1,2"]), max_size=6))
def test_the_small_and_the_numpy_keyword_paths_agree(data: bytes, keywords: list[str]) -> None:
    small, _ = scan(data, keywords)
    saved = _Keywords.SMALL
    _Keywords.SMALL = -1  # every run through the byte-pair path
    try:
        big, _ = scan(data, keywords)
    finally:
        _Keywords.SMALL = saved
    assert small.kw_line.tolist() == big.kw_line.tolist() and small.kw_id.tolist() == big.kw_id.tolist()


@settings(max_examples=examples(300), deadline=None)
@given(st.binary(max_size=300), st.lists(st.text(max_size=4), max_size=4))
def test_never_raises_on_any_bytes(data: bytes, keywords: list[str]) -> None:
    keywords = [k for k in keywords if not any(0xD800 <= ord(ch) <= 0xDFFF for ch in k)]
    c, s = scan(data, keywords, [len(data) // 3])
    assert len(c) == data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)
    assert bool((c.line_start <= c.visible_start).all()) and bool((c.visible_start <= c.line_end).all())
    assert all(0 <= int(k) < len(s.keys) for k in np.concatenate([c.ent_key, c.kv_key]))


# -- real logs ------------------------------------------------------------------------------------------

def _logs() -> list[Path]:
    found = [p for p in sorted((ROOT / "examples").rglob("*")) if p.is_file() and p.suffix != ".py"]
    if CORPUS.is_dir():
        found += [p for p in sorted(CORPUS.iterdir()) if p.is_file() and p.name != "README.md"]
    return found


@pytest.mark.parametrize("path", _logs(), ids=lambda p: str(p.relative_to(p.parents[1])))
def test_real_logs_scan_sensibly_in_any_chunking(path: Path) -> None:
    data = path.read_bytes()
    keywords = ["Traceback (most recent call last)", "out of memory", "Error"]
    whole, s = scan(data, keywords)
    split, _ = scan(data, keywords, list(range(4093, len(data), 4093)))
    assert whole.differences(split) == []
    assert len(whole) == data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)
    lines_with = {i for i in range(len(whole)) if b"Traceback (most recent call last)" in whole.line(i)}
    assert set(whole.kw_line[whole.kw_id == 0].tolist()) == lines_with
    if b"{'loss': " in data:  # a Hugging Face Trainer console log: its train dicts carry the loss
        assert "loss" in s.keys
        loss = whole.ent_value[whole.ent_key == s.keys.index("loss")]
        assert loss.size > 0 and bool(np.isfinite(loss).any())
    if b"| lm loss: " in data:  # Megatron: a multi-word key among `|`-separated tokens
        assert "lm loss" in s.keys and int((whole.kv_key == s.keys.index("lm loss")).sum()) > 0
    if b"ms/step - loss: " in data:  # Keras fit: `- loss: 0.5 - accuracy: 0.9` after the step time
        assert "loss" in s.keys and int((whole.kv_key == s.keys.index("loss")).sum()) > 0


def test_the_corpus_is_present_or_the_smoke_test_says_so() -> None:
    if not CORPUS.is_dir():
        pytest.skip(f"no third-party corpus at {CORPUS}: only examples/ were scanned")
    assert any(p.suffix == ".log" for p in CORPUS.iterdir())


@pytest.mark.parametrize("line,plain", [
    (b'{"a": 1, "b": {"c": -2.5e3, "d": {}}, "e": -0.0}', True), (b"{}", True),
    (b'{"a": "1"}', False), (b'{"a": [1]}', False), (b'{"a": NaN}', False), (b'{"a": 5%}', False),
    (b"{'a': 1}", False), (b'{"a": true}', False), (b'{"a": -0}', False), (b'{"a": 01}', False),
    (b'{"a": .5}', False), (b'{"a": 1.}', False), (b'{"a": +1}', False), (b'{"a": 1,234}', False),
    (b'{"a\tb": 1}', False), (b'{"caf\xc3\xa9": 1}', False), (b'{"b": {"a": "x"}}', False),
])
def test_dict_json_says_whether_json_reads_the_same_numbers(line: bytes, plain: bool) -> None:
    c, _ = scan(line + b"\n")
    assert c.dict_json.tolist() == [plain]


def test_dict_layouts_are_numbered_as_first_met_and_mean_the_same_in_every_chunk() -> None:
    s = Scanner([])
    a = s.feed(b'{"a": 1, "b": 2}\n{"b": 2, "a": 1}\n{"a": 3, "b": 4} {"x": "no number"}\n')
    b = s.feed(b'{"a": 5, "b": 6}\n{"c": 1}\n')
    assert a.dict_layout.tolist() == [0, 1, 0, 2] and b.dict_layout.tolist() == [0, 3]
    # a chunk made without layouts (a format plugin's own) says no two dicts share one
    arrays = {name: getattr(a, name) for name, _ in ARRAY_FIELDS if name != "dict_layout"}
    own = Chunk.from_arrays(a.first_lineno, a.base_offset, a.data, arrays)
    assert len(set(own.dict_layout.tolist())) == 4 and (own.dict_layout < 0).all()
