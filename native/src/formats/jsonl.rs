//! The JSON-lines fast path over a chunk in one pass: for each line holding a brace (the adapter's hit
//! lines), whether the scanner's arrays say everything about it (`readable`'s decision) and, when they
//! do, its row (`rows::take_row`'s), the checks on its entries and its step and time found in one walk
//! over them, its metrics in a second while they are in cache, up to the first line that the per-line
//! path must read. Its reference is the two passes it joins (`readable` then `emit_rows`, and
//! their numpy references in trainwatch/adapters/jsonl.py and jsonl_columns.py).
//!
//! The one part of the decision that needs key names, whether a nesting layout is one `_flatten` names
//! exactly, is the caller's: it keeps a verdict per scanner layout id in a small table (the one count of
//! nested objects with which the layout's lines are readable), and the pass stops to ask when it meets
//! a nested line whose layout the table does not hold. A log has a few layouts, so nearly every chunk
//! is read in one call.

use crate::formats::console::ChunkView;
use crate::formats::readable::{entries_of, span, DictForms, KeyFlags};
use crate::formats::rows::{push_row, Meaning, Rows, StepAndTime};
use crate::scan::bytes::{entry, flag};

/// What the pass reads the chunk's arrays with: the scanner's per-dict facts, the meaning of each key
/// id (to the readable decision and to the rows), and the nesting verdicts.
pub struct Tables<'a> {
    pub forms: DictForms<'a>,
    pub flags: KeyFlags<'a>,
    pub meaning: Meaning<'a>,
    /// Indexed by layout id: -1 nothing known; else the one count of nested objects with which lines
    /// of that layout are readable (0: none is, for a nested line holds at least one).
    pub nesting: &'a [i64],
}

/// Where a pass stopped.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Stop {
    /// Every hit line from the start was taken.
    End,
    /// The next hit lines (this many, at least one) are the per-line path's: the arrays cannot say the
    /// first, or its step goes back, and they cannot say the others.
    Parse(usize),
    /// The next hit line nests objects (this many) in a layout the caller has not judged.
    Judge { dict: i64, objects: i64 },
}

/// The rows of the hit lines taken (`rows.take` of them, from the start given), and why it stopped.
#[derive(Debug, PartialEq)]
pub struct Taken {
    pub rows: Rows,
    pub stop: Stop,
}

/// A hit line's verdict, short of whether its step goes back.
enum Line {
    /// Readable: its dict's entries, its step and the entry that is its time (`row_step_and_time`).
    Rows((usize, usize), (i64, Option<usize>)),
    Unreadable,
    Judge {
        dict: i64,
        objects: i64,
    },
}

/// Hit lines `hits[from..]` (chunk line indices, ascending; line `i` is numbered `first_lineno + i`)
/// read while readable, with `last_step` the step before the first.
pub fn take_lines(
    c: &ChunkView<'_>,
    t: &Tables<'_>,
    hits: &[i64],
    from: usize,
    first_lineno: i64,
    last_step: Option<i64>,
) -> Taken {
    let first_line = hits.get(from).copied().unwrap_or(i64::MAX);
    let mut d = c.dict_line.partition_point(|&l| l < first_line);
    let di = i64::try_from(d).unwrap_or(i64::MAX);
    let mut ent = c.ent_dict.partition_point(|&o| o < di);
    let mut rows = Rows {
        take: 0,
        last_step,
        ..Rows::default()
    };
    let mut stop = Stop::End;
    let mut seen = Vec::new();
    let mut lines = hits.get(from..).unwrap_or(&[]).iter();
    let mut verdict = |li: i64, ent: &mut usize| {
        while c.dict_line.get(d).is_some_and(|&l| l < li) {
            d += 1;
        }
        line_verdict(c, t, li, d, (ent, &mut seen))
    };
    for &li in &mut lines {
        let taken = match verdict(li, &mut ent) {
            Line::Rows(span, found) => {
                if rows.value.capacity() - rows.value.len() < span.1.saturating_sub(span.0) {
                    reserve(&mut rows, c.ent_key.len().saturating_sub(span.0));
                }
                let line = (first_lineno.wrapping_add(li), found);
                push_row(&mut rows, c.ent_key, c.ent_value, span, line, &t.meaning)
            }
            Line::Unreadable => false,
            Line::Judge { dict, objects } => {
                stop = Stop::Judge { dict, objects };
                break;
            }
        };
        if !taken {
            // this line and the unreadable ones after it are the per-line path's, whatever it makes of
            // them (what makes a line unreadable is not the step before it)
            let mut count = 1;
            for &next in &mut lines {
                if !matches!(verdict(next, &mut ent), Line::Unreadable) {
                    break;
                }
                count += 1;
            }
            stop = Stop::Parse(count);
            break;
        }
        rows.take += 1;
    }
    Taken { rows, stop }
}

