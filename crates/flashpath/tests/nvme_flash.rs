//! The NVMe flash SSD (device/nvme_flash.rs): its front end's mechanisms
//! (Flush, FUA, MDTS, command slots), its profiles against MQSim's
//! configuration and the drives' datasheets, its counters in the JSON, and
//! every example job on every NVMe flash profile.

mod common;

use flashpath::device::nvme_flash::{NvmeDevice, NvmeFlashSsd};
use flashpath::device::{BlockBackend, Command, FlashDevice, Op, Status};
use flashpath::driver::DriverRq;
use flashpath::run::RunOutput;
use flashpath::workload::Ddir;

const PROFILES: [&str; 3] = ["mqsim-default", "nvme-970evoplus-1tb", "nvme-d7p5510-3t84"];

fn ssd(profile: &str, sets: &[&str]) -> NvmeFlashSsd {
    NvmeFlashSsd::from_profile(&common::profile(profile, sets), 0).unwrap()
}

/// The program time of a host row: SLC mode while the drive's SLC cache
/// has room (it has, in these short tests), else the NAND's tPROG.
fn row_prog(d: &NvmeFlashSsd) -> u64 {
    ftl(d)
        .params()
        .slc
        .map_or(ftl(d).nand().timing.t_prog, |s| s.t_prog)
}

/// The SSD's page-mapping FTL (every profile here has one).
fn ftl(d: &NvmeFlashSsd) -> &FlashDevice {
    d.layer_as::<FlashDevice>().expect("the page FTL")
}

fn write(at: u64, offset: u64, len: u32) -> (u64, Command) {
    (at, Command::new(Ddir::Write, offset, len))
}

#[test]
fn flush_waits_until_cached_writes_are_on_nand() {
    let mut d = ssd("nvme-970evoplus-1tb", &[]);
    let t_prog = row_prog(&d);
    // 16 KiB: less than one page row of one die, so it stays in the cache.
    let (at, cmd) = write(0, 0, 16384);
    let written = d.submit(at, &cmd).at;
    assert!(
        written < t_prog,
        "a cached write completes before any program: {written}"
    );
    let flushed = d.flush(written);
    assert!(
        flushed >= written + t_prog,
        "the flush waits for the program: {flushed} vs {written} + {t_prog}"
    );
    // Nothing left in the cache: the next flush is the decode alone.
    let fw = d.params().fw_cmd;
    assert_eq!(d.flush(flushed + 1), flushed + 1 + fw);
    assert_eq!(d.stats.flushes, 2);
    // Through the BlockBackend interface a Flush is the same command.
    let again = d.submit(written, &cmd).at;
    let cmd = Command {
        op: Op::Flush,
        offset: 0,
        len: 0,
        hint: Default::default(),
        fua: false,
    };
    assert!(d.submit(again, &cmd).at >= again + t_prog);
}

#[test]
fn fua_write_goes_through_to_nand_and_a_protected_cache_needs_no_flush() {
    let mut d = ssd("nvme-970evoplus-1tb", &[]);
    let t_prog = row_prog(&d);
    let plain = d.submit(0, &Command::new(Ddir::Write, 0, 4096)).at;
    let mut d = ssd("nvme-970evoplus-1tb", &[]);
    let fua = d.write_fua(0, 0, 4096);
    assert!(plain < t_prog && fua >= t_prog, "plain {plain}, FUA {fua}");
    assert_eq!(d.stats.fua_writes, 1);

    // Power-loss protected (VWC = 0): a write is durable once buffered, so
    // FUA adds nothing and a Flush is its decode alone.
    let mut p = ssd("nvme-d7p5510-3t84", &[]);
    assert!(!p.params().volatile_write_cache);
    let w = p.submit(0, &Command::new(Ddir::Write, 0, 16384)).at;
    let mut q = ssd("nvme-d7p5510-3t84", &[]);
    assert_eq!(q.write_fua(0, 0, 16384), w);
    assert_eq!(p.flush(w), w + p.params().fw_cmd);
}

