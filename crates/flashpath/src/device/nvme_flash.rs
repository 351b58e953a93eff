//! An NVMe flash SSD as engineers build one: the NVMe controller's front
//! end over a translation layer (the shared page-mapping FTL,
//! [`super::FlashDevice`], or another the profile names: see
//! [`super::ftl::layer`]) over NAND, as MQSim splits host interface, FTL
//! and PHY. A profile with
//! `device.kind = "nvme"` and a `[device.flash]` section gets this device;
//! without `[device.flash]` the NVMe device stays the service-time model
//! ([`super::nvme::NvmeSsd`]). The PCIe link in front of it (doorbell,
//! command fetch, data, completion entry) is the driver's.
//!
//! The front end (`device.nvme.*`):
//!
//! - **Command slots.** The controller works on at most `cmd_slots`
//!   commands at once (MQSim's `Queue_Fetch_Size`: commands fetched from
//!   the submission queues and not yet completed); one more waits for the
//!   first slot to free.
//! - **Command processing.** Each command takes `fw_cmd` on one of
//!   `fw_cores` controller cores (decode, LBA checks, FTL dispatch), first
//!   free core first.
//! - **MDTS.** A data command larger than the controller's Maximum Data
//!   Transfer Size (Identify Controller byte 77, NVMe Base Specification
//!   2.0 section 5.17.2.1: a power of two of the minimum memory page size)
//!   is served as MDTS-sized pieces, each a command of its own (a slot, a
//!   decode). Linux splits at the same size before the command is built
//!   (nvme_set_ctrl_limits sets max_hw_sectors from MDTS), so the pieces are
//!   what the host would have sent.
//! - **DRAM data cache.** Write data goes through the controller's DRAM
//!   (one channel, FIFO, `dram_access` plus the bytes at `dram_rate`, as
//!   MQSim's `estimate_dram_access_time` for an access within a DRAM row)
//!   into the FTL's write buffer (`device.flash.write_buffer_units`, the
//!   data cache's write share), which completes the write; reads of data
//!   still in the buffer are served from DRAM.
//! - **Volatile write cache.** With `volatile_write_cache` (Identify
//!   Controller VWC bit 0) a Flush waits until every buffered write is on
//!   NAND, and a FUA write ([`NvmeFlashSsd::write_fua`]) until its data is:
//!   the model drains the whole buffer for it, as a Flush does. Without it
//!   the buffer is power-loss protected (a datacentre drive's capacitors):
//!   a Flush completes after its decode, and Linux does not send one
//!   (nvme_set_queue_limits: no REQ_FLUSH without VWC).
//!
//! - **Submission queues and arbitration.** The driver creates the I/O
//!   submission queues ([`NvmeDevice::create_queues`], as
//!   nvme_setup_io_queues does) and rings their doorbells; when every
//!   command slot is taken, commands wait in their queues, and when a slot
//!   frees the controller fetches from the queue its arbitration picks
//!   ([`super::nvme_arb`]: round robin with the Arbitration Burst, or
//!   weighted round robin with an urgent class where the controller
//!   supports it, `arbitration = "wrr"`, and the host selects it). While a
//!   slot is free and no queue holds a command, a command is served as it
//!   arrives: with one queue the order is the arrival order either way.
//!
//! A Flush is an [`Op`] of [`Command`] and FUA its flag on a write, as
//! the driver's request carries them (`driver::DriverRq::op`, `fua`).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::ftl::layer::{layer_from_profile, FrontEnd, TranslationLayer};
use super::nand::Timeline;
use super::nvme::NvmeSsd;
use super::nvme_arb::{Ams, Arbiter, Qprio, Queued};
use super::{BlockBackend, Command, Completion, Op, Status, UNIT};
use crate::error::Result;
use crate::profile::limits::{COST, RATE};
use crate::profile::{range, Profile};
use crate::sim::Ns;

