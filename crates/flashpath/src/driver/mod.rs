//! Host controller drivers and the devices behind them, as the block layer
//! sees them: a driver takes a request (`queue_rq`), drives its link and
//! device with events of its own, and reports when the device has posted
//! the completion. The host then takes the interrupt (or a poller finds it).

pub mod brd;
pub mod generic;
pub mod mmc;
pub mod null_blk;
pub mod nvme;
pub mod probe;
pub mod sdhci;
pub mod ufs;
pub mod ufs_qcom_qos;
pub mod ufshpb;
pub mod virtio;

use crate::device::{Command, Hint, Op};
use crate::host::pm_qos::CpuLatencyQos;
use crate::host::task::Host;
use crate::sim::queue::{EventQueue, Timer};
use crate::sim::Ns;
use crate::types::Ddir;

/// A request as the driver sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DriverRq {
    /// Slab key of the request; the driver hands it back on completion.
    pub tag: u32,
    /// The request's operation (req_op(rq): REQ_OP_READ, _WRITE, _FLUSH,
    /// _DISCARD, _WRITE_ZEROES, include/linux/blk_types.h), which the
    /// driver turns into its command (nvme_setup_cmd in
    /// drivers/nvme/host/core.c switches on it).
    pub op: Op,
    /// REQ_FUA on a write: the device completes it once the data is on
    /// stable media (nvme_setup_rw sets NVME_RW_FUA).
    pub fua: bool,
    /// The data direction (rq_data_dir), for the drivers' transfer and
    /// accounting: a flush has none and travels as a write, as in Linux
    /// (op_is_write(REQ_OP_FLUSH)).
    pub ddir: Ddir,
    /// Byte offset on the device and length.
    pub offset: u64,
    pub len: u32,
    /// Submitted for polled completion (REQ_POLLED / hipri on a poll queue).
    pub polled: bool,
    /// CPU that submitted it (for per-CPU queues and interrupt routing).
    pub cpu: u32,
    /// Its I/O priority (`req_get_ioprio`, include/uapi/linux/ioprio.h),
    /// for drivers that put it in the command: nvme's WRR queue classes
    /// (not mainline), ufshcd's Command Priority bit.
    pub ioprio: u16,
    /// Its data placement directive (a passthrough command's DTYPE and
    /// DSPEC), passed to the device as given.
    pub hint: Hint,
}

impl DriverRq {
    /// The device command of this request: its operation, range and FUA.
    pub fn command(&self) -> Command {
        Command {
            fua: self.fua,
            hint: self.hint,
            ..Command::of(self.op, self.offset, self.len)
        }
    }
}

/// An event of the driver in use: each driver with events of its own
/// defines them in its file, and only it schedules them (one driver per
/// machine), so it only ever receives its own variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DriverEvent {
    NullBlk(null_blk::Event),
    Ufs(ufs::Event),
    Mmc(mmc::Event),
    Nvme(nvme::Event),
    Generic(generic::Event),
}

impl From<generic::Event> for DriverEvent {
    fn from(e: generic::Event) -> DriverEvent {
        DriverEvent::Generic(e)
    }
}

impl From<null_blk::Event> for DriverEvent {
    fn from(e: null_blk::Event) -> DriverEvent {
        DriverEvent::NullBlk(e)
    }
}
impl From<ufs::Event> for DriverEvent {
    fn from(e: ufs::Event) -> DriverEvent {
        DriverEvent::Ufs(e)
    }
}
impl From<nvme::Event> for DriverEvent {
    fn from(e: nvme::Event) -> DriverEvent {
        DriverEvent::Nvme(e)
    }
}
impl From<mmc::Event> for DriverEvent {
    fn from(e: mmc::Event) -> DriverEvent {
        DriverEvent::Mmc(e)
    }
}

/// How a request ended, as a driver hands it to blk-mq
/// (`blk_mq_end_request(rq, blk_status_t)`, include/linux/blk_types.h);
/// the block layer turns it into the errno the submitter sees
/// (`block::complete::blk_status_to_errno`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BlkStatus {
    #[default]
    Ok,
    /// BLK_STS_NOTSUPP: the operation is not supported.
    NotSupp,
    /// BLK_STS_IOERR: the catch-all I/O error.
    IoErr,
    /// BLK_STS_ZONE_OPEN_RESOURCE: a zoned device has no open zone left.
    ZoneOpenResource,
    /// BLK_STS_ZONE_ACTIVE_RESOURCE: a zoned device has no active zone left.
    ZoneActiveResource,
    /// BLK_STS_TARGET: the target refused the command for good (SCSI's
    /// ILLEGAL REQUEST with INVALID COMMAND OPERATION CODE or INVALID
    /// FIELD IN CDB, scsi_io_completion_action).
    Target,
}

