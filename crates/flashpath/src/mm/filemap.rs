//! The disk's page cache: one flag byte per 4 KiB page of the device, kept
//! in lazily allocated chunks (memory grows with the pages touched), the
//! counts the dirty limits read (NR_FILE_DIRTY, NR_WRITEBACK), and reclaim
//! of clean pages when the cache holds as many pages as memory allows.

use std::collections::VecDeque;

/// PAGE_SHIFT of x86-64 and 4K-page arm64 kernels: the cache's unit.
pub const PAGE_SHIFT: u32 = 12;
pub const PAGE_SIZE: u64 = 1 << PAGE_SHIFT;

/// Pages per lazily allocated chunk of flags (4096 pages, 16 MiB of data).
const CHUNK_SHIFT: u32 = 12;
const CHUNK_PAGES: u64 = 1 << CHUNK_SHIFT;

/// Page flags, after the folio flags of include/linux/page-flags.h.
pub mod flag {
    /// PG_uptodate: the page holds the disk's data (or newer).
    pub const UPTODATE: u8 = 1;
    /// PG_dirty: newer than the disk.
    pub const DIRTY: u8 = 2;
    /// PG_writeback: a write of the page is on its way to the disk.
    pub const WRITEBACK: u8 = 4;
    /// PG_locked for a read in flight: present but not yet uptodate.
    pub const LOCKED: u8 = 8;
    /// PG_readahead: reaching this page starts the next readahead.
    pub const READAHEAD: u8 = 16;
    /// PG_referenced: used since reclaim last looked (second chance).
    pub const REFERENCED: u8 = 32;
    /// Bookkeeping, not a kernel flag: the page has an entry in the
    /// reclaim ring (entries of dropped pages are removed lazily).
    pub const IN_RING: u8 = 64;
    /// Any of these makes the page resident.
    pub const PRESENT: u8 = UPTODATE | DIRTY | WRITEBACK | LOCKED;
}

/// What happened in the cache, for the run's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Pages found uptodate by a read.
    pub read_hits: u64,
    /// Pages a read had to wait for (not present, or still being read).
    pub read_misses: u64,
    /// Pages added for reads (the asked ones and readahead).
    pub pages_read: u64,
    /// Pages added by readahead beyond what a read asked at the time.
    pub readahead_pages: u64,
    /// Pages dirtied by writes.
    pub pages_dirtied: u64,
    /// Pages written back.
    pub pages_written: u64,
    /// Clean pages reclaimed to make room.
    pub pages_reclaimed: u64,
}

pub struct PageCache {
    chunks: Vec<Option<Box<[u8]>>>,
    /// Dirty pages per chunk, so the flusher skips clean chunks.
    chunk_dirty: Vec<u32>,
    pages: u64,
    capacity: u64,
    resident: u64,
    dirty: u64,
    writeback: u64,
    /// Resident pages in the order they came in: the reclaim hand takes
    /// them from the front (a CLOCK approximation of the kernel's LRU
    /// lists, mm/vmscan.c: a referenced page gets a second pass).
    ring: VecDeque<u64>,
    pub stats: CacheStats,
}

impl PageCache {
    /// A cache over a disk of `disk_bytes` that may hold `capacity_bytes`.
    pub fn new(disk_bytes: u64, capacity_bytes: u64) -> PageCache {
        let pages = disk_bytes.div_ceil(PAGE_SIZE);
        let nchunks = pages.div_ceil(CHUNK_PAGES) as usize;
        PageCache {
            chunks: (0..nchunks).map(|_| None).collect(),
            chunk_dirty: vec![0; nchunks],
            pages,
            capacity: (capacity_bytes / PAGE_SIZE).max(1),
            resident: 0,
            dirty: 0,
            writeback: 0,
            ring: VecDeque::new(),
            stats: CacheStats::default(),
        }
    }

    /// Pages on the disk (the block device inode's size).
    pub fn disk_pages(&self) -> u64 {
        self.pages
    }

    pub fn capacity_pages(&self) -> u64 {
        self.capacity
    }

    pub fn resident(&self) -> u64 {
        self.resident
    }

    /// NR_FILE_DIRTY.
    pub fn nr_dirty(&self) -> u64 {
        self.dirty
    }

    /// NR_WRITEBACK.
    pub fn nr_writeback(&self) -> u64 {
        self.writeback
    }

    pub fn flags(&self, page: u64) -> u8 {
        match self.chunks.get((page >> CHUNK_SHIFT) as usize) {
            Some(Some(c)) => c[(page & (CHUNK_PAGES - 1)) as usize],
            _ => 0,
        }
    }

    pub fn is_present(&self, page: u64) -> bool {
        self.flags(page) & flag::PRESENT != 0
    }

