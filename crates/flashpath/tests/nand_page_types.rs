//! tR per page type (`device.flash.t_read_page_type`, MQSim's LSB/CSB/MSB
//! read latencies): a lone read pays exactly its page type's tR, and equal
//! values change nothing.

mod common;

use flashpath::device::ReadByPageType;
use flashpath::run::run_file;

/// ufs21-64g with tR per page type `lsb, csb, msb` (us).
fn ufs21_with(lsb: u64, csb: u64, msb: u64) -> String {
    let text = format!(
        r#"
[profile]
name = "ufs21-page-types"
include = ["ufs21-64g.toml"]

[device.flash]
t_read_page_type = {{ value = [{lsb}, {csb}, {msb}], unit = "us", source = "test" }}
"#
    );
    common::write("ufs21-page-types.toml", &text)
        .to_string_lossy()
        .into_owned()
}

/// One 4 KiB O_DIRECT read of logical unit `lpn`, at queue depth 1.
fn one_read(lpn: u64) -> String {
    format!(
        "[r]\nfilename=/dev/sda\nrw=read\nbs=4k\nioengine=psync\ndirect=1\noffset={}\nsize=4k\n",
        lpn * 4096
    )
}

fn clat_of(profile: &str, lpn: u64) -> u64 {
    let out = common::run_job_file(profile, &one_read(lpn), &[], 1);
    let s = &out.result.jobs[0].dirs[0].clat.stat;
    assert_eq!(s.samples, 1);
    s.min
}

/// ufs21-64g's layout: 8 dies, rows of 8 slots (2 planes of 16 KiB),
/// the factory layout puts LPN `l` on die `l % 8` at slot `l / 8`.
fn lpn_on_page(page: u64) -> u64 {
    page * 8 * 8
}

#[test]
fn a_lone_read_pays_its_page_types_tr() {
    let t_read = common::ns("ufs21-64g", "device.flash.t_read") / 1000;
    let uniform = "ufs21-64g";
    let typed = ufs21_with(t_read, t_read + 20, t_read + 40);
    let tlc = ReadByPageType::Tlc([0, 0, 0]);
    // Page 0 is an LSB page, 6 a CSB page, 12 an MSB page (MQSim's rule);
    // the map page of these LPNs (map page 0) is an LSB page.
    for page in [0u32, 6, 12] {
        let extra_us = tlc.page_type(page) as u64 * 20;
        let lpn = lpn_on_page(u64::from(page));
        assert_eq!(
            clat_of(&typed, lpn),
            clat_of(uniform, lpn) + extra_us * 1000,
            "page {page}"
        );
    }
}

#[test]
fn equal_page_type_latencies_are_the_uniform_device() {
    let t_read = common::ns("ufs21-64g", "device.flash.t_read") / 1000;
    let job = "[r]\nfilename=/dev/sda\nrw=randread\nbs=4k\nioengine=libaio\niodepth=8\ndirect=1\nsize=256m\nnumber_ios=4000\n";
    let a = common::run_job_file("ufs21-64g", job, &[], 7);
    let b = common::run_job_file(&ufs21_with(t_read, t_read, t_read), job, &[], 7);
    assert_eq!(
        a.result.jobs[0].dirs[0].clat.stat,
        b.result.jobs[0].dirs[0].clat.stat
    );
}

#[test]
fn a_wrong_number_of_latencies_is_refused_by_name() {
    let text = r#"
[profile]
name = "ufs21-bad"
include = ["ufs21-64g.toml"]

[device.flash]
t_read_page_type = { value = [50, 60, 70, 80], unit = "us", source = "test" }
"#;
    let profile = common::write("ufs21-bad.toml", text);
    let job = common::write("job.fio", &one_read(0));
    let err = run_file(&job, &profile.to_string_lossy(), &[], 1)
        .err()
        .expect("four latencies must be refused")
        .to_string();
    assert!(err.contains("ufs21-bad.toml"), "{err}");
    assert!(err.contains("device.flash.t_read_page_type"), "{err}");
    assert!(err.contains("got 4"), "{err}");
}
