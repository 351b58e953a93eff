//! One fio job thread (a clone of a job section) as fio's backend loop
//! runs it (backend.c `thread_main` -> `do_io`): what to do next (submit
//! an I/O, sync, think, sleep for a rate limit or a replay's timing, reap,
//! wait), and what fio records about it (latencies, depth and batch
//! buckets, bandwidth and IOPS samples, logs).
//!
//! The thread only decides and records; the machine carries each [`Step`]
//! out on the host (CPU costs on the thread's core, the system call, the
//! block layer) and reports back what happened (`queued`,
//! `completed_inline`, `io_completed`, `record_io`).

use crate::mm::thp::{io_buffer_contiguous_bytes, ThpMode};
use crate::report::{JobResult, LatSample, StatOpts, UnifiedRw};
use crate::sim::rng::RngStream;
use crate::sim::{Ns, NS_PER_MS};
use crate::workload::fio::errors::ErrorPolicy;
use crate::workload::fio::flow::FlowMember;
use crate::workload::fio::steadystate::SteadyState;
use crate::workload::fio::zbd::{Adjust, ZbdJob, ZONE_LOCK_RECHECK_NS};
use crate::workload::fio::{BlockSize, IoEngine, JobSpec, RateProcess};
use crate::workload::trace::replay::ReplayDelay;
use crate::workload::{Ddir, IoSource, IoUnit, Pace};
use std::collections::VecDeque;

/// fio's bwavgtime and iopsavgtime default: one sample per 500 ms.
const SAMPLE_INTERVAL: Ns = 500 * NS_PER_MS;

/// With flow_sleep=0 fio's loop re-checks the flow at once, over and over,
/// until another job of the group has issued. The simulator re-checks
/// after this long instead (an assumption: one pass of fio's do_io loop is
/// well under a microsecond, so a held job issues at most this late; the
/// spinning is not charged to its core).
const FLOW_RECHECK_NS: Ns = 1_000;

/// Completion slots allocated before a run; more grow as I/O is in flight.
pub const PREALLOC_DEPTH: u32 = 4096;

/// Everything about a job clone that the loop needs, resolved once.
pub struct ThreadPlan {
    pub spec_index: u32,
    pub clone: u32,
    pub cpu: u32,
    /// The CPUs the thread may run on (`cpus_allowed`); empty means all.
    pub allowed: Vec<u32>,
    /// Threads of a later wave start when every earlier one is done
    /// (stonewall).
    pub wave: u32,
    pub groupid: u32,
    pub source: Box<dyn IoSource>,
    /// Where the job's file starts on the device (its logs give offsets in
    /// the file).
    pub file_start: u64,
    /// flow=N: the clone's place in its flow_id group.
    pub flow: Option<FlowMember>,
    /// zonemode=zbd: the clone's view of its file's zones.
    pub zbd: Option<ZbdJob>,
    /// io_uring's sqthread_poll: the CPU its ring's SQ thread runs on.
    pub sq_cpu: Option<u32>,
}

/// What fio's loop does next, asked at a time `now` (`FioThread::next`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Issue this I/O now (fio's `td_io_queue`); fio has stamped its issue
    /// and logged it.
    Submit(IoUnit),
    /// fsync=N: the next io_u is a sync, run alone with nothing in flight.
    Sync,
    /// zonemode=zbd: reset the zone of `len` bytes at `offset`, then call
    /// `zone_reset_returned`. `device`: on a zoned disk, fio's
    /// zbd_reset_wp (the BLKRESETZONE ioctl, which waits for the reset);
    /// else a trim of emulated zones, done in fio's books only
    /// (zbd_do_io_u_trim returns io_u_completed), costing fio's own work
    /// for an I/O.
    ZoneReset { offset: u64, len: u64, device: bool },
    /// thinktime: spin `spin` on the core, then sleep `sleep` more
    /// (backend.c `handle_thinktime`).
    Think { spin: Ns, sleep: Ns },
    /// Sleep until `at` (a replay's timing or a rate limit), without
    /// reaping.
    SleepUntil(Ns),
    /// A replay waits until `at` for its next I/O's time, reaping each
    /// completion as it comes (fio 3.36's iolog_delay spins on
    /// `io_u_queued_complete(td, 0)`, fio commit b85c01f7): the thread
    /// holds its core until then or until one of its I/Os completes.
    ReapUntil(Ns),
    /// Stop submitting: completions are ready, getevents returns at once.
    Reap,
    /// Stop submitting: wait for the I/O in flight.
    Wait,
    /// Nothing left to issue and nothing in flight: the job ends, after a
    /// final fsync when `end_fsync` asks one now.
    Done { end_fsync: bool },
}

/// What a job's end terminates when a job file has `exitall` (fio's
/// `exit_what`; backend.c fio_terminate_threads).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExitWhat {
    /// The jobs of its reporting group (TERMINATE_GROUP, the default).
    Group,
    /// The jobs running now (TERMINATE_STONEWALL).
    Stonewall,
    /// Every job, those not started included (TERMINATE_ALL).
    All,
}

/// One fio job clone's loop state and results.
pub struct FioThread {
    /// The job section and the clone.
    pub spec: u32,
    pub clone: u32,
    /// Its stonewall wave and start delay.
    pub wave: u32,
    pub startdelay: Ns,
    /// The job's name, the job it waits for (`wait_for`), its reporting
    /// group, and what its end terminates under `exitall` (`exit_what`).
    pub name: String,
    pub wait_for: Option<String>,
    pub groupid: u32,
    pub exit_what: ExitWhat,
    source: Box<dyn IoSource>,
    pub engine: IoEngine,
    /// A synchronous engine: one I/O per call, the call returns with it.
    pub sync: bool,
    /// iodepth (1 for a synchronous engine, unless offloaded).
    pub depth: u32,
    /// io_submit_mode=offload: submit workers, each with the engine at
    /// iodepth 1, queue and reap the I/Os (rate-submit.c); the thread only
    /// hands them over, up to iodepth at a time.
    pub offload: bool,
    /// io_uring with sqthread_poll: fio 3.33's commit (engines/io_uring.c
    /// fio_ioring_commit) returns before fio_ioring_queued and
    /// io_u_mark_submit, so no I/O gets an issue time or a submit bucket.
    sqpoll: bool,
    complete_min: u32,
    /// iodepth_batch_complete_max: events one getevents call returns at
    /// most (fio's fixup_options raises an unset max to the min, so 1).
    complete_max: u32,
    /// Its I/Os complete by polling (hipri on a queue and driver that poll).
    pub polled: bool,
    /// Physically contiguous bytes behind its I/O buffers (mm/thp.rs): a
    /// request maps one DMA segment per such extent.
    pub buf_contiguous: u64,
    runtime: Option<Ns>,
    ramp: Ns,
    thinktime: Ns,
    thinktime_spin: Ns,
    thinktime_blocks: u32,
    /// fio's rate_bps per direction: `rate`, else `rate_iops` times the
    /// direction's smallest block size (init.c __setup_rate), so an IOPS
    /// cap with mixed block sizes is a byte cap.
    rate_bps: [u64; 3],
    rate_poisson: bool,
    rate_rng: RngStream,
    /// td->ioprio (prioclass, prio) and, per direction (read, write), the
    /// command priority's percentage and value (engines/cmdprio.c), drawn
    /// from fio's prio_state stream.
    td_ioprio: u16,
    cmdprio: [Option<(u32, u16)>; 2],
    /// cmdprio_bssplit per direction: (block size, percent, ioprio).
    cmdprio_bs: [Vec<(u64, u32, u16)>; 2],
    prio_rng: RngStream,
    /// Each write's data placement id (fio 3.38's dp_fill_dspec_data).
    placer: super::placement::Placer,
    /// fio's rate_next_io_time per direction (ns since the job started).
    rate_next: [Ns; 3],
    rate_late_ns: u128,
    rate_late_n: u64,

