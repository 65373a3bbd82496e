//! The keyword pass: which of the given plain strings occur in which line (case-sensitive).
//!
//! Keywords of one or two bytes (`{`, `%|`, an escape byte: the ones a format's lines are made of) are
//! each searched over the whole chunk with `memchr`'s SIMD finders, skipping to the next line after a
//! hit, so a keyword on every line costs one short search per line. The longer ones (error signatures,
//! rare) go through one Aho-Corasick automaton over the whole chunk to find the lines holding any of
//! them (the fast, non-overlapping search, resumed at the next line after each hit); only those lines
//! are then searched for every long keyword, overlapping matches included, from the first hit on. A
//! hit must lie wholly in the line's scanned bytes. An empty keyword, or one holding `\n`, finds nothing.

use crate::scan::bytes::range;
use crate::scan::lines::LineRec;
use aho_corasick::{AhoCorasick, Input, MatchKind};
use memchr::memmem;
use std::sync::{Mutex, OnceLock};

/// Longest keyword searched on its own with `memchr` rather than through the automaton.
const SHORT: usize = 2;

/// Keyword lists whose searchers are kept built, newest last. Every source of a live glob scans with the
/// same list, and the automata of the error signatures take most of a megabyte: built once, they are
/// shared (their clones share the automaton), so 200 followed files hold one copy, not 200.
static BUILT: OnceLock<Mutex<Vec<Built>>> = OnceLock::new();

/// A keyword list and its searchers.
type Built = (Vec<Vec<u8>>, Keywords);

/// How many distinct keyword lists `BUILT` keeps (one per kind of adapter in practice).
const BUILT_KEEP: usize = 8;

#[derive(Clone)]
pub struct Keywords {
    /// The short keywords' finders, with their ids.
    short: Vec<(memmem::Finder<'static>, usize, i32)>,
    /// Leftmost-first search over the long keywords: it can use the SIMD prefilter.
    finder: Option<AhoCorasick>,
    /// Standard semantics: every long keyword in a candidate line, overlapping ones included.
    automaton: Option<AhoCorasick>,
    /// Keyword id of each automaton pattern.
    ids: Vec<i32>,
}

impl Keywords {
    /// The searchers of these keywords: the ones already built for the same list, else new ones.
    pub fn new(keywords: &[Vec<u8>]) -> Result<Self, String> {
        let built = BUILT.get_or_init(|| Mutex::new(Vec::new()));
        if let Ok(kept) = built.lock() {
            if let Some((_, k)) = kept.iter().find(|(list, _)| list.as_slice() == keywords) {
                return Ok(k.clone());
            }
        }
        let made = Self::build(keywords)?;
        if let Ok(mut kept) = built.lock() {
            if kept.len() >= BUILT_KEEP {
                kept.remove(0);
            }
            kept.push((keywords.to_vec(), made.clone()));
        }
        Ok(made)
    }

    /// Sorts the keywords into short and long ones and builds their searchers.
    fn build(keywords: &[Vec<u8>]) -> Result<Self, String> {
        let mut patterns = Vec::new();
        let mut ids = Vec::new();
        let mut short = Vec::new();
        for (id, k) in keywords.iter().enumerate() {
            let id = i32::try_from(id).map_err(|_| "too many keywords".to_string())?;
            if k.is_empty() || k.contains(&b'\n') {
                continue;
            }
            if k.len() <= SHORT {
                short.push((memmem::Finder::new(k).into_owned(), k.len(), id));
            } else {
                patterns.push(k.as_slice());
                ids.push(id);
            }
        }
        let build = |kind: MatchKind| -> Result<Option<AhoCorasick>, String> {
            if patterns.is_empty() {
                return Ok(None);
            }
            AhoCorasick::builder()
                .match_kind(kind)
                .build(&patterns)
                .map(Some)
                .map_err(|e| format!("keywords: {e}"))
        };
        Ok(Keywords {
            short,
            finder: build(MatchKind::LeftmostFirst)?,
            automaton: build(MatchKind::Standard)?,
            ids,
        })
    }

