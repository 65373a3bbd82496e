//! Rolling medians for the trend rules (`trainwatch/rules/rolling.py`): the numbers of
//! `bottleneck.move_median(x, window, min_count=1)`, faster for the small windows the rules use.
//!
//! Row i's median is taken over the values of `x[i + 1 - window ..= i]` (fewer at the start) that are
//! not NaN, NaN when there are none; an even count gives `(lower_middle + upper_middle) / 2.0`, the
//! formula bottleneck uses, so infinities and overflow come out as they do there (`inf + -inf` is NaN,
//! two values near `f64::MAX` average to infinity). Where the middle values are zeros of both signs,
//! which of them is taken may differ from bottleneck's heaps, so a median may be `-0.0` where bottleneck
//! gives `0.0` or the other way round: equal as numbers, different in their sign bit.
//!
//! Bottleneck keeps two heaps per window (O(log w) a row, each step a dependent load and a branch that
//! random data mispredicts); here the window's values are kept in one sorted buffer that each row
//! rewrites in a single branch-free pass of compares and selects (O(w) a row, in vector registers): about
//! 3x faster for the short windows, slower past [`window_max`], where the caller keeps bottleneck. A
//! window of three takes its middle by minima and maxima.

/// The median of each row's trailing `window` values, NaN left out (see the module). A window of 0
/// holds nothing: every row is NaN.
pub fn move_median(x: &[f64], window: usize) -> Vec<f64> {
    match window {
        0 => vec![f64::NAN; x.len()],
        1 => x.to_vec(),
        3 => three(x),
        _ => sorted_window_fastest(x, window),
    }
}

/// The longest window for which [`move_median`] beats a rolling median kept in two heaps (bottleneck's),
/// for the caller to keep the heaps past it: a row's pass over the window grows with the window, the
/// heaps' cost with its logarithm. Measured on 600k random floats, built for AVX2 the pass is 3x faster
/// up to 64 values, 1.3x at 200 and level at about 270; for the baseline x86-64 (two values to a
/// register) 2x at 30, 1.2x at 64 and level at about 75.
pub fn window_max() -> usize {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        return 256;
    }
    64
}

/// [`sorted_window`] compiled for AVX2 where the CPU has it (four values to a register instead of two,
/// which halves a row's cost from about 30 values on), else for the baseline the crate is built for.
fn sorted_window_fastest(x: &[f64], window: usize) -> Vec<f64> {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU was just found to have AVX2, the only feature `sorted_window_avx2` is built for.
        return unsafe { sorted_window_avx2(x, window) };
    }
    sorted_window(x, window)
}

/// The same loop as [`sorted_window`], its vector code built for AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn sorted_window_avx2(x: &[f64], window: usize) -> Vec<f64> {
    sorted_window(x, window)
}

/// The median of each span `x[start..end]`, NaN left out, as [`move_median`] gives it at the span's
/// last row: for a rule that wants the medians of a few rows only. The part of a span outside `x` is
/// not counted; a span with no value left reads as NaN.
pub fn span_medians(x: &[f64], start: &[i64], end: &[i64]) -> Vec<f64> {
    let clamp = |v: i64| usize::try_from(v.max(0)).unwrap_or(usize::MAX).min(x.len());
    let mut scratch: Vec<f64> = Vec::new();
    start
        .iter()
        .zip(end)
        .map(|(&s, &e)| {
            scratch.clear();
            let span = x.get(clamp(s)..clamp(e)).unwrap_or(&[]);
            scratch.extend(span.iter().filter(|v| !v.is_nan()));
            median_of(&mut scratch)
        })
        .collect()
}

/// The median of values none of which is NaN, reordering them.
fn median_of(values: &mut [f64]) -> f64 {
    let k = values.len();
    if k == 0 {
        return f64::NAN;
    }
    let (lower, upper, _) = values.select_nth_unstable_by(k / 2, f64::total_cmp);
    if k % 2 == 1 {
        return *upper;
    }
    let below = lower
        .iter()
        .copied()
        .fold(f64::NEG_INFINITY, |m, v| if v > m { v } else { m });
    (below + *upper) / 2.0
}

