//! trainwatch's native log scanner: finds lines, keyword hits, dicts (nested ones flattened),
//! `key: value` tokens and progress counters in fed bytes, the same way as the pure-Python reference (trainwatch/scan/reference.py).
//! It knows no log format's meaning. The pure-Rust core ([`scanner::Core`]) is what the tests and the
//! fuzzer drive; the Python binding is behind the `python` feature.

#![deny(
    clippy::indexing_slicing,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]
#![cfg_attr(test, allow(clippy::indexing_slicing, clippy::unwrap_used))]

pub mod bars;
pub mod buckets;
pub mod bytes;
pub mod census;
pub mod console;
pub mod dicts;
pub mod extremes;
pub mod find;
pub mod gather;
pub mod group;
pub mod jsonl;
pub mod keys;
pub mod keywords;
pub mod kv;
pub mod lines;
pub mod median;
pub mod numbers;
pub mod progress;
pub mod readable;
pub mod rows;
pub mod scanner;
pub mod smooth;

#[cfg(feature = "python")]
mod python;