/// Room in the columns for the metrics to come, at most `bound` (the entries from the row that needs
/// it on): first for ROOM entries, then, when the run goes on past them, for all `bound` at once. A pass
/// that takes no row asks for no memory, a short run (a line between lines `parse` reads) for little,
/// and a long one copies its columns into fresh memory once, not at every doubling.
fn reserve(rows: &mut Rows, bound: usize) {
    let room = if rows.value.is_empty() {
        bound.min(ROOM)
    } else {
        bound
    };
    rows.name.reserve(room);
    rows.step.reserve(room);
    rows.value.reserve(room);
    rows.line.reserve(room);
    rows.time.reserve(room);
}

/// Entries the columns first make room for.
const ROOM: usize = 256;

/// Whether line `li`, whose dicts (if any) start at dict `d`, is readable (see `readable`), and its
/// entries; `ent` is where the search for its entries starts, moved past them, `seen` scratch.
fn line_verdict(
    c: &ChunkView<'_>,
    t: &Tables<'_>,
    li: i64,
    d: usize,
    (ent, seen): (&mut usize, &mut Vec<i32>),
) -> Line {
    let (forms, nesting) = (&t.forms, &t.nesting);
    if c.dict_line.get(d) != Some(&li) || c.dict_line.get(d + 1) == Some(&li) {
        return Line::Unreadable; // no object, or more than one
    }
    let (Ok(l), Ok(di)) = (usize::try_from(li), i64::try_from(d)) else {
        return Line::Unreadable;
    };
    let (start, end) = (
        c.dict_start.get(d).copied().unwrap_or(0),
        c.dict_end.get(d).copied().unwrap_or(0),
    );
    let whole = forms.json.get(d).copied().unwrap_or(false)
        && c.line_start.get(l) == Some(&start)
        && c.line_end.get(l) == Some(&end);
    if !whole {
        return Line::Unreadable;
    }
    let (braces, slashes) = braces_and_slashes(span(c, start, end));
    let objects = braces as i64 - 1;
    if objects > 0 && slashes > 0 {
        return Line::Unreadable;
    }
    let (a, b) = entries_of(c.ent_dict, di, *ent);
    *ent = b;
    let Some(found) = step_and_time(c, t, (a, b), seen) else {
        return Line::Unreadable;
    };
    if objects > 0 {
        let layout = forms.layout.get(d).copied().unwrap_or(-1);
        match entry(nesting, layout, -1) {
            count if count < 0 => return Line::Judge { dict: di, objects },
            count if count != objects => return Line::Unreadable,
            _ => {}
        }
    }
    Line::Rows((a, b), found)
}

/// In one pass over the entries [a, b): None when they say something the arrays cannot (`unsayable`:
/// a value not finite, a total, a step too large for a float to hold exactly, a key repeated), else
/// the row's step and time entry (`rows::row_step_and_time`). `seen` is scratch.
fn step_and_time(
    c: &ChunkView<'_>,
    t: &Tables<'_>,
    (a, b): (usize, usize),
    seen: &mut Vec<i32>,
) -> Option<(i64, Option<usize>)> {
    let (flags, meaning) = (&t.flags, &t.meaning);
    let mut found = StepAndTime::default();
    let mut rising = true; // keys rise in the usual layout: then none repeats, and no sort is needed
    let mut last = None;
    for i in a..b {
        let key = c.ent_key.get(i).copied().unwrap_or(-1);
        let k = i64::from(key);
        let v = c.ent_value.get(i).copied().unwrap_or(f64::NAN);
        if !v.is_finite() || flag(flags.is_total, k) {
            return None;
        }
        if flag(flags.is_step, k) && v.abs() >= flags.safe_int {
            return None;
        }
        found.see(meaning, i, k, v);
        rising &= last.is_none_or(|l| l < key);
        last = Some(key);
    }
    if !rising {
        seen.clear();
        seen.extend((a..b).map(|e| c.ent_key.get(e).copied().unwrap_or(-1)));
        seen.sort_unstable();
        if seen.windows(2).any(|w| matches!(w, [x, y] if x == y)) {
            return None;
        }
    }
    Some(found.result())
}