/// The NVMe controller's front-end parameters, `device.nvme.*`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FrontEndParams {
    /// Controller time per command on one core.
    pub fw_cmd: Ns,
    /// Controller cores that process commands.
    pub fw_cores: u32,
    /// Commands the controller works on at once.
    pub cmd_slots: u32,
    /// Maximum Data Transfer Size in bytes.
    pub mdts: u64,
    /// DRAM access latency (tRCD + tCL).
    pub dram_access: Ns,
    /// DRAM data rate in bytes per second.
    pub dram_rate: f64,
    /// The write cache is volatile (VWC = 1): Flush and FUA drain it.
    pub volatile_write_cache: bool,
    /// The arbitration mechanisms the controller supports (CAP.AMS).
    pub arbitration: Arbitration,
    /// The Arbitration Burst field (2^AB commands a visit, 7: no limit).
    pub arbitration_burst: u32,
    /// Weighted round robin's weights of High, Medium and Low.
    pub weights: [u32; 3],
}

crate::choice_enum! {
    /// `device.nvme.arbitration`: the arbitration mechanisms the controller
    /// supports (CAP.AMS, NVMe Base Specification 2.0c section 3.1.4.1).
    pub enum Arbitration {
        /// Round robin only (CAP.AMS 00b), what most controllers report.
        Rr = "rr",
        /// Weighted round robin with an urgent priority class as well
        /// (CAP.AMS bit 0).
        Wrr = "wrr",
    }
}

/// A weight of weighted round robin: the 8-bit register value + 1.
const WEIGHT: crate::profile::Range = range(
    1.0,
    256.0,
    "Set Features Arbitration (FID 01h) holds each weight in 8 bits, 0's based: 1 to 256",
);

crate::params! {
    /// The NVMe flash SSD's controller front end (`device.nvme.*`), with
    /// `[device.flash]`.
    pub struct FrontEndKeys {
        /// Controller time per command on one core.
        fw_cmd: Ns = required ns("device.nvme.fw_cmd", COST),
        /// Controller cores that process commands.
        fw_cores: u32 = required count_u32(
            "device.nvme.fw_cores",
            range(
                1.0,
                64.0,
                "controller cores that process commands: NVMe controllers have a few \
                 (Samsung's Phoenix five ARM cores); 64 is past any",
            )
        ),
        /// Commands the controller works on at once.
        cmd_slots: u32 = required count_u32(
            "device.nvme.cmd_slots",
            range(
                1.0,
                65536.0,
                "commands in the controller at once: at most 65535 queues of 65536 \
                 entries are addressable, and the model keeps one time per slot",
            )
        ),
        /// Maximum Data Transfer Size: a larger command is split.
        mdts: u64 = required bytes(
            "device.nvme.mdts",
            range(
                4096.0,
                (1u32 << 30) as f64,
                "Maximum Data Transfer Size: at least one 4 KiB memory page (MDTS 0 \
                 means no limit; give the drive's largest transfer), at most 1 GiB",
            )
        ),
        /// DRAM access latency (tRCD + tCL).
        dram_access: Ns = required ns("device.nvme.dram_access", COST),
        /// DRAM data rate.
        dram_rate: f64 = required rate("device.nvme.dram_rate", RATE),
        /// The write cache is volatile (VWC = 1): Flush and FUA drain it.
        volatile_write_cache: bool = required flag("device.nvme.volatile_write_cache"),
        /// The arbitration the controller supports (CAP.AMS): "rr", or
        /// "wrr" for weighted round robin with an urgent class as well.
        /// Absent: "rr", as most controllers report (CAP.AMS 00b).
        arbitration: Arbitration = default(Arbitration::Rr) choice(
            "device.nvme.arbitration",
            Arbitration
        ),
        /// Arbitration Burst (Set Features Arbitration bits 2:0): 2^AB
        /// commands from a queue at a visit, 7 no limit. Absent: 0 (one
        /// command), an assumption: the reset value is the vendor's; it
        /// matters only where several queues hold commands at once.
        arbitration_burst: u32 = default(0) count_u32(
            "device.nvme.arbitration_burst",
            range(0.0, 7.0, "the Arbitration Burst field is 3 bits; 111b means no limit")
        ),
        /// High Priority Weight (bits 31:24, + 1). Absent: 1.
        hpw: u32 = default(1) count_u32("device.nvme.hpw", WEIGHT),
        /// Medium Priority Weight (bits 23:16, + 1). Absent: 1.
        mpw: u32 = default(1) count_u32("device.nvme.mpw", WEIGHT),
        /// Low Priority Weight (bits 15:8, + 1). Absent: 1.
        lpw: u32 = default(1) count_u32("device.nvme.lpw", WEIGHT),
    }
}

