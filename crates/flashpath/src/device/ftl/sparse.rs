//! A chunked sparse array: memory grows with the indices touched, not with
//! the index range (DESIGN.md principle 5). A 64 GB device has 16 M logical
//! pages; its L2P is 64 MiB if every page is touched, and a few hundred KiB
//! if the workload touches a few GiB.
//!
//! Every entry reads 0 until it is set, and storage is allocated zeroed on
//! first write: the first write into a chunk costs no pass over its 4096
//! entries. A user whose default is not 0 stores its values encoded so that
//! 0 means "the default" (the L2P stores `ppn ^ default(lpn)`, see
//! `FlashDevice::l2p_get`).
//!
//! Storage comes in slabs of [`SLAB_CHUNKS`] chunks (1 MiB), allocated with
//! `vec![0; n]`, i.e. `calloc`. glibc serves a request that large with a
//! fresh anonymous mapping (mmap threshold 128 KiB, malloc/malloc.c
//! `DEFAULT_MMAP_THRESHOLD_MIN`) or fresh heap top, both of which it knows
//! to be zero and does not clear, and the kernel maps their pages on first
//! touch: resident memory grows per 4 KiB page written, not per chunk.
//! (A 16 KiB chunk per calloc is carved from already-mapped heap, which
//! calloc must clear, touching all of it: measured in docs/performance.md.)
//! Which chunks were ever written is still tracked per chunk, for the bulk
//! readers and the memory statistics.
//!
//! Which 4 KiB pages of a slab were ever written is tracked too: a read of a
//! page never written returns 0 without touching it, and the first write
//! into a page stores before it loads. Otherwise `l2p_set`'s load-then-store
//! took two page faults per page (the load maps the shared zero page, the
//! store then copies it: measured 249,000 minor faults against 131,000
//! pages for 1M random writes).

/// Entries per chunk: 4096 × 4 B = 16 KiB, the size of one map page
/// (HotStorage'17 slides, KERNEL-NOTES §2(c)), so a chunk is one map page's
/// worth of entries.
pub const CHUNK: usize = 4096;

/// Chunks per slab: 64 × 16 KiB = 1 MiB, above glibc's mmap threshold.
pub const SLAB_CHUNKS: usize = 64;

/// Entries per 4 KiB page, the base page size of x86-64 and arm64 Linux
/// (a larger page only makes the page flags coarser, never wrong).
const PAGE: usize = 1024;

#[derive(Clone, Debug)]
pub struct Sparse {
    slabs: Vec<Option<Box<[u32]>>>,
    /// Entries per slab: `SLAB_CHUNKS` chunks, or the whole (smaller) array.
    slab_len: usize,
    /// Whether each chunk was ever written.
    touched: Vec<bool>,
    /// Whether each page of entries was ever written.
    written: Vec<bool>,
    allocated: usize,
}

impl Sparse {
    /// Room for `len` entries; nothing allocated but the slab table and one
    /// flag per chunk (1 B per 4096 entries).
    pub fn new(len: u64) -> Self {
        let n = (len as usize).div_ceil(CHUNK);
        let slab_chunks = n.clamp(1, SLAB_CHUNKS);
        Sparse {
            slabs: (0..n.div_ceil(slab_chunks)).map(|_| None).collect(),
            slab_len: slab_chunks * CHUNK,
            touched: vec![false; n],
            written: vec![false; n * (CHUNK / PAGE)],
            allocated: 0,
        }
    }

    /// The stored entry; 0 when it was never set.
    #[inline]
    pub fn get(&self, i: u64) -> u32 {
        let i = i as usize;
        if !self.written.get(i / PAGE).copied().unwrap_or(false) {
            return 0;
        }
        match self.slabs.get(i / self.slab_len) {
            Some(Some(s)) => s[i % self.slab_len],
            _ => 0,
        }
    }

    /// A mutable slot; the first write into a slab allocates it zeroed (no
    /// per-entry work).
    #[inline]
    pub fn get_mut(&mut self, i: u64) -> &mut u32 {
        let i = i as usize;
        let t = &mut self.touched[i / CHUNK];
        if !*t {
            *t = true;
            self.allocated += 1;
        }
        let n = self.slab_len;
        let e = &mut self.slabs[i / n].get_or_insert_with(|| vec![0; n].into_boxed_slice())[i % n];
        let w = &mut self.written[i / PAGE];
        if !*w {
            *w = true;
            // The entry is 0 already: this store makes the page's first
            // access a write (one fault; see the module docs).
            *e = 0;
        }
        e
    }

    /// Chunk `ci` (stored entries `ci * CHUNK ..`), or `None` when never
    /// written: bulk readers copy a whole run of entries at once.
    #[inline]
    pub fn chunk(&self, ci: usize) -> Option<&[u32]> {
        if !self.touched.get(ci).copied().unwrap_or(false) {
            return None;
        }
        let start = ci * CHUNK;
        let s = self.slabs[start / self.slab_len].as_deref()?;
        let off = start % self.slab_len;
        Some(&s[off..off + CHUNK])
    }

    /// Chunks ever written (each may be resident only in part).
    pub fn chunks_allocated(&self) -> usize {
        self.allocated
    }

    pub fn chunks_total(&self) -> usize {
        self.touched.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allocates_on_first_touch_only() {
        let mut s = Sparse::new(10 * CHUNK as u64);
        assert_eq!(s.get(5), 0);
        assert!(s.chunk(1).is_none());
        *s.get_mut(CHUNK as u64 + 3) += 7;
        assert_eq!(s.get(CHUNK as u64 + 3), 7);
        assert_eq!(s.get(CHUNK as u64 + 4), 0);
        *s.get_mut(2 * CHUNK as u64 - 1) = 9;
        assert_eq!(s.chunk(1).map(|c| c[CHUNK - 1]), Some(9));
        assert_eq!(s.chunks_allocated(), 1);
        assert_eq!(s.chunks_total(), 10);
    }

    /// Entries past the first slab, chunks sharing a slab, and a last chunk
    /// shorter than CHUNK entries.
    #[test]
    fn slabs_keep_chunks_apart() {
        let len = (SLAB_CHUNKS as u64 + 2) * CHUNK as u64 - 100;
        let mut s = Sparse::new(len);
        assert_eq!(s.chunks_total(), SLAB_CHUNKS + 2);
        *s.get_mut(len - 1) = 5;
        *s.get_mut(3 * CHUNK as u64) = 6;
        assert_eq!(s.get(len - 1), 5);
        assert_eq!(s.get(len - 2), 0);
        assert_eq!(s.get(3 * CHUNK as u64), 6);
        assert!(
            s.chunk(2).is_none(),
            "a chunk of an allocated slab never written"
        );
        assert!(s.chunk(SLAB_CHUNKS).is_none());
        assert_eq!(s.chunk(3).map(|c| c[0]), Some(6));
        assert_eq!(s.chunks_allocated(), 2);
    }
}
