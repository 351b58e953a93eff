//! flashpath: a discrete-event simulator of the whole flash-storage I/O path
//! of a Linux machine. The modules follow a request down the path:
//! `workload` (the application's I/O) -> `host` (the CPU that runs the
//! kernel) -> `block` (blk-mq) -> `driver` (host controller driver) ->
//! `device` (the storage device), and back. `sim` is the engine, `profile`
//! the parameters, `report` the results in fio's formats.

pub mod device;
pub mod error;
pub mod report;
pub mod sim;
pub mod workload;

pub use error::{Diagnostic, InputError, Result};