/// The middle of a sorted run of values none of which is NaN; NaN when it is empty.
#[inline]
fn middle(sorted: &[f64]) -> f64 {
    let k = sorted.len();
    let at = |i: usize| sorted.get(i).copied().unwrap_or(f64::NAN);
    match k {
        0 => f64::NAN,
        _ if k % 2 == 1 => at(k / 2),
        _ => (at(k / 2 - 1) + at(k / 2)) / 2.0,
    }
}

/// The general case: the window's values that are not NaN, kept sorted as rows come and go between
/// two pads, -inf before and +inf after (so every place has a neighbour on each side to read).
#[inline(always)]
fn sorted_window(x: &[f64], window: usize) -> Vec<f64> {
    let mut held: Vec<f64> = vec![f64::NEG_INFINITY, f64::INFINITY];
    let mut spare: Vec<f64> = Vec::with_capacity(window.min(x.len()) + 2);
    let mut out = Vec::with_capacity(x.len());
    // a plain loop, not an iterator chain, so all of it is inlined into `sorted_window_avx2`
    let leaving = std::iter::repeat_n(&f64::NAN, window).chain(x);
    for (&new, &old) in x.iter().zip(leaving) {
        if old.is_nan() || new.is_nan() {
            insert_or_remove(&mut held, old, new);
        } else {
            swap_in(&held, &mut spare, old, new);
            std::mem::swap(&mut held, &mut spare);
        }
        out.push(middle(values(&held)));
    }
    out
}

/// The padded, sorted `held` with `old` (one of its values) taken out and `new` put in, written to
/// `out`. Every place is worked out from its neighbours by comparing values, without a branch, so the
/// loop runs in vector registers and costs the same wherever the two values fall: after taking out
/// `old`, place j holds `held[j]` while that is below `old`, else `held[j + 1]`; after putting in
/// `new`, place j holds that value while it is below `new`, `new` where the one before is, else the
/// one before. The pads make the first and last places read right, infinities in the data included
/// (`old` is no less than the -inf pad and the +inf pad is no less than `new`).
#[inline(always)]
fn swap_in(held: &[f64], out: &mut Vec<f64>, old: f64, new: f64) {
    let n = held.len();
    out.clear();
    out.resize(n, f64::INFINITY);
    let k = n.saturating_sub(2);
    let (Some(before), Some(at), Some(after), Some(dst)) = (
        held.get(..k),
        held.get(1..k + 1),
        held.get(2..k + 2),
        out.get_mut(1..k + 1),
    ) else {
        return;
    };
    for (((d, &b), &c), &f) in dst.iter_mut().zip(before).zip(at).zip(after) {
        let here = if c < old { c } else { f };
        let prev = if b < old { b } else { c };
        *d = if here < new {
            here
        } else if prev < new {
            new
        } else {
            prev
        };
    }
    if let Some(first) = out.first_mut() {
        *first = f64::NEG_INFINITY;
    }
}

/// The values of a padded buffer (all but its first and last places).
#[inline]
fn values(held: &[f64]) -> &[f64] {
    held.get(1..held.len().saturating_sub(1)).unwrap_or(&[])
}

/// A row where `old` or `new` is NaN: `new` put in the padded, sorted `held`, or `old` (one of its
/// values) taken out, whichever is not NaN.
fn insert_or_remove(held: &mut Vec<f64>, old: f64, new: f64) {
    if !new.is_nan() {
        let at = values(held).partition_point(|&h| h < new) + 1;
        held.insert(at.min(held.len()), new);
    } else if !old.is_nan() {
        let at = values(held).partition_point(|&h| h < old) + 1;
        if at + 1 < held.len() {
            held.remove(at);
        }
    }
}

/// A window of three: the middle of three values by minima and maxima while none is NaN (the usual
/// row), the general rule over the others otherwise.
fn three(x: &[f64]) -> Vec<f64> {
    let (mut a, mut b) = (f64::NAN, f64::NAN);
    x.iter()
        .map(|&c| {
            let m = if a.is_nan() || b.is_nan() || c.is_nan() {
                let mut some = [f64::NAN; 3];
                let mut k = 0;
                for v in [a, b, c] {
                    if let Some(slot) = some.get_mut(k).filter(|_| !v.is_nan()) {
                        *slot = v;
                        k += 1;
                    }
                }
                let held = some.get_mut(..k).unwrap_or(&mut []);
                held.sort_unstable_by(f64::total_cmp);
                middle(held)
            } else {
                hi(lo(a, b), lo(hi(a, b), c))
            };
            (a, b) = (b, c);
            m
        })
        .collect()
}

