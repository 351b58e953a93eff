//! UFS host controller driver (ufshcd), driving a UFS device
//! ([`crate::device::ufs::UfsDevice`]) over the UniPro link
//! ([`crate::link::ufs`]).
//!
//! Per request: the driver fills a UTP transfer request descriptor in one
//! of the UTRL's slots (32 for UFS 2.1) and rings the doorbell; the host
//! controller fetches it and sends the COMMAND UPIU down the link; the
//! device firmware decodes it (one controller core, `fw_cmd` per command);
//! a read goes to the FTL (normal READ: map lookup through the map cache;
//! HPB READ: with the host's PPN) and the data comes back as a DATA IN
//! UPIU; a write is asked for with RTT, sent as DATA OUT and buffered; the
//! RESPONSE UPIU (with HPB sense data when the device has recommendations)
//! ends it and the controller raises the completion interrupt.
//!
//! Everything is booked on timelines (link directions, firmware core, NAND)
//! when the request arrives, so a request needs no event of its own; an
//! event is scheduled only for HPB work (a response with recommendations,
//! map_work, a READ BUFFER completing).

pub mod clk_scaling;
pub mod sense;

pub use clk_scaling::ClkScaling;

use super::ufshpb::{Hpb, HpbParams, HpbRsp, Prep};
use super::{
    BlkStatus, DiskInfo, Driver, DriverCpuCosts, DriverCtx, DriverEvent, DriverRq, WriteCache,
    ZonedLimits,
};
use crate::device::ufs::{ReadStart, UfsDevice};
use crate::device::{BadBlocks, Op, Status};
use crate::error::Result;
use crate::link::ufs::{UfsLink, UfsLinkParams, HPB_SENSE_BYTES, UPIU_HEADER_BYTES};
use crate::profile::limits::{COST, DELAY};
use crate::profile::{range, Profile};
use crate::sim::Ns;
use crate::types::Ddir;
use clk_scaling::clk_scaling_from_profile;

/// The UFS driver's events.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// Request `tag`'s RESPONSE UPIU arrived with HPB sense data
    /// (ufshpb_rsp_upiu before the completion).
    HpbResponse { tag: u32, status: BlkStatus },
    /// The map page deferred read `tag` waited for is in the device: its
    /// data read is issued now.
    MapReady { tag: u32 },
    /// ufshpb's map_work runs.
    MapWork,
    /// The READ BUFFER of sub-region `srgn` (`Hpb::srgn_id`) completed.
    MapLoaded { srgn: u32 },
    /// Request `tag` completes under clock scaling (busy accounting first).
    Done { tag: u32, status: BlkStatus },
    /// A devfreq monitor evaluation.
    Devfreq,
}

const BLOCK: u64 = 4096;

#[derive(Clone, Copy, Debug, Default)]
struct Counters {
    reads: u64,
    writes: u64,
    trims: u64,
    /// SYNCHRONIZE CACHE commands and writes with FUA.
    flushes: u64,
    fua_writes: u64,
    read_buffers: u64,
    rsp_with_hpb: u64,
    read_map_misses: u64,
    /// ZBC OUT zone actions, commands refused with CHECK CONDITION, and
    /// zone appends the driver turned into writes at the write pointer.
    zone_actions: u64,
    check_conditions: u64,
    emulated_appends: u64,
    /// VERIFY(10) commands (SG_IO only) the LU ran: medium reads with no
    /// data phase.
    verifies: u64,
    /// Commands, and their time from doorbell to the end of the firmware's
    /// decode (doorbell, COMMAND UPIU, waiting for the firmware core, fw_cmd).
    commands: u64,
    command_ns: u64,
    fw_wait_ns: u64,
    /// COMMAND UPIUs sent with the Command Priority flag.
    cp_commands: u64,
}

/// UPIU_CMD_FLAGS_CP (include/ufs/ufs.h): ufshcd_comp_scsi_upiu
/// (drivers/ufs/core/ufshcd.c, Linux 6.12) sets the COMMAND UPIU's Command
/// Priority flag for a request of I/O priority class RT
/// (`IOPRIO_PRIO_CLASS(req_get_ioprio(rq)) == IOPRIO_CLASS_RT`,
/// include/uapi/linux/ioprio.h: the class in bits 15:13), whatever the
/// device. The device model has no command queue to reorder (its firmware
/// core and dies book commands in arrival order), so the flag is counted,
/// not yet served first.
fn command_priority(ioprio: u16) -> bool {
    const IOPRIO_CLASS_RT: u16 = 1;
    ioprio >> 13 == IOPRIO_CLASS_RT
}

