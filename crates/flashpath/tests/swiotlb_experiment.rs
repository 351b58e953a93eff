//! The swiotlb allocator against the real kernel's counters from the QEMU
//! experiment (experiments/swiotlb-qemu/, docs/swiotlb.md, issue 26 item 1).
//!
//! Reference: `results/2026-11-27-both/{base,patched}-virtio-4way-{1,3,4}.log`,
//! a 6.12.117 guest (`swiotlb=512,4,force`, `CONFIG_SWIOTLB_DYNAMIC=y`,
//! 4 vCPUs, virtio-blk with `iommu_platform=on`, fio 4 jobs of 4 KiB,
//! iodepth 256), counted by `instrument.py`'s per-CPU counters and summed
//! by `parse.py` (areas visited = `swiotlb_search_pool_area` calls, summed
//! over the CPUs, over maps):
//!
//! | order | run 1 | run 3 | run 4 | all runs |
//! |---|---|---|---|---|
//! | base (pool-first) | 5007972 / 547280 = 9.15 | 3025651 / 432780 = 6.99 | 4071922 / 493952 = 8.24 | 8.21 |
//! | patched (area-first) | 571971 / 164684 = 3.47 | 1330524 / 455828 = 2.92 | 1770407 / 506328 = 3.50 | 3.26 |
//!
//! The same runs: 4 maps per I/O, every CPU unmapping what it mapped
//! (maps and unmaps per CPU equal: virtio-blk's per-CPU queues), pools grown
//! to 9-11 MiB, `io_tlb_used_hiwater` 4325-5120 slots (= 4 queues x 256
//! requests x 5 slots at the start-up burst).
//!
//! The simulated scenario (scenarios/swiotlb, the QEMU I/O thread the bound)
//! keeps all 4 x 256 requests mapped and visits 18.1 / 5.3 areas per map.
//! These tests drive the allocator alone with the driver's four mappings
//! per request (virtio_blk.c `virtblk_add_req` -> virtio_ring.c
//! `virtqueue_add_split`: 16-byte header, the 4 KiB page, the status byte,
//! the 48-byte indirect table; `detach_buf_split` unmaps in FIFO order on
//! the CPU that mapped), first the start-up burst of 256 per queue, then a
//! steady state with `depth` requests mapped per queue. They show that the
//! difference between the model's and the kernel's visits is how many
//! requests stay mapped, not the search: fitted on the base order's one
//! number, the patched order's follows.

use std::collections::VecDeque;

use flashpath::dma::swiotlb::{
    DeviceDma, DmaDir, ForceMode, IoTlbMem, IoTlbMemConfig, MapRequest, SearchOrder, SlotAddr,
    SwiotlbConfig, SwiotlbCosts,
};

/// Base (pool-first) areas visited per map over the three 4way runs.
const REAL_BASE_AREAS_PER_MAP: f64 = 8.21;
/// Patched (area-first) areas visited per map over the three 4way runs.
const REAL_PATCHED_AREAS_PER_MAP: f64 = 3.26;
/// The virtqueue's size (QEMU's default `queue-size`), fio's iodepth.
const RING: usize = 256;
const CPUS: u32 = 4;
/// Steady-state requests after the burst: 100 per queue slot of the ring
/// and CPU, enough for the visit averages to settle to 0.1 area.
const STEPS: usize = 100_000;

/// One virtio-blk request's four mappings on `cpu`, in `virtqueue_add_split`
/// order; returned in `detach_buf_split`'s unmap order (table first).
fn map_request(mem: &mut IoTlbMem, cpu: u32, key: u64) -> [SlotAddr; 4] {
    // Page-aligned, distinct per request (fio's buffer; the request's PDU
    // and kmalloc'd table): only alignment reaches the search.
    let data = (1u64 << 40) + ((key % 4096) << 24);
    let drv = (2u64 << 40) + ((key % 4096) << 12);
    let mut one = |addr: u64, size: u64| {
        let out = mem.map(0, cpu, MapRequest::new(addr, size));
        if out.schedule_growth {
            // The dyn_alloc worker's pool arrives before the next map
            // (its delay is time, which these tests do not model).
            mem.add_pool();
        }
        out.slot.expect("a transient pool always fits one request")
    };
    let header = one(drv, 16);
    let page = one(data, 4096);
    let status = one(drv + 64, 1);
    let table = one(drv + 128, 3 * 16);
    [table, header, page, status]
}

