//! Links between the host controller and the device: their transfer rate
//! and latency as the driver's commands and data cross them.

pub mod pcie;
