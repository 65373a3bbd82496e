//! Splits fed bytes into complete lines, keeping the partial last line between feeds.
//!
//! The chunk's `data` is built here: every line's bytes as fed, except that a line longer than
//! [`MAX_LINE`] keeps only its first `MAX_LINE` bytes (then its terminator), so memory stays bounded.

use memchr::memchr_iter;

/// Bytes of a line that are kept and scanned; the rest of a longer line is dropped.
pub const MAX_LINE: usize = 1 << 20;

/// Where one line is: absolute offsets in the whole stream, and its scanned bytes in the chunk data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LineRec {
    /// Absolute offset of the line's first byte.
    pub abs_start: i64,
    /// Absolute offset one past the line's last byte (before `\n` and a `\r` right before it).
    pub abs_end: i64,
    /// Position of the line's first byte in the chunk data.
    pub dpos: usize,
    /// Number of scanned bytes (the line, or its first `MAX_LINE` bytes).
    pub dlen: usize,
}

/// The lines of one feed: their bytes and where each one lies.
#[derive(Debug, Default)]
pub struct Split {
    pub first_lineno: i64,
    pub base_offset: i64,
    pub data: Vec<u8>,
    pub lines: Vec<LineRec>,
}

/// The splitter's state: the partial line and the absolute position of its start.
#[derive(Debug, Default)]
pub struct Splitter {
    /// First bytes (at most `MAX_LINE`) of the partial line.
    held: Vec<u8>,
    /// True length of the partial line, dropped bytes included.
    held_len: u64,
    /// The partial line's last byte (it decides whether a `\r` ends the line when `\n` comes).
    held_last: u8,
    /// Absolute offset where the partial (or next) line starts.
    next_abs: i64,
    /// Number of the partial (or next) line.
    next_lineno: i64,
    /// Buffers of an earlier split handed back (`recycle`): reused, so a scan of many chunks does not
    /// ask the system for fresh pages (and fault them in) at every chunk.
    spare_data: Vec<u8>,
    spare_lines: Vec<LineRec>,
}

/// Buffers larger than this are not kept for reuse: one long chunk must not pin its size for good.
const SPARE_MAX: usize = 64 << 20;

impl Splitter {
    pub fn new() -> Self {
        Splitter {
            next_lineno: 1,
            ..Splitter::default()
        }
    }

    /// Bytes of the partial line held (at most `MAX_LINE`; the excess is dropped).
    pub fn pending(&self) -> u64 {
        self.held.len() as u64
    }

    /// Splits `input`: the complete lines (the partial line first completed), the rest kept.
    pub fn feed(&mut self, input: &[u8]) -> Split {
        let mut out = self.start_split(input.len());
        let mut pos = 0usize;
        // A run of whole, short lines of `input` not yet copied: [run_start, pos) of input,
        // to be placed at out position run_out.
        let mut run_start = 0usize;
        let mut run_out = 0usize;
        for nl in memchr_iter(b'\n', input) {
            let seg = crate::scan::bytes::range(input, pos, nl);
            if self.held_len > 0 {
                self.complete_held(&mut out, seg);
                run_start = nl + 1;
                run_out = out.data.len();
            } else {
                let has_cr = seg.last() == Some(&b'\r');
                let content = seg.len() - usize::from(has_cr);
                if content <= MAX_LINE {
                    let dpos = run_out + (pos - run_start);
                    self.push(
                        &mut out,
                        content as u64,
                        dpos,
                        content,
                        1 + usize::from(has_cr),
                    );
                } else {
                    out.data
                        .extend_from_slice(crate::scan::bytes::range(input, run_start, pos));
                    let dpos = out.data.len();
                    out.data
                        .extend_from_slice(crate::scan::bytes::range(seg, 0, MAX_LINE));
                    out.data
                        .extend_from_slice(if has_cr { b"\r\n" } else { b"\n" });
                    self.push(
                        &mut out,
                        content as u64,
                        dpos,
                        MAX_LINE,
                        1 + usize::from(has_cr),
                    );
                    run_start = nl + 1;
                    run_out = out.data.len();
                }
            }
            pos = nl + 1;
        }
        out.data
            .extend_from_slice(crate::scan::bytes::range(input, run_start, pos));
        self.hold(crate::scan::bytes::range(input, pos, input.len()));
        out
    }

    /// The partial line as a last line (no terminator), then nothing held.
    pub fn finish(&mut self) -> Split {
        let mut out = self.start_split(0);
        if self.held_len > 0 {
            let held = std::mem::take(&mut self.held);
            let total = self.held_len;
            out.data.extend_from_slice(&held);
            self.push(&mut out, total, 0, held.len(), 0);
            self.held_len = 0;
        }
        out
    }

    fn start_split(&mut self, capacity: usize) -> Split {
        let mut data = std::mem::take(&mut self.spare_data);
        data.clear();
        data.reserve(capacity + self.held.len());
        let mut lines = std::mem::take(&mut self.spare_lines);
        lines.clear();
        Split {
            first_lineno: self.next_lineno,
            base_offset: self.next_abs,
            data,
            lines,
        }
    }

    /// A split's data, once its caller is done with it, for the next split to fill.
    pub fn recycle_data(&mut self, data: Vec<u8>) {
        if data.capacity() <= SPARE_MAX {
            self.spare_data = data;
        }
    }

