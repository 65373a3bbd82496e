//! Properties of the scanner core: any split of the input gives the arrays of one feed, and no input
//! (bytes, cuts, keywords) makes it panic or break the contract's invariants.

use _scan::scan::lines::MAX_LINE;
use _scan::scan::scanner::{ChunkOut, Core};
use proptest::prelude::*;

/// Joins chunks of one scanner the way one feed would have returned them.
fn concat(parts: Vec<ChunkOut>) -> ChunkOut {
    let mut it = parts.into_iter();
    let mut all = it.next().unwrap_or_default();
    let mut lines = all.line_start.len() as i64;
    let mut dicts = all.dict_line.len() as i64;
    for p in it {
        all.data.extend_from_slice(&p.data);
        all.line_start.extend(&p.line_start);
        all.line_end.extend(&p.line_end);
        all.visible_start.extend(&p.visible_start);
        all.kw_line.extend(p.kw_line.iter().map(|l| l + lines));
        all.kw_id.extend(&p.kw_id);
        all.dict_line.extend(p.dict_line.iter().map(|l| l + lines));
        all.dict_start.extend(&p.dict_start);
        all.dict_end.extend(&p.dict_end);
        all.dict_json.extend(&p.dict_json);
        all.dict_layout.extend(&p.dict_layout);
        all.ent_dict.extend(p.ent_dict.iter().map(|d| d + dicts));
        all.ent_key.extend(&p.ent_key);
        all.ent_value.extend(&p.ent_value);
        all.kv_line.extend(p.kv_line.iter().map(|l| l + lines));
        all.kv_key.extend(&p.kv_key);
        all.kv_value.extend(&p.kv_value);
        all.kv_pos.extend(&p.kv_pos);
        all.prog_line.extend(p.prog_line.iter().map(|l| l + lines));
        all.prog_n.extend(&p.prog_n);
        all.prog_total.extend(&p.prog_total);
        lines += p.line_start.len() as i64;
        dicts += p.dict_line.len() as i64;
    }
    all
}

/// Values compared bit for bit, so NaN equals NaN.
fn bits(v: &[f64]) -> Vec<u64> {
    v.iter().map(|x| x.to_bits()).collect()
}

fn assert_same(a: &ChunkOut, b: &ChunkOut) {
    assert_eq!(
        (a.first_lineno, a.base_offset),
        (b.first_lineno, b.base_offset)
    );
    assert_eq!(a.data, b.data);
    assert_eq!(a.line_start, b.line_start);
    assert_eq!(a.line_end, b.line_end);
    assert_eq!(a.visible_start, b.visible_start);
    assert_eq!((&a.kw_line, &a.kw_id), (&b.kw_line, &b.kw_id));
    assert_eq!(
        (&a.dict_line, &a.dict_start, &a.dict_end, &a.dict_json),
        (&b.dict_line, &b.dict_start, &b.dict_end, &b.dict_json)
    );
    assert_eq!(a.dict_layout, b.dict_layout);
    assert_eq!((&a.ent_dict, &a.ent_key), (&b.ent_dict, &b.ent_key));
    assert_eq!(bits(&a.ent_value), bits(&b.ent_value));
    assert_eq!(
        (&a.kv_line, &a.kv_key, &a.kv_pos),
        (&b.kv_line, &b.kv_key, &b.kv_pos)
    );
    assert_eq!(bits(&a.kv_value), bits(&b.kv_value));
    assert_eq!(
        (&a.prog_line, &a.prog_n, &a.prog_total),
        (&b.prog_line, &b.prog_n, &b.prog_total)
    );
}

fn scan(data: &[u8], keywords: &[Vec<u8>], cuts: &[usize]) -> (ChunkOut, usize) {
    let mut core = Core::new(keywords).unwrap();
    let mut bounds: Vec<usize> = cuts.iter().map(|&c| c.min(data.len())).collect();
    bounds.sort_unstable();
    let mut parts = Vec::new();
    let mut start = 0;
    for &b in bounds.iter().chain(std::iter::once(&data.len())) {
        let part = core.feed(&data[start..b]);
        core.recycle(part.data.clone()); // as the Python binding does: the next piece is built in it
        parts.push(part);
        start = b;
    }
    parts.push(core.finish());
    (concat(parts), core.keys().len())
}

