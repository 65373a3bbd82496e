//! `{...}` objects on a line: Python dict reprs and JSON objects, nested ones flattened.
//!
//! An object is `{`, zero or more `'key': value` entries separated by `,`, then `}`, with spaces and
//! tabs around tokens. Keys are quoted and hold no backslash; values are numbers, number-like quoted
//! strings, other quoted strings, the bare words `true false True False null None`, lists `[...]`
//! (skipped whole, brackets matched outside quoted strings) and nested objects. A nested object's
//! entries belong to the outer one, their keys joined with `/` (`train/grad/norm`), down to
//! [`MAX_LEVEL`] levels below the outer object (the JSON-lines adapter's flattening depth); deeper
//! objects are parsed but their entries dropped.
//!
//! Parsing is iterative (no recursion, whatever the nesting) and an object that does not parse
//! reports where it stopped: the search for the next object goes on from there, so every byte is
//! read by at most one attempt plus a bounded look-ahead (a key's 200 bytes), and a line costs time
//! linear in its length.

use crate::scan::bytes::{at, is_space, range};
use crate::scan::numbers::{scan_number, whole_number, Span, Text};
use memchr::{memchr, memchr2};

/// Longest key, in bytes between its quotes.
const MAX_KEY: usize = 200;

/// Deepest nesting level whose entries are reported (the outer object is level 0).
pub const MAX_LEVEL: usize = 7;

/// Bare words that are valid values but carry no number.
const BARE_WORDS: [&[u8]; 6] = [b"true", b"false", b"True", b"False", b"null", b"None"];

/// Where an entry's key name lies: in the line (outer object) or in the joined-names buffer.
#[derive(Clone, Copy, Debug)]
enum Name {
    Line(usize, usize),
    Joined(usize, usize),
}

/// One object found: its span in the line and its numeric entries; reused between objects.
#[derive(Debug, Default)]
pub struct Found {
    pub start: usize,
    pub end: usize,
    /// Plain JSON of numbers: every key `"`-quoted printable ASCII, every value a JSON number or an
    /// object of such (no strings, words, lists, NaN, `%`, separators, `.5`, `1.`, `01`, `+1`, `-0`).
    pub json: bool,
    /// Entries of the object being parsed, some values not yet converted.
    pending: Vec<(Name, Value)>,
    /// Joined key names of nested entries (`train/epoch`).
    names: Vec<u8>,
    /// The key path of the nested object being parsed, each key followed by `/`.
    path: Vec<u8>,
    /// Length of `path` before each nested object that added a key to it.
    path_lens: Vec<usize>,
    /// Closing brackets expected inside the list being skipped.
    brackets: Vec<u8>,
}

