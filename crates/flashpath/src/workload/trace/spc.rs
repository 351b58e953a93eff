//! UMass Trace Repository / SPC traces (Financial1-2, WebSearch1-3; the
//! SPC trace file format specification 1.0.1): CSV
//!
//! `ASU,LBA,Size,Opcode,Timestamp[,...]`
//!
//! ASU is the application storage unit (the device here), LBA in 512-byte
//! blocks, Size in bytes, Opcode `r`/`R` or `w`/`W`, Timestamp in seconds
//! since the trace began (a decimal). Further fields are optional in the
//! specification and not read.

use super::delimited::{fields, is_decimal, is_int, Header, Mapping, OpMap, Sep};

pub fn mapping() -> Mapping {
    Mapping {
        sep: Sep::Comma,
        header: Header::Lines(0),
        time: (4, 1_000_000_000),
        offset: (1, 512),
        len: (2, 1),
        op: (
            3,
            OpMap::Tokens {
                read: vec![b"r".to_vec(), b"R".to_vec()],
                write: vec![b"w".to_vec(), b"W".to_vec()],
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
        f.len() >= 5
            && is_int(f[0])
            && is_int(f[1])
            && is_int(f[2])
            && matches!(f[3], "r" | "R" | "w" | "W")
            && (is_decimal(f[4]) || is_int(f[4]))
    })
}
