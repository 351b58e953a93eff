//! Unit tests of the allocator against the kernel text.

use super::*;

fn cfg(nslabs: u32, nareas: u32, order: SearchOrder, can_grow: bool) -> IoTlbMemConfig {
    IoTlbMemConfig {
        pool: SwiotlbConfig {
            nslabs,
            nareas,
            force: ForceMode::Force,
        },
        order,
        can_grow,
        dev: DeviceDma::default(),
    }
}

/// Costs with distinct values, so a wrong step shows in the times.
fn costs() -> SwiotlbCosts {
    SwiotlbCosts {
        map_call: 7,
        unmap_call: 5,
        area_visit: 3,
        lock_acquire: 11,
        lock_acquire_remote: 53,
        lock_release: 2,
        used_check: 1,
        per_slot_scan: 4,
        per_slot_update: 1,
        find_pool_per_pool: 6,
        schedule_work: 100,
        transient_alloc: 1000,
        transient_free: 300,
        memcpy_bytes_per_ns: 8.0,
    }
}

const PAGE: u64 = 4096;

#[test]
fn pool_first_order_is_pool_by_pool_from_cpu_area() {
    // 3 pools x 4 areas, CPU 1: pool 0 areas 1,2,3,0, then pool 1, pool 2.
    let seq = search_sequence(SearchOrder::PoolFirst, 1, 4, &[4, 4, 4]);
    let want: Vec<(usize, u32)> = [0, 1, 2]
        .iter()
        .flat_map(|&p| [1, 2, 3, 0].map(|a| (p, a)))
        .collect();
    assert_eq!(seq, want);
}

#[test]
fn area_first_order_is_area_index_across_pools() {
    // The commit message's diagram: A, D ... F, B, E ... G ... C ... H.
    let seq = search_sequence(SearchOrder::AreaFirst, 1, 4, &[4, 4, 4]);
    let want: Vec<(usize, u32)> = [1, 2, 3, 0]
        .iter()
        .flat_map(|&a| [0, 1, 2].map(|p| (p, a)))
        .collect();
    assert_eq!(seq, want);
}

#[test]
fn pool_with_fewer_areas_is_skipped_past_its_count() {
    // List (newest first): a 2-area pool, then two 4-area pools; CPU 1.
    let area_first = search_sequence(SearchOrder::AreaFirst, 1, 4, &[2, 4, 4]);
    assert_eq!(
        area_first,
        vec![
            (0, 1),
            (1, 1),
            (2, 1), // i = 0: (1+0) & 1 = 1 in the small pool
            (0, 0),
            (1, 2),
            (2, 2), // i = 1: (1+1) & 1 = 0
            (1, 3),
            (2, 3), // i = 2: small pool skipped (2 >= 2)
            (1, 0),
            (2, 0), // i = 3
        ]
    );
    let pool_first = search_sequence(SearchOrder::PoolFirst, 1, 4, &[2, 4, 4]);
    assert_eq!(
        pool_first,
        vec![
            (0, 1),
            (0, 0),
            (1, 1),
            (1, 2),
            (1, 3),
            (1, 0),
            (2, 1),
            (2, 2),
            (2, 3),
            (2, 0)
        ]
    );
}

#[test]
fn single_pool_orders_agree() {
    for cpu in 0..9 {
        assert_eq!(
            search_sequence(SearchOrder::PoolFirst, cpu, 8, &[8]),
            search_sequence(SearchOrder::AreaFirst, cpu, 8, &[8]),
        );
    }
}

/// Fill every area of every pool with one 256 KiB (128-slot) mapping each.
fn fill_all(mem: &mut IoTlbMem) -> Vec<SlotAddr> {
    let mut out = Vec::new();
    let mut cpu = 0;
    loop {
        let o = mem.map(0, cpu, MapRequest::new(0x10_0000, 128 * IO_TLB_SIZE));
        if o.transient || o.slot.is_none() {
            if let Some(s) = o.slot {
                mem.unmap(0, cpu, s, DmaDir::ToDevice);
            }
            break;
        }
        out.push(o.slot.unwrap());
        cpu += 1;
    }
    out
}

