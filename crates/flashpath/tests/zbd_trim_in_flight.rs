//! zonemode=zbd: a trim (a zone reset, fio's zbd_do_io_u_trim calling the
//! BLKRESETZONE ioctl from td_io_queue) sent while the trimming job has
//! writes in flight. The thread sleeps in the ioctl until the reset
//! returns; its writes' completions wait in the ring. When a completion
//! woke it early, fio's loop went on as if the reset had returned, sent the
//! next trim, and the first reset's zone stayed locked: another job's
//! write to that zone then got `Locked` every microsecond of simulated time,
//! forever (a hang reported from `rw=trimwrite` at iodepth 4 beside a
//! writer job; fixed in machine/thread.rs fio_completion).

use flashpath::report::{render, OutputFormat};
use flashpath::run::run_text;
use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

/// The ZN540-like NAND made small: 8 zones of 64 MiB, all of it writable
/// (so a zone-sized write fits), 3 open and 4 active.
fn small_zns() -> Vec<String> {
    [
        "device.zns.zone_size=64MiB",
        "device.zns.zone_capacity=64MiB",
        "device.zns.zones=8",
        "device.zns.max_open=3",
        "device.zns.max_active=4",
    ]
    .map(String::from)
    .to_vec()
}

/// `rw=trimwrite` with zone-sized blocks at iodepth 4 (each trim is sent
/// with the previous write in flight) beside a random writer in the same
/// zones, on libaio and io_uring. The run must end: the bound is 120 s of
/// wall clock for a run that takes well under one second of it (the hang
/// never ended), so a loaded 2-core machine cannot fail it. Every zone the
/// trims reset is let go: the trim job does its 16 trims and 16 writes of
/// 64 MiB (1 GiB over the 512 MiB range), the writer its 4096 writes of
/// 64 KiB, neither fails, and the device sees no write off a write
/// pointer.
#[test]
fn a_trim_sent_with_writes_in_flight_lets_its_zone_go() {
    for engine in ["libaio", "io_uring"] {
        let job = format!(
            "[global]\nzonemode=zbd\nfilename=/dev/nvme0n1\ndirect=1\nsize=512m\nrandseed=3\n\
             ioengine={engine}\niodepth=4\n\
             [t]\nrw=trimwrite\nbs=64m\nio_size=1g\n\
             [w]\nrw=randwrite\nbs=64k\nio_size=256m\n"
        );
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let out = run_text(
                &job,
                "job.fio",
                Path::new("."),
                "nvme-zn540-like",
                &small_zns(),
                1,
            )
            .map(|o| render(&o.result, OutputFormat::Json))
            .map_err(|e| e.to_string());
            let _ = tx.send(out);
        });
        let text = rx
            .recv_timeout(Duration::from_secs(120))
            .unwrap_or_else(|_| panic!("{engine}: the run did not end (a zone left locked)"))
            .expect("the job runs");
        let j: serde_json::Value = serde_json::from_str(&text).unwrap();
        let jobs = &j["jobs"];
        assert_eq!(jobs[0]["error"], 0, "{engine}");
        assert_eq!(jobs[1]["error"], 0, "{engine}");
        assert_eq!(jobs[0]["trim"]["total_ios"], 16, "{engine}");
        assert_eq!(jobs[0]["write"]["total_ios"], 16, "{engine}");
        assert_eq!(jobs[1]["write"]["total_ios"], 4096, "{engine}");
        assert_eq!(
            j["flashpath"]["driver"]["device"]["zns"]["zone_errors"], 0,
            "{engine}"
        );
    }
}
