//! A series taking its rows of a stretch: the store's five columns gathered from the stretch's at the
//! given rows, and the tallies the whole-run summary wants of the values (`trainwatch/store.py`,
//! `Series.extend_rows`, whose numpy path is the reference): one pass instead of five gathers and four
//! reductions, each a numpy call of its own.

/// The stretch's columns, and the series' columns written from `at` on.
pub struct Columns<'a> {
    pub step: &'a [i64],
    pub value: &'a [f64],
    pub line: &'a [i64],
    pub time: &'a [f64],
    pub inferred: &'a [bool],
}

pub struct ColumnsMut<'a> {
    pub step: &'a mut [i64],
    pub value: &'a mut [f64],
    pub line: &'a mut [i64],
    pub time: &'a mut [f64],
    pub inferred: &'a mut [bool],
}

/// What `extend_rows` tallies of the values it took: how many were finite and how many NaN, and the
/// least and greatest finite one (NaN when none; of equal ones the last, as numpy's min and max give
/// them for a short run).
#[derive(Debug, PartialEq)]
pub struct Tally {
    pub finite: i64,
    pub nan: i64,
    pub least: f64,
    pub greatest: f64,
}

/// Rows `rows` of `from` written to `into` from `at` on; None (nothing written) when a row or the
/// room in `into` is out of range.
pub fn gather(rows: &[i64], from: &Columns, into: &mut ColumnsMut, at: usize) -> Option<Tally> {
    let n = from.value.len();
    if from.step.len() != n
        || from.line.len() != n
        || from.time.len() != n
        || from.inferred.len() != n
    {
        return None;
    }
    let end = at.checked_add(rows.len())?;
    let step = into.step.get_mut(at..end)?;
    let value = into.value.get_mut(at..end)?;
    let line = into.line.get_mut(at..end)?;
    let time = into.time.get_mut(at..end)?;
    let inferred = into.inferred.get_mut(at..end)?;
    if rows
        .iter()
        .any(|&r| usize::try_from(r).map_or(true, |r| r >= n))
    {
        return None;
    }
    let mut t = Tally {
        finite: 0,
        nan: 0,
        least: f64::NAN,
        greatest: f64::NAN,
    };
    let slots = step
        .iter_mut()
        .zip(value.iter_mut())
        .zip(line.iter_mut())
        .zip(time.iter_mut())
        .zip(inferred.iter_mut());
    for (&r, ((((s, v), l), tm), inf)) in rows.iter().zip(slots) {
        let r = usize::try_from(r).unwrap_or(0);
        *s = from.step.get(r).copied().unwrap_or(0);
        let x = from.value.get(r).copied().unwrap_or(f64::NAN);
        *v = x;
        *l = from.line.get(r).copied().unwrap_or(0);
        *tm = from.time.get(r).copied().unwrap_or(f64::NAN);
        *inf = from.inferred.get(r).copied().unwrap_or(false);
        if x.is_finite() {
            if t.finite == 0 || x <= t.least {
                t.least = x;
            }
            if t.finite == 0 || x >= t.greatest {
                t.greatest = x;
            }
            t.finite += 1;
        } else if x.is_nan() {
            t.nan += 1;
        }
    }
    Some(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gathers_and_tallies() {
        let from = Columns {
            step: &[1, 2, 3, 4],
            value: &[0.5, f64::NAN, f64::INFINITY, -2.0],
            line: &[10, 20, 30, 40],
            time: &[f64::NAN, 1.0, 2.0, 3.0],
            inferred: &[true, false, true, false],
        };
        let (mut s, mut v, mut l, mut tm, mut i) =
            ([0i64; 5], [0.0; 5], [0i64; 5], [0.0; 5], [false; 5]);
        let mut into = ColumnsMut {
            step: &mut s,
            value: &mut v,
            line: &mut l,
            time: &mut tm,
            inferred: &mut i,
        };
        let t = gather(&[0, 1, 2, 3], &from, &mut into, 1).unwrap();
        assert_eq!((t.finite, t.nan, t.least, t.greatest), (2, 1, -2.0, 0.5));
        assert!(gather(&[4], &from, &mut into, 0).is_none());
        assert!(gather(&[0, 1], &from, &mut into, 4).is_none());
        assert!(gather(&[-1], &from, &mut into, 0).is_none());
        assert_eq!(s, [0, 1, 2, 3, 4]);
        assert_eq!(l, [0, 10, 20, 30, 40]);
    }
}
