//! SDHCI host controller + the mmc block driver, driving an eMMC card
//! ([`crate::device::emmc::EmmcCard`]: an eMMC front end over the shared
//! FTL and NAND back end) over the eMMC bus ([`crate::link::emmc`]).
//!
//! Two driver modes (`mmc.swcmdq`):
//!
//! * **Legacy** (seed 0's base): at most two requests on the go; the next
//!   is prepared (`mmc.host.prep`: request prep, DMA map, ADMA table) while
//!   the current one transfers; its commands (CMD23 + CMD18/CMD25, or
//!   CMD18/CMD25 + CMD12 open-ended, `mmc.host.cmd23`) go out when the
//!   current transfer (with its R1b busy) has ended. The card sees one data
//!   command at a time, and may read ahead after a read (the card's side,
//!   [`crate::device::emmc`]).
//! * **Software command queuing**: per request CMD44 + CMD45 (the CMD line
//!   is free during data transfers); the card starts NAND reads of a queued
//!   read task at once; a read task is ready in the QSR when its data is in
//!   the card cache, a write task `mmc.card.wr_task_ready` after it was
//!   queued (buffer room). Between transfers the host reads the QSR (CMD13
//!   with bit 15) until the task is ready: busy polling for
//!   `mmc.qsr.poll_budget`, then sleeping `mmc.qsr.poll_sleep` between
//!   polls; then CMD46/CMD47 and the data phase. Task ids are bounded by the
//!   card queue depth (`mmc.card.cmdq_depth` <= 32). The mmc context that
//!   does it is in [`cq`].
//!
//! Every command costs the host `mmc.host.cmd_sw` (sdhci_send_command to the
//! command-complete interrupt and its tasklet) on the host's single mmc
//! context, plus its CMD-line round trip.
//!
//! Legacy mode is a booking model: like the UFS driver, a request books
//! host, CMD line, card and DAT line when it arrives (the two requests on
//!
//! SW-CQ mode is event driven: see [`cq`].

mod cq;
#[cfg(test)]
mod tests;

pub use crate::device::emmc::CardParams;
pub use cq::{qsr_wait, Event};

use super::{
    BlkStatus, DiskInfo, Driver, DriverCpuCosts, DriverCtx, DriverEvent, DriverRq, WriteCache,
};
use crate::device::emmc::EmmcCard;
use crate::device::BadBlocks;
use crate::error::Result;
use crate::host::cpu::HostCosts;
use crate::link::emmc::{EmmcBus, EmmcBusParams};
use crate::profile::limits::{COST, DELAY};
use crate::profile::Profile;
use crate::sim::timeline::Timeline;
use crate::sim::Ns;
use crate::types::{Ddir, Op};
use cq::CqThread;

const BLOCK: u64 = 4096;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MmcMode {
    Legacy,
    SwCmdq,
}

/// The host side: driver software costs and policies.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MmcHostParams {
    pub mode: MmcMode,
    /// Software cost of one command on the host (submit to response IRQ
    /// handled), excluding the CMD line time.
    pub cmd_sw: Ns,
    /// Per-request preparation before its first command.
    pub prep: Ns,
    /// Per-request completion work after the data phase.
    pub done: Ns,
    /// Legacy: closed-ended CMD23 + CMD18/25 (true) or open-ended with CMD12.
    pub cmd23: bool,
    /// SW-CQ: busy-poll the QSR for this long, then sleep between polls.
    pub poll_budget: Ns,
    pub poll_sleep: Ns,
    /// SW-CQ: the host context that issued CMD46/47 waits for the data
    /// phase to end before it prepares or queues anything else.
    pub cq_sync_data: bool,
    /// SW-CQ: the mmc context waits for a synchronous request (CMD44 +
    /// CMD45, a QSR read) by sleeping; after the response has been handled
    /// it is woken (try_to_wake_up) and switched in before it goes on.
    pub cq_sync_wake: Ns,
}