/// Contract invariants that hold for any input.
fn check_invariants(c: &ChunkOut, data: &[u8], keys: usize) {
    let newlines = data.iter().filter(|&&b| b == b'\n').count();
    let partial = usize::from(!data.is_empty() && data.last() != Some(&b'\n'));
    assert_eq!(c.line_start.len(), newlines + partial);
    for i in 0..c.line_start.len() {
        assert!(c.line_start[i] <= c.visible_start[i] && c.visible_start[i] <= c.line_end[i]);
        assert!(c.visible_start[i] - c.line_start[i] <= MAX_LINE as i64);
    }
    for w in c
        .kw_line
        .iter()
        .zip(&c.kw_id)
        .collect::<Vec<_>>()
        .windows(2)
    {
        assert!(w[0] < w[1], "keyword hits sorted and unique");
    }
    for (d, &line) in c.dict_line.iter().enumerate() {
        let l = line as usize;
        assert!(
            c.line_start[l] <= c.dict_start[d] && c.dict_end[d] <= c.line_end[l],
            "dict inside its line"
        );
    }
    assert!(c
        .ent_key
        .iter()
        .chain(&c.kv_key)
        .all(|&k| (k as usize) < keys));
    assert!(c.ent_dict.iter().all(|&d| (d as usize) < c.dict_line.len()));
    assert_eq!(c.dict_layout.len(), c.dict_line.len());
    assert!(c.dict_layout.iter().all(|&l| l >= 0));
    assert!(c.prog_n.iter().chain(&c.prog_total).all(|&n| n >= 0));
}

fn log_bytes() -> impl Strategy<Value = Vec<u8>> {
    let fragment = prop_oneof![
        4 => proptest::sample::select(b"{}'\":,=|/%\r\n \t.-+eE\\[]0123456789abinflosx_".to_vec()).prop_map(|c| vec![c]),
        2 => proptest::sample::select(vec![
            b"{'loss': 1.5, 'epoch': '2.0'}".to_vec(),
            b"{\"a\": NaN, \"b\": [1]}".to_vec(),
            b"{\"t\": {\"e\": 0.1, \"g\": {\"n\": 1}}, ".to_vec(),
            b"[\"]\", [{\"x\": \"\\\"[\"}]]".to_vec(),
            b"}}".to_vec(),
            b"lm loss: 2.3E+00".to_vec(),
            b" 45%|####  | 450/1000 [".to_vec(),
            b"1,234.5%".to_vec(),
            b"-Infinity".to_vec(),
            b"out of memory".to_vec(),
        ]),
        1 => proptest::collection::vec(any::<u8>(), 0..4),
    ];
    proptest::collection::vec(fragment, 0..80).prop_map(|parts| parts.concat())
}

fn keywords() -> Vec<Vec<u8>> {
    ["loss", "out of memory", "\r", ":", "", "1,"]
        .iter()
        .map(|k| k.as_bytes().to_vec())
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(
        std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(2000)))]

    #[test]
    fn any_split_gives_the_arrays_of_one_feed(data in log_bytes(), cuts in proptest::collection::vec(0usize..700, 0..12)) {
        let (whole, keys) = scan(&data, &keywords(), &[]);
        let (split, keys_split) = scan(&data, &keywords(), &cuts);
        assert_same(&whole, &split);
        prop_assert_eq!(keys, keys_split);
        check_invariants(&whole, &data, keys);
    }

    #[test]
    fn any_bytes_and_keywords_keep_the_invariants(
        data in proptest::collection::vec(any::<u8>(), 0..600),
        cuts in proptest::collection::vec(0usize..600, 0..6),
        kws in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..4), 0..5),
    ) {
        let (split, keys) = scan(&data, &kws, &cuts);
        check_invariants(&split, &data, keys);
        let (whole, _) = scan(&data, &kws, &[]);
        assert_same(&whole, &split);
    }
}

#[test]
fn long_lines_in_any_split() {
    let mut data = b"loss: 1 {'a': 2} | 3/4 ".to_vec();
    data.resize(MAX_LINE + 7, b'z');
    data.extend_from_slice(b"\r\nnext: 5\n");
    data.extend(std::iter::repeat_n(b'q', MAX_LINE * 2));
    let (whole, keys) = scan(&data, &keywords(), &[]);
    check_invariants(&whole, &data, keys);
    for cuts in [
        vec![1, MAX_LINE - 1, MAX_LINE, MAX_LINE + 8],
        vec![MAX_LINE + 8, MAX_LINE * 2],
        vec![data.len() - 1],
    ] {
        let (split, _) = scan(&data, &keywords(), &cuts);
        assert_same(&whole, &split);
    }
    assert_eq!(whole.data.len(), MAX_LINE + 2 + 8 + MAX_LINE);
}

/// A nested object of numbers, as text, and the (key path, value) pairs the scanner must report for it.
#[derive(Clone, Debug)]
enum Tree {
    Leaf(u16),
    Obj(Vec<(u8, Tree)>),
    List(Vec<Tree>),
}

