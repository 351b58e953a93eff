//! swiotlb on the I/O path: the allocator's work shows in the run exactly
//! where the kernel does it, and the two search orders differ only where
//! the kernel text says they can.

mod common;

use common::{maps_by_cpu, write};
use flashpath::run::RunOutput;

/// `job` from a file on `profile` with `overrides`, seed 7.
fn run(job: &str, profile: &str, overrides: &[&str]) -> RunOutput {
    common::run_job_file(profile, job, overrides, 7)
}

fn swiotlb(out: &RunOutput, key: &str) -> f64 {
    out.result.flashpath["swiotlb"][key].as_f64().unwrap()
}

fn clat_mean(out: &RunOutput, dir: usize) -> f64 {
    let d = &out.result.jobs[0].dirs[dir];
    d.clat.stat.mean()
}

/// null_blk (fixed 10 us) on one CPU, with swiotlb forced and every
/// allocator cost zero except the two fixed call costs and a 1 byte/ns copy.
fn null_with_swiotlb() -> String {
    let text = r#"
[profile]
name = "null-swiotlb"
include = ["nullblk.toml", "hosts/swiotlb-x86.toml"]

[host]
cpus = { value = 1, unit = "count", source = "test" }
thp = { value = "never", unit = "name", source = "test" }

[dma.swiotlb]
boot_param = { value = "512,4,force", unit = "name", source = "test" }
search = { value = "pool-first", unit = "name", source = "test" }

[dma.swiotlb.cost]
map_call = { value = 300, unit = "ns", source = "test" }
unmap_call = { value = 200, unit = "ns", source = "test" }
area_visit = { value = 0, unit = "ns", source = "test" }
lock_acquire = { value = 0, unit = "ns", source = "test" }
lock_acquire_remote = { value = 0, unit = "ns", source = "test" }
lock_release = { value = 0, unit = "ns", source = "test" }
used_check = { value = 0, unit = "ns", source = "test" }
per_slot_scan = { value = 0, unit = "ns", source = "test" }
per_slot_update = { value = 0, unit = "ns", source = "test" }
find_pool_per_pool = { value = 0, unit = "ns", source = "test" }
memcpy = { value = 1, unit = "GB/s", source = "test" }
"#;
    write("null-swiotlb.toml", text).display().to_string()
}

const PSYNC: &str = "[j]\nfilename=/dev/nullb0\ndirect=1\nioengine=psync\nbs=4k\nsize=4m\nrw=";

#[test]
fn bounce_copies_show_in_latency_exactly() {
    let profile = null_with_swiotlb();
    for (rw, dir, copies) in [("read", 0usize, 2u64), ("write", 1, 1)] {
        let job = format!("{PSYNC}{rw}\n");
        let plain = run(&job, "nullblk", &["host.cpus=1"]);
        let bounced = run(&job, &profile, &[]);
        // map_call + copy in (4096 ns) on submit; unmap_call (+ copy out
        // for reads) on completion, before the wake-up.
        let expect = 300.0 + 200.0 + (copies * 4096) as f64;
        let got = clat_mean(&bounced, dir) - clat_mean(&plain, dir);
        assert!((got - expect).abs() < 1e-6, "{rw}: {got} vs {expect}");
        assert_eq!(swiotlb(&bounced, "areas_visited_per_map"), 1.0);
    }
}