impl BlkStatus {
    /// The block layer's status of a device's answer, as drivers map it:
    /// nvme_error_status (drivers/nvme/host/core.c) turns Invalid Opcode
    /// into BLK_STS_NOTSUPP and the rest into BLK_STS_IOERR; SCSI's
    /// ILLEGAL REQUEST with an invalid opcode becomes BLK_STS_NOTSUPP
    /// (scsi_io_completion_action); null_blk's bad blocks are
    /// BLK_STS_IOERR (null_handle_badblocks). nvme_error_status makes
    /// Invalid Field BLK_STS_NOTSUPP, the two ZNS resource statuses
    /// BLK_STS_ZONE_ACTIVE_RESOURCE and BLK_STS_ZONE_OPEN_RESOURCE, and
    /// every other ZNS status BLK_STS_IOERR (its default).
    pub fn from_device(s: crate::device::Status) -> BlkStatus {
        use crate::device::{Status, ZoneStatus};
        match s {
            Status::Ok => BlkStatus::Ok,
            Status::Unsupported | Status::InvalidField => BlkStatus::NotSupp,
            Status::IoError => BlkStatus::IoErr,
            Status::Zone(ZoneStatus::TooManyActive) => BlkStatus::ZoneActiveResource,
            Status::Zone(ZoneStatus::TooManyOpen) => BlkStatus::ZoneOpenResource,
            Status::Zone(_) => BlkStatus::IoErr,
        }
    }
}

/// A zoned disk's queue limits, named as /sys/block/<disk>/queue/ shows
/// them (Documentation/ABI/stable/sysfs-block): `zoned` is
/// "host-managed" when a driver gives these.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ZonedLimits {
    pub nr_zones: u32,
    /// The zone size in 512-byte sectors.
    pub chunk_sectors: u64,
    /// 0: no limit.
    pub max_open_zones: u32,
    pub max_active_zones: u32,
    pub zone_append_max_bytes: u64,
    /// Conventional zones at the start (a ZBC device's; the zone report's
    /// zone type 1h): their writes are never plugged.
    pub conventional_zones: u32,
}

/// Events of the whole machine: the driver's are wrapped, completions are
/// handed to the host.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeviceSignal {
    Driver(DriverEvent),
    /// The device posted the completion of request `tag` now, with how it
    /// ended; deliver it to the host (interrupt on `irq_cpu`, or to the
    /// poller).
    Completed {
        tag: u32,
        status: BlkStatus,
    },
}

/// What a driver may do to the outside world while handling a call:
/// schedule its own events, post completions, and run its code on a host
/// CPU.
pub struct DriverCtx<'a, E> {
    pub queue: &'a mut EventQueue<E>,
    pub wrap: fn(DeviceSignal) -> E,
    /// The host's cores, for driver code that runs on a CPU (a bio-based
    /// driver's work in the submitter's context, as brd's copy); `None`
    /// where a test drives a driver alone.
    host: Option<&'a mut Host>,
    /// The core the driver ran code on during this call, which the caller
    /// lets go idle again once the call returns.
    ran_on: Option<u32>,
    /// A host thread preempted a vCPU in this call: (vCPU, from, for).
    stolen: Option<(u32, Ns, Ns)>,
}

