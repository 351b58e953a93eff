//! A chunked sparse array: memory grows with the indices touched, not with
//! the index range (DESIGN.md principle 5). A 64 GB device has 16 M logical
//! pages; its L2P is 64 MiB if every page is touched, and a few hundred KiB
//! if the workload touches a few GiB.

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

    /// The entry, or `None` when its chunk was never touched (the caller
    /// supplies the default, which may depend on the index).
    #[inline]
    pub fn get(&self, i: u64) -> Option<u32> {
        let i = i as usize;
        match self.chunks.get(i / CHUNK) {
            Some(Some(c)) => Some(c[i % CHUNK]),
            _ => None,
        }
    }

    /// A mutable slot; on first touch of its chunk, the chunk is allocated
    /// and filled by `init(index)` for every index it covers.
    #[inline]
    pub fn get_mut_or_init(&mut self, i: u64, init: impl Fn(u64) -> u32) -> &mut u32 {
        let i = i as usize;
        let ci = i / CHUNK;
        if self.chunks[ci].is_none() {
            let base = (ci * CHUNK) as u64;
            let c: Box<[u32]> = (0..CHUNK as u64).map(|k| init(base + k)).collect();
            self.chunks[ci] = Some(c);
            self.allocated += 1;
        }
        match &mut self.chunks[ci] {
            Some(c) => &mut c[i % CHUNK],
            None => unreachable!(),
        }
    }

    /// Chunk `ci` (entries `ci * CHUNK ..`), or `None` when never touched:
    /// bulk readers copy a whole run of entries at once.
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
        assert_eq!(s.get(5), None);
        *s.get_mut_or_init(CHUNK as u64 + 3, |k| k as u32 * 2) += 1;
        assert_eq!(s.get(CHUNK as u64 + 3), Some((CHUNK as u32 + 3) * 2 + 1));
        assert_eq!(s.get(CHUNK as u64 + 4), Some((CHUNK as u32 + 4) * 2));
        assert_eq!(s.chunks_allocated(), 1);
        assert_eq!(s.chunks_total(), 10);
    }
}