#[test]
fn one_cpu_and_a_never_full_pool_give_identical_runs_in_both_orders() {
    let job =
        "[j]\nfilename=/dev/vda\ndirect=1\nioengine=libaio\niodepth=8\nbs=4k\nsize=8m\nrw=randrw\n";
    let a = run(
        job,
        "virtio-ramdisk",
        &["host.cpus=1", "dma.swiotlb.search=pool-first"],
    );
    let b = run(
        job,
        "virtio-ramdisk",
        &["host.cpus=1", "dma.swiotlb.search=area-first"],
    );
    assert_eq!(swiotlb(&a, "pools"), 1.0);
    assert_eq!(swiotlb(&a, "transient_pools"), 0.0);
    let mut fa = a.result.flashpath.clone();
    let mut fb = b.result.flashpath.clone();
    fa["swiotlb"]["search"] = serde_json::json!("");
    fb["swiotlb"]["search"] = serde_json::json!("");
    assert_eq!(fa, fb);
    assert_eq!(a.result.end_time, b.result.end_time);
    for d in 0..2 {
        assert_eq!(clat_mean(&a, d), clat_mean(&b, d));
        assert_eq!(
            a.result.jobs[0].dirs[d].io_bytes,
            b.result.jobs[0].dirs[d].io_bytes
        );
    }
}

#[test]
fn with_several_pools_four_threads_area_first_visits_fewer_areas() {
    // 4 threads x 32 in flight x 64 KiB (32 slots each) need 4096 slots:
    // eight times the 512-slot boot pool, so pools are added and the
    // searches walk several of them. (No offset_increment: flashpath sizes
    // the file by `size`, so clones offset past it would do no I/O.)
    let job = "[j]\nfilename=/dev/vda\ndirect=1\nioengine=libaio\niodepth=32\nbs=64k\nsize=64m\nrw=rw\nnumjobs=4\n";
    let a = run(job, "virtio-ramdisk", &["dma.swiotlb.search=pool-first"]);
    let b = run(job, "virtio-ramdisk", &["dma.swiotlb.search=area-first"]);
    assert!(
        swiotlb(&a, "pools") >= 2.0,
        "{}",
        a.result.flashpath["swiotlb"]
    );
    let (va, vb) = (
        swiotlb(&a, "areas_visited_per_map"),
        swiotlb(&b, "areas_visited_per_map"),
    );
    eprintln!(
        "pool-first {}\narea-first {}",
        a.result.flashpath["swiotlb"], b.result.flashpath["swiotlb"]
    );
    assert!(vb < va, "area-first {vb} vs pool-first {va}");
}

/// A 4 KiB virtio-blk request is four mappings: the header, the data page,
/// the status byte and the indirect descriptor table (virtio_ring.c).
const MAPS_PER_VIRTIO_4K: u64 = 4;

/// fio pinned to CPU 1 with more I/O in flight than the device takes; the
/// host is slow, so the device queue stays full and requests wait for tags.
const DEEP: &str = "[j]\nfilename=/dev/vda\ndirect=1\nioengine=libaio\niodepth=64\nbs=4k\nsize=8m\nrw=randrw\ncpus_allowed=1\n";

#[test]
fn a_request_that_waited_for_a_tag_is_mapped_where_the_completion_ran() {
    // One hardware queue with its interrupt on CPU 0: each request that
    // waited is dispatched by the restart run the freed tag queues on
    // kblockd, which for a single hctx runs on the completing CPU; the
    // others are mapped inline by the submitter.
    let out = run(
        DEEP,
        "virtio-ramdisk",
        &[
            "device.num_queues=1",
            "device.queue_size=16",
            "block.nr_requests=16",
            "host.irq_cpu=cpu0",
        ],
    );
    let by_cpu = maps_by_cpu(&out);
    let restarts = swiotlb(&out, "restart_maps") as u64;
    let waited = out.result.flashpath["block"]["tag_waits"].as_u64().unwrap();
    let maps = swiotlb(&out, "maps") as u64;
    assert!(
        waited > maps / MAPS_PER_VIRTIO_4K / 2,
        "the device queue must be the bottleneck"
    );
    assert_eq!(restarts, waited);
    assert_eq!(by_cpu[0], MAPS_PER_VIRTIO_4K * restarts);
    assert_eq!(by_cpu[1], maps - MAPS_PER_VIRTIO_4K * restarts);
    assert_eq!(by_cpu[2] + by_cpu[3], 0);
}

