//! Byte counts over many spans of a chunk's data: the same counts as the reference
//! (`trainwatch/scan/census.py`, `span_census`). Which bytes mean what is the caller's. Spans are to lie
//! in the data: a span's part past its end is not counted, and a neighbour outside it reads as 0.

use crate::scan::bytes::at;

/// What to count in a span.
pub struct Census {
    /// Bytes a span may hold; the others are counted.
    pub allowed: [bool; 256],
    /// A byte counted, and counted again when its neighbours are not `before` and `after`.
    pub mark: u8,
    pub before: u8,
    pub after: u8,
    /// Another byte counted.
    pub count: u8,
}

impl Census {
    /// Bytes outside `allowed`, `mark` bytes, those without `before` just before or `after` just
    /// after, and `count` bytes, in data[start..start + length].
    pub fn of(&self, data: &[u8], start: usize, length: usize) -> [i64; 4] {
        let mut out = [0i64; 4];
        let end = start.saturating_add(length).min(data.len());
        let Some(span) = data.get(start..end) else {
            return out;
        };
        // one table lookup per byte; marks and counted bytes are rare, so their tests come after
        let mut bad = 0i64;
        for (k, &b) in span.iter().enumerate() {
            bad += i64::from(!self.allowed.get(usize::from(b)).copied().unwrap_or(false));
            if b != self.mark && b != self.count {
                continue;
            }
            let i = start + k;
            if b == self.mark {
                out[1] += 1;
                let prev = if i == 0 { 0 } else { at(data, i - 1) };
                if prev != self.before || at(data, i + 1) != self.after {
                    out[2] += 1;
                }
            }
            if b == self.count {
                out[3] += 1;
            }
        }
        out[0] = bad;
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_a_dicts_inside() {
        let mut allowed = [false; 256];
        allowed[0x20..0x7f].iter_mut().for_each(|a| *a = true);
        let c = Census {
            allowed,
            mark: b':',
            before: b'\'',
            after: b' ',
            count: b',',
        };
        let data = b"{'a': 1, 'b':2}";
        assert_eq!(c.of(data, 1, 13), [0, 2, 1, 1]);
        assert_eq!(c.of(data, 10, 100), [0, 1, 1, 0]);
        assert_eq!(c.of(data, usize::MAX, 9), [0; 4]);
    }
}