pub struct Ufs {
    name: String,
    slots: u32,
    cpu: DriverCpuCosts,
    doorbell: Ns,
    map_work_delay: Ns,
    pub link: UfsLink,
    /// The device: firmware core, FTL and NAND, HPB device side.
    pub dev: UfsDevice,
    /// The HPB host side (ufshpb).
    pub hpb: Option<Hpb>,
    /// Responses carrying HPB sense data, by slab tag, until they arrive.
    pending_rsp: Vec<(u32, HpbRsp)>,
    map_work_queued: bool,
    loads: Vec<(u32, u32)>,
    deferred: Vec<(DriverRq, Ns)>,
    c: Counters,
    /// ufshcd clock scaling with devfreq (`UFSHCD_CAP_CLK_SCALING`).
    pub clk: Option<ClkScaling>,
    /// The vendor ufs-qcom CPU PM QoS vote (`ufs.qcom_qos.*`).
    pub qos: Option<super::ufs_qcom_qos::QcomQos>,
    /// `device.badblocks`: the device answers a command over one with
    /// CHECK CONDITION, MEDIUM ERROR, which the SCSI midlayer ends with
    /// an I/O error.
    badblocks: BadBlocks,
}

crate::choice_enum! {
    /// `ufs.link.rate_series`: M-PHY's HS rate series.
    pub enum RateSeries {
        A = "A",
        B = "B",
    }
}

crate::params! {
    /// The UFS host controller driver (drivers/ufs/core/ufshcd.c) and its
    /// link (M-PHY and UniPro).
    pub struct UfsParams {
        /// The M-PHY HS rate series.
        rate_series: RateSeries = required choice("ufs.link.rate_series", RateSeries),
        /// The HS gear.
        gear: u32 = required count_u32(
            "ufs.link.gear",
            range(1.0, 5.0, "UFS high-speed gears HS-G1 to HS-G5")
        ),
        /// Lanes of the link.
        lanes: u32 = required count_u32(
            "ufs.link.lanes",
            range(1.0, 2.0, "UFS links have 1 or 2 lanes")
        ),
        /// A UniPro frame's payload.
        frame_payload: u64 = required bytes(
            "ufs.link.frame_payload",
            range(1.0, 65536.0, "a UniPro frame's payload")
        ),
        /// A UniPro frame's headers and CRC.
        frame_overhead: u64 = required bytes(
            "ufs.link.frame_overhead",
            range(0.0, 65536.0, "a UniPro frame's headers and CRC")
        ),
        /// UTRL transfer request slots (the host's queue depth).
        utrl_slots: u32 = required count_u32(
            "ufs.host.utrl_slots",
            range(1.0, 32.0, "UTRL transfer request slots: 32 at most (UFSHCI)")
        ),
        /// Whether HPB is on (the device's HPB descriptor and the host's
        /// ufshpb).
        hpb_enabled: bool = required flag("ufs.hpb.enabled"),
        /// ufshpb's preparation of an HPB READ in queue_rq, added to it
        /// with HPB on.
        hpb_prep: Ns = required ns("driver.hpb_prep", COST),
        /// The delay of ufshpb's map work after a response asks for it.
        map_work_delay: Ns = required ns("ufs.hpb.map_work_delay", DELAY),
        /// Ringing the UTRL doorbell (an MMIO write).
        doorbell: Ns = required ns("ufs.host.doorbell", COST),
    }
}

