//! The store's whole-run history folds rows into buckets of a fixed size: per bucket the least and
//! greatest finite value (NaN when none), the sum of the finite values added one at a time in row order
//! (a bucket whose first row is not finite starts from 0.0, the others add -0.0 for it, so signed zeros
//! come out as the Python fold's do), and how many were finite. The same numbers as the reference
//! (`trainwatch/store.py`, `fold_buckets_reference`), which needs a 2-D accumulate for the ordered sums.
//! Which zero an extreme is when both signs occur is not settled by numpy's reductions either; here the
//! first one stays.

/// Per bucket of `size` rows (a last partial bucket is left out): (lows, highs, totals, finite counts).
pub fn fold(values: &[f64], size: usize) -> (Vec<f64>, Vec<f64>, Vec<f64>, Vec<i64>) {
    let n = values.len().checked_div(size).unwrap_or(0);
    let (mut lows, mut highs) = (Vec::with_capacity(n), Vec::with_capacity(n));
    let (mut totals, mut counts) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for bucket in values.chunks_exact(size.max(1)).take(n) {
        let (mut lo, mut hi, mut total, mut finite) = (f64::NAN, f64::NAN, 0.0, 0i64);
        for (i, &v) in bucket.iter().enumerate() {
            let ok = v.is_finite();
            if ok {
                if finite == 0 || v < lo {
                    lo = v;
                }
                if finite == 0 || v > hi {
                    hi = v;
                }
                finite += 1;
            }
            total = match (i, ok) {
                (0, true) => v,
                (0, false) => 0.0,
                (_, true) => total + v,
                (_, false) => total + -0.0,
            };
        }
        lows.push(lo);
        highs.push(hi);
        totals.push(total);
        counts.push(finite);
    }
    (lows, highs, totals, counts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folds_whole_buckets_in_row_order() {
        let nan = f64::NAN;
        let (lo, hi, total, n) = fold(&[nan, 2.0, -1.0, 5.0, 1e308, 1e308, f64::INFINITY, 7.0], 4);
        assert_eq!((lo[0], hi[0], total[0], n[0]), (-1.0, 5.0, 6.0, 3));
        assert_eq!((lo[1], hi[1], n[1]), (7.0, 1e308, 3));
        assert!(total[1].is_infinite()); // added in order, it overflows as the Python fold does
        let (lo, _, total, n) = fold(&[nan, nan, 1.0], 2);
        assert!(lo[0].is_nan() && total[0] == 0.0 && n == vec![0]);
        assert!(fold(&[1.0], 0).0.is_empty());
        let (lo, hi, _, _) = fold(&[0.0, -0.0], 2);
        assert!(lo[0].is_sign_positive() && hi[0].is_sign_positive());
    }
}
