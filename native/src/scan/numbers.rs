//! Numbers as training logs print them: `-1`, `1.5e-05`, `.5`, `1,234.5`, `NaN`, `-Infinity`, `inf`.
//!
//! A comma followed by exactly three digits inside the integer part is a thousands separator; any other
//! comma ends the number. A trailing `%` is consumed by the callers that allow it, not here.

use crate::scan::bytes::at;

/// Longest number (in bytes) handed to the float parser without separators removed on the stack.
const STACK_DIGITS: usize = 64;

/// Powers of ten that an f64 holds exactly (the fast path's multipliers and divisors).
const EXACT_POWERS: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];

/// Largest mantissa an f64 holds exactly (2^53).
const EXACT_MANTISSA: u64 = 1 << 53;

/// Most digits a mantissa may have to be accumulated in a u64 without overflow.
const MAX_DIGITS: usize = 19;

/// Where a number lies, found while scanning it (dicts keep only the numbers of objects that parse).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Span {
    pub start: usize,
    pub end: usize,
    /// The value when scanning already knows it: a `nan`/`inf` word, or digits that the exact fast
    /// path converts (sign applied); None for the rest, converted by the float parser in [`convert`].
    value: Option<f64>,
    has_separator: bool,
    /// The text is a JSON number: `-?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?`, but not `-0`.
    pub json: bool,
}

/// Parses the number starting at `pos`; returns its value and the position one past its last byte.
pub fn parse_number(b: &[u8], pos: usize) -> Option<(f64, usize)> {
    let span = scan_number(b, pos)?;
    Some((convert(b, &span)?, span.end))
}

/// Finds the extent of the number starting at `pos`, and its value where that is cheap and exact.
#[inline]
pub fn scan_number(b: &[u8], pos: usize) -> Option<Span> {
    let mut i = pos;
    let negative = at(b, i) == b'-';
    let signed = negative || at(b, i) == b'+';
    i += usize::from(signed);
    let c = at(b, i);
    if !c.is_ascii_digit() && c != b'.' {
        let (value, end) = literal(b, i)?;
        return Some(Span {
            start: pos,
            end,
            value: Some(if negative { -value } else { value }),
            has_separator: false,
            json: false,
        });
    }
    let m = mantissa_and_exponent(b, i)?;
    let value = m.exact().map(|v| if negative { -v } else { v });
    let bare_minus_zero = negative && m.end == i + 1 && c == b'0';
    Some(Span {
        start: pos,
        end: m.end,
        value,
        has_separator: m.has_separator,
        json: m.json && at(b, pos) != b'+' && !bare_minus_zero,
    })
}

/// A number's text whose value the scan left to the float parser (small, to be kept for later).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Text {
    start: usize,
    end: usize,
    has_separator: bool,
}

impl Text {
    /// The number's value, by the float parser; `b` holds the bytes it was scanned in.
    pub fn value(&self, b: &[u8]) -> Option<f64> {
        let text = b.get(self.start..self.end)?;
        if self.has_separator {
            without_separators(text)
        } else {
            fast_float2::parse::<f64, _>(text).ok()
        }
    }
}

impl Span {
    /// The value when the scan already knows it, else the text the float parser must read.
    #[inline]
    pub fn known(&self) -> Result<f64, Text> {
        self.value.ok_or(Text {
            start: self.start,
            end: self.end,
            has_separator: self.has_separator,
        })
    }
}

/// The value of a number found by [`scan_number`] in the same bytes.
pub fn convert(b: &[u8], span: &Span) -> Option<f64> {
    span.known().map_or_else(|text| text.value(b), Some)
}