impl Ufs {
    /// `ncpus`: the host's CPUs.
    pub fn from_profile(p: &Profile, seed: u64, ncpus: u32) -> Result<Ufs> {
        let up = UfsParams::read(p)?;
        let lp = UfsLinkParams {
            gear: up.gear,
            rate_b: up.rate_series == RateSeries::B,
            lanes: up.lanes,
            frame_payload: up.frame_payload as u32,
            frame_overhead: up.frame_overhead as u32,
        };
        lp.validate(&p.file_of("ufs.link.gear"))?;
        let hpb_on = up.hpb_enabled;
        let hp = HpbParams::from_profile(p)?;
        let dev = UfsDevice::from_profile(p, seed, hpb_on.then_some(hp))?;
        let mut cpu = DriverCpuCosts::from_profile(p, false)?;
        if hpb_on {
            cpu.submit += up.hpb_prep;
        }
        Ok(Ufs {
            name: "sda".into(),
            slots: up.utrl_slots,
            cpu,
            doorbell: up.doorbell,
            map_work_delay: up.map_work_delay,
            link: UfsLink::new(lp),
            hpb: hpb_on.then(|| {
                let mut h = Hpb::new(hp, dev.mapped().user_lpns());
                h.set_factory_layout(dev.mapped().factory_layout());
                h
            }),
            dev,
            pending_rsp: Vec::new(),
            map_work_queued: false,
            loads: Vec::new(),
            deferred: Vec::new(),
            c: Counters::default(),
            clk: None,
            qos: super::ufs_qcom_qos::QcomQos::from_profile(p)?,
            badblocks: BadBlocks::from_profile(p)?,
        }
        .with_clk_scaling(clk_scaling_from_profile(p, lp.gear, ncpus)?))
    }

    fn with_clk_scaling(mut self, clk: Option<ClkScaling>) -> Ufs {
        if let Some(c) = &clk {
            self.link.set_gear(c.initial_gear);
        }
        self.clk = clk;
        self
    }

    /// A command's way to the device: doorbell, COMMAND UPIU, firmware.
    fn command(&mut self, now: Ns) -> Ns {
        self.link.prune(now);
        self.dev.prune(now);
        let doorbell = self.at_clock(self.doorbell);
        let arrived = self.link.send_down(now + doorbell, UPIU_HEADER_BYTES);
        let (start, decoded) = self.dev.decode(arrived);
        self.c.commands += 1;
        self.c.fw_wait_ns += start - arrived;
        self.c.command_ns += decoded - now;
        decoded
    }

    /// Run one request through link and device; returns the time the
    /// response has arrived, the HPB sense data it carries and how the
    /// command ended.
    fn execute(&mut self, now: Ns, rq: &DriverRq) -> Option<(Ns, HpbRsp, Status)> {
        let ok = |(at, rsp)| Some((at, rsp, Status::Ok));
        let t = self.command(now);
        if rq.op == Op::Flush {
            // SYNCHRONIZE CACHE: no data phase.
            self.c.flushes += 1;
            let done = self.dev.flush(t);
            return ok(self.respond(done));
        }
        if let Op::ZoneMgmt(action) = rq.op {
            // ZBC OUT (0x94) with its service action: no data phase.
            self.c.zone_actions += 1;
            let c = self.dev.zone_mgmt(t, action, rq.offset);
            return Some(self.respond_status(c.at, c.status));
        }
        // The SCSI commands only SG_IO sends (fio's sg_write_mode), as a
        // UFS LU answers them. Its command set (JESD220 UFS 2.0+, "UFS
        // SCSI Commands") has VERIFY(10) but not WRITE SAME nor WRITE AND
        // VERIFY: those end with CHECK CONDITION, ILLEGAL REQUEST, INVALID
        // COMMAND OPERATION CODE (SPC-5 4.5.2) before any data phase. Its
        // VERIFY(10) checks the medium only (the CDB's BYTCHK is 0b in
        // JESD220's table): a data compare (BYTCHK 01b, 11b) is INVALID
        // FIELD IN CDB. That reading of the spec is not checked against a
        // device; a LU that compared would move the data-out and read.
        match rq.op {
            Op::Verify { bytchk: 0 } => self.c.verifies += 1,
            Op::Verify { .. } => return Some(self.respond_status(t, Status::InvalidField)),
            Op::WriteSame { .. } | Op::WriteVerify => {
                return Some(self.respond_status(t, Status::Unsupported))
            }
            _ => {}
        }
        // SCSI has no zone append: the host writes at the zone's write
        // pointer instead (sd_zbc.c's emulation before Linux 6.10, the
        // zone write plug's since, blk-zoned.c), which it tracks; with
        // one write in flight per zone the host's copy is the device's.
        let offset = match rq.op {
            Op::ZoneAppend => {
                self.c.emulated_appends += 1;
                self.dev.write_pointer(rq.offset).unwrap_or(rq.offset)
            }
            _ => rq.offset,
        };
        // VERIFY reads the range from the medium, as a READ does, under
        // the same zone rules (ZBC's read rules).
        let (op, ddir) = match rq.op {
            Op::ZoneAppend => (Op::Write, rq.ddir),
            Op::Verify { .. } => (Op::Read, Ddir::Read),
            op => (op, rq.ddir),
        };
        // The firmware checks a zoned LU's rules once the command is
        // decoded: a refused write asks for no data.
        let s = self.dev.admit(op, offset, rq.len);
        if s != Status::Ok {
            return Some(self.respond_status(t, s));
        }
        let lpn = offset / BLOCK;
        let blocks = (u64::from(rq.len).div_ceil(BLOCK)) as u32;
        let data_done = match ddir {
            Ddir::Read => {
                if rq.op == Op::Read {
                    self.c.reads += 1;
                }
                // A VERIFY is no READ: HPB READ replaces only the latter.
                let prep = match &mut self.hpb {
                    Some(h) if rq.op == Op::Read => h.prep_read(lpn, blocks),
                    _ => Prep::Normal,
                };
                let done = match prep {
                    Prep::HpbRead(ppn) => {
                        let (done, valid) = self.dev.hpb_read(t, lpn, ppn);
                        if !valid {
                            self.hpb.as_mut().unwrap().stats.stale_at_device += 1;
                        }
                        done
                    }
                    Prep::Normal => match self.dev.read(t, offset, rq.len) {
                        ReadStart::Done(done) => done,
                        ReadStart::MapMiss { map_ready } => {
                            // The device issues the data read when the map
                            // page has arrived: an event then, so the die
                            // sees reads in time order.
                            self.c.read_map_misses += 1;
                            self.deferred.push((*rq, map_ready));
                            return None;
                        }
                    },
                };
                return ok(self.finish_read(done, rq));
            }
            Ddir::Write => {
                self.c.writes += 1;
                if let Some(h) = &mut self.hpb {
                    h.prep_write(lpn, blocks);
                }
                let rtt = self.link.send_up(t, UPIU_HEADER_BYTES);
                let data = self
                    .link
                    .send_down(rtt, UPIU_HEADER_BYTES + u64::from(rq.len));
                let c = self.dev.write(data, offset, rq.len);
                if c.status != Status::Ok {
                    return Some(self.respond_status(c.at, c.status));
                }
                let buffered = c.at;
                if rq.fua {
                    // WRITE(10) with FUA: the response waits for the data
                    // on NAND (the model drains the buffer for it, as the
                    // NVMe flash SSD does).
                    self.c.fua_writes += 1;
                    self.dev.flush(buffered)
                } else {
                    buffered
                }
            }
            Ddir::Trim => {
                self.c.trims += 1;
                if let Some(h) = &mut self.hpb {
                    h.prep_write(lpn, blocks);
                }
                self.dev.trim(t, offset, rq.len)
            }
        };
        ok(self.respond(data_done))
    }

