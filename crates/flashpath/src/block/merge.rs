//! Request merging and the per-task plug, as blk-mq does them (Linux
//! 6.12: block/blk-merge.c, block/blk-mq.c).
//!
//! A bio (here one fio I/O, a slab entry of its own) that starts where a
//! request ends merges at its back, one that ends where a request starts
//! at its front (`blk_try_merge`), when both may merge (`blk_rq_merge_ok`:
//! same operation, same priority, no REQ_NOMERGE_FLAGS: FUA, PREFLUSH)
//! and the merged request keeps within the queue's limits
//! (`ll_back_merge_fn` / `ll_front_merge_fn`: `max_sectors_kb`,
//! `max_segments`; a request that hits a limit is marked REQ_NOMERGE,
//! `req_set_nomerge`). A merged bio adds no request: the disk counts a
//! merge (`blk_account_io_merge_bio`, the `merges` field of
//! /sys/block/<dev>/stat), and every bio the request carries completes
//! with it.
//!
//! The plug (`struct blk_plug`, started by io_submit for more than
//! AIO_PLUG_THRESHOLD iocbs in fs/aio.c, and by io_uring's submit for more
//! than two SQEs, io_submit_state_start) holds the task's new requests:
//! a bio first tries the plug's last request (`blk_attempt_plug_merge`),
//! a request is added at its tail (`blk_add_rq_to_plug`), which is
//! flushed first when it holds BLK_MAX_REQUEST_COUNT requests or its
//! first request has BLK_PLUG_FLUSH_SIZE bytes; `blk_finish_plug` at the
//! end of the call flushes the rest in order (`blk_mq_flush_plug_list`).
//! (The flush when the task sleeps, `schedule()` -> `blk_flush_plug`, has
//! nothing to do here: a fio thread does not sleep inside its submit call
//! in the model.)
//!
//! Not modelled (assumptions, docs/schedulers.md): merges of discards
//! (fio's trims never merge here), of polled I/O, of passthrough
//! requests, of page-cache requests, on zoned disks, on a bio-based disk
//! (brd: no requests), and with swiotlb bouncing (its per-request mapping
//! is made at submission); physically
//! contiguous segments of two bios joining into one
//! (`blk_phys_contig_segment`: fio's I/O buffers are taken as not
//! contiguous with each other); the software queue's list merge of `none`
//! (`blk_bio_list_merge` on `ctx->rq_lists`, which only holds requests an
//! asynchronous queue run left there).

use super::{BlkCtx, BlockEvent, BlockLayer, RqKind};
use crate::driver::DeviceSignal;
use crate::sim::Ns;
use crate::types::Ddir;

/// No further bio in a request's chain.
pub const NO_BIO: u32 = u32::MAX;
/// `BLK_MAX_REQUEST_COUNT` (block/blk.h): requests one plug holds before
/// it is flushed (`blk_plug_max_rq_count`, one queue).
pub const BLK_MAX_REQUEST_COUNT: usize = 32;
/// `BLK_PLUG_FLUSH_SIZE` (block/blk.h): a plug whose first request holds
/// this many bytes is flushed before the next request joins it.
pub const BLK_PLUG_FLUSH_SIZE: u64 = 128 * 1024;
/// `AIO_PLUG_THRESHOLD` (fs/aio.c): io_submit plugs only more iocbs than
/// this; io_uring's `state->need_plug = max_ios > 2` is the same bound.
pub const AIO_PLUG_THRESHOLD: usize = 2;
/// The page a user buffer is pinned in (`PAGE_SIZE` on x86-64 and arm64
/// with 4 KiB pages): one segment each unless the buffer is physically
/// contiguous.
const PAGE_BYTES: u64 = 4096;

/// What may merge into a request: the queue's limits and its nomerges.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MergeLimits {
    /// `queue_max_sectors`: 512-byte sectors per request (max_sectors_kb).
    pub max_sectors: u64,
    /// `queue_max_segments`.
    pub max_segments: u32,
    /// `queue_max_segment_size`, bytes.
    pub max_segment_size: u64,
    /// queue/nomerges: 0, 1 (QUEUE_FLAG_NOXMERGES) or 2
    /// (QUEUE_FLAG_NOMERGES).
    pub nomerges: u8,
}

impl Default for MergeLimits {
    /// The kernel's defaults (blk_set_default_limits, BLK_DEF_MAX_SECTORS_CAP).
    fn default() -> Self {
        MergeLimits {
            max_sectors: 2560,
            max_segments: 128,
            max_segment_size: 65536,
            nomerges: 0,
        }
    }
}

