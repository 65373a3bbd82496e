//! The store's whole-run history folds rows into buckets of a fixed size: per bucket the least and
//! greatest finite value (NaN when none), the sum of the finite values added one at a time in row order
//! (a bucket whose first row is not finite starts from 0.0, the others add -0.0 for it, so signed zeros
//! come out as the Python fold's do), and how many were finite. The same numbers as the reference
//! (`trainwatch/store.py`, `fold_buckets_reference`), which needs a 2-D accumulate for the ordered sums.
//! Which zero an extreme is when both signs occur is not settled by numpy's reductions either; here the
//! first one stays.

/// Per bucket of `size` rows (a last partial bucket is left out): (lows, highs, totals, finite counts).
/// Four buckets are folded side by side: each bucket's sum is a chain of dependent additions, and four
/// independent chains keep the adder busy where one leaves it waiting on each result.
pub fn fold(values: &[f64], size: usize) -> (Vec<f64>, Vec<f64>, Vec<f64>, Vec<i64>) {
    let n = values.len().checked_div(size).unwrap_or(0); // no bucket of no rows
    let size = size.max(1);
    let (mut lows, mut highs) = (Vec::with_capacity(n), Vec::with_capacity(n));
    let (mut totals, mut counts) = (Vec::with_capacity(n), Vec::with_capacity(n));
    let whole = values.get(..n * size).unwrap_or(&[]);
    // a size so large that LANES buckets of it overflow holds no bucket at all (`n` is 0)
    let mut groups = whole.chunks_exact(LANES.saturating_mul(size));
    for group in &mut groups {
        let mut acc = [Fold::default(); LANES];
        for i in 0..size {
            for (lane, a) in acc.iter_mut().enumerate() {
                a.add(
                    group.get(lane * size + i).copied().unwrap_or(f64::NAN),
                    i == 0,
                );
            }
        }
        for a in acc {
            a.push(&mut lows, &mut highs, &mut totals, &mut counts);
        }
    }
    for bucket in groups.remainder().chunks_exact(size) {
        let mut a = Fold::default();
        for (i, &v) in bucket.iter().enumerate() {
            a.add(v, i == 0);
        }
        a.push(&mut lows, &mut highs, &mut totals, &mut counts);
    }
    (lows, highs, totals, counts)
}

/// Buckets folded side by side.
const LANES: usize = 4;

/// One bucket's fold so far.
#[derive(Clone, Copy)]
struct Fold {
    lo: f64,
    hi: f64,
    total: f64,
    finite: i64,
}

impl Default for Fold {
    fn default() -> Self {
        Fold {
            lo: f64::NAN,
            hi: f64::NAN,
            total: 0.0,
            finite: 0,
        }
    }
}

impl Fold {
    /// The bucket's next value (`first`: its first).
    #[inline(always)]
    fn add(&mut self, v: f64, first: bool) {
        let ok = v.is_finite();
        if ok {
            if self.finite == 0 || v < self.lo {
                self.lo = v;
            }
            if self.finite == 0 || v > self.hi {
                self.hi = v;
            }
            self.finite += 1;
        }
        self.total = match (first, ok) {
            (true, true) => v,
            (true, false) => 0.0,
            (false, true) => self.total + v,
            (false, false) => self.total + -0.0,
        };
    }

    fn push(
        self,
        lows: &mut Vec<f64>,
        highs: &mut Vec<f64>,
        totals: &mut Vec<f64>,
        counts: &mut Vec<i64>,
    ) {
        lows.push(self.lo);
        highs.push(self.hi);
        totals.push(self.total);
        counts.push(self.finite);
    }
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
        for size in [usize::MAX / 4 + 1, usize::MAX / 2 + 1, usize::MAX] {
            assert!(fold(&[1.0, 2.0], size).0.is_empty()); // LANES * size wraps: no panic
        }
        let (lo, hi, _, _) = fold(&[0.0, -0.0], 2);
        assert!(lo[0].is_sign_positive() && hi[0].is_sign_positive());
    }

    #[test]
    fn buckets_folded_side_by_side_are_each_folded_alone() {
        let values: Vec<f64> = (0..41)
            .map(|i| match i % 7 {
                3 => f64::NAN,
                5 => f64::NEG_INFINITY,
                _ => f64::from(i * 37 % 11) - 4.5,
            })
            .collect();
        for size in 1..6 {
            let together = fold(&values, size);
            for (b, bucket) in values.chunks_exact(size).enumerate() {
                let alone = fold(bucket, size);
                let same = |x: f64, y: f64| x.to_bits() == y.to_bits();
                assert!(same(together.0[b], alone.0[0]) && same(together.1[b], alone.1[0]));
                assert!(same(together.2[b], alone.2[0]) && together.3[b] == alone.3[0]);
            }
            assert_eq!(together.0.len(), values.len() / size);
        }
    }
}