    /// RESPONSE UPIU from `at` for a command that ended with `s`: GOOD,
    /// or CHECK CONDITION with its sense data in the UPIU's data segment
    /// (2 B length + 18 B fixed-format sense, the size HPB's uses).
    fn respond_status(&mut self, at: Ns, s: Status) -> (Ns, HpbRsp, Status) {
        if s == Status::Ok {
            let (at, rsp) = self.respond(at);
            return (at, rsp, s);
        }
        self.c.check_conditions += 1;
        let arrived = self.link.send_up(at, UPIU_HEADER_BYTES + HPB_SENSE_BYTES);
        (arrived, HpbRsp::default(), s)
    }

    /// DATA IN from `data_ready`, then the response; a VERIFY has no
    /// data phase, only its response.
    fn finish_read(&mut self, data_ready: Ns, rq: &DriverRq) -> (Ns, HpbRsp) {
        if matches!(rq.op, Op::Verify { .. }) {
            return self.respond(data_ready);
        }
        let sent = self
            .link
            .send_up(data_ready, UPIU_HEADER_BYTES + u64::from(rq.len));
        self.respond(sent)
    }

    /// RESPONSE UPIU (with the device's HPB recommendations) from `at`.
    fn respond(&mut self, at: Ns) -> (Ns, HpbRsp) {
        let rsp = self.dev.take_rsp();
        let extra = if rsp.is_empty() { 0 } else { HPB_SENSE_BYTES };
        let arrived = self.link.send_up(at, UPIU_HEADER_BYTES + extra);
        (arrived, rsp)
    }

