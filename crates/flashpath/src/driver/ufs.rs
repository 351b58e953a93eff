//! UFS host controller driver (ufshcd) with the UFS device behind it.
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

use super::ufshpb::{Hpb, HpbMode, HpbParams, HpbRsp, Prep};
use super::{DiskInfo, Driver, DriverCpuCosts, DriverCtx, DriverEvent, DriverRq};
use crate::device::devfreq::{DevStatus, Devfreq, SimpleOndemand, TimerKind};
use crate::device::nand::Timeline;
use crate::device::{FlashDevice, FlashParams};
use crate::error::{InputError, Result};
use crate::link::ufs::{UfsLink, UfsLinkParams, HPB_SENSE_BYTES, UPIU_HEADER_BYTES};
use crate::profile::limits::{COST, DELAY};
use crate::profile::{range, Profile};
use crate::sim::Ns;
use crate::workload::Ddir;

const EV_RSP: u32 = 0;
const EV_MAP_WORK: u32 = 1;
const EV_MAP_DONE: u32 = 2;
const EV_MAP_READY: u32 = 3;
/// A request's completion under clock scaling (busy accounting first).
const EV_DONE: u32 = 4;
/// A devfreq monitor evaluation (`id` = its generation, to drop stale ones).
const EV_DEVFREQ: u32 = 5;

const BLOCK: u64 = 4096;

#[derive(Clone, Copy, Debug, Default)]
struct Counters {
    reads: u64,
    writes: u64,
    trims: u64,
    read_buffers: u64,
    rsp_with_hpb: u64,
    read_map_misses: u64,
    /// Commands, and their time from doorbell to the end of the firmware's
    /// decode (doorbell, COMMAND UPIU, waiting for the firmware core, fw_cmd).
    commands: u64,
    command_ns: u64,
    fw_wait_ns: u64,
}

pub struct Ufs {
    name: String,
    capacity: u64,
    slots: u32,
    cpu: DriverCpuCosts,
    doorbell: Ns,
    fw_cmd: Ns,
    map_work_delay: Ns,
    pub link: UfsLink,
    fw: Timeline,
    pub dev: FlashDevice,
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
}

/// `hba->clk_scaling` plus the devfreq instance and clock gating.
pub struct ClkScaling {
    pub df: Devfreq,
    /// `clk_scaling.min_gear`: the HS gear on scale-down.
    pub min_gear: u32,
    /// The gear restored on scale-up (the negotiated one).
    pub max_gear: u32,
    /// The link's gear at start (min_gear when starting at the min clock).
    pub initial_gear: u32,
    /// `ufshcd_devfreq_scale`: quiesce, clock change, power mode change.
    pub scale_cost: Ns,
    /// `clk_scaling.suspend_on_no_request` (Qualcomm sets it).
    pub suspend_on_no_request: bool,
    pub active_reqs: u32,
    /// `window_start_t` (None = 0), `busy_start_t`, `tot_busy_t` (ns).
    window_start: Option<Ns>,
    busy_start: Option<Ns>,
    tot_busy: Ns,
    /// `clk_scaling.is_suspended`.
    pub is_suspended: bool,
    /// The evaluation generation the pending EV_DEVFREQ carries.
    gen: u32,
    /// MIN_FREQUENCY PM QoS value of the disk's request-queue device
    /// (kHz), set by the block layer's dev_freq_timeout_ms work.
    pub disk_qos_min_khz: Option<u64>,
    /// A scaling in progress blocks new commands until then.
    busy_until: Ns,
    /// Clock gating: `clk_gating.delay_ms` of idleness gates the clocks;
    /// the next command pays `ungate` (clocks on, hibern8 exit).
    pub gating_delay: Ns,
    /// ufs-qcom (vendor) sets `clk_gating.delay_ms` on every scaling:
    /// `(delay after scale-down, delay after scale-up)`
    /// (`ufs_qcom_clk_scale_down/up_post_change`); `None` keeps one delay.
    pub gating_delay_by_scale: Option<(Ns, Ns)>,
    pub ungate: Ns,
    idle_since: Ns,
    pub gatings: u64,
    /// (time, Hz) of every frequency change, for plots.
    pub trace: Vec<(Ns, u64)>,
    /// Times devfreq monitoring resumed (first request after a suspend).
    pub resumes: Vec<Ns>,
}

