//! The scanner core: splits fed bytes into lines and runs every pass over them into flat arrays.

use crate::scan::bytes::range;
use crate::scan::keys::Keys;
use crate::scan::keywords::Keywords;
use crate::scan::lines::{LineRec, Split, Splitter};
use crate::scan::{dicts, kv, progress};
use std::collections::HashMap;

/// Layouts remembered: past this many, a sequence of keys not met before gets a new id each time it
/// comes (so memory stays bounded on a log whose lines print their keys in ever new orders).
pub const MAX_LAYOUTS: usize = 4096;

/// Everything one feed found; field meanings are those of the scanner contract.
#[derive(Debug, Default)]
pub struct ChunkOut {
    pub first_lineno: i64,
    pub base_offset: i64,
    pub data: Vec<u8>,
    pub line_start: Vec<i64>,
    pub line_end: Vec<i64>,
    pub visible_start: Vec<i64>,
    pub kw_line: Vec<i64>,
    pub kw_id: Vec<i32>,
    pub dict_line: Vec<i64>,
    pub dict_start: Vec<i64>,
    pub dict_end: Vec<i64>,
    pub dict_json: Vec<bool>,
    pub dict_layout: Vec<i64>,
    pub ent_dict: Vec<i64>,
    pub ent_key: Vec<i32>,
    pub ent_value: Vec<f64>,
    pub kv_line: Vec<i64>,
    pub kv_key: Vec<i32>,
    pub kv_value: Vec<f64>,
    pub kv_pos: Vec<i64>,
    pub prog_line: Vec<i64>,
    pub prog_n: Vec<i64>,
    pub prog_total: Vec<i64>,
}

/// How many of each kind of record the last chunk held, and over how many lines: the next chunk's
/// arrays are sized from it, so they are filled without being grown (each growth copies the array
/// into fresh memory, and touching fresh pages is as dear as the scan itself).
#[derive(Clone, Copy, Debug, Default)]
struct Counts {
    lines: usize,
    dicts: usize,
    entries: usize,
    kv: usize,
    prog: usize,
}

impl Counts {
    fn of(out: &ChunkOut) -> Self {
        Counts {
            lines: out.line_start.len(),
            dicts: out.dict_line.len(),
            entries: out.ent_dict.len(),
            kv: out.kv_line.len(),
            prog: out.prog_line.len(),
        }
    }

    /// Room for `count` of the last chunk's records scaled to `lines` lines, a little over, but never
    /// more than twice `count` nor than `most` (what the chunk's bytes could hold at all): a chunk
    /// unlike the last one reserves nothing big and grows its arrays as needed.
    fn room(&self, count: usize, lines: usize, most: usize) -> usize {
        let scaled = (count as u128 * lines as u128) / self.lines.max(1) as u128;
        let scaled = usize::try_from(scaled).unwrap_or(usize::MAX);
        scaled
            .saturating_add(scaled / 16 + 16)
            .min(count.saturating_mul(2).saturating_add(16))
            .min(most)
    }
}

pub struct Core {
    splitter: Splitter,
    keywords: Keywords,
    keys: Keys,
    /// Each sequence of entry key ids met so far (the first MAX_LAYOUTS of them), and its layout id.
    layouts: HashMap<Vec<i32>, i64, foldhash::fast::RandomState>,
    /// The next layout id to give.
    next_layout: i64,
    /// The key ids of the dict being reported.
    layout_keys: Vec<i32>,
    /// The key ids of the dict reported before it, and its layout id when `layouts` holds that
    /// sequence: most dicts of a log repeat the previous one's keys, which are then recognised by
    /// comparing names in place, without hashing.
    prev_keys: Vec<i32>,
    prev_layout: Option<i64>,
    dict_scratch: dicts::Found,
    spans: Vec<(usize, usize)>,
    last: Counts,
}

impl Core {
    pub fn new(keywords: &[Vec<u8>]) -> Result<Self, String> {
        Ok(Core {
            splitter: Splitter::new(),
            keywords: Keywords::new(keywords)?,
            keys: Keys::default(),
            layouts: HashMap::default(),
            next_layout: 0,
            layout_keys: Vec::new(),
            prev_keys: Vec::new(),
            prev_layout: None,
            dict_scratch: dicts::Found::default(),
            spans: Vec::new(),
            last: Counts::default(),
        })
    }

    /// Complete lines of `input` (after the held partial line) and what is in them.
    pub fn feed(&mut self, input: &[u8]) -> ChunkOut {
        let split = self.splitter.feed(input);
        self.scan(split)
    }

    /// The held partial line as a last line.
    pub fn finish(&mut self) -> ChunkOut {
        let split = self.splitter.finish();
        self.scan(split)
    }

    pub fn pending(&self) -> u64 {
        self.splitter.pending()
    }

    pub fn keys(&self) -> &[Vec<u8>] {
        self.keys.names()
    }

