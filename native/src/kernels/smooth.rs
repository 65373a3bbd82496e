//! The running smoothing a trend rule keeps of a point noise, one row at a time, in the order and
//! rounding of the Python loop it stands in for (`trainwatch/rules/rolling.py`, `smoothed`):
//! `ema = ema + (value - ema) * 2.0 / window`, each operation an IEEE double as Python's are.

/// The smoothed value after each row, starting from `ema`.
pub fn ema_path(mut ema: f64, values: &[f64], windows: &[i64]) -> Vec<f64> {
    values
        .iter()
        .zip(windows)
        .map(|(&v, &k)| {
            ema = ema + (v - ema) * 2.0 / k as f64;
            ema
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn follows_the_python_recurrence() {
        assert_eq!(
            ema_path(1.0, &[3.0, 0.5], &[4, 3]),
            vec![2.0, 2.0 + (0.5 - 2.0) * 2.0 / 3.0]
        );
        assert!(ema_path(0.0, &[], &[]).is_empty());
    }
}
