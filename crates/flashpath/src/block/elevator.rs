//! The I/O scheduler seam: blk-mq's `struct elevator_mq_ops`
//! (include/linux/elevator.h, block/blk-mq-sched.c). A queue without an
//! elevator (`none`, `q->elevator == NULL`) sends each request straight for
//! a driver tag and, when none is free, it waits on the hardware queue in
//! arrival order (`BlkMq::get_tag`). With an elevator every request is
//! inserted into it (`insert_requests`), and a run of the queue
//! (`blk_mq_sched_dispatch_requests`) takes requests from it
//! (`dispatch_request`) while driver tags are free; a request the
//! elevator handed out that finds no tag goes on the hardware queue's
//! dispatch list (`hctx->dispatch`), which the next run empties first.
//! `finish_request` tells the elevator a request it dispatched is done.
//!
//! Flush requests bypass the elevator as blk-flush.c's do
//! (`blk_insert_flush` -> `blk_mq_request_bypass_insert`).
//!
//! Request merging with queued requests (block/merge.rs) asks the
//! elevator whether it merges (`bio_merges`) and tells it of a front
//! merge (`request_merged`). Not modelled (assumptions, see
//! docs/schedulers.md): the scheduler tag
//! depth (`q->nr_requests = 2 * min(depth, BLKDEV_DEFAULT_RQ)`,
//! blk_mq_init_sched; only jobs deeper than 256 in flight would meet it),
//! and jiffy granularity of the deadlines (the model's clock is in ns).

use crate::sim::Ns;
use crate::types::Ddir;

/// I/O priority classes (include/uapi/linux/ioprio.h).
pub const IOPRIO_CLASS_NONE: u16 = 0;
pub const IOPRIO_CLASS_RT: u16 = 1;
pub const IOPRIO_CLASS_BE: u16 = 2;
pub const IOPRIO_CLASS_IDLE: u16 = 3;
/// `IOPRIO_CLASS_SHIFT`: the class sits above 13 bits of level and hint.
pub const IOPRIO_CLASS_SHIFT: u16 = 13;

/// `IOPRIO_PRIO_VALUE(class, level)`.
pub const fn ioprio_value(class: u16, level: u16) -> u16 {
    (class << IOPRIO_CLASS_SHIFT) | (level & 7)
}

/// `IOPRIO_PRIO_CLASS(ioprio)`.
pub const fn ioprio_class(ioprio: u16) -> u16 {
    ioprio >> IOPRIO_CLASS_SHIFT
}

/// What an elevator knows of a request it is given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SchedRq {
    /// The request's slab key.
    pub key: u32,
    /// `rq_data_dir`: a discard is a write (REQ_OP_DISCARD is odd).
    pub write: bool,
    /// `blk_rq_pos`: its first 512-byte sector.
    pub sector: u64,
    /// The request's I/O priority (`req_get_ioprio`).
    pub ioprio: u16,
    /// `req_op`: read, write or discard (kyber's domains).
    pub ddir: Ddir,
    /// `blk_rq_sectors`.
    pub sectors: u32,
    /// `op_is_sync`: reads, and writes with REQ_SYNC (a direct I/O's:
    /// block/fops.c `dio_bio_write_op`); page-cache writeback is async.
    pub sync: bool,
    /// The submitting task (BFQ's per-process queues); `u32::MAX` for
    /// the kernel's own (the flusher's writeback, readahead).
    pub task: u32,
    /// The submitting CPU (its software queue, `rq->mq_ctx`).
    pub cpu: u32,
    /// The hardware queue it maps to (`rq->mq_hctx`).
    pub hctx: u32,
    /// REQ_OP_WRITE: a write that carries data (blk_req_needs_zone_write_lock
    /// locks the zone of such a write, not of a discard).
    pub data_write: bool,
}

impl SchedRq {
    /// A synchronous request of 8 sectors from task 0 on CPU 0: what the
    /// elevators' own tests need.
    pub fn new(key: u32, ddir: Ddir, offset: u64, ioprio: u16) -> SchedRq {
        SchedRq {
            key,
            write: ddir != Ddir::Read,
            sector: offset >> 9,
            ioprio,
            ddir,
            sectors: 8,
            sync: true,
            task: 0,
            cpu: 0,
            hctx: 0,
            data_write: ddir == Ddir::Write,
        }
    }
}