    /// When it started, when its statistics start (after ramp_time), when
    /// it ended.
    pub start: Ns,
    pub stats_start: Ns,
    pub end: Ns,
    /// I/Os submitted and not yet completed by the device.
    pub inflight: u32,
    /// Completed I/Os (request keys) not yet reaped, in completion order.
    pub done: VecDeque<u32>,
    /// The next I/O, held back by a rate limit, with its due time.
    pending: Option<(IoUnit, Option<Ns>)>,
    /// A paced source's (log replay's) time for the pending I/O.
    paced_at: Option<Ns>,
    /// A replay's wait for the next I/O reaps what completes meanwhile
    /// (fio >= 3.36); false: it sleeps without reaping (fio 3.33).
    reap_in_delay: bool,
    /// When the thread last issued an I/O (fio's td->last_issue).
    last_issue: Ns,
    file_start: u64,
    /// write_lat_log / write_iolog asked: record per-I/O samples.
    lat_log: bool,
    io_log: bool,
    /// log_unix_epoch / log_alternate_epoch.
    log_epoch: bool,
    exhausted: bool,
    /// A log replay (read_iolog) whose log ran out leaves what it has in
    /// flight unreaped, as fio does: read_iolog_get sets td->done when the
    /// log is empty, and td_io_getevents returns nothing once td->done is
    /// set (ioengines.c), so do_io's last io_u_queued_complete reaps none
    /// of them. fio counted them at issue (total_ios) but never adds their
    /// bytes or latencies, and its runtime ends there. `fio_log_end`: the
    /// job follows that rule (a job file does; `flashpath replay` counts
    /// every I/O it replays, for its per-I/O comparison); `log_done_at`:
    /// when the log ran out.
    fio_log_end: bool,
    log_done_at: Option<Ns>,
    ios_since_think: u32,
    think_due: bool,
    /// flow=N: the clone's flow group, and flow_sleep.
    flow: Option<FlowMember>,
    /// Steady-state detection (ss_dur > 0), checked by the machine's
    /// once-a-second tick.
    pub ss: Option<SteadyState>,
    /// latency_target's queue-depth search.
    lat: Option<LatTarget>,
    flow_sleep: Ns,
    /// zonemode=zbd, and the zone reset in progress: its zone, the trim it
    /// carries out (zbd_do_io_u_trim) and when it began.
    zbd: Option<ZbdJob>,
    zone_reset: Option<(u32, Option<IoUnit>, Ns)>,

    res: JobResult,
    /// fio's bw_avg_time and iops_avg_time (500 ms, or log_avg_msec for
    /// a job that writes that averaged log), and where each window began.
    bw_interval: Ns,
    iops_interval: Ns,
    last_bw_sample: Ns,
    last_iops_sample: Ns,
    sample_bytes: [u64; 3],
    sample_ios: [u64; 3],

    /// direct=0: reads and writes go through the page cache.
    pub buffered: bool,
    /// sync=1 / dsync on a direct job: its writes carry REQ_FUA.
    pub fua_writes: bool,
    /// The command a passthrough write sends (the sg engine's
    /// sg_write_mode; a plain write for any other engine).
    pub write_op: crate::types::Op,
    /// fio's invalidate=1: drop the disk's clean cached pages at open.
    pub invalidate: bool,
    /// end_fsync / fsync_on_close: fsync before the job ends; done once.
    end_fsync: bool,
    fsync_done: bool,
    /// fsync=N: writes since the last sync, a sync due next, and when the
    /// sync in progress started.
    fsync_blocks: u32,
    writes_since_sync: u32,
    sync_due: bool,
    sync_started: Option<Ns>,
    /// continue_on_error, ignore_error, error_dump.
    errors: ErrorPolicy,
    /// The job's file as fio names it in an io_u error line.
    file_name: String,
    /// fio's td->error and td->verror.
    td_error: i32,
    verror: String,
}

/// The job's reporting options as fio's thread_stat carries them
/// (init.c setup_job copies them from the job's options).
fn stat_opts(spec: &JobSpec) -> StatOpts {
    let mut st = StatOpts {
        clat_percentiles: spec.clat_percentiles,
        lat_percentiles: spec.lat_percentiles,
        slat_percentiles: spec.slat_percentiles,
        unified_rw: match spec.unified_rw_reporting.as_str() {
            "mixed" => UnifiedRw::Mixed,
            "both" => UnifiedRw::Both,
            _ => UnifiedRw::Split,
        },
        ..StatOpts::default()
    };
    if let Some(list) = &spec.percentile_list {
        st.percentile_list = StatOpts::effective_list(list);
        st.percentile_precision = spec.percentile_precision;
    }
    st
}

/// A clone's start delay: `startdelay=low-high` draws it uniformly in the
/// range, in whole microseconds, as fio does once per job at set-up
/// (init.c fixup_options: `rand_between(&td->delay_state, low, high)`).
/// fio seeds `delay_state` from the job's seeds (FIO_RAND_START_DELAY),
/// so the draw follows `randrepeat`/`randseed` as the offsets do
/// ([`super::plan::workload_seed`]), not the run's seed; the generator is
/// flashpath's, so the value is not fio's own draw, only from the same range
/// and as repeatable. Each clone draws its own (fio's clones run
/// fixup_options each).
fn startdelay(spec: &JobSpec, spec_index: u32, clone: u32, seed: u64) -> Ns {
    let Some(high) = spec.startdelay_high else {
        return spec.startdelay;
    };
    let (lo, hi) = (
        spec.startdelay.min(high) / 1_000,
        spec.startdelay.max(high) / 1_000,
    );
    let mut rng = RngStream::new(
        super::plan::workload_seed(spec, seed),
        &format!("job{spec_index}.{clone}.startdelay"),
    );
    (lo + rng.below(hi - lo + 1)) * 1_000
}