#[test]
fn the_driver_request_carries_its_operation_and_fua_to_the_device() {
    let flush = DriverRq {
        tag: 0,
        op: Op::Flush,
        fua: false,
        ddir: Ddir::Write,
        offset: 0,
        len: 0,
        polled: false,
        cpu: 0,
        ioprio: 0,
        hint: flashpath::device::Hint::None,
    };
    assert_eq!(flush.command().op, Op::Flush);
    let write = DriverRq {
        op: Op::Write,
        len: 4096,
        ..flush
    };
    let fua = DriverRq { fua: true, ..write };
    assert!(fua.command().fua && !write.command().fua);
    let mut d = ssd("nvme-970evoplus-1tb", &[]);
    let t_prog = row_prog(&d);
    let plain = d.submit(0, &write.command()).at;
    let mut d = ssd("nvme-970evoplus-1tb", &[]);
    let through = d.submit(0, &fua.command()).at;
    // The FUA bit on the command is the FUA write: on NAND at completion.
    assert!(
        plain < t_prog && through >= t_prog,
        "plain {plain}, FUA {through}"
    );
    assert_eq!(d.stats.fua_writes, 1);
    // An operation the device lacks is answered, not ignored.
    let zeroes = DriverRq {
        op: Op::WriteZeroes,
        ..write
    };
    assert_eq!(d.submit(0, &zeroes.command()).status, Status::Unsupported);
}

/// fio's fsync=N on a direct job is blkdev_fsync's flush (REQ_OP_FLUSH):
/// on a drive with a volatile write cache every sync reaches the device
/// and waits for the cached writes to be on NAND; on a power-loss
/// protected drive (VWC = 0) the block layer ends it before the driver.
#[test]
fn fsync_of_direct_writes_flushes_a_volatile_cache_and_skips_a_protected_one() {
    let job = "[j]\nfilename=/dev/nvme0n1\nioengine=psync\ndirect=1\nrw=write\nbs=4k\n\
               size=1m\nfsync=4\n";
    let out = common::run_str("nvme-970evoplus-1tb", job, &[], 0);
    let j = &out.result.jobs[0];
    // The real fio 3.33's count: 256 writes, a sync after every 4th
    // but the last (63).
    assert_eq!(j.dirs[1].total_ios, 256);
    assert_eq!(j.sync_lat.stat.samples, 63);
    let dev = &out.result.flashpath["driver"]["device"];
    assert_eq!(dev["front_end"]["flushes"], 63, "{dev}");
    // Four 4 KiB writes sit in the cache (less than a page row of a die):
    // each flush waits for their program in SLC mode.
    let d = ssd("nvme-970evoplus-1tb", &[]);
    let prog = row_prog(&d);
    assert!(
        j.sync_lat.stat.min >= prog,
        "sync {} < program {prog}",
        j.sync_lat.stat.min
    );
    // The disk's statistics count the writes, not the flushes (blk-flush's
    // flush request is not accounted).
    assert_eq!(out.result.disks[0].write_ios, 256);

    let out = common::run_str("nvme-d7p5510-3t84", job, &[], 0);
    let j = &out.result.jobs[0];
    assert_eq!(j.sync_lat.stat.samples, 63);
    let dev = &out.result.flashpath["driver"]["device"];
    assert_eq!(dev["front_end"]["flushes"], 0, "{dev}");
    assert!(
        j.sync_lat.stat.max < 10_000,
        "no device work: {} ns",
        j.sync_lat.stat.max
    );
    // end_fsync is one more flush at the end.
    let out = common::run_str(
        "nvme-970evoplus-1tb",
        "[j]\nfilename=/dev/nvme0n1\nioengine=libaio\niodepth=4\ndirect=1\nrw=write\n\
         bs=4k\nsize=64k\nend_fsync=1\n",
        &[],
        0,
    );
    let dev = &out.result.flashpath["driver"]["device"];
    assert_eq!(dev["front_end"]["flushes"], 1, "{dev}");
}