impl Found {
    /// The numeric entries in printed order: (key name, value); `line` is the line scanned. Values
    /// not converted while parsing are converted here (an entry without a number is left out).
    pub fn entries<'a>(&'a self, line: &'a [u8]) -> impl Iterator<Item = (&'a [u8], f64)> + 'a {
        self.pending.iter().filter_map(move |&(name, value)| {
            let number = match value {
                Value::Known(v) => v,
                Value::Number(text) => text.value(line)?,
                Value::Quoted(s, e) => whole_number(range(line, s, e))?,
                Value::Word => return None,
            };
            let key = match name {
                Name::Line(s, e) => range(line, s, e),
                Name::Joined(s, e) => range(&self.names, s, e),
            };
            Some((key, number))
        })
    }

    /// Parses the object opening at `start`: Ok(one past its `}`), or Err(where parsing stopped).
    fn parse(&mut self, b: &[u8], start: usize) -> Result<usize, usize> {
        self.pending.clear();
        self.names.clear();
        self.path.clear();
        self.path_lens.clear();
        self.json = true;
        let mut level = 0usize;
        let mut i = skip_space(b, start + 1);
        let mut state = State::Open;
        loop {
            match (state, at(b, i)) {
                (State::Open | State::After, b'}') => {
                    if level == 0 {
                        return Ok(i + 1);
                    }
                    if level <= MAX_LEVEL {
                        let len = self.path_lens.pop().unwrap_or(0);
                        self.path.truncate(len);
                    }
                    level -= 1;
                    i = skip_space(b, i + 1);
                    state = State::After;
                }
                (State::After, b',') => {
                    i = skip_space(b, i + 1);
                    state = State::Key;
                }
                (State::After, _) => return Err(i),
                (State::Open | State::Key, _) => {
                    let (key_start, key_end, printable) = key(b, i).ok_or(i)?;
                    self.json &= printable && at(b, i) == b'"';
                    i = skip_space(b, key_end + 1);
                    if at(b, i) != b':' {
                        return Err(i);
                    }
                    i = skip_space(b, i + 1);
                    match at(b, i) {
                        b'{' => {
                            level += 1;
                            if level <= MAX_LEVEL {
                                self.path_lens.push(self.path.len());
                                self.path.extend_from_slice(range(b, key_start, key_end));
                                self.path.push(b'/');
                            }
                            i = skip_space(b, i + 1);
                            state = State::Open;
                            continue;
                        }
                        b'[' => {
                            i = self.list_end(b, i)?;
                            self.json = false;
                        }
                        _ => {
                            let (value, end, json) = match scan_number(b, i) {
                                Some(span) => {
                                    let (value, end) = number(b, span);
                                    (value, end, span.json && end == span.end)
                                }
                                None => {
                                    let (value, end) = value(b, i)?;
                                    (value, end, false)
                                }
                            };
                            self.json &= json;
                            if level <= MAX_LEVEL && !matches!(value, Value::Word) {
                                let name = self.name(b, level, key_start, key_end);
                                self.pending.push((name, value));
                            }
                            i = end;
                        }
                    }
                    i = skip_space(b, i);
                    state = State::After;
                }
            }
        }
    }

    /// The key of an entry at `level`: its bytes in the line, or the current path joined with it.
    fn name(&mut self, b: &[u8], level: usize, key_start: usize, key_end: usize) -> Name {
        if level == 0 {
            return Name::Line(key_start, key_end);
        }
        let s = self.names.len();
        self.names.extend_from_slice(&self.path);
        self.names.extend_from_slice(range(b, key_start, key_end));
        Name::Joined(s, self.names.len())
    }

    /// One past the `]` closing the list that opens at `i`. Brackets `[]{}` must pair up, outside
    /// quoted strings; a wrong closer stops parsing there, an unclosed list or string at the line's end.
    fn list_end(&mut self, b: &[u8], i: usize) -> Result<usize, usize> {
        self.brackets.clear();
        self.brackets.push(b']');
        let mut j = i + 1;
        while let Some(&c) = b.get(j) {
            match c {
                b'[' => self.brackets.push(b']'),
                b'{' => self.brackets.push(b'}'),
                b']' | b'}' => {
                    if self.brackets.pop() != Some(c) {
                        return Err(j);
                    }
                    if self.brackets.is_empty() {
                        return Ok(j + 1);
                    }
                }
                b'\'' | b'"' => j = string_end(b, j + 1, c).ok_or(b.len())?,
                _ => {}
            }
            j += 1;
        }
        Err(b.len())
    }
}

/// What the parser expects next: a key or `}` (just after `{`), a key (after `,`), `,` or `}`.
#[derive(Clone, Copy, Debug)]
enum State {
    Open,
    Key,
    After,
}

/// A value as found while parsing: a number the scan already converted, or one (or a quoted string)
/// converted only when the whole object parsed.
#[derive(Clone, Copy, Debug)]
enum Value {
    Known(f64),
    Number(Text),
    Quoted(usize, usize),
    Word,
}

/// Calls `on_dict` for every object in `line`, left to right; `scratch` is reused between calls.
pub fn scan(line: &[u8], scratch: &mut Found, mut on_dict: impl FnMut(&Found)) {
    let mut pos = 0usize;
    while let Some(i) = memchr(b'{', range(line, pos, line.len())) {
        let start = pos + i;
        match scratch.parse(line, start) {
            Ok(end) => {
                scratch.start = start;
                scratch.end = end;
                on_dict(scratch);
                pos = end;
            }
            Err(stop) => pos = stop.max(start + 1),
        }
    }
}