impl<'a, E> DriverCtx<'a, E> {
    /// The context of one driver call on the machine's queue and host.
    pub fn new(
        queue: &'a mut EventQueue<E>,
        wrap: fn(DeviceSignal) -> E,
        host: Option<&'a mut Host>,
    ) -> DriverCtx<'a, E> {
        DriverCtx {
            queue,
            wrap,
            host,
            ran_on: None,
            stolen: None,
        }
    }
    /// Run `reference_ns` of the driver's kernel code (ns at the host's
    /// reference clock) on `cpu` from `at`: booked as the core's system
    /// time, scaled by its clock, after what the core already has to do;
    /// a core asleep in an idle state leaves it first (paying its exit
    /// latency), so the idle governor sees the work. Returns when the work
    /// is done. Without a host (a driver tested alone) the work takes
    /// `reference_ns`.
    pub fn run_on_cpu(&mut self, cpu: u32, at: Ns, reference_ns: Ns) -> Ns {
        let Some(host) = self.host.as_deref_mut() else {
            return at + reference_ns;
        };
        debug_assert!(self.ran_on.is_none_or(|c| c == cpu), "one CPU per call");
        self.ran_on = Some(cpu);
        let exit = host.wake_cpu(cpu, at);
        host.run_on(cpu, at + exit, 0, reference_ns)
    }
    /// The machine's cores (0 where a test drives a driver alone).
    pub fn ncpus(&self) -> u32 {
        self.host.as_deref().map_or(0, |h| h.ncpus())
    }
    /// When core `cpu` has done the work booked on it so far (`at` itself
    /// without a host).
    pub fn core_free_at(&self, cpu: u32, at: Ns) -> Ns {
        self.host
            .as_deref()
            .map_or(at, |h| h.busy_until(cpu).max(at))
    }
    /// Whether core `cpu` has nothing to run at `at`: no booked work left
    /// and no runnable thread (a vCPU that would halt).
    pub fn core_idle(&self, cpu: u32, at: Ns) -> bool {
        self.host.as_deref().is_none_or(|h| {
            let c = h.cpu(cpu);
            c.runnable == 0 && c.busy_until <= at
        })
    }
    /// A thread of the hypervisor holds the physical CPU under vCPU `cpu`
    /// until `until` (it started when the vCPU's booked work was done):
    /// work asked of the vCPU meanwhile waits for it, as a guest sees steal
    /// time. Not guest CPU time: no usr/sys/irq accounting.
    pub fn occupy_core(&mut self, cpu: u32, until: Ns) {
        if let Some(host) = self.host.as_deref_mut() {
            host.occupy_core(cpu, until);
        }
    }
    /// A thread of the hypervisor preempts vCPU `cpu` from `from` until
    /// `until` (the host scheduler's wake-up preemption): the vCPU's booked
    /// work moves back by that time, work asked of an idle vCPU waits for
    /// it, and the caller hears of it ([`Self::stolen`]) to stretch what
    /// the vCPU held meanwhile (a preempted lock holder). Steal time, not
    /// guest CPU time.
    pub fn steal_core(&mut self, cpu: u32, from: Ns, until: Ns) {
        let len = until.saturating_sub(from);
        if let Some(host) = self.host.as_deref_mut() {
            host.steal_core(cpu, from, len);
        }
        self.stolen = Some((cpu, from, len));
    }
    /// The vCPU a host thread preempted in this call, when and for how long.
    pub fn stolen(&self) -> Option<(u32, Ns, Ns)> {
        self.stolen
    }
    /// The core [`Self::run_on_cpu`] used in this call, if any.
    pub fn ran_on(&self) -> Option<u32> {
        self.ran_on
    }
    pub fn now(&self) -> Ns {
        self.queue.now()
    }
    pub fn schedule(&mut self, at: Ns, event: impl Into<DriverEvent>) {
        self.queue
            .schedule(at, (self.wrap)(DeviceSignal::Driver(event.into())));
    }
    /// Arm the driver's `timer` to fire `event` at `at`, replacing its
    /// pending expiry (which then never fires).
    pub fn arm(&mut self, timer: &mut Timer, at: Ns, event: impl Into<DriverEvent>) {
        let ev = (self.wrap)(DeviceSignal::Driver(event.into()));
        self.queue.arm(timer, at, ev);
    }
    /// Drop `timer`'s pending expiry, if any.
    pub fn cancel(&mut self, timer: &Timer) {
        self.queue.cancel(timer);
    }
    /// When `timer` fires, if it is armed.
    pub fn expires(&self, timer: &Timer) -> Option<Ns> {
        self.queue.expires(timer)
    }
    /// The device posts request `tag`'s completion at `at`, ended with
    /// `status`.
    pub fn complete(&mut self, at: Ns, tag: u32, status: BlkStatus) {
        self.queue
            .schedule(at, (self.wrap)(DeviceSignal::Completed { tag, status }));
    }
}

