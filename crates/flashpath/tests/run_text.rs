//! A job given as text (`run::run_text`): messages name it as the caller
//! does and its relative files are looked for in the caller's folder, not
//! in a temporary file's.

mod common;

use flashpath::run::run_text;
use std::path::Path;

const JOB: &str = "[j]\nioengine=psync\ndirect=1\nrw=read\nbs=4k\nsize=1m\n";

#[test]
fn errors_name_the_text_and_its_line() {
    let text = "[j]\nioengine=psync\ndirect=1\nbz=4k\nsize=1m\n";
    let err = match run_text(text, "<job text>", Path::new("."), "nullblk", &[], 0) {
        Err(e) => e,
        Ok(_) => panic!("an unknown option was accepted"),
    };
    assert_eq!((err.file.as_str(), err.line), ("<job text>", Some(4)));
    assert!(err.to_string().starts_with("<job text>:4: "), "{err}");
    assert!(err.message.contains("bz"), "{err}");
}

#[test]
fn includes_and_iologs_are_relative_to_the_base_dir() {
    // A job file and a fio iolog in a folder of their own; the text names
    // both relative to that folder.
    let inc = common::write("part.fio", "rw=read\nbs=4k\nsize=64k\n");
    let dir = inc.parent().unwrap();
    std::fs::write(
        dir.join("t.iolog"),
        "fio version 2 iolog\n/dev/nullb0 add\n/dev/nullb0 open\n\
         /dev/nullb0 read 0 4096\n/dev/nullb0 read 8192 4096\n/dev/nullb0 close\n",
    )
    .unwrap();
    let with_include = "[j]\nioengine=psync\ndirect=1\ninclude part.fio\n";
    let out = run_text(with_include, "<job text>", dir, "nullblk", &[], 0).unwrap();
    assert_eq!(out.completed_ios, 16);
    let replay = "[r]\nioengine=psync\ndirect=1\nread_iolog=t.iolog\n";
    let out = run_text(replay, "<job text>", dir, "nullblk", &[], 0).unwrap();
    assert_eq!(out.completed_ios, 2);
    // From another folder the same text finds neither.
    let elsewhere = Path::new("/nonexistent-flashpath-dir");
    for text in [with_include, replay] {
        assert!(run_text(text, "<job text>", elsewhere, "nullblk", &[], 0).is_err());
    }
}

#[test]
fn ignored_options_are_listed_in_the_json_not_in_the_notes() {
    // fio prints nothing for an option flashpath ignores, so the notes
    // (printed on stderr) leave it out; the JSON's flashpath section lists it.
    let out = run_text(
        &format!("{JOB}log_store_compressed=1\n"),
        "<job text>",
        Path::new("."),
        "nullblk",
        &[],
        0,
    )
    .unwrap();
    assert_eq!(out.completed_ios, 256);
    assert!(
        !out.notes.iter().any(|n| n.contains("log_store_compressed")),
        "{:?}",
        out.notes
    );
    let listed = out.result.flashpath["ignored_options"]
        .as_array()
        .expect("ignored_options is a list");
    assert!(
        listed.iter().any(|n| n
            .as_str()
            .is_some_and(|n| n.starts_with("<job text>:") && n.contains("log_store_compressed"))),
        "{listed:?}"
    );
}

#[test]
fn a_value_part_out_of_range_is_printed_as_fio_prints_it() {
    // iodepth=-1: parse.c reads "-1" (out of range, printed), then the "1"
    // after the '-', and keeps iodepth's default of 1.
    let out = run_text(
        "[a]\nioengine=libaio\ndirect=1\nsize=64k\niodepth=-1\n",
        "<job text>",
        Path::new("."),
        "nullblk",
        &[],
        0,
    )
    .unwrap();
    assert_eq!(
        out.notes,
        vec!["iodepth: min value out of range: -1 (1 min)".to_string()]
    );
    assert_eq!(out.result.jobs[0].iodepth, 1);
}

#[test]
fn text_without_a_job_is_refused_as_fio_refuses_it() {
    for text in ["", "; a comment\n", "[global]\nrw=read\n"] {
        let err = match run_text(text, "<job text>", Path::new("."), "nullblk", &[], 0) {
            Err(e) => e,
            Ok(_) => panic!("{text:?} ran"),
        };
        assert_eq!(err.file, "<job text>");
        assert!(err.message.starts_with("No job(s) defined"), "{err}");
    }
}