/// The quoted key at `i`: the span of its content (the closing quote is at the span's end), and
/// whether it is printable ASCII (json reads such a key as the same text, nothing to decode).
fn key(b: &[u8], i: usize) -> Option<(usize, usize, bool)> {
    let quote = at(b, i);
    if quote != b'\'' && quote != b'"' {
        return None;
    }
    // Keys are short: a plain loop beats a vectorised search that must first be set up.
    let content = range(b, i + 1, (i + 2 + MAX_KEY).min(b.len()));
    let mut printable = true;
    for (len, &c) in content.iter().enumerate() {
        if c == quote {
            return Some((i + 1, i + 1 + len, printable));
        }
        if c == b'\\' {
            return None;
        }
        printable &= (0x20..0x7f).contains(&c);
    }
    None
}

/// The value at `i` that is not a number (the caller tried that first: no quote or bare word reads
/// as one) and the position after it; Err(where parsing stopped) when there is none.
fn value(b: &[u8], i: usize) -> Result<(Value, usize), usize> {
    let c = at(b, i);
    if c == b'\'' || c == b'"' {
        let end = string_end(b, i + 1, c).ok_or(b.len())?;
        return Ok((Value::Quoted(i + 1, end), end + 1));
    }
    BARE_WORDS
        .iter()
        .find(|w| range(b, i, i + w.len()) == **w)
        .map(|w| (Value::Word, i + w.len()))
        .ok_or(i)
}