/// The lesser of two values that are not NaN (a compare and a select, no branch).
#[inline]
fn lo(a: f64, b: f64) -> f64 {
    if b < a {
        b
    } else {
        a
    }
}

/// The greater of two values that are not NaN.
#[inline]
fn hi(a: f64, b: f64) -> f64 {
    if a < b {
        b
    } else {
        a
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Row by row: sort the window's values that are not NaN and take the middle.
    fn naive(x: &[f64], window: usize) -> Vec<f64> {
        (0..x.len())
            .map(|i| {
                let lo = (i + 1).saturating_sub(window);
                let mut v: Vec<f64> = x[lo..=i].iter().copied().filter(|v| !v.is_nan()).collect();
                v.sort_by(f64::total_cmp);
                if window == 0 {
                    f64::NAN
                } else {
                    middle(&v)
                }
            })
            .collect()
    }

    /// Equal as numbers (so -0.0 == 0.0), NaN where the other is NaN.
    fn same(a: &[f64], b: &[f64]) -> bool {
        a.len() == b.len()
            && a.iter()
                .zip(b)
                .all(|(p, q)| p == q || (p.is_nan() && q.is_nan()))
    }

    #[test]
    fn known_windows() {
        let x = [3.0, 1.0, f64::NAN, 4.0, 1.0, 5.0];
        assert!(same(&move_median(&x, 3), &[3.0, 2.0, 2.0, 2.5, 2.5, 4.0]));
        assert!(same(&move_median(&x, 4), &[3.0, 2.0, 2.0, 3.0, 1.0, 4.0]));
        assert!(same(&move_median(&x, 1), &x));
        assert!(move_median(&x, 0).iter().all(|v| v.is_nan()));
        assert!(move_median(&[], 5).is_empty());
        assert!(move_median(&[f64::NAN, f64::NAN], 2)
            .iter()
            .all(|v| v.is_nan()));
    }

    #[test]
    fn infinities_and_overflow_average_as_bottleneck_does() {
        let inf = f64::INFINITY;
        assert!(move_median(&[inf, -inf], 2)[1].is_nan());
        assert_eq!(move_median(&[f64::MAX, f64::MAX], 2)[1], inf);
        assert_eq!(move_median(&[1.0, inf], 2)[1], inf);
        assert_eq!(move_median(&[-inf, 1.0, inf], 3)[2], 1.0);
    }

    #[test]
    fn spans_give_the_rolling_median_at_their_last_row() {
        let x = [3.0, 1.0, f64::NAN, 4.0, 1.0, 5.0, 9.0, 2.0];
        let rolled = move_median(&x, 4);
        let ends: Vec<i64> = (1..=x.len() as i64).collect();
        let starts: Vec<i64> = ends.iter().map(|e| e - 4).collect();
        assert!(same(&span_medians(&x, &starts, &ends), &rolled));
        let odd = span_medians(&x, &[-5, 6, 2, 0], &[1, 100, 3, i64::MAX]);
        assert!(same(&odd[..2], &[3.0, 5.5]) && odd[2].is_nan() && odd[3] == 3.0);
        assert!(span_medians(&x, &[5], &[2])[0].is_nan());
    }

    use proptest::prelude::*;

    proptest! {
        /// The loop as built for the baseline, which the public tests do not reach on an AVX2 machine.
        #[test]
        fn the_baseline_loop_gives_the_sorted_windows_middle(
            x in proptest::collection::vec(
                prop_oneof![
                    (-3i32..4).prop_map(f64::from),
                    any::<f64>(),
                    Just(f64::NAN),
                    Just(f64::INFINITY),
                    Just(f64::NEG_INFINITY),
                ],
                0..100,
            ),
            window in 2usize..70,
        ) {
            prop_assert!(same(&sorted_window(&x, window), &naive(&x, window)));
        }
    }

    #[test]
    fn windows_longer_than_the_data_grow_to_its_end() {
        let x = [5.0, 1.0, 4.0];
        assert!(same(&move_median(&x, 10), &naive(&x, 10)));
    }
}
