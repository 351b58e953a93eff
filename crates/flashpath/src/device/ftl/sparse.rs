//! A chunked sparse array: memory grows with the indices touched, not with
//! the index range (DESIGN.md principle 5). A 64 GB device has 16 M logical
//! pages; its L2P is 64 MiB if every page is touched, and a few hundred KiB
//! if the workload touches a few GiB.
//!
//! Every entry reads 0 until it is set, and a chunk is allocated zeroed on
//! its first write (`vec![0; n]` is `alloc_zeroed`, i.e. `calloc`, whose
//! fresh pages the kernel maps on first touch): the first write into a chunk
//! costs one allocation, not a pass over its 4096 entries, and the resident
//! memory grows per 4 KiB page written, not per 16 KiB chunk. A user whose
//! default is not 0 stores its values encoded so that 0 means "the default"
//! (the L2P stores `ppn ^ default(lpn)`, see `FlashDevice::l2p_get`).

/// Entries per chunk: 4096 × 4 B = 16 KiB, the size of one map page
/// (HotStorage'17 slides, KERNEL-NOTES §2(c)), so a chunk is one map page's
/// worth of entries.
pub const CHUNK: usize = 4096;

#[derive(Clone, Debug)]
pub struct Sparse {
    chunks: Vec<Option<Box<[u32]>>>,
    allocated: usize,
}

impl Sparse {
    /// Room for `len` entries; nothing allocated but the chunk table
    /// (8 B per 4096 entries).
    pub fn new(len: u64) -> Self {
        let n = (len as usize).div_ceil(CHUNK);
        Sparse {
            chunks: (0..n).map(|_| None).collect(),
            allocated: 0,
        }
    }

    /// The stored entry; 0 when it was never set (its chunk untouched, or
    /// the entry untouched in a touched chunk).
    #[inline]
    pub fn get(&self, i: u64) -> u32 {
        let i = i as usize;
        match self.chunks.get(i / CHUNK) {
            Some(Some(c)) => c[i % CHUNK],
            _ => 0,
        }
    }

    /// A mutable slot; on first touch of its chunk, the chunk is allocated
    /// zeroed (no per-entry work).
    #[inline]
    pub fn get_mut(&mut self, i: u64) -> &mut u32 {
        let i = i as usize;
        let slot = &mut self.chunks[i / CHUNK];
        if slot.is_none() {
            self.allocated += 1;
        }
        &mut slot.get_or_insert_with(|| vec![0; CHUNK].into_boxed_slice())[i % CHUNK]
    }

    /// Chunk `ci` (stored entries `ci * CHUNK ..`), or `None` when never
    /// touched: bulk readers copy a whole run of entries at once.
    #[inline]
    pub fn chunk(&self, ci: usize) -> Option<&[u32]> {
        self.chunks.get(ci).and_then(|c| c.as_deref())
    }

    pub fn chunks_allocated(&self) -> usize {
        self.allocated
    }

    pub fn chunks_total(&self) -> usize {
        self.chunks.len()
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
}