#[test]
fn map_visits_areas_in_kernel_order_when_all_full() {
    for order in [SearchOrder::PoolFirst, SearchOrder::AreaFirst] {
        let mut mem = IoTlbMem::new(cfg(512, 4, order, false), SwiotlbCosts::zero());
        mem.add_pool_with(512, 4);
        mem.add_pool_with(256, limit_nareas(4, 256)); // 2 areas
        let filled = fill_all(&mut mem);
        assert_eq!(filled.len(), 4 + 4 + 2);
        mem.enable_trace();
        let o = mem.map(0, 1, MapRequest::new(0x20_0000, 4096));
        assert_eq!(o.slot, None);
        let ids: Vec<PoolId> = mem.pool_ids().collect();
        let got: Vec<(usize, u32)> = mem
            .take_trace()
            .iter()
            .map(|v| (ids.iter().position(|&p| p == v.pool).unwrap(), v.area))
            .collect();
        assert_eq!(got, search_sequence(order, 1, 4, &[2, 4, 4]), "{order:?}");
        assert_eq!(o.areas_visited, 10);
        assert_eq!(o.pools_tried, 3);
        // Every visit failed the `used` check: no slot was scanned.
        assert_eq!(o.slots_scanned, 0);
    }
}

#[test]
fn area_first_prefers_own_area_of_older_pool() {
    // Newest pool's area 1 is full; CPU 1 then goes to area 1 of the older
    // pool after the patch, to area 2 of the newest before it.
    let build = |order| {
        let mut mem = IoTlbMem::new(cfg(512, 4, order, false), SwiotlbCosts::zero());
        let newest = mem.add_pool_with(512, 4);
        let o = mem.map(0, 1, MapRequest::new(0x10_0000, 128 * IO_TLB_SIZE));
        assert_eq!(mem.find_pool(o.slot.unwrap().0).0, Some(newest));
        mem
    };
    let mut pre = build(SearchOrder::PoolFirst);
    let mut post = build(SearchOrder::AreaFirst);
    pre.enable_trace();
    post.enable_trace();
    pre.map(0, 1, MapRequest::new(0x20_0000, PAGE));
    post.map(0, 1, MapRequest::new(0x20_0000, PAGE));
    let pre_t = pre.take_trace();
    let post_t = post.take_trace();
    let newest = pre.pool_ids().next().unwrap();
    let oldest = pre.pool_ids().nth(1).unwrap();
    assert_eq!(
        pre_t.iter().map(|v| (v.pool, v.area)).collect::<Vec<_>>(),
        vec![(newest, 1), (newest, 2)]
    );
    assert_eq!(
        post_t.iter().map(|v| (v.pool, v.area)).collect::<Vec<_>>(),
        vec![(newest, 1), (oldest, 1)]
    );
}

#[test]
fn contended_lock_spins_for_holders_remaining_time() {
    let c = costs();
    // One area, so both CPUs need the same lock.
    let mut mem = IoTlbMem::new(cfg(512, 1, SearchOrder::AreaFirst, false), c);
    let a = mem.map(1000, 0, MapRequest::new(0x10_0000, 2048));
    // CPU 0: map_call, area_visit, local acquire (first use), then holds
    // for used_check + 1 slot scanned + 1 slot written + release.
    let acquired = 1000 + c.map_call + c.area_visit + c.lock_acquire;
    let released = acquired + c.used_check + c.per_slot_scan + c.per_slot_update + c.lock_release;
    assert_eq!(a.slots_scanned, 1);
    assert_eq!(a.lock_spin_ns, 0);
    // CPU 1 reaches the lock while CPU 0 holds it.
    let now1 = 1000 + 12;
    let arrive = now1 + c.map_call + c.area_visit;
    assert!(arrive > acquired && arrive < released);
    let b = mem.map(now1, 1, MapRequest::new(0x20_0000, 2048));
    assert_eq!(b.lock_spin_ns, released - arrive);
    // Then the line comes from CPU 0: remote acquire.
    let b_acq = released + c.lock_acquire_remote;
    let b_rel = b_acq + c.used_check + c.per_slot_scan + c.per_slot_update + c.lock_release;
    let b_done = b_rel + c.per_slot_update + c.find_pool_per_pool;
    assert_eq!(b.done_at, b_done);
    assert_eq!(mem.counters().lock_spins, 1);
    assert_eq!(mem.counters().lock_spin_ns, released - arrive);
    assert_eq!(mem.counters().remote_acquires, 1);
    // A third CPU arriving after the release does not spin.
    let c3 = mem.map(b_rel + 1, 2, MapRequest::new(0x30_0000, 2048));
    assert_eq!(c3.lock_spin_ns, 0);
}

