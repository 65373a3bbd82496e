//! tqdm's plain bar shape, read at a known `%|`: `  5%|#    | 5/100 [00:01<00:09, 9.9it/s]`.
//!
//! The same test as the reference (`trainwatch/scan/bars.py`, `plain_bars`): only blanks between
//! the `\r`-segment's start and the percentage's 1 to 7 digits; a body of at most 64 bytes holding
//! neither `|` nor `\r`, then `|`; blanks, N and M of 1 to 18 digits around `/`, blanks, `[` before
//! `limit`; a `]` within 120 bytes after it, before `limit`, the 4 bytes before it `it/s` or `s/it`.
//! Bytes outside the data read as 0, which is none of the bytes looked for.

use crate::scan::bytes::at;

const BACK: usize = 8;
const BODY: usize = 64;
const COUNTER: usize = 48;
const RATE: usize = 120;
const MAX_DIGITS: usize = 18;

/// (N, M) of the plain bar whose `%|` is at `p`, in the segment starting at `seg`, read before
/// `limit`; None when the bar has any other shape.
pub fn plain_bar(b: &[u8], p: usize, seg: usize, limit: usize) -> Option<(i64, i64)> {
    let digits = (1..=BACK)
        .find(|&k| p < k || !at(b, p - k).is_ascii_digit())
        .map_or(BACK, |k| k - 1);
    let q = p.checked_sub(digits)?;
    if digits == 0 || digits >= BACK || q < seg || q - seg > BACK {
        return None;
    }
    if (seg..q).any(|i| at(b, i) != b' ') {
        return None;
    }
    let body = p + 2;
    let end = (0..BODY).find(|&k| matches!(at(b, body + k), b'|' | b'\r'))?;
    let r = body + end;
    if at(b, r) != b'|' {
        return None;
    }
    let tail = r + 1;
    let first =
        |from: usize, want: &dyn Fn(u8) -> bool| (from..COUNTER).find(|&k| want(at(b, tail + k)));
    let a = first(0, &|c| c != b' ').unwrap_or(COUNTER);
    let bb = first(a, &|c| !c.is_ascii_digit()).unwrap_or(COUNTER);
    let c = first(bb + 1, &|c| !c.is_ascii_digit()).unwrap_or(COUNTER);
    let e = first(c, &|c| c != b' ').unwrap_or(COUNTER);
    if bb <= a || bb - a > MAX_DIGITS || c <= bb + 1 || c - bb - 1 > MAX_DIGITS || e >= COUNTER {
        return None;
    }
    if at(b, tail + bb) != b'/' || at(b, tail + e) != b'[' {
        return None;
    }
    let opened = tail + e;
    if opened >= limit {
        return None;
    }
    let close = (0..RATE).find(|&k| at(b, opened + 1 + k) == b']')?;
    if close < 4 || opened + 1 + close >= limit {
        return None;
    }
    let unit = [0, 1, 2, 3].map(|k| at(b, opened + 1 + close - 4 + k));
    if &unit != b"it/s" && &unit != b"s/it" {
        return None;
    }
    Some((
        number(b, tail + a, tail + bb),
        number(b, tail + bb + 1, tail + c),
    ))
}

fn number(b: &[u8], from: usize, to: usize) -> i64 {
    (from..to).fold(0i64, |n, i| n * 10 + i64::from(at(b, i).wrapping_sub(b'0')))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(s: &[u8]) -> Option<(i64, i64)> {
        let p = s.windows(2).rposition(|w| w == b"%|").unwrap();
        plain_bar(s, p, 0, s.len())
    }

    #[test]
    fn reads_the_plain_shape_only() {
        assert_eq!(
            read(b"  5%|#    | 5/100 [00:01<00:09, 9.9it/s]"),
            Some((5, 100))
        );
        assert_eq!(read(b"100%|##| 7/7 [00:05, 1.50s/it]"), Some((7, 7)));
        assert_eq!(read(b"Map:  5%|#    | 5/100 [00:01<00:09, 9.9it/s]"), None);
        assert_eq!(
            read(b"  5%|#    | 5/100 [00:01<00:09, 9.9 examples/s]"),
            None
        );
        assert_eq!(read(b"  5%|#    | 5/100 [00:01<00:09, 9.9it/s"), None);
        assert_eq!(read(b"  5%|#    | 5/ [00:01, 9.9it/s]"), None);
        assert_eq!(read(b"12345678%|#| 5/100 [00:01, 9.9it/s]"), None);
    }

    #[test]
    fn never_reads_outside_the_data() {
        assert_eq!(plain_bar(b"%|", 0, 0, 2), None);
        assert_eq!(plain_bar(b"", 5, 0, 9), None);
        assert_eq!(plain_bar(b"9%|", usize::MAX - 1, 0, usize::MAX), None);
    }
}