    fn post(
        &mut self,
        at: Ns,
        rsp: HpbRsp,
        device: Status,
        rq: &DriverRq,
        ctx: &mut DriverCtx<'_, impl Sized>,
    ) {
        let tag = rq.tag;
        let device = if device == Status::Ok {
            self.badblocks.status(&rq.command())
        } else {
            device
        };
        let status = sense::scsi_blk_status(device, rq.ddir == Ddir::Write);
        if rsp.is_empty() && self.clk.is_some() {
            ctx.schedule(at, Event::Done { tag, status });
        } else if rsp.is_empty() {
            ctx.complete(at, tag, status);
        } else {
            self.c.rsp_with_hpb += 1;
            self.pending_rsp.push((tag, rsp));
            ctx.schedule(at, Event::HpbResponse { tag, status });
        }
    }

    /// READ BUFFER (0xF9) of one sub-region's map: command, the device
    /// reads the map pages covering it, DATA IN of 8 B per entry, response.
    fn read_buffer(&mut self, now: Ns, rgn: u32, srgn: u32) -> Ns {
        self.c.read_buffers += 1;
        let h = self.hpb.as_ref().unwrap();
        let (start, n) = h.srgn_span(rgn, srgn, self.dev.mapped().user_lpns());
        let map_bytes = h.p.entries_per_srgn * super::ufshpb::HPB_ENTRY_SIZE;
        let t = self.command(now);
        let ready = self.dev.read_buffer(t, start, n);
        let data = self.link.send_up(ready, UPIU_HEADER_BYTES + map_bytes);
        self.link.send_up(data, UPIU_HEADER_BYTES)
    }

    /// One of the driver's events, at `ctx.now()`.
    fn handle(&mut self, ev: Event, ctx: &mut DriverCtx<'_, impl Sized>) {
        let now = ctx.now();
        match ev {
            Event::HpbResponse { tag, status } => {
                let i = self
                    .pending_rsp
                    .iter()
                    .position(|(t, _)| *t == tag)
                    .expect("response of a known request");
                let (_, rsp) = self.pending_rsp.swap_remove(i);
                self.hpb.as_mut().unwrap().host_rsp(&rsp);
                self.end_busy(now);
                if !self.map_work_queued {
                    self.map_work_queued = true;
                    ctx.schedule(now + self.map_work_delay, Event::MapWork);
                }
                ctx.complete(now, tag, status);
            }
            Event::MapReady { tag } => {
                let i = self
                    .deferred
                    .iter()
                    .position(|(r, _)| r.tag == tag)
                    .expect("deferred read of a known request");
                let (rq, _) = self.deferred.swap_remove(i);
                let lpn = rq.offset / BLOCK;
                let blocks = (u64::from(rq.len).div_ceil(BLOCK)) as u32;
                let done = self.dev.read_mapped(now, lpn, blocks);
                let (at, rsp) = self.finish_read(done, &rq);
                self.post(at, rsp, Status::Ok, &rq, ctx);
            }
            Event::MapWork => {
                self.map_work_queued = false;
                let mut loads = std::mem::take(&mut self.loads);
                loads.clear();
                self.hpb.as_mut().unwrap().map_work(&mut loads);
                for &(rgn, srgn) in &loads {
                    let done = self.read_buffer(now, rgn, srgn);
                    let srgn = self.hpb.as_ref().unwrap().srgn_id(rgn, srgn);
                    ctx.schedule(done, Event::MapLoaded { srgn });
                }
                self.loads = loads;
            }
            Event::MapLoaded { srgn } => {
                let h = self.hpb.as_mut().unwrap();
                let (rgn, srgn) = h.srgn_of_id(srgn);
                let (start, n) = h.srgn_span(rgn, srgn, self.dev.mapped().user_lpns());
                let dev = self.dev.mapped();
                // The map data the READ BUFFER carried: the device's entries
                // as they are when it completes, copied in bulk (or kept as
                // the factory rule when they all still follow it).
                let factory = h.has_factory_layout() && dev.run_is_factory(start, n);
                h.map_loaded_with(rgn, srgn, factory, |buf| {
                    let (live, past_end) = buf.split_at_mut(n as usize);
                    dev.ppns_into(start, live);
                    past_end.fill(u32::MAX);
                });
            }
            Event::Done { tag, status } => {
                self.end_busy(now);
                ctx.complete(now, tag, status);
            }
            Event::Devfreq => self.devfreq_eval(now, ctx),
        }
    }

    pub fn hpb_hit_ratio(&self) -> f64 {
        match &self.hpb {
            Some(h) if h.stats.hit_cnt + h.stats.miss_cnt > 0 => {
                h.stats.hit_cnt as f64 / (h.stats.hit_cnt + h.stats.miss_cnt) as f64
            }
            _ => 0.0,
        }
    }
}

