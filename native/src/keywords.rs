//! The keyword pass: which of the given plain strings occur in which line (case-sensitive).
//!
//! One Aho-Corasick automaton runs over the whole chunk; a match counts for a line only when it lies
//! inside that line's scanned bytes. An empty keyword finds nothing.

use crate::lines::LineRec;
use aho_corasick::{AhoCorasick, MatchKind};

pub struct Keywords {
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
        let automaton = if patterns.is_empty() {
            None
        } else {
            Some(
                AhoCorasick::builder()
                    .match_kind(MatchKind::Standard)
                    .build(&patterns)
                    .map_err(|e| format!("keywords: {e}"))?,
            )
        };
        Ok(Keywords { automaton, ids })
    }

    /// (line index, keyword id) for every keyword in every line, sorted, one per pair.
    pub fn hits(&self, data: &[u8], lines: &[LineRec]) -> Vec<(i64, i32)> {
        let mut hits = Vec::new();
        if let Some(ac) = &self.automaton {
            let mut line = 0usize;
            for m in ac.find_overlapping_iter(data) {
                // Matches come by end position, so the line holding the last byte only moves on.
                while lines.get(line + 1).is_some_and(|l| l.dpos < m.end()) {
                    line += 1;
                }
                let Some(rec) = lines.get(line) else { break };
                if m.start() >= rec.dpos && m.end() <= rec.dpos + rec.dlen {
                    if let Some(&id) = self.ids.get(m.pattern().as_usize()) {
                        hits.push((line as i64, id));
                    }
                }
            }
        }
        hits.sort_unstable();
        hits.dedup();
        hits
    }
}
