//! The flash device's read path allocates nothing once warm: the map
//! lookup, the write-buffer check, the rows sensed per request and the
//! channel timelines (whose interval array is compacted in place when
//! pruning has left it full, never grown). Counted with a global allocator
//! that counts this thread's allocations while a flag is set.

mod common;

use common::counting_alloc::{allocations_in, Counting};
use flashpath::device::{FlashDevice, FlashParams};
use flashpath::sim::rng::RngStream;

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Reads of 1 to 32 units at random offsets, many in flight at once (the
/// clock advances by less than a read takes), so that each channel keeps
/// many booked intervals and prunes them as time passes.
fn reads(dev: &mut FlashDevice, rng: &mut RngStream, now: &mut u64, n: u32) -> u64 {
    let mut last = 0;
    for _ in 0..n {
        let units = 1 + rng.below(32) as u32;
        let lpn = rng.below(dev.user_lpns() - u64::from(units));
        last = last.max(dev.read(*now, lpn, units));
        *now += 2_000;
    }
    last
}

#[test]
fn flash_read_path_allocates_nothing_when_warm() {
    let mut p = FlashParams::small(2, 4, 64, 64);
    p.check_integrity = false;
    let mut dev = FlashDevice::new(&p, 3).unwrap();
    let mut rng = RngStream::new(5, "reads");
    let mut now = 0;
    // Some units written, some still in the write buffer: reads take the
    // buffer check's both ways.
    for l in (0..2_000).step_by(3) {
        now = dev.write(now, l, 1);
    }
    reads(&mut dev, &mut rng, &mut now, 2_000);
    let (last, allocations) = allocations_in(|| reads(&mut dev, &mut rng, &mut now, 20_000));
    // The last read ends a tR (25 us) and more after its issue, 2 us before
    // `now`: the reads were done, not skipped.
    assert!(last > now, "last read done at {last}, issued by {now}");
    assert_eq!(allocations, 0, "allocations on the warm read path");
}
