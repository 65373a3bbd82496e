//! Rolling minima and maxima for the trend rules' bounds (`trainwatch/rules/rolling.py`,
//! `trailing_min` and `trailing_max`): the numbers of `bottleneck.move_min` and `move_max` with
//! `min_count=1`.
//!
//! Row i's answer is the least (greatest) value of `x[i + 1 - window ..= i]` (fewer at the start) that is
//! not NaN, NaN when there is none. A window holding zeros of both signs may give the other zero than
//! bottleneck: equal as numbers, which is all the rules compare.
//!
//! Bottleneck keeps a deque of candidates, a branch per row that data mispredicts. Here (van Herk and
//! Gil-Werman) the rows are cut into blocks of `window`: a running extreme forward within each block
//! and one backward, and a window, which spans at most two blocks, is the better of the backward one at
//! its first row and the forward one at its last. Three passes without a data-dependent branch, the
//! same cost whatever the window. NaN reads as the worst value, and a running count of the values that
//! are not NaN tells the windows that hold none.

/// The rolling minimum (`greatest` false) or maximum (true) of each row's trailing `window` values.
pub fn move_extreme(x: &[f64], window: usize, greatest: bool) -> Vec<f64> {
    if greatest {
        extreme::<true>(x, window)
    } else {
        extreme::<false>(x, window)
    }
}

#[inline(always)]
fn better<const GREATEST: bool>(a: f64, b: f64) -> f64 {
    if GREATEST {
        if b > a {
            b
        } else {
            a
        }
    } else if b < a {
        b
    } else {
        a
    }
}

fn extreme<const GREATEST: bool>(x: &[f64], window: usize) -> Vec<f64> {
    let n = x.len();
    if window == 0 {
        return vec![f64::NAN; n];
    }
    let worst = if GREATEST {
        f64::NEG_INFINITY
    } else {
        f64::INFINITY
    };
    let key = |v: f64| if v.is_nan() { worst } else { v };
    let mut out = vec![worst; n];
    let mut backward = vec![worst; n];
    for ((block, fwd), bwd) in x
        .chunks(window)
        .zip(out.chunks_mut(window))
        .zip(backward.chunks_mut(window))
    {
        let mut run = worst;
        for (&v, o) in block.iter().zip(fwd.iter_mut()) {
            run = better::<GREATEST>(run, key(v));
            *o = run;
        }
        let mut run = worst;
        for (&v, o) in block.iter().zip(bwd.iter_mut()).rev() {
            run = better::<GREATEST>(run, key(v));
            *o = run;
        }
    }
    // the rows of the first window start at row 0, inside the first block: the forward run is theirs
    let mut held = 0usize; // values that are not NaN in the window
    for (i, (o, &v)) in out.iter_mut().zip(x).enumerate() {
        held += usize::from(!v.is_nan());
        if i >= window {
            held -= usize::from(!x.get(i - window).is_some_and(|v| v.is_nan()));
        }
        if held == 0 {
            *o = f64::NAN;
        } else if i + 1 >= window {
            *o = better::<GREATEST>(backward.get(i + 1 - window).copied().unwrap_or(worst), *o);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn naive(x: &[f64], window: usize, greatest: bool) -> Vec<f64> {
        (0..x.len())
            .map(|i| {
                let lo = (i + 1).saturating_sub(window);
                let vals = x[lo..=i].iter().copied().filter(|v| !v.is_nan());
                let got = if greatest {
                    vals.fold(f64::NAN, |m, v| if m.is_nan() || v > m { v } else { m })
                } else {
                    vals.fold(f64::NAN, |m, v| if m.is_nan() || v < m { v } else { m })
                };
                if window == 0 {
                    f64::NAN
                } else {
                    got
                }
            })
            .collect()
    }

    #[test]
    fn follows_the_window_with_nan_left_out() {
        let nan = f64::NAN;
        let x = [3.0, nan, 1.0, 2.0, f64::INFINITY, nan, nan, nan, -1.0, 5.0];
        for w in 0..12 {
            for g in [false, true] {
                let (a, b) = (move_extreme(&x, w, g), naive(&x, w, g));
                assert_eq!(a.len(), b.len());
                for (p, q) in a.iter().zip(&b) {
                    assert!(
                        p == q || (p.is_nan() && q.is_nan()),
                        "w={w} g={g} {a:?} {b:?}"
                    );
                }
            }
        }
        assert!(move_extreme(&[], 3, false).is_empty());
    }
}