impl FioThread {
    /// The clone `plan` of job `spec`; `polled` says whether its I/Os
    /// complete by polling, `thp` how contiguous its buffers are.
    pub fn new(
        spec: &JobSpec,
        plan: ThreadPlan,
        polled: bool,
        thp: ThpMode,
        seed: u64,
    ) -> FioThread {
        let sync = spec.ioengine.is_sync();
        // With offload the io_us are the thread's (iodepth of them) and
        // each worker's engine runs at iodepth 1 (io_workqueue_init_worker_fn).
        let depth = if sync && !spec.io_submit_offload {
            1
        } else {
            spec.iodepth.max(1)
        };
        let mut res = JobResult {
            name: spec.name.clone(),
            description: spec.description.clone(),
            groupid: plan.groupid,
            section_index: plan.spec_index,
            clone_index: plan.clone,
            group_reporting: spec.group_reporting,
            own_options: spec.own_options.clone(),
            rw: spec.rw.fio_name().to_string(),
            ioengine: spec.ioengine.fio_name().to_string(),
            iodepth: spec.iodepth,
            stat: stat_opts(spec),
            ..JobResult::default()
        };
        for d in Ddir::ALL {
            res.bs_range[d.index()] = bs_range(&spec.bs[d.index()]);
        }
        // fio_cmdprio_gen_perc / _parse_and_gen_bssplit: a direction the
        // job does and that carries command priorities gets clat_prio
        // entries, the thread's own priority at index 0 and each other
        // priority the command can carry after it, in first-use order.
        for d in 0..2 {
            let does = spec.rw.has(if d == 0 { Ddir::Read } else { Ddir::Write });
            let mut cmd: Vec<u16> = spec.cmdprio(d).map(|(_, p)| p).into_iter().collect();
            cmd.extend(spec.cmdprio_bs(d).iter().map(|e| e.2));
            if does && !cmd.is_empty() {
                let prios = &mut res.dirs[d].prios;
                prios.push((spec.td_ioprio(), Default::default()));
                for p in cmd {
                    if !prios.iter().any(|(q, _)| *q == p) {
                        prios.push((p, Default::default()));
                    }
                }
            }
        }
        let max_bs = Ddir::ALL
            .iter()
            .map(|d| res.bs_range[d.index()].1)
            .max()
            .unwrap_or(0);
        FioThread {
            spec: plan.spec_index,
            clone: plan.clone,
            wave: plan.wave,
            startdelay: startdelay(spec, plan.spec_index, plan.clone, seed),
            name: spec.name.clone(),
            wait_for: spec.wait_for.clone(),
            groupid: plan.groupid,
            exit_what: match spec.exit_what.as_str() {
                "stonewall" => ExitWhat::Stonewall,
                "all" => ExitWhat::All,
                _ => ExitWhat::Group,
            },
            source: plan.source,
            engine: spec.ioengine,
            sync,
            depth,
            offload: spec.io_submit_offload,
            sqpoll: spec.sqthread_poll,
            complete_min: spec.iodepth_batch_complete_min.max(1),
            complete_max: spec
                .iodepth_batch_complete_max
                .max(spec.iodepth_batch_complete_min)
                .max(1),
            polled,
            // fio's buffer holds iodepth of the largest block (backend.c
            // init_io_u); saturated, a size past u64 is as large as any.
            buf_contiguous: io_buffer_contiguous_bytes(
                spec.io_mem,
                thp,
                max_bs.saturating_mul(u64::from(spec.iodepth.max(1))),
            ),
            runtime: spec.runtime.filter(|r| *r > 0),
            ramp: spec.ramp_time,
            thinktime: spec.thinktime,
            thinktime_spin: spec.thinktime_spin.min(spec.thinktime),
            thinktime_blocks: spec.thinktime_blocks.max(1),
            rate_bps: std::array::from_fn(|d| {
                if spec.rate[d] > 0 {
                    spec.rate[d]
                } else {
                    spec.rate_iops[d] * res.bs_range[d].0.max(1)
                }
            }),
            rate_poisson: spec.rate_process == RateProcess::Poisson,
            rate_rng: RngStream::new(seed, &format!("job{}.{}.rate", plan.spec_index, plan.clone)),
            td_ioprio: spec.td_ioprio(),
            cmdprio: [spec.cmdprio(0), spec.cmdprio(1)],
            cmdprio_bs: [spec.cmdprio_bs(0), spec.cmdprio_bs(1)],
            prio_rng: RngStream::new(seed, &format!("job{}.{}.prio", plan.spec_index, plan.clone)),
            placer: super::placement::Placer::new(
                spec,
                RngStream::new(seed, &format!("job{}.{}.fdp", plan.spec_index, plan.clone)),
            ),
            rate_next: [0; 3],
            rate_late_ns: 0,
            rate_late_n: 0,
            start: 0,
            stats_start: 0,
            end: 0,
            inflight: 0,
            // Capacities grow with use: an iodepth far above what a job
            // can keep in flight must not be allocated up front.
            done: VecDeque::with_capacity(depth.min(PREALLOC_DEPTH) as usize),
            pending: None,
            paced_at: None,
            reap_in_delay: spec.trace_opts.delay == ReplayDelay::Reap,
            last_issue: 0,
            file_start: plan.file_start,
            // A trace replay's per-I/O comparison needs the samples too.
            lat_log: spec.logs_per_io() || spec.trace_opts.lat_csv.is_some(),
            io_log: spec.write_iolog.is_some(),
            log_epoch: spec.log_epoch.contains(&true),
            exhausted: false,
            fio_log_end: spec.read_iolog.is_some() && !spec.trace_opts.count_tail,
            log_done_at: None,
            ios_since_think: 0,
            think_due: false,
            flow: plan.flow,
            ss: (spec.steadystate.dur > 0).then(|| SteadyState::new(spec.steadystate, true)),
            lat: (spec.latency_target > 0).then_some(LatTarget {
                target: spec.latency_target,
                window_us: spec.latency_window,
                pct: spec.latency_percentile,
                iodepth: depth,
                qd: 1,
                qd_high: depth,
                qd_low: 1,
                ts: 0,
                ios_at: 0,
                failed: 0,
                end_run: false,
                quiesce: None,
            }),
            flow_sleep: spec.flow_sleep,
            zbd: plan.zbd,
            zone_reset: None,
            res,
            bw_interval: match (&spec.write_bw_log, spec.log_avg_msec) {
                (Some(_), avg) if avg > 0 => avg * NS_PER_MS,
                _ => SAMPLE_INTERVAL,
            },
            iops_interval: match (&spec.write_iops_log, spec.log_avg_msec) {
                (Some(_), avg) if avg > 0 => avg * NS_PER_MS,
                _ => SAMPLE_INTERVAL,
            },
            last_bw_sample: 0,
            last_iops_sample: 0,
            sample_bytes: [0; 3],
            sample_ios: [0; 3],
            buffered: !spec.direct && spec.ioengine.moves_data(),
            fua_writes: spec.o_sync && spec.direct && spec.ioengine.moves_data(),
            write_op: match spec.ioengine {
                IoEngine::Sg => spec.sg_write_mode.op(),
                IoEngine::IoUringCmd if spec.zone_append => crate::types::Op::ZoneAppend,
                _ => crate::types::Op::Write,
            },
            invalidate: spec.invalidate,
            end_fsync: spec.end_fsync,
            fsync_done: false,
            fsync_blocks: spec.fsync_blocks,
            writes_since_sync: 0,
            sync_due: false,
            sync_started: None,
            errors: spec.errors.clone(),
            // fio's default file name is jobname.clone.filenum (filesetup.c
            // set_name_idx); a filename= list names its first file.
            file_name: match &spec.filename {
                Some(f) => f.split(':').next().unwrap_or(f).to_string(),
                None => format!("{}.{}.0", spec.name, plan.clone),
            },
            td_error: 0,
            verror: String::new(),
        }
    }

    /// The thread starts at `now`: its statistics start after ramp_time.
    pub fn start(&mut self, now: Ns) {
        self.start = now;
        if self.log_epoch {
            // time.c set_epoch_time: the wall clock in ms as the job starts.
            self.res.log_epoch_ms = now / 1_000_000;
        }
        self.stats_start = now + self.ramp;
        self.last_bw_sample = self.stats_start;
        self.last_iops_sample = self.stats_start;
        if let Some(f) = self.flow.as_mut() {
            f.join();
        }
        if let Some(ss) = self.ss.as_mut() {
            ss.start(now);
        }
        if let Some(lt) = self.lat.as_mut() {
            lt.ts = now;
        }
    }

    /// Completed reads, writes and trims (td->io_blocks).
    fn ios_done(&self) -> u64 {
        self.res.dirs.iter().map(|d| d.total_ios).sum()
    }

