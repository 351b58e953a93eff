//! The passthrough engines: fio's sg (engines/sg.c: each I/O one SG_IO
//! ioctl on a SCSI disk's block device, synchronous, FIO_SYNCIO) and
//! io_uring_cmd (engines/io_uring.c, cmd_type=nvme: NVMe commands through
//! io_uring on the namespace's generic character device). Each I/O is a
//! passthrough request that the block layer neither schedules, plugs nor
//! counts in the disk's statistics (blk_mq_insert_request,
//! blk_do_io_stat), reaching the driver as the same READ/WRITE command.

use flashpath::report::{render, OutputFormat};
use flashpath::run::run_text;
use std::path::Path;

fn run(job: &str, profile: &str, sets: &[&str]) -> flashpath::run::RunOutput {
    let o: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    run_text(job, "job.fio", Path::new("."), profile, &o, 1).expect("the job runs")
}

fn json(out: &flashpath::run::RunOutput) -> serde_json::Value {
    serde_json::from_str(&render(&out.result, OutputFormat::Json)).expect("valid JSON")
}

fn refusal(job: &str, profile: &str) -> String {
    match run_text(job, "job.fio", Path::new("."), profile, &[], 1) {
        Ok(_) => panic!("must be refused: {job}"),
        Err(e) => e.to_string(),
    }
}

/// The same reads through psync and through sg, under mq-deadline: the
/// driver sees every one of them either way, but only psync's are bios
/// the disk's statistics count (fio's disk_util), and only sg's are
/// passthrough requests.
#[test]
fn sg_requests_skip_the_scheduler_and_the_disk_statistics() {
    let job = |engine: &str| {
        format!(
            "[j]\nioengine={engine}\nrw=randread\nbs=4k\nnumber_ios=300\nfilename=/dev/sda\n\
             direct=1\nrandseed=3\n"
        )
    };
    let sets = ["block.scheduler=mq-deadline"];
    let psync = json(&run(&job("psync"), "ufs41-snapdragon", &sets));
    let sg = json(&run(&job("sg"), "ufs41-snapdragon", &sets));
    for j in [&psync, &sg] {
        assert_eq!(j["jobs"][0]["error"], 0);
        assert_eq!(j["jobs"][0]["read"]["total_ios"], 300);
        assert_eq!(j["flashpath"]["driver"]["reads"], 300);
    }
    assert_eq!(psync["disk_util"][0]["read_ios"], 300);
    assert_eq!(
        sg["disk_util"][0]["read_ios"].as_u64().unwrap_or(0),
        0,
        "passthrough requests are not in the disk's statistics"
    );
    assert_eq!(sg["flashpath"]["block"]["passthrough_requests"], 300);
    assert!(psync["flashpath"]["block"]
        .get("passthrough_requests")
        .is_none());
}

/// sg is a synchronous engine (FIO_SYNCIO): iodepth=8 still has one
/// command in flight, so it takes as long as iodepth=1, where libaio at
/// iodepth 8 on the same disk is faster.
#[test]
fn sg_keeps_one_command_in_flight_whatever_the_iodepth() {
    let job = |engine: &str, qd: u32| {
        format!(
            "[j]\nioengine={engine}\niodepth={qd}\nrw=randread\nbs=4k\nnumber_ios=400\n\
             filename=/dev/sda\ndirect=1\nrandseed=3\n"
        )
    };
    let iops = |engine: &str, qd: u32| {
        json(&run(&job(engine, qd), "ufs41-snapdragon", &[]))["jobs"][0]["read"]["iops"]
            .as_f64()
            .unwrap()
    };
    let (sg1, sg8) = (iops("sg", 1), iops("sg", 8));
    assert!((sg8 - sg1).abs() <= sg1 * 1e-9, "sg QD8 {sg8} vs QD1 {sg1}");
    let aio8 = iops("libaio", 8);
    assert!(aio8 > sg8 * 1.5, "libaio QD8 {aio8} vs sg {sg8}");
}

/// On a zoned UFS LU the device's rules still hold for a passthrough
/// write: sequential writes at the write pointer succeed, a random one
/// fails with UNALIGNED WRITE COMMAND, EIO in fio.
#[test]
fn sg_writes_on_a_zoned_lu_meet_the_zone_rules() {
    let seq = "[j]\nioengine=sg\nrw=write\nbs=64k\nsize=8m\noffset=2g\nfilename=/dev/sda\n";
    let j = json(&run(seq, "ufs40-zoned-like", &[]));
    assert_eq!(j["jobs"][0]["error"], 0);
    assert_eq!(j["jobs"][0]["write"]["total_ios"], 128);
    assert_eq!(j["flashpath"]["block"]["passthrough_requests"], 128);
    let rand = "[j]\nioengine=sg\nrw=randwrite\nbs=4k\nsize=8m\noffset=2g\nrandseed=5\n\
                filename=/dev/sda\n";
    let out = run(rand, "ufs40-zoned-like", &[]);
    assert_eq!(out.failed_jobs(), 1);
    assert_eq!(json(&out)["jobs"][0]["error"], 5);
}

