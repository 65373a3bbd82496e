//! trainwatch's native core, in three parts:
//! - [`scan`]: the log scanner. It finds lines, keyword hits, dicts (nested ones flattened), `key: value`
//!   tokens and progress counters in fed bytes, the same way as the pure-Python reference
//!   (trainwatch/scan/reference/), and knows no log format's meaning;
//! - [`formats`]: the formats' fast paths (the Trainer console, JSON lines), which do know one, each
//!   proven against its adapter's numpy path;
//! - [`kernels`]: numeric kernels for the store and the rules (rolling medians and extremes, smoothing,
//!   history buckets, gathers, grouping).
//!
//! The pure-Rust code ([`scan::scanner::Core`] and the functions of each part) is what the tests and the
//! fuzzer drive; the Python binding (`trainwatch._scan`, typed in trainwatch/_scan.pyi) is behind the
//! `python` feature.

#![deny(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]
#![cfg_attr(test, allow(clippy::indexing_slicing, clippy::unwrap_used))]

pub mod formats;
pub mod kernels;
pub mod scan;

#[cfg(feature = "python")]
mod python;
