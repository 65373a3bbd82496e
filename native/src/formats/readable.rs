//! Which JSON-lines lines the scanner's arrays say everything about, in one pass per chunk: the
//! decision `JsonLinesAdapter._readable` makes over numpy arrays (its reference,
//! trainwatch/adapters/jsonl.py), up to the one step that needs key names (whether a nesting layout is
//! known), which stays in Python and is asked once per layout.
//!
//! A line is readable when it is one plain-JSON object and nothing else (`array_lines`), and no entry of
//! that object is non-finite, a total, a step too large for a float to hold exactly, or a key the
//! object already had (`unsayable`). A nested object's line is readable only without a `/` in it, and
//! with as many nested objects as the first line of its layout in the chunk; that first line's layout is
//! what Python judges.

use crate::formats::console::ChunkView;
use crate::scan::bytes::{flag, range};

/// What each key id means here, indexed by id; an id past a table's end means nothing.
pub struct KeyFlags<'a> {
    pub is_step: &'a [bool],
    pub is_total: &'a [bool],
    /// A step at or beyond this magnitude is not read from a float.
    pub safe_int: f64,
}

/// Per line: its dict when readable (else -1), and for a readable nested one its layout group (else
/// -1); per group, the dict whose layout Python judges (the layout's first nested whole-line object in
/// the chunk, readable or not, as numpy's `unique` picks it) and its count of nested objects.
#[derive(Debug, Default, PartialEq)]
pub struct Readable {
    pub per_line: Vec<i64>,
    pub group: Vec<i64>,
    pub group_dict: Vec<i64>,
    pub group_objects: Vec<i64>,
}

/// Entries of dict `d` as a range of entry indices (entries come sorted by dict), from `from`.
pub(crate) fn entries_of(ent_dict: &[i64], d: i64, from: usize) -> (usize, usize) {
    let mut a = from;
    while ent_dict.get(a).is_some_and(|&o| o < d) {
        a += 1;
    }
    let mut b = a;
    while ent_dict.get(b).is_some_and(|&o| o == d) {
        b += 1;
    }
    (a, b)
}

/// Whether the entries say something the arrays cannot: see the module's doc.
fn unsayable(
    c: &ChunkView<'_>,
    keys: &KeyFlags<'_>,
    a: usize,
    b: usize,
    seen: &mut Vec<i32>,
) -> bool {
    let mut rising = true; // keys rise in the usual layout: then none repeats, and no sort is needed
    let mut last = None;
    for e in a..b {
        let key = c.ent_key.get(e).copied().unwrap_or(-1);
        let value = c.ent_value.get(e).copied().unwrap_or(f64::NAN);
        if !value.is_finite()
            || flag(keys.is_total, i64::from(key))
            || (flag(keys.is_step, i64::from(key)) && value.abs() >= keys.safe_int)
        {
            return true;
        }
        rising &= last.is_none_or(|l| l < key);
        last = Some(key);
    }
    if rising {
        return false;
    }
    seen.clear();
    seen.extend((a..b).map(|e| c.ent_key.get(e).copied().unwrap_or(-1)));
    seen.sort_unstable();
    seen.windows(2).any(|w| matches!(w, [x, y] if x == y))
}

/// The bytes of the absolute span [start, end) of the chunk's data.
pub(crate) fn span<'a>(c: &ChunkView<'a>, start: i64, end: i64) -> &'a [u8] {
    let at = |x: i64| usize::try_from(x.wrapping_sub(c.base)).unwrap_or(0);
    range(c.data, at(start), at(end))
}

/// Per dict of the chunk, the two facts the scanner adds for JSON: plain JSON of numbers, and its layout.
pub struct DictForms<'a> {
    pub json: &'a [bool],
    pub layout: &'a [i64],
}