/// sync=1 (O_SYNC) on a direct job: every write carries REQ_FUA
/// (block/fops.c dio_bio_write_op), which an NVMe drive with a volatile
/// cache honours (the write completes once on NAND) and a block layer in
/// front of a power-loss protected one drops (no cache to write through).
#[test]
fn o_sync_direct_writes_are_fua_writes_where_the_cache_is_volatile() {
    let job = |sync: &str| {
        format!(
            "[j]\nfilename=/dev/nvme0n1\nioengine=psync\ndirect=1\nrw=randwrite\nbs=4k\n\
             size=64m\nnumber_ios=200\nsync={sync}\n"
        )
    };
    let d = ssd("nvme-970evoplus-1tb", &[]);
    let prog = row_prog(&d);
    let fua = common::run_str("nvme-970evoplus-1tb", &job("1"), &[], 0);
    let plain = common::run_str("nvme-970evoplus-1tb", &job("0"), &[], 0);
    let dev = &fua.result.flashpath["driver"]["device"];
    assert_eq!(dev["front_end"]["fua_writes"], 200, "{dev}");
    let dev = &plain.result.flashpath["driver"]["device"];
    assert_eq!(dev["front_end"]["fua_writes"], 0, "{dev}");
    let clat = |o: &RunOutput| o.result.jobs[0].dirs[1].clat.stat.min;
    assert!(
        clat(&fua) >= prog && clat(&plain) < prog,
        "FUA {} plain {} program {prog}",
        clat(&fua),
        clat(&plain)
    );
    // dsync is the same on a block device (iocb_is_dsync).
    let dsync = common::run_str("nvme-970evoplus-1tb", &job("dsync"), &[], 0);
    assert_eq!(
        dsync.result.flashpath["driver"]["device"]["front_end"]["fua_writes"],
        200
    );
    // VWC = 0: REQ_FUA is dropped (blk_insert_flush), nothing changes.
    let a = common::run_str("nvme-d7p5510-3t84", &job("1"), &[], 0);
    let b = common::run_str("nvme-d7p5510-3t84", &job("0"), &[], 0);
    assert_eq!(
        a.result.flashpath["driver"]["device"]["front_end"]["fua_writes"],
        0
    );
    assert_eq!(clat(&a), clat(&b));
    // A buffered O_SYNC job is refused by name.
    let p = common::profile("nvme-970evoplus-1tb", &[]);
    let jobs = common::parse(
        "[j]\nfilename=/dev/nvme0n1\nioengine=psync\nrw=write\nbs=4k\nsize=1m\nsync=1\n",
        &p,
    );
    match flashpath::run::run_jobs(&jobs, &p, 0, &flashpath::run::fio_source) {
        Err(e) => assert!(e.to_string().contains("sync=1"), "{e}"),
        Ok(_) => panic!("buffered sync=1 ran"),
    }
}

#[test]
fn commands_over_mdts_are_served_as_mdts_pieces() {
    let mut d = ssd("nvme-d7p5510-3t84", &[]);
    assert_eq!(d.params().mdts, 128 * 1024);
    d.submit(0, &Command::new(Ddir::Read, 0, 1 << 20));
    assert_eq!(
        (d.stats.commands, d.stats.pieces, d.stats.mdts_splits),
        (1, 8, 7)
    );
    // A request of MDTS or less is one piece; a partial last piece counts.
    d.submit(10_000_000, &Command::new(Ddir::Write, 0, 128 * 1024));
    d.submit(20_000_000, &Command::new(Ddir::Write, 0, 128 * 1024 + 4096));
    assert_eq!((d.stats.commands, d.stats.pieces), (3, 8 + 1 + 2));
    // A trim carries no data: never split.
    d.submit(30_000_000, &Command::new(Ddir::Trim, 0, 8 << 20));
    assert_eq!(d.stats.pieces, 12);
}