    pub fn is_uptodate(&self, page: u64) -> bool {
        self.flags(page) & flag::UPTODATE != 0
    }

    fn slot(&mut self, page: u64) -> &mut u8 {
        let chunk = self.chunks[(page >> CHUNK_SHIFT) as usize]
            .get_or_insert_with(|| vec![0u8; CHUNK_PAGES as usize].into_boxed_slice());
        &mut chunk[(page & (CHUNK_PAGES - 1)) as usize]
    }

    fn set(&mut self, page: u64, f: u8) {
        *self.slot(page) |= f;
    }

    fn clear(&mut self, page: u64, f: u8) {
        *self.slot(page) &= !f;
    }

    /// A new page enters the cache with `f` set (becomes resident).
    fn insert(&mut self, page: u64, f: u8) {
        debug_assert!(!self.is_present(page), "page {page} inserted twice");
        let old = self.flags(page);
        self.set(page, f);
        self.resident += 1;
        if old & flag::IN_RING == 0 {
            self.set(page, flag::IN_RING);
            self.ring.push_back(page);
        }
        self.shrink();
    }

    /// A page allocated for a read (filemap_add_folio of a locked folio):
    /// present, not yet uptodate. `mark`: it carries PG_readahead.
    pub fn add_for_read(&mut self, page: u64, mark: bool) {
        let f = flag::LOCKED | if mark { flag::READAHEAD } else { 0 };
        self.insert(page, f);
        self.stats.pages_read += 1;
    }

    /// The read of `page` ended (folio_end_read): uptodate, unlocked.
    pub fn end_read(&mut self, page: u64) {
        if self.flags(page) & flag::LOCKED != 0 {
            self.clear(page, flag::LOCKED);
            self.set(page, flag::UPTODATE);
        }
    }

    /// folio_mark_accessed.
    pub fn mark_accessed(&mut self, page: u64) {
        self.set(page, flag::REFERENCED);
    }

    pub fn clear_readahead(&mut self, page: u64) {
        self.clear(page, flag::READAHEAD);
    }

    /// A write copied into `page` (the whole page, or a page that was
    /// uptodate): dirty and uptodate (folio_mark_dirty).
    pub fn mark_dirty(&mut self, page: u64) {
        let f = self.flags(page);
        if f & flag::PRESENT == 0 {
            self.insert(page, flag::UPTODATE);
        }
        self.set(page, flag::UPTODATE | flag::REFERENCED);
        if f & flag::DIRTY == 0 {
            self.set(page, flag::DIRTY);
            self.dirty += 1;
            self.chunk_dirty[(page >> CHUNK_SHIFT) as usize] += 1;
        }
        self.stats.pages_dirtied += 1;
    }

    /// folio_clear_dirty_for_io + folio_start_writeback.
    pub fn start_writeback(&mut self, page: u64) {
        debug_assert!(self.flags(page) & flag::DIRTY != 0);
        self.clear(page, flag::DIRTY);
        self.set(page, flag::WRITEBACK);
        self.dirty -= 1;
        self.chunk_dirty[(page >> CHUNK_SHIFT) as usize] -= 1;
        self.writeback += 1;
    }

    /// folio_end_writeback.
    pub fn end_writeback(&mut self, page: u64) {
        if self.flags(page) & flag::WRITEBACK != 0 {
            self.clear(page, flag::WRITEBACK);
            self.writeback -= 1;
            self.stats.pages_written += 1;
        }
    }

    /// Whether a page can be written back now (dirty, not already under
    /// writeback: write_cache_pages skips those in WB_SYNC_NONE passes and
    /// waits for them in WB_SYNC_ALL ones).
    pub fn writable(&self, page: u64) -> bool {
        self.flags(page) & (flag::DIRTY | flag::WRITEBACK) == flag::DIRTY
    }

    /// The first page at or after `from` (wrapping once to `0`) that
    /// `writable` accepts, skipping chunks with no dirty page.
    pub fn next_writable(&self, from: u64) -> Option<u64> {
        if self.dirty == 0 {
            return None;
        }
        let scan = |lo: u64, hi: u64| -> Option<u64> {
            let mut p = lo;
            while p < hi {
                let c = (p >> CHUNK_SHIFT) as usize;
                let chunk_end = ((c as u64 + 1) << CHUNK_SHIFT).min(hi);
                if self.chunk_dirty[c] == 0 {
                    p = chunk_end;
                    continue;
                }
                while p < chunk_end {
                    if self.writable(p) {
                        return Some(p);
                    }
                    p += 1;
                }
            }
            None
        };
        scan(from.min(self.pages), self.pages).or_else(|| scan(0, from.min(self.pages)))
    }

