//! blkreplay's `.load` files (schoebel/blkreplay, made by
//! `scripts/conv_blktrace_to_load.sh` with
//! `blkparse -f '%2a ; %6T.%9t ; %12S ; %4n ; %3d ; 0.0 ; 0.0\n'`, the
//! action column cut): a free-text header (copyright, provenance) ending
//! with the column line `start ; sector; length ; op ; replay_delay ;
//! replay_duration`, then
//!
//! `start_s ; sector ; sectors ; R|W ; delay ; duration`
//!
//! with blanks around the `;`. Sectors are 512 bytes. The delay and
//! duration columns are what blkreplay measured when it replayed the file
//! (0.0 in a file converted from blktrace); they are not read.

use super::delimited::{fields, is_decimal, is_int, Header, Mapping, OpMap, Sep};

pub fn mapping() -> Mapping {
    Mapping {
        sep: Sep::Semicolon,
        header: Header::UntilPrefix(b"start".to_vec()),
        time: (0, 1_000_000_000),
        offset: (1, 512),
        len: (2, 512),
        op: (
            3,
            OpMap::Tokens {
                read: vec![b"R".to_vec()],
                write: vec![b"W".to_vec()],
                trim: vec![],
            },
        ),
        device: None,
        latency: None,
    }
}

/// All lines of the sniffed head: a column line `start ; sector ...`
/// followed by data lines of that shape.
pub fn looks_like(lines: &[&str]) -> bool {
    let Some(h) = lines
        .iter()
        .position(|l| l.trim_start().starts_with("start") && l.contains(';'))
    else {
        return false;
    };
    let data: Vec<&&str> = lines[h + 1..]
        .iter()
        .filter(|l| !l.trim().is_empty())
        .take(50)
        .collect();
    !data.is_empty()
        && data.iter().all(|l| {
            let f = fields(l, Sep::Semicolon);
            f.len() == 6
                && is_decimal(f[0])
                && is_int(f[1])
                && is_int(f[2])
                && matches!(f[3], "R" | "W")
        })
}