impl<E> Driver<E> for Ufs {
    fn info(&self) -> DiskInfo {
        DiskInfo::single_queue(&self.name, self.dev.capacity(), self.slots, self.cpu)
    }
    /// sd_read_cache_type (drivers/scsi/sd.c) reads the caching mode
    /// page's WCE and DPOFUA: a UFS device keeps its write cache on and
    /// takes FUA on WRITE(10) (JESD220, the FUA bit of WRITE(10)), so sd
    /// sets blk_queue_write_cache(q, true, true).
    /// A zoned LU's limits as sd_zbc_read_zones sets them
    /// (drivers/scsi/sd_zbc.c): chunk_sectors the zone size, the open
    /// limit from the Zoned Block Device Characteristics VPD page, no
    /// active limit (ZBC has none), and the append limit of the emulation
    /// (`device.zns.zasl`, the largest write the host sends).
    fn zoned(&self) -> Option<ZonedLimits> {
        let z = self.dev.layer().zones()?;
        Some(ZonedLimits {
            nr_zones: z.zones,
            chunk_sectors: z.zone_bytes >> 9,
            max_open_zones: z.max_open,
            max_active_zones: 0,
            zone_append_max_bytes: z.append_max_bytes,
            conventional_zones: z.conventional,
        })
    }
    /// sd_zbc_report_zones (drivers/scsi/sd_zbc.c): REPORT ZONES of the
    /// host-managed LU as probed, before any I/O: its conventional zones
    /// (BLK_ZONE_TYPE_CONVENTIONAL, condition NOT_WP, write pointer at
    /// the zone's end as ZBC reports it undefined and sd_zbc_parse_report
    /// sets it so), then sequential write required zones, empty. ZBC has
    /// no zone capacity: sd_zbc sets it to the zone's length.
    fn report_zones(&self) -> Vec<crate::types::BlkZone> {
        let Some(z) = self.dev.layer().zones() else {
            return Vec::new();
        };
        (0..u64::from(z.zones))
            .map(|i| {
                let conventional = i < u64::from(z.conventional);
                let start = i * z.zone_bytes;
                crate::types::BlkZone {
                    start,
                    len: z.zone_bytes,
                    capacity: z.zone_bytes,
                    wp: if conventional {
                        start + z.zone_bytes
                    } else {
                        start
                    },
                    conventional,
                    cond: if conventional {
                        crate::types::BlkZoneCond::NotWp
                    } else {
                        crate::types::BlkZoneCond::Empty
                    },
                }
            })
            .collect()
    }
    /// A UFS logical unit is a SCSI disk (sd): SG_IO reaches ufshcd's
    /// queuecommand as any SCSI command.
    fn sg_io(&self) -> bool {
        true
    }
    /// A UFS LU's blocks are 4 KiB (JESD220's bLogicalBlockSize 0Ch, the
    /// size every UFS 2.0+ device reports: READ CAPACITY's block length,
    /// which sd makes the queue's logical block size).
    fn logical_block_size(&self) -> u32 {
        4096
    }
    fn write_cache(&self) -> WriteCache {
        WriteCache {
            volatile: true,
            fua: true,
        }
    }
    fn queue_rq(&mut self, rq: DriverRq, ctx: &mut DriverCtx<'_, E>) {
        if command_priority(rq.ioprio) {
            self.c.cp_commands += 1;
        }
        if let Some(q) = &mut self.qos {
            // Gated since the last request: ufs_qcom_setup_clocks(off)
            // dropped every vote.
            if self.clk.as_ref().is_some_and(|c| c.gated_at(ctx.now())) {
                q.unvote_all();
            }
            q.on_request(rq.cpu);
        }
        let start = self.start_busy(ctx.now(), ctx);
        match self.execute(start, &rq) {
            Some((at, rsp, status)) => self.post(at, rsp, status, &rq, ctx),
            None => {
                let &(_, ready) = self.deferred.last().unwrap();
                ctx.schedule(ready, Event::MapReady { tag: rq.tag });
            }
        }
    }
    fn on_event(&mut self, ev: DriverEvent, ctx: &mut DriverCtx<'_, E>) {
        debug_assert!(matches!(ev, DriverEvent::Ufs(_)), "another driver's event");
        if let DriverEvent::Ufs(ev) = ev {
            self.handle(ev, ctx);
        }
    }
    fn cpu_latency_limit(&self, cpu: u32, now: Ns) -> Option<Ns> {
        let q = self.qos.as_ref()?;
        if self.clk.as_ref().is_some_and(|c| c.gated_at(now)) {
            return None;
        }
        q.limit(cpu)
    }
    fn set_disk_min_freq_qos(&mut self, khz: Option<u64>) {
        if let Some(c) = &mut self.clk {
            c.disk_qos_min_khz = khz;
        }
    }
    fn start(&mut self, ctx: &mut DriverCtx<'_, E>) {
        if let Some(c) = &mut self.clk {
            c.arm_eval(ctx);
        }
    }
    fn counters(&self) -> serde_json::Value {
        let per = |a: u64, n: u64| if n > 0 { a as f64 / n as f64 } else { 0.0 };
        let mut v = serde_json::json!({
            "driver": "ufshcd",
            "reads": self.c.reads,
            "read_map_misses": self.c.read_map_misses,
            "read_map_hit_ratio": if self.c.reads > 0 { 1.0 - self.c.read_map_misses as f64 / self.c.reads as f64 } else { 0.0 },
            "writes": self.c.writes,
            "command_ns_per_cmd": per(self.c.command_ns, self.c.commands),
            "fw_wait_ns_per_cmd": per(self.c.fw_wait_ns, self.c.commands),
            "trims": self.c.trims,
            "link_bytes_down": self.link.bytes_down,
            "link_bytes_up": self.link.bytes_up,
            "hpb": serde_json::Value::Null,
        });
        if let Some(out) = v.as_object_mut() {
            self.dev.counters(out);
        }
        // Shown where a request had it: a run without keeps its JSON.
        if self.c.cp_commands > 0 {
            v["cp_commands"] = serde_json::json!(self.c.cp_commands);
        }
        if self.c.verifies > 0 {
            v["verifies"] = serde_json::json!(self.c.verifies);
        }
        if self.c.check_conditions > 0 && self.dev.layer().zones().is_none() {
            v["check_conditions"] = serde_json::json!(self.c.check_conditions);
        }
        if self.dev.layer().zones().is_some() {
            v["zone_actions"] = serde_json::json!(self.c.zone_actions);
            v["check_conditions"] = serde_json::json!(self.c.check_conditions);
            v["emulated_appends"] = serde_json::json!(self.c.emulated_appends);
        }
        if let Some(c) = &self.clk {
            v["clk_scaling"] = serde_json::json!({
                "evaluations": c.df.evaluations,
                "transitions": c.df.transitions,
                "gatings": c.gatings,
                "cur_freq_hz": c.df.cur_freq,
                "trace": c.trace.iter().map(|&(t, f)| [t, f]).collect::<Vec<_>>(),
                "resumes": c.resumes,
            });
            if c.work.is_some() {
                v["clk_scaling"]["works_run"] = serde_json::json!(c.works_run);
            }
        }
        if let Some(q) = &self.qos {
            v["qcom_qos_votes"] = serde_json::json!(q.votes_cast);
        }
        // Only a run that flushed shows it (the others' JSON stays).
        if self.c.flushes + self.c.fua_writes > 0 {
            v["flushes"] = serde_json::json!(self.c.flushes);
            v["fua_writes"] = serde_json::json!(self.c.fua_writes);
        }
        if let Some(h) = &self.hpb {
            let st = h.stats;
            v["hpb"] = serde_json::json!({
                "hit_cnt": st.hit_cnt,
                "miss_cnt": st.miss_cnt,
                "hit_ratio": self.hpb_hit_ratio(),
                "rcmd_noti_cnt": st.rcmd_noti_cnt,
                "rcmd_active_cnt": st.rcmd_active_cnt,
                "rcmd_inactive_cnt": st.rcmd_inactive_cnt,
                "map_req_cnt": st.map_req_cnt,
                "umap_req_cnt": st.umap_req_cnt,
                "lru_evictions": st.lru_evictions,
                "stale_at_device": st.stale_at_device,
                "active_regions": h.active_regions(),
                "regions": h.regions(),
                "srgns_per_rgn": h.srgns_per_rgn(),
                "host_map_bytes": h.host_map_bytes(),
                "read_buffers": self.c.read_buffers,
                "responses_with_hpb": self.c.rsp_with_hpb,
            });
        }
        v
    }
}