    /// latency_target in fio's loop at `now`: the quiesce a depth change
    /// asked for (io_u_quiesce: nothing new until what is in flight is
    /// reaped), then lat_target_check once the window has passed.
    fn lat_target_step(&mut self, now: Ns) -> Option<Step> {
        let ios = self.ios_done();
        let busy = self.inflight > 0 || !self.done.is_empty();
        let lt = self.lat.as_mut()?;
        if let Some(reset) = lt.quiesce {
            if busy {
                return Some(self.stop());
            }
            lt.quiesce = None;
            if reset {
                // lat_target_success's final run: reset_all_stats, so the
                // report holds only the chosen depth's I/O.
                self.reset_stats(now);
            }
            let ios = self.ios_done();
            let lt = self.lat.as_mut()?;
            lt.new_cycle(now, ios);
            return None;
        }
        if now < self.stats_start || now - lt.ts < lt.window_us.saturating_mul(1000) {
            return None;
        }
        // lat_target_check: the share of this window's I/Os within the
        // target (0/0 is NaN in fio, which fails the comparison).
        let n = ios - lt.ios_at;
        let success = (n as f64 - lt.failed as f64) / n as f64 * 100.0;
        if success >= lt.pct {
            if lt.success(now, ios) {
                // The depth held through its final run: td->done.
                self.exhausted = true;
                return Some(self.stop());
            }
        } else {
            lt.failed_window(now, ios);
        }
        None
    }

    /// lat_target_failed for an I/O of total latency `lat` (ns).
    fn lat_target_failed(&mut self, now: Ns, lat: Ns, unit: IoUnit) {
        let ios = self.ios_done();
        let Some(lt) = self.lat.as_mut() else { return };
        if lt.pct != 100.0 {
            lt.failed += 1;
            return;
        }
        if lt.qd == 1 {
            // lat_fatal: "fio: latency of N nsec exceeds specified max";
            // the job ends with ETIMEDOUT.
            let target = lt.target;
            let ddir = if unit.ddir == Ddir::Read {
                "read"
            } else {
                "write"
            };
            self.res.error_lines.push(format!(
                "fio: latency of {lat} nsec exceeds specified max ({target} nsec): {} {ddir} {} {}",
                self.file_name,
                unit.offset - self.file_start,
                unit.len
            ));
            self.td_verror(110, "file:io_u.c:1432, func=max latency exceeded");
            self.exhausted = true;
            self.pending = None;
            return;
        }
        lt.failed_window(now, ios);
    }

    /// reset_all_stats at `now`: the job's figures start again (its
    /// runtime too, as fio's td->start).
    fn reset_stats(&mut self, now: Ns) {
        for d in self.res.dirs.iter_mut() {
            *d = Default::default();
        }
        self.res.iodepth_level = [0.0; 7];
        self.res.iodepth_submit = [0.0; 7];
        self.res.iodepth_complete = [0.0; 7];
        self.stats_start = now;
        self.last_bw_sample = now;
        self.last_iops_sample = now;
        self.sample_bytes = [0; 3];
        self.sample_ios = [0; 3];
    }

    /// The job reports with its group (group_reporting).
    pub fn group_reporting(&self) -> bool {
        self.res.group_reporting
    }

    /// steadystate_check's sample of this job at `now`: its IOPS and
    /// bytes/s since the previous tick (td->io_blocks, td->io_bytes:
    /// completed I/O), once its ss_ramp is over.
    pub fn ss_rates(&mut self, now: Ns) -> Option<(u64, u64)> {
        let ios = self.res.dirs.iter().map(|d| d.total_ios).sum();
        let bytes = self.res.dirs.iter().map(|d| d.io_bytes).sum();
        let start = self.start;
        self.ss.as_mut()?.rates(now, start, ios, bytes)
    }

    /// fio's loop from `now`: the next thing to do. Every I/O it hands out
    /// (`Step::Submit`) is stamped as issued now.
    pub fn next(&mut self, now: Ns) -> Step {
        if let Some(rt) = self.runtime {
            if now >= self.stats_start + rt {
                self.exhausted = true;
            }
        }
        if self.exhausted {
            return self.stop();
        }
        if self.lat.is_some() {
            if let Some(step) = self.lat_target_step(now) {
                return step;
            }
        }
        // thinktime after every thinktime_blocks I/Os: fio quiesces (waits
        // for all in-flight I/O), spins thinktime_spin, then sleeps the
        // rest (backend.c: handle_thinktime).
        if self.think_due {
            if self.inflight > 0 {
                return self.stop();
            }
            self.think_due = false;
            return Step::Think {
                spin: self.thinktime_spin,
                sleep: self.thinktime - self.thinktime_spin,
            };
        }
        // fio's queue_full: cur_depth counts I/Os until fio reaps them,
        // not until the device completes them.
        // io_u.c queue_full: with latency_target, the depth the search
        // is at.
        let depth = self.lat.as_ref().map_or(self.depth, |lt| lt.qd);
        if self.inflight + self.done.len() as u32 >= depth {
            return self.stop();
        }
        // backend.c do_io: flow_threshold_exceeded before each new I/O.
        // Held back, fio quiesces and sleeps flow_sleep; with
        // flow_sleep=0 it loops again at once, neither sleeping nor
        // reaping, until the group's other jobs have caught up.
        if self.pending.is_none() && self.flow.as_mut().is_some_and(|f| f.exceeded()) {
            if self.flow_sleep == 0 {
                return Step::SleepUntil(now + FLOW_RECHECK_NS);
            }
            if self.inflight > 0 || !self.done.is_empty() {
                return self.stop();
            }
            return Step::SleepUntil(now + self.flow_sleep);
        }
        let (unit, due) = match self.pending.take() {
            Some(held) => held,
            None => match self.next_io_rated(now) {
                Some(u) => {
                    self.paced_at = match self.source.pace() {
                        Pace::None => None,
                        Pace::AfterLastIssue(d) => Some(self.last_issue.max(self.start) + d),
                        Pace::SinceStart(d) => Some(self.start + d),
                    };
                    (u, self.rate_due(u))
                }
                None => {
                    self.exhausted = true;
                    if self.fio_log_end {
                        self.log_done_at.get_or_insert(now);
                    }
                    return self.stop();
                }
            },
        };
        // fsync=N: after every N writes the next io_u fio fills is a sync
        // (io_u.c fill_io_u), so none follows the job's last write; its
        // engines run it alone, after what is in flight (libaio's queue
        // returns busy until then).
        if self.sync_due {
            self.pending = Some((unit, due));
            if self.inflight > 0 {
                return self.stop();
            }
            self.sync_due = false;
            return Step::Sync;
        }
        // A log replay waits until the I/O's time inside get_io_u
        // (iolog.c: iolog_delay): fio 3.36 reaps meanwhile, what is done
        // first; fio 3.33 sleeps, leaving what is in flight unreaped.
        if let Some(at) = self.paced_at {
            if at > now {
                self.pending = Some((unit, due));
                if !self.reap_in_delay {
                    return Step::SleepUntil(at);
                }
                if !self.done.is_empty() {
                    return Step::Reap;
                }
                return Step::ReapUntil(at);
            }
            self.paced_at = None;
        }
        // engines/null.c null_queue: past iodepth 1 the null engine returns
        // FIO_Q_BUSY while the events of its last commit are unreaped, so
        // fio reaps them before it queues this I/O (taken from its source
        // already, as get_io_u took it): the null engine keeps one I/O in
        // flight at any depth (fio reports iodepth 1 at 100%).
        if self.engine == IoEngine::Null && self.depth > 1 && !self.done.is_empty() {
            self.pending = Some((unit, due));
            return Step::Reap;
        }
        // Rate limits (io_u.c: rate_ddir): ahead of schedule, fio first
        // quiesces (inline submit mode only: offloaded I/Os complete on
        // their workers meanwhile) and then sleeps until the I/O's time.
        if let Some(due) = due {
            let due_abs = self.start + due;
            if due_abs > now {
                self.pending = Some((unit, Some(due)));
                if self.inflight > 0 && !self.offload {
                    return self.stop();
                }
                // rate_ddir sleeps no longer than the runtime left and then
                // ends the job.
                let wake = match self.runtime {
                    Some(rt) => due_abs.min(self.stats_start + rt),
                    None => due_abs,
                };
                return Step::SleepUntil(wake);
            }
            self.rate_late_ns += u128::from(now - due_abs);
            self.rate_late_n += 1;
        }
        let unit = match self.zbd_adjust(unit, due, now) {
            Ok(u) => u,
            Err(step) => return step,
        };
        self.last_issue = now;
        if self.io_log {
            // fio's log_io_u: us since the log started, file offset.
            let at_us = now.saturating_sub(self.start) / 1_000;
            let in_file = IoUnit {
                offset: unit.offset - self.file_start,
                ..unit
            };
            self.res.io_log.push((at_us, in_file));
        }
        Step::Submit(unit)
    }

