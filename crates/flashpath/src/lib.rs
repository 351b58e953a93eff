//! flashpath: a discrete-event simulator of the whole flash-storage I/O path
//! of a Linux machine. The modules follow a request down the path:
//! `workload` (the application's I/O) -> `host` (the CPU that runs the
//! kernel) -> `block` (blk-mq) -> `dma` (mapping, swiotlb) -> `driver` (host
//! controller driver) -> `device` (the storage device), and back. `sim` is
//! the engine, `types` the vocabulary every layer shares, `machine` wires
//! the layers, `model` builds them from a profile, `mm` the page cache,
//! `profile` holds the parameters, `report` renders results in fio's
//! formats. Which layer may import which: `tests/layers.rs`.

pub mod block;
pub mod check;
pub mod device;
pub mod dma;
pub mod driver;
pub mod error;
pub mod host;
pub mod input;
pub mod link;
pub mod machine;
pub mod mm;
pub mod model;
pub mod parameters;
pub mod profile;
pub mod report;
pub mod run;
pub mod sim;
pub mod types;
pub mod workload;

pub use error::{Diagnostic, InputError, Result};
