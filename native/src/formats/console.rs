//! The Trainer console's line plan and steady runs, over a scanned chunk: the same arrays as the
//! reference (`trainwatch/adapters/hf_console_columns.py`, `plan_reference` and `steady_reference`).
//!
//! What a line is (a plain dict, a bar alone, or one for the per-line reader) is decided from byte
//! structure the numpy version finds with several passes over the data and a few dozen array
//! operations per chunk, most of them holding the GIL. Here each hit line is looked at once. What the
//! keys mean (a printed step, an evaluation's metric, the epoch) stays in Python: it comes in as one
//! flag per key id.

use crate::scan::bars::plain_bar;
use crate::scan::bytes::{at, flag};
use crate::scan::census::Census;

/// What a hit line is: for the per-line reader; a bar and nothing else; a plain dict (after bars).
pub const SLOW: i64 = 0;
pub const BAR: i64 = 1;
pub const DICT: i64 = 2;

/// The scanned chunk, offsets absolute (`base` is the data's first byte's).
pub struct ChunkView<'a> {
    pub data: &'a [u8],
    pub base: i64,
    pub line_start: &'a [i64],
    pub line_end: &'a [i64],
    pub dict_line: &'a [i64],
    pub dict_start: &'a [i64],
    pub dict_end: &'a [i64],
    pub ent_dict: &'a [i64],
    pub ent_key: &'a [i32],
    pub ent_value: &'a [f64],
}

/// Per key id, what the Trainer reader makes of a dict holding it.
pub struct KeyFlags<'a> {
    /// Sends the dict to the per-line reader (a printed step, the end-of-training summary, ...).
    pub slow: &'a [bool],
    /// Makes the dict a Trainer log.
    pub known: &'a [bool],
    /// Makes it an evaluation's.
    pub eval: &'a [bool],
    /// The epoch.
    pub epoch: &'a [bool],
}

/// Per hit line what `LinePlan` holds, and per chunk dict its facts.
#[derive(Debug, Default, PartialEq)]
pub struct Plan {
    pub how: Vec<i64>,
    /// Start of the `\r`-segment of the line's last `%|` before `limit`; -1 when there is none.
    pub bar_from: Vec<i64>,
    pub limit: Vec<i64>,
    pub line_from: Vec<i64>,
    pub dict_of: Vec<i64>,
    pub plain: Vec<bool>,
    pub bar_n: Vec<i64>,
    pub bar_m: Vec<i64>,
    /// Per hit line: a Trainer train dict, and its epoch (NaN when none or not finite).
    pub train: Vec<bool>,
    pub train_epoch: Vec<f64>,
    pub breaks: Vec<i64>,
    /// Per chunk dict (and one past the last): where its entries begin.
    pub bounds: Vec<i64>,
    pub trainer: Vec<bool>,
    pub is_eval: Vec<bool>,
    pub epoch: Vec<f64>,
}

/// Per hit line, the flags computed from keyword hits (the same length as `hits`).
pub struct HitFlags<'a> {
    /// No escape code, no launcher prefix, none of the per-line reader's other keywords.
    pub fine: &'a [bool],
    pub has_dict: &'a [bool],
    pub has_bar: &'a [bool],
}

fn get<T: Copy>(v: &[T], i: usize, or: T) -> T {
    v.get(i).copied().unwrap_or(or)
}

fn pos(v: i64) -> usize {
    usize::try_from(v).unwrap_or(0)
}

/// The first index of `v` (ascending) whose value is not below `x`.
fn lower_bound(v: &[i64], x: i64) -> usize {
    v.partition_point(|&a| a < x)
}

/// The last `%|` starting in data[from..to) (its `|` may lie at `to`, as a search of the whole data
/// finds it). Found from the end one `|` at a time (a vector search), then the byte before it looked
/// at: a bar's `|` come in pairs, so this stops after a few, where a reverse substring search went
/// through the line a byte at a time.
fn last_bar(data: &[u8], from: usize, to: usize) -> Option<usize> {
    let end = to.saturating_add(1).min(data.len());
    let mut hay = data.get(from..end)?;
    while let Some(bar) = memchr::memrchr(b'|', hay) {
        if bar > 0 && hay.get(bar - 1) == Some(&b'%') {
            return Some(from + bar - 1);
        }
        hay = hay.get(..bar)?;
    }
    None
}