/// Host-CPU costs of a driver's own code, ns at the host's reference
/// frequency.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct DriverCpuCosts {
    /// queue_rq: build the command, ring the doorbell.
    pub submit: Ns,
    /// The interrupt handler's work (reading the completion entry).
    pub irq_handler: Ns,
    /// One call of the driver's poll function (mq_ops->poll).
    pub poll_iteration: Ns,
}

crate::params! {
    /// The CPU costs of a blk-mq driver (every driver but brd, a bio
    /// driver), ns at the host's reference frequency.
    pub struct DriverCostParams {
        /// queue_rq: build the command, ring the doorbell.
        pub queue_rq: Ns = required ns("driver.queue_rq", crate::profile::limits::COST),
        /// The interrupt handler's work (reading the completion entry).
        pub irq_handler: Ns = required ns("driver.irq_handler", crate::profile::limits::COST),
    }
}

crate::params! {
    /// The poll cost of a driver that polls (nvme, null_blk).
    pub struct PollCostParams {
        /// One call of the driver's poll function (mq_ops->poll).
        pub poll: Ns = required ns("driver.poll", crate::profile::limits::COST),
    }
}

impl DriverCpuCosts {
    /// A blk-mq driver's costs from the profile; `poll`: it polls.
    pub fn from_profile(p: &crate::profile::Profile, poll: bool) -> crate::Result<DriverCpuCosts> {
        let c = DriverCostParams::read(p)?;
        Ok(DriverCpuCosts {
            submit: c.queue_rq,
            irq_handler: c.irq_handler,
            poll_iteration: if poll {
                PollCostParams::read(p)?.poll
            } else {
                0
            },
        })
    }
}

/// How the device signals completions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompletionSignal {
    /// An interrupt to the host.
    Interrupt,
    /// Completed inside the submission call (null_blk irqmode=0): no
    /// interrupt, no sleep.
    Inline,
    /// Completed from a softirq on the submitting CPU right after submit
    /// (null_blk irqmode=1).
    Softirq,
}

/// A disk as blk-mq and the gendisk see it after the driver's probe: its
/// name, size, tag set (depth and hardware queues), poll support, the
/// driver's CPU costs and how completions are signalled.
#[derive(Clone, Debug)]
pub struct DiskInfo {
    /// The name /sys/block shows (`nullb0`, `nvme0n1`).
    pub name: String,
    /// Capacity in bytes.
    pub capacity: u64,
    /// Tags per hardware queue.
    pub queue_depth: u32,
    pub hw_queues: u32,
    /// Whether the driver can poll for completions of this disk.
    pub can_poll: bool,
    pub cpu_costs: DriverCpuCosts,
    pub completion_signal: CompletionSignal,
}

impl DiskInfo {
    /// One hardware queue, completion by interrupt, no polling: a SCSI,
    /// MMC or single-virtqueue host.
    pub fn single_queue(
        name: &str,
        capacity: u64,
        queue_depth: u32,
        cpu_costs: DriverCpuCosts,
    ) -> DiskInfo {
        DiskInfo {
            name: name.to_string(),
            capacity,
            queue_depth,
            hw_queues: 1,
            can_poll: false,
            cpu_costs,
            completion_signal: CompletionSignal::Interrupt,
        }
    }
}

/// Today the only CPU latency request is a driver's own (ufs-qcom's vote):
/// the host's cpuidle governor reads it through `CpuLatencyQos`, which the
/// host declares so that it needs no driver to name.
impl<E> CpuLatencyQos for dyn Driver<E> + '_ {
    fn cpu_latency_limit(&self, cpu: u32, now: Ns) -> Option<Ns> {
        Driver::cpu_latency_limit(self, cpu, now)
    }
}