/// `struct elevator_mq_ops`, the hooks flashpath's requests reach.
pub trait ElevatorOps {
    /// `insert_requests`: request `rq` enters the scheduler at `now`.
    fn insert(&mut self, rq: SchedRq, now: Ns);
    /// `dispatch_request`: the request to hand to the driver next at
    /// `now`, or none (nothing queued, or the scheduler holds back).
    fn dispatch(&mut self, now: Ns) -> Option<u32>;
    /// `finish_request`: a request the scheduler dispatched, with priority
    /// `ioprio`, completed at `now`.
    fn finish(&mut self, ioprio: u16, now: Ns);
    /// `has_work`: requests are queued in the scheduler.
    fn has_work(&self) -> bool;
    /// `dispatch_request` from hardware queue `hctx` (an elevator with
    /// per-hctx state, kyber's `kyber_hctx_data`, serves that queue's
    /// requests only). Default: queue-wide.
    fn dispatch_from(&mut self, _hctx: usize, now: Ns) -> Option<u32> {
        self.dispatch(now)
    }
    /// `completed_request` (`blk_mq_sched_completed_request` from
    /// `__blk_mq_end_request`): request `rq`, allocated at `start` and
    /// issued to the driver at `io_start`, ended at `now`. The block layer
    /// calls it, then `finish`, at the same instant (blk_mq_end_request
    /// frees the request at once), so an elevator that keeps per-request
    /// state (kyber's domain token, BFQ's queue) releases it here.
    fn completed(&mut self, _rq: SchedRq, _start: Ns, _io_start: Ns, _now: Ns) {}
    /// A hardware queue to run because an elevator resource it waited
    /// for came free (kyber's `kyber_domain_wake`), one at a time.
    fn woken_hctx(&mut self) -> Option<usize> {
        None
    }
    /// When the elevator's own timer fires next (BFQ's idle slice
    /// timer), if armed.
    fn timer_at(&self) -> Option<Ns> {
        None
    }
    /// The elevator's timer fired at `now`; the block layer runs the
    /// queue after it (`bfq_schedule_dispatch`).
    fn timer(&mut self, _now: Ns) {}
    /// What the elevator shows of itself at the end of a run (its debugfs
    /// state), under the block counters' `"iosched"`; none by default.
    fn counters(&self) -> Option<serde_json::Value> {
        None
    }
    /// Whether bios merge into the requests it holds (`ops.bio_merge`
    /// through the elevator's request hash, `elv_merge`), and front
    /// merges with them (`ops.request_merge`): `None` for an elevator
    /// that merges otherwise (`list_merge_candidates`) or whose merging is
    /// not modelled (BFQ's per-queue lookups: docs/schedulers.md).
    fn bio_merges(&self) -> Option<bool> {
        None
    }
    /// An elevator that merges a bio with the requests on one list
    /// (kyber's `kyber_bio_merge` -> `blk_bio_list_merge` on the
    /// software queue's list of the bio's domain): the keys of that list
    /// for a bio of direction `ddir` from `cpu` on hardware queue `hctx`,
    /// from its tail, at most `out.len()`. Returns how many; `None`: the
    /// elevator does not merge this way.
    fn list_merge_candidates(
        &self,
        _hctx: u32,
        _cpu: u32,
        _ddir: Ddir,
        _out: &mut [u32],
    ) -> Option<usize> {
        None
    }
    /// A front merge (`ops.request_merged`, ELEVATOR_FRONT_MERGE) moved
    /// queued request `key` of priority `ioprio` (write or not) from
    /// sector `old` to `new`: it takes its new place in sector order.
    fn request_merged(&mut self, _key: u32, _write: bool, _ioprio: u16, _old: u64, _new: u64) {}
    /// The disk is zoned and its kernel serialises each zone's writes in
    /// the scheduler (zone write locking, kernels before 6.10:
    /// blk_req_zone_write_trylock), zones of `zone_sectors` sectors. A
    /// scheduler without zone support ignores it.
    fn set_zone_write_lock(&mut self, _zone_sectors: u64, _nr_zones: u32) {}
}
