//! The `results.json` schema, shared with the bench: see the `kvbench-results` crate.

pub use kvbench_results::*;
