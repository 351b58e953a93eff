//! DMA mapping: the step between the block layer and the driver where a
//! request's pages become addresses the device can reach. Direct mapping
//! costs (almost) nothing; bounce buffering through the software IO TLB
//! (`swiotlb`) costs a slot search under an area lock, a copy in, a copy
//! out and a release.

pub mod bounce;
pub mod swiotlb;
