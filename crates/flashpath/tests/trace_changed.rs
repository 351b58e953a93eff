//! A trace that changes between the pass that checks it and the run that
//! replays it: the run fails with a message naming the file and, where it
//! can, the line, instead of ending the replay short in silence. The run
//! is prepared (the trace checked, its reader opened), the file rewritten
//! in place, then simulated.

use flashpath::run;
use std::path::{Path, PathBuf};

/// blkparse text of `n` 4 KiB reads (queue events), 1 us apart.
fn reads(n: u64) -> String {
    (0..n)
        .map(|i| {
            format!(
                "  8,16   0 {:>8} {:>5}.{:09} 42  Q   R {} + 8 [fio]\n",
                i + 1,
                0,
                1_000 * (i + 1),
                8 * i
            )
        })
        .collect()
}

fn scratch(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "flashpath-trace-changed-{}-{name}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("t.blkparse");
    std::fs::write(&p, text).unwrap();
    p
}

/// The run's outcome (the reads it replayed, or its message) when the
/// trace's text becomes `after` once checked.
fn run_changed(name: &str, before: &str, after: &str) -> Result<u64, String> {
    let path = scratch(name, before);
    let text = format!(
        "[r]\nioengine=libaio\ndirect=1\niodepth=4\nreplay_no_stall=1\nread_iolog={}\n",
        path.display()
    );
    let dir = path.parent().unwrap_or(Path::new("."));
    let (jobs, profile) = run::load_text(&text, "j.fio", dir, "nullblk", &[]).unwrap();
    let prepared = run::prepare(&jobs, &profile, 0, &run::fio_source, dir).unwrap();
    // In place: the reader the run holds sees the new bytes.
    std::fs::write(&path, after).unwrap();
    prepared
        .run()
        .map(|out| out.result.jobs[0].dirs[0].total_ios)
        .map_err(|e| e.to_string())
}

#[test]
fn an_unchanged_trace_replays_whole() {
    assert_eq!(run_changed("same", &reads(20), &reads(20)), Ok(20));
}

#[test]
fn a_trace_cut_short_since_the_check_fails_the_run() {
    let e = run_changed("cut", &reads(20), &reads(12)).unwrap_err();
    assert!(
        e.contains("t.blkparse: the trace changed since flashpath checked it"),
        "{e}"
    );
    assert!(e.contains("it ended after 12 of the 20 I/Os it had"), "{e}");
}

#[test]
fn a_trace_grown_since_the_check_fails_at_the_first_extra_line() {
    let e = run_changed("grown", &reads(20), &reads(25)).unwrap_err();
    assert!(e.contains("t.blkparse:21: the trace changed"), "{e}");
    assert!(e.contains("it holds more than the 20 I/Os it had"), "{e}");
}

#[test]
fn a_line_broken_since_the_check_is_named() {
    let mut after = reads(20);
    after = after.replacen("Q   R 40 + 8", "Q   R 40 + x", 1);
    let e = run_changed("broken", &reads(20), &after).unwrap_err();
    assert!(e.contains("t.blkparse:6: the trace changed"), "{e}");
}

#[test]
fn an_address_moved_since_the_check_is_found() {
    let after = reads(20).replacen("Q   R 40 + 8", "Q   R 48 + 8", 1);
    let e = run_changed("moved", &reads(20), &after).unwrap_err();
    assert!(e.contains("its I/Os are not those it had"), "{e}");
    // One moved past the device's end is stopped before it is issued.
    let after = reads(20).replacen("Q   R 40 + 8", "Q   R 999999999999 + 8", 1);
    let e = run_changed("past", &reads(20), &after).unwrap_err();
    assert!(e.contains("t.blkparse:6: the trace changed"), "{e}");
    assert!(e.contains("reaches past the end of the device"), "{e}");
}
