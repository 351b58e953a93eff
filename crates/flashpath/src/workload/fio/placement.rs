//! fio's data placement (fio 3.38, dataplacement.c; the options are newer
//! than the fio 3.33 the rest of this module follows): the `plids` list as
//! str_fdp_pli_cb parses it, the setup checks of dp_init, and the choice of
//! each write's placement id as dp_fill_dspec_data makes it.
//!
//! The placement reaches the device only through io_uring_cmd: fio's
//! engines/nvme.c fio_nvme_uring_cmd_prep puts DTYPE in CDW12 and DSPEC in
//! CDW13, and Linux passes the command as given (nvme_uring_cmd_io). An
//! FDP job on any other engine fails its setup: only io_uring_cmd has
//! `fdp_fetch_ruhs` (I/O Management Receive, Reclaim Unit Handle Status)
//! in fio 3.38 among the engines flashpath runs.

use super::job::{DpKind, DpSelect, IoEngine, JobFile};
use crate::error::{InputError, Result};
use crate::sim::rng::RngStream;
use crate::types::Ddir;
use crate::types::Hint;

/// FIO_MAX_DP_IDS (dataplacement.h).
pub const MAX_DP_IDS: usize = 128;

/// C's strtoull with base 0 (a `0x` prefix is hex, a leading 0 octal),
/// stored in an `unsigned int` as str_fdp_pli_cb stores it: leading
/// blanks and a sign, digits up to the first that is not one, a negative
/// value wrapped, an overflow ULLONG_MAX; no digit reads 0.
fn strtoull_uint(s: &str) -> u32 {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() && matches!(b[i], b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r') {
        i += 1;
    }
    let neg = match b.get(i) {
        Some(b'-') => {
            i += 1;
            true
        }
        Some(b'+') => {
            i += 1;
            false
        }
        _ => false,
    };
    let base = if b.get(i) == Some(&b'0')
        && matches!(b.get(i + 1), Some(b'x' | b'X'))
        && b.get(i + 2).is_some_and(|c| c.is_ascii_hexdigit())
    {
        i += 2;
        16
    } else if b.get(i) == Some(&b'0') {
        8
    } else {
        10
    };
    let mut v: u64 = 0;
    let mut overflow = false;
    while let Some(d) = b.get(i).and_then(|c| (*c as char).to_digit(base)) {
        match v
            .checked_mul(u64::from(base))
            .and_then(|x| x.checked_add(u64::from(d)))
        {
            Some(x) => v = x,
            None => overflow = true,
        }
        i += 1;
    }
    let v = if overflow {
        u64::MAX
    } else if neg {
        v.wrapping_neg()
    } else {
        v
    };
    v as u32
}

/// `plids=` / `fdp_pli=` as fio 3.38's str_fdp_pli_cb reads it: ids and
/// `a-b` ranges separated by commas (an empty part ends the list), each
/// read by strtoull, at most [`MAX_DP_IDS`], none above 0xFFFF; sorted.
/// The error is what fio prints before "failed parsing".
pub fn parse_plids(input: &str) -> std::result::Result<Vec<u16>, String> {
    let s = input.trim_matches(|c: char| c.is_ascii_whitespace());
    let mut ids: Vec<u16> = Vec::new();
    for id1 in s.split(',') {
        if id1.is_empty() {
            break;
        }
        // strsep on '-': the start is the first part, the end the last
        // non-empty one before an empty part.
        let mut parts = id1.split('-');
        let first = parts.next().unwrap_or("");
        let mut end = u32::MAX;
        if !first.is_empty() {
            end = strtoull_uint(first);
            for p in parts {
                if p.is_empty() {
                    break;
                }
                end = strtoull_uint(p);
            }
        }
        let mut start = strtoull_uint(first);
        // `end == -1` in an unsigned int: no end given.
        if end == u32::MAX {
            end = start;
        }
        if start > end {
            return Err(String::new());
        }
        while start <= end {
            if ids.len() >= MAX_DP_IDS {
                return Err(format!("fio: only {MAX_DP_IDS} IDs supported"));
            }
            if start > 0xFFFF {
                return Err("Placement IDs cannot exceed 0xFFFF".into());
            }
            ids.push(start as u16);
            start += 1;
        }
    }
    ids.sort_unstable();
    Ok(ids)
}

