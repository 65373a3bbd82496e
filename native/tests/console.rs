//! The console plan and steady runs never panic, whatever the arrays hold (offsets outside the data or
//! negative, unsorted lines and dicts, key ids past the tables), and give one entry per hit line.

use _scan::formats::console::{
    columns, plan, steady, ChunkView, HitFlags, KeyFlags, PlanRows, RunPlace, SteadyState,
};
use proptest::prelude::*;

fn offsets() -> impl Strategy<Value = Vec<i64>> {
    proptest::collection::vec(prop_oneof![4 => -2i64..90, 1 => any::<i64>()], 0..12)
}

fn flags() -> impl Strategy<Value = Vec<bool>> {
    proptest::collection::vec(any::<bool>(), 0..12)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]
    #[test]
    fn any_arrays_give_a_plan_of_every_hit(
        data in proptest::collection::vec(proptest::sample::select(b"{}':, %|\r\n5/9[]it/s".to_vec()), 0..80),
        base in -3i64..5,
        line_start in offsets(), line_end in offsets(),
        dict_line in offsets(), dict_start in offsets(), dict_end in offsets(),
        ent_dict in offsets(),
        ent_key in proptest::collection::vec(-2i32..8, 0..12),
        ent_value in proptest::collection::vec(any::<f64>(), 0..12),
        hits in offsets(),
        fine in flags(), has_dict in flags(), has_bar in flags(),
        slow in flags(), known in flags(), eval in flags(), epoch in flags(),
    ) {
        let c = ChunkView {
            data: &data, base, line_start: &line_start, line_end: &line_end, dict_line: &dict_line,
            dict_start: &dict_start, dict_end: &dict_end, ent_dict: &ent_dict, ent_key: &ent_key,
            ent_value: &ent_value,
        };
        let f = HitFlags { fine: &fine, has_dict: &has_dict, has_bar: &has_bar };
        let k = KeyFlags { slow: &slow, known: &known, eval: &eval, epoch: &epoch };
        let p = plan(&c, &hits, &f, &k);
        prop_assert_eq!(p.how.len(), hits.len());
        prop_assert_eq!(p.train_epoch.len(), hits.len());
        prop_assert_eq!(p.bounds.len(), dict_line.len() + 1);
        prop_assert!(p.breaks.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn any_rows_give_a_run_inside_them_or_a_stop(
        rows in proptest::collection::vec((any::<bool>(), any::<i64>(), -1i64..3, any::<bool>(), any::<f64>()), 0..40),
        breaks in offsets(),
        start in 0usize..45,
        min_run in 0usize..20, max_run in 0usize..50,
        total in -1i64..3, bar_step in any::<i64>(),
        used in proptest::option::of(any::<i64>()), sent in proptest::option::of(any::<i64>()),
        last in proptest::option::of(any::<i64>()),
        dict_of in offsets(), hits in offsets(), bounds in offsets(), first in any::<i64>(),
    ) {
        let plain: Vec<bool> = rows.iter().map(|r| r.0).collect();
        let n: Vec<i64> = rows.iter().map(|r| r.1).collect();
        let m: Vec<i64> = rows.iter().map(|r| r.2).collect();
        let train: Vec<bool> = rows.iter().map(|r| r.3).collect();
        let epoch: Vec<f64> = rows.iter().map(|r| r.4).collect();
        let a = PlanRows { breaks: &breaks, plain: &plain, bar_n: &n, bar_m: &m, train: &train, epoch: &epoch };
        let st = SteadyState { min_run, max_run, total, bar_step, bar_used: used, progress_sent: sent, last };
        match steady(&a, start, &st) {
            Ok(run) => {
                prop_assert!(run.end <= rows.len() && run.end >= start + min_run);
                prop_assert_eq!(run.train.len(), run.steps.len());
                prop_assert!(run.train.iter().chain(&run.redraws).all(|&h| h >= start as i64 && (h as usize) < run.end));
                let place = RunPlace { dict_of: &dict_of, hits: &hits, bounds: &bounds, first, samples: 5,
                                       events: 0, total };
                let cols = columns(&run, &place);
                prop_assert_eq!(cols.dict.len(), run.train.len());
                prop_assert_eq!(cols.redraw_samples.len(), run.redraws.len());
            }
            Err(stop) => prop_assert!(stop <= rows.len().max(start)),
        }
    }
}
