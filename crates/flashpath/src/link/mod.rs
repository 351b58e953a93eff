//! Links between the host controller and the device: the wire, its rate and
//! its framing. A link direction is a timeline (see
//! [`crate::device::nand::Timeline`]): transfers are booked, no events.

pub mod ufs;