crate::params! {
    /// The mmc host driver's costs and mode (drivers/mmc/core, the block
    /// driver drivers/mmc/core/block.c).
    pub struct MmcParams {
        /// Software command queueing (the eMMC 5.1 CMD44-47 queue driven by
        /// the host, as vendor kernels do) instead of one request at a time.
        swcmdq: bool = required flag("mmc.swcmdq"),
        /// Software cost of one command on the host (submit to response IRQ
        /// handled), excluding the CMD line time.
        cmd_sw: Ns = required ns("mmc.host.cmd_sw", COST),
        /// Per-request preparation before its first command.
        prep: Ns = required ns("mmc.host.prep", COST),
        /// Per-request completion work after the data phase.
        done: Ns = required ns("mmc.host.done", COST),
        /// Legacy: closed-ended CMD23 + CMD18/25 (true) or open-ended with
        /// CMD12.
        cmd23: bool = required flag("mmc.host.cmd23"),
        /// SW-CQ: busy-poll the QSR for this long, then sleep between polls.
        poll_budget: Ns = required ns("mmc.qsr.poll_budget", DELAY),
        /// SW-CQ: the sleep between QSR polls once the budget is spent.
        poll_sleep: Ns = required ns("mmc.qsr.poll_sleep", DELAY),
        /// SW-CQ: the host context that issued CMD46/47 waits for the data
        /// phase to end before it prepares or queues anything else.
        sync_data: bool = required flag("mmc.qsr.sync_data"),
    }
}

#[derive(Clone, Copy, Debug, Default)]
struct Counters {
    reads: u64,
    writes: u64,
    commands: u64,
    qsr_polls: u64,
    queued_at_xfer: u64,
    xfers: u64,
    /// REQ_OP_FLUSH requests (mmc_blk_issue_flush), with or without a
    /// FLUSH_CACHE for them.
    flushes: u64,
}

pub struct Mmc {
    name: String,
    cpu: DriverCpuCosts,
    pub h: MmcHostParams,
    /// The card: firmware, read-ahead cache, write engine, FTL and NAND.
    pub card: EmmcCard,
    pub bus: EmmcBus,
    /// The host's mmc context (one request-processing thread + controller).
    host: Timeline,
    /// End of the last booked data phase (with its busy).
    last_data_end: Ns,
    /// The SW-CQ mmc context.
    cq: CqThread,
    c: Counters,
    /// `device.badblocks`: the card answers a command over one with an
    /// error in its R1 response (ECC failure), which mmc_blk_mq_complete_rq
    /// ends with BLK_STS_IOERR.
    pub badblocks: BadBlocks,
}

impl Mmc {
    pub fn new(h: MmcHostParams, card: EmmcCard, bus: EmmcBusParams, cpu: DriverCpuCosts) -> Mmc {
        Mmc {
            name: "mmcblk0".into(),
            cpu,
            h,
            card,
            bus: EmmcBus::new(bus),
            host: Timeline::new(),
            last_data_end: 0,
            cq: CqThread::new(),
            c: Counters::default(),
            badblocks: BadBlocks::none(),
        }
    }

    /// The block driver uses reliable writes for REQ_FUA
    /// (mmc_blk_alloc_req's MMC_BLK_REL_WR: CMD23 and the card's
    /// EN_REL_WR), drivers/mmc/core/block.c.
    fn reliable_writes(&self) -> bool {
        self.h.cmd23 && self.card.p.reliable_write
    }

    /// A write request that goes to the card as a reliable write
    /// (mmc_blk_rw_rq_prep's do_rel_wr: REQ_FUA on a write, MMC_BLK_REL_WR;
    /// CMD23's argument gets bit 31).
    fn reliable(&self, rq: &DriverRq) -> bool {
        rq.fua && rq.op == Op::Write && self.reliable_writes()
    }