/// CPU 0 maps at 1000 into a one-area pool, then CPU 1 reaches the lock
/// 4 ns into CPU 0's hold: returns CPU 1's map and its native wait.
fn contended_pair(pv: Option<PvSpinlock>) -> (MapOutcome, MapOutcome, u64, IoTlbMem) {
    let c = costs();
    let mut mem = IoTlbMem::new(cfg(512, 1, SearchOrder::AreaFirst, false), c);
    if let Some(pv) = pv {
        mem.set_pv_spinlock(pv);
    }
    let a = mem.map(1000, 0, MapRequest::new(0x10_0000, 2048));
    let acquired = 1000 + c.map_call + c.area_visit + c.lock_acquire;
    let released = acquired + c.used_check + c.per_slot_scan + c.per_slot_update + c.lock_release;
    let now1 = acquired + 4 - c.map_call - c.area_visit;
    let b = mem.map(now1, 1, MapRequest::new(0x20_0000, 2048));
    (a, b, released - (acquired + 4), mem)
}

#[test]
fn a_paravirtual_lock_costs_what_a_native_one_does_until_the_threshold() {
    let (a0, b0, wait, _) = contended_pair(None);
    assert!(wait > 0);
    // Threshold at or above the wait: the waiter only spins, exactly as
    // the native lock; the uncontended first map is the same too.
    for threshold in [wait, wait + 1, 1_000_000] {
        let pv = PvSpinlock {
            spin_threshold: threshold,
            kick_wake: 5000,
        };
        let (a, b, _, mem) = contended_pair(Some(pv));
        assert_eq!((a, b), (a0, b0), "threshold {threshold}");
        assert_eq!(mem.counters().pv_halts, 0);
        assert_eq!(mem.counters().lock_spin_max_ns, wait);
    }
}

#[test]
fn a_paravirtual_waiter_past_the_threshold_halts_and_wakes_after_the_kick() {
    let (_, b0, wait, _) = contended_pair(None);
    let pv = PvSpinlock {
        spin_threshold: wait - 1,
        kick_wake: 5000,
    };
    let (_, b, _, mem) = contended_pair(Some(pv));
    assert_eq!(b.lock_spin_ns, wait + 5000);
    assert_eq!(b.done_at, b0.done_at + 5000);
    assert_eq!(mem.counters().pv_halts, 1);
    assert_eq!(mem.counters().lock_spin_max_ns, wait);
    assert_eq!(mem.counters().lock_spin_ns, wait + 5000);
}

#[test]
fn a_wait_on_the_same_cpus_hold_never_halts() {
    // An interrupt on CPU 0 reaching the lock CPU 0 holds (the model books
    // the thread's hold ahead of the interrupt) waits, but is no
    // paravirtual waiter: the holder is its own CPU.
    let c = costs();
    let mut mem = IoTlbMem::new(cfg(512, 1, SearchOrder::AreaFirst, false), c);
    mem.set_pv_spinlock(PvSpinlock {
        spin_threshold: 0,
        kick_wake: 5000,
    });
    mem.map(1000, 0, MapRequest::new(0x10_0000, 2048));
    let acquired = 1000 + c.map_call + c.area_visit + c.lock_acquire;
    let released = acquired + c.used_check + c.per_slot_scan + c.per_slot_update + c.lock_release;
    let b = mem.map(
        acquired + 4 - c.map_call - c.area_visit,
        0,
        MapRequest::new(0x20_0000, 2048),
    );
    assert_eq!(b.lock_spin_ns, released - (acquired + 4));
    assert_eq!(mem.counters().pv_halts, 0);
}

#[test]
fn io_tlb_nslabs_counts_added_pools_but_not_transient_ones() {
    let mut mem = IoTlbMem::new(cfg(512, 4, SearchOrder::PoolFirst, true), costs());
    assert_eq!(mem.io_tlb_nslabs(), 512);
    // Fill the pool: the next map takes a transient pool.
    fill_all(&mut mem);
    let out = mem.map(0, 0, MapRequest::new(0x99_0000, 2048));
    assert!(out.transient);
    assert_eq!(mem.io_tlb_nslabs(), 512);
    assert_eq!(mem.counters().transient_live_max, 1);
    mem.add_pool();
    assert_eq!(mem.io_tlb_nslabs(), 1024);
}

