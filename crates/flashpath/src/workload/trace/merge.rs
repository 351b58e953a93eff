//! fio's `merge_blktrace_file`: the blktrace files `read_iolog` lists
//! (separated by `:`) merged into one, which the job then replays, as fio's
//! blktrace.c `merge_blktrace_iologs` does it:
//!
//! - of each file only its queue events (`Q`) with a direction (read,
//!   write or discard category) are kept (`read_trace`);
//! - file `i` is read `merge_blktrace_iters[i]` times (default 1), and each
//!   kept event's time becomes `(time + iter * length) * scalar / 100`,
//!   `scalar` = `merge_blktrace_scalars[i]` (default 100) and `length` the
//!   time of the file's last record as its first pass left it;
//! - the earliest event of all files goes out first (`find_earliest_io`:
//!   the lowest index wins a tie, and a finished file's slot is taken by
//!   the last one, `merge_finish_file`), written as a bare record
//!   (`write_trace`: pdu_len 0) in this machine's byte order.
//!
//! fio 3.33 itself never merges: its `read_trace` reads 8 bytes into the
//! record pointer instead of a record (`fread(&t, 1, sizeof(t), ...)`), so
//! each merge ends at once with "fio: iolog short read", leaving the merged
//! file empty (fixed in fio commit c55d29ef, 2026). flashpath does what the
//! fixed code does, record for record: at the end of a pass that is not a
//! file's last, fio's cursor still holds the record it read last after
//! `merge_finish_file` rewinds the file (read_trace's fread at the end
//! leaves it), so that record (a completion, most often, with its own
//! time) takes part in the merge and is written once more; flashpath
//! writes it too. The fixed fio leaves each cursor's `iter` and `length`
//! as malloc left them (`bcs` is not zeroed); flashpath starts them at 0,
//! as fio does when that memory is zero (`MALLOC_PERTURB_=255` makes it
//! so, and then the fixed fio's merged file and flashpath's are the same
//! bytes: tests/test_trace_fio.py).

use super::blktrace::{magic_endian, read_full, RECORD};
use crate::error::{InputError, Result};
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

/// BLK_TC_ACT(BLK_TC_READ | BLK_TC_WRITE | BLK_TC_DISCARD): the
/// categories blktrace.c `t_get_ddir` gives a direction.
const DDIR_CATEGORIES: u32 = ((1 << 0) | (1 << 1) | (1 << 13)) << 16;
const TA_QUEUE: u32 = 1;

/// The names in a `read_iolog` value, as fio's options.c `get_next_str`
/// splits it: at each `:` not escaped by a `\` (which is dropped), empty
/// names skipped.
pub fn split_names(value: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut chars = value.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&':') => {
                cur.push(':');
                chars.next();
            }
            ':' => {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
            }
            _ => cur.push(c),
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// blktrace.c `init_merge_param_list`: the list's entries up to its first
/// 0, each cut to an integer; none gives every file `default`. A list of
/// another length than the files is refused with fio's message.
pub fn per_file(
    values: &[f64],
    files: usize,
    default: u64,
    option: &str,
) -> std::result::Result<Vec<u64>, String> {
    let given: Vec<u64> = values
        .iter()
        .take_while(|v| **v != 0.0)
        .map(|v| *v as u64)
        .collect();
    if given.is_empty() {
        return Ok(vec![default; files]);
    }
    if given.len() != files {
        return Err(format!(
            "{option}({}) != nr_logs({files}) (fio's message): give one value per file \
             read_iolog lists, or none",
            given.len()
        ));
    }
    Ok(given)
}

/// One input file being read (fio's `struct blktrace_cursor`).
struct Cursor {
    name: String,
    path: PathBuf,
    input: BufReader<std::fs::File>,
    big_endian: bool,
    /// The current record (native byte order) and its time after the
    /// transform.
    rec: [u8; RECORD],
    time: u64,
    /// The time of the file's last record, as its first pass left it.
    length: Option<u64>,
    scalar: u64,
    iter: u64,
    iters: u64,
    /// Records read in this pass, for messages.
    records: u64,
    /// `rec` holds a record (the last one read, kept or not).
    held: bool,
}

impl Cursor {
    fn u32_at(&self, b: &[u8; RECORD], i: usize) -> u32 {
        let v: [u8; 4] = b[i..i + 4].try_into().unwrap_or_default();
        if self.big_endian {
            u32::from_be_bytes(v)
        } else {
            u32::from_le_bytes(v)
        }
    }