    /// zonemode=zbd: zbd_adjust_block on the I/O fio took (zbd.rs), or
    /// what the loop does instead (quiesce, wait for a zone, reset one,
    /// end).
    fn zbd_adjust(&mut self, unit: IoUnit, due: Option<Ns>, now: Ns) -> Result<IoUnit, Step> {
        let Some(z) = self.zbd.as_mut() else {
            return Ok(unit);
        };
        let busy = self.inflight > 0 || !self.done.is_empty();
        match z.adjust(unit, busy) {
            Adjust::Accept(u) => {
                if let Some(pos) = z.seq_pos(u) {
                    self.source.set_last_pos(u.ddir, pos);
                }
                Ok(u)
            }
            Adjust::Quiesce => {
                self.pending = Some((unit, due));
                Err(self.stop())
            }
            Adjust::Locked => {
                self.pending = Some((unit, due));
                if busy && !self.sync {
                    return Err(self.stop());
                }
                Err(Step::SleepUntil(now + ZONE_LOCK_RECHECK_NS))
            }
            Adjust::Reset { zone } => {
                self.pending = Some((unit, due));
                let (offset, len) = z.zone_extent(zone);
                self.zone_reset = Some((zone, None, now));
                Err(Step::ZoneReset {
                    offset,
                    len,
                    device: true,
                })
            }
            Adjust::TrimReset { zone, unit, device } => {
                self.zone_reset = Some((zone, Some(unit), now));
                let (offset, len) = z.zone_extent(zone);
                Err(Step::ZoneReset {
                    offset,
                    len,
                    device,
                })
            }
            Adjust::Eof(err) => {
                if let Some((err, what)) = err {
                    self.td_verror(err, &format!("file:zbd.c, func={what}"));
                    self.res.total_err += 1;
                    if self.res.total_err == 1 {
                        self.res.first_error = err;
                    }
                }
                self.exhausted = true;
                Err(self.stop())
            }
        }
    }

    /// Whether the thread is inside a zone reset's BLKRESETZONE ioctl:
    /// completions of its other I/Os then wait in the ring, they do not
    /// wake it (the ioctl returns only with the reset).
    pub fn in_zone_reset(&self) -> bool {
        self.zone_reset.is_some()
    }

    /// Back at `now` from a zone reset (`err`: its errno, 0 when it
    /// worked): the zone is empty in fio's books, and a trim that was the
    /// reset completes with it.
    pub fn zone_reset_returned(&mut self, now: Ns, err: i32) {
        let Some((zone, trim, start)) = self.zone_reset.take() else {
            return;
        };
        let Some(z) = self.zbd.as_mut() else {
            return;
        };
        if err != 0 {
            // zbd_reset_zone failed: zbd_adjust_block's eof, or the trim's
            // error.
            z.reset_failed(zone);
            match trim {
                Some(u) => self.io_failed(now, u, None, err),
                None => {
                    self.td_verror(err, "file:zbd.c, func=resetting wp failed");
                    self.exhausted = true;
                    self.pending = None;
                }
            }
            return;
        }
        z.reset_done(zone);
        if let Some(u) = trim {
            let prio = self.td_ioprio;
            self.record_stats(now, u, start, start, prio);
        }
    }

    /// fio_terminate_threads set td->terminate: the loop issues nothing
    /// more, reaps what is in flight and ends.
    pub fn terminate(&mut self) {
        self.exhausted = true;
        self.pending = None;
        if self.res.stopped_bytes.is_none() {
            self.res.stopped_bytes = Some(self.res.dirs.iter().map(|d| d.io_bytes).sum());
        }
    }

    /// The loop stops submitting (the queue is full, a quiesce, the end, or
    /// after a synchronous call): reap what is ready, wait for what is in
    /// flight, or end.
    pub fn stop(&mut self) -> Step {
        if !self.done.is_empty() {
            Step::Reap
        } else if self.inflight > 0 {
            Step::Wait
        } else {
            // flow_exit_job: the ending job's count and weight leave.
            if let Some(f) = self.flow.as_mut() {
                f.leave();
            }
            // (Setup refuses end_fsync on the null engine, which has no
            // file: every other job's fsync reaches the kernel.)
            let end_fsync = self.end_fsync && !self.fsync_done;
            self.fsync_done |= end_fsync;
            Step::Done { end_fsync }
        }
    }

    /// The source's next I/O, after telling it how far each direction is
    /// from its rate limit (a mixed fio job picks its direction with that).
    fn next_io_rated(&mut self, now: Ns) -> Option<IoUnit> {
        if self.rate_bps[0] > 0 || self.rate_bps[1] > 0 {
            let since_start = now.saturating_sub(self.start);
            let view = std::array::from_fn(|d| {
                (self.rate_bps[d] > 0).then(|| self.rate_next[d].saturating_sub(since_start))
            });
            self.source.rate_view(view);
        }
        self.source.next_io()
    }

    /// When the I/O may be issued under the job's rate limits, as ns since
    /// the job started (fio's rate_next_io_time), advancing the schedule.
    fn rate_due(&mut self, unit: IoUnit) -> Option<Ns> {
        let d = unit.ddir.index();
        let bps = self.rate_bps[d];
        if bps == 0 {
            return None;
        }
        let due = self.rate_next[d];
        // io_u.c usec_for_io: the bytes issued so far at rate_bps; poisson
        // draws one gap per I/O at the rate's IOPS (bps / min_bs).
        let spacing = if self.rate_poisson {
            let iops = (bps / self.res.bs_range[d].0.max(1)).max(1);
            1e9 / iops as f64
        } else {
            u64::from(unit.len) as f64 * 1e9 / bps as f64
        };
        let step = if self.rate_poisson {
            // rate_process=poisson: exponential gaps with the same mean
            // (io_u.c: -log(1 - random) * mean).
            self.rate_rng.exponential(spacing)
        } else {
            spacing
        };
        self.rate_next[d] = due + step.round() as Ns;
        Some(due)
    }

    /// An I/O went into the kernel and is in flight: fio's io_u_mark_depth
    /// and, one I/O per submit call (iodepth_batch_submit=1 default),
    /// io_u_mark_submit (bucket "4" covers 1 to 4).
    pub fn queued(&mut self) {
        self.inflight += 1;
        note_depth(&mut self.res, self.inflight + self.done.len() as u32);
        if !self.sqpoll {
            self.res.iodepth_submit[batch_bucket(1)] += 1.0;
        }
    }