impl ClkScaling {
    /// Whether the clocks are gated at `now`: no request for
    /// `clk_gating.delay` since the last completion.
    pub fn gated_at(&self, now: Ns) -> bool {
        self.active_reqs == 0 && self.gating_delay > 0 && now >= self.idle_since + self.gating_delay
    }

    /// `ufshcd_devfreq_get_dev_status` at `now` (times in us as the kernel).
    fn get_dev_status(&mut self, now: Ns) -> DevStatus {
        let mut stat = DevStatus {
            current_frequency: self.df.cur_freq,
            ..DevStatus::default()
        };
        if let Some(ws) = self.window_start {
            if let Some(bs) = self.busy_start {
                self.tot_busy += now - bs;
                self.busy_start = Some(now);
            }
            stat.total_time = (now - ws) / 1000;
            stat.busy_time = self.tot_busy / 1000;
        }
        self.window_start = Some(now);
        self.tot_busy = 0;
        self.busy_start = (self.active_reqs > 0).then_some(now);
        stat
    }
}

impl Ufs {
    pub fn from_profile(p: &Profile, seed: u64) -> Result<Ufs> {
        let fp = FlashParams::from_profile(p)?;
        let mut dev = FlashDevice::new(&fp, seed)?;
        let overwrites = p.ratio(
            "device.flash.precondition_random_overwrites",
            range(
                0.0,
                4.0,
                "random 4 KiB overwrites before the run, in device capacities: garbage \
                 collection reaches its steady state within a few, and each costs about 8 s \
                 per 64 GiB of device before the run starts",
            ),
        )?;
        if overwrites > 0.0 {
            dev.precondition(true, overwrites, seed);
        }
        let rate = p.choice("ufs.link.rate_series", &["A", "B"])?;
        let lp = UfsLinkParams {
            gear: p.count_u32(
                "ufs.link.gear",
                range(1.0, 5.0, "UFS high-speed gears HS-G1 to HS-G5"),
            )?,
            rate_b: rate == "B",
            lanes: p.count_u32(
                "ufs.link.lanes",
                range(1.0, 2.0, "UFS links have 1 or 2 lanes"),
            )?,
            frame_payload: p.bytes(
                "ufs.link.frame_payload",
                range(1.0, 65536.0, "a UniPro frame's payload"),
            )? as u32,
            frame_overhead: p.bytes(
                "ufs.link.frame_overhead",
                range(0.0, 65536.0, "a UniPro frame's headers and CRC"),
            )? as u32,
        };
        lp.validate(&p.file_of("ufs.link.gear"))?;
        let slots = p.count_u32(
            "ufs.host.utrl_slots",
            range(
                1.0,
                32.0,
                "UTRL transfer request slots: 32 at most (UFSHCI)",
            ),
        )?;
        let hpb_on = p.flag("ufs.hpb.enabled")?;
        let mode = p.choice("ufs.hpb.mode", &["device", "host"])?;
        let hpb_exp = range(
            12.0,
            40.0,
            "an HPB size exponent: 512 B x 2^exp, from a 2 MiB sub-region to 512 TiB",
        );
        let rgn_exp = p.count("ufs.hpb.region_size_exp", hpb_exp)?;
        let srgn_exp = p.count("ufs.hpb.srgn_size_exp", hpb_exp)?;
        if srgn_exp > rgn_exp {
            return Err(InputError::new(
                p.file_of("ufs.hpb.srgn_size_exp"),
                None,
                "ufs.hpb.srgn_size_exp must not exceed ufs.hpb.region_size_exp (a sub-region \
                 lies inside a region)",
            ));
        }
        let hp = HpbParams {
            mode: if mode == "host" {
                HpbMode::Host
            } else {
                HpbMode::Device
            },
            entries_per_region: (512u64 << rgn_exp) / BLOCK,
            entries_per_srgn: (512u64 << srgn_exp) / BLOCK,
            max_active_regions: p.count_u32(
                "ufs.hpb.max_active_regions",
                range(1.0, 65535.0, "wLUMaxActiveHPBRegions is 16 bits"),
            )?,
            device_activation_reads: p.count_u32(
                "ufs.hpb.device_activation_reads",
                range(
                    1.0,
                    1e6,
                    "reads of a sub-region before the device recommends it",
                ),
            )?,
            activation_thld: p.count_u32(
                "ufs.hpb.activation_thld",
                range(
                    1.0,
                    1e6,
                    "reads of a sub-region before the host activates it",
                ),
            )?,
            max_single_cmd_blocks: p.count_u32(
                "ufs.hpb.max_single_cmd_blocks",
                range(1.0, 255.0, "bMAX_HPB_SINGLE_CMD (HPB 2.0) is 8 bits"),
            )?,
        };
        let hpb_prep = p.ns("driver.hpb_prep", COST)?;
        let map_work_delay = p.ns("ufs.hpb.map_work_delay", DELAY)?;
        let capacity = dev.user_lpns() * BLOCK;
        let queue_rq = p.ns("driver.queue_rq", COST)?;
        Ok(Ufs {
            name: "sda".into(),
            capacity,
            slots,
            cpu: DriverCpuCosts {
                submit: queue_rq + if hpb_on { hpb_prep } else { 0 },
                irq_handler: p.ns("driver.irq_handler", COST)?,
                poll_iteration: 0,
            },
            doorbell: p.ns("ufs.host.doorbell", COST)?,
            fw_cmd: p.ns("ufs.device.fw_cmd", COST)?,
            map_work_delay,
            link: UfsLink::new(lp),
            fw: Timeline::new(),
            hpb: hpb_on.then(|| {
                let mut h = Hpb::new(hp, dev.user_lpns());
                h.set_factory_layout(dev.factory_layout());
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
        }
        .with_clk_scaling(clk_scaling_from_profile(p, lp.gear)?))
    }

    fn with_clk_scaling(mut self, clk: Option<ClkScaling>) -> Ufs {
        if let Some(c) = &clk {
            self.link.set_gear(c.initial_gear);
        }
        self.clk = clk;
        self
    }

    /// Controller-side time at the current clock: ns given at the maximum
    /// clock, stretched by max/cur (the host controller's work scales with
    /// its core clock).
    fn at_clock(&self, ns: Ns) -> Ns {
        match &self.clk {
            Some(c) if c.df.cur_freq > 0 => {
                (u128::from(ns) * u128::from(c.df.max_opp()) / u128::from(c.df.cur_freq)) as Ns
            }
            _ => ns,
        }
    }

    /// `ufshcd_clk_scaling_start_busy` and clock ungating at submission;
    /// returns when the command may start.
    fn start_busy(&mut self, now: Ns, ctx: &mut DriverCtx<'_, impl Sized>) -> Ns {
        let Some(c) = &mut self.clk else {
            return now;
        };
        let mut at = now.max(c.busy_until);
        if c.active_reqs == 0 && c.gating_delay > 0 && now >= c.idle_since + c.gating_delay {
            c.gatings += 1;
            at += c.ungate;
        }
        let first = c.active_reqs == 0;
        c.active_reqs += 1;
        if first && c.is_suspended {
            // resume_work -> devfreq_resume_device -> monitor_resume.
            c.is_suspended = false;
            c.df.resume(now);
            c.resumes.push(now);
            c.gen += 1;
            if let Some(t) = c.df.next_eval {
                ctx.schedule(
                    t,
                    DriverEvent {
                        kind: EV_DEVFREQ,
                        id: c.gen,
                    },
                );
            }
        }
        if c.window_start.is_none() {
            c.window_start = Some(now);
            c.tot_busy = 0;
            c.busy_start = None;
        }
        if c.busy_start.is_none() {
            c.busy_start = Some(now);
        }
        at
    }

    /// `ufshcd_clk_scaling_update_busy` at a completion.
    fn end_busy(&mut self, now: Ns) {
        if let Some(c) = &mut self.clk {
            c.active_reqs -= 1;
            if c.active_reqs == 0 {
                if let Some(bs) = c.busy_start.take() {
                    c.tot_busy += now - bs;
                }
                c.idle_since = now;
            }
        }
    }

    /// One devfreq evaluation: `update_devfreq` -> `ufshcd_devfreq_target`.
    fn devfreq_eval(&mut self, now: Ns, ctx: &mut DriverCtx<'_, impl Sized>) {
        let Some(c) = &mut self.clk else { return };
        let stat = c.get_dev_status(now);
        let mut freq = c.df.evaluate(now, stat);
        let max = c.df.max_opp();
        // Seed 3: a disk's MIN_FREQUENCY request above the max clock
        // forces the max clock.
        if c.disk_qos_min_khz
            .is_some_and(|k| k.saturating_mul(1000) >= max)
        {
            freq = max;
        }
        let scale_up = freq == max;
        if !scale_up {
            freq = c.df.min_opp();
        }
        if freq != c.df.cur_freq {
            let start = now.max(c.busy_until);
            c.busy_until = start + c.scale_cost;
            c.df.set_cur(freq);
            c.trace.push((start, freq));
            if let Some((down, up)) = c.gating_delay_by_scale {
                c.gating_delay = if scale_up { up } else { down };
            }
            let gear = if scale_up { c.max_gear } else { c.min_gear };
            self.link.set_gear(gear);
        }
        let c = self.clk.as_mut().unwrap();
        if c.active_reqs == 0 && (!scale_up || c.suspend_on_no_request) {
            // suspend_work: window_start_t = 0, devfreq_suspend_device.
            c.is_suspended = true;
            c.window_start = None;
            c.df.suspend();
        }
        if let Some(t) = c.df.next_eval {
            ctx.schedule(
                t,
                DriverEvent {
                    kind: EV_DEVFREQ,
                    id: c.gen,
                },
            );
        }
    }

    /// A command's way to the device: doorbell, COMMAND UPIU, firmware.
    fn command(&mut self, now: Ns) -> Ns {
        self.link.prune(now);
        self.fw.prune(now);
        let doorbell = self.at_clock(self.doorbell);
        let arrived = self.link.send_down(now + doorbell, UPIU_HEADER_BYTES);
        let start = self.fw.reserve(arrived, self.fw_cmd);
        self.c.commands += 1;
        self.c.fw_wait_ns += start - arrived;
        self.c.command_ns += start + self.fw_cmd - now;
        start + self.fw_cmd
    }

    /// Run one request through link and device; returns the time the
    /// response has arrived and the HPB sense data it carries.
    fn execute(&mut self, now: Ns, rq: &DriverRq) -> Option<(Ns, HpbRsp)> {
        let lpn = rq.offset / BLOCK;
        let blocks = (u64::from(rq.len).div_ceil(BLOCK)) as u32;
        let t = self.command(now);
        let data_done = match rq.ddir {
            Ddir::Read => {
                self.c.reads += 1;
                let prep = match &mut self.hpb {
                    Some(h) => h.prep_read(lpn, blocks),
                    None => Prep::Normal,
                };
                let done = match prep {
                    Prep::HpbRead(ppn) => {
                        let (done, valid) = self.dev.read_with_ppn(t, lpn, ppn);
                        let h = self.hpb.as_mut().unwrap();
                        if !valid {
                            h.stats.stale_at_device += 1;
                        }
                        h.dev_hpb_read(lpn);
                        done
                    }
                    Prep::Normal => {
                        if let Some(h) = &mut self.hpb {
                            h.dev_normal_read(lpn);
                        }
                        let mp = self.dev.map_page_of(lpn);
                        if !self.dev.map_page_cached(mp).0 {
                            // Map miss: the firmware reads the map page and
                            // issues the data read when it has arrived (an
                            // event, so the die sees reads in time order).
                            self.c.read_map_misses += 1;
                            let ready = self.dev.read_map_page(t, mp);
                            self.deferred.push((*rq, ready));
                            return None;
                        }
                        self.dev.read(t, lpn, blocks)
                    }
                };
                return Some(self.finish_read(done, rq));
            }
            Ddir::Write => {
                self.c.writes += 1;
                if let Some(h) = &mut self.hpb {
                    h.prep_write(lpn, blocks);
                    h.dev_write(lpn, blocks);
                }
                let rtt = self.link.send_up(t, UPIU_HEADER_BYTES);
                let data = self
                    .link
                    .send_down(rtt, UPIU_HEADER_BYTES + u64::from(rq.len));
                self.dev.write(data, lpn, blocks)
            }
            Ddir::Trim => {
                self.c.trims += 1;
                if let Some(h) = &mut self.hpb {
                    h.prep_write(lpn, blocks);
                    h.dev_write(lpn, blocks);
                }
                self.dev.trim(t, lpn, blocks)
            }
        };
        Some(self.respond(data_done))
    }

    /// DATA IN from `data_ready`, then the response.
    fn finish_read(&mut self, data_ready: Ns, rq: &DriverRq) -> (Ns, HpbRsp) {
        let sent = self
            .link
            .send_up(data_ready, UPIU_HEADER_BYTES + u64::from(rq.len));
        self.respond(sent)
    }

    /// RESPONSE UPIU (with the device's HPB recommendations) from `at`.
    fn respond(&mut self, at: Ns) -> (Ns, HpbRsp) {
        let rsp = match &mut self.hpb {
            Some(h) => h.dev_take_rsp(),
            None => HpbRsp::default(),
        };
        let extra = if rsp.is_empty() { 0 } else { HPB_SENSE_BYTES };
        let arrived = self.link.send_up(at, UPIU_HEADER_BYTES + extra);
        (arrived, rsp)
    }

    fn post(&mut self, at: Ns, rsp: HpbRsp, tag: u32, ctx: &mut DriverCtx<'_, impl Sized>) {
        if rsp.is_empty() && self.clk.is_some() {
            ctx.schedule(
                at,
                DriverEvent {
                    kind: EV_DONE,
                    id: tag,
                },
            );
        } else if rsp.is_empty() {
            ctx.complete(at, tag);
        } else {
            self.c.rsp_with_hpb += 1;
            self.pending_rsp.push((tag, rsp));
            ctx.schedule(
                at,
                DriverEvent {
                    kind: EV_RSP,
                    id: tag,
                },
            );
        }
    }

    /// READ BUFFER (0xF9) of one sub-region's map: command, the device
    /// reads the map pages covering it, DATA IN of 8 B per entry, response.
    fn read_buffer(&mut self, now: Ns, rgn: u32, srgn: u32) -> Ns {
        self.c.read_buffers += 1;
        let h = self.hpb.as_ref().unwrap();
        let (start, n) = h.srgn_span(rgn, srgn, self.dev.user_lpns());
        let map_bytes = h.p.entries_per_srgn * super::ufshpb::HPB_ENTRY_SIZE;
        let t = self.command(now);
        let mut ready = t;
        if n > 0 {
            let first = self.dev.map_page_of(start);
            let last = self.dev.map_page_of(start + n - 1);
            for mp in first..=last {
                ready = ready.max(self.dev.read_map_page(t, mp));
            }
        }
        let data = self.link.send_up(ready, UPIU_HEADER_BYTES + map_bytes);
        self.link.send_up(data, UPIU_HEADER_BYTES)
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
        DiskInfo::single_queue(&self.name, self.capacity, self.slots, self.cpu)
    }
    fn queue_rq(&mut self, rq: DriverRq, ctx: &mut DriverCtx<'_, E>) {
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
            Some((at, rsp)) => self.post(at, rsp, rq.tag, ctx),
            None => {
                let &(_, ready) = self.deferred.last().unwrap();
                ctx.schedule(
                    ready,
                    DriverEvent {
                        kind: EV_MAP_READY,
                        id: rq.tag,
                    },
                );
            }
        }
    }
    fn on_event(&mut self, ev: DriverEvent, ctx: &mut DriverCtx<'_, E>) {
        let now = ctx.now();
        match ev.kind {
            EV_RSP => {
                let i = self
                    .pending_rsp
                    .iter()
                    .position(|(t, _)| *t == ev.id)
                    .expect("response of a known request");
                let (tag, rsp) = self.pending_rsp.swap_remove(i);
                self.hpb.as_mut().unwrap().host_rsp(&rsp);
                self.end_busy(now);
                if !self.map_work_queued {
                    self.map_work_queued = true;
                    ctx.schedule(
                        now + self.map_work_delay,
                        DriverEvent {
                            kind: EV_MAP_WORK,
                            id: 0,
                        },
                    );
                }
                ctx.complete(now, tag);
            }
            EV_MAP_READY => {
                let i = self
                    .deferred
                    .iter()
                    .position(|(r, _)| r.tag == ev.id)
                    .expect("deferred read of a known request");
                let (rq, _) = self.deferred.swap_remove(i);
                let lpn = rq.offset / BLOCK;
                let blocks = (u64::from(rq.len).div_ceil(BLOCK)) as u32;
                let done = self.dev.read(now, lpn, blocks);
                let (at, rsp) = self.finish_read(done, &rq);
                self.post(at, rsp, rq.tag, ctx);
            }
            EV_MAP_WORK => {
                self.map_work_queued = false;
                let mut loads = std::mem::take(&mut self.loads);
                loads.clear();
                self.hpb.as_mut().unwrap().map_work(&mut loads);
                for &(rgn, srgn) in &loads {
                    let done = self.read_buffer(now, rgn, srgn);
                    let id = self.hpb.as_ref().unwrap().srgn_id(rgn, srgn);
                    ctx.schedule(
                        done,
                        DriverEvent {
                            kind: EV_MAP_DONE,
                            id,
                        },
                    );
                }
                self.loads = loads;
            }
            EV_MAP_DONE => {
                let h = self.hpb.as_mut().unwrap();
                let (rgn, srgn) = h.srgn_of_id(ev.id);
                let (start, n) = h.srgn_span(rgn, srgn, self.dev.user_lpns());
                let dev = &self.dev;
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
            EV_DONE => {
                self.end_busy(now);
                ctx.complete(now, ev.id);
            }
            EV_DEVFREQ => {
                if self
                    .clk
                    .as_ref()
                    .is_some_and(|c| c.gen == ev.id && c.df.next_eval == Some(now))
                {
                    self.devfreq_eval(now, ctx);
                }
            }
            _ => unreachable!("unknown UFS event"),
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
        if let Some(c) = &self.clk {
            if let Some(t) = c.df.next_eval {
                ctx.schedule(
                    t,
                    DriverEvent {
                        kind: EV_DEVFREQ,
                        id: c.gen,
                    },
                );
            }
        }
    }
    fn counters(&self) -> serde_json::Value {
        let s = self.dev.stats();
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
            "ftl": {
                "map_hits": s.map_hits,
                "map_misses": s.map_misses,
                "map_hit_ratio": s.map_hit_ratio(),
                "nand_reads_data": s.nand_reads_data,
                "nand_reads_map": s.nand_reads_map,
                "hpb_reads": s.hpb_reads,
                "hpb_stale": s.hpb_stale,
                "waf": s.waf(),
                "gc_runs": s.gc_runs,
            },
            "nand": {
                "reads": self.dev.nand().waits.reads,
                "die_wait_ns_per_read": per(self.dev.nand().waits.die_wait_ns, self.dev.nand().waits.reads),
                "channel_wait_ns_per_read": per(self.dev.nand().waits.channel_wait_ns, self.dev.nand().waits.reads),
                "t_read_ns": self.dev.nand().timing.t_read,
                "read_xfer_ns": self.dev.nand().xfer_ns(BLOCK),
            },
            "hpb": serde_json::Value::Null,
        });
        if let Some(c) = &self.clk {
            v["clk_scaling"] = serde_json::json!({
                "evaluations": c.df.evaluations,
                "transitions": c.df.transitions,
                "gatings": c.gatings,
                "cur_freq_hz": c.df.cur_freq,
                "trace": c.trace.iter().map(|&(t, f)| [t, f]).collect::<Vec<_>>(),
                "resumes": c.resumes,
            });
        }
        if let Some(q) = &self.qos {
            v["qcom_qos_votes"] = serde_json::json!(q.votes_cast);
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

/// `ufs.clk_scaling.*` and `ufs.clk_gating.*` when the profile has them
/// (clock scaling off otherwise, as on a controller without
/// UFSHCD_CAP_CLK_SCALING).
fn clk_scaling_from_profile(p: &Profile, gear: u32) -> Result<Option<ClkScaling>> {
    if !p.has("ufs.clk_scaling.enabled") || !p.flag("ufs.clk_scaling.enabled")? {
        return Ok(None);
    }
    let k = |s: &str| format!("ufs.clk_scaling.{s}");
    let bad = |key: &str, m: &str| InputError::new(p.file_of(&k(key)), None, m);
    let mut opps: Vec<u64> = p
        .list(
            &k("freqs"),
            "frequency",
            range(
                1e3,
                1e10,
                "a UFS controller clock (operating point): 1 kHz to 10 GHz",
            ),
            64,
        )?
        .into_iter()
        .map(|f| f.round() as u64)
        .collect();
    opps.sort_unstable();
    opps.dedup();
    if opps.is_empty() {
        return Err(bad(
            "freqs",
            "ufs.clk_scaling.freqs needs at least one frequency",
        ));
    }
    let timer = match p.choice(&k("timer"), &["delayed", "deferrable"])?.as_str() {
        "delayed" => TimerKind::Delayed,
        _ => {
            return Err(bad(
                "timer",
                "ufs.clk_scaling.timer=deferrable is not modelled yet for UFS (the machine does not tell the driver when its CPU wakes); use delayed",
            ))
        }
    };
    let percent = range(
        0.0,
        100.0,
        "a load percentage of simple_ondemand (governor_simpleondemand.c refuses \
         upthreshold > 100)",
    );
    let governor = SimpleOndemand {
        upthreshold: p.count(&k("upthreshold"), percent)?,
        downdifferential: p.count(&k("downdifferential"), percent)?,
    };
    if governor.upthreshold < governor.downdifferential {
        return Err(bad(
            "downdifferential",
            "need downdifferential <= upthreshold (governor_simpleondemand.c)",
        ));
    }
    let min_gear = p.count_u32(
        &k("min_gear"),
        range(1.0, f64::from(gear), "a gear from HS-G1 to ufs.link.gear"),
    )?;
    let max = *opps.last().unwrap();
    let polling = p.ns(&k("polling"), DELAY)?;
    let min = opps[0];
    let initial = match p.choice(&k("initial"), &["min", "max"])?.as_str() {
        "min" => min,
        _ => max,
    };
    let mut df = Devfreq::new(opps, governor, polling, timer, initial, 0);
    // ufshcd_devfreq_init: the monitor starts with the device; ufshcd
    // suspends it until the first request (clk_scaling.is_suspended).
    df.suspend();
    let link_gear = if initial == max { gear } else { min_gear };
    // Optional: a profile without the key keeps `delay` at every clock.
    let by_scale = if p.has("ufs.clk_gating.delay_perf") {
        Some((
            p.ns("ufs.clk_gating.delay", DELAY)?,
            p.ns("ufs.clk_gating.delay_perf", DELAY)?,
        ))
    } else {
        None
    };
    let gating_delay = match by_scale {
        Some((_, up)) if initial == max => up,
        _ => p.ns("ufs.clk_gating.delay", DELAY)?,
    };
    Ok(Some(ClkScaling {
        df,
        min_gear,
        initial_gear: link_gear,
        max_gear: gear,
        scale_cost: p.ns(&k("scale_cost"), COST)?,
        suspend_on_no_request: p.flag(&k("suspend_on_no_request"))?,
        active_reqs: 0,
        window_start: None,
        busy_start: None,
        tot_busy: 0,
        is_suspended: true,
        gen: 0,
        disk_qos_min_khz: None,
        busy_until: 0,
        gating_delay,
        gating_delay_by_scale: by_scale,
        ungate: p.ns("ufs.clk_gating.ungate", COST)?,
        idle_since: 0,
        gatings: 0,
        trace: vec![(0, initial)],
        resumes: Vec::new(),
    }))
}