    fn u64_at(&self, b: &[u8; RECORD], i: usize) -> u64 {
        let v: [u8; 8] = b[i..i + 8].try_into().unwrap_or_default();
        if self.big_endian {
            u64::from_be_bytes(v)
        } else {
            u64::from_le_bytes(v)
        }
    }

    fn error(&self, msg: String) -> InputError {
        InputError::new(&self.name, None, msg)
    }

    /// The next kept event (read_trace); false at the end of the file.
    fn read(&mut self) -> Result<bool> {
        loop {
            let mut h = [0u8; RECORD];
            let got = read_full(&mut self.input, &mut h)
                .map_err(|e| self.error(format!("cannot read: {e}")))?;
            if got == 0 {
                // fio: bc->length = bc->t.time, once, at the first end.
                if self.length.is_none() {
                    self.length = Some(self.time);
                }
                return Ok(false);
            }
            self.records += 1;
            if got < RECORD {
                // fio: "iolog short read".
                return Err(self.error(format!(
                    "record {}: truncated: {got} of the record's {RECORD} bytes (fio: iolog \
                     short read)",
                    self.records
                )));
            }
            if magic_endian(&h[..4]) != Some(self.big_endian) {
                return Err(self.error(format!(
                    "record {}: wrong magic {:02x}{:02x}{:02x}{:02x}: not a blktrace record, or \
                     the previous record's pdu_len is wrong",
                    self.records, h[0], h[1], h[2], h[3]
                )));
            }
            let pdu = usize::from(if self.big_endian {
                u16::from_be_bytes([h[46], h[47]])
            } else {
                u16::from_le_bytes([h[46], h[47]])
            });
            if pdu > 0 {
                let got = std::io::copy(
                    &mut (&mut self.input).take(pdu as u64),
                    &mut std::io::sink(),
                )
                .map_err(|e| self.error(format!("cannot read: {e}")))?;
                if got < pdu as u64 {
                    return Err(self.error(format!(
                        "record {}: truncated: {got} of its {pdu}-byte payload (pdu_len)",
                        self.records
                    )));
                }
            }
            let action = self.u32_at(&h, 28);
            let time = self.u64_at(&h, 8);
            if action & 0xffff != TA_QUEUE || action & DDIR_CATEGORIES == 0 {
                // fio keeps the skipped record in its cursor: a file's
                // length is the time of its last record, whatever it is,
                // and a pass that ends on it writes it once more.
                self.time = time;
                self.rec = native(&h, self.big_endian, time);
                self.held = true;
                continue;
            }
            let shifted = time.wrapping_add(self.iter.wrapping_mul(self.length.unwrap_or(0)));
            self.time = shifted.wrapping_mul(self.scalar) / 100;
            self.rec = native(&h, self.big_endian, self.time);
            self.held = true;
            return Ok(true);
        }
    }

    /// merge_finish_file: another pass from the start, or the end (false).
    fn next_pass(&mut self) -> Result<bool> {
        self.iter += 1;
        if self.iter >= self.iters {
            return Ok(false);
        }
        let f = std::fs::File::open(&self.path)
            .map_err(|e| self.error(format!("cannot open the trace again: {e}")))?;
        self.input = BufReader::new(f);
        self.records = 0;
        Ok(true)
    }
}

/// A record in this machine's (little-endian) byte order with its new
/// time and no payload (fio's byteswap_trace, then write_trace).
fn native(h: &[u8; RECORD], big_endian: bool, time: u64) -> [u8; RECORD] {
    let mut out = *h;
    if big_endian {
        // u32 magic, sequence; u64 time, sector; u32 bytes, action, pid,
        // device, cpu; u16 error, pdu_len.
        for (at, width) in [
            (0, 4),
            (4, 4),
            (8, 8),
            (16, 8),
            (24, 4),
            (28, 4),
            (32, 4),
            (36, 4),
            (40, 4),
            (44, 2),
            (46, 2),
        ] {
            out[at..at + width].reverse();
        }
    }
    out[8..16].copy_from_slice(&time.to_le_bytes());
    out[46..48].copy_from_slice(&[0, 0]);
    out
}