#[test]
fn one_command_slot_serialises_commands() {
    // Two controller cores, so that the second command's decode does not
    // wait for the first's: the slot alone serialises them.
    let mut one = ssd(
        "nvme-970evoplus-1tb",
        &["device.nvme.cmd_slots=1", "device.nvme.fw_cores=2"],
    );
    let mut many = ssd("nvme-970evoplus-1tb", &["device.nvme.fw_cores=2"]);
    // Two reads of different dies, arriving together.
    let a = Command::new(Ddir::Read, 0, 4096);
    let b = Command::new(Ddir::Read, 4096, 4096);
    let (a1, b1) = (one.submit(0, &a).at, one.submit(0, &b).at);
    let (a2, b2) = (many.submit(0, &a).at, many.submit(0, &b).at);
    assert_eq!(a1, a2);
    // With one slot the second starts when the first completes, then
    // takes what it takes alone (another die, the link free by then).
    assert_eq!(b1, a1 + b2, "{b1} vs {a1} + {b2}");
    assert!(one.stats.slot_wait_ns >= a1 && many.stats.slot_wait_ns == 0);
}

#[test]
fn the_service_time_model_stays_without_a_flash_section() {
    for name in ["nvme-samsung", "nvme-intel", "nvme-dram"] {
        let d = NvmeDevice::from_profile(&common::profile(name, &[])).unwrap();
        assert!(
            d.service().is_some() && d.flash_counters().is_none(),
            "{name}"
        );
    }
    for name in PROFILES {
        let d = NvmeDevice::from_profile(&common::profile(name, &[])).unwrap();
        assert!(
            d.service().is_none() && d.flash_counters().is_some(),
            "{name}"
        );
    }
}

#[test]
fn mqsim_default_has_mqsims_geometry_and_logical_capacity() {
    let d = ssd("mqsim-default", &[]);
    let g = ftl(&d).nand().geo;
    assert_eq!(
        (
            g.channels,
            g.chips_per_channel,
            g.dies_per_chip,
            g.planes_per_die
        ),
        (8, 4, 2, 2)
    );
    assert_eq!(
        (g.blocks_per_plane, g.pages_per_block, g.page_bytes),
        (2048, 256, 8192)
    );
    // MQSim: logical pages = physical pages x (1 - 0.07)
    // (Address_Mapping_Unit_Base.cpp), pages of 8 KiB.
    let physical_pages: u64 = 8 * 4 * 2 * 2 * 2048 * 256;
    let mqsim_bytes = (physical_pages as f64 * 0.93).floor() * 8192.0;
    let ours = d.capacity() as f64;
    assert!(
        (ours / mqsim_bytes - 1.0).abs() < 1e-4,
        "{ours} vs MQSim's {mqsim_bytes}"
    );
    // 2 MiB of CMT at 9 B an entry, 8 KiB each: 1.78 GiB of LBA covered.
    let covered = f64::from(ftl(&d).params().map_cache_pages)
        * ftl(&d).entries_per_map_page() as f64
        * 4096.0;
    let mqsim_covered = (2_097_152 / 9) as f64 * 8192.0;
    assert!(
        (covered / mqsim_covered - 1.0).abs() < 0.01,
        "{covered} vs {mqsim_covered}"
    );
}

/// IOPS and MB/s (10^6 B/s) summed over the jobs.
fn rates(out: &RunOutput) -> (f64, f64) {
    let (mut iops, mut mbs) = (0.0, 0.0);
    for j in &out.result.jobs {
        for d in &j.dirs {
            if d.total_ios > 0 {
                let secs = d.runtime as f64 / 1e9;
                iops += d.total_ios as f64 / secs;
                mbs += d.io_bytes as f64 / secs / 1e6;
            }
        }
    }
    (iops, mbs)
}