#[test]
fn an_acquire_before_a_booked_hold_does_not_spin_on_it() {
    let c = costs();
    let mut mem = IoTlbMem::new(cfg(512, 1, SearchOrder::AreaFirst, false), c);
    // CPU 0's map is booked at a core's later busy time (10 us)...
    let a = mem.map(10_000, 0, MapRequest::new(0x10_0000, 2048));
    assert_eq!(a.lock_spin_ns, 0);
    // ...CPU 1 asks at 1 us, before that hold begins: no spin.
    let b = mem.map(1000, 1, MapRequest::new(0x20_0000, 2048));
    assert_eq!(b.lock_spin_ns, 0);
    // Inside the hold it spins until the release.
    let acquired_from = 10_000 + c.map_call + c.area_visit;
    let released = acquired_from
        + c.lock_acquire
        + c.used_check
        + c.per_slot_scan
        + c.per_slot_update
        + c.lock_release;
    let arrive = released - 1;
    let d = mem.map(
        arrive - c.map_call - c.area_visit,
        2,
        MapRequest::new(0x30_0000, 2048),
    );
    assert_eq!(d.lock_spin_ns, 1);
    assert_eq!(mem.counters().lock_spins, 1);
}

#[test]
fn single_cpu_never_full_identical_under_both_orders() {
    // Three pools; one CPU; the working set fits in its own area of the
    // newest pool, so both orders must give identical slots and times.
    let run = |order| {
        let mut mem = IoTlbMem::new(cfg(2048, 4, order, true), costs());
        mem.add_pool_with(2048, 4);
        mem.add_pool_with(2048, 4);
        let mut live = std::collections::VecDeque::new();
        let mut t = 0;
        let mut log = Vec::new();
        for i in 0..2000u64 {
            let size = [512, 4096, 8192, 65536, 2048][(i % 5) as usize];
            let o = mem.map(t, 3, MapRequest::new(0x100_0000 + i * 0x1_0000, size));
            log.push((o.slot, o.done_at, o.areas_visited, o.slots_scanned));
            t = o.done_at + 50;
            live.push_back(o.slot.unwrap());
            if live.len() > 4 {
                let u = mem.unmap(t, 3, live.pop_front().unwrap(), DmaDir::FromDevice);
                log.push((None, u.done_at, u.pools_walked, 0));
                t = u.done_at + 10;
            }
        }
        (log, *mem.counters())
    };
    let (a, ca) = run(SearchOrder::PoolFirst);
    let (b, cb) = run(SearchOrder::AreaFirst);
    assert_eq!(a, b);
    assert_eq!(ca, cb);
    assert_eq!(ca.transient_allocs, 0);
}

#[test]
fn transient_pool_when_full_freed_at_unmap() {
    let c = costs();
    let mut mem = IoTlbMem::new(cfg(512, 4, SearchOrder::AreaFirst, true), c);
    let filled = fill_all(&mut mem);
    // fill_all's probe made (and freed) one transient pool already.
    assert_eq!(filled.len(), 4);
    assert!(mem.growth_pending());
    let before = *mem.counters();
    let o = mem.map(0, 2, MapRequest::new(0x40_0000, 3 * 2048));
    assert!(o.transient);
    // The worker is already queued: not scheduled again.
    assert!(!o.schedule_growth);
    assert_eq!(o.pools_tried, 2);
    let tid = mem.transient_ids().next().unwrap();
    let tp = mem.pool(tid).unwrap();
    assert_eq!((tp.nslabs, tp.nareas, tp.transient), (3, 1, true));
    // find_pool walks the 1 regular pool, then the transient one.
    assert_eq!(mem.find_pool(o.slot.unwrap().0), (Some(tid), 2));
    assert_eq!(o.pools_walked, 2);
    assert_eq!(mem.counters().transient_allocs, before.transient_allocs + 1);
    let u = mem.unmap(o.done_at, 2, o.slot.unwrap(), DmaDir::FromDevice);
    assert!(u.transient_freed);
    // sync lookup + bounce lookup + is_swiotlb_buffer + del_transient.
    assert_eq!(u.pools_walked, 4 * 2);
    assert_eq!(u.copy_ns, c.bounce_ns(3 * 2048));
    assert_eq!(
        u.done_at,
        o.done_at + c.unmap_call + 8 * c.find_pool_per_pool + u.copy_ns + c.transient_free
    );
    assert_eq!(mem.transient_ids().count(), 0);
    assert_eq!(mem.counters().transient_frees, before.transient_frees + 1);

    // The worker's pool arrives: the next map fits without a transient pool.
    mem.add_pool();
    assert!(!mem.growth_pending());
    let o2 = mem.map(0, 2, MapRequest::new(0x40_0000, 3 * 2048));
    assert!(!o2.transient && o2.slot.is_some());
    assert_eq!(o2.areas_visited, 1);
    // Full again later: growth is scheduled anew.
    let mut grew = false;
    for k in 0..8 {
        let o = mem.map(0, k, MapRequest::new(0x10_0000, 128 * IO_TLB_SIZE));
        grew |= o.schedule_growth;
    }
    assert!(grew);
}

