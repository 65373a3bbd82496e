//! `key: value` and `key=value` tokens of console logs (`step 10 | loss: 2.31 | lr=1e-4`).
//!
//! A key is up to four words joined by single spaces (`train loss`), each starting with a letter or
//! `_` and going on with letters, digits and `_ . / -`, at most 64 bytes in all. It is the longest such
//! run that ends right before the separator (spaces or tabs allowed around it). Each word starts after
//! a byte that cannot be in a word (or at the line start), and no earlier than the end of the previous
//! token, so a key never starts inside a value (`1.5s mem=12` gives `mem`). The value is a number,
//! maybe followed by `%`; what follows it does not matter (`mem=12GB` is 12).

use crate::scan::bytes::{at, is_key_char, is_key_start, range};
use crate::scan::numbers::parse_number;
use memchr::memchr2;

const MAX_WORDS: usize = 4;
const MAX_KEY: usize = 64;

/// One token: key span and value, positions relative to the scanned line.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Token {
    pub key_start: usize,
    pub key_end: usize,
    pub value: f64,
}

/// Calls `on_token` for every token in `line[from..]`, skipping the spans in `dicts` (sorted).
pub fn scan(line: &[u8], from: usize, dicts: &[(usize, usize)], mut on_token: impl FnMut(Token)) {
    let mut floor = from;
    let mut pos = from;
    let mut next_dict = 0usize;
    while let Some(i) = memchr2(b':', b'=', range(line, pos, line.len())) {
        let sep = pos + i;
        // Dicts that end at or before the separator bound the key; one that holds it is skipped.
        let mut inside = None;
        while let Some(&(start, end)) = dicts.get(next_dict) {
            if end <= sep {
                floor = floor.max(end);
                next_dict += 1;
            } else {
                if start <= sep {
                    inside = Some(end);
                }
                break;
            }
        }
        if let Some(end) = inside {
            pos = end;
            floor = floor.max(end);
            continue;
        }
        let token = key_before(line, sep, floor)
            .and_then(|key| value_after(line, sep + 1).map(|value| (key, value)));
        match token {
            Some(((key_start, key_end), (value, end))) => {
                on_token(Token {
                    key_start,
                    key_end,
                    value,
                });
                floor = end;
                pos = end;
            }
            None => pos = sep + 1,
        }
    }
}

/// The key ending before the separator at `sep`, not starting before `floor`.
fn key_before(b: &[u8], sep: usize, floor: usize) -> Option<(usize, usize)> {
    let mut end = sep;
    while end > floor && matches!(at(b, end - 1), b' ' | b'\t') {
        end -= 1;
    }
    let mut start = word_start(b, end, floor);
    if start == end || !starts_word(b, start) || end - start > MAX_KEY {
        return None;
    }
    let mut words = 1;
    while words < MAX_WORDS
        && start >= floor + 2
        && at(b, start - 1) == b' '
        && is_key_char(at(b, start - 2))
    {
        let previous = word_start(b, start - 1, floor);
        if !starts_word(b, previous) || end - previous > MAX_KEY {
            break;
        }
        start = previous;
        words += 1;
    }
    Some((start, end))
}

/// True when a key word may start at `i`: a letter or `_` that is not inside a run of word bytes.
fn starts_word(b: &[u8], i: usize) -> bool {
    is_key_start(at(b, i)) && (i == 0 || !is_key_char(at(b, i - 1)))
}

/// Start of the run of key bytes that ends at `end`, no earlier than `floor`.
fn word_start(b: &[u8], end: usize, floor: usize) -> usize {
    let mut start = end;
    while start > floor && is_key_char(at(b, start - 1)) {
        start -= 1;
    }
    start
}

/// The number after the separator (spaces or tabs first); its value and the position after it.
fn value_after(b: &[u8], mut i: usize) -> Option<(f64, usize)> {
    while matches!(at(b, i), b' ' | b'\t') {
        i += 1;
    }
    let (value, mut end) = parse_number(b, i)?;
    if at(b, end) == b'%' {
        end += 1;
    }
    Some((value, end))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(line: &str) -> Vec<(String, f64)> {
        let b = line.as_bytes();
        let mut out = Vec::new();
        scan(b, 0, &[], |t| {
            let key = String::from_utf8_lossy(range(b, t.key_start, t.key_end)).into_owned();
            out.push((key, t.value));
        });
        out
    }

    #[test]
    fn console_lines() {
        assert_eq!(
            tokens("step 10 | loss: 2.31 | lr=1e-4"),
            vec![("loss".into(), 2.31), ("lr".into(), 1e-4)]
        );
        assert_eq!(
            tokens("Epoch 3/10 ... train loss: 0.2, acc = 95%"),
            vec![("train loss".into(), 0.2), ("acc".into(), 95.0)]
        );
        assert_eq!(tokens("a b c d e: 1"), vec![("b c d e".into(), 1.0)]);
        assert_eq!(tokens("x  lm loss: 1"), vec![("lm loss".into(), 1.0)]);
        assert_eq!(
            tokens("mode: inference time: 3"),
            vec![("inference time".into(), 3.0)]
        );
        assert_eq!(tokens("9abc: 1"), vec![]);
        assert_eq!(tokens("loss: 2abc: 1"), vec![("loss".into(), 2.0)]);
        assert_eq!(
            tokens("time: 1.5s mem=12GB x=1e c=3"),
            vec![
                ("time".into(), 1.5),
                ("mem".into(), 12.0),
                ("x".into(), 1.0),
                ("c".into(), 3.0)
            ]
        );
        assert_eq!(
            tokens("loss: 2 abc: 1"),
            vec![("loss".into(), 2.0), ("abc".into(), 1.0)]
        );
    }

    #[test]
    fn dict_spans_are_skipped() {
        let line = b"{'a=1': 2} b=3";
        let mut out = Vec::new();
        scan(line, 0, &[(0, 10)], |t| out.push(t.key_start));
        assert_eq!(out, vec![11]);
    }
}