fn job(rw: &str, bs: &str, depth: u32, jobs: u32, ios: u64, size: &str) -> String {
    format!(
        "[global]\nfilename=/dev/nvme0n1\nioengine=libaio\ndirect=1\nrw={rw}\nbs={bs}\n\
         iodepth={depth}\nnumber_ios={ios}\n{size}\n[j]\nnumjobs={jobs}\n"
    )
}

/// `got` within `tol` (a fraction) of the datasheet's `want`.
fn near(what: &str, got: f64, want: f64, tol: f64) {
    let err = got / want - 1.0;
    eprintln!(
        "{what}: {got:.0} vs datasheet {want:.0} ({:+.1}%)",
        err * 100.0
    );
    assert!(
        err.abs() <= tol,
        "{what}: {got:.0} vs {want:.0}, {:+.1}% > {tol}",
        err * 100.0
    );
}

// Datasheets give "up to" figures measured on the vendor's host: the model
// runs the same workload through the 2015 host of the NVMe seeds, whose
// per-I/O costs (and idle states, at QD1) are not the vendor's. A figure
// within 25% says the mechanism that bounds it (tR, tPROG, the dies, the
// link) is the right one and its size right to that host difference.
const TOL: f64 = 0.25;

#[test]
fn samsung_970_evo_plus_1tb_meets_its_datasheet() {
    let p = "nvme-970evoplus-1tb";
    // CrystalDiskMark's 1 GiB test file, as the datasheet's random figures.
    let size = "size=1g";
    let (qd1_w, _) = rates(&common::run_str(
        p,
        &job("randwrite", "4k", 1, 1, 20_000, size),
        &[],
        0,
    ));
    near("4 KiB random write QD1 (IOPS)", qd1_w, 60_000.0, TOL);
    let (qd32_r, _) = rates(&common::run_str(
        p,
        &job("randread", "4k", 32, 4, 50_000, size),
        &[],
        0,
    ));
    near(
        "4 KiB random read QD32 x 4 threads (IOPS)",
        qd32_r,
        600_000.0,
        TOL,
    );
    let (qd32_w, _) = rates(&common::run_str(
        p,
        &job("randwrite", "4k", 32, 4, 50_000, size),
        &[],
        0,
    ));
    near(
        "4 KiB random write QD32 x 4 threads (IOPS)",
        qd32_w,
        550_000.0,
        TOL,
    );
    // CrystalDiskMark's SEQ1M Q8T1.
    let (_, seq_r) = rates(&common::run_str(
        p,
        &job("read", "1m", 8, 1, 4_000, ""),
        &[],
        0,
    ));
    near("sequential read 1 MiB QD8 (MB/s)", seq_r, 3_500.0, TOL);
    // Sequential write inside Intelligent TurboWrite: 4000 MiB fit in the
    // 6 GB static SLC region of a full drive (the dynamic part needs free
    // space), programmed in SLC mode (3,300 MB/s).
    let out = common::run_str(p, &job("write", "1m", 8, 1, 4_000, ""), &[], 0);
    let (_, seq_w) = rates(&out);
    near(
        "sequential write inside TurboWrite 1 MiB QD8 (MB/s)",
        seq_w,
        3_300.0,
        TOL,
    );
    let slc = &out.result.flashpath["driver"]["device"]["ftl"]["slc"];
    assert_eq!(slc["direct_rows"], 0, "all inside the cache: {slc}");
    // Past it: a first job fills the region (6 GiB > 6 GB), the second
    // (stonewalled, no idle gap long enough to fold) writes TLC directly,
    // which the datasheet rates at 1,700 MB/s.
    let out = common::run_str(
        p,
        "[global]\nfilename=/dev/nvme0n1\nioengine=libaio\ndirect=1\nrw=write\nbs=1m\n\
         iodepth=8\n[fill]\nsize=6g\n[past]\nstonewall\noffset=6g\nsize=2g\n",
        &[],
        0,
    );
    let past = &out.result.jobs[1].dirs[1];
    let past_mbs = past.io_bytes as f64 / (past.runtime as f64 / 1e9) / 1e6;
    near(
        "sequential write past TurboWrite 1 MiB QD8 (MB/s)",
        past_mbs,
        1_700.0,
        TOL,
    );
    let fill = &out.result.jobs[0].dirs[1];
    let fill_mbs = fill.io_bytes as f64 / (fill.runtime as f64 / 1e9) / 1e6;
    assert!(
        fill_mbs > 1.5 * past_mbs,
        "the job that filled the cache ran mostly inside it: {fill_mbs:.0} vs {past_mbs:.0} MB/s"
    );
    // QD1 random read: the datasheet reads a file just written, which the
    // drive holds in its SLC TurboWrite region (SLC senses faster than
    // TLC); the model's SLC cache times programs and folds only, so it
    // reads TLC at the announced 50 us and its host adds idle-state
    // exits, so it is below: stated, not hidden, 35%.
    let (qd1_r, _) = rates(&common::run_str(
        p,
        &job("randread", "4k", 1, 1, 20_000, size),
        &[],
        0,
    ));
    near(
        "4 KiB random read QD1 (IOPS, TLC reads)",
        qd1_r,
        19_000.0,
        0.35,
    );
    assert!(qd1_r < 19_000.0);
}

