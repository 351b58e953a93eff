//! On-demand readahead (mm/readahead.c, Linux 6.x): a file's readahead
//! window (`struct file_ra_state`: start, size, async_size, prev_pos) and
//! the two entry points filemap_read calls: `page_cache_sync_ra` when the
//! page it needs is not cached, `page_cache_async_ra` when it reaches a page
//! marked PG_readahead. Folios are single pages here (the block device's
//! mapping without large folios), so `page_cache_ra_order` falls back to
//! `do_page_cache_ra`.

use super::filemap::PageCache;

/// VM_READAHEAD_PAGES: 128 KiB (include/linux/mm.h), the bdi's default
/// ra_pages (`read_ahead_kb` = 128).
pub const DEFAULT_RA_PAGES: u64 = 32;

/// A run of pages added to the cache for one read_pages call: the block
/// requests to issue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageRun {
    pub first: u64,
    pub pages: u64,
}

/// fio's `fadvise_hint` (default 1: by the job's pattern), applied to the
/// file at open (ioengines.c td_io_open_file; mm/fadvise.c).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Advice {
    /// POSIX_FADV_NORMAL: the bdi's ra_pages.
    Normal,
    /// POSIX_FADV_SEQUENTIAL: ra_pages doubled.
    Sequential,
    /// POSIX_FADV_RANDOM: FMODE_RANDOM, reads exactly what is asked.
    Random,
}

/// One open file's readahead state.
#[derive(Clone, Debug)]
pub struct FileRa {
    pub start: u64,
    pub size: u64,
    pub async_size: u64,
    pub ra_pages: u64,
    /// The byte after the previous read (None: file_ra_state_init's -1).
    pub prev_pos: Option<u64>,
    random: bool,
    /// ra->order: raised by 2 on every async readahead (it sets the
    /// alignment of the window's end even when folios stay order 0).
    order: u32,
    /// The bdi's io_pages (max_sectors_kb): a read bigger than the window
    /// may read up to this much.
    io_pages: u64,
}

/// get_init_ra_size: the first window for a request of `size` pages.
pub fn init_ra_size(size: u64, max: u64) -> u64 {
    let newsize = size.max(1).next_power_of_two();
    if newsize <= max / 32 {
        newsize * 4
    } else if newsize <= max / 4 {
        newsize * 2
    } else {
        max
    }
}

/// get_next_ra_size: ramp the window up, fast while small.
pub fn next_ra_size(cur: u64, max: u64) -> u64 {
    if cur < max / 16 {
        4 * cur
    } else if cur <= max / 2 {
        2 * cur
    } else {
        max
    }
}

impl FileRa {
    /// file_ra_state_init with the bdi's `ra_pages`, then the open-time
    /// advice; `io_pages` is the disk's max request in pages.
    pub fn new(ra_pages: u64, io_pages: u64, advice: Advice) -> FileRa {
        FileRa {
            start: 0,
            size: 0,
            async_size: 0,
            ra_pages: match advice {
                Advice::Sequential => ra_pages * 2,
                _ => ra_pages,
            },
            prev_pos: None,
            random: advice == Advice::Random,
            order: 0,
            io_pages,
        }
    }

    /// ractl_max_pages: the window, or up to io_pages for a bigger read.
    fn max_pages(&self, req: u64) -> u64 {
        if req > self.ra_pages && self.io_pages > self.ra_pages {
            req.min(self.io_pages)
        } else {
            self.ra_pages
        }
    }

    /// page_cache_sync_ra: the page at `index` is not cached and the read
    /// wants `req` pages from it. New pages go into `cache` (locked for the
    /// read) and their runs into `runs`.
    pub fn sync_ra(
        &mut self,
        cache: &mut PageCache,
        index: u64,
        req: u64,
        runs: &mut Vec<PageRun>,
    ) {
        let mut req = req.max(1);
        let mut forced = self.random;
        if self.ra_pages == 0 {
            req = 1;
            forced = true;
        }
        if forced {
            // force_page_cache_ra: exactly what was asked, at most
            // max(io_pages, ra_pages), in 2 MiB chunks.
            let nr = req.min(self.io_pages.max(self.ra_pages));
            do_page_cache_ra(cache, index, nr, 0, runs);
            return;
        }
        let max = self.max_pages(req);
        let sequential = match self.prev_pos {
            Some(p) => index.wrapping_sub(p >> super::PAGE_SHIFT) <= 1,
            None => false,
        };
        if index == 0 || req > max || sequential {
            self.start = index;
            self.size = init_ra_size(req, max);
            self.async_size = if self.size > req {
                self.size - req
            } else {
                self.size >> 1
            };
        } else {
            // Look back for the history a sequential stream leaves.
            let (miss, from_start) = prev_miss(cache, index - 1, max);
            let mut contig = index - miss.map_or(0, |m| m + 1);
            if !from_start && miss.is_none() {
                contig = max;
            }
            if contig <= req {
                // Standalone small random read: read as is, state
                // untouched.
                do_page_cache_ra(cache, index, req, 0, runs);
                return;
            }
            if from_start {
                // Cached from the beginning: a long-run stream.
                contig *= 2;
            }
            self.start = index;
            self.size = (contig + req).min(max);
            self.async_size = 1;
        }
        self.order = 0;
        do_page_cache_ra(cache, self.start, self.size, self.async_size, runs);
    }