    /// REQ_OP_FLUSH from `t`, the card's DAT line idle: mmc_blk_issue_flush
    /// -> mmc_flush_cache sends CMD6 SWITCH FLUSH_CACHE, with R1b busy
    /// until the card's cache is on NAND, when the cache is on; without
    /// one there is nothing to send and the request ends at once. Returns
    /// when it ends.
    fn flush(&mut self, t: Ns) -> Ns {
        self.c.flushes += 1;
        if !self.card.p.cache {
            return t;
        }
        let r = self.command(t);
        self.card.command_arrives(r);
        let flushed = self.card.flush_cache(self.card.decoded(r));
        self.bus.busy(r, flushed)
    }

    /// How request `rq` ends on this card.
    fn status_of(&self, rq: &DriverRq) -> BlkStatus {
        BlkStatus::from_device(self.badblocks.status(&rq.command()))
    }

    /// `host`: the host's costs, whose wake-up and switch a synchronous
    /// SW-CQ request pays.
    pub fn from_profile(p: &Profile, seed: u64, host: &HostCosts) -> Result<Mmc> {
        let bp = EmmcBusParams::from_profile(p)?;
        let mp = MmcParams::read(p)?;
        let h = MmcHostParams {
            mode: if mp.swcmdq {
                MmcMode::SwCmdq
            } else {
                MmcMode::Legacy
            },
            cmd_sw: mp.cmd_sw,
            prep: mp.prep,
            done: mp.done,
            cmd23: mp.cmd23,
            poll_budget: mp.poll_budget,
            poll_sleep: mp.poll_sleep,
            cq_sync_data: mp.sync_data,
            cq_sync_wake: host.wakeup + host.context_switch,
        };
        let cpu = DriverCpuCosts::from_profile(p, false)?;
        let card = EmmcCard::from_profile(p, seed)?;
        let mut mmc = Mmc::new(h, card, bp, cpu);
        mmc.badblocks = BadBlocks::from_profile(p)?;
        Ok(mmc)
    }

    /// One command: host software, then the CMD line; returns when the
    /// response has been handled.
    fn command(&mut self, at: Ns) -> Ns {
        self.c.commands += 1;
        let s = self.host.reserve(at, self.h.cmd_sw);
        let r = self.bus.command(s + self.h.cmd_sw);
        let wait = r - (s + self.h.cmd_sw);
        self.host.reserve(s + self.h.cmd_sw, wait);
        r
    }

    /// Legacy mode: book request `rq` arriving at `now`; returns when it
    /// is complete.
    pub fn execute(&mut self, now: Ns, rq: &DriverRq) -> Ns {
        self.host.prune(now);
        self.bus.prune(now);
        if rq.op == Op::Flush {
            // mmc_blk_mq_issue_rq issues a flush synchronously, once the
            // request on the go has ended (mmc_blk_wait_for_idle).
            let end = self.flush(now.max(self.last_data_end));
            self.last_data_end = end;
            return end;
        }
        let lpn = rq.offset / BLOCK;
        let n = u64::from(rq.len).div_ceil(BLOCK) as u32;
        let len = u64::from(rq.len);
        let write = match rq.ddir {
            Ddir::Read => {
                self.c.reads += 1;
                false
            }
            Ddir::Write => {
                self.c.writes += 1;
                true
            }
            Ddir::Trim => {
                // CMD35/36/38 erase group: three commands, then the FTL.
                let t = self.host.reserve(now, self.h.prep) + self.h.prep;
                let t = self.command(t.max(self.last_data_end));
                self.card.command_arrives(t);
                let t = self.command(t);
                let t = self.command(t);
                let d = self.card.trim(t, lpn, n);
                let end = self.bus.busy(t, d);
                self.last_data_end = end;
                return self.host.reserve(end, self.h.done) + self.h.done;
            }
        };
        let prep_end = self.host.reserve(now, self.h.prep) + self.h.prep;
        let data_end = match self.h.mode {
            MmcMode::Legacy => {
                let mut t = prep_end.max(self.last_data_end);
                // The first command (CMD23, or CMD18/25 open-ended) tells
                // the card it is no longer idle.
                t = self.command(t);
                self.card.command_arrives(t);
                if self.h.cmd23 {
                    t = self.command(t);
                }
                let card_t = self.card.decoded(t);
                let (de, busy_to) = if write {
                    let (_, de) = self.bus.data(t, len);
                    let committed = self.card.commit_write(de, lpn, n);
                    if self.reliable(rq) {
                        (de, self.card.reliable_commit(committed))
                    } else {
                        (de, committed)
                    }
                } else {
                    let ready = self.card.read(card_t, lpn, n);
                    let (_, de) = self.bus.data(ready, len);
                    self.card.plan_ra(de, lpn, n);
                    (de, de)
                };
                let mut end = self.bus.busy(de, busy_to);
                if !self.h.cmd23 {
                    end = end.max(self.command(de));
                }
                end
            }
            MmcMode::SwCmdq => {
                unreachable!("SW-CQ requests go through the mmc context (cq_arrive)")
            }
        };
        self.last_data_end = data_end;
        self.host.reserve(data_end, self.h.done) + self.h.done
    }
}