#[test]
fn intel_d7_p5510_meets_its_product_specification() {
    let p = "nvme-d7p5510-3t84";
    let lat = |out: &RunOutput| {
        let d = &out.result.jobs[0].dirs;
        let r = d.iter().find(|d| d.total_ios > 0).unwrap();
        r.runtime as f64 / r.total_ios as f64 / 1e3
    };
    let r = common::run_str(p, &job("randread", "4k", 1, 1, 20_000, ""), &[], 0);
    near("4 KiB random read latency QD1 (us)", lat(&r), 82.0, TOL);
    let w = common::run_str(p, &job("randwrite", "4k", 1, 1, 20_000, ""), &[], 0);
    near("4 KiB random write latency QD1 (us)", lat(&w), 15.0, TOL);
    let (rr, _) = rates(&common::run_str(
        p,
        &job("randread", "4k", 32, 4, 50_000, ""),
        &[],
        0,
    ));
    near("4 KiB random read 4 x QD32 (IOPS)", rr, 700_000.0, TOL);
    let (_, sw) = rates(&common::run_str(
        p,
        &job("write", "128k", 32, 1, 20_000, ""),
        &[],
        0,
    ));
    near("sequential write 128 KiB QD32 (MB/s)", sw, 3_400.0, TOL);
    // Sequential read is where the model falls short (6,500 MB/s rated):
    // the FTL stripes 4 KiB units over the dies and senses a row per
    // command, so a 128 KiB read costs every die it touches a tR for 4 KiB
    // (no page-register reuse across commands). The ceiling is then the
    // closed form dies x 4 KiB / (tR + command + transfer); the test holds
    // the model to it (within 5%), and the gap to the datasheet stays
    // visible.
    let (_, sr) = rates(&common::run_str(
        p,
        &job("read", "128k", 32, 1, 20_000, ""),
        &[],
        0,
    ));
    let d = ssd(p, &[]);
    let nand = ftl(&d).nand();
    let unit_ns = nand.timing.t_read + nand.chan.cmd_ns + nand.xfer_ns(4096);
    let ceiling = f64::from(nand.geo.dies()) * 4096.0 / unit_ns as f64 * 1e3;
    near(
        "sequential read 128 KiB QD32 vs the FTL's ceiling (MB/s)",
        sr,
        ceiling,
        0.05,
    );
    assert!(
        sr < 6_500.0 * 0.75,
        "the stated gap closed: update the test and docs"
    );
}