#[test]
fn first_failure_schedules_growth_once() {
    let mut mem = IoTlbMem::new(cfg(512, 4, SearchOrder::PoolFirst, true), costs());
    for k in 0..4 {
        assert!(mem
            .map(0, k, MapRequest::new(0, 128 * IO_TLB_SIZE))
            .slot
            .is_some());
    }
    let a = mem.map(0, 0, MapRequest::new(0x1000, 4096));
    let b = mem.map(0, 0, MapRequest::new(0x2000, 4096));
    assert!(a.transient && a.schedule_growth);
    assert!(b.transient && !b.schedule_growth);
    assert_eq!(mem.counters().growth_scheduled, 1);
    // Transient pools are not searched by later maps (not in mem->pools).
    assert_eq!(b.areas_visited, 4 + 1);
}

#[test]
fn no_growth_without_dynamic() {
    let mut mem = IoTlbMem::new(cfg(512, 4, SearchOrder::AreaFirst, false), costs());
    fill_all(&mut mem);
    let o = mem.map(0, 0, MapRequest::new(0x1000, 4096));
    assert_eq!(o.slot, None);
    assert!(!o.transient && !o.schedule_growth);
    // fill_all's probe was the first failure.
    assert_eq!(mem.counters().map_failures, 2);
}

#[test]
fn dynamic_pool_size_capped_at_max_order() {
    let mut mem = IoTlbMem::new(cfg(32768, 8, SearchOrder::AreaFirst, true), costs());
    let id = mem.add_pool();
    let p = mem.pool(id).unwrap();
    assert_eq!((p.nslabs, p.nareas), (MAX_DYN_POOL_SLABS, 8));
    let mut small = IoTlbMem::new(cfg(512, 4, SearchOrder::AreaFirst, true), costs());
    let id = small.add_pool();
    let p = small.pool(id).unwrap();
    assert_eq!((p.nslabs, p.nareas), (512, 4));
    // Newest first.
    assert_eq!(small.pool_ids().next(), Some(id));
}

#[test]
fn find_pool_walk_counts_position_in_list() {
    let mut mem = IoTlbMem::new(cfg(512, 4, SearchOrder::AreaFirst, false), costs());
    let p1 = mem.add_pool_with(512, 4);
    let p2 = mem.add_pool_with(512, 4);
    let p0 = mem.pool_ids().nth(2).unwrap();
    for (id, walked) in [(p2, 1), (p1, 2), (p0, 3)] {
        let start = mem.pool(id).unwrap().start;
        assert_eq!(mem.find_pool(start + 5000), (Some(id), walked));
    }
    assert_eq!(mem.find_pool(1).1, 3);
    assert_eq!(mem.find_pool(1).0, None);
    // Unmap of a buffer in the oldest pool, ToDevice: sync lookup,
    // is_swiotlb_buffer, del_transient, release = 4 walks of 3 pools.
    let c = costs();
    let o = {
        // Fill newest two pools' CPU-0 areas so CPU 0 lands in the oldest.
        let mut o;
        loop {
            o = mem.map(0, 0, MapRequest::new(0x8000_0000, 128 * IO_TLB_SIZE));
            if mem.find_pool(o.slot.unwrap().0).0 == Some(p0) {
                break;
            }
        }
        o
    };
    assert_eq!(o.pools_walked, 3);
    let now = o.done_at;
    let u = mem.unmap(now, 0, o.slot.unwrap(), DmaDir::ToDevice);
    assert_eq!(u.pools_walked, 12);
    assert_eq!(u.copy_ns, 0);
    assert_eq!(u.lock_spin_ns, 0);
    // 128 slots written (no free neighbours to merge), local lock.
    let release = 128 * c.per_slot_update + c.lock_release;
    assert_eq!(
        u.done_at,
        now + c.unmap_call + 12 * c.find_pool_per_pool + c.lock_acquire + release
    );
}