/// The decision for every line of the chunk.
pub fn readable(c: &ChunkView<'_>, forms: &DictForms<'_>, keys: &KeyFlags<'_>) -> Readable {
    let n = c.line_start.len();
    let mut out = Readable {
        per_line: vec![-1; n],
        group: vec![-1; n],
        ..Readable::default()
    };
    let mut layouts: std::collections::HashMap<i64, (i64, i64), foldhash::fast::RandomState> =
        std::collections::HashMap::default();
    let mut seen = Vec::new();
    let mut ent = 0usize;
    let nd = c.dict_line.len();
    let mut d = 0usize;
    while d < nd {
        let line = c.dict_line.get(d).copied().unwrap_or(-1);
        let mut next = d + 1;
        while c.dict_line.get(next) == Some(&line) {
            next += 1;
        }
        let single = next == d + 1;
        let di = d as i64;
        d = next;
        let Some(li) = usize::try_from(line).ok().filter(|&l| l < n) else {
            continue;
        };
        let (start, end) = (
            c.dict_start.get(di as usize).copied().unwrap_or(0),
            c.dict_end.get(di as usize).copied().unwrap_or(0),
        );
        let whole = single
            && forms.json.get(di as usize).copied().unwrap_or(false)
            && c.line_start.get(li) == Some(&start)
            && c.line_end.get(li) == Some(&end);
        if !whole {
            continue;
        }
        let bytes = span(c, start, end);
        let objects = memchr::memchr_iter(b'{', bytes).count() as i64 - 1;
        let mut group = -1;
        if objects > 0 {
            // grouped by layout whatever else is wrong with it: the first of a layout sets its count
            let layout = forms.layout.get(di as usize).copied().unwrap_or(-1);
            let groups = out.group_dict.len() as i64;
            let (g, first_objects) = *layouts.entry(layout).or_insert((groups, objects));
            if g == groups {
                out.group_dict.push(di);
                out.group_objects.push(objects);
            }
            if objects != first_objects || memchr::memchr(b'/', bytes).is_some() {
                continue;
            }
            group = g;
        }
        let (a, b) = entries_of(c.ent_dict, di, ent);
        ent = b;
        if unsayable(c, keys, a, b, &mut seen) {
            continue;
        }
        if let (Some(p), Some(g)) = (out.per_line.get_mut(li), out.group.get_mut(li)) {
            (*p, *g) = (di, group);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scan::scanner::Core;
    use proptest::prelude::*;

    fn decide(text: &str, steps: &[&str], totals: &[&str]) -> (Vec<i64>, Readable) {
        let mut core = Core::new(&[]).unwrap();
        let out = core.feed(text.as_bytes());
        let names = core.keys();
        let is = |set: &[&str]| -> Vec<bool> {
            names
                .iter()
                .map(|n| set.iter().any(|s| s.as_bytes() == n.as_slice()))
                .collect()
        };
        let (is_step, is_total) = (is(steps), is(totals));
        let view = ChunkView {
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
        };
        let forms = DictForms {
            json: &out.dict_json,
            layout: &out.dict_layout,
        };
        let keys = KeyFlags {
            is_step: &is_step,
            is_total: &is_total,
            safe_int: 9007199254740992.0,
        };
        let got = readable(&view, &forms, &keys);
        (got.per_line.clone(), got)
    }

    #[test]
    fn whole_line_objects_of_numbers_are_readable_and_the_rest_not() {
        let text = "{\"step\": 1, \"loss\": 2}\n{\"step\": 2, \"loss\": NaN}\n x {\"step\": 3}\n\
                    {\"step\": 4, \"total_steps\": 9}\n{\"step\": 5, \"loss\": 1, \"loss\": 2}\n\
                    {\"step\": 9007199254740992}\n{\"a\": 1} {\"b\": 2}\nplain\n";
        let (per_line, _) = decide(text, &["step"], &["total_steps"]);
        assert_eq!(per_line, [0, -1, -1, -1, -1, -1, -1, -1]);
    }

    #[test]
    fn the_first_nested_line_of_a_layout_sets_its_group_and_count() {
        let text = "{\"s\": 1, \"t\": {\"e\": 1}}\n{\"s\": 2, \"t\": {\"e\": 2}}\n\
                    {\"s\": 3, \"t\": {\"e\": 3}, \"z\": {}}\n{\"s\": 4, \"t/e\": 4}\n{\"s\": 5, \"u\": {\"e/f\": 1}}\n";
        let (per_line, got) = decide(text, &["s"], &[]);
        assert_eq!(per_line, [0, 1, -1, 3, -1]);
        assert_eq!(got.group, [0, 0, -1, -1, -1]);
        assert_eq!(got.group_dict, [0, 4]);
        assert_eq!(got.group_objects, [1, 1]);
    }

    proptest! {
        #[test]
        fn any_arrays_are_answered_without_a_panic(
            data in proptest::collection::vec(any::<u8>(), 0..64),
            base in any::<i64>(),
            ints in proptest::collection::vec(any::<i64>(), 0..24),
            keys in proptest::collection::vec(any::<i32>(), 0..12),
            values in proptest::collection::vec(any::<f64>(), 0..12),
            flags in proptest::collection::vec(any::<bool>(), 0..12),
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
            let forms = DictForms { json: &flags, layout: &ints };
            let tables = KeyFlags { is_step: &flags, is_total: &flags[flags.len() / 2..], safe_int: 1.0 };
            let got = readable(&view, &forms, &tables);
            prop_assert_eq!(got.per_line.len(), ints.len());
        }
    }
}