    /// page_cache_async_ra: the read reached `index`, a page marked
    /// PG_readahead (its mark is cleared here), wanting `req` pages.
    pub fn async_ra(
        &mut self,
        cache: &mut PageCache,
        index: u64,
        req: u64,
        runs: &mut Vec<PageRun>,
    ) {
        cache.clear_readahead(index);
        if self.ra_pages == 0 || cache.flags(index) & super::filemap::flag::WRITEBACK != 0 {
            return;
        }
        let max = self.max_pages(req);
        let expected = self.start + self.size - self.async_size;
        if index == expected {
            self.start += self.size;
            self.size = self.size.max(next_ra_size(self.size, max));
        } else {
            // A marked page without matching state (interleaved reads):
            // size the window from what is cached ahead.
            let Some(start) = next_miss(cache, index + 1, max) else {
                return;
            };
            if start == 0 || start - index > max {
                return;
            }
            self.start = start;
            self.size = next_ra_size(start - index + req, max);
        }
        self.order += 2;
        let align = 1u64 << self.order.min(max.max(1).trailing_zeros());
        let end = self.start + self.size;
        let aligned_end = end / align * align;
        if aligned_end > self.start {
            self.size -= end - aligned_end;
        }
        self.async_size = self.size;
        do_page_cache_ra(cache, self.start, self.size, self.async_size, runs);
        // page_cache_ra_order on a mapping without large folios resets
        // the order (and falls back to do_page_cache_ra).
        self.order = 0;
    }

    /// The read ended at byte `pos` (filemap_read's ra->prev_pos).
    pub fn read_done(&mut self, pos: u64) {
        self.prev_pos = Some(pos);
    }
}

/// page_cache_prev_miss from `index` back over at most `max` pages: the
/// first page not cached (None if every page in range is), and whether the
/// walk ran into the file's start with everything cached (the kernel's
/// ULONG_MAX).
fn prev_miss(cache: &PageCache, index: u64, max: u64) -> (Option<u64>, bool) {
    let mut p = index;
    for _ in 0..max {
        if !cache.is_present(p) {
            return (Some(p), false);
        }
        if p == 0 {
            return (None, true);
        }
        p -= 1;
    }
    (None, false)
}

/// page_cache_next_miss from `index` over at most `max` pages: the first
/// page not cached, or the page past the range.
fn next_miss(cache: &PageCache, index: u64, max: u64) -> Option<u64> {
    let end = (index + max).min(cache.disk_pages());
    (index..end).find(|&p| !cache.is_present(p)).or(Some(end))
}

