//! NVMe over PCIe (drivers/nvme/host/pci.c), driving a
//! [`crate::device::nvme_flash::NvmeDevice`]: the service-time model or the
//! flash SSD.
//!
//! One submission/completion queue pair per CPU (`driver.io_queues`
//! interrupt-driven pairs, each with its own MSI-X vector routed to its
//! CPU), plus `driver.poll_queues` pairs without interrupts for polled
//! I/O (`nvme.poll_queues`, v5.0 on). A request's path: `nvme_queue_rq`
//! writes the 64-byte command into the SQ and rings the SQ tail doorbell
//! (a posted MMIO write, its CPU cost in `driver.queue_rq`); the doorbell
//! reaches the controller one link latency later; the controller fetches
//! the command (a read round trip), serves it (fixed time plus bytes at
//! the media rate), moves the data over the link and posts the completion
//! entry (posted writes, in order), followed by the MSI-X message of the
//! CQ's vector unless it is a poll queue.
//!
//! The driver creates the controller's I/O submission queues as
//! nvme_setup_io_queues does: `driver.io_queues` (a request goes to its
//! CPU's, `cpu % io_queues`, as blk_mq_map_queues spreads them), then
//! `driver.poll_queues` for polled requests. Mainline creates every queue
//! without a priority (adapter_alloc_sq sets no QPRIO: 00b) and enables
//! the controller with round robin (nvme_enable_ctrl: NVME_CC_AMS_RR).
//!
//! **Not mainline:** `driver.wrr_urgent_queues`, `wrr_high_queues`,
//! `wrr_medium_queues`, `wrr_low_queues` model Weiping Zhang's series
//! "[PATCH v3 0/5] Add support Weighted Round Robin for blkcg and nvme"
//! (linux-nvme, June 2019; later versions to 2020, never merged): nvme-pci
//! creates that many queues of each class (Create I/O SQ with QPRIO) after
//! the others and sets CC.AMS to weighted round robin when the controller
//! supports it (CAP.AMS bit 0) and any of them is non-zero; without that
//! support it keeps round robin and no class queue is created
//! (nvme_pci_get_ams resets the counts). The series chose a request's
//! class by its block cgroup (`blkio.wrr`); the model chooses it by the
//! request's I/O priority, its own choice: RT is Urgent; BE levels 0-2
//! High, 3-4 Medium (4 is the level of a task without one), 5-7 Low; IDLE
//! Low. A class without queues uses the default queues.
//!
//! Polling without poll queues is v4.4's classic poll: `blk_poll` spins
//! on the interrupt-driven CQ and the interrupt still fires
//! (`driver.classic_poll_irq`); with it off and no poll queues, the queue
//! cannot poll (v5.0+: `REQ_HIPRI` needs a poll queue).

use super::{
    BlkStatus, CompletionSignal, DiskInfo, Driver, DriverCpuCosts, DriverCtx, DriverEvent,
    DriverRq, WriteCache, ZonedLimits,
};
use crate::device::nvme_arb::{Qprio, Queued};
use crate::device::nvme_flash::NvmeDevice;
use crate::device::{BadBlocks, BlockBackend, Command, Completion};
use crate::link::pcie::Pcie;
use crate::profile::{range, Profile, Range};
use crate::sim::queue::Timer;
use crate::sim::Ns;
use crate::types::Ddir;

/// The driver's events.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// A command slot frees in the controller while commands wait in the
    /// submission queues: it arbitrates.
    Arbitrate,
}

pub struct Nvme {
    queue_depth: u32,
    io_queues: u32,
    poll_queues: u32,
    classic_poll_irq: bool,
    ssd: NvmeDevice,
    link: Pcie,
    cpu: DriverCpuCosts,
    commands: u64,
    polled_commands: u64,
    doorbells: u64,
    /// `device.badblocks`: LBAs the namespace fails.
    badblocks: BadBlocks,
    /// The queues of each WRR class (Urgent, High, Medium, Low), after the
    /// default and poll queues; all empty when WRR is not in use.
    wrr_queues: [u32; 4],
    /// The controller's next arbitration.
    arbitrate: Timer,
    /// Commands the last arbitration served (reused: no allocation).
    served: Vec<(Queued, Completion)>,
    /// Each tag's completion result not yet taken (a Zone Append's LBA).
    results: Vec<Option<u64>>,
}

/// NVMe queue identifiers: 16 bits, QID 0 the admin queue.
const QUEUE_IDS: Range = range(
    0.0,
    65535.0,
    "NVMe queue identifiers are 16 bits and QID 0 is the admin queue",
);

