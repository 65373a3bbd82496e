//! The rolling median against the plain definition (sort each window's values that are not NaN, take
//! the middle, average the two middles of an even count) over values full of NaN, infinities, zeros of
//! both signs, repeats and magnitudes near the largest float; and the span medians against it.

use _scan::kernels::median::{move_median, span_medians};
use proptest::prelude::*;

fn naive(x: &[f64], window: usize) -> Vec<f64> {
    (0..x.len())
        .map(|i| {
            let mut v: Vec<f64> = x[(i + 1).saturating_sub(window)..=i]
                .iter()
                .copied()
                .filter(|v| !v.is_nan())
                .collect();
            v.sort_by(f64::total_cmp);
            let k = v.len();
            if window == 0 || k == 0 {
                f64::NAN
            } else if k % 2 == 1 {
                v[k / 2]
            } else {
                (v[k / 2 - 1] + v[k / 2]) / 2.0
            }
        })
        .collect()
}

fn value() -> impl Strategy<Value = f64> {
    prop_oneof![
        3 => (-4i32..5).prop_map(f64::from),
        2 => any::<f64>(),
        1 => Just(f64::NAN),
        1 => prop_oneof![
            Just(f64::INFINITY),
            Just(f64::NEG_INFINITY),
            Just(0.0),
            Just(-0.0),
            Just(1e308),
            Just(-1e308),
            Just(f64::MAX),
        ],
    ]
}

/// Equal as numbers (-0.0 == 0.0), NaN where the other is NaN.
fn same(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(p, q)| p == q || (p.is_nan() && q.is_nan()))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]
    #[test]
    fn rolling_median_is_the_sorted_windows_middle(
        x in proptest::collection::vec(value(), 0..120),
        window in 0usize..80,
    ) {
        let got = move_median(&x, window);
        let want = naive(&x, window);
        prop_assert!(same(&got, &want), "window {} x {:?}\n got {:?}\nwant {:?}", window, x, got, want);
    }

    #[test]
    fn span_medians_are_the_rolling_ones_at_the_span_end(
        x in proptest::collection::vec(value(), 0..60),
        spans in proptest::collection::vec((-3i64..70, -3i64..70), 0..20),
    ) {
        let start: Vec<i64> = spans.iter().map(|s| s.0).collect();
        let end: Vec<i64> = spans.iter().map(|s| s.1).collect();
        let got = span_medians(&x, &start, &end);
        prop_assert_eq!(got.len(), spans.len());
        for (g, &(s, e)) in got.iter().zip(&spans) {
            let lo = s.clamp(0, x.len() as i64) as usize;
            let hi = e.clamp(0, x.len() as i64) as usize;
            let want = if lo < hi { naive(&x[lo..hi], hi - lo).last().copied().unwrap() } else { f64::NAN };
            prop_assert!(same(&[*g], &[want]), "span {}..{} got {} want {}", s, e, g, want);
        }
    }
}