/// dp_init's checks and the ids it settles on, for each job that uses data
/// placement. `handles`: the placement identifiers of the namespace
/// (Reclaim Unit Handle Status), None when the disk has no FDP
/// configuration. Each FDP job's `ids` become the device's placement
/// identifiers (the job's indices into that list, or the whole list up to
/// [`MAX_DP_IDS`]). Errors are fio's, which fails the job at setup.
pub fn resolve(jobs: &mut JobFile, handles: Option<&[u16]>) -> Result<()> {
    let path = jobs.path.clone();
    for spec in &mut jobs.jobs {
        let dp = &mut spec.placement;
        let file = spec.filename.clone().unwrap_or_else(|| spec.name.clone());
        let fail = |m: String| Err(InputError::new(path.clone(), Some(spec.line), m));
        if dp.fdp && matches!(dp.kind, Some(DpKind::Streams | DpKind::None)) {
            // init.c fixup_options.
            return fail("fio: fdp=1 is not compatible with dataplacement={streams, none}".into());
        }
        match dp.kind() {
            DpKind::None => {}
            DpKind::Streams => {
                if dp.ids.is_empty() {
                    return fail(
                        "fio: stream IDs must be provided for dataplacement=streams".into(),
                    );
                }
            }
            DpKind::Fdp => {
                if spec.ioengine != IoEngine::IoUringCmd {
                    return fail(format!(
                        "{file}: engine ({}) lacks fetch ruhs; fio: ruh info failed for {file} \
                         (22)",
                        spec.ioengine.fio_name()
                    ));
                }
                let Some(plis) = handles else {
                    return fail(format!(
                        "{file}: fdp fetch ruhs failed: the namespace has no FDP configuration \
                         (I/O Management Receive fails; use a profile with device.flash.layer = \
                         \"fdp\")"
                    ));
                };
                if dp.ids.is_empty() {
                    dp.ids = plis.iter().copied().take(MAX_DP_IDS).collect();
                } else {
                    for &i in &dp.ids {
                        if usize::from(i) >= plis.len() {
                            return fail(format!(
                                "fio: for {file} PID index {i} must be smaller than {}",
                                plis.len()
                            ));
                        }
                    }
                    dp.ids = dp.ids.iter().map(|&i| plis[usize::from(i)]).collect();
                }
            }
        }
    }
    Ok(())
}

/// One thread's choice of placement id per write (dp_fill_dspec_data): its
/// ids in turn (`roundrobin`) or uniformly at random (`random`, from the
/// thread's own stream, not fio's fdp_state generator: the ids drawn
/// differ from fio's, their distribution does not).
pub struct Placer {
    kind: DpKind,
    ids: Vec<u16>,
    select: DpSelect,
    next: usize,
    rng: RngStream,
    /// Only io_uring_cmd puts the directive in the command.
    reaches_device: bool,
}

impl Placer {
    pub fn new(spec: &super::JobSpec, rng: RngStream) -> Placer {
        let dp = &spec.placement;
        Placer {
            kind: dp.kind(),
            ids: dp.ids.clone(),
            select: dp.select,
            next: 0,
            rng,
            reaches_device: spec.ioengine == IoEngine::IoUringCmd,
        }
    }

    /// The directive of the next I/O of direction `ddir`: writes only.
    pub fn next(&mut self, ddir: Ddir) -> Hint {
        if self.kind == DpKind::None || ddir != Ddir::Write || self.ids.is_empty() {
            return Hint::None;
        }
        let id = match self.select {
            DpSelect::RoundRobin => {
                if self.next >= self.ids.len() {
                    self.next = 0;
                }
                self.next += 1;
                self.ids[self.next - 1]
            }
            DpSelect::Random => self.ids[self.rng.below(self.ids.len() as u64) as usize],
        };
        match (self.reaches_device, self.kind) {
            (true, DpKind::Fdp) => Hint::Placement(id),
            // A Streams directive (DTYPE 1h): the modelled NVMe devices
            // have no Streams, and ignore it as QEMU's FDP write path
            // ignores a directive that is not Data Placement.
            _ => Hint::None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// str_fdp_pli_cb's reading, value by value as fio 3.38 takes them
    /// (the refusals are the rows of tests/fixtures/fio-verdicts/fdp-3.38.tsv).
    #[test]
    fn plids_read_as_fio_reads_them() {
        assert_eq!(parse_plids("0,1,2,3"), Ok(vec![0, 1, 2, 3]));
        assert_eq!(parse_plids("3,1-2"), Ok(vec![1, 2, 3]));
        assert_eq!(parse_plids("1,2,x"), Ok(vec![0, 1, 2]));
        assert_eq!(parse_plids("1,,2"), Ok(vec![1]));
        assert_eq!(parse_plids("0x10"), Ok(vec![16]));
        assert_eq!(parse_plids("010"), Ok(vec![8]));
        assert_eq!(parse_plids("1-"), Ok(vec![1]));
        assert_eq!(parse_plids(""), Ok(vec![]));
        assert_eq!(parse_plids("3-1"), Err(String::new()));
        assert!(parse_plids("70000").unwrap_err().contains("0xFFFF"));
        // strsep cuts "-3" before its '-': the start is strtoull("") = 0.
        assert_eq!(parse_plids("-3"), Ok(vec![0]));
        assert!(parse_plids("0-200").unwrap_err().contains("only 128"));
        assert_eq!(parse_plids("0-127").map(|v| v.len()), Ok(128));
    }
}