impl FrontEndParams {
    pub fn from_profile(p: &Profile) -> Result<FrontEndParams> {
        let k = FrontEndKeys::read(p)?;
        Ok(FrontEndParams {
            fw_cmd: k.fw_cmd,
            fw_cores: k.fw_cores,
            cmd_slots: k.cmd_slots,
            mdts: k.mdts,
            dram_access: k.dram_access,
            dram_rate: k.dram_rate,
            volatile_write_cache: k.volatile_write_cache,
            arbitration: k.arbitration,
            arbitration_burst: k.arbitration_burst,
            weights: [k.hpw, k.mpw, k.lpw],
        })
    }
}

/// What the front end did, for the run's JSON.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FrontEndStats {
    pub commands: u64,
    /// Pieces served after MDTS splitting (commands when nothing split).
    pub pieces: u64,
    pub mdts_splits: u64,
    /// Time commands waited for a free command slot.
    pub slot_wait_ns: u64,
    /// Time commands waited for a free controller core.
    pub core_wait_ns: u64,
    pub dram_accesses: u64,
    pub dram_wait_ns: u64,
    pub flushes: u64,
    pub fua_writes: u64,
    /// Units written to the data cache, and units read from it.
    pub cache_write_units: u64,
    pub cache_read_hits: u64,
    /// Commands that waited in a submission queue for a slot.
    pub queued: u64,
}

pub struct NvmeFlashSsd {
    p: FrontEndParams,
    /// The back end: a translation layer over NAND.
    layer: Box<dyn TranslationLayer>,
    /// When each command slot is free again (min-heap).
    slots: BinaryHeap<Reverse<Ns>>,
    /// When each controller core is free again.
    cores: Vec<Ns>,
    /// The DRAM channel's bookings. Work is booked in command order but
    /// happens out of time order (a read behind a busy die finishes after
    /// a later one), so each shared resource is a timeline that fills gaps.
    dram: Timeline,
    /// The last DRAM access's (bytes, duration): requests of one size
    /// repeat, and the duration costs a float division and a libm `round`
    /// (46 instructions a 4 KiB write, docs/performance.md).
    dram_memo: (u64, Ns),
    /// The controller's DMA engine towards the host (read data) and from
    /// it (write data): the link's two directions.
    up: Timeline,
    down: Timeline,
    /// The submission queues the driver created and their arbiter.
    arb: Arbiter,
    pub stats: FrontEndStats,
}

impl NvmeFlashSsd {
    pub fn new(p: FrontEndParams, layer: Box<dyn TranslationLayer>) -> NvmeFlashSsd {
        let mut slots = BinaryHeap::with_capacity(p.cmd_slots as usize + 1);
        slots.extend((0..p.cmd_slots).map(|_| Reverse(0)));
        NvmeFlashSsd {
            cores: vec![0; p.fw_cores as usize],
            p,
            layer,
            slots,
            dram: Timeline::new(),
            dram_memo: (u64::MAX, 0),
            up: Timeline::new(),
            down: Timeline::new(),
            arb: Arbiter::new(Ams::RoundRobin, 0, [1; 3], &[Qprio::Urgent], 0),
            stats: FrontEndStats::default(),
        }
    }

