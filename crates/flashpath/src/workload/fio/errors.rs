//! What fio does when an I/O fails (fio 3.33): `continue_on_error`,
//! `ignore_error` and `error_dump` (options.c), which errors are fatal
//! (td_error.c `td_error_type`, `td_non_fatal_error`), and the texts it
//! prints (io_u.c `__io_u_log_error`, `td_verror`).

use crate::workload::Ddir;

/// errno values fio's checks name (include/uapi/asm-generic/errno-base.h,
/// errno.h).
pub const EIO: i32 = 5;
pub const EILSEQ: i32 = 84;

/// td_error.h: the error type bits.
const READ_BIT: u32 = 0;
const WRITE_BIT: u32 = 1;
const VERIFY_BIT: u32 = 2;

/// ERROR_TYPE_ANY.
pub const ANY: u32 = 0xffff;

/// td_error.c `__NON_FATAL_ERR`: what continue_on_error lets pass when
/// ignore_error names nothing for the type.
const NON_FATAL_DEFAULT: [i32; 2] = [EIO, EILSEQ];

/// options.c str2error: the names ignore_error takes, in errno order
/// (name i is errno i + 1).
pub const ERROR_NAMES: [&str; 34] = [
    "EPERM", "ENOENT", "ESRCH", "EINTR", "EIO", "ENXIO", "E2BIG", "ENOEXEC", "EBADF", "ECHILD",
    "EAGAIN", "ENOMEM", "EACCES", "EFAULT", "ENOTBLK", "EBUSY", "EEXIST", "EXDEV", "ENODEV",
    "ENOTDIR", "EISDIR", "EINVAL", "ENFILE", "EMFILE", "ENOTTY", "ETXTBSY", "EFBIG", "ENOSPC",
    "ESPIPE", "EROFS", "EMLINK", "EPIPE", "EDOM", "ERANGE",
];

/// A job's error options.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ErrorPolicy {
    /// continue_on_error as a mask of the type bits (none 0, read 1,
    /// write 2, io 3, verify 4, all 0xffff); ignore_error sets the bit of
    /// each type it names errors for.
    pub continue_on_error: u32,
    /// ignore_error's errors per type (read, write, verify); `None` keeps
    /// fio's default list (EIO, EILSEQ).
    pub ignore: [Option<Vec<i32>>; 3],
    /// error_dump: print every error, fatal or not.
    pub error_dump: bool,
}

impl ErrorPolicy {
    /// continue_on_error's value, as options.c's posval table maps it.
    pub fn set_continue(&mut self, v: &str) {
        self.continue_on_error = match v {
            "read" => 1 << READ_BIT,
            "write" => 1 << WRITE_BIT,
            "io" => (1 << READ_BIT) | (1 << WRITE_BIT),
            "verify" => 1 << VERIFY_BIT,
            "all" | "1" => ANY,
            _ => 0,
        };
    }

    /// str_ignore_error_cb: comma-separated per type (read, write,
    /// verify), each a ':' list of names or numbers (negative numbers
    /// taken by magnitude). A type with errors listed gets its
    /// continue_on_error bit. The option's callback has checked the value.
    pub fn set_ignore(&mut self, v: &str) {
        for (etype, part) in v.trim().split(',').take(3).enumerate() {
            let errs: Vec<i32> = part
                .split(':')
                .take_while(|e| !e.is_empty())
                .map(|e| {
                    if e.starts_with('E') {
                        ERROR_NAMES
                            .iter()
                            .position(|n| *n == e)
                            .map_or(0, |i| i as i32 + 1)
                    } else {
                        let n = super::number::atoi(e);
                        n.unsigned_abs().min(i32::MAX as u64) as i32
                    }
                })
                .collect();
            if !errs.is_empty() {
                self.continue_on_error |= 1 << etype;
                self.ignore[etype] = Some(errs);
            }
        }
    }

    /// td_error_type: EILSEQ is a verify error, others a read error for a
    /// read and a write error for anything else (a trim too).
    fn error_type(ddir: Ddir, err: i32) -> u32 {
        if err == EILSEQ {
            VERIFY_BIT
        } else if ddir == Ddir::Read {
            READ_BIT
        } else {
            WRITE_BIT
        }
    }

