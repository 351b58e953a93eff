//! Buffered I/O's page-cache side (`direct=0`): the copy of one read or
//! write system call through the cache (filemap_read,
//! generic_perform_write) with the readahead it starts and the pages it
//! dirties, the flusher's state (the bdi's writeback work), and what a
//! caller blocked in the cache waits for. The machine charges the copy's
//! CPU time to the calling thread and sends the readahead and writeback
//! requests down the block layer (`machine/buffered.rs`).

use super::readahead::{Advice, PageRun};
use super::writeback::{DirtyLimits, DIRTY_EXPIRE_NS};
use super::{FileRa, PageCache, PAGE_SHIFT, PAGE_SIZE};
use crate::profile::limits::{COST, RATE};
use crate::profile::Profile;
use crate::sim::Ns;
use crate::types::Ddir;

/// CPU costs of the page cache path, ns at the host's reference frequency
/// (from the host profile).
#[derive(Clone, Copy, Debug)]
pub struct CacheCosts {
    /// copy_to_user / copy_from_user bandwidth, bytes per ns.
    pub copy_bytes_per_ns: f64,
    /// The fixed part of one buffered read or write call between the
    /// system call's entry and exit (vfs_read/vfs_write, blkdev_read_iter,
    /// filemap_read or generic_perform_write set-up, fsnotify).
    pub call: Ns,
    /// Finding one cached page (filemap_get_read_batch / __filemap_get_folio:
    /// xarray walk, reference, flags).
    pub page_lookup: Ns,
    /// Adding one page (folio allocation, xarray insert, LRU add).
    pub page_add: Ns,
    /// Putting one dirty page under writeback and into a bio.
    pub page_writeback: Ns,
}

crate::params! {
    /// The page cache path's CPU costs (`host.cost.*`), read when
    /// `host.cost.copy_user` is given: a host without them runs direct I/O
    /// only.
    pub struct CacheCostParams {
        /// copy_to_user / copy_from_user bandwidth.
        copy_user: f64 = required rate("host.cost.copy_user", RATE),
        /// The fixed part of one buffered read or write call between the
        /// system call's entry and exit (vfs_read/vfs_write,
        /// blkdev_read_iter, filemap_read or generic_perform_write set-up,
        /// fsnotify).
        buffered_call: Ns = required ns("host.cost.buffered_call", COST),
        /// Finding one cached page (filemap_get_read_batch /
        /// __filemap_get_folio: xarray walk, reference, flags).
        page_cache_lookup: Ns = required ns("host.cost.page_cache_lookup", COST),
        /// Adding one page (folio allocation, xarray insert, LRU add).
        page_cache_add: Ns = required ns("host.cost.page_cache_add", COST),
        /// Putting one dirty page under writeback and into a bio.
        page_writeback: Ns = required ns("host.cost.page_writeback", COST),
    }
}

impl CacheCosts {
    pub fn from_profile(p: &Profile) -> crate::Result<CacheCosts> {
        let c = CacheCostParams::read(p)?;
        Ok(CacheCosts {
            copy_bytes_per_ns: c.copy_user / 1e9,
            call: c.buffered_call,
            page_lookup: c.page_cache_lookup,
            page_add: c.page_cache_add,
            page_writeback: c.page_writeback,
        })
    }

    fn copy_ns(&self, bytes: u64) -> Ns {
        (bytes as f64 / self.copy_bytes_per_ns).round() as Ns
    }
}

/// Everything the machine needs for buffered I/O, built by the run when a
/// job has `direct=0`.
pub struct CacheParts {
    pub costs: CacheCosts,
    /// Memory the cache may fill (the host's).
    pub memory: u64,
    /// The disk's size (the block device inode).
    pub disk_bytes: u64,
    /// The bdi's ra_pages (read_ahead_kb / 4).
    pub ra_pages: u64,
    /// The largest request (max_sectors_kb), pages.
    pub max_rq_pages: u64,
}