/// Whether a chunk dict is one the per-line reader reads exactly as the scanner did (see
/// `_plain_dicts` in the reference).
fn plain_dict(c: &ChunkView, census: &Census, keys: &KeyFlags, bounds: &[i64], d: usize) -> bool {
    // offsets from the scanner lie in the data; garbage ones wrap rather than panic
    let start = get(c.dict_start, d, 0).wrapping_sub(c.base);
    let inner = get(c.dict_end, d, 0)
        .wrapping_sub(c.base)
        .wrapping_sub(start)
        .wrapping_sub(2)
        .max(0);
    let (lo, hi) = (pos(get(bounds, d, 0)), pos(get(bounds, d + 1, 0)));
    let entries = i64::try_from(hi.saturating_sub(lo)).unwrap_or(i64::MAX);
    let [bad, colons, misplaced, commas] =
        census.of(c.data, pos(start.wrapping_add(1)), pos(inner));
    let opened = at(
        c.data,
        pos(start.wrapping_add(1)).min(c.data.len().saturating_sub(1)),
    ) == b'\'';
    if !(bad == 0
        && colons == entries
        && misplaced == 0
        && commas == entries.wrapping_sub(1)
        && opened
        && entries > 0)
    {
        return false;
    }
    let ks = c.ent_key.get(lo..hi).unwrap_or(&[]);
    if ks.iter().any(|&k| flag(keys.slow, i64::from(k))) {
        return false;
    }
    // each key once: a handful of entries, so pairs cost less than a sort
    !ks.iter()
        .enumerate()
        .any(|(i, k)| ks.get(i + 1..).unwrap_or(&[]).contains(k))
}

/// Per chunk dict: where its entries begin, and whether it is a Trainer dict, an evaluation's, and its
/// finite epoch (NaN when it has none).
fn dict_facts(c: &ChunkView, keys: &KeyFlags, plan: &mut Plan) {
    let nd = c.dict_line.len();
    let mut bounds = vec![0i64; nd + 1];
    plan.trainer = vec![false; nd];
    plan.is_eval = vec![false; nd];
    plan.epoch = vec![f64::NAN; nd];
    for (i, &owner) in c.ent_dict.iter().enumerate() {
        let Some(d) = usize::try_from(owner).ok().filter(|&d| d < nd) else {
            continue;
        };
        if let Some(b) = bounds.get_mut(d + 1) {
            *b += 1;
        }
        let k = i64::from(get(c.ent_key, i, -1));
        if flag(keys.known, k) {
            if let Some(t) = plan.trainer.get_mut(d) {
                *t = true;
            }
        }
        if flag(keys.eval, k) {
            if let Some(e) = plan.is_eval.get_mut(d) {
                *e = true;
            }
        }
        if flag(keys.epoch, k) {
            if let Some(e) = plan.epoch.get_mut(d) {
                let v = get(c.ent_value, i, f64::NAN);
                *e = if v.is_finite() { v } else { f64::NAN };
            }
        }
    }
    for i in 1..bounds.len() {
        let before = get(&bounds, i - 1, 0);
        if let Some(b) = bounds.get_mut(i) {
            *b += before;
        }
    }
    plan.bounds = bounds;
}