    /// The host creates its I/O submission queues with these priorities
    /// (QID 1 first), each `depth` entries, and enables the controller
    /// with weighted round robin (`wrr`, CC.AMS 001b) or round robin.
    /// Weighted round robin needs the controller's support (CAP.AMS bit
    /// 0): without it the controller arbitrates round robin, as a host
    /// that reads CAP would enable it.
    pub fn create_queues(&mut self, prios: &[Qprio], depth: usize, wrr: bool) {
        let ams = if wrr && self.p.arbitration == Arbitration::Wrr {
            Ams::WeightedRoundRobin
        } else {
            Ams::RoundRobin
        };
        self.arb = Arbiter::new(ams, self.p.arbitration_burst, self.p.weights, prios, depth);
    }

    /// The arbitration the controller runs.
    pub fn ams(&self) -> Ams {
        self.arb.ams()
    }

    /// Command `q` in submission queue `sq`: its completion if the
    /// controller serves it as it arrives (a slot free then and no command
    /// waiting), else it waits for [`Self::arbitrate`].
    pub fn offer(&mut self, sq: usize, q: Queued) -> Option<Completion> {
        let free = self.slots.peek().map_or(Ns::MAX, |r| r.0);
        if self.arb.waiting() == 0 && free <= q.at {
            self.arb.served[self.arb.prio(sq) as usize] += 1;
            return Some(self.serve_queued(q.at, &q));
        }
        self.stats.queued += 1;
        self.arb.push(sq, q);
        None
    }

    fn serve_queued(&mut self, t: Ns, q: &Queued) -> Completion {
        let done = self.submit_linked(t, &q.cmd, q.xfer);
        Completion {
            at: done.at + q.posted,
            ..done
        }
    }

    /// At `t`, fetch commands from the queues by arbitration while a slot
    /// is free: each served command and its completion go to `out`.
    pub fn arbitrate(&mut self, t: Ns, out: &mut Vec<(Queued, Completion)>) {
        while self.slots.peek().is_some_and(|r| r.0 <= t) {
            let Some(q) = self.arb.pick(t) else {
                break;
            };
            let c = self.serve_queued(t, &q);
            out.push((q, c));
        }
    }

    /// When the controller next has a slot for a waiting command that has
    /// arrived (None: no command waits).
    pub fn next_arbitration(&self) -> Option<Ns> {
        let first = self.arb.first_arrival()?;
        let free = self.slots.peek().map_or(Ns::MAX, |r| r.0);
        Some(first.max(free))
    }

    /// `device.nvme.*` over the translation layer `device.flash.*` names
    /// ([`layer_from_profile`]).
    pub fn from_profile(p: &Profile, seed: u64) -> Result<NvmeFlashSsd> {
        let layer = layer_from_profile(p, seed, FrontEnd::Nvme)?;
        Ok(NvmeFlashSsd::new(FrontEndParams::from_profile(p)?, layer))
    }

    pub fn params(&self) -> &FrontEndParams {
        &self.p
    }

    /// The translation layer.
    pub fn layer(&self) -> &dyn TranslationLayer {
        self.layer.as_ref()
    }

