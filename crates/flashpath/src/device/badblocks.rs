//! Bad sector ranges a device fails commands on, as the kernel's own test
//! device injects them: null_blk's configfs `badblocks` attribute
//! (drivers/block/null_blk/main.c, `nullb_device_badblocks_store` takes
//! `+first-last` in 512-byte sectors; `null_handle_badblocks` fails a
//! command that touches one with BLK_STS_IOERR before any data moves).
//!
//! flashpath offers the same fault on every device kind through one
//! profile parameter, `device.badblocks`: a list of sector pairs
//! `[first, last, first, last, ...]` (inclusive, as null_blk's ranges). The
//! driver asks [`BadBlocks::status`] for each command it sends to its
//! device and reports the answer with the completion; the device still
//! spends the command's time (an assumption: a real medium error can take
//! longer, with the controller's read retries; null_blk's timer mode
//! completes a failed command after `completion_nsec` like any other).

use super::{Command, Op, Status};
use crate::error::Result;
use crate::profile::{Profile, Range};

/// The profile key.
pub const KEY: &str = "device.badblocks";

/// null_blk's table: one page of u64 entries (block/badblocks.c
/// MAX_BADBLOCKS = PAGE_SIZE / 8 = 512 ranges).
pub const MAX_RANGES: usize = 512;

/// The sector size of the ranges (SECTOR_SHIFT 9).
pub const SECTOR: u64 = 512;

crate::params! {
    /// Injected media errors, as null_blk's configfs attribute gives them.
    pub struct BadBlocksParams {
        /// Sector ranges (512-byte sectors, inclusive pairs [first, last,
        /// ...], null_blk's badblocks '+first-last') whose reads and writes
        /// fail with EIO. Absent: none.
        pub badblocks: Option<Vec<f64>> = optional list(
            "device.badblocks",
            "count",
            Range {
                min: 0.0,
                max: (u64::MAX >> 9) as f64,
                why: "a sector number (512-byte units) on the device",
            },
            2 * MAX_RANGES
        ),
    }
}

/// Sorted, non-overlapping sector ranges `[first, end)`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BadBlocks {
    ranges: Vec<(u64, u64)>,
}

impl BadBlocks {
    /// No bad sectors: every check passes without looking further.
    pub fn none() -> BadBlocks {
        BadBlocks::default()
    }

    /// The ranges `[first, last]` (inclusive sectors, first <= last), merged where they
    /// overlap or touch, as badblocks_set merges them.
    pub fn from_ranges(pairs: &[(u64, u64)]) -> BadBlocks {
        let mut r: Vec<(u64, u64)> = pairs
            .iter()
            .map(|&(a, b)| (a, b.saturating_add(1)))
            .collect();
        r.sort_unstable();
        let mut ranges: Vec<(u64, u64)> = Vec::with_capacity(r.len());
        for (s, e) in r {
            match ranges.last_mut() {
                Some(last) if s <= last.1 => last.1 = last.1.max(e),
                _ => ranges.push((s, e)),
            }
        }
        BadBlocks { ranges }
    }

    /// `device.badblocks` of the profile, if it has the key (no bad sectors
    /// otherwise).
    pub fn from_profile(p: &Profile) -> Result<BadBlocks> {
        let Some(v) = BadBlocksParams::read(p)?.badblocks else {
            return Ok(BadBlocks::none());
        };
        if v.len() % 2 != 0 || v.iter().any(|x| x.fract() != 0.0) {
            return Err(crate::error::InputError::new(
                p.file_of(KEY),
                None,
                format!(
                    "parameter '{KEY}' must be whole sector numbers in pairs [first, last, ...] \
                     (null_blk's badblocks '+first-last'); it has {} values",
                    v.len()
                ),
            ));
        }
        let pairs: Vec<(u64, u64)> = v.chunks(2).map(|c| (c[0] as u64, c[1] as u64)).collect();
        // nullb_device_badblocks_store refuses `+first-last` with first >
        // last (EINVAL): a reversed pair is a mistake, not a range.
        if let Some((i, &(first, last))) = pairs.iter().enumerate().find(|(_, &(a, b))| a > b) {
            return Err(crate::error::InputError::new(
                p.file_of(KEY),
                None,
                format!(
                    "parameter '{KEY}': pair {} is [{first}, {last}]: its first sector is past                      its last (null_blk refuses '+{first}-{last}' with EINVAL)",
                    i + 1
                ),
            ));
        }
        Ok(BadBlocks::from_ranges(&pairs))
    }

    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// Whether `len` bytes from byte `offset` touch a bad sector
    /// (badblocks_check: any overlap). A command with no data range (a
    /// flush) never does.
    pub fn hits(&self, offset: u64, len: u64) -> bool {
        if self.ranges.is_empty() || len == 0 {
            return false;
        }
        let first = offset / SECTOR;
        let end = (offset + len).div_ceil(SECTOR);
        // The first range that ends after `first`.
        let i = self.ranges.partition_point(|&(_, e)| e <= first);
        self.ranges.get(i).is_some_and(|&(s, _)| s < end)
    }

    /// The device's answer `c` to `cmd` with this fault applied: a command
    /// the device did (status Ok) fails when it touches a bad range, at
    /// the same time.
    pub fn outcome(&self, cmd: &Command, c: super::Completion) -> super::Completion {
        match c.status {
            Status::Ok => c.with_status(self.status(cmd)),
            _ => c,
        }
    }

    /// The status the device answers `cmd` with: an I/O error when it
    /// touches a bad range. null_blk checks reads, writes and discards
    /// alike (null_handle_cmd calls null_handle_badblocks for every
    /// operation but a flush).
    pub fn status(&self, cmd: &Command) -> Status {
        if cmd.op != Op::Flush && self.hits(cmd.offset, u64::from(cmd.len)) {
            Status::IoError
        } else {
            Status::Ok
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlap_is_any_shared_sector() {
        // Sectors 8..=15 (bytes 4096..8192).
        let b = BadBlocks::from_ranges(&[(8, 15)]);
        assert!(!b.hits(0, 4096));
        assert!(b.hits(4096, 4096));
        assert!(b.hits(0, 4097));
        assert!(b.hits(8191, 1));
        assert!(!b.hits(8192, 4096));
        assert!(!b.hits(4096, 0));
    }

    #[test]
    fn ranges_merge_and_sort() {
        let b = BadBlocks::from_ranges(&[(20, 30), (0, 3), (4, 7), (25, 40)]);
        assert_eq!(b.ranges, vec![(0, 8), (20, 41)]);
        assert!(b.hits(41 * 512 - 1, 1));
        assert!(!b.hits(41 * 512, 512));
        assert!(!b.hits(8 * 512, 12 * 512));
    }

    #[test]
    fn flush_never_fails() {
        let b = BadBlocks::from_ranges(&[(0, u64::MAX >> 10)]);
        let mut c = Command::new(crate::types::Ddir::Read, 0, 4096);
        assert_eq!(b.status(&c), Status::IoError);
        c.op = Op::Flush;
        assert_eq!(b.status(&c), Status::Ok);
    }
}
