//! Steady-state random writes on MQSim's default device (profile
//! `mqsim-default`, scaled to one die of 512 blocks a plane with MQSim's
//! 5% GC threshold kept): the timed FTL's write amplification against
//! greedy GC's closed form at the effective spare, and its throughput
//! against the NAND time that write amplification costs the die. MQSim's
//! 7% over-provisioning less the 5% of blocks its GC keeps free leaves
//! about 2% of effective spare, so the write amplification is about 23
//! and the steady-state rate a few percent of the fresh drive's: low, and
//! what the closed form says it must be.
//!
//! Greedy's mean-field value is the limit of many blocks; with fewer,
//! greedy finds emptier victims among the spread of valid counts and the
//! WA is below it (measured, 3 capacities to steady state then 1: -7.4%
//! at 256 blocks, -4.0% at 512, -1.9% at 1024, -1.0% at MQSim's 2048,
//! where it is 23.17 against 23.41).

mod common;

use flashpath::device::ftl::analytic;
use flashpath::device::{FlashDevice, FlashParams};
use flashpath::sim::rng::RngStream;
use flashpath::sim::Ns;

fn scaled_mqsim() -> FlashParams {
    let p = common::profile(
        "mqsim-default",
        &[
            "device.flash.channels=1",
            "device.flash.chips_per_channel=1",
            "device.flash.dies_per_chip=1",
            "device.flash.blocks_per_plane=512",
            // MQSim's block_pool_gc_threshold: (unsigned) (0.05 x 512) = 25.
            "device.flash.gc_low_free_blocks=25",
            "device.flash.gc_high_free_blocks=26",
            "device.flash.write_buffer_units=256",
            // The whole map in the controller: no map traffic in the sum.
            "device.flash.map_cache_pages=256",
        ],
    );
    let mut fp = FlashParams::from_profile(&p).unwrap();
    fp.check_integrity = false;
    fp
}

#[test]
fn steady_state_random_writes_match_greedy_gc_closed_forms() {
    let p = scaled_mqsim();
    let g = p.geometry;
    let dies = f64::from(g.dies());
    let row_units = f64::from(g.planes_per_die * p.units_per_page());
    let block_units = row_units * f64::from(g.pages_per_block);
    let alpha = analytic::effective_alpha(&p);
    let mean_field = analytic::wa_greedy_mean_field(alpha, block_units as u32);

    let mut dev = FlashDevice::new(&p, 1).unwrap();
    // Full, then 2 device capacities of random overwrites: steady state
    // (3, 6 and 10 give the same WA within 0.3%).
    dev.precondition(true, 2.0, 1);
    assert!(dev.load_whole_map(), "the scaled map fits the map cache");
    let user = dev.user_lpns();
    let mut rng = RngStream::new(2, "steady");
    // Timed writes at saturation: each is issued when the previous one
    // was accepted (the write buffer's back-pressure paces them).
    let n = user / 4;
    let mut now: Ns = 0;
    for _ in 0..n {
        now = dev.write(now, rng.below(user), 1);
    }
    let end = dev.flush(now);
    dev.audit().unwrap();
    let s = dev.stats().clone();
    let wa = s.waf();
    eprintln!(
        "effective alpha {alpha:.4}: WA {wa:.2}, greedy mean field {mean_field:.2}, LRW {:.2}",
        analytic::wa_lrw(alpha)
    );
    assert!(
        wa < mean_field && wa / mean_field > 0.95,
        "WA {wa:.2} vs greedy closed form {mean_field:.2}: at most 5% below it at 512 blocks"
    );

    // The die's NAND time per host unit at that WA: A / r rows programmed
    // (command, the row in, tPROG), A / b victims per unit, each with
    // every row holding valid data sensed (at u = 1 - 1/A nearly every
    // row) and erased, and the A - 1 moved units out over the channel.
    let nand = dev.nand();
    let t = nand.timing;
    let cmd = nand.chan.cmd_ns as f64;
    let row_bytes = u64::from(g.planes_per_die) * u64::from(g.page_bytes);
    let program = cmd + nand.xfer_ns(row_bytes) as f64 + t.t_prog as f64;
    let victims = wa / block_units;
    let rows_read = victims * f64::from(g.pages_per_block);
    let overhead = nand.chan.xfer_overhead_ns as f64;
    let unit_out = nand.xfer_ns(4096) as f64 - overhead;
    let per_unit = wa / row_units * program
        + rows_read * (cmd + t.t_read as f64 + overhead)
        + (wa - 1.0) * unit_out
        + victims * (cmd + t.t_erase as f64);
    let want_iops = dies * 1e9 / per_unit;
    let got_iops = n as f64 * 1e9 / end as f64;
    eprintln!(
        "steady state: {got_iops:.0} unit writes/s vs {want_iops:.0} from the NAND time at WA {wa:.2} \
         ({:.0} us per unit per die)",
        per_unit / 1e3
    );
    assert!(
        (got_iops / want_iops - 1.0).abs() < 0.05,
        "throughput {got_iops:.0} vs closed form {want_iops:.0}"
    );
    assert!(s.gc_runs > 0 && s.units_programmed_gc > 0);
}
