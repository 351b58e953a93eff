//! SNIA IOTTA "MSR Cambridge" block traces (Narayanan, Donnelly, Rowstron,
//! "Write off-loading", FAST 2008; SNIA IOTTA trace set 388): CSV without
//! a header,
//!
//! `Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime`
//!
//! Timestamp is a Windows FILETIME (100 ns ticks since 1601-01-01);
//! ResponseTime is in the same ticks; Type is `Read` or `Write`; Offset
//! and Size are bytes. The device is DiskNumber (the hostname names the
//! server, one per file in the published set).

use super::delimited::{fields, is_int, Header, Mapping, OpMap, Sep};

pub fn mapping() -> Mapping {
    Mapping {
        sep: Sep::Comma,
        header: Header::Lines(0),
        time: (0, 100),
        offset: (4, 1),
        len: (5, 1),
        op: (
            3,
            OpMap::Tokens {
                read: vec![b"Read".to_vec()],
                write: vec![b"Write".to_vec()],
                trim: vec![],
            },
        ),
        device: Some(2),
        latency: Some((6, 100)),
    }
}

pub fn looks_like(lines: &[&str]) -> bool {
    lines.iter().all(|l| {
        let f = fields(l, Sep::Comma);
        f.len() == 7
            && is_int(f[0])
            && f[0].len() >= 17
            && matches!(f[3], "Read" | "Write")
            && is_int(f[4])
            && is_int(f[5])
            && is_int(f[6])
    })
}
