//! JSON-lines rows from the scanner's entries: the same columns as the reference
//! (`trainwatch/adapters/jsonl_columns.py`, `emit_rows_reference`). What each key means (a step key and
//! its priority, a time key, its name id) is the caller's, passed as tables indexed by key id; this
//! only applies those meanings to every entry of a run of consecutive dicts, in one pass.

/// What each key id means, as tables indexed by it. An id past a table's end means nothing.
pub struct Meaning<'a> {
    pub is_step: &'a [bool],
    /// Priority among step keys: the lowest printed in a dict is its step.
    pub rank: &'a [i64],
    pub is_time: &'a [bool],
    pub name: &'a [i32],
}

/// The columns of the metric entries of the rows taken, with how many rows were taken and the last
/// step they set.
#[derive(Debug, Default, PartialEq)]
pub struct Rows {
    pub name: Vec<i32>,
    pub step: Vec<i64>,
    pub value: Vec<f64>,
    pub line: Vec<i64>,
    pub time: Vec<f64>,
    pub take: usize,
    pub last_step: Option<i64>,
}

/// No step printed: the engine gives such a row the source's current step.
pub const NO_STEP: i64 = i64::MIN;

/// Dicts `0..n` (rows) whose entries are `key`, `value`, `row` (each entry's dict, ascending), printed on
/// lines `lineno`: each row's step (its lowest-ranked step key, truncated), its time (its first time key
/// above 1e8, milliseconds read as such) and its other entries as metrics, up to the first row whose step
/// goes below the step before it (`last_step` before the first).
pub fn emit_rows(
    key: &[i32],
    value: &[f64],
    row: &[i64],
    lineno: &[i64],
    meaning: &Meaning<'_>,
    last_step: Option<i64>,
) -> Rows {
    let n = lineno.len();
    let mut step = vec![NO_STEP; n];
    let mut step_rank = vec![i64::MAX; n];
    let mut when = vec![f64::NAN; n];
    let mut consumed = vec![false; key.len()];
    let at = |table: &[bool], k: i32| {
        usize::try_from(k)
            .ok()
            .and_then(|k| table.get(k).copied())
            .unwrap_or(false)
    };
    for (e, ((&k, &v), &r)) in key.iter().zip(value).zip(row).enumerate() {
        let Some(r) = usize::try_from(r).ok().filter(|&r| r < n) else {
            continue;
        };
        if at(meaning.is_step, k) {
            if let Some(c) = consumed.get_mut(e) {
                *c = true;
            }
            let rank = usize::try_from(k)
                .ok()
                .and_then(|k| meaning.rank.get(k).copied())
                .unwrap_or(i64::MAX);
            if let (Some(best), Some(s)) = (step_rank.get_mut(r), step.get_mut(r)) {
                if rank < *best {
                    *best = rank;
                    *s = v.trunc() as i64;
                }
            }
        }
        if at(meaning.is_time, k) && v > 1e8 {
            if let Some(t) = when.get_mut(r) {
                if t.is_nan() {
                    *t = if v > 1e11 { v / 1000.0 } else { v };
                    if let Some(c) = consumed.get_mut(e) {
                        *c = true;
                    }
                }
            }
        }
    }
    let (take, last_step) = taken(&step, last_step);
    let cap = key.len();
    let mut out = Rows {
        name: Vec::with_capacity(cap),
        step: Vec::with_capacity(cap),
        value: Vec::with_capacity(cap),
        line: Vec::with_capacity(cap),
        time: Vec::with_capacity(cap),
        take,
        last_step,
    };
    for (e, ((&k, &v), &r)) in key.iter().zip(value).zip(row).enumerate() {
        let Some(r) = usize::try_from(r).ok().filter(|&r| r < take) else {
            continue;
        };
        if consumed.get(e).copied().unwrap_or(true) {
            continue;
        }
        out.name.push(
            usize::try_from(k)
                .ok()
                .and_then(|k| meaning.name.get(k).copied())
                .unwrap_or(-1),
        );
        out.step.push(step.get(r).copied().unwrap_or(NO_STEP));
        out.value.push(v);
        out.line.push(lineno.get(r).copied().unwrap_or(0));
        out.time.push(when.get(r).copied().unwrap_or(f64::NAN));
    }
    out
}

/// How many rows are taken (up to the first whose step goes below the step before it) and the last
/// step among them.
fn taken(step: &[i64], mut last: Option<i64>) -> (usize, Option<i64>) {
    for (i, &s) in step.iter().enumerate() {
        if s == NO_STEP {
            continue;
        }
        if last.is_some_and(|l| s < l) {
            return (i, last);
        }
        last = Some(s);
    }
    (step.len(), last)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_times_metrics_and_a_step_going_back() {
        // keys: 0 step (rank 0), 1 iter (rank 1), 2 time, 3 loss
        let is_step = [true, true, false, false];
        let rank = [0, 1, 2, 2];
        let is_time = [false, false, true, false];
        let name = [10, 11, 12, 13];
        let m = Meaning {
            is_step: &is_step,
            rank: &rank,
            is_time: &is_time,
            name: &name,
        };
        let key = [1, 0, 2, 3, 0, 3, 0, 3];
        let value = [7.0, 5.9, 1.7e12, 2.5, 6.0, 2.4, 4.0, 2.3];
        let row = [0, 0, 0, 0, 1, 1, 2, 2];
        let got = emit_rows(&key, &value, &row, &[3, 4, 5], &m, None);
        assert_eq!(got.take, 2);
        assert_eq!(got.last_step, Some(6));
        assert_eq!(got.name, vec![13, 13]);
        assert_eq!(got.step, vec![5, 6]);
        assert_eq!(got.line, vec![3, 4]);
        assert_eq!(got.time.first().copied(), Some(1.7e9));
        assert!(got.time.get(1).is_some_and(|t| t.is_nan()));
        let back = emit_rows(&key, &value, &row, &[3, 4, 5], &m, Some(9));
        assert_eq!(back.take, 0);
        assert_eq!(back.last_step, Some(9));
    }
}