/// Where a bio joined a request (`enum elv_merge`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MergeDir {
    /// ELEVATOR_BACK_MERGE: the bio starts where the request ends.
    Back,
    /// ELEVATOR_FRONT_MERGE: the bio ends where the request starts.
    Front,
}

/// The segments of a `len`-byte buffer of `contiguous` physically
/// contiguous bytes per extent, each at most `max_segment_size`
/// (bio_split_rw_at's count, `bvec_split_segs`).
pub fn bio_segments(len: u64, contiguous: u64, max_segment_size: u64) -> u32 {
    let seg = contiguous.max(PAGE_BYTES).min(max_segment_size.max(1));
    len.div_ceil(seg).max(1) as u32
}

/// Per-task plugs, by fio thread (`current->plug`), each the keys of its
/// requests in the order they were added (`plug->mq_list`).
#[derive(Default)]
pub struct Plugs {
    lists: Vec<Vec<u32>>,
    /// Plugs flushed (blk_mq_flush_plug_list calls with requests).
    pub flushes: u64,
}

impl Plugs {
    /// Room for `threads` tasks' plugs, `depth` requests each (reserved
    /// here: the hot path allocates nothing).
    pub fn new(threads: usize, depth: usize) -> Plugs {
        Plugs {
            lists: (0..threads)
                .map(|_| Vec::with_capacity(depth.min(BLK_MAX_REQUEST_COUNT)))
                .collect(),
            flushes: 0,
        }
    }
}

impl BlockLayer {
    /// `rq->nr_phys_segments` of request `key`.
    fn rq_segments(&self, key: u32) -> u32 {
        let rq = self.rqs.get(key);
        if rq.nr_segs > 0 {
            return rq.nr_segs;
        }
        bio_segments(
            u64::from(rq.unit.len),
            rq.contiguous,
            self.settings.merge.max_segment_size,
        )
    }

    /// Whether fio I/O `key` may merge at all (`bio_mergeable`, and what
    /// the model keeps out: see the module's note).
    pub(super) fn bio_may_merge(&self, key: u32) -> bool {
        let rq = self.rqs.get(key);
        self.settings.merge.nomerges < 2
            && self.zone_plugs.is_none()
            && !self.zoned_lock
            && !self.no_merge_bounce
            && rq.kind == RqKind::Fio
            && !rq.passthrough
            && !rq.polled
            && !rq.fua
            && rq.bio.ddir != Ddir::Trim
            && rq.bio.len > 0
    }

    /// `blk_rq_merge_ok` and `blk_try_merge`: where bio `bio` would join
    /// request `rq`, if they may merge.
    pub(super) fn merge_dir(&self, rq: u32, bio: u32) -> Option<MergeDir> {
        if rq == bio || !self.bio_may_merge(bio) || !self.bio_may_merge(rq) {
            return None;
        }
        let (r, b) = (self.rqs.get(rq), self.rqs.get(bio));
        if r.nomerge || r.unit.ddir != b.bio.ddir || r.ioprio != b.ioprio {
            return None;
        }
        if r.unit.offset + u64::from(r.unit.len) == b.bio.offset {
            Some(MergeDir::Back)
        } else if b.bio.offset + u64::from(b.bio.len) == r.unit.offset {
            Some(MergeDir::Front)
        } else {
            None
        }
    }

    /// `blk_attempt_bio_merge` of bio `bio` into request `rq`: the limits
    /// (`ll_back_merge_fn` / `ll_front_merge_fn`), then the bio joins the
    /// request's chain and the disk counts a merge. Returns where it
    /// joined, or `None` (a request that hit a limit is marked
    /// REQ_NOMERGE).
    pub(super) fn attempt_bio_merge(&mut self, rq: u32, bio: u32) -> Option<MergeDir> {
        let dir = self.merge_dir(rq, bio)?;
        let lim = self.settings.merge;
        let (blen, bcontig) = {
            let b = self.rqs.get(bio);
            (b.bio.len, b.contiguous)
        };
        let bsegs = bio_segments(u64::from(blen), bcontig, lim.max_segment_size);
        let segs = self.rq_segments(rq);
        let r = self.rqs.get_mut(rq);
        if (u64::from(r.unit.len) + u64::from(blen)) >> 9 > lim.max_sectors
            || segs + bsegs > lim.max_segments
        {
            r.nomerge = true;
            return None;
        }
        r.nr_segs = segs + bsegs;
        r.unit.len += blen;
        if dir == MergeDir::Front {
            r.unit.offset -= u64::from(blen);
        }
        let tail = r.tail_bio;
        if tail == NO_BIO {
            r.next_bio = bio;
        } else {
            self.rqs.get_mut(tail).next_bio = bio;
        }
        self.rqs.get_mut(rq).tail_bio = bio;
        let b = self.rqs.get_mut(bio);
        b.next_bio = NO_BIO;
        b.tail_bio = NO_BIO;
        // blk_account_io_merge_bio: merges[op_stat_group(req_op(req))].
        match self.rqs.get(rq).unit.ddir {
            Ddir::Read => self.disk.util.read_merges += 1,
            _ => self.disk.util.write_merges += 1,
        }
        Some(dir)
    }