#[test]
fn restart_runs_go_round_the_cpus_of_a_shared_hctx() {
    // Two hardware queues on four CPUs: hctx 1 serves CPUs 1 and 3, and
    // blk_mq_hctx_next_cpu moves its asynchronous runs between them every
    // BLK_MQ_CPU_WORK_BATCH runs, so a thread on CPU 1 has its waiting
    // requests mapped on CPU 3 too, though nothing runs there otherwise.
    let out = run(
        DEEP,
        "virtio-ramdisk",
        &[
            "device.num_queues=2",
            "device.queue_size=16",
            "block.nr_requests=16",
        ],
    );
    let by_cpu = maps_by_cpu(&out);
    let restarts = swiotlb(&out, "restart_maps") as u64;
    assert_eq!(by_cpu[0] + by_cpu[2], 0);
    // The first CPU of the mask takes 7 runs, then 8 each in turn.
    let on3 = (0..restarts).filter(|&k| (k + 1) / 8 % 2 == 1).count() as u64;
    assert_eq!(by_cpu[3], MAPS_PER_VIRTIO_4K * on3);
    assert_eq!(by_cpu[1] + by_cpu[3], swiotlb(&out, "maps") as u64);
}

/// dma_map_sg maps each scatterlist segment on its own: a 64 KiB read from
/// order-0 pages is sixteen mappings, each paying the call costs, and the
/// copies still move the request's bytes once each way.
#[test]
fn each_page_of_a_scattered_buffer_is_its_own_mapping() {
    let profile = null_with_swiotlb();
    let job = "[j]\nfilename=/dev/nullb0\ndirect=1\nioengine=psync\nbs=64k\nsize=4m\nrw=read\n";
    let plain = run(job, "nullblk", &["host.cpus=1"]);
    let bounced = run(job, &profile, &[]);
    let ios = plain.result.jobs[0].dirs[0].total_ios;
    assert_eq!(swiotlb(&bounced, "maps") as u64, 16 * ios);
    assert_eq!(swiotlb(&bounced, "unmaps") as u64, 16 * ios);
    let expect = 16.0 * (300.0 + 200.0) + 2.0 * 65536.0;
    let got = clat_mean(&bounced, 0) - clat_mean(&plain, 0);
    assert!((got - expect).abs() < 1e-6, "{got} vs {expect}");
}

/// How many mappings a 64 KiB virtio-blk request takes: one per physically
/// contiguous piece of fio's buffer, plus the header, the status byte and
/// the indirect table. Huge pages back the buffer only where the kernel
/// gives them: THP "always" and a buffer (iodepth x bs) of a whole 2 MiB
/// extent, or hugetlb memory (mem=mmaphuge) whatever THP says.
#[test]
fn maps_per_request_follow_the_buffer_memory() {
    let base = "[j]\nfilename=/dev/vda\ndirect=1\nioengine=libaio\nbs=64k\nsize=8m\nrw=randrw\n";
    let per_request = |extra: &str, thp: &str| {
        let out = run(
            &format!("{base}{extra}"),
            "virtio-ramdisk",
            &[&format!("host.thp={thp}")],
        );
        let ios: u64 = out.result.jobs[0].dirs.iter().map(|d| d.total_ios).sum();
        assert_eq!(swiotlb(&out, "maps"), swiotlb(&out, "unmaps"));
        swiotlb(&out, "maps") / ios as f64
    };
    // 32 x 64 KiB = 2 MiB of buffers.
    assert_eq!(per_request("iodepth=32\n", "always"), 4.0);
    assert_eq!(per_request("iodepth=32\n", "madvise"), 19.0);
    assert_eq!(per_request("iodepth=32\n", "never"), 19.0);
    // 8 x 64 KiB = 512 KiB: no whole extent for a huge page.
    assert_eq!(per_request("iodepth=8\n", "always"), 19.0);
    assert_eq!(per_request("iodepth=8\nmem=mmaphuge\n", "never"), 4.0);
    assert_eq!(per_request("iodepth=32\nmem=mmapshared\n", "always"), 19.0);
}

