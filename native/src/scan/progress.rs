//! tqdm-style progress counters: `|` then optional spaces then `digits/digits` (`45%|####| 450/1000 [`).
//! Each count has at most 18 digits, so it always fits an i64; a longer run of digits is no counter.

use crate::scan::bytes::{at, range};
use memchr::memrchr;

const MAX_DIGITS: usize = 18;

/// The last counter in `line` as (n, total).
pub fn last_bar(line: &[u8]) -> Option<(i64, i64)> {
    let mut end = line.len();
    while let Some(bar) = memrchr(b'|', range(line, 0, end)) {
        if let Some(found) = counter_at(line, bar + 1) {
            return Some(found);
        }
        end = bar;
    }
    None
}

fn counter_at(b: &[u8], mut i: usize) -> Option<(i64, i64)> {
    while at(b, i) == b' ' {
        i += 1;
    }
    let (n, after_n) = digits(b, i)?;
    if at(b, after_n) != b'/' {
        return None;
    }
    let (total, _) = digits(b, after_n + 1)?;
    Some((n, total))
}

/// The decimal number at `i` (1 to 18 digits) and the position after it.
fn digits(b: &[u8], mut i: usize) -> Option<(i64, usize)> {
    let start = i;
    let mut value: i64 = 0;
    while at(b, i).is_ascii_digit() {
        if i - start == MAX_DIGITS {
            return None;
        }
        value = value * 10 + i64::from(at(b, i) - b'0');
        i += 1;
    }
    (i > start).then_some((value, i))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn last_counter_wins() {
        assert_eq!(
            last_bar(b"\r 10%|#   | 1/10 [00:01]\r 20%|##  | 2/10 [00:02]"),
            Some((2, 10))
        );
        assert_eq!(last_bar(b"|1/2 |x/3"), Some((1, 2)));
        assert_eq!(last_bar(b"| 99999999999999999999/1 |3/4"), Some((3, 4)));
        assert_eq!(last_bar(b"|3/4 | 99999999999999999999/1"), Some((3, 4)));
        assert_eq!(last_bar(b"1/2"), None);
        assert_eq!(
            last_bar(b"|1/999999999999999999"),
            Some((1, 999_999_999_999_999_999))
        );
        assert_eq!(last_bar(b"|1/0999999999999999999"), None);
    }
}
