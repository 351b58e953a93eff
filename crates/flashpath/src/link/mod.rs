//! Links between host controllers and devices: bus modes, rates and
//! command framing.

pub mod sd;