/// The plan of a chunk's hit lines (`hits`, ascending chunk line indices). The chunk's data must hold
/// every line whole (no cut line), as the reference requires before it plans.
pub fn plan(c: &ChunkView, hits: &[i64], flags: &HitFlags, keys: &KeyFlags) -> Plan {
    let mut out = Plan::default();
    dict_facts(c, keys, &mut out);
    let mut allowed = [false; 256];
    for (b, a) in allowed.iter_mut().enumerate() {
        *a = (0x20..0x7f).contains(&b) && !b"\"%[]\\{}".contains(&(b as u8));
    }
    let census = Census {
        allowed,
        mark: b':',
        before: b'\'',
        after: b' ',
        count: b',',
    };
    let nd = c.dict_line.len();
    let data = c.data;
    let n = hits.len();
    let mut lo = 0;
    for v in [
        &mut out.how,
        &mut out.bar_from,
        &mut out.limit,
        &mut out.line_from,
        &mut out.dict_of,
        &mut out.bar_n,
        &mut out.bar_m,
    ] {
        v.reserve(n);
    }
    for (h, &i) in hits.iter().enumerate() {
        let li = pos(i);
        let ls = get(c.line_start, li, 0).wrapping_sub(c.base);
        let le = get(c.line_end, li, 0).wrapping_sub(c.base);
        let fine = get(flags.fine, h, false);
        let has_dict = get(flags.has_dict, h, false);
        // hits and dicts both come in line order: the first dict at or after the line is found by
        // walking on from the last line's (a search only if the hits went back)
        if lo > 0 && c.dict_line.get(lo - 1).is_some_and(|&x| x >= i) {
            lo = lower_bound(c.dict_line, i);
        }
        while c.dict_line.get(lo).is_some_and(|&x| x < i) {
            lo += 1;
        }
        let on_line = c
            .dict_line
            .get(lo..)
            .unwrap_or(&[])
            .iter()
            .take_while(|&&x| x == i)
            .count();
        let d = lo.min(nd.saturating_sub(1));
        let mut one_dict = false;
        if nd > 0 && fine && has_dict && on_line == 1 {
            // the line's only `{`, up to where the next line starts, is the dict's
            let next = c
                .line_start
                .get(li + 1)
                .map_or(data.len(), |&s| pos(s.wrapping_sub(c.base)));
            let braces = memchr::memchr_iter(b'{', data.get(pos(ls)..next).unwrap_or(&[])).count();
            one_dict = braces == 1 && plain_dict(c, &census, keys, &out.bounds, d);
        }
        let (ds, de) = if one_dict {
            (
                get(c.dict_start, d, 0).wrapping_sub(c.base),
                get(c.dict_end, d, 0).wrapping_sub(c.base),
            )
        } else {
            (le, le)
        };
        let bar_after = one_dict && last_bar(data, pos(de), pos(le)).is_some();
        let dict_line = one_dict && !bar_after;
        let limit = if dict_line { ds } else { le };
        let p = last_bar(data, pos(ls), pos(limit)).filter(|&p| p >= pos(ls) && ls >= 0);
        let bar_line = fine && !has_dict && get(flags.has_bar, h, false) && p.is_some();
        let how = if dict_line {
            DICT
        } else if bar_line {
            BAR
        } else {
            SLOW
        };
        let seg = p.map(|p| {
            memchr::memrchr(b'\r', data.get(pos(ls)..p).unwrap_or(&[]))
                .map_or(ls, |k| ls.wrapping_add(i64::try_from(k).unwrap_or(0) + 1))
        });
        let (mut plain, mut bn, mut bm) = (false, 0, 0);
        if let (Some(p), Some(s), true) = (p, seg, how != SLOW) {
            if let Some((a, b)) = plain_bar(data, p, pos(s), pos(limit)) {
                (plain, bn, bm) = (true, a, b);
            }
        }
        let t = nd > 0 && how == DICT && get(&out.trainer, d, false);
        let ev = nd > 0 && get(&out.is_eval, d, false);
        let e = if t && !ev {
            get(&out.epoch, d, f64::NAN)
        } else {
            f64::NAN
        };
        let fine_epoch = ((e * 100.0) - (e * 100.0).round_ties_even()).abs() > 1e-6;
        let positive = e > 0.0; // false for NaN
        let unsettled = t && (ev || !positive || fine_epoch);
        if how == SLOW || (p.is_some() && !plain) || unsettled {
            out.breaks.push(i64::try_from(h).unwrap_or(i64::MAX));
        }
        out.how.push(how);
        out.bar_from.push(seg.unwrap_or(-1));
        out.limit.push(limit);
        out.line_from.push(ls);
        out.dict_of.push(i64::try_from(d).unwrap_or(0));
        out.plain.push(plain);
        out.bar_n.push(bn);
        out.bar_m.push(bm);
        out.train.push(t && !ev);
        out.train_epoch.push(e);
    }
    out
}

/// A plan's per-hit arrays that `steady` reads.
pub struct PlanRows<'a> {
    pub breaks: &'a [i64],
    pub plain: &'a [bool],
    pub bar_n: &'a [i64],
    pub bar_m: &'a [i64],
    pub train: &'a [bool],
    pub epoch: &'a [f64],
}