pub trait Driver<E> {
    /// What the block layer learns from the driver when the disk is
    /// probed: the tag set and the gendisk.
    fn info(&self) -> DiskInfo;
    /// Accept a request; the driver must eventually call `ctx.complete`.
    fn queue_rq(&mut self, rq: DriverRq, ctx: &mut DriverCtx<'_, E>);
    /// One of this driver's own events fired (drivers without events of
    /// their own never get one).
    fn on_event(&mut self, _event: DriverEvent, _ctx: &mut DriverCtx<'_, E>) {}
    /// Model counters for flashpath's own report section.
    fn counters(&self) -> serde_json::Value;
    /// A bio-based driver (brd's `submit_bio`): no request queue, so no
    /// elevator by default, no plug and no request merging.
    fn bio_based(&self) -> bool {
        false
    }
    /// A polled request's completion also raises the interrupt (Linux
    /// v4.4's classic poll on an interrupt-driven queue; no poll queues).
    fn polled_irq(&self) -> bool {
        false
    }
    /// Time from the completion being posted to the interrupt reaching
    /// the CPU (MSI-X write over the link); a poller sees it at once.
    fn irq_delay(&self) -> Ns {
        0
    }
    /// The MIN_FREQUENCY PM QoS request on the disk's request-queue device
    /// changed (kHz; `None` = removed): block-layer dev_freq_timeout_ms.
    fn set_disk_min_freq_qos(&mut self, _khz: Option<u64>) {}
    /// The machine starts: schedule the driver's own periodic work.
    fn start(&mut self, _ctx: &mut DriverCtx<'_, E>) {}
    /// A CPU PM QoS resume-latency request the driver holds on `cpu` at
    /// `now` (`None` = none): the cpuidle governor's latency limit there.
    fn cpu_latency_limit(&self, _cpu: u32, _now: Ns) -> Option<Ns> {
        None
    }
    /// The queue limit `max_discard_sectors` the driver sets at probe
    /// (`bdev_max_discard_sectors`); 0 means the disk cannot discard and
    /// the kernel fails a discard before it reaches the driver
    /// (blk_ioctl_discard / submit_bio_noacct: EOPNOTSUPP). Every device
    /// here takes discards unless its driver says otherwise.
    fn max_discard_sectors(&self) -> u64 {
        u64::from(u32::MAX) >> 9
    }
    /// A zoned disk's queue limits (`None`: a conventional disk), as the
    /// driver sets them at probe (nvme_update_zone_info for a ZNS
    /// namespace, drivers/nvme/host/zns.c).
    fn zoned(&self) -> Option<ZonedLimits> {
        None
    }
    /// The zoned disk's zone report as BLKREPORTZONE gives it (every zone,
    /// in order; `blkdev_report_zones`); empty for a conventional disk.
    fn report_zones(&self) -> Vec<crate::types::BlkZone> {
        Vec::new()
    }
    /// The disk answers SG_IO: a SCSI disk (sd_ioctl -> scsi_ioctl ->
    /// sg_io, drivers/scsi/scsi_ioctl.c). Other block drivers return
    /// ENOTTY for it.
    fn sg_io(&self) -> bool {
        false
    }
    /// The result of request `tag`'s command, once it completed: a Zone
    /// Append's LBA as a byte offset (the NVMe completion's
    /// command-specific dword, which nvme_uring_cmd_end_io hands to
    /// io_uring's big CQE); `None` for a command with none.
    fn take_result(&mut self, tag: u32) -> Option<u64> {
        let _ = tag;
        None
    }
    /// The disk's logical block size (queue/logical_block_size; BLKSSZGET,
    /// which fio's sg engine reads as the unit of its CDBs' LBAs).
    fn logical_block_size(&self) -> u32 {
        512
    }
    /// The disk is an NVMe namespace with its generic character device
    /// /dev/ngXnY (drivers/nvme/host/core.c nvme_add_ns_cdev), which takes
    /// io_uring passthrough commands (nvme_ns_chr_uring_cmd).
    fn nvme_generic(&self) -> bool {
        false
    }
    /// The namespace's placement identifiers, as I/O Management Receive's
    /// Reclaim Unit Handle Status lists them (None: no FDP configuration,
    /// the command fails).
    fn placement_ids(&self) -> Option<Vec<u16>> {
        None
    }
    /// The queue's write-cache flags the driver sets at probe
    /// (blk_queue_write_cache(q, wc, fua): QUEUE_FLAG_WC, QUEUE_FLAG_FUA).
    /// Without a volatile write cache the block layer completes flushes
    /// itself, before any driver sees them (block/blk-flush.c). Devices
    /// here report none unless their driver says otherwise.
    fn write_cache(&self) -> WriteCache {
        WriteCache::default()
    }
}

/// A queue's write-cache flags (include/linux/blkdev.h QUEUE_FLAG_WC,
/// QUEUE_FLAG_FUA).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WriteCache {
    /// The device has a volatile write cache: REQ_PREFLUSH and flushes
    /// reach it.
    pub volatile: bool,
    /// The device honours REQ_FUA itself (else the block layer follows a
    /// FUA write with a flush).
    pub fua: bool,
}
