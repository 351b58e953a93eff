//! Results in fio's own output formats (normal, json, json+, terse), plus
//! flashpath's own section (per-layer breakdown, model counters) under one
//! extra top-level key that fio readers ignore.

pub mod model;

pub use model::*;