/// The reader's state a steady run starts from, and the run lengths looked for (the reference's
/// `STEADY_MIN` and `STEADY_MAX`).
pub struct SteadyState {
    pub min_run: usize,
    pub max_run: usize,
    pub total: i64,
    pub bar_step: i64,
    pub bar_used: Option<i64>,
    pub progress_sent: Option<i64>,
    pub last: Option<i64>,
}

/// A steady run (the reference's `SteadyRun`), hit line indices absolute.
#[derive(Debug, Default, PartialEq)]
pub struct Run {
    pub end: usize,
    pub bar_step: i64,
    pub train: Vec<i64>,
    pub bar_at_train: Vec<i64>,
    pub epochs: Vec<f64>,
    pub steps: Vec<i64>,
    pub redraws: Vec<i64>,
    pub redraw_steps: Vec<i64>,
}

/// The longest run of hit lines from `start` in the Trainer's steady regime (see the reference's
/// `steady`): Err(the hit line it stops at) when shorter than `min_run`.
pub fn steady(a: &PlanRows, start: usize, st: &SteadyState) -> Result<Run, usize> {
    let n = a.plain.len();
    let k = a
        .breaks
        .partition_point(|&b| b < i64::try_from(start).unwrap_or(i64::MAX));
    let mut end = a
        .breaks
        .get(k)
        .map_or(n, |&b| pos(b))
        .min(start.saturating_add(st.max_run))
        .min(n);
    if end < start.saturating_add(st.min_run) {
        return Err(end);
    }
    // an evaluation's bar ends the run
    if let Some(s) =
        (start..end).find(|&s| get(a.plain, s, false) && get(a.bar_m, s, 0) != st.total)
    {
        end = s;
    }
    let mut bar = Vec::with_capacity(end - start);
    let mut cur = st.bar_step;
    let mut run = Run::default();
    let mut prev = st.bar_used.unwrap_or(-1);
    for s in start..end {
        if get(a.plain, s, false) {
            cur = get(a.bar_n, s, 0);
        }
        if get(a.train, s, false) {
            if cur == prev {
                // a dict without a redraw since the last one: stdout is buffered, the regime ends
                end = s;
                break;
            }
            prev = cur;
            run.train.push(i64::try_from(s).unwrap_or(i64::MAX));
            run.bar_at_train.push(cur);
            run.epochs.push(get(a.epoch, s, f64::NAN));
        }
        bar.push(cur);
    }
    if end < start.saturating_add(st.min_run) {
        return Err(end);
    }
    let mut lift = i64::MIN;
    for (j, &b) in run.bar_at_train.iter().enumerate() {
        let j = i64::try_from(j).unwrap_or(i64::MAX);
        lift = lift.max(b.saturating_sub(j));
        let lifted = st.last.map_or(lift, |l| lift.max(l.saturating_add(1)));
        run.steps.push(j.saturating_add(lifted));
    }
    let mut before = st.progress_sent.unwrap_or(-1);
    for (s, &b) in (start..).zip(&bar) {
        if b != before {
            run.redraws.push(i64::try_from(s).unwrap_or(i64::MAX));
            run.redraw_steps.push(b);
        }
        before = b;
    }
    run.end = end;
    run.bar_step = bar.last().copied().unwrap_or(st.bar_step);
    Ok(run)
}

/// Where a steady run's rows go: the plan's per-hit dict and line, where each chunk dict's entries
/// begin, and the run buffer's state (see the reference's `run_columns`).
pub struct RunPlace<'a> {
    pub dict_of: &'a [i64],
    pub hits: &'a [i64],
    pub bounds: &'a [i64],
    /// Line number of the chunk's first line.
    pub first: i64,
    /// Samples and events the run buffer holds before the run.
    pub samples: i64,
    pub events: i64,
    pub total: i64,
}

/// A steady run as the run buffer's columns, and what the reader's state takes from it.
#[derive(Debug, Default, PartialEq)]
pub struct RunColumns {
    /// Per train dict: chunk dict, step, line number.
    pub dict: Vec<i64>,
    pub line: Vec<i64>,
    /// Per redraw: samples before it, events before it, line number (its step is `Run::redraw_steps`,
    /// its total the place's).
    pub redraw_samples: Vec<i64>,
    pub redraw_lines: Vec<i64>,
    /// Samples the run adds.
    pub entries: i64,
    /// The most steps per epoch a bar past 0 shows (NaN when none is past 0).
    pub per_epoch: f64,
}