/// What sg cannot do here is refused by name: a disk that is not SCSI,
/// a regular file, and I/O that is not whole logical blocks of the LU
/// (fio's examples/sg_verify.fio writes 512-byte blocks; a UFS LU's are
/// 4 KiB, and fio_sgio_prep fails such an I/O with EINVAL).
#[test]
fn sg_refusals_name_the_reason() {
    let nvme = refusal(
        "[j]\nioengine=sg\nrw=read\nbs=4k\nsize=1m\nfilename=/dev/nvme0n1\n",
        "nvme-d7p5510-3t84",
    );
    assert!(
        nvme.contains("is not a SCSI disk")
            && nvme.contains("ENOTTY")
            && nvme.contains(
                "ioengine sg unable to successfully execute read capacity to get block size \
                 and maximum lba"
            ),
        "{nvme}"
    );
    let file = refusal(
        "[j]\nioengine=sg\nrw=read\nbs=4k\nsize=1m\n",
        "ufs41-snapdragon",
    );
    assert!(
        file.contains("ioengine sg only works on block or character devices"),
        "{file}"
    );
    let verify = refusal(
        "[j]\nioengine=sg\nrw=write\nbs=512\nnumber_ios=20\nfilename=/dev/sda\n\
         sg_write_mode=verify_bytchk_01\n",
        "ufs41-snapdragon",
    );
    assert!(
        verify.contains("job.fio:1")
            && verify.contains("a 512-byte I/O is not whole 4096-byte logical blocks")
            && verify.contains("read/write not sector aligned"),
        "{verify}"
    );
    let stream = refusal(
        "[j]\nioengine=sg\nrw=write\nbs=4k\nnumber_ios=2\nfilename=/dev/sda\n\
         sg_write_mode=write_stream\n",
        "ufs41-snapdragon",
    );
    assert!(
        stream.contains("job.fio:7") && stream.contains("write_stream"),
        "{stream}"
    );
}

/// The same 20 blocks read back by READ(10) and checked by VERIFY(10)
/// with BYTCHK 0 (`sg_write_mode=verify_bytchk_00`, a write in fio's
/// accounting): both read the medium, but VERIFY has no DATA IN phase, so
/// the link carries exactly one DATA IN UPIU (header and 4 KiB) less per
/// command, and each command ends sooner.
#[test]
fn sg_verify_reads_the_medium_with_no_data_phase() {
    let job = |second: &str| {
        format!(
            "[global]\nioengine=sg\nbs=4k\nnumber_ios=20\nfilename=/dev/sda\nstonewall\n\
             [precon]\nrw=write\n[check]\n{second}\n"
        )
    };
    let read = json(&run(&job("rw=read"), "ufs21-64g", &[]));
    let verify = json(&run(
        &job("rw=write\nsg_write_mode=verify_bytchk_00"),
        "ufs21-64g",
        &[],
    ));
    for j in [&read, &verify] {
        assert_eq!(j["jobs"][0]["error"], 0);
        assert_eq!(j["jobs"][1]["error"], 0);
    }
    assert_eq!(verify["jobs"][1]["write"]["total_ios"], 20);
    assert_eq!(verify["jobs"][1]["write"]["io_bytes"], 20 * 4096);
    assert_eq!(read["flashpath"]["driver"]["reads"], 20);
    assert_eq!(verify["flashpath"]["driver"]["verifies"], 20);
    assert_eq!(verify["flashpath"]["driver"]["reads"], 0);
    // The precon job's writes are the same in both runs.
    assert_eq!(
        read["flashpath"]["driver"]["writes"],
        verify["flashpath"]["driver"]["writes"]
    );
    let up = |j: &serde_json::Value| j["flashpath"]["driver"]["link_bytes_up"].as_u64().unwrap();
    assert_eq!(up(&read) - up(&verify), 20 * (32 + 4096));
    let lat = |j: &serde_json::Value, d: &str| j["jobs"][1][d]["clat_ns"]["mean"].as_f64().unwrap();
    assert!(
        lat(&verify, "write") < lat(&read, "read"),
        "verify {} vs read {}",
        lat(&verify, "write"),
        lat(&read, "read")
    );
}

