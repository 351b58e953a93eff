//! DiskSim 4.0's ASCII input traces (DiskSim manual, "ascii" trace
//! format; the `valid/ascii.trace` file of its distribution):
//!
//! `arrival_time_ms device_number block_number request_size flags`
//!
//! blank or TAB separated; time in ms (a decimal); blocks of 512 bytes;
//! flags bit 0 set for a read (DiskSim's `READ` flag), clear for a write.

use super::delimited::{fields, is_decimal, is_int, Header, Mapping, OpMap, Sep};

pub fn mapping() -> Mapping {
    Mapping {
        sep: Sep::Blank,
        header: Header::Lines(0),
        time: (0, 1_000_000),
        offset: (2, 512),
        len: (3, 512),
        op: (4, OpMap::Bit0Read),
        device: Some(1),
        latency: None,
    }
}

pub fn looks_like(lines: &[&str]) -> bool {
    lines.iter().all(|l| {
        let f = fields(l, Sep::Blank);
        f.len() == 5 && is_decimal(f[0]) && f[1..].iter().all(|x| is_int(x))
    })
}