    /// (line index, keyword id) for every keyword in every line, sorted, one per pair.
    pub fn hits(&self, data: &[u8], lines: &[LineRec]) -> Vec<(i64, i32)> {
        let mut hits = Vec::new();
        for (finder, len, id) in &self.short {
            short_hits(finder, *len, *id, data, lines, &mut hits);
        }
        self.long_hits(data, lines, &mut hits);
        hits.sort_unstable();
        hits.dedup();
        hits
    }

    fn long_hits(&self, data: &[u8], lines: &[LineRec], hits: &mut Vec<(i64, i32)>) {
        let (Some(finder), Some(ac)) = (&self.finder, &self.automaton) else {
            return;
        };
        let mut line = 0usize;
        let mut pos = 0usize;
        let mut ids = Vec::new();
        while pos < data.len() {
            let Some(m) = finder.find(Input::new(data).range(pos..)) else {
                break;
            };
            // The line whose bytes (terminator included) hold the match's start.
            while lines.get(line + 1).is_some_and(|l| l.dpos <= m.start()) {
                line += 1;
            }
            let Some(rec) = lines.get(line) else { break };
            // no keyword starts before the leftmost match: the overlapping search starts there
            let text = range(data, m.start().max(rec.dpos), rec.dpos + rec.dlen);
            ids.clear();
            ids.extend(
                ac.find_overlapping_iter(text)
                    .filter_map(|found| self.ids.get(found.pattern().as_usize()).copied()),
            );
            ids.sort_unstable();
            ids.dedup();
            hits.extend(ids.iter().map(|&id| (line as i64, id)));
            pos = lines.get(line + 1).map_or(data.len(), |next| next.dpos);
            line += 1;
        }
    }
}

/// The lines holding one short keyword, searched over the whole data: after a hit inside a line's
/// scanned bytes the search goes on at the next line; a hit reaching past them is looked past.
fn short_hits(
    finder: &memmem::Finder<'_>,
    len: usize,
    id: i32,
    data: &[u8],
    lines: &[LineRec],
    hits: &mut Vec<(i64, i32)>,
) {
    let mut line = 0usize;
    let mut pos = 0usize;
    while let Some(found) = data.get(pos..).and_then(|rest| finder.find(rest)) {
        let at = pos + found;
        while lines.get(line + 1).is_some_and(|l| l.dpos <= at) {
            line += 1;
        }
        let Some(rec) = lines.get(line) else { break };
        if at >= rec.dpos && at + len <= rec.dpos + rec.dlen {
            hits.push((line as i64, id));
            pos = lines.get(line + 1).map_or(data.len(), |next| next.dpos);
            line += 1;
        } else {
            pos = at + 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn recs(data: &[u8]) -> Vec<LineRec> {
        let mut out = Vec::new();
        let mut start = 0;
        for (i, &c) in data.iter().enumerate() {
            if c == b'\n' {
                out.push(LineRec {
                    abs_start: start as i64,
                    abs_end: i as i64,
                    dpos: start,
                    dlen: i - start,
                });
                start = i + 1;
            }
        }
        out
    }

    #[test]
    fn short_and_long_keywords_are_found_per_line() {
        let kws: Vec<Vec<u8>> = ["{", "%|", "out of memory", "of mem", "x\r"]
            .iter()
            .map(|k| k.as_bytes().to_vec())
            .collect();
        let k = Keywords::new(&kws).unwrap();
        let data = b"{'a': 1} 5%|#|\nCUDA out of memory\n{\nx\r\n".to_vec();
        assert_eq!(
            k.hits(&data, &recs(&data)),
            vec![(0, 0), (0, 1), (1, 2), (1, 3), (2, 0), (3, 4)]
        );
    }
}