crate::params! {
    /// The nvme driver's module parameters (drivers/nvme/host/pci.c).
    pub struct NvmeDriverParams {
        /// io_queue_depth: entries of each submission queue (one stays
        /// empty: blk-mq gets one tag fewer).
        io_queue_depth: u32 = required count_u32(
            "driver.io_queue_depth",
            range(
                2.0,
                4095.0,
                "nvme's io_queue_depth module parameter (drivers/nvme/host/pci.c \
                 io_queue_depth_set refuses < 2 and > 4095)",
            )
        ),
        /// Interrupt-driven queue pairs, one MSI-X vector each.
        io_queues: u32 = required count_u32(
            "driver.io_queues",
            range(1.0, QUEUE_IDS.max, QUEUE_IDS.why)
        ),
        /// poll_queues: queue pairs without interrupts for polled I/O
        /// (v5.0 on).
        poll_queues: u32 = required count_u32("driver.poll_queues", QUEUE_IDS),
        /// v4.4's classic poll: `blk_poll` spins on the interrupt-driven CQ
        /// and the interrupt still fires.
        classic_poll_irq: bool = required flag("driver.classic_poll_irq"),
        /// NOT MAINLINE (Weiping Zhang's 2019 WRR series): queues of the
        /// Urgent class. Absent: 0, as mainline.
        wrr_urgent_queues: u32 = default(0) count_u32("driver.wrr_urgent_queues", QUEUE_IDS),
        /// NOT MAINLINE: queues of the High class. Absent: 0.
        wrr_high_queues: u32 = default(0) count_u32("driver.wrr_high_queues", QUEUE_IDS),
        /// NOT MAINLINE: queues of the Medium class. Absent: 0.
        wrr_medium_queues: u32 = default(0) count_u32("driver.wrr_medium_queues", QUEUE_IDS),
        /// NOT MAINLINE: queues of the Low class. Absent: 0.
        wrr_low_queues: u32 = default(0) count_u32("driver.wrr_low_queues", QUEUE_IDS),
    }
}

/// The WRR class of a request's I/O priority (include/uapi/linux/ioprio.h:
/// the class in bits 15:13, the level in 2:0): the model's mapping for the
/// not-mainline WRR queues (module doc).
fn wrr_class(ioprio: u16) -> Qprio {
    const RT: u16 = 1;
    const IDLE: u16 = 3;
    match (ioprio >> 13, ioprio & 7) {
        (RT, _) => Qprio::Urgent,
        (IDLE, _) => Qprio::Low,
        // NONE (0) is a task without a priority: BE at level 4
        // (IOPRIO_BE_NORM for nice 0).
        (0, _) => Qprio::Medium,
        (_, 0..=2) => Qprio::High,
        (_, 3..=4) => Qprio::Medium,
        _ => Qprio::Low,
    }
}

impl Nvme {
    pub fn from_profile(p: &Profile) -> crate::Result<Nvme> {
        let np = NvmeDriverParams::read(p)?;
        let mut ssd = NvmeDevice::from_profile(p)?;
        let wrr_asked = [
            np.wrr_urgent_queues,
            np.wrr_high_queues,
            np.wrr_medium_queues,
            np.wrr_low_queues,
        ];
        let total = np.io_queues as u64
            + np.poll_queues as u64
            + wrr_asked.iter().map(|&n| n as u64).sum::<u64>();
        if total > QUEUE_IDS.max as u64 {
            // Named where the last queue count that pushed it over came
            // from (a --set, or the profile's file).
            const KEYS: [&str; 4] = [
                "driver.wrr_urgent_queues",
                "driver.wrr_high_queues",
                "driver.wrr_medium_queues",
                "driver.wrr_low_queues",
            ];
            let key = KEYS
                .iter()
                .zip(wrr_asked)
                .filter(|&(_, n)| n > 0)
                .map(|(k, _)| *k)
                .next_back()
                .unwrap_or("driver.poll_queues");
            return Err(crate::error::InputError::new(
                p.file_of(key),
                None,
                format!(
                    "driver.io_queues + driver.poll_queues + driver.wrr_*_queues = {total}: \
                     more I/O queues than the {} NVMe queue identifiers allow",
                    QUEUE_IDS.max
                ),
            ));
        }
        // nvme_pci_get_ams in the WRR series: the class queues exist only
        // where the controller supports WRR.
        let wrr = wrr_asked.iter().any(|&n| n > 0) && ssd.supports_wrr();
        let wrr_queues = if wrr { wrr_asked } else { [0; 4] };
        let mut prios = vec![Qprio::Urgent; (np.io_queues + np.poll_queues) as usize];
        for (c, &n) in Qprio::ALL.iter().zip(&wrr_queues) {
            prios.extend(std::iter::repeat_n(*c, n as usize));
        }
        ssd.create_queues(&prios, np.io_queue_depth as usize, wrr);
        Ok(Nvme {
            // One slot of each queue stays empty (head == tail means empty):
            // blk-mq gets io_queue_depth - 1 tags.
            queue_depth: np.io_queue_depth - 1,
            io_queues: np.io_queues,
            poll_queues: np.poll_queues,
            classic_poll_irq: np.classic_poll_irq,
            ssd,
            link: Pcie::from_profile(p)?,
            cpu: DriverCpuCosts::from_profile(p, true)?,
            commands: 0,
            polled_commands: 0,
            doorbells: 0,
            badblocks: BadBlocks::from_profile(p)?,
            wrr_queues,
            arbitrate: Timer::default(),
            served: Vec::with_capacity(np.io_queue_depth as usize),
            results: Vec::new(),
        })
    }