/// `nan`, `inf` or `infinity` in any case at `i` (no sign), as a whole word (so `information` is
/// no `inf`): the value and the end position.
fn literal(b: &[u8], i: usize) -> Option<(f64, usize)> {
    let lower = |k: usize| at(b, i + k).to_ascii_lowercase();
    let matches_word = |word: &[u8]| {
        word.iter().enumerate().all(|(k, &c)| lower(k) == c)
            && !crate::scan::bytes::is_word_char(at(b, i + word.len()))
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

/// What one walk over a number's digits learns: its end, its digits as an integer and power of ten.
struct Mantissa {
    end: usize,
    has_separator: bool,
    /// The digits (separators and point left out) as an integer; meaningless past `MAX_DIGITS`.
    digits_value: u64,
    digits: usize,
    /// The power of ten that scales `digits_value` to the number (exponent less fraction digits).
    power: i64,
    /// The unsigned part follows JSON's grammar (no separator, no `.5`, `1.`, `01`).
    json: bool,
}

impl Mantissa {
    /// The value when the digits and the power of ten are both exact in an f64: then one
    /// multiplication or division rounds correctly, to the float parser's result bit for bit.
    #[inline]
    fn exact(&self) -> Option<f64> {
        if self.digits > MAX_DIGITS || self.digits_value > EXACT_MANTISSA {
            return None;
        }
        let scale = *EXACT_POWERS.get(usize::try_from(self.power.unsigned_abs()).ok()?)?;
        let m = self.digits_value as f64;
        Some(if self.power < 0 { m / scale } else { m * scale })
    }
}

/// Scans digits with separators, an optional fraction and exponent from `i`, accumulating them.
/// None when there is no digit in the mantissa.
#[inline]
fn mantissa_and_exponent(b: &[u8], start: usize) -> Option<Mantissa> {
    let mut i = start;
    let mut digits = 0usize;
    let mut value = 0u64;
    let mut has_separator = false;
    let push = |value: u64, c: u8| value.wrapping_mul(10).wrapping_add(u64::from(c - b'0'));
    loop {
        let c = at(b, i);
        if c.is_ascii_digit() {
            value = push(value, c);
            i += 1;
            digits += 1;
        } else if c == b','
            && digits > 0
            && at(b, i + 1).is_ascii_digit()
            && at(b, i + 2).is_ascii_digit()
            && at(b, i + 3).is_ascii_digit()
            && !at(b, i + 4).is_ascii_digit()
        {
            for k in 1..4 {
                value = push(value, at(b, i + k));
            }
            has_separator = true;
            i += 4;
            digits += 3;
        } else {
            break;
        }
    }
    let int_digits = digits;
    let mut json = !has_separator && (int_digits == 1 || (int_digits > 1 && at(b, start) != b'0'));
    let mut fraction = 0usize;
    if at(b, i) == b'.' {
        let mut j = i + 1;
        while at(b, j).is_ascii_digit() {
            value = push(value, at(b, j));
            j += 1;
        }
        fraction = j - i - 1;
        if digits + fraction > 0 {
            i = j;
            digits += fraction;
            json &= fraction > 0;
        }
    }
    if digits == 0 {
        return None;
    }
    let mut exponent = 0i64;
    if matches!(at(b, i), b'e' | b'E') {
        let mut j = i + 1;
        let negative = at(b, j) == b'-';
        if matches!(at(b, j), b'-' | b'+') {
            j += 1;
        }
        if at(b, j).is_ascii_digit() {
            while at(b, j).is_ascii_digit() {
                // Capped: any exponent this large is far outside the fast path anyway.
                if exponent < 1_000_000 {
                    exponent = exponent * 10 + i64::from(at(b, j) - b'0');
                }
                j += 1;
            }
            if negative {
                exponent = -exponent;
            }
            i = j;
        }
    }
    Some(Mantissa {
        end: i,
        has_separator,
        digits_value: value,
        digits,
        power: exponent - fraction as i64,
        json,
    })
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
    let start = text
        .iter()
        .position(|&c| !crate::scan::bytes::is_space(c))?;
    let end = text
        .iter()
        .rposition(|&c| !crate::scan::bytes::is_space(c))?
        + 1;
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

    /// The float parser on the number's text with separators removed: each value must equal it bit
    /// for bit (a literal word aside, which the parser is not asked about).
    fn by_parser(text: &str) -> Option<(u64, usize)> {
        let span = scan_number(text.as_bytes(), 0)?;
        let cleaned: Vec<u8> = text.as_bytes()[span.start..span.end]
            .iter()
            .copied()
            .filter(|&c| c != b',')
            .collect();
        let value = fast_float2::parse::<f64, _>(&cleaned).ok()?;
        Some((value.to_bits(), span.end))
    }

    fn by_scan(text: &str) -> Option<(u64, usize)> {
        num(text).map(|(v, end)| (v.to_bits(), end))
    }

    #[test]
    fn fast_path_edges() {
        for t in [
            "9007199254740992",
            "9007199254740993",
            "9007199254740993e-22",
            "1e22",
            "1e23",
            "1e-22",
            "1e-23",
            "-0.0",
            "-0e5",
            "0e-999",
            "123456789012345678901",
            "0.30000000000000004",
            "1,234,567.890e-3",
            "+1.5",
            "1.",
            ".5e1",
            "18446744073709551615",
            "18446744073709551616",
            "99999999999999999999e-5",
        ] {
            assert_eq!(by_scan(t), by_parser(t), "{t}");
        }
    }

    proptest::proptest! {
        #[test]
        fn decimal_forms_match_the_parser(
            t in "[-+]?[0-9]{0,22}([.][0-9]{0,22})?([eE][-+]?[0-9]{1,3})?[,%x]?"
        ) {
            proptest::prop_assert_eq!(by_scan(&t), by_parser(&t), "{}", t);
        }

        #[test]
        fn separated_forms_match_the_parser(
            t in "-?[0-9]{1,3}(,[0-9]{3}){0,6}([.][0-9]{0,9})?(e-?[0-9]{1,2})?"
        ) {
            proptest::prop_assert_eq!(by_scan(&t), by_parser(&t), "{}", t);
        }

        #[test]
        fn printed_floats_match_the_parser(bits in proptest::num::u64::ANY, digits in 0usize..20) {
            let x = f64::from_bits(bits);
            if x.is_finite() {
                for t in [format!("{x}"), format!("{x:e}"), format!("{x:.digits$}"), format!("{x:.digits$e}")] {
                    proptest::prop_assert_eq!(by_scan(&t), by_parser(&t), "{}", t);
                }
            }
        }

        #[test]
        fn short_decimals_match_the_parser(m in 0u64..100_000_000, p in 0usize..12, e in -30i32..30) {
            let int = m.to_string();
            let cut = int.len().saturating_sub(p);
            let t = format!("{}.{}e{e}", &int[..cut], &int[cut..]);
            proptest::prop_assert_eq!(by_scan(&t), by_parser(&t), "{}", t);
        }
    }

    #[test]
    fn quoted_content() {
        assert_eq!(whole_number(b" 1.0 "), Some(1.0));
        assert_eq!(whole_number(b"95%"), Some(95.0));
        assert_eq!(whole_number(b"1.0a"), None);
        assert_eq!(whole_number(b""), None);
    }
}