    /// The translation layer as its concrete type, if it is one (`None`
    /// for another layer).
    pub fn layer_as<L: 'static>(&self) -> Option<&L> {
        self.layer.as_any().downcast_ref::<L>()
    }

    /// One DRAM access of `bytes` from `t`: when it is done.
    fn dram(&mut self, t: Ns, bytes: u64) -> Ns {
        let dur = if self.dram_memo.0 == bytes {
            self.dram_memo.1
        } else {
            let d = self.p.dram_access + (bytes as f64 * 1e9 / self.p.dram_rate).round() as Ns;
            self.dram_memo = (bytes, d);
            d
        };
        let start = self.dram.reserve(t, dur);
        self.stats.dram_accesses += 1;
        self.stats.dram_wait_ns += start - t;
        start + dur
    }

    /// A piece takes a slot and a core from `at`: when its decode is done.
    /// The slot is given back by [`Self::release`].
    fn decode(&mut self, at: Ns) -> Ns {
        let Reverse(free) = self.slots.pop().expect("cmd_slots >= 1");
        let start = at.max(free);
        self.stats.slot_wait_ns += start - at;
        let (i, core) = self
            .cores
            .iter()
            .copied()
            .enumerate()
            .min_by_key(|&(_, t)| t)
            .expect("fw_cores >= 1");
        let begin = start.max(core);
        self.stats.core_wait_ns += begin - start;
        let end = begin + self.p.fw_cmd;
        self.cores[i] = end;
        end
    }

    fn release(&mut self, done: Ns) {
        self.slots.push(Reverse(done));
    }

    /// One piece (at most MDTS) of a data command, decoded by `t`; `xfer`
    /// is its data's time on the link (None: the link is not booked here).
    fn piece(&mut self, t: Ns, op: Op, offset: u64, len: u32, xfer: Option<Ns>) -> Completion {
        let (_, n) = Command::of(op, offset, len).units();
        match op {
            Op::Read => {
                let r = self.layer.read(t, offset, len);
                let (done, hit) = (r.done.at, r.buffer_hits);
                let done = if hit > 0 {
                    self.stats.cache_read_hits += hit;
                    done.max(self.dram(t, hit * UNIT))
                } else {
                    done
                };
                // The data goes up the link behind earlier read data.
                let at = match xfer {
                    Some(x) => self.up.reserve(done, x) + x,
                    None => done,
                };
                Completion { at, ..r.done }
            }
            Op::Write | Op::ZoneAppend => {
                // The controller fetches the data from host memory (behind
                // earlier write data), then puts it in its DRAM.
                let fetched = match xfer {
                    Some(x) => self.down.reserve(t, x) + x,
                    None => t,
                };
                self.stats.cache_write_units += u64::from(n);
                let in_dram = self.dram(fetched, u64::from(len));
                if op == Op::ZoneAppend {
                    self.layer.append(in_dram, offset, len)
                } else {
                    self.layer.write(in_dram, offset, len)
                }
            }
            Op::Trim => self.layer.trim(t, offset, len),
            Op::Flush
            | Op::WriteZeroes
            | Op::ZoneMgmt(_)
            | Op::Verify { .. }
            | Op::WriteSame { .. }
            | Op::WriteVerify => {
                unreachable!("not a data command")
            }
        }
    }

    /// A data command (read, write, trim) from `at`, split at MDTS (a trim
    /// carries no data and is one command). `xfer`: the whole command's
    /// data time on the link, shared by its pieces in proportion.
    fn data_command(
        &mut self,
        at: Ns,
        op: Op,
        offset: u64,
        len: u32,
        xfer: Option<Ns>,
    ) -> Completion {
        self.stats.commands += 1;
        // Commands arrive in time order: bookings that ended before are
        // forgotten.
        self.dram.prune(at);
        self.up.prune(at);
        self.down.prune(at);
        // A Zone Append is never split: the host keeps it within ZASL
        // (queue_limits.max_zone_append_sectors), and pieces would land
        // wherever the write pointer is.
        let step = if op == Op::Trim || op == Op::ZoneAppend {
            u64::from(len).max(1)
        } else {
            self.p.mdts
        };
        let mut done = Completion::ok(at);
        let mut off = 0u64;
        loop {
            let l = (u64::from(len) - off).min(step) as u32;
            self.stats.pieces += 1;
            let t = self.decode(at);
            let x = xfer.map(|x| {
                if l == len {
                    x
                } else {
                    (u128::from(x) * u128::from(l) / u128::from(len.max(1))) as Ns
                }
            });
            let d = self.piece(t, op, offset + off, l, x);
            self.release(d.at);
            done = Completion {
                at: done.at.max(d.at),
                status: if done.status == Status::Ok {
                    d.status
                } else {
                    done.status
                },
                result: done.result.or(d.result),
            };
            off += u64::from(l);
            if off >= u64::from(len) {
                break;
            }
            self.stats.mdts_splits += 1;
        }
        done
    }

    /// A command that reached the controller at `at` whose data takes
    /// `xfer` on the link: when its data has crossed the link (a read's up
    /// to the host, a write's fetched and buffered), or its work is done.
    /// The controller's DMA engine moves one command's data at a time in
    /// each direction, so the link's bandwidth is shared.
    pub fn submit_linked(&mut self, at: Ns, cmd: &Command, xfer: Ns) -> Completion {
        self.command(at, cmd, Some(xfer))
    }

    /// Any command from `at`; `xfer` as [`Self::submit_linked`]'s (None:
    /// the link is not booked here).
    fn command(&mut self, at: Ns, cmd: &Command, xfer: Option<Ns>) -> Completion {
        if matches!(cmd.op, Op::ZoneMgmt(_) | Op::ZoneAppend) && self.layer.zones().is_none() {
            return Completion::unsupported(at);
        }
        // The layer's rules are checked when the command is decoded,
        // before any data moves (a zoned layer's write pointer).
        let s = self.layer.admit(cmd.op, cmd.offset, cmd.len);
        if s != Status::Ok {
            return self.rejected(at, s);
        }
        if cmd.op == Op::Write {
            // The write's directive (DTYPE, DSPEC in CDW12/13) selects
            // where the layer places its data, for all of its pieces.
            self.layer.placement(cmd.hint);
        }
        match cmd.op {
            Op::Write if cmd.fua => self.fua_command(at, cmd, xfer),
            Op::Read | Op::Write => self.data_command(at, cmd.op, cmd.offset, cmd.len, xfer),
            Op::Trim => self.data_command(at, cmd.op, cmd.offset, cmd.len, None),
            Op::Flush => Completion::ok(self.flush(at)),
            Op::ZoneAppend => self.data_command(at, cmd.op, cmd.offset, cmd.len, xfer),
            Op::ZoneMgmt(action) => self.zone_command(at, action, cmd.offset),
            // SCSI commands (SG_IO) never reach an NVMe controller.
            Op::WriteZeroes | Op::Verify { .. } | Op::WriteSame { .. } | Op::WriteVerify => {
                Completion::unsupported(at)
            }
        }
    }

    /// A command the layer refused: decoded, then completed with its
    /// status.
    fn rejected(&mut self, at: Ns, s: Status) -> Completion {
        self.stats.commands += 1;
        self.stats.pieces += 1;
        let t = self.decode(at);
        self.release(t);
        Completion::ok(t).with_status(s)
    }

    /// Zone Management Send: decoded, then the layer's work (a reset's
    /// erases, a finish's padding) in a command slot.
    fn zone_command(&mut self, at: Ns, action: super::ZoneAction, offset: u64) -> Completion {
        self.stats.commands += 1;
        self.stats.pieces += 1;
        let t = self.decode(at);
        let c = self.layer.zone_mgmt(t, action, offset, false);
        self.release(c.at);
        c
    }

    /// Flush from `at`: with a volatile write cache, when every buffered
    /// write is on NAND; else when the controller has decoded it.
    pub fn flush(&mut self, at: Ns) -> Ns {
        self.stats.commands += 1;
        self.stats.pieces += 1;
        self.stats.flushes += 1;
        let t = self.decode(at);
        let done = if self.p.volatile_write_cache {
            self.layer.flush(t)
        } else {
            t
        };
        self.release(done);
        done
    }

    /// A write with Force Unit Access from `at`: complete when its data is
    /// on NAND (a volatile cache is drained for it; a power-loss protected
    /// one makes it an ordinary write).
    pub fn write_fua(&mut self, at: Ns, offset: u64, len: u32) -> Ns {
        let cmd = Command {
            fua: true,
            ..Command::of(Op::Write, offset, len)
        };
        self.fua_command(at, &cmd, None).at
    }

    fn fua_command(&mut self, at: Ns, cmd: &Command, xfer: Option<Ns>) -> Completion {
        self.stats.fua_writes += 1;
        let buffered = self.data_command(at, Op::Write, cmd.offset, cmd.len, xfer);
        if self.p.volatile_write_cache && buffered.status == Status::Ok {
            Completion {
                at: self.layer.flush(buffered.at),
                ..buffered
            }
        } else {
            buffered
        }
    }

    /// The front end's, the data cache's, the FTL's and NAND's counters,
    /// as the run's JSON shows them.
    pub fn counters(&self) -> serde_json::Value {
        let s = &self.stats;
        let f = self.layer.buffer_counters();
        let mut v = serde_json::json!({
            "front_end": {
                "commands": s.commands,
                "pieces": s.pieces,
                "mdts_splits": s.mdts_splits,
                "slot_wait_ns": s.slot_wait_ns,
                "core_wait_ns": s.core_wait_ns,
                "flushes": s.flushes,
                "fua_writes": s.fua_writes,
            },
            "data_cache": {
                "write_units": s.cache_write_units,
                "read_hits": s.cache_read_hits,
                "coalesced_writes": f.coalesced,
                "dram_accesses": s.dram_accesses,
                "dram_wait_ns": s.dram_wait_ns,
                "write_stall_ns": f.write_stall_ns,
            },
        });
        // Arbitration shows where it worked: a run in which every command
        // found a slot as it arrived under round robin has nothing to show,
        // and its JSON stays as it was.
        if s.queued > 0 || self.arb.ams() == Ams::WeightedRoundRobin {
            let served: serde_json::Map<String, serde_json::Value> = Qprio::ALL
                .iter()
                .map(|&p| (p.name().to_string(), self.arb.served[p as usize].into()))
                .collect();
            v["arbitration"] = serde_json::json!({
                "mechanism": match self.arb.ams() {
                    Ams::RoundRobin => "rr",
                    Ams::WeightedRoundRobin => "wrr",
                },
                "submission_queues": self.arb.queues(),
                "queued_commands": s.queued,
                "served": served,
            });
        }
        if let Some(out) = v.as_object_mut() {
            self.layer.counters(out);
        }
        v
    }
}