    /// One more I/O towards thinktime_blocks: thinktime is due after the
    /// block's last.
    pub fn count_think(&mut self) {
        self.ios_since_think += 1;
        if self.thinktime > 0 && self.ios_since_think >= self.thinktime_blocks {
            self.ios_since_think = 0;
            self.think_due = true;
        }
    }

    /// fio's null engine completed request `key` in user space: ready to
    /// reap, never in flight (counting it in flight too left the job
    /// waiting for a completion that never came, after iodepth I/Os).
    pub fn completed_inline(&mut self, key: u32) {
        self.done.push_back(key);
        note_depth(&mut self.res, self.inflight + self.done.len() as u32);
        self.ios_since_think += 1;
    }

    /// An offloaded I/O was reaped by its submit worker, whose getevents
    /// returns it alone (its engine runs at iodepth 1): it is no longer
    /// in flight, and it counts in io_u_mark_complete's first bucket.
    /// (The null engine's worker completes in its queue call, with no
    /// getevents: no bucket, as the real fio 3.33 reports it.)
    pub fn offload_reaped(&mut self) {
        self.inflight -= 1;
        if self.log_done_at.is_none() && self.engine != IoEngine::Null {
            self.res.iodepth_complete[batch_bucket(1)] += 1.0;
        }
    }

    /// An I/O went to a submit worker: in flight until the worker reaps
    /// it. fio counts the depth and the submission in the worker's
    /// statistics, whose engine runs at iodepth 1 (the real fio 3.33
    /// reports depth 1 for every I/O, and no submission bucket for the
    /// null engine).
    pub fn offload_queued(&mut self) {
        self.inflight += 1;
        note_depth(&mut self.res, 1);
        if self.engine != IoEngine::Null {
            self.res.iodepth_submit[batch_bucket(1)] += 1.0;
        }
    }

    /// Request `key` completed: ready for the next getevents.
    pub fn io_completed(&mut self, key: u32) {
        self.inflight -= 1;
        self.done.push_back(key);
    }

    /// A sleeping getevents returns: enough completions are ready
    /// (iodepth_batch_complete_min, one for a synchronous call), or
    /// everything is in (a quiesce before thinktime or a rate-limit sleep).
    pub fn enough_to_wake(&self) -> bool {
        let need = if self.sync {
            1
        } else {
            self.complete_min
                .min(self.inflight + self.done.len() as u32)
        };
        self.done.len() as u32 >= need || self.inflight == 0
    }

    /// How many completions one getevents call reaps now, counted in fio's
    /// io_u_mark_complete buckets: at most complete_max; fio's null engine
    /// hands back everything it queued.
    pub fn reap_batch(&mut self) -> u64 {
        let n = if self.engine == IoEngine::Null {
            self.done.len()
        } else {
            self.done.len().min(self.complete_max as usize)
        } as u64;
        if n > 0 && self.log_done_at.is_none() {
            // I/Os reaped per call, buckets 0, 4, 8, 16, 32, 64, >=64 (each
            // covers up to its key).
            self.res.iodepth_complete[batch_bucket(n)] += 1.0;
        }
        n
    }

    /// The data placement directive an I/O of direction `ddir` carries to
    /// the device (fio 3.38's `fdp`, `plids`, `plid_select`).
    pub fn placement_for(&mut self, ddir: Ddir) -> crate::types::Hint {
        self.placer.next(ddir)
    }

    /// The priority an I/O of direction `ddir` and `len` bytes carries:
    /// the command priority for `cmdprio_percentage` of them, or by
    /// `cmdprio_bssplit` for its block size (fio_cmdprio_set_ioprio:
    /// `rand_between(0, 99) < percentage`), the thread's own (ioprio_set)
    /// otherwise.
    pub fn ioprio_for(&mut self, ddir: Ddir, len: u32) -> u16 {
        let d = ddir.index();
        if let Some((perc, prio)) = self.cmdprio.get(d).copied().flatten() {
            return if self.prio_rng.below(100) < u64::from(perc) {
                prio
            } else {
                self.td_ioprio
            };
        }
        // cmdprio_bssplit: the entries of the I/O's block size share one
        // draw, each taking its percent of it in order.
        let Some(entries) = self.cmdprio_bs.get(d) else {
            return self.td_ioprio;
        };
        let mut of_bs = entries.iter().filter(|e| e.0 == u64::from(len));
        let total: u32 = of_bs.clone().map(|e| e.1).sum();
        if total == 0 {
            return self.td_ioprio;
        }
        let rand = self.prio_rng.below(100) as u32;
        if rand >= total {
            return self.td_ioprio;
        }
        let mut acc = 0;
        of_bs
            .find(|e| {
                acc += e.1;
                rand < acc
            })
            .map_or(self.td_ioprio, |e| e.2)
    }

    /// fio reaps at `now` an I/O of `unit` it started at `start` and
    /// issued at `issue`: after ramp_time its slat, clat and lat, bytes,
    /// latency buckets and per-I/O log sample.
    pub fn record_io(&mut self, now: Ns, unit: IoUnit, start: Ns, issue: Ns, ioprio: u16) {
        if let Some(z) = self.zbd.as_mut() {
            z.put_io(unit, true);
        }
        self.record_stats(now, unit, start, issue, ioprio);
    }

    fn record_stats(&mut self, now: Ns, unit: IoUnit, start: Ns, issue: Ns, ioprio: u16) {
        // fio 3.33 with sqthread_poll never stamps the issue time
        // (`sqpoll`): the io_u's is still the zero init_io_u gave it, so
        // its clat runs from the clock's origin (the real fio prints the
        // host's uptime, ~1e13 ns on a machine up 16 h; flashpath's clock
        // starts at 0) and there is no slat.
        let issue = if self.sqpoll { 0 } else { issue };
        if now < self.stats_start {
            return;
        }
        if self.log_done_at.is_some() {
            // Issued after the log ran out of entries: counted, never
            // reaped (see `fio_log_end`).
            self.res.dirs[unit.ddir.index()].total_ios += 1;
            return;
        }
        // io_u.c account_io_completion: a read or write whose total
        // latency passes the target fails the window (at percentile 100,
        // the depth drops at once; at depth 1 the job ends: lat_fatal).
        if unit.ddir != Ddir::Trim && self.lat.as_ref().is_some_and(|lt| now - start > lt.target) {
            self.lat_target_failed(now, now - start, unit);
        }
        let lat_pct = self.res.stat.lat_percentiles;
        let d = &mut self.res.dirs[unit.ddir.index()];
        // add_clat_sample / add_lat_sample: the I/O's priority entry takes
        // its clat, or its lat with lat_percentiles.
        if let Some((_, h)) = d.prios.iter_mut().find(|(p, _)| *p == ioprio) {
            h.record(if lat_pct { now - start } else { now - issue });
        }
        d.io_bytes += u64::from(unit.len);
        d.total_ios += 1;
        // engines/null.c null_init: at iodepth 1 the null engine is
        // FIO_SYNCIO (no submission latency); deeper, its commit sets the
        // issue time (FIO_ASYNCIO_SETS_ISSUE_TIME) and fio records slat.
        // An offloaded I/O's statistics are its worker's, whose engine runs
        // at iodepth 1.
        let null_sync = self.engine == IoEngine::Null && (self.depth == 1 || self.offload);
        let has_slat = !(self.sync || null_sync || self.sqpoll);
        if has_slat {
            d.slat.record(issue - start);
        }
        d.clat.record(now - issue);
        d.lat.record(now - start);
        if self.lat_log {
            self.res.lat_log.push(LatSample {
                time_ms: (now - self.start) / 1_000_000,
                lat_ns: now - start,
                clat_ns: now - issue,
                slat_ns: has_slat.then_some(issue - start),
                ddir: unit.ddir as u8,
                bs: unit.len,
                offset: unit.offset - self.file_start,
                ioprio,
            });
        }
        // fio's io_u_mark_latency buckets, fed from the clat.
        self.res
            .io_u_lat
            .get_or_insert_with(Default::default)
            .record(now - issue);
    }

