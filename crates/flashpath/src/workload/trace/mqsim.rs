//! MQSim's ASCII traces (CMU-SAFARI/MQSim, `ASCII_Trace_Definition.h`),
//! blank-separated, one request a line:
//!
//! `arrival_time_ns device_number start_lba size_in_sectors type`
//!
//! type 0 is a write, 1 a read (`ASCII_TRACE_WRITE_CODE`,
//! `ASCII_TRACE_READ_CODE`); sectors are 512 bytes
//! (`SECTOR_SIZE_IN_BYTE`). The workload XML can change the time unit;
//! this reader takes MQSim's default, ns (another unit: `--format csv`
//! with a mapping).

use super::delimited::{fields, is_int, Header, Mapping, OpMap, Sep};

pub fn mapping() -> Mapping {
    Mapping {
        sep: Sep::Blank,
        header: Header::Lines(0),
        time: (0, 1),
        offset: (2, 512),
        len: (3, 512),
        op: (
            4,
            OpMap::Tokens {
                read: vec![b"1".to_vec()],
                write: vec![b"0".to_vec()],
                trim: vec![],
            },
        ),
        device: Some(1),
        latency: None,
    }
}

pub fn looks_like(lines: &[&str]) -> bool {
    lines.iter().all(|l| {
        let f = fields(l, Sep::Blank);
        f.len() == 5 && f[..4].iter().all(|x| is_int(x)) && matches!(f[4], "0" | "1")
    })
}
