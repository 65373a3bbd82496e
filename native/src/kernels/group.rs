//! A stretch's rows by metric: each row's engine id and the rows of each id, ascending (the engine's
//! `group_rows`, whose numpy path is the reference). The engine judges a stretch a series at a time, and
//! asking numpy for each id's rows is a pass over the whole stretch per id; a counting sort is two.

/// Each row's id, and the rows grouped by id: `order[starts[k]..starts[k + 1]]` are the rows of id `k`,
/// ascending.
#[derive(Debug, Default, PartialEq)]
pub struct Groups {
    pub ids: Vec<i64>,
    pub order: Vec<i64>,
    pub starts: Vec<i64>,
}

/// Rows whose batch name ids are `name`, mapped to ids below `kinds` by `table` (indexed by name id).
/// None when a name id is outside the table or maps outside `0..kinds`, or when no memory can hold a
/// count per id (a `kinds` no engine has: refused, not a panic or an abort).
pub fn group(name: &[i32], table: &[i64], kinds: usize) -> Option<Groups> {
    let mut ids = Vec::with_capacity(name.len());
    let mut counts = Vec::new();
    counts.try_reserve_exact(kinds).ok()?;
    counts.resize(kinds, 0i64);
    for &raw in name {
        let id = usize::try_from(raw)
            .ok()
            .and_then(|i| table.get(i))
            .copied()?;
        let slot = usize::try_from(id).ok().and_then(|k| counts.get_mut(k))?;
        *slot += 1;
        ids.push(id);
    }
    let mut starts = Vec::new();
    starts.try_reserve_exact(kinds.checked_add(1)?).ok()?;
    let mut at = 0i64;
    starts.push(at);
    for c in &mut counts {
        let n = *c;
        *c = at; // from here on: where the next row of this id goes
        at += n;
        starts.push(at);
    }
    let mut order = vec![0i64; name.len()];
    for (row, &id) in ids.iter().enumerate() {
        // ids are all below `kinds` (checked above), so both lookups find their slot
        let next = usize::try_from(id).ok().and_then(|k| counts.get_mut(k))?;
        *usize::try_from(*next).ok().and_then(|p| order.get_mut(p))? = row as i64;
        *next += 1;
    }
    Some(Groups { ids, order, starts })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_rows_by_id_in_row_order() {
        let g = group(&[0, 2, 1, 0, 2, 2], &[3, 0, 1], 4).unwrap();
        assert_eq!(g.ids, [3, 1, 0, 3, 1, 1]);
        assert_eq!(g.starts, [0, 1, 4, 4, 6]);
        assert_eq!(g.order, [2, 1, 4, 5, 0, 3]);
    }

    #[test]
    fn refuses_ids_out_of_range() {
        assert_eq!(
            group(&[], &[], 0),
            Some(Groups {
                starts: vec![0],
                ..Groups::default()
            })
        );
        assert!(group(&[1], &[0], 1).is_none());
        assert!(group(&[-1], &[0], 1).is_none());
        assert!(group(&[0], &[1], 1).is_none());
        assert!(group(&[0], &[-1], 1).is_none());
        assert!(group(&[], &[], usize::MAX).is_none()); // no room for its counts: refused
    }
}
