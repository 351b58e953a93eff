//! The NVMe controller's queued path allocates nothing once warm: commands
//! wait in submission queues whose rings were reserved at their depth and
//! are fetched by arbitration into a reused vector. Counted with a global
//! allocator that counts this thread's allocations while a flag is set.

mod common;

use common::counting_alloc::{allocations_in, Counting};
use flashpath::device::nvme_arb::{Qprio, Queued};
use flashpath::device::nvme_flash::NvmeFlashSsd;
use flashpath::device::{Command, Completion};
use flashpath::workload::Ddir;

#[global_allocator]
static GLOBAL: Counting = Counting;

/// `n` reads from three queues (one of each weighted class under WRR) in
/// bursts that arrive faster than four slots serve them: (commands that
/// waited, last completion).
fn reads(
    d: &mut NvmeFlashSsd,
    out: &mut Vec<(Queued, Completion)>,
    now: &mut u64,
    n: u32,
) -> (u64, u64) {
    let before = d.stats.queued;
    let mut last = 0;
    for i in 0..n {
        while let Some(t) = d.next_arbitration().filter(|&t| t <= *now) {
            d.arbitrate(t, out);
            for (_, c) in out.drain(..) {
                last = last.max(c.at);
            }
        }
        let q = Queued {
            at: *now,
            cmd: Command::new(Ddir::Read, u64::from(i % 50_000) * 8192, 4096),
            xfer: 1_000,
            posted: 500,
            cid: i,
        };
        if let Some(c) = d.offer((i % 3) as usize, q) {
            last = last.max(c.at);
        }
        // Bursts of 90 (30 a queue, within its 1024 entries), then a
        // pause in which the controller serves them all.
        *now += if i % 90 == 89 { 3_000_000 } else { 5_000 };
    }
    (d.stats.queued - before, last)
}

#[test]
fn queued_path_allocates_nothing_when_warm() {
    let p = common::profile(
        "nvme-970evoplus-1tb",
        &["device.nvme.cmd_slots=4", "device.nvme.arbitration=wrr"],
    );
    let mut d = NvmeFlashSsd::from_profile(&p, 0).unwrap();
    d.create_queues(&[Qprio::High, Qprio::Medium, Qprio::Low], 1024, true);
    let mut out = Vec::with_capacity(16);
    let mut now = 0;
    reads(&mut d, &mut out, &mut now, 5_000);
    let ((queued, last), allocations) =
        allocations_in(|| reads(&mut d, &mut out, &mut now, 20_000));
    assert!(queued > 15_000, "commands that waited: {queued}");
    assert!(last > 0);
    assert_eq!(allocations, 0, "allocations on the warm queued path");
}