/// The commands a UFS LU does not have (WRITE SAME, WRITE AND VERIFY) and
/// VERIFY with a data compare end with CHECK CONDITION on the first
/// command; SG_IO flags it and fio's sg engine fails the I/O with EIO,
/// which ends the job (err=5).
#[test]
fn sg_commands_a_ufs_lu_lacks_fail_the_job_with_eio() {
    for mode in [
        "write_same",
        "write_same_ndob",
        "write_and_verify",
        "verify",
        "verify_bytchk_01",
        "verify_bytchk_11",
    ] {
        let job = format!(
            "[j]\nioengine=sg\nrw=write\nbs=4k\nnumber_ios=8\nfilename=/dev/sda\n\
             sg_write_mode={mode}\n"
        );
        let out = run(&job, "ufs21-64g", &[]);
        let j = json(&out);
        assert_eq!(out.failed_jobs(), 1, "{mode}");
        assert_eq!(j["jobs"][0]["error"], 5, "{mode}");
        assert_eq!(j["flashpath"]["driver"]["check_conditions"], 1, "{mode}");
        assert_eq!(
            j["flashpath"]["driver"]["writes"], 0,
            "{mode}: no data moved"
        );
        assert!(j["flashpath"]["driver"].get("verifies").is_none(), "{mode}");
    }
}

/// io_uring_cmd on a zoned namespace's generic character device: eight
/// sequential writes in flight in one zone reach the device in order as
/// passthrough commands, none of them held in a zone write plug; through
/// the block device (libaio) the plug holds all but one.
#[test]
fn io_uring_cmd_writes_skip_the_zone_write_plugs() {
    let job = |engine: &str, file: &str| {
        format!(
            "[j]\nioengine={engine}\ncmd_type=nvme\niodepth=8\nrw=write\nbs=16k\nsize=16m\n\
             filename={file}\n"
        )
    };
    let job = |engine: &str, file: &str| {
        if engine == "libaio" {
            job(engine, file).replace("cmd_type=nvme\n", "direct=1\n")
        } else {
            job(engine, file)
        }
    };
    let cmd = json(&run(
        &job("io_uring_cmd", "/dev/ng0n1"),
        "nvme-zn540-like",
        &[],
    ));
    let aio = json(&run(&job("libaio", "/dev/nvme0n1"), "nvme-zn540-like", &[]));
    for j in [&cmd, &aio] {
        assert_eq!(j["jobs"][0]["error"], 0);
        assert_eq!(j["jobs"][0]["write"]["total_ios"], 1024);
    }
    assert_eq!(cmd["flashpath"]["block"]["passthrough_requests"], 1024);
    assert_eq!(cmd["flashpath"]["block"]["zoned"]["plugged_writes"], 0);
    let plugged = aio["flashpath"]["block"]["zoned"]["plugged_writes"]
        .as_u64()
        .unwrap();
    assert!(plugged > 1000, "{plugged} of 1024 libaio writes waited");
}

/// io_uring_cmd needs an NVMe namespace's generic character device, as
/// fio 3.33 says.
#[test]
fn io_uring_cmd_refusals_name_the_reason() {
    let block = refusal(
        "[j]\nioengine=io_uring_cmd\nrw=read\nbs=4k\nsize=1m\nfilename=/dev/nvme0n1\n",
        "nvme-d7p5510-3t84",
    );
    assert!(
        block.contains("only works with nvme ns generic char devices (/dev/ngXnY)"),
        "{block}"
    );
    let ufs = refusal(
        "[j]\nioengine=io_uring_cmd\nrw=read\nbs=4k\nsize=1m\nfilename=/dev/ng0n1\n",
        "ufs41-snapdragon",
    );
    assert!(ufs.contains("failed to fetch namespace-id"), "{ufs}");
}

/// O_DIRECT through the block layer on a UFS LU (4 KiB logical blocks):
/// Linux refuses an I/O that is not whole logical blocks with EINVAL
/// (block/fops.c blkdev_dio_invalid), so a 512-byte direct job fails as
/// fio's first direct I/O does; the same job is fine buffered, and on an
/// NVMe namespace of 512-byte blocks.
#[test]
fn direct_io_must_be_whole_logical_blocks_of_the_disk() {
    let job = |bs: &str, extra: &str| {
        format!("[j]\nioengine=psync\nrw=randread\nbs={bs}\nsize=1m\nfilename=/dev/sda\n{extra}")
    };
    let small = refusal(&job("512", "direct=1\n"), "ufs41-snapdragon");
    assert!(
        small.contains("job.fio:1")
            && small.contains("block size of 512 bytes")
            && small.contains("whole 4096-byte sectors")
            && small.contains("EINVAL"),
        "{small}"
    );
    let offset = refusal(&job("4k", "direct=1\noffset=512\n"), "ufs41-snapdragon");
    assert!(
        offset.contains("offset 512") && offset.contains("4096-byte"),
        "{offset}"
    );
    for (bs, extra, profile) in [
        ("4k", "direct=1\n", "ufs41-snapdragon"),
        ("512", "direct=0\n", "ufs41-snapdragon"),
        ("512", "direct=1\n", "nvme-d7p5510-3t84"),
    ] {
        let out = json(&run(&job(bs, extra), profile, &[]));
        assert_eq!(out["jobs"][0]["error"], 0, "{bs} {extra} {profile}");
    }
}