    fn scan(&mut self, split: Split) -> ChunkOut {
        let n = split.lines.len();
        let bytes = split.data.len();
        let last = self.last;
        // At most one dict per 2 bytes (`{}`), one entry or token per 3 (`'':1`, `a:1`), one counter
        // per line.
        let dicts = last.room(last.dicts, n, bytes / 2);
        let entries = last.room(last.entries, n, bytes / 3);
        let kv = last.room(last.kv, n, bytes / 3);
        let prog = last.room(last.prog, n, n);
        let mut out = ChunkOut {
            first_lineno: split.first_lineno,
            base_offset: split.base_offset,
            line_start: Vec::with_capacity(n),
            line_end: Vec::with_capacity(n),
            visible_start: Vec::with_capacity(n),
            dict_line: Vec::with_capacity(dicts),
            dict_start: Vec::with_capacity(dicts),
            dict_end: Vec::with_capacity(dicts),
            dict_json: Vec::with_capacity(dicts),
            dict_layout: Vec::with_capacity(dicts),
            ent_dict: Vec::with_capacity(entries),
            ent_key: Vec::with_capacity(entries),
            ent_value: Vec::with_capacity(entries),
            kv_line: Vec::with_capacity(kv),
            kv_key: Vec::with_capacity(kv),
            kv_value: Vec::with_capacity(kv),
            kv_pos: Vec::with_capacity(kv),
            prog_line: Vec::with_capacity(prog),
            prog_n: Vec::with_capacity(prog),
            prog_total: Vec::with_capacity(prog),
            ..ChunkOut::default()
        };
        for (kw_line, kw_id) in self.keywords.hits(&split.data, &split.lines) {
            out.kw_line.push(kw_line);
            out.kw_id.push(kw_id);
        }
        for (index, rec) in split.lines.iter().enumerate() {
            let line = range(&split.data, rec.dpos, rec.dpos + rec.dlen);
            self.scan_line(&mut out, index as i64, rec, line);
        }
        out.data = split.data;
        self.splitter.recycle_lines(split.lines);
        if n > 0 {
            self.last = Counts::of(&out);
        }
        out
    }

    /// A chunk's data once the caller has copied it out: the next chunk is built in it.
    pub fn recycle(&mut self, data: Vec<u8>) {
        self.splitter.recycle_data(data);
    }

    /// The buffers kept for the next chunk given back (see `Splitter::release`); their bytes.
    pub fn release(&mut self) -> usize {
        self.splitter.release()
    }

    fn scan_line(&mut self, out: &mut ChunkOut, index: i64, rec: &LineRec, line: &[u8]) {
        // Most lines hold neither a `\r` (a redraw) nor a `|` (a bar): one forward search then
        // answers both backward searches below.
        let marked = memchr::memchr2(b'\r', b'|', line).is_some();
        let visible = if marked { visible_start(line) } else { 0 };
        out.line_start.push(rec.abs_start);
        out.line_end.push(rec.abs_end);
        out.visible_start.push(rec.abs_start + visible as i64);

        self.spans.clear();
        let keys = &mut self.keys;
        let spans = &mut self.spans;
        let layouts = &mut self.layouts;
        let next_layout = &mut self.next_layout;
        let layout_keys = &mut self.layout_keys;
        let prev_keys = &mut self.prev_keys;
        let prev_layout = &mut self.prev_layout;
        dicts::scan(line, &mut self.dict_scratch, |found| {
            let dict_index = out.dict_line.len() as i64;
            out.dict_line.push(index);
            out.dict_start.push(rec.abs_start + found.start as i64);
            out.dict_end.push(rec.abs_start + found.end as i64);
            out.dict_json.push(found.json);
            layout_keys.clear();
            let mut repeated = true;
            for (key, value) in found.entries(line) {
                // The key at the same place in the previous dict, when it is this one, has its id.
                let id = match prev_keys.get(layout_keys.len()) {
                    Some(&prev) if same_bytes(keys.name(prev), key) => prev,
                    _ => {
                        repeated = false;
                        keys.intern(key)
                    }
                };
                out.ent_dict.push(dict_index);
                out.ent_key.push(id);
                out.ent_value.push(value);
                layout_keys.push(id);
            }
            let layout = match *prev_layout {
                Some(known) if repeated && layout_keys.len() == prev_keys.len() => known,
                _ => {
                    let (id, remembered) = match layouts.get(layout_keys.as_slice()) {
                        Some(&known) => (known, true),
                        None => {
                            let id = *next_layout;
                            *next_layout += 1;
                            let room = layouts.len() < MAX_LAYOUTS;
                            if room {
                                layouts.insert(layout_keys.clone(), id);
                            }
                            (id, room)
                        }
                    };
                    std::mem::swap(layout_keys, prev_keys);
                    *prev_layout = remembered.then_some(id);
                    id
                }
            };
            out.dict_layout.push(layout);
            spans.push((found.start, found.end));
        });

        // A dict that spans the visible line to its end (a JSON line) leaves no token outside it: every
        // separator the token scan would find lies inside it and is skipped.
        let one_dict = spans
            .iter()
            .any(|&(start, end)| start <= visible && end >= line.len());
        if !one_dict {
            kv::scan(line, visible, spans, |token| {
                out.kv_line.push(index);
                out.kv_key
                    .push(keys.intern(range(line, token.key_start, token.key_end)));
                out.kv_value.push(token.value);
                out.kv_pos.push(rec.abs_start + token.key_start as i64);
            });
        }

        if let Some((n, total)) = marked.then(|| progress::last_bar(line)).flatten() {
            out.prog_line.push(index);
            out.prog_n.push(n);
            out.prog_total.push(total);
        }
    }
}