/// The flusher: the bdi's writeback work (wb_workfn) on a kworker.
#[derive(Default)]
pub struct Flusher {
    /// The CPU its kworker runs on while it works.
    pub cpu: Option<u32>,
    pub inflight: u32,
    /// The mapping's writeback_index.
    pub cursor: u64,
    /// When the cache last went from clean to dirty (the inode's
    /// dirtied_when, for the periodic writeback of expired data).
    pub dirtied_when: Option<Ns>,
    /// A pass is scheduled (Ev::Flush pending).
    pub scheduled: bool,
}

pub struct CacheState {
    pub cache: PageCache,
    pub limits: DirtyLimits,
    pub costs: CacheCosts,
    pub ra_pages: u64,
    pub max_rq_pages: u64,
    pub flusher: Flusher,
    /// Scratch for the runs one call adds (kept to avoid allocating).
    pub runs: Vec<PageRun>,
    pub readahead_rqs: u64,
    pub writeback_rqs: u64,
    pub throttled: u64,
}

impl CacheState {
    pub fn new(parts: CacheParts) -> CacheState {
        let cache = PageCache::new(parts.disk_bytes, parts.memory);
        let limits = DirtyLimits::from_ratios(
            cache.capacity_pages(),
            super::writeback::DIRTY_BACKGROUND_RATIO,
            super::writeback::DIRTY_RATIO,
        );
        CacheState {
            cache,
            limits,
            costs: parts.costs,
            ra_pages: parts.ra_pages,
            max_rq_pages: parts.max_rq_pages.max(1),
            flusher: Flusher::default(),
            runs: Vec::with_capacity(8),
            readahead_rqs: 0,
            writeback_rqs: 0,
            throttled: 0,
        }
    }

    /// Dirty data older than dirty_expire_interval (the inode's
    /// dirtied_when).
    pub fn expired(&self, now: Ns) -> bool {
        self.flusher
            .dirtied_when
            .is_some_and(|d| d + DIRTY_EXPIRE_NS <= now)
    }

    /// A file's readahead state as fio opens it (fadvise_hint).
    pub fn open_file(&self, advice: Advice) -> FileRa {
        FileRa::new(self.ra_pages, self.max_rq_pages, advice)
    }

    pub fn counters(&self) -> serde_json::Value {
        let s = self.cache.stats;
        serde_json::json!({
            "read_hit_pages": s.read_hits,
            "read_miss_pages": s.read_misses,
            "pages_read": s.pages_read,
            "readahead_pages": s.readahead_pages,
            "pages_dirtied": s.pages_dirtied,
            "pages_written": s.pages_written,
            "pages_reclaimed": s.pages_reclaimed,
            "readahead_requests": self.readahead_rqs,
            "writeback_requests": self.writeback_rqs,
            "throttled_writes": self.throttled,
            "dirty_at_end": self.cache.nr_dirty(),
            "bg_thresh_pages": self.limits.bg_thresh,
            "dirty_thresh_pages": self.limits.thresh,
        })
    }
}

/// A buffered read or write system call in progress.
#[derive(Clone, Copy, Debug)]
pub struct BufferedOp {
    /// fio's request (never sent to the device itself).
    pub key: u32,
    /// Next byte to copy, and the end.
    pub pos: u64,
    pub end: u64,
    /// The thread slept in the call: the wake-up already paid the return
    /// to user space.
    pub woken: bool,
}

/// What a thread blocked in a buffered call waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CacheWait {
    /// A page being read (folio_wait_locked).
    Page(u64),
    /// The dirty count back under the setpoint (balance_dirty_pages).
    Dirty,
    /// Every dirty page written and its write ended (fsync).
    Clean,
}

/// What one step of a buffered call's copy did (`CacheState::copy`).
#[derive(Clone, Copy, Debug)]
pub struct Copied {
    /// CPU work, reference-ns.
    pub work: Ns,
    /// Where the call got to.
    pub pos: u64,
    /// The page it has to wait for (being read), if any.
    pub wait: Option<u64>,
    /// The cache went from clean to dirty: the periodic writeback timer
    /// fires then (dirty_expire_interval later).
    pub dirty_timer: Option<Ns>,
}