    /// Drop every clean, idle page (BLKFLSBUF's invalidate_bdev, or
    /// POSIX_FADV_DONTNEED): what fio's `invalidate=1` does at file open.
    pub fn invalidate_clean(&mut self) {
        let n = self.ring.len();
        for _ in 0..n {
            let Some(page) = self.ring.pop_front() else {
                break;
            };
            let f = self.flags(page);
            if f & (flag::DIRTY | flag::WRITEBACK | flag::LOCKED) == 0 {
                if f & flag::PRESENT != 0 {
                    self.resident -= 1;
                }
                *self.slot(page) = 0;
            } else {
                self.ring.push_back(page);
            }
        }
    }

    /// Reclaim clean pages while the cache is over its capacity. Dirty,
    /// writeback and locked pages are passed over (reclaim cannot free
    /// them at once); a full pass that frees nothing stops it.
    fn shrink(&mut self) {
        let mut passed = 0usize;
        while self.resident > self.capacity && passed <= 2 * self.ring.len() {
            let Some(page) = self.ring.pop_front() else {
                break;
            };
            let f = self.flags(page);
            if f & flag::PRESENT == 0 {
                // A stale entry of a dropped page.
                self.clear(page, flag::IN_RING);
                continue;
            }
            if f & flag::REFERENCED != 0 {
                self.clear(page, flag::REFERENCED);
                self.ring.push_back(page);
                passed += 1;
                continue;
            }
            if f & (flag::DIRTY | flag::WRITEBACK | flag::LOCKED) != 0 {
                self.ring.push_back(page);
                passed += 1;
                continue;
            }
            *self.slot(page) = 0;
            self.resident -= 1;
            self.stats.pages_reclaimed += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_page_is_present_then_uptodate() {
        let mut c = PageCache::new(1 << 30, 1 << 30);
        assert!(!c.is_present(7));
        c.add_for_read(7, false);
        assert!(c.is_present(7) && !c.is_uptodate(7));
        c.end_read(7);
        assert!(c.is_uptodate(7));
        assert_eq!(c.resident(), 1);
    }

    #[test]
    fn dirty_and_writeback_counts_follow_the_page() {
        let mut c = PageCache::new(1 << 30, 1 << 30);
        c.mark_dirty(3);
        c.mark_dirty(3);
        assert_eq!(c.nr_dirty(), 1);
        c.start_writeback(3);
        assert_eq!((c.nr_dirty(), c.nr_writeback()), (0, 1));
        // Redirtied while its write is on the way: dirty again, not
        // writable until the write ends.
        c.mark_dirty(3);
        assert_eq!((c.nr_dirty(), c.nr_writeback()), (1, 1));
        assert!(!c.writable(3));
        c.end_writeback(3);
        assert!(c.writable(3));
        assert_eq!(c.stats.pages_written, 1);
    }

    #[test]
    fn the_flusher_search_wraps_and_skips_clean_chunks() {
        let mut c = PageCache::new(1 << 34, 1 << 34);
        c.mark_dirty(5);
        c.mark_dirty(3 * CHUNK_PAGES + 9);
        assert_eq!(c.next_writable(6), Some(3 * CHUNK_PAGES + 9));
        assert_eq!(c.next_writable(3 * CHUNK_PAGES + 10), Some(5));
        c.start_writeback(5);
        c.start_writeback(3 * CHUNK_PAGES + 9);
        assert_eq!(c.next_writable(0), None);
    }

    #[test]
    fn reclaim_keeps_the_cache_within_capacity_and_spares_dirty_pages() {
        let mut c = PageCache::new(1 << 30, 8 * PAGE_SIZE);
        for p in 0..4 {
            c.mark_dirty(p);
        }
        for p in 100..120 {
            c.add_for_read(p, false);
            c.end_read(p);
        }
        assert_eq!(c.resident(), 8);
        assert!((0..4).all(|p| c.is_present(p)));
        // The newest clean pages are the ones kept.
        assert!((116..120).all(|p| c.is_present(p)));
        assert_eq!(c.stats.pages_reclaimed, 16);
    }

    #[test]
    fn invalidate_drops_clean_pages_only() {
        let mut c = PageCache::new(1 << 30, 1 << 30);
        c.add_for_read(1, false);
        c.end_read(1);
        c.add_for_read(2, false);
        c.mark_dirty(3);
        c.invalidate_clean();
        assert!(!c.is_present(1));
        assert!(c.is_present(2) && c.is_present(3));
        assert_eq!(c.resident(), 2);
        // A dropped page can come back.
        c.add_for_read(1, false);
        assert_eq!(c.resident(), 3);
    }
}
