//! Scanning: fed bytes into lines and, per line, keyword hits, dicts (nested ones flattened),
//! `key: value` tokens and progress counters, as flat arrays ([`scanner::Core`]); and the byte-level
//! look-ups over a scanned chunk that adapters plan with (tqdm bars at a `%|`, byte counts over spans,
//! the offsets of a byte string). Nothing here knows what a log format means.

pub mod bars;
pub mod bytes;
pub mod census;
pub mod dicts;
pub mod find;
pub mod keys;
pub mod keywords;
pub mod kv;
pub mod lines;
pub mod numbers;
pub mod progress;
pub mod scanner;