/// How many `{` and `/` bytes a line holds, in one pass that the compiler vectorises
/// (a line is short: two searches that must each be set up cost more).
fn braces_and_slashes(bytes: &[u8]) -> (usize, usize) {
    let (mut braces, mut slashes) = (0usize, 0usize);
    let mut blocks = bytes.chunks_exact(64);
    for block in &mut blocks {
        let (mut b, mut s) = (0u8, 0u8);
        for &x in block {
            b += u8::from(x == b'{');
            s += u8::from(x == b'/');
        }
        braces += usize::from(b);
        slashes += usize::from(s);
    }
    for &x in blocks.remainder() {
        braces += usize::from(x == b'{');
        slashes += usize::from(x == b'/');
    }
    (braces, slashes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scan::scanner::{ChunkOut, Core};
    use proptest::prelude::*;

    /// Per key id: step, total, rank, time, name id.
    type KeyColumns = (Vec<bool>, Vec<bool>, Vec<i64>, Vec<bool>, Vec<i32>);

    /// Key tables for the scanner's keys: `step` a step key (rank 0), `time` a time key, `total` a total.
    fn tables_of(names: &[Vec<u8>]) -> KeyColumns {
        let is = |w: &[u8]| names.iter().map(|n| n.as_slice() == w).collect::<Vec<_>>();
        let is_step = is(b"step");
        let rank = is_step.iter().map(|&s| if s { 0 } else { 1 }).collect();
        let name = (0..names.len() as i32).map(|i| 100 + i).collect();
        (is_step, is(b"total"), rank, is(b"time"), name)
    }

    fn view(out: &ChunkOut) -> ChunkView<'_> {
        ChunkView {
            data: &out.data,
            base: out.base_offset,
            line_start: &out.line_start,
            line_end: &out.line_end,
            dict_line: &out.dict_line,
            dict_start: &out.dict_start,
            dict_end: &out.dict_end,
            ent_dict: &out.ent_dict,
            ent_key: &out.ent_key,
            ent_value: &out.ent_value,
        }
    }

    /// The pass over the lines of `text` holding a brace (the adapter's hit lines) from hit `from`, with
    /// the nesting `table`.
    fn take(text: &str, table: &[i64], from: usize, last: Option<i64>) -> Taken {
        let mut core = Core::new(&[]).unwrap();
        let out = core.feed(text.as_bytes());
        let (is_step, is_total, rank, is_time, name) = tables_of(core.keys());
        let t = Tables {
            forms: DictForms {
                json: &out.dict_json,
                layout: &out.dict_layout,
            },
            flags: KeyFlags {
                is_step: &is_step,
                is_total: &is_total,
                safe_int: 9007199254740992.0,
            },
            meaning: Meaning {
                is_step: &is_step,
                rank: &rank,
                is_time: &is_time,
                name: &name,
            },
            nesting: table,
        };
        let hits: Vec<i64> = text
            .split('\n')
            .enumerate()
            .filter(|(_, line)| line.contains('{'))
            .map(|(i, _)| i as i64)
            .collect();
        take_lines(&view(&out), &t, &hits, from, 10, last)
    }

    #[test]
    fn lines_are_taken_up_to_one_the_arrays_cannot_say() {
        let text = "{\"step\": 1, \"loss\": 2}\n\n{\"step\": 2, \"time\": 1.7e9, \"loss\": 3}\n\
                    {\"step\": 3, \"loss\": NaN}\n{\"step\": 4, \"loss\": 5}\n";
        let got = take(text, &[], 0, None);
        assert_eq!(got.stop, Stop::Parse(1));
        assert_eq!(got.rows.take, 2); // the empty line is no hit: lines 0 and 2
        assert_eq!(got.rows.line, [10, 12]);
        assert_eq!(got.rows.step, [1, 2]);
        assert_eq!(got.rows.value, [2.0, 3.0]);
        assert_eq!(got.rows.last_step, Some(2));
        assert!(got.rows.time.first().is_some_and(|t| t.is_nan()));
        assert_eq!(got.rows.time.get(1), Some(&1.7e9));
        let rest = take(text, &[], 3, Some(2));
        assert_eq!(
            (rest.stop, rest.rows.take, rest.rows.line.as_slice()),
            (Stop::End, 1, &[14][..])
        );
    }

    #[test]
    fn a_step_going_back_stops_before_its_line() {
        let got = take(
            "{\"step\": 5, \"loss\": 1}\n{\"step\": 4, \"loss\": 1}\n",
            &[],
            0,
            Some(3),
        );
        assert_eq!(
            (got.stop, got.rows.take, got.rows.last_step),
            (Stop::Parse(1), 1, Some(5))
        );
        let back = take("{\"step\": 5, \"loss\": 1}\n", &[], 0, Some(6));
        assert_eq!(
            (back.stop, back.rows.take, back.rows.last_step),
            (Stop::Parse(1), 0, Some(6))
        );
    }

    #[test]
    fn a_nesting_layout_is_asked_for_then_looked_up_with_its_one_readable_count() {
        let text = "{\"step\": 1, \"t\": {\"e\": 1}}\n{\"step\": 2, \"t\": {\"e\": 2}, \"z\": {}}\n\
                    {\"step\": 3, \"t\": {\"e\": 3}}\n{\"step\": 4, \"t/e\": 4, \"u\": {\"v\": 1}}\n";
        let judge = |dict, objects| Stop::Judge { dict, objects };
        let ask = take(text, &[], 0, None);
        assert_eq!((ask.stop, ask.rows.take), (judge(0, 1), 0));
        // layout 0 readable with one nested object: not the line with two (one empty), which goes to
        // `parse`; the pass goes on from the line after, and stops before the line with a `/`
        let known = take(text, &[1], 0, None);
        assert_eq!((known.stop, known.rows.take), (Stop::Parse(1), 1));
        assert_eq!(known.rows.value, [1.0]);
        let rest = take(text, &[1], 2, Some(2));
        assert_eq!((rest.stop, rest.rows.take), (Stop::Parse(1), 1));
        // no count readable (0): every nested line of the layout is the per-line path's
        let none = take(text, &[0], 0, None);
        assert_eq!((none.stop, none.rows.take), (Stop::Parse(4), 0));
    }

    #[test]
    fn braces_and_slashes_are_counted_across_blocks() {
        let line: Vec<u8> = (0..200u8)
            .map(|i| [b'{', b'/', b'x'][usize::from(i % 3)])
            .collect();
        assert_eq!(braces_and_slashes(&line), (67, 67));
        assert_eq!(braces_and_slashes(b""), (0, 0));
    }

    proptest! {
        #[test]
        fn any_arrays_are_answered_without_a_panic(
            data in proptest::collection::vec(any::<u8>(), 0..64),
            base in any::<i64>(),
            ints in proptest::collection::vec(prop_oneof![4 => -3i64..40, 1 => any::<i64>()], 0..24),
            keys in proptest::collection::vec(-2i32..8, 0..12),
            values in proptest::collection::vec(any::<f64>(), 0..12),
            flags in proptest::collection::vec(any::<bool>(), 0..12),
            table in proptest::collection::vec(prop_oneof![4 => -3i64..9, 1 => any::<i64>()], 0..6),
            from in 0usize..30,
            last in proptest::option::of(any::<i64>()),
        ) {
            let view = ChunkView {
                data: &data,
                base,
                line_start: &ints,
                line_end: &ints[ints.len() / 2..],
                dict_line: &ints[ints.len() / 3..],
                dict_start: &ints,
                dict_end: &ints[ints.len() / 4..],
                ent_dict: &ints[ints.len() / 5..],
                ent_key: &keys,
                ent_value: &values,
            };
            let rank: Vec<i64> = ints.iter().map(|i| i % 3).collect();
            let name: Vec<i32> = keys.iter().map(|k| k + 1).collect();
            let t = Tables {
                forms: DictForms { json: &flags, layout: &ints },
                flags: KeyFlags { is_step: &flags, is_total: &flags[flags.len() / 2..], safe_int: 1e6 },
                meaning: Meaning { is_step: &flags, rank: &rank, is_time: &flags[flags.len() / 3..], name: &name },
                nesting: &table,
            };
            let got = take_lines(&view, &t, &ints, from, 0, last);
            let r = &got.rows;
            prop_assert!(r.take <= ints.len().saturating_sub(from));
            let n = r.value.len();
            prop_assert!(n <= keys.len());
            prop_assert!([r.name.len(), r.step.len(), r.line.len(), r.time.len()].iter().all(|&k| k == n));
        }
    }
}