impl<E> Driver<E> for Mmc {
    fn info(&self) -> DiskInfo {
        let depth = match self.h.mode {
            MmcMode::Legacy => 2,
            MmcMode::SwCmdq => self.card.p.cmdq_depth,
        };
        DiskInfo::single_queue(&self.name, self.card.capacity(), depth, self.cpu)
    }
    fn queue_rq(&mut self, rq: DriverRq, ctx: &mut DriverCtx<'_, E>) {
        match self.h.mode {
            MmcMode::Legacy => {
                let at = self.execute(ctx.now(), &rq);
                ctx.complete(at, rq.tag, self.status_of(&rq));
            }
            MmcMode::SwCmdq => self.cq_arrive(ctx.now(), rq, ctx),
        }
    }
    /// blk_queue_write_cache(q, cache_enabled, fua_enabled) in
    /// mmc_blk_alloc_req (drivers/mmc/core/block.c, v5.11+): a volatile
    /// cache when the card's cache is on or it takes reliable writes, and
    /// FUA when it takes reliable writes (with CMD23).
    fn write_cache(&self) -> WriteCache {
        let rel = self.reliable_writes();
        WriteCache {
            volatile: self.card.p.cache || rel,
            fua: rel,
        }
    }
    fn on_event(&mut self, ev: DriverEvent, ctx: &mut DriverCtx<'_, E>) {
        debug_assert!(matches!(ev, DriverEvent::Mmc(_)), "another driver's event");
        if let DriverEvent::Mmc(ev) = ev {
            self.cq_event(ev, ctx);
        }
    }
    fn counters(&self) -> serde_json::Value {
        let ios = (self.c.reads + self.c.writes).max(1) as f64;
        let mut v = serde_json::json!({
            "driver": "mmc",
            "mode": match self.h.mode { MmcMode::Legacy => "legacy", MmcMode::SwCmdq => "swcmdq" },
            "reads": self.c.reads,
            "writes": self.c.writes,
            "commands": self.c.commands,
            "qsr_polls": self.c.qsr_polls,
            "qsr_polls_per_io": self.c.qsr_polls as f64 / ios,
            "tasks_queued_at_xfer": if self.c.xfers > 0 { self.c.queued_at_xfer as f64 / self.c.xfers as f64 } else { 0.0 },
            "card_cache_hits": self.card.stats.ra_hits,
            "card_readahead_reads": self.card.stats.ra_reads,
            "card_readahead_cancelled": self.card.stats.ra_cancelled,
            "mmc_context_busy_ns": self.cq.busy_ns,
            "bus_commands": self.bus.commands,
            "bus_data_bytes": self.bus.data_bytes,
        });
        // Only a run that flushed or wrote reliably shows it (the others'
        // JSON stays).
        let st = self.card.stats;
        if self.c.flushes + st.reliable_writes > 0 {
            v["flushes"] = serde_json::json!(self.c.flushes);
            v["card_cache_flushes"] = serde_json::json!(st.cache_flushes);
            v["reliable_writes"] = serde_json::json!(st.reliable_writes);
        }
        v
    }
}