#[test]
fn nvme_flash_counters_appear_in_the_json() {
    for name in PROFILES {
        let out = common::run_str(
            name,
            &job("randwrite", "4k", 8, 1, 5_000, "size=256m"),
            &[],
            0,
        );
        let dev = &out.result.flashpath["driver"]["device"];
        assert_eq!(
            dev["front_end"]["commands"].as_u64(),
            Some(5_000),
            "{name}: {dev}"
        );
        assert_eq!(
            dev["data_cache"]["write_units"].as_u64(),
            Some(5_000),
            "{name}"
        );
        assert!(dev["ftl"]["waf"].as_f64().unwrap() >= 1.0, "{name}");
        assert!(dev["ftl"]["map_hit_ratio"].as_f64().is_some(), "{name}");
        assert!(dev["gc"]["runs"].as_u64().is_some(), "{name}");
        assert!(dev["nand"]["t_read_ns"].as_u64().unwrap() > 0, "{name}");
    }
    // GC shows up once the device runs out of free blocks: a small copy of
    // the consumer drive (256 blocks of 32 pages a plane, 8 GiB of NAND
    // whose 23 free blocks a die hold 736 MiB), written with 1.6 GB. Its
    // spare has no room for the 6 GB static SLC region: it has none.
    let sets = [
        "device.flash.blocks_per_plane=256",
        "device.flash.pages_per_block=32",
        "device.flash.slc_static=0",
    ];
    let out = common::run_str(
        "nvme-970evoplus-1tb",
        &job("randwrite", "4k", 32, 1, 400_000, ""),
        &sets,
        0,
    );
    let gc = &out.result.flashpath["driver"]["device"];
    assert!(gc["gc"]["runs"].as_u64().unwrap() > 0, "{gc}");
    assert!(gc["ftl"]["waf"].as_f64().unwrap() > 1.0, "{gc}");
}

#[test]
fn every_example_job_runs_on_every_nvme_flash_profile() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let mut jobs: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "fio"))
        .collect();
    jobs.sort();
    assert!(jobs.len() >= 2, "examples/*.fio: {jobs:?}");
    for name in PROFILES {
        for path in &jobs {
            let out = flashpath::run::run_file(path, name, &[], 0)
                .unwrap_or_else(|e| panic!("{} on {name}: {e}", path.display()));
            assert!(out.completed_ios > 0, "{} on {name}", path.display());
            assert!(
                out.result.flashpath["driver"]["device"]["front_end"]["commands"]
                    .as_u64()
                    .unwrap()
                    > 0
            );
        }
    }
}

fn builtin(name: &str) -> String {
    flashpath::profile::BUILTIN
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, t)| t.to_string())
        .unwrap()
}

#[test]
fn a_flash_section_without_the_front_end_keys_or_with_service_keys_is_refused_by_name() {
    // The front end's keys are required once [device.flash] is there.
    let text = builtin("mqsim-default");
    let without: String = text
        .lines()
        .filter(|l| !l.starts_with("fw_cmd"))
        .collect::<Vec<_>>()
        .join("\n");
    let p = flashpath::profile::Profile::from_text("my-ssd.toml", &without, None).unwrap();
    let err = NvmeDevice::from_profile(&p).err().expect("refused");
    assert!(err.to_string().contains("device.nvme.fw_cmd"), "{err}");
    // The service-time model's keys mean nothing to the flash SSD: a
    // profile that keeps them is told which key nobody read.
    let with = text.replace(
        "[device]\n",
        "[device]\nread_latency = { value = 10, unit = \"us\", source = \"test\" }\n",
    );
    let p = flashpath::profile::Profile::from_text("my-ssd.toml", &with, None).unwrap();
    let err = flashpath::model::build_model(&p).err().expect("refused");
    assert!(err.to_string().contains("device.read_latency"), "{err}");
}
