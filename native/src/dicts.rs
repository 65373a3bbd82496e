//! Flat `{...}` objects on a line: Python dict reprs and JSON objects.
//!
//! An object is `{`, zero or more `'key': value` entries separated by `,`, then `}`, with whitespace
//! around tokens. Keys are quoted and hold no backslash; values are numbers, number-like quoted strings,
//! other quoted strings, or the bare words `true false True False null None`. An object with a nested
//! `{`/`[` value, or that does not parse, is skipped, and the search goes on from the next `{` after
//! its opening brace.

use crate::bytes::{at, is_space, range};
use crate::numbers::{convert, scan_number, whole_number, Span};
use memchr::{memchr, memchr2};

/// Longest key, in bytes between its quotes.
const MAX_KEY: usize = 200;

/// Bare words that are valid values but carry no number.
const BARE_WORDS: [&[u8]; 6] = [b"true", b"false", b"True", b"False", b"null", b"None"];

/// One object found: its span in the line and its numeric entries as (key span, value).
#[derive(Debug, Default)]
pub struct Found {
    pub start: usize,
    pub end: usize,
    pub entries: Vec<(usize, usize, f64)>,
    /// Entries of the object being parsed, values not yet converted.
    pending: Vec<(usize, usize, Value)>,
}

/// A value as found while parsing; numbers are converted only when the whole object parsed.
#[derive(Clone, Copy, Debug)]
enum Value {
    Number(Span),
    Quoted(usize, usize),
    Word,
}

/// Calls `on_dict` for every object in `line`, left to right; `scratch` is reused between calls.
pub fn scan(line: &[u8], scratch: &mut Found, mut on_dict: impl FnMut(&Found)) {
    let mut pos = 0usize;
    while let Some(i) = memchr(b'{', range(line, pos, line.len())) {
        let start = pos + i;
        scratch.pending.clear();
        match parse_object(line, start, &mut scratch.pending) {
            Some(end) => {
                scratch.start = start;
                scratch.end = end;
                scratch.entries.clear();
                for &(key_start, key_end, value) in &scratch.pending {
                    let number = match value {
                        Value::Number(span) => convert(line, &span),
                        Value::Quoted(s, e) => whole_number(range(line, s, e)),
                        Value::Word => None,
                    };
                    if let Some(v) = number {
                        scratch.entries.push((key_start, key_end, v));
                    }
                }
                on_dict(scratch);
                pos = end;
            }
            None => pos = start + 1,
        }
    }
}

/// Parses the object opening at `start`; returns one past its `}`.
fn parse_object(b: &[u8], start: usize, entries: &mut Vec<(usize, usize, Value)>) -> Option<usize> {
    let mut i = skip_space(b, start + 1);
    if at(b, i) == b'}' {
        return Some(i + 1);
    }
    loop {
        let (key_start, key_end) = key(b, i)?;
        i = skip_space(b, key_end + 1);
        if at(b, i) != b':' {
            return None;
        }
        i = skip_space(b, i + 1);
        let (value, end) = value(b, i)?;
        entries.push((key_start, key_end, value));
        i = skip_space(b, end);
        match at(b, i) {
            b',' => i = skip_space(b, i + 1),
            b'}' => return Some(i + 1),
            _ => return None,
        }
    }
}

/// The quoted key at `i`: the span of its content (the closing quote is at the span's end).
fn key(b: &[u8], i: usize) -> Option<(usize, usize)> {
    let quote = at(b, i);
    if quote != b'\'' && quote != b'"' {
        return None;
    }
    let content = range(b, i + 1, (i + 2 + MAX_KEY).min(b.len()));
    let len = memchr2(quote, b'\\', content)?;
    (at(content, len) == quote).then_some((i + 1, i + 1 + len))
}

/// The value at `i` and the position after it.
fn value(b: &[u8], i: usize) -> Option<(Value, usize)> {
    let c = at(b, i);
    if c == b'\'' || c == b'"' {
        let end = string_end(b, i + 1, c)?;
        return Some((Value::Quoted(i + 1, end), end + 1));
    }
    if let Some(span) = scan_number(b, i) {
        let end = span.end + usize::from(at(b, span.end) == b'%');
        return Some((Value::Number(span), end));
    }
    BARE_WORDS
        .iter()
        .find(|w| range(b, i, i + w.len()) == **w)
        .map(|w| (Value::Word, i + w.len()))
}

/// Position of the closing `quote` of a string whose content starts at `i` (backslash escapes).
fn string_end(b: &[u8], mut i: usize, quote: u8) -> Option<usize> {
    loop {
        let j = i + memchr2(quote, b'\\', range(b, i, b.len()))?;
        if at(b, j) == quote {
            return Some(j);
        }
        i = j + 2;
        if i > b.len() {
            return None;
        }
    }
}

fn skip_space(b: &[u8], mut i: usize) -> usize {
    while is_space(at(b, i)) {
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    type Dict = (usize, usize, Vec<(String, f64)>);

    fn dicts(line: &str) -> Vec<Dict> {
        let mut out = Vec::new();
        let mut scratch = Found::default();
        let b = line.as_bytes();
        scan(b, &mut scratch, |f| {
            let entries = f
                .entries
                .iter()
                .map(|&(s, e, v)| (String::from_utf8_lossy(range(b, s, e)).into_owned(), v))
                .collect();
            out.push((f.start, f.end, entries));
        });
        out
    }

    #[test]
    fn repr_and_json() {
        let found = dicts("x {'loss': 1.5, 'epoch': '1.0', 'name': 'a{b', 'ok': True} {\"a\":2}");
        assert_eq!(found.len(), 2);
        assert_eq!(
            found[0].2,
            vec![("loss".into(), 1.5), ("epoch".into(), 1.0)]
        );
        assert_eq!(found[1].2, vec![("a".into(), 2.0)]);
    }

    #[test]
    fn nested_objects_are_skipped_but_inner_found() {
        let found = dicts(r#"{"step": 1, "train": {"epoch": 0.5}, "x": [1]}"#);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].2, vec![("epoch".into(), 0.5)]);
    }

    #[test]
    fn malformed() {
        assert!(dicts("{'a': 1,}").is_empty());
        assert!(dicts("{'a': 1").is_empty());
        assert!(dicts("{'a': bare}").is_empty());
        assert_eq!(dicts("{}").len(), 1);
        assert_eq!(dicts("{'a': 1,234}")[0].2, vec![("a".into(), 1234.0)]);
        assert_eq!(dicts("{'a': 'x\\'y'}").len(), 1);
    }
}