fn unmap_request(mem: &mut IoTlbMem, cpu: u32, maps: [SlotAddr; 4]) {
    for addr in maps {
        mem.unmap(0, cpu, addr, DmaDir::ToDevice);
    }
}

/// Which mapped request of a queue completes next.
#[derive(Clone, Copy)]
enum Completion {
    /// The oldest: a device that finishes requests in ring order.
    InOrder,
    /// Any, uniformly (a fixed xorshift sequence): QEMU's `aio=threads`
    /// hands each request to a worker of its thread pool
    /// (util/thread-pool.c), which finish in any order, and virtio returns
    /// them through the used ring as they finish.
    Shuffled,
}

/// Areas visited and slots scanned per map in the steady state with
/// `depth` requests mapped per queue, and the pools' slots at the end.
fn steady_state(order: SearchOrder, depth: usize) -> (f64, f64, u64) {
    steady_state_with(order, depth, Completion::InOrder)
}

fn steady_state_with(order: SearchOrder, depth: usize, completion: Completion) -> (f64, f64, u64) {
    let mut rng: u64 = 0x9E37_79B9_7F4A_7C15;
    let cfg = IoTlbMemConfig {
        pool: SwiotlbConfig {
            nslabs: 512,
            nareas: 4,
            force: ForceMode::Force,
        },
        order,
        can_grow: true,
        dev: DeviceDma::default(),
    };
    let mut mem = IoTlbMem::new(cfg, SwiotlbCosts::zero());
    let mut queues: Vec<VecDeque<[SlotAddr; 4]>> = vec![VecDeque::new(); CPUS as usize];
    let mut key = 0u64;
    // fio's first io_submit calls fill every queue: the hiwater burst.
    for _ in 0..RING {
        for cpu in 0..CPUS {
            key += 1;
            let maps = map_request(&mut mem, cpu, key);
            queues[cpu as usize].push_back(maps);
        }
    }
    for cpu in 0..CPUS {
        while queues[cpu as usize].len() > depth {
            let maps = queues[cpu as usize].pop_front().expect("non-empty");
            unmap_request(&mut mem, cpu, maps);
        }
    }
    let before = *mem.counters();
    for step in 0..STEPS {
        let cpu = step as u32 % CPUS;
        let q = &mut queues[cpu as usize];
        if q.len() >= depth {
            let i = match completion {
                Completion::InOrder => 0,
                Completion::Shuffled => {
                    rng ^= rng << 13;
                    rng ^= rng >> 7;
                    rng ^= rng << 17;
                    (rng % q.len() as u64) as usize
                }
            };
            let maps = q.remove(i).expect("non-empty");
            unmap_request(&mut mem, cpu, maps);
        }
        key += 1;
        let maps = map_request(&mut mem, cpu, key);
        queues[cpu as usize].push_back(maps);
    }
    let after = mem.counters();
    let maps = (after.maps - before.maps) as f64;
    (
        (after.areas_visited - before.areas_visited) as f64 / maps,
        (after.slots_scanned - before.slots_scanned) as f64 / maps,
        mem.io_tlb_nslabs(),
    )
}

