//! brd (drivers/block/brd.c): the RAM disk `/dev/ramN`. A bio-based
//! driver: `brd_submit_bio` copies each segment between the bio's pages and
//! the disk's own pages (`copy_to_brd` / `copy_from_brd`, a page lookup in
//! the disk's xarray and a `memcpy`) and ends the bio with `bio_endio`, all
//! in the submitter's context: no tag set, no interrupt, no polling. Module
//! parameters as the kernel names them (Documentation/admin-guide/
//! blockdev/ramdisk.rst): `rd_size` (KiB per disk); `rd_nr` and `max_part`
//! do not change one disk's timing.
//!
//! The device is memory ([`RamDevice`]): the copy takes the command's bytes
//! at the core's copy rate. It runs on the submitting CPU through
//! [`DriverCtx::run_on_cpu`], so it is scaled by that core's clock, booked
//! as its system time and seen by its idle governor, and the request
//! completes inline when the copy is done.
//!
//! Not modelled: the page allocation on a page's first write
//! (`brd_insert_page`) and the zeroing of never-written pages on read; the
//! task that submitted a synchronous bio is woken by the completion
//! although brd completed it before the task could sleep (the inline
//! completion path is shared with null_blk's `irqmode=0`).

use super::{BlkStatus, CompletionSignal, DiskInfo, Driver, DriverCpuCosts, DriverCtx, DriverRq};
use crate::device::ram::RamDevice;
use crate::device::{BadBlocks, UNIT};
use crate::profile::limits::{COST, RATE};
use crate::profile::{range, Profile};
use crate::types::Ddir;

/// brd has no tag set (it is bio-based); the model's block layer needs a
/// depth, and blk-mq's largest (BLK_MQ_MAX_DEPTH, include/linux/blk-mq.h)
/// never limits what a job keeps in flight.
const BIO_BASED_DEPTH: u32 = 10240;

pub struct Brd {
    /// The disk's pages: its copy time per command.
    memory: RamDevice,
    capacity: u64,
    /// One lookup of a disk page in the xarray (`brd_lookup_page`) per
    /// 4 KiB of the bio, reference-clock ns.
    page_lookup: u64,
    cpu: DriverCpuCosts,
    bios: u64,
    bytes_copied: u64,
    badblocks: BadBlocks,
}

crate::params! {
    /// brd's module parameter and the costs of its bio path
    /// (drivers/block/brd.c).
    pub struct BrdParams {
        /// rd_size: the RAM disk's size in KiB.
        rd_size: u64 = required count(
            "device.rd_size",
            range(
                1024.0,
                (1u32 << 30) as f64,
                "brd's rd_size in KiB: from 1 MiB (job files are laid out in 1 MiB steps) to \
                 1 TiB of RAM",
            )
        ),
        /// The copy to or from the disk's pages (memcpy_to_page /
        /// memcpy_from_page).
        copy_rate: f64 = required rate("device.copy_rate", RATE),
        /// One lookup of a disk page in the xarray (`brd_lookup_page`) per
        /// 4 KiB of the bio.
        page_lookup: u64 = required ns("device.page_lookup", COST),
        /// brd_submit_bio's fixed cost (brd is bio-based: no queue_rq).
        submit_bio: u64 = required ns("driver.submit_bio", COST),
    }
}

impl Brd {
    pub fn from_profile(p: &Profile) -> crate::Result<Brd> {
        let bp = BrdParams::read(p)?;
        let capacity = bp.rd_size * 1024;
        Ok(Brd {
            // One core copies one bio at a time: the core's own booking
            // serialises them, so only the service time is used here.
            memory: RamDevice::serial(capacity, 0, bp.copy_rate),
            capacity,
            page_lookup: bp.page_lookup,
            cpu: DriverCpuCosts {
                submit: bp.submit_bio,
                irq_handler: 0,
                poll_iteration: 0,
            },
            bios: 0,
            bytes_copied: 0,
            badblocks: BadBlocks::from_profile(p)?,
        })
    }
}

impl<E> Driver<E> for Brd {
    fn bio_based(&self) -> bool {
        true
    }

    fn info(&self) -> DiskInfo {
        DiskInfo {
            name: "ram0".into(),
            capacity: self.capacity,
            queue_depth: BIO_BASED_DEPTH,
            hw_queues: 1,
            can_poll: false,
            cpu_costs: self.cpu,
            completion_signal: CompletionSignal::Inline,
        }
    }

    fn queue_rq(&mut self, rq: DriverRq, ctx: &mut DriverCtx<'_, E>) {
        let pages = u64::from(rq.len).div_ceil(UNIT);
        // A discard (brd_do_discard) frees the pages: lookups, no copy.
        let copy = match rq.ddir {
            Ddir::Read | Ddir::Write => {
                self.bytes_copied += u64::from(rq.len);
                self.memory.service_ns(rq.len)
            }
            Ddir::Trim => 0,
        };
        let done = ctx.run_on_cpu(rq.cpu, ctx.now(), pages * self.page_lookup + copy);
        self.bios += 1;
        // (brd itself has no bad blocks; `device.badblocks` fails the bio
        // as null_blk's would, after the same work.)
        let status = self.badblocks.status(&rq.command());
        ctx.complete(done, rq.tag, BlkStatus::from_device(status));
    }

    fn counters(&self) -> serde_json::Value {
        serde_json::json!({
            "driver": "brd",
            "bios": self.bios,
            "bytes_copied": self.bytes_copied,
        })
    }
}