    /// Whether continue_on_error covers the type of this error.
    pub fn covers(&self, ddir: Ddir, err: i32) -> bool {
        self.continue_on_error & (1 << Self::error_type(ddir, err)) != 0
    }

    /// td_non_fatal_error: the job goes on after this error.
    pub fn non_fatal(&self, ddir: Ddir, err: i32) -> bool {
        let t = Self::error_type(ddir, err);
        if self.continue_on_error & (1 << t) == 0 {
            return false;
        }
        match &self.ignore[t as usize] {
            Some(list) => list.contains(&err),
            None => NON_FATAL_DEFAULT.contains(&err),
        }
    }
}

pub use crate::report::fmt::strerror;

/// io_ddir_name.
pub fn ddir_name(ddir: Ddir) -> &'static str {
    match ddir {
        Ddir::Read => "read",
        Ddir::Write => "write",
        Ddir::Trim => "trim",
    }
}

/// Where fio 3.33's `td_verror` calls record an I/O error (`file:LINE,
/// func=FUNC`, then `, error=STRERROR`): __io_u_log_error when it logs
/// the error; a synchronous engine's fio_io_end after it; td_io_queue for
/// an engine's error it did not record (a trim: do_io_u_trim runs the
/// ioctl in every engine and logs nothing).
pub const AT_IO_U_ERROR: &str = "file:io_u.c:1876, func=io_u error";
pub const AT_SYNC_XFER: &str = "file:engines/sync.c:126, func=xfer";
pub const AT_TD_IO_QUEUE: &str = "file:ioengines.c:399, func=td_io_queue";

/// __io_u_log_error's line (on stderr) for an I/O of `len` bytes at
/// `offset` in `file` that failed with `err`.
pub fn io_u_error_line(file: &str, ddir: Ddir, err: i32, offset: u64, len: u32) -> String {
    format!(
        "fio: io_u error on file {file}: {}: {} offset={offset}, buflen={len}",
        strerror(err),
        ddir_name(ddir)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_is_fatal() {
        let p = ErrorPolicy::default();
        assert!(!p.non_fatal(Ddir::Read, EIO));
        assert!(!p.covers(Ddir::Read, EIO));
    }

    #[test]
    fn continue_on_error_read_covers_reads_only() {
        let mut p = ErrorPolicy::default();
        p.set_continue("read");
        assert!(p.non_fatal(Ddir::Read, EIO));
        assert!(!p.non_fatal(Ddir::Write, EIO));
        // Only EIO and EILSEQ pass by default: ENOSPC stays fatal.
        p.set_continue("all");
        assert!(!p.non_fatal(Ddir::Write, 28));
        assert!(p.non_fatal(Ddir::Trim, EIO));
        assert!(p.non_fatal(Ddir::Write, EILSEQ));
    }

    #[test]
    fn ignore_error_sets_the_type_bit_and_replaces_the_list() {
        let mut p = ErrorPolicy::default();
        p.set_ignore(",ENOSPC:95");
        assert_eq!(p.continue_on_error, 1 << WRITE_BIT);
        assert!(p.non_fatal(Ddir::Write, 28));
        assert!(p.non_fatal(Ddir::Trim, 95));
        // The write list replaces the default: EIO is fatal for writes now.
        assert!(!p.non_fatal(Ddir::Write, EIO));
        assert!(!p.non_fatal(Ddir::Read, EIO));
        p.set_ignore("-5");
        assert!(p.non_fatal(Ddir::Read, EIO));
    }

    #[test]
    fn texts_match_fio() {
        // The real fio 3.33 line for an EIO read (LD_PRELOAD fault).
        assert_eq!(
            io_u_error_line("f", Ddir::Read, EIO, 16384, 4096),
            "fio: io_u error on file f: Input/output error: read offset=16384, buflen=4096"
        );
        assert_eq!(strerror(EIO), "Input/output error");
        // A job whose continue_on_error covered no error it met prints
        // `first_error=0/<Success>`.
        assert_eq!(strerror(0), "Success");
        assert_eq!(strerror(95), "Operation not supported");
    }
}
