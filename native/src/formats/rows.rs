//! JSON-lines rows from the scanner's entries: the same columns as the reference
//! (`trainwatch/adapters/jsonl_columns.py`, `rows_reference`). What each key means (a step key and
//! its priority, a time key, its name id) is the caller's, passed as tables indexed by key id; this
//! only applies those meanings to the entries of a run of consecutive dicts, a dict at a time.

use crate::scan::bytes::{entry, flag};

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
/// goes below the step before it (`last_step` before the first), one row at a time (`take_row`). Rows out of
/// order (the adapter never passes them) end the pass after the rows before them.
pub fn emit_rows(
    key: &[i32],
    value: &[f64],
    row: &[i64],
    lineno: &[i64],
    meaning: &Meaning<'_>,
    last_step: Option<i64>,
) -> Rows {
    let n = lineno.len();
    let cap = key.len();
    let mut out = Rows {
        name: Vec::with_capacity(cap),
        step: Vec::with_capacity(cap),
        value: Vec::with_capacity(cap),
        line: Vec::with_capacity(cap),
        time: Vec::with_capacity(cap),
        take: n,
        last_step,
    };
    let entries = key.len().min(value.len()).min(row.len());
    let mut e = 0usize;
    let mut before: Option<usize> = None; // the row of the entries before
    while e < entries {
        let r = row.get(e).copied().unwrap_or(-1);
        let mut end = e + 1;
        while end < entries && row.get(end) == Some(&r) {
            end += 1;
        }
        let (a, b) = (e, end);
        e = end;
        let Some(r) = usize::try_from(r).ok().filter(|&r| r < n) else {
            continue;
        };
        if let Some(prev) = before.filter(|&prev| r <= prev) {
            out.take = prev + 1; // rows out of order (never so from the adapter): the rows so far stand
            break;
        }
        before = Some(r);
        let line = lineno.get(r).copied().unwrap_or(0);
        if !take_row(&mut out, key, value, (a, b), line, meaning) {
            out.take = r;
            break;
        }
    }
    out
}

/// The row whose entries are [a, b) of `key`/`value`, printed on `line`: its metrics appended to `out`
/// and its step made `out.last_step`, unless that step goes below `out.last_step` (then nothing is
/// appended and false is returned: the per-line path decides what such a row is). Its entries are read
/// twice while in cache: what its step and time are, then its metrics.
pub(crate) fn take_row(
    out: &mut Rows,
    key: &[i32],
    value: &[f64],
    (a, b): (usize, usize),
    line: i64,
    meaning: &Meaning<'_>,
) -> bool {
    let found = row_step_and_time(key, value, a, b, meaning);
    push_row(out, key, value, (a, b), (line, found), meaning)
}

/// `take_row` once the row's step and time entry are known (`row_step_and_time`).
pub(crate) fn push_row(
    out: &mut Rows,
    key: &[i32],
    value: &[f64],
    (a, b): (usize, usize),
    (line, (step, time_at)): (i64, (i64, Option<usize>)),
    meaning: &Meaning<'_>,
) -> bool {
    if step != NO_STEP {
        if out.last_step.is_some_and(|l| step < l) {
            return false;
        }
        out.last_step = Some(step);
    }
    let when = time_at
        .and_then(|t| value.get(t).copied())
        .map_or(f64::NAN, |v| if v > 1e11 { v / 1000.0 } else { v });
    for i in a..b {
        let k = i64::from(key.get(i).copied().unwrap_or(-1));
        if Some(i) == time_at || flag(meaning.is_step, k) {
            continue;
        }
        out.name.push(entry(meaning.name, k, -1));
        out.step.push(step);
        out.value.push(value.get(i).copied().unwrap_or(f64::NAN));
        out.line.push(line);
        out.time.push(when);
    }
    true
}

/// The step of the row whose entries are [a, b) (NO_STEP when none is printed) and the entry that is
/// its time, if any.
fn row_step_and_time(
    key: &[i32],
    value: &[f64],
    a: usize,
    b: usize,
    meaning: &Meaning<'_>,
) -> (i64, Option<usize>) {
    let mut found = StepAndTime::default();
    for i in a..b {
        let k = i64::from(key.get(i).copied().unwrap_or(-1));
        found.see(meaning, i, k, value.get(i).copied().unwrap_or(f64::NAN));
    }
    found.result()
}

/// A row's step and time entry as its entries are read one at a time (the JSON-lines pass reads them
/// in its own walk, which checks more of each entry): the step is the value of the lowest-ranked step
/// key, truncated; the time is the first time key above 1e8.
pub(crate) struct StepAndTime {
    step: i64,
    best: i64,
    time_at: Option<usize>,
}

impl Default for StepAndTime {
    fn default() -> Self {
        StepAndTime {
            step: NO_STEP,
            best: i64::MAX,
            time_at: None,
        }
    }
}

impl StepAndTime {
    /// Entry `i`, of key id `k` and value `v`.
    #[inline(always)]
    pub(crate) fn see(&mut self, meaning: &Meaning<'_>, i: usize, k: i64, v: f64) {
        if flag(meaning.is_step, k) {
            let rank = entry(meaning.rank, k, i64::MAX);
            if rank < self.best {
                self.best = rank;
                self.step = v.trunc() as i64;
            }
        }
        if self.time_at.is_none() && flag(meaning.is_time, k) && v > 1e8 {
            self.time_at = Some(i);
        }
    }

    /// The step (NO_STEP when none was seen) and the time entry.
    pub(crate) fn result(&self) -> (i64, Option<usize>) {
        (self.step, self.time_at)
    }
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