    /// The buffers kept for the next split given back to the system, and their bytes before that: a
    /// source whose backlog is read holds none while it waits (a check of many files, a follower).
    pub fn release(&mut self) -> usize {
        let held = self.spare_data.capacity()
            + self.spare_lines.capacity() * std::mem::size_of::<LineRec>();
        self.spare_data = Vec::new();
        self.spare_lines = Vec::new();
        held
    }

    /// A split's line records, likewise.
    pub fn recycle_lines(&mut self, lines: Vec<LineRec>) {
        if lines
            .capacity()
            .saturating_mul(std::mem::size_of::<LineRec>())
            <= SPARE_MAX
        {
            self.spare_lines = lines;
        }
    }

    /// Records a line of `content` true bytes whose `dlen` scanned bytes start at `dpos` in the
    /// data, followed by `terminator` bytes in the stream.
    fn push(&mut self, out: &mut Split, content: u64, dpos: usize, dlen: usize, terminator: usize) {
        let abs_start = self.next_abs;
        let abs_end = abs_start.saturating_add(i64::try_from(content).unwrap_or(i64::MAX));
        out.lines.push(LineRec {
            abs_start,
            abs_end,
            dpos,
            dlen,
        });
        self.next_abs = abs_end.saturating_add(terminator as i64);
        self.next_lineno += 1;
    }

    /// Completes the held partial line with `seg` (the bytes up to the `\n`).
    fn complete_held(&mut self, out: &mut Split, seg: &[u8]) {
        let total = self.held_len + seg.len() as u64;
        let last = seg.last().copied().unwrap_or(self.held_last);
        let has_cr = last == b'\r';
        let content = total - u64::from(has_cr);
        let scanned = usize::try_from(content.min(MAX_LINE as u64)).unwrap_or(MAX_LINE);
        let mut held = std::mem::take(&mut self.held);
        if scanned >= held.len() {
            held.extend_from_slice(crate::scan::bytes::range(seg, 0, scanned - held.len()));
        } else {
            held.truncate(scanned);
        }
        let dpos = out.data.len();
        out.data.extend_from_slice(&held);
        out.data
            .extend_from_slice(if has_cr { b"\r\n" } else { b"\n" });
        self.held_len = 0;
        self.push(out, content, dpos, held.len(), 1 + usize::from(has_cr));
        held.clear();
        self.held = held;
    }

    /// Keeps `rest` (bytes after the last `\n`) as the partial line, capped at `MAX_LINE` bytes.
    fn hold(&mut self, rest: &[u8]) {
        if let Some(&last) = rest.last() {
            let room = MAX_LINE.saturating_sub(self.held.len());
            self.held
                .extend_from_slice(crate::scan::bytes::range(rest, 0, room.min(rest.len())));
            self.held_len += rest.len() as u64;
            self.held_last = last;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines_of(split: &Split) -> Vec<(i64, i64, Vec<u8>)> {
        split
            .lines
            .iter()
            .map(|l| {
                let bytes =
                    crate::scan::bytes::range(&split.data, l.dpos, l.dpos + l.dlen).to_vec();
                (l.abs_start, l.abs_end, bytes)
            })
            .collect()
    }

    #[test]
    fn crlf_and_partial_lines() {
        let mut s = Splitter::new();
        let a = s.feed(b"ab\r\ncd\rx\n\ne");
        assert_eq!(
            lines_of(&a),
            vec![
                (0, 2, b"ab".to_vec()),
                (4, 8, b"cd\rx".to_vec()),
                (9, 9, b"".to_vec())
            ]
        );
        assert_eq!(a.data, b"ab\r\ncd\rx\n\n");
        assert_eq!(s.pending(), 1);
        let b = s.feed(b"f\r");
        assert!(b.lines.is_empty());
        assert_eq!((b.first_lineno, b.base_offset), (4, 10));
        let c = s.feed(b"\ng");
        assert_eq!(lines_of(&c), vec![(10, 12, b"ef".to_vec())]);
        assert_eq!(c.data, b"ef\r\n");
        let d = s.finish();
        assert_eq!(lines_of(&d), vec![(14, 15, b"g".to_vec())]);
        assert_eq!(d.first_lineno, 5);
    }

    #[test]
    fn long_lines_are_cut_but_offsets_exact() {
        let mut s = Splitter::new();
        let mut input = vec![b'a'; MAX_LINE + 10];
        input.extend_from_slice(b"\nb\n");
        let whole = s.feed(&input);
        assert_eq!(whole.lines.len(), 2);
        assert_eq!(whole.lines[0].abs_end, (MAX_LINE + 10) as i64);
        assert_eq!(whole.lines[0].dlen, MAX_LINE);
        assert_eq!(whole.data.len(), MAX_LINE + 3);
        let mut cut = Splitter::new();
        let mut parts = cut.feed(&input[..MAX_LINE + 5]);
        assert!(parts.lines.is_empty());
        assert_eq!(cut.pending(), MAX_LINE as u64);
        parts = cut.feed(&input[MAX_LINE + 5..]);
        assert_eq!(parts.lines, whole.lines);
        assert_eq!(parts.data, whole.data);
    }
}