    /// `blk_mq_sched_bio_merge` -> `dd_bio_merge` ->
    /// `blk_mq_sched_try_merge` -> `elv_merge` (block/elevator.c): fio
    /// I/O `bio` merges with a request the elevator holds: the one-hit
    /// `last_merge` first (its merge is the only try if it is adjacent);
    /// with nomerges=0 then the hash's request ending where the bio
    /// starts, then (front_merges) the sorted list's request of the bio's
    /// priority and direction starting where it ends. Returns whether it
    /// merged. (The merged request's merge with its neighbour,
    /// `attempt_back_merge` / `attempt_front_merge`, is not modelled.)
    pub(super) fn elv_bio_merge(&mut self, bio: u32) -> bool {
        if !self.bio_may_merge(bio) {
            return false;
        }
        let Some(front_merges) = self.elevator.as_deref().and_then(|e| e.bio_merges()) else {
            return self.elv_list_merge(bio);
        };
        let last = self.last_merge;
        if last != NO_BIO && self.merge_dir(last, bio).is_some() {
            return self.elv_attempt(last, bio);
        }
        if self.settings.merge.nomerges == 1 {
            return false;
        }
        let b = self.rqs.get(bio).bio;
        let bio_end = b.offset + u64::from(b.len);
        let back = self.elv_hash.iter().copied().find(|&k| {
            let u = self.rqs.get(k).unit;
            u.offset + u64::from(u.len) == b.offset
        });
        if let Some(k) = back {
            if self.merge_dir(k, bio) == Some(MergeDir::Back) {
                return self.elv_attempt(k, bio);
            }
        }
        if front_merges {
            let prio = super::sched::mq_deadline::same_prio;
            let ioprio = self.rqs.get(bio).ioprio;
            let front = self.elv_hash.iter().copied().find(|&k| {
                let r = self.rqs.get(k);
                r.unit.offset == bio_end && r.unit.ddir == b.ddir && prio(r.ioprio, ioprio)
            });
            if let Some(k) = front {
                if self.merge_dir(k, bio) == Some(MergeDir::Front) {
                    return self.elv_attempt(k, bio);
                }
            }
        }
        false
    }

    /// `blk_bio_list_merge` (block/blk-mq-sched.c) for an elevator that
    /// keeps per-context lists (kyber): the list's requests from its tail,
    /// at most 8; the first adjacent one is the only try. (`nomerges=1`
    /// does not stop it: the kernel checks only nomerges=2 there.)
    fn elv_list_merge(&mut self, bio: u32) -> bool {
        let mut cand = [NO_BIO; 8];
        let (hctx, cpu, ddir) = {
            let r = self.rqs.get(bio);
            (self.tags.hctx_of_cpu(r.cpu) as u32, r.cpu, r.bio.ddir)
        };
        let Some(n) = self
            .elevator
            .as_deref()
            .and_then(|e| e.list_merge_candidates(hctx, cpu, ddir, &mut cand))
        else {
            return false;
        };
        for &k in &cand[..n] {
            if self.merge_dir(k, bio).is_some() {
                return self.attempt_bio_merge(k, bio).is_some();
            }
        }
        false
    }

    /// The merge `elv_merge` chose, and `elv_merged_request`: a front
    /// merge moves the request in the elevator's sorted list; the
    /// request becomes `last_merge`.
    fn elv_attempt(&mut self, rq: u32, bio: u32) -> bool {
        let old = self.rqs.get(rq).unit.offset;
        let Some(dir) = self.attempt_bio_merge(rq, bio) else {
            return false;
        };
        if dir == MergeDir::Front {
            let r = self.rqs.get(rq);
            let (write, ioprio, new) = (r.unit.ddir != Ddir::Read, r.ioprio, r.unit.offset);
            if let Some(e) = self.elevator.as_deref_mut() {
                e.request_merged(rq, write, ioprio, old >> 9, new >> 9);
            }
        }
        self.last_merge = rq;
        true
    }

    /// Request `key` entered the elevator (`dd_insert_request`): a
    /// mergeable one joins the hash and, if there is none, becomes
    /// `last_merge`.
    pub(super) fn elv_inserted(&mut self, key: u32) {
        if self
            .elevator
            .as_deref()
            .and_then(|e| e.bio_merges())
            .is_some()
            && self.bio_may_merge(key)
        {
            self.elv_hash.push(key);
            if self.last_merge == NO_BIO {
                self.last_merge = key;
            }
        }
    }