    /// fio reaps at `now` an I/O of `unit` that failed with errno `err`
    /// (`slat`: its submission latency, for an engine that records one):
    /// issued and counted (total_ios, slat) but no bytes, clat, lat or
    /// latency bucket (io_u.c io_completed accounts only an I/O without
    /// error); then fio's error handling.
    pub fn io_failed(&mut self, now: Ns, unit: IoUnit, slat: Option<Ns>, err: i32) {
        if let Some(z) = self.zbd.as_mut() {
            z.put_io(unit, false);
        }
        if self.log_done_at.is_some() {
            // Never reaped, so fio never sees its error (`fio_log_end`).
            if now >= self.stats_start {
                self.res.dirs[unit.ddir.index()].total_ios += 1;
            }
            return;
        }
        if now >= self.stats_start {
            let d = &mut self.res.dirs[unit.ddir.index()];
            d.total_ios += 1;
            if let Some(s) =
                slat.filter(|_| !self.sync && !self.sqpoll && self.engine != IoEngine::Null)
            {
                d.slat.record(s);
            }
        }
        self.on_error(unit, err);
    }

    /// The system call of `unit` returned `err` at `now` before any
    /// request was queued (fio's trim: do_io_u_trim's ioctl, FIO_Q_COMPLETED
    /// in td_io_queue): counted at depth 1 as one submit and one complete
    /// (libaio's io_u_mark_submit/io_u_mark_complete for a trim), then
    /// fio's error handling.
    pub fn submit_failed(&mut self, now: Ns, unit: IoUnit, err: i32) {
        note_depth(&mut self.res, self.inflight + self.done.len() as u32 + 1);
        self.res.iodepth_submit[batch_bucket(1)] += 1.0;
        self.res.iodepth_complete[batch_bucket(1)] += 1.0;
        self.io_failed(now, unit, None, err);
    }

    /// fio's handling of an I/O that failed with `err` (io_u.c
    /// io_completed and __io_u_log_error, engines/sync.c fio_io_end,
    /// ioengines.c td_io_queue, backend.c break_on_this_error): a
    /// non-fatal error (continue_on_error covers its type and it is in the
    /// type's ignore list, EIO and EILSEQ by default) is counted and the job
    /// goes on; a fatal one stops it: nothing more is issued, what is in
    /// flight is reaped (cleanup_pending_aio). `td_verror` records the
    /// error text where fio's code would, first caller wins until a
    /// non-fatal error clears td->error (td_clear_error leaves the text).
    fn on_error(&mut self, unit: IoUnit, err: i32) {
        let non_fatal = self.errors.non_fatal(unit.ddir, err);
        // fio's trim is a synchronous ioctl in every engine: no io_u error
        // line, td_io_queue records it.
        let trim = unit.ddir == Ddir::Trim;
        if !trim && (!non_fatal || self.errors.error_dump) {
            self.res.error_lines.push(super::errors::io_u_error_line(
                &self.file_name,
                unit.ddir,
                err,
                unit.offset - self.file_start,
                unit.len,
            ));
            self.td_verror(err, super::errors::AT_IO_U_ERROR);
        }
        if trim {
            self.td_verror(err, super::errors::AT_TD_IO_QUEUE);
        } else if self.sync {
            self.td_verror(err, super::errors::AT_SYNC_XFER);
        }
        if non_fatal {
            self.count_error(err);
            self.td_error = 0;
            return;
        }
        // break_on_this_error, on the synchronous path (a sync engine's
        // I/O, any trim), counts a fatal error continue_on_error covers.
        if (self.sync || trim) && self.errors.covers(unit.ddir, err) {
            self.count_error(err);
        }
        self.exhausted = true;
        self.pending = None;
    }

    /// td_verror: the job's error and its text, unless one is set.
    fn td_verror(&mut self, err: i32, at: &str) {
        if self.td_error == 0 {
            self.td_error = err;
            self.verror = format!("{at}, error={}", super::errors::strerror(err));
        }
    }

    /// update_error_count.
    fn count_error(&mut self, err: i32) {
        self.res.total_err += 1;
        if self.res.total_err == 1 {
            self.res.first_error = err;
        }
    }

    /// fio's add_bw_samples/add_iops_samples: a sample every 500 ms of the
    /// bytes and I/Os since the previous one, over the time actually
    /// elapsed.
    pub fn sample_bw(&mut self, now: Ns) {
        // stat.c add_bw_samples / add_iops_samples: each on its own window
        // (bw_avg_time, iops_avg_time), a sample per direction that moved.
        if now >= self.last_bw_sample + self.bw_interval {
            let spent_ms = (now - self.last_bw_sample) / NS_PER_MS;
            for d in Ddir::ALL {
                let i = d.index();
                let dr = &mut self.res.dirs[i];
                if dr.total_ios == 0 && self.sample_bytes[i] == 0 {
                    continue;
                }
                dr.bw_samples
                    .push((dr.io_bytes - self.sample_bytes[i]) * 1000 / spent_ms / 1024);
                self.sample_bytes[i] = dr.io_bytes;
            }
            self.last_bw_sample = now;
        }
        if now >= self.last_iops_sample + self.iops_interval {
            let spent_ms = (now - self.last_iops_sample) / NS_PER_MS;
            for d in Ddir::ALL {
                let i = d.index();
                let dr = &mut self.res.dirs[i];
                if dr.total_ios == 0 && self.sample_ios[i] == 0 {
                    continue;
                }
                dr.iops_samples
                    .push((dr.total_ios - self.sample_ios[i]) * 1000 / spent_ms);
                self.sample_ios[i] = dr.total_ios;
            }
            self.last_iops_sample = now;
        }
    }

    /// A buffered write returned, or a direct one was issued: fsync=N
    /// counts it, and after the N-th the next io_u is a sync.
    pub fn write_done(&mut self) {
        if self.fsync_blocks > 0 {
            self.writes_since_sync += 1;
            if self.writes_since_sync == self.fsync_blocks {
                self.writes_since_sync = 0;
                self.sync_due = true;
            }
        }
    }

    /// The fsync=N sync enters the kernel at `now`.
    pub fn sync_started(&mut self, now: Ns) {
        self.sync_started = Some(now);
    }

    /// Back at `now` from the sync in progress, if any: its latency into
    /// fio's sync_stat (after ramp_time).
    pub fn sync_returned(&mut self, now: Ns) {
        if let Some(start) = self.sync_started.take() {
            if start >= self.stats_start {
                self.res.sync_lat.record(now - start);
            }
        }
    }