/// do_page_cache_ra -> page_cache_ra_unbounded: add the missing pages of
/// [index, index + nr) (clamped to the disk's end), marking the one at
/// nr - lookahead with PG_readahead, and gather runs of new pages (a page
/// already cached ends a run: read_pages goes out for what was gathered).
pub fn do_page_cache_ra(
    cache: &mut PageCache,
    index: u64,
    nr: u64,
    lookahead: u64,
    runs: &mut Vec<PageRun>,
) {
    let end = (index + nr).min(cache.disk_pages());
    let mark = (lookahead > 0).then(|| index + nr - lookahead);
    let mut run: Option<PageRun> = None;
    for p in index..end {
        if cache.is_present(p) {
            if let Some(r) = run.take() {
                runs.push(r);
            }
            continue;
        }
        cache.add_for_read(p, Some(p) == mark);
        match run.as_mut() {
            Some(r) => r.pages += 1,
            None => run = Some(PageRun { first: p, pages: 1 }),
        }
    }
    if let Some(r) = run {
        runs.push(r);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mm::filemap::flag;

    fn complete(cache: &mut PageCache, runs: &[PageRun]) {
        for r in runs {
            for p in r.first..r.first + r.pages {
                cache.end_read(p);
            }
        }
    }

    #[test]
    fn init_and_next_sizes_follow_the_kernel_table() {
        // mm/readahead.c comment: for 128k (32 page) max ra, 1-2 page =
        // 16k, 3-4 page 32k, 5-8 page = 64k, > 8 page = 128k initial.
        assert_eq!(init_ra_size(1, 32), 4);
        assert_eq!(init_ra_size(2, 32), 4);
        assert_eq!(init_ra_size(3, 32), 8);
        assert_eq!(init_ra_size(8, 32), 16);
        assert_eq!(init_ra_size(9, 32), 32);
        assert_eq!(next_ra_size(1, 32), 4);
        assert_eq!(next_ra_size(4, 32), 8);
        assert_eq!(next_ra_size(16, 32), 32);
        assert_eq!(next_ra_size(32, 32), 32);
    }

    /// A 4 KiB sequential reader from page 0 with the default 128 KiB
    /// window: the first read asks 4 pages with the mark on page 1, each
    /// mark reached pushes the window on, ramping 8, 16, then 32 pages
    /// (sizes rounded to 4 pages, the order-2 alignment); every page is
    /// read once and no read ever misses after the first.
    #[test]
    fn a_sequential_stream_ramps_the_window_and_reads_each_page_once() {
        let mut cache = PageCache::new(1 << 30, 1 << 30);
        let mut ra = FileRa::new(DEFAULT_RA_PAGES, 256, Advice::Normal);
        let mut runs = Vec::new();
        ra.sync_ra(&mut cache, 0, 1, &mut runs);
        assert_eq!(runs, vec![PageRun { first: 0, pages: 4 }]);
        assert_ne!(cache.flags(1) & flag::READAHEAD, 0);
        complete(&mut cache, &runs);
        let mut sizes = vec![4];
        for page in 1..200u64 {
            assert!(cache.is_present(page), "page {page} was not read ahead");
            if cache.flags(page) & flag::READAHEAD != 0 {
                runs.clear();
                ra.async_ra(&mut cache, page, 1, &mut runs);
                sizes.push(runs.iter().map(|r| r.pages).sum());
                complete(&mut cache, &runs);
            }
            ra.read_done((page + 1) * 4096);
        }
        assert_eq!(&sizes[..5], &[4, 8, 16, 32, 32]);
        assert_eq!(cache.stats.pages_read, sizes.iter().sum::<u64>());
    }

    #[test]
    fn random_advice_reads_only_what_is_asked() {
        let mut cache = PageCache::new(1 << 30, 1 << 30);
        let mut ra = FileRa::new(DEFAULT_RA_PAGES, 256, Advice::Random);
        let mut runs = Vec::new();
        ra.sync_ra(&mut cache, 1000, 2, &mut runs);
        assert_eq!(
            runs,
            vec![PageRun {
                first: 1000,
                pages: 2
            }]
        );
        assert_eq!(cache.flags(1001) & flag::READAHEAD, 0);
    }

    #[test]
    fn a_lone_small_read_far_from_the_last_one_is_read_as_is() {
        let mut cache = PageCache::new(1 << 30, 1 << 30);
        let mut ra = FileRa::new(DEFAULT_RA_PAGES, 256, Advice::Normal);
        ra.read_done(10 * 4096);
        let mut runs = Vec::new();
        ra.sync_ra(&mut cache, 5000, 1, &mut runs);
        assert_eq!(
            runs,
            vec![PageRun {
                first: 5000,
                pages: 1
            }]
        );
    }

    #[test]
    fn sequential_advice_doubles_the_window() {
        let mut cache = PageCache::new(1 << 30, 1 << 30);
        let mut ra = FileRa::new(DEFAULT_RA_PAGES, 256, Advice::Sequential);
        let mut runs = Vec::new();
        // A 32-page read from page 0 gets the whole (64-page) window.
        ra.sync_ra(&mut cache, 0, 32, &mut runs);
        assert_eq!(
            runs,
            vec![PageRun {
                first: 0,
                pages: 64
            }]
        );
    }

    #[test]
    fn cached_pages_split_the_runs() {
        let mut cache = PageCache::new(1 << 30, 1 << 30);
        cache.add_for_read(2, false);
        let mut runs = Vec::new();
        do_page_cache_ra(&mut cache, 0, 5, 0, &mut runs);
        assert_eq!(
            runs,
            vec![
                PageRun { first: 0, pages: 2 },
                PageRun { first: 3, pages: 2 }
            ]
        );
    }
}