/// The mapped depth per queue at which the base order visits as many areas
/// per map as the real kernel did: pool-first's visits grow with the depth
/// (each full pool in front adds its areas), so bisect.
fn depth_matching_real_base() -> usize {
    let (mut lo, mut hi) = (1, RING);
    while lo < hi {
        let mid = (lo + hi) / 2;
        if steady_state(SearchOrder::PoolFirst, mid).0 < REAL_BASE_AREAS_PER_MAP {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// With the base order's one number fitted (the mapped depth), the patched
/// order's areas per map follow within 20% of the real 3.26. Tolerance: the
/// three real runs of each order spread 2.92-3.50 (patched) and 6.99-9.15
/// (base, +-13%), and the depth inferred from base carries base's spread
/// into the prediction.
#[test]
fn at_the_depth_that_gives_the_real_base_visits_the_patched_visits_follow() {
    let depth = depth_matching_real_base();
    let (base, _, _) = steady_state(SearchOrder::PoolFirst, depth);
    let (patched, _, _) = steady_state(SearchOrder::AreaFirst, depth);
    assert!(
        (base - REAL_BASE_AREAS_PER_MAP).abs() < 0.5,
        "depth {depth}: base {base:.2} areas per map, the real kernel {REAL_BASE_AREAS_PER_MAP}"
    );
    let rel = (patched - REAL_PATCHED_AREAS_PER_MAP) / REAL_PATCHED_AREAS_PER_MAP;
    assert!(
        rel.abs() < 0.20,
        "depth {depth}: patched {patched:.2} areas per map, the real kernel \
         {REAL_PATCHED_AREAS_PER_MAP} ({:+.0}%)",
        rel * 100.0
    );
}

/// The real guest did not keep its rings mapped: with all 256 requests of
/// each queue mapped all the time (what the simulated scenario does, its
/// QEMU I/O thread the bound) the base order visits more than twice the
/// real kernel's areas per map, and the depth that gives the real number is
/// well inside the ring. The pools the burst grows match the real 9-11 MiB
/// to within a pool or two (the worker's pool arrives at once here).
#[test]
fn a_full_ring_visits_far_more_areas_than_the_real_guest() {
    let (full_base, _, nslabs) = steady_state(SearchOrder::PoolFirst, RING);
    let (full_patched, _, _) = steady_state(SearchOrder::AreaFirst, RING);
    assert!(
        full_base > 2.0 * REAL_BASE_AREAS_PER_MAP,
        "full ring: base {full_base:.2} areas per map"
    );
    assert!(
        full_patched > 1.4 * REAL_PATCHED_AREAS_PER_MAP,
        "full ring: patched {full_patched:.2} areas per map"
    );
    let mib = nslabs as f64 * 2048.0 / (1 << 20) as f64;
    assert!((9.0..=13.0).contains(&mib), "pools {mib} MiB");
    let depth = depth_matching_real_base();
    assert!(
        (RING / 4..=3 * RING / 4).contains(&depth),
        "the real base visits need {depth} of {RING} requests mapped per queue"
    );
}

/// The visits do not hang on the order in which requests complete: at the
/// depth fitted with in-order completion, completing them in any order
/// keeps the base order within 10% of the real 8.21 and the patched order
/// within 20% of the real 3.26 (the tolerance of the test above). (The
/// slots scanned per map do hang on it: 5.9 in order, 21-25 shuffled, the
/// real 10.1 / 8.5 between; docs/swiotlb.md.)
#[test]
fn the_visits_at_that_depth_hold_when_requests_complete_out_of_order() {
    let depth = depth_matching_real_base();
    let (base, _, _) = steady_state_with(SearchOrder::PoolFirst, depth, Completion::Shuffled);
    let (patched, _, _) = steady_state_with(SearchOrder::AreaFirst, depth, Completion::Shuffled);
    let rel_base = (base - REAL_BASE_AREAS_PER_MAP) / REAL_BASE_AREAS_PER_MAP;
    let rel_patched = (patched - REAL_PATCHED_AREAS_PER_MAP) / REAL_PATCHED_AREAS_PER_MAP;
    assert!(
        rel_base.abs() < 0.10,
        "depth {depth}, shuffled: base {base:.2} areas per map"
    );
    assert!(
        rel_patched.abs() < 0.20,
        "depth {depth}, shuffled: patched {patched:.2} areas per map"
    );
}
