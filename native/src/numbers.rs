//! Numbers as training logs print them: `-1`, `1.5e-05`, `.5`, `1,234.5`, `NaN`, `-Infinity`, `inf`.
//!
//! A comma followed by exactly three digits inside the integer part is a thousands separator; any other
//! comma ends the number. A trailing `%` is consumed by the callers that allow it, not here.

use crate::bytes::at;

/// Longest number (in bytes) handed to the float parser without separators removed on the stack.
const STACK_DIGITS: usize = 64;

/// Where a number lies, found without converting it (dicts convert only once the whole object parsed).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Span {
    pub start: usize,
    pub end: usize,
    /// The value of a `nan`/`inf` word (sign applied); None for digits, converted by [`convert`].
    literal: Option<f64>,
    has_separator: bool,
}

/// Parses the number starting at `pos`; returns its value and the position one past its last byte.
pub fn parse_number(b: &[u8], pos: usize) -> Option<(f64, usize)> {
    let span = scan_number(b, pos)?;
    Some((convert(b, &span)?, span.end))
}

/// Finds the extent of the number starting at `pos` without converting it.
pub fn scan_number(b: &[u8], pos: usize) -> Option<Span> {
    let mut i = pos;
    let negative = at(b, i) == b'-';
    if matches!(at(b, i), b'-' | b'+') {
        i += 1;
    }
    if let Some((value, end)) = literal(b, i) {
        let literal = Some(if negative { -value } else { value });
        return Some(Span {
            start: pos,
            end,
            literal,
            has_separator: false,
        });
    }
    let (end, has_separator) = mantissa_and_exponent(b, i)?;
    Some(Span {
        start: pos,
        end,
        literal: None,
        has_separator,
    })
}

/// The value of a number found by [`scan_number`] in the same bytes.
pub fn convert(b: &[u8], span: &Span) -> Option<f64> {
    if let Some(value) = span.literal {
        return Some(value);
    }
    let text = b.get(span.start..span.end)?;
    if span.has_separator {
        without_separators(text)
    } else {
        fast_float2::parse::<f64, _>(text).ok()
    }
}

/// `nan`, `inf` or `infinity` in any case at `i` (no sign), as a whole word (so `information` is
/// no `inf`): the value and the end position.
fn literal(b: &[u8], i: usize) -> Option<(f64, usize)> {
    let lower = |k: usize| at(b, i + k).to_ascii_lowercase();
    let matches_word = |word: &[u8]| {
        word.iter().enumerate().all(|(k, &c)| lower(k) == c)
            && !crate::bytes::is_word_char(at(b, i + word.len()))
    };
    if matches_word(b"infinity") {
        Some((f64::INFINITY, i + 8))
    } else if matches_word(b"inf") {
        Some((f64::INFINITY, i + 3))
    } else if matches_word(b"nan") {
        Some((f64::NAN, i + 3))
    } else {
        None
    }
}

/// Scans digits with separators, an optional fraction and exponent from `i`; returns the end and
/// whether a thousands separator was seen. None when there is no digit in the mantissa.
fn mantissa_and_exponent(b: &[u8], start: usize) -> Option<(usize, bool)> {
    let mut i = start;
    let mut digits = 0usize;
    let mut has_separator = false;
    loop {
        let c = at(b, i);
        if c.is_ascii_digit() {
            i += 1;
            digits += 1;
        } else if c == b','
            && digits > 0
            && at(b, i + 1).is_ascii_digit()
            && at(b, i + 2).is_ascii_digit()
            && at(b, i + 3).is_ascii_digit()
            && !at(b, i + 4).is_ascii_digit()
        {
            has_separator = true;
            i += 4;
            digits += 3;
        } else {
            break;
        }
    }
    if at(b, i) == b'.' {
        let mut j = i + 1;
        while at(b, j).is_ascii_digit() {
            j += 1;
        }
        let fraction = j - i - 1;
        if digits + fraction > 0 {
            i = j;
            digits += fraction;
        }
    }
    if digits == 0 {
        return None;
    }
    if matches!(at(b, i), b'e' | b'E') {
        let mut j = i + 1;
        if matches!(at(b, j), b'-' | b'+') {
            j += 1;
        }
        if at(b, j).is_ascii_digit() {
            while at(b, j).is_ascii_digit() {
                j += 1;
            }
            i = j;
        }
    }
    Some((i, has_separator))
}

/// Parses `text` with its commas removed (on the stack when short).
fn without_separators(text: &[u8]) -> Option<f64> {
    if text.len() <= STACK_DIGITS {
        let mut buf = [0u8; STACK_DIGITS];
        let mut n = 0;
        for &c in text.iter().filter(|&&c| c != b',') {
            *buf.get_mut(n)? = c;
            n += 1;
        }
        fast_float2::parse::<f64, _>(buf.get(..n)?).ok()
    } else {
        let cleaned: Vec<u8> = text.iter().copied().filter(|&c| c != b',').collect();
        fast_float2::parse::<f64, _>(&cleaned).ok()
    }
}

/// True when all of `text` (spaces and tabs stripped) is one number, optionally followed by `%`.
pub fn whole_number(text: &[u8]) -> Option<f64> {
    let start = text.iter().position(|&c| !crate::bytes::is_space(c))?;
    let end = text.iter().rposition(|&c| !crate::bytes::is_space(c))? + 1;
    let inner = text.get(start..end)?;
    let (value, mut stop) = parse_number(inner, 0)?;
    if at(inner, stop) == b'%' {
        stop += 1;
    }
    (stop == inner.len()).then_some(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn num(s: &str) -> Option<(f64, usize)> {
        parse_number(s.as_bytes(), 0)
    }

    #[test]
    fn forms_logs_print() {
        assert_eq!(num("-1"), Some((-1.0, 2)));
        assert_eq!(num("1.5e-05,"), Some((1.5e-05, 7)));
        assert_eq!(num(".5"), Some((0.5, 2)));
        assert_eq!(num("1,234.5"), Some((1234.5, 7)));
        assert_eq!(num("1,234,567 "), Some((1234567.0, 9)));
        assert_eq!(num("1,2345"), Some((1.0, 1)));
        assert_eq!(num("1, 234"), Some((1.0, 1)));
        assert_eq!(num("2e"), Some((2.0, 1)));
        assert_eq!(num("-Infinity"), Some((f64::NEG_INFINITY, 9)));
        assert_eq!(num("INF"), Some((f64::INFINITY, 3)));
        assert!(num("NaN").is_some_and(|(v, e)| v.is_nan() && e == 3));
        assert_eq!(num("."), None);
        assert_eq!(num("-"), None);
        assert_eq!(num("1e999"), Some((f64::INFINITY, 5)));
        assert_eq!(num("information"), None);
        assert_eq!(num("nanogpt"), None);
        assert_eq!(num("inf."), Some((f64::INFINITY, 3)));
    }

    #[test]
    fn quoted_content() {
        assert_eq!(whole_number(b" 1.0 "), Some(1.0));
        assert_eq!(whole_number(b"95%"), Some(95.0));
        assert_eq!(whole_number(b"1.0a"), None);
        assert_eq!(whole_number(b""), None);
    }
}
