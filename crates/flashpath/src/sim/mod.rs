//! The engine: virtual time, the event queue, the request slab, random
//! streams and latency histograms. Nothing here knows about storage.

pub mod hist;
pub mod queue;
pub mod rng;
pub mod slab;
pub mod timeline;

/// Virtual time and durations, in integer nanoseconds.
pub type Ns = u64;

pub const NS_PER_US: Ns = 1_000;
pub const NS_PER_MS: Ns = 1_000_000;
pub const NS_PER_SEC: Ns = 1_000_000_000;
