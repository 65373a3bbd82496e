//! The formats' fast paths: what one adapter makes of a scanned chunk, in one pass over its arrays,
//! each proven against the adapter's own numpy path (its reference). These know a format's meaning:
//! the Hugging Face Trainer console ([`console`]) and JSON lines ([`jsonl`], with [`readable`]'s
//! decision and [`rows`]' columns).

pub mod console;
pub mod jsonl;
pub mod readable;
pub mod rows;
