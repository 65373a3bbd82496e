//! Byte classes and bounds-checked access shared by the scanners.
//!
//! Every read of input-derived positions goes through [`at`] or `slice::get`, so no input can make
//! the scanner index out of bounds.

/// The byte at `i`, or 0 past the end. 0 belongs to no class below, so it ends every token.
#[inline]
pub fn at(b: &[u8], i: usize) -> u8 {
    b.get(i).copied().unwrap_or(0)
}

/// Whitespace inside dicts and around quoted numbers: spaces and tabs (a `\r` is a redraw, not space).
#[inline]
pub fn is_space(c: u8) -> bool {
    c == b' ' || c == b'\t'
}

/// A byte that may continue a key word: letters, digits, `_ . / -`.
#[inline]
pub fn is_key_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'/' | b'-')
}

/// A byte that may start a key word: letters and `_`.
#[inline]
pub fn is_key_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_'
}

/// A byte that may not directly follow a key/value number (so `mode: inference` is no `inf`).
#[inline]
pub fn is_word_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// The sub-slice `b[start..end]`, empty when the range is not inside `b`.
#[inline]
pub fn range(b: &[u8], start: usize, end: usize) -> &[u8] {
    b.get(start..end).unwrap_or(&[])
}

/// `v[i]` for an index read from the input (negative or past the end: `or`), such as a key id.
#[inline]
pub fn entry<T: Copy>(v: &[T], i: i64, or: T) -> T {
    usize::try_from(i)
        .ok()
        .and_then(|i| v.get(i))
        .copied()
        .unwrap_or(or)
}

/// Whether the table marks id `i` (false for an id past its end).
#[inline]
pub fn flag(table: &[bool], i: i64) -> bool {
    entry(table, i, false)
}