impl BlockBackend for NvmeFlashSsd {
    fn capacity(&self) -> u64 {
        self.layer.user_bytes()
    }
    fn submit(&mut self, at: Ns, cmd: &Command) -> Completion {
        self.command(at, cmd, None)
    }
}

/// The device behind the NVMe driver: the service-time model, or the
/// flash SSD when the profile has a `[device.flash]` section.
pub enum NvmeDevice {
    Service(NvmeSsd),
    Flash(Box<NvmeFlashSsd>),
}

impl NvmeDevice {
    /// `device.flash.*` present: the flash SSD; else the service-time
    /// model's `device.*` keys. The probe table builds devices without the
    /// run seed (as the UFS device), and the FTL is deterministic.
    pub fn from_profile(p: &Profile) -> Result<NvmeDevice> {
        // Any of the back end's declared keys makes it the flash SSD (one
        // missing is then refused by name).
        if crate::device::flash::has_flash_back_end(p) {
            Ok(NvmeDevice::Flash(Box::new(NvmeFlashSsd::from_profile(
                p, 0,
            )?)))
        } else {
            Ok(NvmeDevice::Service(NvmeSsd::from_profile(p)?))
        }
    }

    /// Identify Controller VWC: the flash SSD's `volatile_write_cache`; the
    /// service-time model has no cache to report.
    pub fn volatile_write_cache(&self) -> bool {
        match self {
            NvmeDevice::Service(_) => false,
            NvmeDevice::Flash(f) => f.p.volatile_write_cache,
        }
    }

