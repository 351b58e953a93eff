//! Dirty page limits and the flusher's choice of pages
//! (mm/page-writeback.c, fs/fs-writeback.c).

use super::filemap::PageCache;
use super::readahead::PageRun;

/// vm.dirty_background_ratio default (mm/page-writeback.c:
/// dirty_background_ratio = 10).
pub const DIRTY_BACKGROUND_RATIO: u64 = 10;
/// vm.dirty_ratio default (vm_dirty_ratio = 20).
pub const DIRTY_RATIO: u64 = 20;
/// vm.dirty_expire_centisecs default: 30 s (dirty_expire_interval).
pub const DIRTY_EXPIRE_NS: u64 = 30_000_000_000;

/// The global dirty limits in pages (domain_dirty_limits with the default
/// ratios over the dirtyable memory).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DirtyLimits {
    /// Above this the flusher writes in the background.
    pub bg_thresh: u64,
    /// The dirty limit.
    pub thresh: u64,
}

impl DirtyLimits {
    pub fn from_ratios(dirtyable_pages: u64, background_ratio: u64, ratio: u64) -> DirtyLimits {
        let thresh = (dirtyable_pages * ratio / 100).max(1);
        let mut bg_thresh = dirtyable_pages * background_ratio / 100;
        // domain_dirty_limits: a background threshold at or above the
        // limit is halved under it.
        if bg_thresh >= thresh {
            bg_thresh = thresh / 2;
        }
        DirtyLimits { bg_thresh, thresh }
    }

    /// dirty_freerun_ceiling: below it writers are never throttled.
    pub fn freerun(&self) -> u64 {
        (self.thresh + self.bg_thresh) / 2
    }

    /// The setpoint balance_dirty_pages steers the dirty count to (the
    /// middle of freerun and the limit): the level a throttled writer
    /// waits to come back under.
    pub fn setpoint(&self) -> u64 {
        (self.freerun() + self.thresh) / 2
    }

    /// balance_dirty_pages: `dirty` (NR_FILE_DIRTY + NR_WRITEBACK) over
    /// the freerun ceiling makes the writer pause until the flusher has
    /// brought it back to the setpoint.
    pub fn throttles(&self, dirty: u64) -> bool {
        dirty > self.freerun()
    }

    /// wb_over_bg_thresh: background writeback goes on while the dirty
    /// pages (not yet under writeback) exceed the background threshold.
    pub fn over_background(&self, nr_dirty: u64) -> bool {
        nr_dirty > self.bg_thresh
    }
}

/// write_cache_pages from the mapping's `writeback_index` (range_cyclic):
/// the next run of contiguous writable pages, at most `max_pages` (one
/// request: bios of adjacent pages merge up to max_sectors_kb), put under
/// writeback. Returns the run; the caller moves its cursor past it.
pub fn next_writeback_run(cache: &mut PageCache, cursor: u64, max_pages: u64) -> Option<PageRun> {
    let first = cache.next_writable(cursor)?;
    let mut pages = 0;
    while pages < max_pages.max(1)
        && first + pages < cache.disk_pages()
        && cache.writable(first + pages)
    {
        cache.start_writeback(first + pages);
        pages += 1;
    }
    Some(PageRun { first, pages })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_limits_over_one_gib() {
        let l = DirtyLimits::from_ratios(262_144, DIRTY_BACKGROUND_RATIO, DIRTY_RATIO);
        assert_eq!((l.bg_thresh, l.thresh), (26_214, 52_428));
        assert_eq!(l.freerun(), 39_321);
        assert!(!l.throttles(39_321) && l.throttles(39_322));
        assert!(l.setpoint() > l.freerun() && l.setpoint() < l.thresh);
    }

    #[test]
    fn runs_stop_at_a_clean_page_and_at_the_request_size() {
        let mut c = PageCache::new(1 << 30, 1 << 30);
        for p in (10..20).chain(21..25) {
            c.mark_dirty(p);
        }
        assert_eq!(
            next_writeback_run(&mut c, 0, 4),
            Some(PageRun {
                first: 10,
                pages: 4
            })
        );
        assert_eq!(
            next_writeback_run(&mut c, 14, 64),
            Some(PageRun {
                first: 14,
                pages: 6
            })
        );
        assert_eq!(
            next_writeback_run(&mut c, 20, 64),
            Some(PageRun {
                first: 21,
                pages: 4
            })
        );
        assert_eq!(next_writeback_run(&mut c, 25, 64), None);
        assert_eq!((c.nr_dirty(), c.nr_writeback()), (0, 14));
    }
}
