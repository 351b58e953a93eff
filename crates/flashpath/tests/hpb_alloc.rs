//! The HPB per-I/O path allocates nothing once warm: prep, the device's
//! recommendation, the host's response handling, map_work with region
//! evictions and the load of a sub-region's map (map contexts come back
//! to a pool, as ufshpb's mempool). Counted with a global allocator that
//! counts this thread's allocations while a flag is set.

mod common;

use common::counting_alloc::{allocations_in, Counting};
use common::Sides;

use flashpath::device::{FlashDevice, FlashParams};
use flashpath::driver::ufshpb::{HpbDevicePolicy, HpbMode, HpbParams, Prep};
use flashpath::sim::rng::RngStream;

#[global_allocator]
static GLOBAL: Counting = Counting;

/// One read through both sides, loads completing at once from the device's
/// map (bulk copy or factory rule, as the driver does).
fn read(h: &mut Sides, dev: &FlashDevice, loads: &mut Vec<(u32, u32)>, lpn: u64) {
    match h.prep_read(lpn, 1) {
        Prep::HpbRead(ppn) => {
            assert_eq!(Some(ppn), dev.ppn_of(lpn));
            h.device.hpb_read(lpn);
        }
        Prep::Normal => h.device.normal_read(lpn),
    }
    let rsp = h.device.take_rsp();
    if rsp.is_empty() {
        return;
    }
    h.host_rsp(&rsp);
    loads.clear();
    h.map_work(loads);
    for &(r, s) in loads.iter() {
        let (start, n) = h.srgn_span(r, s, dev.user_lpns());
        let factory = dev.run_is_factory(start, n);
        h.map_loaded_with(r, s, factory, |buf| {
            let (live, rest) = buf.split_at_mut(n as usize);
            dev.ppns_into(start, live);
            rest.fill(u32::MAX);
        });
    }
}

#[test]
fn hpb_read_path_allocates_nothing_when_warm() {
    let mut p = FlashParams::small(2, 2, 64, 64);
    p.check_integrity = false;
    let mut dev = FlashDevice::new(&p, 2).unwrap();
    // One chunk rewritten, so loads exercise both the copy and the rule.
    let mut now = 0;
    for l in (0..4096).step_by(7) {
        now = dev.write(now, l, 1);
    }
    dev.flush(now);
    let hp = HpbParams {
        mode: HpbMode::Device,
        entries_per_region: 2048,
        entries_per_srgn: 512,
        max_active_regions: 3,
        device_activation_reads: 1,
        device_policy: HpbDevicePolicy::Lru,
        eviction_thld_enter: 256,
        eviction_thld_exit: 128,
        normalization_factor: 1,
        activation_thld: 8,
        max_single_cmd_blocks: 1,
    };
    let mut h = Sides::new(hp, dev.user_lpns());
    h.set_factory_layout(dev.factory_layout());
    let range = 6 * 2048; // twice the active-region limit: evictions go on
    let mut rng = RngStream::new(4, "hpb.alloc");
    let mut loads = Vec::with_capacity(16);
    for _ in 0..20_000 {
        read(&mut h, &dev, &mut loads, rng.below(range));
    }
    let before = h.stats;
    let ((), allocations) = allocations_in(|| {
        for _ in 0..20_000 {
            read(&mut h, &dev, &mut loads, rng.below(range));
        }
    });
    let after = h.stats;
    assert!(
        after.lru_evictions + after.rcmd_inactive_cnt
            > before.lru_evictions + before.rcmd_inactive_cnt,
        "regions were evicted while counting"
    );
    assert!(
        after.map_req_cnt > before.map_req_cnt + 100,
        "loads went on"
    );
    assert!(after.hit_cnt > before.hit_cnt, "and hits");
    assert_eq!(allocations, 0, "allocations on the warm HPB path");
}