/// The message a run on `profile` with `overrides` fails with.
fn run_err(job: &str, profile: &str, overrides: &[&str]) -> String {
    let path = write("job.fio", job);
    let o: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    match flashpath::run::run_file(&path, profile, &o, 7) {
        Ok(_) => panic!("{profile} {overrides:?} ran"),
        Err(e) => e.to_string(),
    }
}

fn driver_ns(out: &RunOutput, key: &str) -> Vec<u64> {
    let v = &out.result.flashpath["driver"][key];
    match v.as_array() {
        Some(a) => a.iter().map(|x| x.as_u64().unwrap()).collect(),
        None => vec![v.as_u64().unwrap()],
    }
}

/// One thread on CPU 0 keeping 32 requests in flight.
const QD32_CPU0: &str = "[j]\nfilename=/dev/vda\ndirect=1\nioengine=libaio\niodepth=32\nbs=4k\nsize=8m\nrw=randrw\ncpus_allowed=0\n";

#[test]
fn an_iothread_with_a_physical_cpu_of_its_own_changes_nothing() {
    // A spare physical CPU: wherever it is pinned, the I/O thread has a
    // CPU of its own, which is the model without the keys.
    let own = run(QD32_CPU0, "virtio-ramdisk", &[]);
    let spare = run(
        QD32_CPU0,
        "virtio-ramdisk",
        &["device.host_spare_cpus=1", "device.iothread_cpu=vcpu0"],
    );
    assert_eq!(own.result.flashpath, spare.result.flashpath);
    assert_eq!(own.result.end_time, spare.result.end_time);
    assert_eq!(driver_ns(&own, "iothread_on_vcpu_ns"), vec![0; 4]);
}

#[test]
fn an_iothread_on_a_busy_vcpus_cpu_is_one_serial_server_with_it() {
    let own = run(QD32_CPU0, "virtio-ramdisk", &[]);
    let shared = run(
        QD32_CPU0,
        "virtio-ramdisk",
        &["device.host_spare_cpus=0", "device.iothread_cpu=vcpu0"],
    );
    let host = driver_ns(&shared, "host_busy_ns")[0];
    let on = driver_ns(&shared, "iothread_on_vcpu_ns");
    assert_eq!(on, vec![host, 0, 0, 0]);
    // The guest's work on CPU 0 and the back end's never overlap: the run
    // lasts at least both.
    let cpu0 = &shared.result.flashpath["cpus"][0];
    let guest: u64 = ["usr_ns", "sys_ns", "irq_ns"]
        .iter()
        .map(|k| cpu0[*k].as_u64().unwrap())
        .sum();
    let end = shared.result.end_time;
    assert!(end >= guest + host, "{end} < {guest} + {host}");
    assert!(end > own.result.end_time);
}

#[test]
fn an_iothread_beside_an_idle_vcpu_takes_nothing_from_the_guest() {
    // Pinned beside vCPU 1, where nothing runs (the thread is on CPU 0 and
    // so is its queue's interrupt), or placed by the host scheduler, which
    // finds an idle vCPU's CPU at every wake-up: the run is the one with a
    // CPU of its own.
    let own = run(QD32_CPU0, "virtio-ramdisk", &[]);
    for place in ["vcpu1", "any"] {
        let set = format!("device.iothread_cpu={place}");
        let out = run(
            QD32_CPU0,
            "virtio-ramdisk",
            &["device.host_spare_cpus=0", set.as_str()],
        );
        assert_eq!(out.result.end_time, own.result.end_time, "{place}");
        assert_eq!(out.result.flashpath["cpus"], own.result.flashpath["cpus"]);
        assert_eq!(driver_ns(&out, "iothread_on_vcpu_ns")[0], 0, "{place}");
        assert_eq!(driver_ns(&out, "iothread_vcpu_wait_ns"), vec![0], "{place}");
    }
}