/// The columns of a run (the reference's `run_columns`).
pub fn columns(run: &Run, at: &RunPlace) -> RunColumns {
    let mut out = RunColumns::default();
    let mut per_epoch: Option<f64> = None; // numpy's max: NaN if any ratio is
    for (&b, &e) in run.bar_at_train.iter().zip(&run.epochs) {
        if b > 0 {
            let r = b as f64 / e;
            per_epoch = Some(match per_epoch {
                None => r,
                Some(m) if m.is_nan() || r.is_nan() => f64::NAN,
                Some(m) => m.max(r),
            });
        }
    }
    out.per_epoch = per_epoch.unwrap_or(f64::NAN);
    let mut sums = Vec::with_capacity(run.train.len());
    let mut sum = 0i64;
    for &h in &run.train {
        let h = pos(h);
        let d = get(at.dict_of, h, 0);
        let d_at = pos(d);
        sum = sum.wrapping_add(get(at.bounds, d_at + 1, 0).wrapping_sub(get(at.bounds, d_at, 0)));
        sums.push(sum);
        out.dict.push(d);
        out.line.push(at.first.wrapping_add(get(at.hits, h, 0)));
    }
    out.entries = sum;
    let mut k = 0;
    for &r in &run.redraws {
        while run.train.get(k).is_some_and(|&t| t <= r) {
            k += 1;
        }
        let before = if k == 0 { 0 } else { get(&sums, k - 1, 0) };
        out.redraw_samples.push(at.samples.wrapping_add(before));
        out.redraw_lines
            .push(at.first.wrapping_add(get(at.hits, pos(r), 0)));
    }
    out
}

