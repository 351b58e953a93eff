//! Reading the files a user names (job files, includes, profiles, iologs)
//! with a bound on their size: `include /dev/zero` or a profile that names
//! a device node must end in a message, not read until memory runs out.

use std::io::Read;
use std::path::Path;

/// Read at most `limit` bytes of `path`; a longer file is an error that
/// says so (`what` names the kind of file and why the bound is what it
/// is). Special files are read the same way: `/dev/zero` fails after
/// `limit` bytes.
pub fn read_bounded(path: &Path, limit: u64, what: &str) -> Result<Vec<u8>, String> {
    // Checked before opening: open(2) on a FIFO blocks until a writer
    // comes (fifo_open in fs/pipe.c), so a profile or job file that is a
    // named pipe would hang the run instead of ending in a message.
    if let Some(kind) = std::fs::metadata(path)
        .ok()
        .and_then(|m| unreadable_kind(&m))
    {
        return Err(format!(
            "is {kind}, not a regular file: opening it would wait for a writer; copy it to a file"
        ));
    }
    let file = std::fs::File::open(path).map_err(|e| e.to_string())?;
    if file.metadata().map(|m| m.is_dir()).unwrap_or(false) {
        return Err("is a directory".into());
    }
    let mut bytes = Vec::new();
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| e.to_string())?;
    if bytes.len() as u64 > limit {
        return Err(format!("longer than {} ({what})", human_bytes(limit)));
    }
    Ok(bytes)
}

/// A file kind that cannot be read as an input without blocking (a FIFO)
/// or at all (a socket), by name.
#[cfg(unix)]
fn unreadable_kind(m: &std::fs::Metadata) -> Option<&'static str> {
    use std::os::unix::fs::FileTypeExt;
    let t = m.file_type();
    if t.is_fifo() {
        Some("a FIFO (named pipe)")
    } else if t.is_socket() {
        Some("a socket")
    } else {
        None
    }
}

#[cfg(not(unix))]
fn unreadable_kind(_: &std::fs::Metadata) -> Option<&'static str> {
    None
}

fn human_bytes(n: u64) -> String {
    match n {
        n if n >= 1 << 30 && n.is_multiple_of(1 << 30) => format!("{} GiB", n >> 30),
        n if n >= 1 << 20 && n.is_multiple_of(1 << 20) => format!("{} MiB", n >> 20),
        n if n >= 1 << 10 && n.is_multiple_of(1 << 10) => format!("{} KiB", n >> 10),
        n => format!("{n} bytes"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_device_node_without_end_is_cut_at_the_limit() {
        let e = read_bounded(Path::new("/dev/zero"), 1 << 20, "a job file").unwrap_err();
        assert_eq!(e, "longer than 1 MiB (a job file)");
    }

    #[test]
    fn a_file_within_the_limit_reads_whole() {
        let dir = std::env::temp_dir().join(format!("fp-input-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("four");
        std::fs::write(&f, b"1234").unwrap();
        assert_eq!(read_bounded(&f, 4, "x").unwrap(), b"1234");
        assert_eq!(
            read_bounded(&f, 3, "x").unwrap_err(),
            "longer than 3 bytes (x)"
        );
        assert_eq!(read_bounded(&dir, 3, "x").unwrap_err(), "is a directory");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn a_fifo_is_refused_without_waiting_for_a_writer() {
        let dir = std::env::temp_dir().join(format!("fp-input-fifo-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("pipe.toml");
        let status = std::process::Command::new("mkfifo")
            .arg(&f)
            .status()
            .unwrap();
        assert!(status.success());
        // Without the check this open(2) would block forever: no writer.
        let e = read_bounded(&f, 1 << 20, "x").unwrap_err();
        assert!(
            e.starts_with("is a FIFO (named pipe), not a regular file"),
            "{e}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
