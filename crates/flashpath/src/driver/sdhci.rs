//! An SD card on an SDHCI host through the mmc block driver's legacy path
//! (drivers/mmc/core/block.c, drivers/mmc/host/sdhci.c): blk-mq hands the
//! mmc queue up to `queue_depth` requests, the mmc core issues them to the
//! card one at a time in arrival order (no command queue on SD). Each
//! request's time on bus and card is [`request_ns`] (the service-time
//! card) or [`flash_request`] (a card over the flash core); the host's
//! data-transfer-complete interrupt then goes to the guest's interrupt
//! CPU.

use super::{BlkStatus, DiskInfo, Driver, DriverCpuCosts, DriverCtx, DriverRq};
use crate::device::sd::{SdCard, SdDevice, SdFlashCard};
use crate::device::{BadBlocks, BlockBackend, Command, Completion, Status};
use crate::error::Result;
use crate::link::sd::SdBus;
use crate::profile::limits::QUEUE_DEPTH;
use crate::profile::Profile;
use crate::sim::Ns;
use crate::types::Ddir;

/// One request end to end on bus and card: the command on the bus, then
/// the card's work and the data transfer (reads: card then bus; writes:
/// bus then program).
pub fn request_ns(bus: &SdBus, card: &mut SdCard, ddir: Ddir, bytes: u64) -> Ns {
    let cmd = Command::new(ddir, 0, bytes as u32);
    let card_done = card.submit(bus.cmd, &cmd).at;
    card_done + bus.data_ns(bytes)
}

/// One request on bus and a flash-backed card, the bus free from `start`:
/// the command on the bus; a read's card work, then its data on the bus; a
/// write's data on the bus, then the card's work (the card holds DAT0 busy
/// until it has taken the data). Returns when it ends and how.
pub fn flash_request(bus: &SdBus, card: &mut SdFlashCard, start: Ns, cmd: &Command) -> Completion {
    let at = start + bus.cmd;
    let bytes = u64::from(cmd.len);
    if cmd.op == crate::device::Op::Read {
        let c = card.submit(at, cmd);
        Completion {
            at: c.at + bus.data_ns(bytes),
            ..c
        }
    } else {
        card.submit(at + bus.data_ns(bytes), cmd)
    }
}

pub struct Sdhci {
    name: String,
    queue_depth: u32,
    bus: SdBus,
    card: SdDevice,
    cpu: DriverCpuCosts,
    /// When the card (and the one-at-a-time mmc host) is free again.
    free_at: Ns,
    completed: u64,
    busy_ns: u64,
    badblocks: BadBlocks,
}

crate::params! {
    /// The SD host controller driver's queue.
    pub struct SdhciParams {
        /// Requests the mmc block queue holds.
        queue_depth: u32 = required count_u32("driver.queue_depth", QUEUE_DEPTH),
    }
}

impl Sdhci {
    pub fn from_profile(p: &Profile) -> Result<Sdhci> {
        Ok(Sdhci {
            name: "mmcblk0".into(),
            queue_depth: SdhciParams::read(p)?.queue_depth,
            bus: SdBus::from_profile(p)?,
            card: SdDevice::from_profile(p)?,
            cpu: DriverCpuCosts::from_profile(p, false)?,
            free_at: 0,
            completed: 0,
            busy_ns: 0,
            badblocks: BadBlocks::from_profile(p)?,
        })
    }
}

impl<E> Driver<E> for Sdhci {
    fn info(&self) -> DiskInfo {
        DiskInfo::single_queue(&self.name, self.card.capacity(), self.queue_depth, self.cpu)
    }
    fn queue_rq(&mut self, rq: DriverRq, ctx: &mut DriverCtx<'_, E>) {
        let start = ctx.now().max(self.free_at);
        let cmd = rq.command();
        let (end, card_status) = match &mut self.card {
            SdDevice::Service(card) => (
                start + request_ns(&self.bus, card, rq.ddir, u64::from(rq.len)),
                Status::Ok,
            ),
            SdDevice::Flash(card) => {
                let c = flash_request(&self.bus, card, start, &cmd);
                (c.at, c.status)
            }
        };
        self.busy_ns += end - start;
        self.free_at = end;
        self.completed += 1;
        // The card's R1 error bits (a bad sector: an ECC failure) end the
        // request with BLK_STS_IOERR (mmc_blk_mq_complete_rq).
        let status = match card_status {
            Status::Ok => self.badblocks.status(&cmd),
            s => s,
        };
        ctx.complete(self.free_at, rq.tag, BlkStatus::from_device(status));
    }
    fn counters(&self) -> serde_json::Value {
        let mut v = serde_json::json!({
            "kind": "sdhci",
            "completed": self.completed,
            "card_busy_ns": self.busy_ns,
        });
        // A card over the flash core shows its layer's sections (`ftl`,
        // `gc`, `nand` for the page FTL), as the NVMe flash SSD does.
        if let (SdDevice::Flash(card), Some(out)) = (&self.card, v.as_object_mut()) {
            card.layer().counters(out);
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_profile_card_meets_a1_and_class_10() {
        let p = Profile::load("rpi4-sdcard").unwrap();
        let bus = SdBus::from_profile(&p).unwrap();
        let mut card = SdCard::from_profile(&p).unwrap();
        let mut iops = |ddir| 1e9 / request_ns(&bus, &mut card, ddir, 4096) as f64;
        let (read_iops, write_iops) = (iops(Ddir::Read), iops(Ddir::Write));
        assert!(read_iops >= 1500.0, "{read_iops}");
        assert!(write_iops >= 500.0, "{write_iops}");
        let t = request_ns(&bus, &mut card, Ddir::Write, 4 << 20);
        let seq = (4u64 << 20) as f64 * 1e9 / t as f64;
        assert!(seq >= 10e6, "{seq}");
    }
}