impl CacheState {
    /// The call `op` (a read or a write, `ddir`) copies from `op.pos` at
    /// `now` through the cache, with the file's readahead state `ra`,
    /// until it is done or has to wait for a page; the reads it starts are
    /// left in `runs` for the caller to submit.
    pub fn copy(&mut self, op: BufferedOp, ddir: Ddir, ra: &mut FileRa, now: Ns) -> Copied {
        let st = self;
        st.runs.clear();
        let c = st.costs;
        let mut dirty_timer = None;
        let mut work: Ns = 0;
        let mut pos = op.pos;
        let mut wait = None;
        if ddir == Ddir::Read {
            // filemap_read: batches of cached pages from `pos`; a missing
            // first page starts sync readahead, a marked last page async
            // readahead, a page still being read makes the call wait.
            let last = op.end.div_ceil(PAGE_SIZE);
            while pos < op.end {
                let index = pos >> PAGE_SHIFT;
                if !st.cache.is_present(index) {
                    let before = st.cache.stats.pages_read;
                    ra.sync_ra(&mut st.cache, index, last - index, &mut st.runs);
                    let added = st.cache.stats.pages_read - before;
                    st.cache.stats.readahead_pages += added.saturating_sub(last - index);
                    work += added * c.page_add;
                }
                let mut page = index;
                loop {
                    work += c.page_lookup;
                    let f = st.cache.flags(page);
                    let marked = f & crate::mm::filemap::flag::READAHEAD != 0;
                    if marked {
                        let before = st.cache.stats.pages_read;
                        ra.async_ra(&mut st.cache, page, last - page, &mut st.runs);
                        let added = st.cache.stats.pages_read - before;
                        st.cache.stats.readahead_pages += added;
                        work += added * c.page_add;
                    }
                    if !st.cache.is_uptodate(page) {
                        st.cache.stats.read_misses += 1;
                        wait = Some(page);
                        break;
                    }
                    st.cache.stats.read_hits += 1;
                    st.cache.mark_accessed(page);
                    let page_end = ((page + 1) << PAGE_SHIFT).min(op.end);
                    work += c.copy_ns(page_end - pos);
                    pos = page_end;
                    page += 1;
                    if pos >= op.end || marked || !st.cache.is_present(page) {
                        break;
                    }
                }
                if wait.is_some() {
                    break;
                }
            }
            if wait.is_none() {
                ra.read_done(op.end);
            }
        } else {
            // generic_perform_write: page by page; a partly written page
            // that is not uptodate is read first (block_write_begin).
            while pos < op.end {
                let page = pos >> PAGE_SHIFT;
                let page_end = ((page + 1) << PAGE_SHIFT).min(op.end);
                let whole = pos & (PAGE_SIZE - 1) == 0 && page_end - pos == PAGE_SIZE;
                work += c.page_lookup;
                if !whole && !st.cache.is_uptodate(page) {
                    if !st.cache.is_present(page) {
                        crate::mm::readahead::do_page_cache_ra(
                            &mut st.cache,
                            page,
                            1,
                            0,
                            &mut st.runs,
                        );
                        work += c.page_add;
                    }
                    wait = Some(page);
                    break;
                }
                if !st.cache.is_present(page) {
                    work += c.page_add;
                }
                if st.cache.nr_dirty() == 0 && st.flusher.dirtied_when.is_none() {
                    st.flusher.dirtied_when = Some(now);
                    dirty_timer = Some(now + DIRTY_EXPIRE_NS);
                }
                st.cache.mark_dirty(page);
                work += c.copy_ns(page_end - pos);
                pos = page_end;
            }
        }
        Copied {
            work,
            pos,
            wait,
            dirty_timer,
        }
    }
}