fn tree() -> impl Strategy<Value = Tree> {
    let leaf = any::<u16>().prop_map(Tree::Leaf);
    leaf.prop_recursive(12, 48, 4, |inner| {
        prop_oneof![
            proptest::collection::vec((0u8..4, inner.clone()), 0..4).prop_map(Tree::Obj),
            proptest::collection::vec(inner, 0..4).prop_map(Tree::List),
        ]
    })
}

/// Writes `t` (keys `k0`..`k3`, strings with brackets in lists) and collects the entries expected at
/// nesting `level` under `path`: numbers directly in objects down to 7 levels, nothing from lists.
fn render(t: &Tree, path: &str, level: usize, text: &mut String, want: &mut Vec<(String, f64)>) {
    match t {
        Tree::Leaf(n) => text.push_str(&n.to_string()),
        Tree::List(items) => {
            text.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    text.push_str(", \"]\\\"[\", ");
                }
                render(item, path, usize::MAX, text, &mut Vec::new());
            }
            text.push(']');
        }
        Tree::Obj(entries) => {
            text.push('{');
            for (i, (k, v)) in entries.iter().enumerate() {
                if i > 0 {
                    text.push_str(", ");
                }
                let key = format!("{path}k{k}");
                text.push_str(&format!("\"k{k}\": "));
                match v {
                    Tree::Leaf(n) if level <= 7 => want.push((key.clone(), f64::from(*n))),
                    _ => {}
                }
                let below = if matches!(v, Tree::Obj(_)) {
                    level.saturating_add(1)
                } else {
                    level
                };
                render(v, &format!("{key}/"), below, text, want);
            }
            text.push('}');
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(
        std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(500)))]

    #[test]
    fn nested_objects_report_their_numbers_under_key_paths(
        entries in proptest::collection::vec((0u8..4, tree()), 0..5),
        chain in 0usize..11,
        cut in 0usize..400,
    ) {
        // `chain` objects around the generated one, each with a number of its own, reach every level.
        let mut t = Tree::Obj(entries);
        for k in 0..chain {
            t = Tree::Obj(vec![((k % 4) as u8, Tree::Leaf(k as u16)), (3, t)]);
        }
        let (mut text, mut want) = (String::new(), Vec::new());
        render(&t, "", 0, &mut text, &mut want);
        text.push('\n');
        let data = text.as_bytes();
        let mut core = Core::new(&[]).unwrap();
        let mut whole = core.feed(data);
        let rest = core.finish();
        prop_assert!(rest.line_start.is_empty());
        let keys = core.keys();
        whole = concat(vec![whole, rest]);
        let (split, _) = scan(data, &[], &[cut.min(data.len())]);
        assert_same(&whole, &split);
        prop_assert_eq!(&whole.dict_start, &vec![0i64]);
        prop_assert_eq!(&whole.dict_end, &vec![data.len() as i64 - 1]);
        let got: Vec<(String, f64)> = whole
            .ent_key
            .iter()
            .zip(&whole.ent_value)
            .map(|(&k, &v)| (String::from_utf8_lossy(&keys[k as usize]).into_owned(), v))
            .collect();
        prop_assert_eq!(got, want);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(
        std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(2000)))]

    /// The bar reader at any position, segment start and limit, in the data or far outside it: no panic,
    /// and a bar it reads has its `%|` inside the data.
    #[test]
    fn plain_bars_never_panic(data in log_bytes(), p in any::<usize>(), seg in any::<usize>(),
                              limit in any::<usize>(), near in 0usize..700) {
        for (p, seg, limit) in [(p, seg, limit), (near, 0, data.len()), (near, near / 2, near + 40)] {
            if let Some((n, m)) = _scan::scan::bars::plain_bar(&data, p, seg, limit) {
                prop_assert!(n >= 0 && m >= 0 && p < data.len());
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(
        std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(2000)))]

    /// Byte counts over any span, in the data or far outside it: no panic, and no count above the span.
    #[test]
    fn span_census_never_panics(data in log_bytes(), start in any::<usize>(), length in any::<usize>(),
                                near in 0usize..700) {
        let mut allowed = [false; 256];
        allowed[0x20..0x7f].iter_mut().for_each(|a| *a = true);
        let c = _scan::scan::census::Census { allowed, mark: b':', before: b'\'', after: b' ', count: b',' };
        for (s, n) in [(start, length), (near, length % 900), (0, data.len())] {
            let got = c.of(&data, s, n);
            prop_assert!(got.iter().all(|&k| k >= 0 && k as usize <= n));
        }
    }
}
