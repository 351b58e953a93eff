//! Links between the host controller and the device: the wire, its rate,
//! its latency and its framing, as the driver's commands and data cross it.
//! A link direction is a timeline (see [`crate::sim::timeline::Timeline`]):
//! transfers are booked, no events.

pub mod emmc;
pub mod pcie;
pub mod sd;
pub mod ufs;