    /// The zone geometry of a zoned namespace and the controller's MDTS
    /// (`None`: a conventional namespace).
    pub fn zones(&self) -> Option<(super::ftl::layer::ZoneGeometry, u64)> {
        match self {
            NvmeDevice::Service(_) => None,
            NvmeDevice::Flash(f) => f.layer.zones().map(|z| (z, f.p.mdts)),
        }
    }

    /// The namespace's placement identifiers (an FDP layer's handles).
    pub fn placement_ids(&self) -> Option<Vec<u16>> {
        match self {
            NvmeDevice::Service(_) => None,
            NvmeDevice::Flash(f) => f.layer.placement_ids(),
        }
    }

    /// The service-time model, if that is the device.
    pub fn service(&self) -> Option<&NvmeSsd> {
        match self {
            NvmeDevice::Service(s) => Some(s),
            NvmeDevice::Flash(_) => None,
        }
    }

    /// The flash SSD's counters (none for the service-time model, whose
    /// JSON stays as it was).
    pub fn flash_counters(&self) -> Option<serde_json::Value> {
        match self {
            NvmeDevice::Service(_) => None,
            NvmeDevice::Flash(f) => Some(f.counters()),
        }
    }
}

impl NvmeDevice {
    /// Serve a command that reached the controller at `at`, whose data
    /// takes `xfer` on the link and whose completion entry takes `posted`:
    /// when the completion entry is in host memory. The service-time model
    /// adds the data time after its work, as it always has; the flash SSD
    /// books its data on the link's two directions.
    #[inline]
    pub fn serve(&mut self, at: Ns, cmd: &Command, xfer: Ns, posted: Ns) -> Completion {
        let (done, after) = match self {
            NvmeDevice::Service(s) => (s.submit(at, cmd), xfer + posted),
            NvmeDevice::Flash(f) => (f.submit_linked(at, cmd, xfer), posted),
        };
        Completion {
            at: done.at + after,
            ..done
        }
    }
}

