//! The keyword pass: which of the given plain strings occur in which line (case-sensitive).
//!
//! One Aho-Corasick automaton runs over the whole chunk to find the lines holding any keyword (the fast,
//! non-overlapping search, resumed at the next line after each hit); only those lines are then searched
//! for every keyword, overlapping matches included, inside their scanned bytes. An empty keyword finds
//! nothing.

use crate::bytes::range;
use crate::lines::LineRec;
use aho_corasick::{AhoCorasick, Input, MatchKind};

pub struct Keywords {
    /// Leftmost-first search: it can use the SIMD prefilter, so finding candidate lines runs fast.
    finder: Option<AhoCorasick>,
    /// Standard semantics: every keyword in a candidate line, overlapping ones included.
    automaton: Option<AhoCorasick>,
    /// Keyword id of each automaton pattern.
    ids: Vec<i32>,
}

impl Keywords {
    /// Builds the automaton; empty keywords and those holding `\n` (never inside a line) are left out.
    pub fn new(keywords: &[Vec<u8>]) -> Result<Self, String> {
        let mut patterns = Vec::new();
        let mut ids = Vec::new();
        for (id, k) in keywords.iter().enumerate() {
            let id = i32::try_from(id).map_err(|_| "too many keywords".to_string())?;
            if !k.is_empty() && !k.contains(&b'\n') {
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
            finder: build(MatchKind::LeftmostFirst)?,
            automaton: build(MatchKind::Standard)?,
            ids,
        })
    }

    /// (line index, keyword id) for every keyword in every line, sorted, one per pair.
    pub fn hits(&self, data: &[u8], lines: &[LineRec]) -> Vec<(i64, i32)> {
        let mut hits = Vec::new();
        let (Some(finder), Some(ac)) = (&self.finder, &self.automaton) else {
            return hits;
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
            let text = range(data, rec.dpos, rec.dpos + rec.dlen);
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
        hits
    }
}