    /// The submission queue (0 is QID 1) of a request from `cpu` with
    /// priority `ioprio`, polled or not.
    fn sq_of(&self, cpu: u32, ioprio: u16, polled: bool) -> usize {
        let (io, poll) = (self.io_queues, self.poll_queues);
        if polled && poll > 0 {
            return (io + cpu % poll) as usize;
        }
        let c = wrr_class(ioprio) as usize;
        let n = self.wrr_queues[c];
        if n == 0 {
            return (cpu % io) as usize;
        }
        let before: u32 = self.wrr_queues[..c].iter().sum();
        (io + poll + before + cpu % n) as usize
    }

    /// Arm the controller's next arbitration, if a command waits.
    fn rearm<E>(&mut self, ctx: &mut DriverCtx<'_, E>) {
        if let Some(t) = self.ssd.next_arbitration() {
            ctx.arm(&mut self.arbitrate, t.max(ctx.now()), Event::Arbitrate);
        }
    }

    /// Command `q` served: its completion entry posted at `done.at`
    /// (a bad block's LBA fails it).
    fn complete<E>(&mut self, q: &Queued, done: Completion, ctx: &mut DriverCtx<'_, E>) {
        let done = self.badblocks.outcome(&q.cmd, done);
        if let Some(lba) = done.result {
            // Kept by tag until the block layer takes it (the slots grow
            // with the tags in use, then nothing is allocated).
            let i = q.cid as usize;
            if self.results.len() <= i {
                self.results.resize(i + 1, None);
            }
            self.results[i] = Some(lba);
        }
        ctx.complete(done.at, q.cid, BlkStatus::from_device(done.status));
    }

    /// The link's part of a command of `len` bytes: before the controller
    /// has it (the doorbell, then the command fetch) and after the device
    /// is done (the data, and the completion entry behind it).
    fn link_ns(&self, len: u32) -> (Ns, Ns) {
        let before = self.link.posted() + self.link.read_round_trip();
        let after = self.link.transfer_ns(len) + self.link.posted();
        (before, after)
    }

    /// Time from the doorbell write leaving the CPU to the completion entry
    /// being visible in host memory, for a command that finds a free unit
    /// of the service-time model: (link before, on the device's unit, link
    /// after). None for the flash SSD, whose time depends on its state.
    pub fn service_ns(&self, ddir: Ddir, len: u32) -> Option<(Ns, Ns, Ns)> {
        let (before, after) = self.link_ns(len);
        let on_unit = self
            .ssd
            .service()?
            .on_unit_ns(Command::new(ddir, 0, len).op, len);
        Some((before, on_unit, after))
    }
}