/// The samples of dict lines read from the arrays (the reference's `emit`): every entry of each dict
/// `dicts[i]` (entries [bounds[d], bounds[d + 1])), in order, with its key's batch name id (`names`, by
/// key id; -1 past the table), the dict's step and line: (name, step, value, line).
pub fn dict_entries(
    dicts: &[i64],
    steps: &[i64],
    lines: &[i64],
    bounds: &[i64],
    ent_key: &[i32],
    ent_value: &[f64],
    names: &[i32],
) -> (Vec<i32>, Vec<i64>, Vec<f64>, Vec<i64>) {
    let span = |d: i64| {
        let d = pos(d);
        (pos(get(bounds, d, 0)), pos(get(bounds, d + 1, 0)))
    };
    let total: usize = dicts
        .iter()
        .map(|&d| {
            let (a, b) = span(d);
            b.saturating_sub(a)
        })
        .fold(0usize, usize::saturating_add)
        .min(ent_value.len());
    let mut out = (
        Vec::with_capacity(total),
        Vec::with_capacity(total),
        Vec::with_capacity(total),
        Vec::with_capacity(total),
    );
    for ((&d, &step), &line) in dicts.iter().zip(steps).zip(lines) {
        let (a, b) = span(d);
        let keys = ent_key.get(a..b).unwrap_or(&[]);
        let values = ent_value.get(a..b).unwrap_or(&[]);
        for (&k, &v) in keys.iter().zip(values) {
            out.0.push(
                usize::try_from(k)
                    .ok()
                    .and_then(|k| names.get(k))
                    .copied()
                    .unwrap_or(-1),
            );
            out.1.push(step);
            out.2.push(v);
            out.3.push(line);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows<'a>(
        plain: &'a [bool],
        n: &'a [i64],
        m: &'a [i64],
        train: &'a [bool],
        epoch: &'a [f64],
    ) -> PlanRows<'a> {
        PlanRows {
            breaks: &[],
            plain,
            bar_n: n,
            bar_m: m,
            train,
            epoch,
        }
    }

    #[test]
    fn a_steady_run_gives_each_dict_the_bars_step() {
        // bar, dict, bar, dict, ...: 20 lines
        let plain: Vec<bool> = (0..20).map(|i| i % 2 == 0).collect();
        let n: Vec<i64> = (0..20).map(|i| i / 2 + 1).collect();
        let m = vec![100; 20];
        let train: Vec<bool> = (0..20).map(|i| i % 2 == 1).collect();
        let epoch = vec![0.5; 20];
        let st = SteadyState {
            min_run: 16,
            max_run: 4096,
            total: 100,
            bar_step: 0,
            bar_used: None,
            progress_sent: None,
            last: None,
        };
        let run = steady(&rows(&plain, &n, &m, &train, &epoch), 0, &st).unwrap();
        assert_eq!(run.end, 20);
        assert_eq!(run.steps, (1..=10).collect::<Vec<_>>());
        assert_eq!(run.redraws, (0..20).step_by(2).collect::<Vec<_>>());
        // a dict twice at the same bar step ends the run there
        let mut stale = train.clone();
        stale[18] = true;
        stale[19] = true;
        let mut p2 = plain.clone();
        p2[18] = false;
        assert_eq!(
            steady(&rows(&p2, &n, &m, &stale, &epoch), 0, &st)
                .unwrap()
                .end,
            18
        );
        // an evaluation's bar (another total) ends it, too short to read
        let mut m2 = m.clone();
        m2[4] = 7;
        assert_eq!(
            steady(&rows(&plain, &n, &m2, &train, &epoch), 0, &st),
            Err(4)
        );
    }

    #[test]
    fn a_plain_dict_line_and_a_bar_line() {
        let data = b"  5%|#    | 5/100 [00:01<00:09, 9.9it/s]\r{'loss': 1.5, 'epoch': 0.05}\n 10%|##   | 10/100 [00:02<00:09, 9.9it/s]\n";
        let first_end = data.iter().position(|&b| b == b'\n').unwrap() as i64;
        let line_start = [0, first_end + 1];
        let line_end = [first_end, data.len() as i64 - 1];
        let ds = data.iter().position(|&b| b == b'{').unwrap() as i64;
        let c = ChunkView {
            data,
            base: 0,
            line_start: &line_start,
            line_end: &line_end,
            dict_line: &[0],
            dict_start: &[ds],
            dict_end: &[first_end],
            ent_dict: &[0, 0],
            ent_key: &[0, 1],
            ent_value: &[1.5, 0.05],
        };
        let keys = KeyFlags {
            slow: &[false, false],
            known: &[true, false],
            eval: &[false, false],
            epoch: &[false, true],
        };
        let flags = HitFlags {
            fine: &[true, true],
            has_dict: &[true, false],
            has_bar: &[true, true],
        };
        let p = plan(&c, &[0, 1], &flags, &keys);
        assert_eq!(p.how, vec![DICT, BAR]);
        assert_eq!(p.bar_from, vec![0, first_end + 1]);
        assert_eq!(
            (p.bar_n.clone(), p.bar_m.clone()),
            (vec![5, 10], vec![100, 100])
        );
        assert_eq!(p.train, vec![true, false]);
        assert_eq!(p.breaks, Vec::<i64>::new());
        assert_eq!(p.bounds, vec![0, 2]);
        // a second `{` on the line makes it the per-line reader's
        let mut other = data.to_vec();
        other[0] = b'{';
        let c2 = ChunkView { data: &other, ..c };
        assert_eq!(plan(&c2, &[0, 1], &flags, &keys).how, vec![SLOW, BAR]);
    }

    #[test]
    fn never_reads_outside_the_data() {
        let c = ChunkView {
            data: b"{'a': 1}",
            base: 5,
            line_start: &[-3, 99],
            line_end: &[1000, -7],
            dict_line: &[0, 7],
            dict_start: &[-100, 9_000_000],
            dict_end: &[i64::MAX, i64::MIN],
            ent_dict: &[0, 9, -1],
            ent_key: &[3, -2, 0],
            ent_value: &[1.0],
        };
        let keys = KeyFlags {
            slow: &[],
            known: &[true],
            eval: &[],
            epoch: &[true],
        };
        let flags = HitFlags {
            fine: &[true, true, true],
            has_dict: &[true, true],
            has_bar: &[true],
        };
        let p = plan(&c, &[0, 1, 55], &flags, &keys);
        assert_eq!(p.how.len(), 3);
    }
}