#[test]
fn page_sized_maps_are_page_aligned_and_stride_two() {
    let mut mem = IoTlbMem::new(cfg(512, 1, SearchOrder::AreaFirst, false), costs());
    // A 2 KiB map moves the index to 1; a 4 KiB one must skip slot 1.
    let a = mem
        .map(0, 0, MapRequest::new(0x10_0000, 2048))
        .slot
        .unwrap();
    let b = mem.map(0, 0, MapRequest::new(0x20_0000, 4096));
    let start = mem
        .pool_ids()
        .map(|id| mem.pool(id).unwrap().start)
        .next()
        .unwrap();
    assert_eq!(a.0 - start, 0);
    assert_eq!(b.slot.unwrap().0 - start, 4096);
    assert_eq!(b.slot.unwrap().0 % PAGE, 0);
    // Scanned: index 1 (misaligned vs page-aligned orig: skip by 1), then 2.
    assert_eq!(b.slots_scanned, 2);
    // A page-size map of a buffer at a 2 KiB offset in its page goes to an
    // odd slot, matching the original's bits under the mask.
    let c = mem
        .map(0, 0, MapRequest::new(0x30_0800, 4096))
        .slot
        .unwrap();
    assert_eq!((c.0 - start) % PAGE, 2048);
}

#[test]
fn min_align_mask_keeps_offset() {
    let mut c = cfg(512, 1, SearchOrder::AreaFirst, false);
    c.dev.min_align_mask = 4095; // NVMe
    let mut mem = IoTlbMem::new(c, costs());
    let o = mem.map(0, 0, MapRequest::new(0x12_3a00, 1024));
    let addr = o.slot.unwrap().0;
    // Low 12 bits preserved: offset 0xa00 within a page-aligned pair.
    assert_eq!(addr & 0xfff, 0xa00);
    let (_, pool) = (0, mem.find_pool(addr).0.unwrap());
    let p = mem.pool(pool).unwrap();
    let idx = ((addr - 0x200 - p.start) >> IO_TLB_SHIFT) as usize;
    // 0x200 offset into the slot + 1024 bytes: one slot; alloc_size kept.
    assert_eq!(p.slots[idx].alloc_size, 1024);
    assert_eq!(p.slots[idx].orig_addr, 0x12_3a00);
    mem.unmap(0, 0, o.slot.unwrap(), DmaDir::Bidirectional);
    assert!(p_is_fresh(&mem, pool));
}

fn p_is_fresh(mem: &IoTlbMem, id: PoolId) -> bool {
    let p = mem.pool(id).unwrap();
    p.slots
        .iter()
        .map(|s| s.list)
        .eq(IoTlbPool::initial_list(p.nslabs))
        && p.used() == 0
}

#[test]
fn mappings_never_cross_a_segment() {
    let mut mem = IoTlbMem::new(
        cfg(512, 1, SearchOrder::AreaFirst, false),
        SwiotlbCosts::zero(),
    );
    // 100 slots, then 60 slots: only 28 left in segment 0, so segment 1.
    let a = mem.map(0, 0, MapRequest::new(0, 100 * 2048)).slot.unwrap();
    let b = mem.map(0, 0, MapRequest::new(0, 60 * 2048)).slot.unwrap();
    let start = mem.pool(mem.pool_ids().next().unwrap()).unwrap().start;
    assert_eq!((a.0 - start) / 2048, 0);
    assert_eq!((b.0 - start) / 2048, 128);
    // Too big for a segment: fails even when empty.
    let mut empty = IoTlbMem::new(
        cfg(512, 1, SearchOrder::AreaFirst, false),
        SwiotlbCosts::zero(),
    );
    assert_eq!(empty.map(0, 0, MapRequest::new(0, 129 * 2048)).slot, None);
}