    /// The job's result, with the CPU time and context switches its task
    /// used (fio's getrusage), and the mean lateness of its rate-limited
    /// I/Os (for flashpath's own section).
    pub fn into_result(self, usr_ns: Ns, sys_ns: Ns, ctx: u64) -> (JobResult, u64) {
        let mut res = self.res;
        res.zone_resets = self.zbd.as_ref().map_or(0, |z| z.resets);
        if let Some(lt) = &self.lat {
            res.latency_target = Some(crate::report::LatencyTarget {
                target: lt.target,
                window: lt.window_us,
                percentile: lt.pct,
                depth: lt.qd,
            });
        }
        res.steadystate = self
            .ss
            .as_ref()
            .filter(|s| s.holds_data)
            .map(SteadyState::report);
        // __show_run_stats: a job that ended on an error reports it with
        // its text; one that went on past its errors reports the first of
        // them with the text td_verror last recorded (empty if none did).
        res.continue_on_error = self.errors.continue_on_error != 0;
        res.failed = self.td_error != 0;
        if res.failed {
            res.error = self.td_error;
            res.error_msg = self.verror;
        } else if res.continue_on_error && res.first_error != 0 {
            res.error = res.first_error;
            res.error_msg = self.verror;
        }
        // A log replay's runtime ends when its log ran out (backend.c:
        // do_io returns without reaping, see `fio_log_end`), or after the
        // end_fsync that follows.
        let end = match self.log_done_at {
            Some(at) if !self.end_fsync => at.max(self.stats_start),
            _ => self.end,
        };
        let runtime = end.saturating_sub(self.stats_start);
        for d in Ddir::ALL {
            let dr = &mut res.dirs[d.index()];
            // backend.c thread_main: update_runtime for a direction only
            // when it moved bytes (td->io_bytes), so one whose I/Os all
            // failed or were never reaped reports runtime 0 (and 0 IOPS).
            if dr.io_bytes > 0 {
                dr.runtime = runtime;
            }
        }
        res.job_runtime = runtime;
        if runtime > 0 {
            res.usr_cpu = usr_ns as f64 * 100.0 / runtime as f64;
            res.sys_cpu = sys_ns as f64 * 100.0 / runtime as f64;
        }
        res.ctx = ctx;
        for dist in [
            &mut res.iodepth_level,
            &mut res.iodepth_submit,
            &mut res.iodepth_complete,
        ] {
            let total: f64 = dist.iter().sum();
            if total > 0.0 {
                dist.iter_mut().for_each(|x| *x /= total);
            }
        }
        let lateness = if self.rate_late_n > 0 {
            (self.rate_late_ns / u128::from(self.rate_late_n)) as u64
        } else {
            0
        };
        (res, lateness)
    }
}

/// fio's latency_target search (io_u.c lat_target_init, lat_new_cycle,
/// lat_target_success, __lat_target_failed): start at depth 1, double
/// while each window meets the target, bisect between the last good and
/// the first bad depth after a miss; a depth that stays put gets a final
/// run with fresh statistics, and the job ends after it.
#[derive(Debug)]
struct LatTarget {
    /// ns.
    target: Ns,
    window_us: u64,
    pct: f64,
    iodepth: u32,
    qd: u32,
    qd_high: u32,
    qd_low: u32,
    /// The window's start, and the I/Os done then and missed since.
    ts: Ns,
    ios_at: u64,
    failed: u64,
    end_run: bool,
    /// io_u_quiesce asked for: Some(whether the stats reset after it).
    quiesce: Option<bool>,
}

impl LatTarget {
    fn new_cycle(&mut self, now: Ns, ios: u64) {
        self.ts = now;
        self.ios_at = ios;
        self.failed = 0;
    }

    /// lat_target_success: whether the job is done.
    fn success(&mut self, now: Ns, ios: u64) -> bool {
        let qd = self.qd;
        self.qd_low = self.qd;
        if self.qd_high != self.iodepth {
            self.qd = (self.qd + self.qd_high) / 2;
        } else {
            self.qd = self.qd.saturating_mul(2);
        }
        self.qd = self.qd.min(self.iodepth);
        if self.qd == qd {
            if self.end_run {
                return true;
            }
            self.end_run = true;
            self.quiesce = Some(true);
            return false;
        }
        self.new_cycle(now, ios);
        false
    }

    /// __lat_target_failed above depth 1: bisect down, quiesce, new window.
    fn failed_window(&mut self, now: Ns, ios: u64) {
        // At depth 1 fio changes nothing (lat_target_check ignores the
        // "give up" answer; only a single I/O's miss is fatal).
        if self.qd == 1 {
            return;
        }
        self.qd_high = self.qd;
        if self.qd == self.qd_low {
            self.qd_low = self.qd_low.saturating_sub(1);
        }
        self.qd = ((self.qd + self.qd_low) / 2).max(1);
        self.quiesce = Some(false);
        self.new_cycle(now, ios);
    }
}

fn bs_range(bs: &BlockSize) -> (u64, u64) {
    match bs {
        BlockSize::Fixed(b) => (*b, *b),
        BlockSize::Range { min, max } => (*min, *max),
        BlockSize::Split(parts) => (
            parts.iter().map(|p| p.0).min().unwrap_or(0),
            parts.iter().map(|p| p.0).max().unwrap_or(0),
        ),
    }
}

/// fio's io_u_mark_depth: the depth at each submission, in buckets 1, 2,
/// 4, 8, 16, 32, >=64.
fn note_depth(res: &mut JobResult, depth: u32) {
    let bucket = match depth {
        0 | 1 => 0,
        2..=3 => 1,
        4..=7 => 2,
        8..=15 => 3,
        16..=31 => 4,
        32..=63 => 5,
        _ => 6,
    };
    res.iodepth_level[bucket] += 1.0;
}

/// fio's submit/complete batch buckets: 0, 1-4, 5-8, 9-16, 17-32, 33-64,
/// more.
fn batch_bucket(n: u64) -> usize {
    match n {
        0 => 0,
        1..=4 => 1,
        5..=8 => 2,
        9..=16 => 3,
        17..=32 => 4,
        33..=64 => 5,
        _ => 6,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// startdelay=1-3 (seconds): every draw lies in the range, in whole
    /// microseconds; with randrepeat (fio's default) the run's seed does
    /// not move it, randseed does, and clones draw their own; randrepeat=0
    /// takes the run's seed.
    #[test]
    fn a_startdelay_range_draws_in_it_from_the_job_seed() {
        let s = 1_000_000_000;
        let spec = JobSpec {
            startdelay: s,
            startdelay_high: Some(3 * s),
            ..JobSpec::default()
        };
        let draws: Vec<Ns> = (0..64).map(|c| startdelay(&spec, 0, c, 7)).collect();
        assert!(draws
            .iter()
            .all(|d| (s..=3 * s).contains(d) && d % 1_000 == 0));
        // 64 draws over 2 s of microseconds: not all alike, and spread.
        assert!(draws.iter().any(|d| *d < 2 * s) && draws.iter().any(|d| *d > 2 * s));
        assert_eq!(startdelay(&spec, 0, 0, 7), startdelay(&spec, 0, 0, 8));
        let seeded = JobSpec {
            randseed: Some(5),
            ..spec.clone()
        };
        assert_ne!(
            (0..8)
                .map(|c| startdelay(&seeded, 0, c, 7))
                .collect::<Vec<_>>(),
            draws[..8].to_vec()
        );
        let fresh = JobSpec {
            randrepeat: false,
            ..spec.clone()
        };
        assert_ne!(
            (0..8)
                .map(|c| startdelay(&fresh, 0, c, 1))
                .collect::<Vec<_>>(),
            (0..8)
                .map(|c| startdelay(&fresh, 0, c, 2))
                .collect::<Vec<_>>()
        );
        // No range: the delay as given.
        let fixed = JobSpec {
            startdelay: s,
            ..JobSpec::default()
        };
        assert_eq!(startdelay(&fixed, 0, 0, 7), s);
    }
}