#[test]
fn iothread_placement_values_the_model_cannot_run_are_refused_by_name() {
    for bad in ["vcpu4", "vcpu", "cpu0", "vcpu-1"] {
        let set = format!("device.iothread_cpu={bad}");
        let e = run_err(
            QD32_CPU0,
            "virtio-ramdisk",
            &["device.host_spare_cpus=0", set.as_str()],
        );
        assert!(
            e.contains("device.iothread_cpu") && e.contains("vcpuN"),
            "{bad}: {e}"
        );
    }
    // One key without the other, in a profile file: named with its file.
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../profiles");
    let text = std::fs::read_to_string(dir.join("virtio-ramdisk.toml"))
        .unwrap()
        .replace("name = \"virtio-ramdisk\"", "name = \"no-placement\"")
        .replace(
            "include = [\"hosts/x86-vm4.toml\"]",
            &format!(
                "include = [\"{}\"]",
                dir.join("hosts/x86-vm4.toml").display()
            ),
        )
        .lines()
        .filter(|l| !l.starts_with("iothread_cpu"))
        .collect::<Vec<_>>()
        .join("\n");
    let p = write("no-placement.toml", &text);
    let e = run_err(QD32_CPU0, &p.display().to_string(), &[]);
    assert!(
        e.contains("no-placement.toml") && e.contains("'device.iothread_cpu' too"),
        "{e}"
    );
}

#[test]
fn a_paravirtual_spinlock_needs_both_its_parameters() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../profiles");
    let host = std::fs::read_to_string(dir.join("hosts/x86-vm4.toml"))
        .unwrap()
        .replace("name = \"x86-vm4\"", "name = \"half-pv\"")
        .replace(
            "include = [\"hosts/x86-generic.toml\", \"hosts/swiotlb-x86.toml\"]",
            &format!(
                "include = [\"{}\", \"{}\"]",
                dir.join("hosts/x86-generic.toml").display(),
                dir.join("hosts/swiotlb-x86.toml").display()
            ),
        )
        .lines()
        .filter(|l| !l.starts_with("kick_wake"))
        .collect::<Vec<_>>()
        .join("\n");
    let host = write("half-pv.toml", &host);
    let text = std::fs::read_to_string(dir.join("virtio-ramdisk.toml"))
        .unwrap()
        .replace(
            "include = [\"hosts/x86-vm4.toml\"]",
            &format!("include = [\"{}\"]", host.display()),
        );
    let p = write("pv.toml", &text);
    let e = run_err(QD32_CPU0, &p.display().to_string(), &[]);
    assert!(
        e.contains("half-pv.toml") && e.contains("'host.pv_spinlock.kick_wake' too"),
        "{e}"
    );
}

/// The real guest's debugfs counters (experiments/swiotlb-qemu, docs/
/// swiotlb.md: a 6.12 guest booted with swiotlb=512,4,force, virtio-blk
/// with iommu_platform=on, no THP, fio libaio at iodepth 256): with the
/// ring full, `io_tlb_used_hiwater` was 1280 slots for 4 KiB requests and
/// 8960 for 64 KiB, i.e. 256 requests x 5 and x 35 slots (data pages of 2
/// slots each, the header, the status byte and the indirect table of one
/// slot each). The model, with the device slow enough that the ring fills,
/// holds the same slots per request.
#[test]
fn a_full_ring_holds_the_slots_the_real_guest_held() {
    let hiwater = |bs: &str, size: &str| {
        let job = format!(
            "[j]\nfilename=/dev/vda\ndirect=1\nioengine=libaio\niodepth=256\nrw=rw\nbs={bs}\nsize={size}\n"
        );
        let out = run(
            &job,
            "virtio-ramdisk",
            &["host.thp=never", "device.host_fixed=200us"],
        );
        swiotlb(&out, "used_hiwater")
    };
    assert_eq!(hiwater("4k", "8m"), 1280.0);
    assert_eq!(hiwater("64k", "64m"), 8960.0);
}
