//! Tencent Cloud Block Storage traces (SNIA IOTTA trace set 27917; Zhang
//! et al., "OSCA", USENIX ATC 2020): CSV, no header,
//!
//! `Timestamp,Offset,Size,IOType,VolumeID`
//!
//! Timestamp in seconds (Unix epoch), Offset and Size in 512-byte
//! sectors, IOType 0 for a read and 1 for a write; the volume is the
//! device here.

use super::delimited::{fields, is_int, Header, Mapping, OpMap, Sep};

pub fn mapping() -> Mapping {
    Mapping {
        sep: Sep::Comma,
        header: Header::Lines(0),
        time: (0, 1_000_000_000),
        offset: (1, 512),
        len: (2, 512),
        op: (
            3,
            OpMap::Tokens {
                read: vec![b"0".to_vec()],
                write: vec![b"1".to_vec()],
                trim: vec![],
            },
        ),
        device: Some(4),
        latency: None,
    }
}

pub fn looks_like(lines: &[&str]) -> bool {
    lines.iter().all(|l| {
        let f = fields(l, Sep::Comma);
        f.len() == 5 && f.iter().all(|x| is_int(x)) && matches!(f[3], "0" | "1")
    })
}