    /// Request `key` left the elevator for the driver
    /// (`deadline_remove_request`: `elv_rqhash_del`, and `last_merge`
    /// forgets it).
    pub(super) fn elv_removed(&mut self, key: u32) {
        if let Some(i) = self.elv_hash.iter().position(|&k| k == key) {
            self.elv_hash.remove(i);
        }
        if self.last_merge == key {
            self.last_merge = NO_BIO;
        }
    }

    /// The fio I/O after `key` in its request's chain (`NO_BIO`: none).
    pub fn next_bio(&self, key: u32) -> u32 {
        self.rqs.get(key).next_bio
    }

    /// Room for `threads` fio threads' plugs; `no_merge`: swiotlb maps
    /// each request at submission, or the disk is bio-based (brd): nothing
    /// merges.
    pub fn init_plugs(&mut self, threads: usize, depth: usize, no_merge: bool) {
        self.plugs = Plugs::new(threads, depth);
        self.no_merge_bounce = no_merge;
    }

    /// One io_submit (fs/aio.c) or io_uring_enter of fio thread `tid`
    /// at `now`: its `keys`, in order, each through `blk_mq_submit_bio`;
    /// inside a plug when there are more than AIO_PLUG_THRESHOLD, then
    /// `blk_finish_plug`. (Only a queue without swiotlb bouncing: the
    /// requests are mapped when they reach the driver.)
    pub fn submit_batch<E>(&mut self, tid: u32, keys: &[u32], now: Ns, ctx: &mut BlkCtx<'_, E>)
    where
        E: From<BlockEvent> + From<DeviceSignal>,
    {
        let plugged = keys.len() > AIO_PLUG_THRESHOLD;
        for &k in keys {
            if plugged {
                self.plug_submit(tid, k, now, ctx);
            } else {
                ctx.schedule(now, BlockEvent::Dispatch(k));
            }
        }
        if plugged {
            self.flush_plug(tid, now, ctx);
        }
    }

    /// `blk_mq_submit_bio` of fio I/O `key` under thread `tid`'s plug:
    /// the plug merge (`blk_attempt_plug_merge`: the plug's last request
    /// only, one queue), else a request of its own on the plug
    /// (`blk_add_rq_to_plug`).
    fn plug_submit<E>(&mut self, tid: u32, key: u32, now: Ns, ctx: &mut BlkCtx<'_, E>)
    where
        E: From<BlockEvent> + From<DeviceSignal>,
    {
        let t = tid as usize;
        if let Some(&last) = self.plugs.lists[t].last() {
            if self.attempt_bio_merge(last, key).is_some() {
                return;
            }
        }
        if self.elv_bio_merge(key) {
            return;
        }
        let list = &self.plugs.lists[t];
        if let Some(&first) = list.first() {
            // rq_list_peek is the plug's first request (6.12).
            let first_bytes = u64::from(self.rqs.get(first).unit.len);
            if list.len() >= BLK_MAX_REQUEST_COUNT
                || (self.settings.merge.nomerges < 2 && first_bytes >= BLK_PLUG_FLUSH_SIZE)
            {
                self.flush_plug(tid, now, ctx);
            }
        }
        self.rqs.get_mut(key).plugged = true;
        self.plugs.lists[t].push(key);
    }

    /// `blk_mq_flush_plug_list`: thread `tid`'s plugged requests go on,
    /// in order, at `now` (each as `blk_mq_submit_bio` would have sent it:
    /// a driver tag or the elevator).
    fn flush_plug<E>(&mut self, tid: u32, now: Ns, ctx: &mut BlkCtx<'_, E>)
    where
        E: From<BlockEvent> + From<DeviceSignal>,
    {
        let t = tid as usize;
        if self.plugs.lists[t].is_empty() {
            return;
        }
        self.plugs.flushes += 1;
        for i in 0..self.plugs.lists[t].len() {
            let k = self.plugs.lists[t][i];
            ctx.schedule(now, BlockEvent::Dispatch(k));
        }
        self.plugs.lists[t].clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_per_segment_unless_contiguous() {
        assert_eq!(bio_segments(4096, 4096, 65536), 1);
        assert_eq!(bio_segments(65536, 4096, 65536), 16);
        // A huge-page buffer: segments of max_segment_size.
        assert_eq!(bio_segments(1 << 20, 2 << 20, 65536), 16);
        assert_eq!(bio_segments(512, 4096, 65536), 1);
    }
}