impl<E> Driver<E> for Nvme {
    fn info(&self) -> DiskInfo {
        DiskInfo {
            name: "nvme0n1".to_string(),
            capacity: self.ssd.capacity(),
            queue_depth: self.queue_depth,
            hw_queues: self.io_queues,
            can_poll: self.poll_queues > 0 || self.classic_poll_irq,
            cpu_costs: self.cpu,
            completion_signal: CompletionSignal::Interrupt,
        }
    }
    fn polled_irq(&self) -> bool {
        self.poll_queues == 0 && self.classic_poll_irq
    }
    /// blk_queue_write_cache(q, vwc, vwc) (drivers/nvme/host/core.c,
    /// nvme_set_queue_limits): an NVMe disk has a write cache to flush, and
    /// FUA, exactly when the controller reports a volatile write cache. The
    /// service-time model has none.
    fn write_cache(&self) -> WriteCache {
        let vwc = self.ssd.volatile_write_cache();
        WriteCache {
            volatile: vwc,
            fua: vwc,
        }
    }
    /// A zoned namespace's limits as nvme_update_zone_info sets them
    /// (drivers/nvme/host/zns.c): chunk_sectors the zone size, the open and
    /// active limits MOR + 1 and MAR + 1, and the append limit ZASL capped
    /// by the transfer limit (nvme_set_max_append, max_zone_append_sectors
    /// <= max_hw_sectors).
    fn zoned(&self) -> Option<ZonedLimits> {
        let (z, mdts) = self.ssd.zones()?;
        Some(ZonedLimits {
            nr_zones: z.zones,
            chunk_sectors: z.zone_bytes >> 9,
            max_open_zones: z.max_open,
            max_active_zones: z.max_active,
            zone_append_max_bytes: z.append_max_bytes.min(mdts),
            conventional_zones: 0,
        })
    }
    /// nvme_ns_report_zones (drivers/nvme/host/zns.c): every zone is
    /// sequential write required; the disk is reported as probed, before
    /// any I/O, so every zone is empty.
    fn report_zones(&self) -> Vec<crate::types::BlkZone> {
        let Some((z, _)) = self.ssd.zones() else {
            return Vec::new();
        };
        (0..u64::from(z.zones))
            .map(|i| crate::types::BlkZone {
                start: i * z.zone_bytes,
                len: z.zone_bytes,
                capacity: z.capacity_bytes,
                wp: i * z.zone_bytes,
                conventional: false,
                cond: crate::types::BlkZoneCond::Empty,
            })
            .collect()
    }
    /// Every namespace has its generic character device (nvme_add_ns_cdev,
    /// Linux 5.13+): io_uring_cmd's passthrough reaches queue_rq as the
    /// same Read/Write command.
    fn nvme_generic(&self) -> bool {
        true
    }
    fn placement_ids(&self) -> Option<Vec<u16>> {
        self.ssd.placement_ids()
    }
    fn take_result(&mut self, tag: u32) -> Option<u64> {
        self.results.get_mut(tag as usize).and_then(Option::take)
    }
    fn queue_rq(&mut self, rq: DriverRq, ctx: &mut DriverCtx<'_, E>) {
        self.commands += 1;
        self.doorbells += 1;
        if rq.polled && self.poll_queues > 0 {
            self.polled_commands += 1;
        }
        let (before, _) = self.link_ns(rq.len);
        let q = Queued {
            at: ctx.now() + before,
            cmd: rq.command(),
            xfer: self.link.transfer_ns(rq.len),
            posted: self.link.posted(),
            cid: rq.tag,
        };
        let sq = self.sq_of(rq.cpu, rq.ioprio, rq.polled);
        match self.ssd.offer(sq, q) {
            Some(done) => self.complete(&q, done, ctx),
            None => self.rearm(ctx),
        }
    }
    /// A command slot is free: the controller fetches by arbitration.
    fn on_event(&mut self, event: DriverEvent, ctx: &mut DriverCtx<'_, E>) {
        if event != DriverEvent::Nvme(Event::Arbitrate) {
            return;
        }
        let mut served = std::mem::take(&mut self.served);
        self.ssd.arbitrate(ctx.now(), &mut served);
        for (q, done) in served.drain(..) {
            self.complete(&q, done, ctx);
        }
        self.served = served;
        self.rearm(ctx);
    }
    fn counters(&self) -> serde_json::Value {
        let mut v = serde_json::json!({
            "kind": "nvme", "commands": self.commands, "doorbells": self.doorbells,
            "poll_queue_commands": self.polled_commands,
            "io_queues": self.io_queues, "poll_queues": self.poll_queues,
            "interrupts_on_polled_io": self.poll_queues == 0 && self.classic_poll_irq,
        });
        // The not-mainline WRR queues, where the run has them (a run
        // without keeps its JSON as it was).
        if self.wrr_queues.iter().any(|&n| n > 0) {
            v["wrr_queues"] = serde_json::json!({
                "urgent": self.wrr_queues[0], "high": self.wrr_queues[1],
                "medium": self.wrr_queues[2], "low": self.wrr_queues[3],
            });
        }
        if let Some(c) = self.ssd.flash_counters() {
            v["device"] = c;
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn service_time_is_link_plus_device() {
        let mut p = Profile::load("nvme-dram").unwrap();
        p.apply_override("link.pcie.latency=500").unwrap();
        p.apply_override("device.read_latency=4000").unwrap();
        p.apply_override("device.media_rate=4096").unwrap(); // MB/s
        let n = Nvme::from_profile(&p).unwrap();
        let (before, on_unit, after) = n.service_ns(Ddir::Read, 4096).unwrap();
        // Doorbell (posted) + command fetch (round trip).
        assert_eq!(before, 3 * 500);
        // 4096 B at 4096 MB/s = 1000 ns.
        assert_eq!(on_unit, 4000 + 1000);
        // Gen3 x4, 256 B payloads: 4480 wire bytes at 3.938 GB/s, then the
        // completion entry's posted write.
        assert_eq!(after, 1138 + 500);
        assert_eq!(Driver::<()>::info(&n).queue_depth, 1023);
        assert!(Driver::<()>::polled_irq(&n));
    }
}
