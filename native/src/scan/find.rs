//! Where a short byte string occurs in a chunk's data: the same offsets as the reference
//! (`trainwatch/scan/find.py`, `positions`). An adapter planning its lines over arrays asks this for
//! the structure bytes of its format (`{`, `\r`, tqdm's `%|`), which numpy would find with a full pass
//! over the data per byte and holding the GIL for part of it.

use memchr::memmem;

/// Every offset at which `needle` starts in `data`, ascending; occurrences may overlap. An empty
/// needle occurs nowhere.
pub fn positions(data: &[u8], needle: &[u8]) -> Vec<i64> {
    let mut out = Vec::new();
    match needle {
        [] => {}
        [one] => out.extend(memchr::memchr_iter(*one, data).map(offset)),
        _ => {
            let finder = memmem::Finder::new(needle);
            let mut from = 0;
            while let Some(rest) = data.get(from..) {
                let Some(i) = finder.find(rest) else { break };
                out.push(offset(from + i));
                from += i + 1;
            }
        }
    }
    out
}

fn offset(i: usize) -> i64 {
    i64::try_from(i).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::positions;

    #[test]
    fn single_bytes_and_pairs_overlapping() {
        assert_eq!(positions(b"a{b{", b"{"), vec![1, 3]);
        assert_eq!(positions(b"1%|2%|%", b"%|"), vec![1, 4]);
        assert_eq!(positions(b"aaa", b"aa"), vec![0, 1]);
        assert_eq!(positions(b"", b"{"), Vec::<i64>::new());
        assert_eq!(positions(b"abc", b""), Vec::<i64>::new());
        assert_eq!(positions(b"%", b"%|"), Vec::<i64>::new());
    }
}