/// `a == b` for short slices (key names) without a call into the C library's `memcmp`, whose
/// set-up costs more than comparing a dozen bytes: eight bytes at a time, then the rest.
#[inline]
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let (wa, wb) = (a.chunks_exact(8), b.chunks_exact(8));
    let tails_equal = wa
        .remainder()
        .iter()
        .zip(wb.remainder())
        .all(|(x, y)| x == y);
    tails_equal
        && wa.zip(wb).all(|(x, y)| {
            let word = |c: &[u8]| u64::from_le_bytes(c.try_into().unwrap_or([0; 8]));
            word(x) == word(y)
        })
}

/// Start of the line's last `\r`-segment that holds more than spaces and tabs (0 when none does).
fn visible_start(line: &[u8]) -> usize {
    let mut end = line.len();
    loop {
        let start = memchr::memrchr(b'\r', range(line, 0, end)).map_or(0, |cr| cr + 1);
        if range(line, start, end)
            .iter()
            .any(|&c| c != b' ' && c != b'\t')
        {
            return start;
        }
        if start == 0 {
            return 0;
        }
        end = start - 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn room_follows_the_last_chunk_within_bounds() {
        let last = Counts {
            lines: 100,
            dicts: 100,
            entries: 800,
            kv: 0,
            prog: 0,
        };
        assert_eq!(last.room(800, 100, usize::MAX), 800 + 50 + 16);
        assert_eq!(last.room(800, 10_000, usize::MAX), 2 * 800 + 16);
        assert_eq!(last.room(800, 100, 300), 300);
        assert_eq!(last.room(0, 100, usize::MAX), 16);
        assert_eq!(Counts::default().room(0, 5, 1), 1);
    }

    #[test]
    fn repeated_key_sequences_share_layouts() {
        let mut core = Core::new(&[]).unwrap();
        let text = concat!(
            "{\"a\": 1, \"b\": 2}\n",
            "{\"a\": 1, \"b\": 2}\n",
            "{\"a\": 1}\n",
            "{\"a\": 1, \"b\": 2, \"c\": 3} {'a': 1, 'b': 2, 'c': 3}\n",
            "{\"b\": 1, \"a\": 2}\n",
            "{\"a\": 1, \"b\": 2}\n",
            "{}\n{}\n",
            "{\"a\": \"x\", \"b\": 2}\n",
            "{\"a\": {\"b\": 1}, \"b\": 2}\n",
            "{\"a/b\": 1, \"b\": 2}\n",
        );
        let out = core.feed(text.as_bytes());
        assert_eq!(out.dict_layout, [0, 0, 1, 2, 2, 3, 0, 4, 4, 5, 6, 6]);
        assert_eq!(
            core.keys(),
            [b"a".to_vec(), b"b".to_vec(), b"c".to_vec(), b"a/b".to_vec()]
        );
        assert_eq!(out.ent_key[..9], [0, 1, 0, 1, 0, 0, 1, 2, 0]);
        assert_eq!(out.ent_key[out.ent_key.len() - 5..], [1, 3, 1, 3, 1]);
    }

    #[test]
    fn same_bytes_is_equality() {
        let texts: [&[u8]; 7] = [
            b"",
            b"a",
            b"b",
            b"loss",
            b"grad_norm",
            b"grad_nork",
            b"tokens_per_sec/x",
        ];
        for a in texts {
            for b in texts {
                assert_eq!(same_bytes(a, b), a == b);
            }
        }
        assert!(!same_bytes(b"tokens_per_sec/x", b"tokens_per_sec/y"));
        assert!(!same_bytes(b"aokens_per_sec/x", b"tokens_per_sec/x"));
    }

    #[test]
    fn layouts_past_the_limit_are_new_each_time() {
        let mut core = Core::new(&[]).unwrap();
        let mut text = Vec::new();
        for i in 0..MAX_LAYOUTS + 2 {
            text.extend_from_slice(format!("{{\"k{i}\": 1}}\n").as_bytes());
        }
        text.extend_from_slice(b"{\"k0\": 2}\n{\"late\": 1}\n{\"late\": 2}\n");
        let out = core.feed(&text);
        let n = MAX_LAYOUTS as i64;
        assert_eq!(out.dict_layout[..3], [0, 1, 2]);
        assert_eq!(out.dict_layout[MAX_LAYOUTS..], [n, n + 1, 0, n + 2, n + 3]);
    }
}
