"""tqdm's plain bar shape, read at known `%|` positions over numpy arrays: the reference for the native
scanner's `plain_bars` (native/src/scan/bars.rs), which reads the same bytes the same way.

The Trainer console adapter reads a line's last bar here when the bar has the shape `_last_bar` reads at
its first try; any other shape goes to `_last_bar` itself.
"""

from __future__ import annotations

import numpy as np

_DIGIT = np.zeros(256, dtype=bool)
_DIGIT[ord("0"):ord("9") + 1] = True
_BACK = 8  # bytes looked at before a bar's `%|`: its percentage and the blanks before it
_BODY = 64  # bytes of a bar's body looked at for its closing `|` (tqdm draws 10 by default)
_COUNTER = 48  # bytes after the bar's closing `|`: blanks, N/M, blanks, `[`
_RATE = 120  # bytes after `[` where `_last_bar` looks for the `]` that closes the rate
_MAX_DIGITS = 18  # an int64 holds any 18-digit number


def plain_bars(data: bytes, p: np.ndarray, seg: np.ndarray, limit: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For tqdm bars whose last `%|` is at `p`, in `\r`-segments starting at `seg`, read before `limit`:
    whether the bar is the plain shape that `_last_bar` reads at its first try with no description,
    `  5%|#    | 5/100 [00:01<00:09, 9.9it/s]` (only blanks before the percentage; the bar body without
    `|` or `\r`; blanks, N/M, blanks and `[`; a rate ending in it/s or s/it), and its N and M. Any other
    shape (a description, a unit such as examples/s, tabs, other digits) is left to `_last_bar`."""
    buf = np.frombuffer(data, dtype=np.uint8)
    k = len(p)
    rows = np.arange(k)
    pad = max(_RATE, _BODY, _COUNTER, _BACK)
    padded = np.concatenate((np.zeros(pad, np.uint8), buf, np.zeros(pad, np.uint8)))
    windows = {w: np.lib.stride_tricks.sliding_window_view(padded, w) for w in {_BACK, _BODY, _COUNTER, _RATE}}

    def gather(start: np.ndarray, width: int) -> np.ndarray:
        """The `width` bytes from each start (zeros outside the data), one row each: rows of a strided
        view, copied as bytes. A start far outside lands on the padding, zeros all the same."""
        view = windows[width]
        return view[np.clip(start + pad, 0, len(view) - 1)]

    def first(mask: np.ndarray) -> np.ndarray:
        """Per row, the first column where `mask` holds; its width when it never does."""
        return np.argmax(np.concatenate((mask, np.ones((k, 1), dtype=bool)), axis=1), axis=1)

    # the percentage's digits, and only blanks between the segment's start and them
    back = gather(p - _BACK, _BACK)
    digits = first(~_DIGIT[back[:, ::-1]])  # back[:, ::-1][:, j] is the byte j + 1 before p
    q = p - digits
    ok = (digits > 0) & (digits < _BACK) & (q >= seg) & (q - seg <= _BACK)
    lead = gather(q - _BACK, _BACK)
    lead_at = (q - _BACK)[:, None] + np.arange(_BACK)
    ok &= ~((lead != 0x20) & (lead_at >= seg[:, None])).any(axis=1)

    # the body, neither `|` nor `\r` (the regex allows 400 bytes; a bar this wide is left to it), then `|`
    body = gather(p + 2, _BODY)
    end = first((body == 0x7C) | (body == 0x0D))
    ok &= (end < _BODY) & (body[rows, np.minimum(end, _BODY - 1)] == 0x7C)
    r = p + 2 + end

    # blanks, N, `/`, M, blanks, `[`
    tail = gather(r + 1, _COUNTER)
    col = np.arange(_COUNTER)
    blank, digit = tail == 0x20, _DIGIT[tail]
    a = first(~blank)
    b = first(~digit & (col >= a[:, None]))
    c = first(~digit & (col >= (b + 1)[:, None]))
    e = first(~blank & (col >= c[:, None]))
    ok &= (b > a) & (b - a <= _MAX_DIGITS) & (c > b + 1) & (c - b - 1 <= _MAX_DIGITS) & (e < _COUNTER)
    ok &= (tail[rows, np.minimum(b, _COUNTER - 1)] == 0x2F) & (tail[rows, np.minimum(e, _COUNTER - 1)] == 0x5B)
    opened = r + 1 + e  # the `[`
    ok &= opened < limit
    value = np.where(digit, tail.astype(np.int64) - 0x30, 0)

    def number(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        out = np.zeros(k, dtype=np.int64)
        for j in range(int(np.clip(hi - lo, 0, _MAX_DIGITS).max(initial=0))):
            out = np.where(lo + j < hi, out * 10 + value[rows, np.minimum(lo + j, _COUNTER - 1)], out)
        return out

    n, m = number(a, b), number(b + 1, c)

    # the rate, up to the `]` within reach, must end in it/s or s/it: another unit makes the bar a data or
    # download one, and a bar without one is left to `_last_bar` too
    rate = gather(opened + 1, _RATE)
    close = first(rate == 0x5D)
    ok &= (close < _RATE) & (close >= 4) & (opened + 1 + close < limit)
    unit = rate[rows[:, None], np.clip(close[:, None] - 4 + np.arange(4), 0, _RATE - 1)]
    ok &= (unit == np.frombuffer(b"it/s", dtype=np.uint8)).all(axis=1) \
        | (unit == np.frombuffer(b"s/it", dtype=np.uint8)).all(axis=1)
    return ok, n, m
