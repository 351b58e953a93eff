//! mm: the page cache that buffered I/O (fio's default `direct=0`) goes
//! through, named as the kernel names its parts:
//!
//! - `filemap`: the cached pages of the disk (`struct address_space`), their
//!   flags (uptodate, dirty, writeback, locked for a read, the readahead
//!   mark), dirty and writeback counts, and reclaim of clean pages when the
//!   cache is full (mm/filemap.c, mm/vmscan.c).
//! - `readahead`: a file's readahead state and the on-demand algorithm
//!   (mm/readahead.c: `page_cache_sync_ra`, `page_cache_async_ra`).
//! - `writeback`: the dirty limits that throttle writers and start the
//!   flusher (mm/page-writeback.c: `balance_dirty_pages`), and the order in
//!   which the flusher writes dirty pages (`write_cache_pages`).
//! - `buffered`: a buffered read or write call's copy through the cache,
//!   the flusher's state, and what a caller blocked in the cache waits for.
//! - `io`: the cache's own I/O (readahead and writeback requests, the
//!   flusher's kworker and its periodic pass, what a completion changes),
//!   reaching the host, the block layer and the event queue through
//!   `CacheCtx` as the block layer reaches its neighbours through `BlkCtx`.
//! - `thp`: how physically contiguous an I/O buffer is (transparent huge
//!   pages, hugetlb, fio's `mem=`), which sets a request's DMA segments.
//!
//! The machine (`crate::machine`) drives them: a read or write system call
//! of a fio thread copies through the cache on its CPU, the readahead reads
//! and the flusher's writes go down the block layer as requests of their
//! own (`io::CacheCtx::submit`).

pub mod buffered;
pub mod filemap;
pub mod io;
pub mod readahead;
pub mod thp;
pub mod writeback;

pub use filemap::{PageCache, PAGE_SHIFT, PAGE_SIZE};
pub use readahead::FileRa;
pub use writeback::DirtyLimits;