impl NvmeDevice {
    /// The host creates its I/O submission queues ([`NvmeFlashSsd::create_queues`]).
    /// The service-time model has no command slots: nothing waits in its
    /// queues, so it has no arbitration to run.
    pub fn create_queues(&mut self, prios: &[Qprio], depth: usize, wrr: bool) {
        if let NvmeDevice::Flash(f) = self {
            f.create_queues(prios, depth, wrr);
        }
    }

    /// Command `q` rung into submission queue `sq`: its completion (the
    /// entry in host memory) if served as it arrives, else None: it waits
    /// for [`Self::arbitrate`] at [`Self::next_arbitration`].
    #[inline]
    pub fn offer(&mut self, sq: usize, q: Queued) -> Option<Completion> {
        match self {
            NvmeDevice::Service(_) => Some(self.serve(q.at, &q.cmd, q.xfer, q.posted)),
            NvmeDevice::Flash(f) => f.offer(sq, q),
        }
    }

    /// See [`NvmeFlashSsd::arbitrate`].
    pub fn arbitrate(&mut self, t: Ns, out: &mut Vec<(Queued, Completion)>) {
        if let NvmeDevice::Flash(f) = self {
            f.arbitrate(t, out);
        }
    }

    /// Whether the controller supports weighted round robin (CAP.AMS bit
    /// 0); the service-time model has no arbitration.
    pub fn supports_wrr(&self) -> bool {
        match self {
            NvmeDevice::Service(_) => false,
            NvmeDevice::Flash(f) => f.p.arbitration == Arbitration::Wrr,
        }
    }

    /// See [`NvmeFlashSsd::next_arbitration`].
    pub fn next_arbitration(&self) -> Option<Ns> {
        match self {
            NvmeDevice::Service(_) => None,
            NvmeDevice::Flash(f) => f.next_arbitration(),
        }
    }
}

impl BlockBackend for NvmeDevice {
    fn capacity(&self) -> u64 {
        match self {
            NvmeDevice::Service(s) => s.capacity(),
            NvmeDevice::Flash(f) => f.capacity(),
        }
    }
    #[inline]
    fn submit(&mut self, at: Ns, cmd: &Command) -> Completion {
        match self {
            NvmeDevice::Service(s) => s.submit(at, cmd),
            NvmeDevice::Flash(f) => f.submit(at, cmd),
        }
    }
}