/// Merge `inputs` (paths) into `out` with per-file `scalars` and `iters`
/// (as [`per_file`] gives them); the events written.
pub fn merge(inputs: &[PathBuf], scalars: &[u64], iters: &[u64], out: &Path) -> Result<u64> {
    let out_name = out.display().to_string();
    for p in inputs {
        if std::fs::canonicalize(p).ok() == std::fs::canonicalize(out).ok()
            && std::fs::canonicalize(out).is_ok()
        {
            return Err(InputError::new(
                &out_name,
                None,
                "merge_blktrace_file names one of the traces read_iolog merges: writing the \
                 merge would destroy it",
            ));
        }
    }
    let mut cursors = Vec::with_capacity(inputs.len());
    for (i, p) in inputs.iter().enumerate() {
        let name = p.display().to_string();
        super::check_regular(p)?;
        let f = std::fs::File::open(p).map_err(|e| {
            InputError::new(
                &name,
                None,
                format!("could not open file (fio's message): {e}"),
            )
        })?;
        let mut input = BufReader::new(f);
        let mut head = [0u8; 4];
        let got = read_full(&mut input, &mut head)
            .map_err(|e| InputError::new(&name, None, format!("cannot read: {e}")))?;
        let big_endian = magic_endian(&head[..got]).ok_or_else(|| {
            InputError::new(
                &name,
                None,
                "file is not a blktrace (fio's message): merge_blktrace_file merges blktrace \
                 binary files only",
            )
        })?;
        let f = std::fs::File::open(p)
            .map_err(|e| InputError::new(&name, None, format!("cannot open: {e}")))?;
        cursors.push(Cursor {
            name,
            path: p.clone(),
            input: BufReader::new(f),
            big_endian,
            rec: [0; RECORD],
            time: 0,
            length: None,
            scalar: scalars.get(i).copied().unwrap_or(100),
            iter: 0,
            iters: iters.get(i).copied().unwrap_or(1).max(1),
            records: 0,
            held: false,
        });
    }
    // Each file's first event; a file with none (and no more passes) is
    // done before the merge starts.
    let mut i = 0;
    while i < cursors.len() {
        if first_event(&mut cursors[i], false)? {
            i += 1;
        } else {
            cursors.swap_remove(i);
        }
    }
    let file = std::fs::File::create(out).map_err(|e| {
        InputError::new(
            &out_name,
            None,
            format!("cannot write the merged trace (merge_blktrace_file): {e}"),
        )
    })?;
    let mut w = BufWriter::with_capacity(128 * 1024, file);
    let mut written = 0u64;
    while !cursors.is_empty() {
        // find_earliest_io: the lowest time, the lowest index on a tie.
        let mut best = 0;
        for (k, c) in cursors.iter().enumerate() {
            if c.time < cursors[best].time {
                best = k;
            }
        }
        w.write_all(&cursors[best].rec).map_err(|e| {
            InputError::new(
                &out_name,
                None,
                format!("cannot write the merged trace: {e}"),
            )
        })?;
        written += 1;
        if !first_event(&mut cursors[best], true)? {
            // merge_finish_file: the last file takes the finished one's slot.
            cursors.swap_remove(best);
        }
    }
    w.flush().map_err(|e| {
        InputError::new(
            &out_name,
            None,
            format!("cannot write the merged trace: {e}"),
        )
    })?;
    Ok(written)
}

/// The cursor's next event, across its passes; false when it has none.
/// In the merge (`stale`), a pass that ends with another to come gives
/// the record the cursor still holds, as fio's loop writes it once more.
/// (Before the merge, fio's setup loop mishandles a file without one
/// event to keep and several passes, overwriting its cursor with the next
/// file's; flashpath reads such a file's next pass instead.)
fn first_event(c: &mut Cursor, stale: bool) -> Result<bool> {
    loop {
        if c.read()? {
            return Ok(true);
        }
        if !c.next_pass()? {
            return Ok(false);
        }
        if stale && c.held {
            return Ok(true);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_split_as_fio_splits_them() {
        assert_eq!(split_names("a:b"), ["a", "b"]);
        assert_eq!(split_names(":a::b:"), ["a", "b"]);
        assert_eq!(split_names("a\\:b:c"), ["a:b", "c"]);
        assert_eq!(split_names("one"), ["one"]);
    }

    #[test]
    fn per_file_lists_stop_at_their_first_zero() {
        assert_eq!(per_file(&[], 2, 100, "s").unwrap(), [100, 100]);
        assert_eq!(per_file(&[50.7, 100.0], 2, 100, "s").unwrap(), [50, 100]);
        assert_eq!(per_file(&[0.0, 5.0], 2, 1, "s").unwrap(), [1, 1]);
        let e = per_file(&[50.0], 2, 100, "merge_blktrace_scalars").unwrap_err();
        assert!(e.contains("merge_blktrace_scalars(1) != nr_logs(2)"), "{e}");
    }
}
