//! The JSON-lines row pass never panics, whatever the arrays hold (ids past the tables, negative or
//! out-of-range rows, NaN and infinite values, any last step), and its columns stay consistent.

use _scan::formats::rows::{emit_rows, Meaning};
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]
    #[test]
    fn any_arrays_give_consistent_columns(
        entries in proptest::collection::vec((-2i32..8, any::<f64>(), -2i64..12), 0..40),
        lines in 0usize..10,
        is_step in proptest::collection::vec(any::<bool>(), 0..8),
        rank in proptest::collection::vec(any::<i64>(), 0..8),
        is_time in proptest::collection::vec(any::<bool>(), 0..8),
        name in proptest::collection::vec(any::<i32>(), 0..8),
        last in proptest::option::of(any::<i64>()),
    ) {
        let key: Vec<i32> = entries.iter().map(|e| e.0).collect();
        let value: Vec<f64> = entries.iter().map(|e| e.1).collect();
        let row: Vec<i64> = entries.iter().map(|e| e.2).collect();
        let lineno: Vec<i64> = (0..lines as i64).collect();
        let meaning = Meaning { is_step: &is_step, rank: &rank, is_time: &is_time, name: &name };
        let out = emit_rows(&key, &value, &row, &lineno, &meaning, last);
        prop_assert!(out.take <= lines);
        let n = out.value.len();
        prop_assert!(n <= key.len());
        prop_assert_eq!(out.name.len(), n);
        prop_assert_eq!(out.step.len(), n);
        prop_assert_eq!(out.line.len(), n);
        prop_assert_eq!(out.time.len(), n);
        prop_assert!(out.line.iter().all(|&l| l >= 0 && (l as usize) < out.take.max(1)));
    }
}
