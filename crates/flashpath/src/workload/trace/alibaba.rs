//! Alibaba Cloud's 2020 block traces (alibaba/block-traces, README; Li et
//! al., "An In-Depth Analysis of Cloud Block Storage Workloads", IISWC
//! 2020): `io_traces.csv`, no header,
//!
//! `device_id,opcode,offset,length,timestamp`
//!
//! opcode `R` or `W`, offset and length in bytes, timestamp in
//! microseconds since the Unix epoch.

use super::delimited::{fields, is_int, Header, Mapping, OpMap, Sep};

pub fn mapping() -> Mapping {
    Mapping {
        sep: Sep::Comma,
        header: Header::Lines(0),
        time: (4, 1_000),
        offset: (2, 1),
        len: (3, 1),
        op: (
            1,
            OpMap::Tokens {
                read: vec![b"R".to_vec()],
                write: vec![b"W".to_vec()],
                trim: vec![],
            },
        ),
        device: Some(0),
        latency: None,
    }
}

pub fn looks_like(lines: &[&str]) -> bool {
    lines.iter().all(|l| {
        let f = fields(l, Sep::Comma);
        f.len() == 5
            && is_int(f[0])
            && matches!(f[1], "R" | "W")
            && is_int(f[2])
            && is_int(f[3])
            && is_int(f[4])
    })
}
