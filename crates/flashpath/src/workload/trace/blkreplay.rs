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

use super::delimited::{fields, Header, Mapping, OpMap, Sep};

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

/// The sniffed head has blkreplay's column line (`start ; sector; ...`):
/// that line is the format's own, so a data line after it that does not
/// parse is the reader's to name (with its line), not a reason to doubt
/// the format.
pub fn looks_like(lines: &[&str]) -> bool {
    lines.iter().any(|l| {
        let f = fields(l, Sep::Semicolon);
        f.len() >= 4 && f[0] == "start" && f[1] == "sector"
    })
}
