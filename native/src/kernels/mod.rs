//! Numeric kernels over numpy-shaped slices, for the store and the rules: rolling medians and
//! extremes, the running smoothing, the store's history buckets and row gather, rows grouped by
//! metric, a numeric table's rows. Each gives the numbers of the numpy or bottleneck call it stands in for
//! (`trainwatch/scan/reference/kernels.py`).

pub mod buckets;
pub mod extremes;
pub mod gather;
pub mod group;
pub mod median;
pub mod smooth;
pub mod table;