/// A number value (maybe followed by `%`), and the position after it.
#[inline]
fn number(b: &[u8], span: Span) -> (Value, usize) {
    let percent = at(b, span.end) == b'%';
    let end = span.end + usize::from(percent);
    let value = match span.known() {
        Ok(v) => Value::Known(v),
        Err(text) => Value::Number(text),
    };
    (value, end)
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

    /// Whether all of `t` is one number whose scan marks it JSON.
    fn is_json_number(t: &[u8]) -> bool {
        scan_number(t, 0).is_some_and(|s| s.end == t.len() && s.json)
    }

    /// The grammar written out on its own: the reference the scan's flag is checked against.
    /// `-?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?`, but not a bare `-0` (json reads the int 0).
    fn json_grammar(t: &[u8]) -> bool {
        let digits = |i: usize| t.iter().skip(i).take_while(|c| c.is_ascii_digit()).count();
        let mut i = usize::from(at(t, 0) == b'-');
        let int = digits(i);
        if int == 0 || (int > 1 && at(t, i) == b'0') {
            return false;
        }
        i += int;
        if at(t, i) == b'.' {
            let frac = digits(i + 1);
            if frac == 0 {
                return false;
            }
            i += 1 + frac;
        }
        if matches!(at(t, i), b'e' | b'E') {
            i += 1 + usize::from(matches!(at(t, i + 1), b'+' | b'-'));
            let exp = digits(i);
            if exp == 0 {
                return false;
            }
            i += exp;
        }
        i == t.len() && t != b"-0"
    }

    proptest::proptest! {
        #[test]
        fn json_flag_is_the_grammar(t in "[-+]?[0-9,]{0,4}[.]?[0-9]{0,3}([eE][-+]?[0-9]{0,2})?[%a]?") {
            proptest::prop_assert_eq!(is_json_number(t.as_bytes()), json_grammar(t.as_bytes()), "{}", t);
        }
    }

    fn dicts(line: &str) -> Vec<Dict> {
        let mut out = Vec::new();
        let mut scratch = Found::default();
        let b = line.as_bytes();
        scan(b, &mut scratch, |f| {
            let entries = f
                .entries(b)
                .map(|(k, v)| (String::from_utf8_lossy(k).into_owned(), v))
                .collect();
            out.push((f.start, f.end, entries));
        });
        out
    }

    fn names(line: &str) -> Vec<String> {
        let found = dicts(line);
        assert_eq!(found.len(), 1, "{line}");
        found[0].2.iter().map(|(k, _)| k.clone()).collect()
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
    fn nested_objects_are_flattened_and_lists_skipped() {
        let line = r#"{"step": 1, "train": {"epoch": 0.5, "grad": {"norm": 1.2}}, "x": [1, {"y": "]"}], "z": 3}"#;
        let found = dicts(line);
        assert_eq!(found.len(), 1);
        assert_eq!((found[0].0, found[0].1), (0, line.len()));
        assert_eq!(
            found[0].2,
            vec![
                ("step".into(), 1.0),
                ("train/epoch".into(), 0.5),
                ("train/grad/norm".into(), 1.2),
                ("z".into(), 3.0)
            ]
        );
        assert_eq!(names("{'a': {}, 'b': {'c': {}}, 'd': 1}"), vec!["d"]);
    }

    #[test]
    fn levels_below_the_limit_are_dropped() {
        let deep = |levels: usize| {
            let mut s = String::new();
            for k in 0..levels {
                s.push_str(&format!("{{\"k{k}\": 1, \"n\": "));
            }
            s.push_str("{\"leaf\": 2}");
            s.push_str(&"}".repeat(levels));
            s
        };
        // 7 nested levels below the outer object are reported; the 8th is parsed and dropped.
        assert_eq!(names(&deep(7)).last().unwrap(), "n/n/n/n/n/n/n/leaf");
        assert_eq!(names(&deep(8)).len(), 8);
        assert!(!names(&deep(8)).iter().any(|k| k.ends_with("leaf")));
    }

    #[test]
    fn deep_and_unclosed_nesting_stay_linear() {
        let line = "[".repeat(10_000);
        assert!(dicts(&format!("{{'a': {line}")).is_empty());
        let open = "{'a': ".repeat(200_000);
        let t = std::time::Instant::now();
        assert!(dicts(&open).is_empty());
        let lists = "{\"a\": [".repeat(100_000);
        assert!(dicts(&lists).is_empty());
        assert!(t.elapsed().as_secs() < 5);
        let closed = format!("{}1{}", "{'a': ".repeat(10_000), "}".repeat(10_000));
        assert_eq!(dicts(&closed).len(), 1);
    }

    #[test]
    fn strings_inside_lists_and_escapes() {
        assert_eq!(names(r#"{"a": ["]\"[", '}'], "b": 1}"#), vec!["b"]);
        assert!(dicts(r#"{"a": [1, "x], "b": 1}"#).is_empty());
        assert!(dicts("{'a': [1}, 'b': 1}").is_empty());
        assert_eq!(names(r#"{"a": {"s": "x\"}", "n": 2}}"#), vec!["a/n"]);
    }

    #[test]
    fn failure_resumes_where_parsing_stopped() {
        // The inner object of a failed outer one is not retried; a `{` after the stop is.
        let found = dicts("{'a': {'b': 1}, 'c': tensor(1)} {'d': 2}");
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].2, vec![("d".into(), 2.0)]);
        assert_eq!(dicts("{ {'a': 1}").len(), 1);
        assert_eq!(dicts("{'a': 1,} {'b': 2}").len(), 1);
    }

    #[test]
    fn json_numbers_are_told_apart() {
        for t in [
            "0", "-1", "1.5", "1e5", "-2.5E-3", "0.0", "-0.0", "-0e1", "10",
        ] {
            assert!(is_json_number(t.as_bytes()), "{t}");
        }
        for t in [
            "-0", "01", ".5", "1.", "+1", "1,234", "NaN", "inf", "1e", "-", "",
        ] {
            assert!(!is_json_number(t.as_bytes()), "{t}");
        }
        let json = |line: &str| {
            let mut scratch = Found::default();
            let mut flags = Vec::new();
            scan(line.as_bytes(), &mut scratch, |f| flags.push(f.json));
            flags
        };
        assert_eq!(json(r#"{"a": 1, "b": {"c": -2.5e3, "d": {}}}"#), vec![true]);
        for line in [
            r#"{"a": "1"}"#,
            r#"{"a": [1]}"#,
            r#"{"a": NaN}"#,
            r#"{"a": 5%}"#,
            "{'a': 1}",
            r#"{"a": true}"#,
            r#"{"a": -0}"#,
            "{\"a\tb\": 1}",
        ] {
            assert_eq!(json(line), vec![false], "{line}");
        }
    }

    #[test]
    fn malformed() {
        assert!(dicts("{'a': 1,}").is_empty());
        assert!(dicts("{'a': 1").is_empty());
        assert!(dicts("{'a': bare}").is_empty());
        assert!(dicts("{'a': {'b': 1}").is_empty());
        assert_eq!(dicts("{}").len(), 1);
        assert_eq!(dicts("{'a': 1,234}")[0].2, vec![("a".into(), 1234.0)]);
        assert_eq!(dicts("{'a': 'x\\'y'}").len(), 1);
    }
}