#[test]
fn search_wraps_from_area_index() {
    // One area of 256 slots: fill 0..200, free 0..100, index is at 200.
    let mut mem = IoTlbMem::new(
        cfg(256, 1, SearchOrder::AreaFirst, false),
        SwiotlbCosts::zero(),
    );
    let a = mem.map(0, 0, MapRequest::new(0, 100 * 2048)).slot.unwrap();
    let _b = mem.map(0, 0, MapRequest::new(0, 100 * 2048)).slot.unwrap();
    mem.unmap(0, 0, a, DmaDir::ToDevice);
    let id = mem.pool_ids().next().unwrap();
    assert_eq!(mem.pool(id).unwrap().areas[0].index, 228);
    // 40 slots (80 KiB, so page-aligned: stride 2): 228..256 has only 28
    // free in the segment; the scan looks at 228, 230, ..., 254 (14
    // slots), wraps to 0 and finds room there.
    let o = mem.map(0, 0, MapRequest::new(0, 40 * 2048));
    let start = mem.pool(id).unwrap().start;
    assert_eq!((o.slot.unwrap().0 - start) / 2048, 0);
    assert_eq!(o.slots_scanned, 14 + 1);
    // Below a page the stride is 1: fill 0..=126, 127, 128..=254, 255
    // (index wraps to 0), free 127; a 2 KiB map scans slots 0..=127.
    let mut mem = IoTlbMem::new(
        cfg(256, 1, SearchOrder::AreaFirst, false),
        SwiotlbCosts::zero(),
    );
    let start = mem.pool(mem.pool_ids().next().unwrap()).unwrap().start;
    let mut got = Vec::new();
    for n in [127, 1, 127, 1] {
        let s = mem.map(0, 0, MapRequest::new(0, n * 2048)).slot.unwrap();
        got.push((s.0 - start) / 2048);
    }
    assert_eq!(got, vec![0, 127, 128, 255]);
    mem.unmap(0, 0, SlotAddr(start + 127 * 2048), DmaDir::ToDevice);
    let o = mem.map(0, 0, MapRequest::new(0, 2048));
    assert_eq!((o.slot.unwrap().0 - start) / 2048, 127);
    assert_eq!(o.slots_scanned, 128);
}

#[test]
fn bounce_ns_from_bandwidth() {
    let c = costs();
    assert_eq!(c.bounce_ns(0), 0);
    assert_eq!(c.bounce_ns(4096), 512);
    assert_eq!(c.bounce_ns(4097), 513);
    assert!(c.validate().is_ok());
    let mut bad = c;
    bad.memcpy_bytes_per_ns = 0.0;
    assert!(bad.validate().is_err());
}

#[test]
fn a_preempted_holder_makes_its_waiter_wait_the_preemption_too() {
    // CPU 0 holds the one area's lock; its vCPU loses its physical CPU
    // for 50 us from 2 ns into the hold. CPU 1, arriving during the hold,
    // waits the rest of the hold plus the 50 us; on a paravirtual lock
    // with a 10 us threshold it halts and pays the kick too.
    let c = costs();
    let acquired = 1000 + c.map_call + c.area_visit + c.lock_acquire;
    let released = acquired + c.used_check + c.per_slot_scan + c.per_slot_update + c.lock_release;
    let steal = 50_000;
    for pv in [
        None,
        Some(PvSpinlock {
            spin_threshold: 10_000,
            kick_wake: 5000,
        }),
    ] {
        let mut mem = IoTlbMem::new(cfg(512, 1, SearchOrder::AreaFirst, false), c);
        if let Some(pv) = pv {
            mem.set_pv_spinlock(pv);
        }
        mem.map(1000, 0, MapRequest::new(0x10_0000, 2048));
        // Another CPU's preemption or one outside the hold changes nothing.
        assert_eq!(mem.preempt_holder(1, acquired + 2, steal), 0);
        assert_eq!(mem.preempt_holder(0, released, steal), 0);
        assert_eq!(mem.preempt_holder(0, acquired + 2, steal), 1);
        let now1 = acquired + 4 - c.map_call - c.area_visit;
        let b = mem.map(now1, 1, MapRequest::new(0x20_0000, 2048));
        let wait = released + steal - (acquired + 4);
        let kick = pv.map_or(0, |p| p.kick_wake);
        assert_eq!(b.lock_spin_ns, wait + kick, "{pv:?}");
        assert_eq!(mem.counters().holder_preemptions, 1);
        assert_eq!(mem.counters().pv_halts, u64::from(pv.is_some()));
    }
}
