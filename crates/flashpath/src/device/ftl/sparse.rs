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
//!
//! A page of entries holding only a few set entries is not given its 4 KiB
//! at all: its entries live in one hash table shared by the whole array
//! ([`Table`], 8 B a slot, at most half full), and the page moves to dense
//! storage when its [`PROMOTE`]th entry is set. Uniform random writes set a
//! few entries of every page long before they fill any (1,000,000 random
//! 4 KiB writes over a 476 GiB device set 8 of each page's 1024 on
//! average), so with dense pages only, the map of such a run was the whole
//! device's (478 MiB, docs/performance.md); hashed, it is 16 B an entry set.
//! A page moves at 32 entries: 32 x 16 B = 512 B hashed against 4 KiB
//! dense, and a whole-device random rewrite (preconditioning) holds at most
//! 32 entries of each page in the table at once.

/// Entries per chunk: 4096 × 4 B = 16 KiB, the size of one map page
/// (HotStorage'17 slides, KERNEL-NOTES §2(c)), so a chunk is one map page's
/// worth of entries.
pub const CHUNK: usize = 4096;

/// Chunks per slab: 64 × 16 KiB = 1 MiB, above glibc's mmap threshold.
pub const SLAB_CHUNKS: usize = 64;

/// Entries per 4 KiB page, the base page size of x86-64 and arm64 Linux
/// (a larger page only makes the page flags coarser, never wrong).
const PAGE: usize = 1024;

/// Set entries at which a page leaves the hash table for dense storage
/// (see the module docs).
const PROMOTE: u16 = 32;

/// Page state: never written.
const UNWRITTEN: u16 = 0;
/// Page state: dense, in its slab. Any other value is the number of the
/// page's entries in the hash table (1 ..= PROMOTE).
const DENSE: u16 = u16::MAX;

#[derive(Clone, Debug)]
pub struct Sparse {
    slabs: Vec<Option<Box<[u32]>>>,
    /// Entries per slab: `SLAB_CHUNKS` chunks, or the whole (smaller) array.
    slab_len: usize,
    /// Whether each chunk was ever written.
    touched: Vec<bool>,
    /// Each page of entries: `UNWRITTEN`, `DENSE`, or its count in `table`.
    page: Vec<u16>,
    /// Entries of the pages not yet dense.
    table: Table,
    /// Entries a page may hold in `table` before it is made dense: PROMOTE,
    /// or 0 (every page dense at its first write) for an index range that
    /// does not fit the table's u32 keys, or while a bulk writer asked
    /// for it ([`Sparse::dense_from_first_write`]).
    promote: u16,
    /// `promote` outside bulk writes.
    promote_default: u16,
    allocated: usize,
}

impl Sparse {
    /// Room for `len` entries; nothing allocated but the slab table, one
    /// flag per chunk (1 B per 4096 entries) and 2 B per 1024 entries.
    pub fn new(len: u64) -> Self {
        let n = (len as usize).div_ceil(CHUNK);
        let slab_chunks = n.clamp(1, SLAB_CHUNKS);
        Sparse {
            slabs: (0..n.div_ceil(slab_chunks)).map(|_| None).collect(),
            slab_len: slab_chunks * CHUNK,
            touched: vec![false; n],
            page: vec![UNWRITTEN; n * (CHUNK / PAGE)],
            table: Table::default(),
            promote: if len < u64::from(EMPTY) { PROMOTE } else { 0 },
            promote_default: if len < u64::from(EMPTY) { PROMOTE } else { 0 },
            allocated: 0,
        }
    }

    /// The stored entry; 0 when it was never set.
    #[inline]
    pub fn get(&self, i: u64) -> u32 {
        let i = i as usize;
        match self.page.get(i / PAGE).copied().unwrap_or(UNWRITTEN) {
            UNWRITTEN => 0,
            DENSE => match self.slabs.get(i / self.slab_len) {
                Some(Some(s)) => s[i % self.slab_len],
                _ => 0,
            },
            _ => self.hashed(i),
        }
    }

    /// [`Sparse::get`] of a hashed page, out of line so that the dense
    /// and unwritten paths stay small enough to inline into the FTL's loops.
    #[inline(never)]
    fn hashed(&self, i: usize) -> u32 {
        self.table.get(i as u32)
    }

    /// A mutable slot (0 when never set); the first write into a slab
    /// allocates it zeroed (no per-entry work).
    #[inline]
    pub fn get_mut(&mut self, i: u64) -> &mut u32 {
        let i = i as usize;
        let t = &mut self.touched[i / CHUNK];
        if !*t {
            *t = true;
            self.allocated += 1;
        }
        let p = i / PAGE;
        let st = self.page[p];
        if st != DENSE {
            if st < self.promote {
                return self.hashed_mut(i, p, st);
            }
            self.make_dense(p, st);
        }
        let n = self.slab_len;
        &mut self.slabs[i / n].as_mut().expect("a dense page's slab")[i % n]
    }

    /// [`Sparse::get_mut`] of a page kept hashed (state `st`), out of line
    /// as [`Sparse::hashed`].
    #[inline(never)]
    fn hashed_mut(&mut self, i: usize, p: usize, st: u16) -> &mut u32 {
        let (v, inserted) = self.table.entry(i as u32);
        if inserted {
            self.page[p] = st + 1;
        }
        v
    }

    /// While `on`, a page goes dense at its first write (and a hashed one
    /// at its next): for a writer that will set most entries of every page
    /// it touches (a whole-device preconditioning), whose pages would
    /// otherwise fill the table and then each be moved out of it.
    pub fn dense_from_first_write(&mut self, on: bool) {
        self.promote = if on { 0 } else { self.promote_default };
    }

    /// Move page `p`'s `count` hashed entries into its slab (allocated
    /// zeroed on the slab's first page) and mark it dense.
    #[cold]
    fn make_dense(&mut self, p: usize, mut count: u16) {
        let n = self.slab_len;
        let first = p * PAGE;
        let slab = self.slabs[first / n].get_or_insert_with(|| vec![0; n].into_boxed_slice());
        let off = first % n;
        // The page's first access is a store (one fault; see the module
        // docs), whatever its entries.
        slab[off] = 0;
        let mut i = first;
        while count > 0 {
            if let Some(v) = self.table.remove(i as u32) {
                slab[off + i - first] = v;
                count -= 1;
            }
            i += 1;
        }
        self.page[p] = DENSE;
        self.table.shrink_if_sparse();
    }

    /// XOR the stored entries `start .. start + dst.len()` into `dst`, a
    /// run inside one chunk: bulk readers apply the stored differences to a
    /// run of defaults at once.
    pub fn xor_into(&self, start: u64, dst: &mut [u32]) {
        let start = start as usize;
        let mut k = 0;
        while k < dst.len() {
            let i = start + k;
            let take = (PAGE - i % PAGE).min(dst.len() - k);
            let d = &mut dst[k..k + take];
            match self.page[i / PAGE] {
                UNWRITTEN => {}
                DENSE => {
                    let s = self.slabs[i / self.slab_len]
                        .as_deref()
                        .expect("a dense page's slab");
                    let off = i % self.slab_len;
                    for (o, &x) in d.iter_mut().zip(&s[off..off + take]) {
                        *o ^= x;
                    }
                }
                _ => {
                    for (j, o) in d.iter_mut().enumerate() {
                        *o ^= self.table.get((i + j) as u32);
                    }
                }
            }
            k += take;
        }
    }

    /// Whether chunk `ci` (entries `ci * CHUNK ..`) was ever written.
    #[inline]
    pub fn chunk_touched(&self, ci: usize) -> bool {
        self.touched.get(ci).copied().unwrap_or(false)
    }

    /// Chunks ever written (each may be resident only in part).
    pub fn chunks_allocated(&self) -> usize {
        self.allocated
    }

    pub fn chunks_total(&self) -> usize {
        self.touched.len()
    }

    /// Bytes this array holds: the slabs allocated, the hash table and the
    /// per-chunk and per-page state (a slab's pages never written are
    /// allocated but not resident; counted here all the same).
    pub fn bytes(&self) -> usize {
        let slabs = self.slabs.iter().flatten().count() * self.slab_len * 4;
        slabs
            + self.table.slots.len() * std::mem::size_of::<Slot>()
            + self.touched.len()
            + self.page.len() * 2
            + self.slabs.len() * std::mem::size_of::<Option<Box<[u32]>>>()
    }
}

/// Key of an empty slot; `Sparse::new` keeps every key below it.
const EMPTY: u32 = u32::MAX;

/// Smallest table allocated: 1024 slots, 8 KiB.
const MIN_SLOTS: usize = 1024;

#[derive(Clone, Copy, Debug)]
struct Slot {
    key: u32,
    val: u32,
}

/// An open-addressing hash table of u32 keys to u32 values, linear probing
/// at most half full, deletion by backward shift (Knuth, TAOCP vol. 3,
/// 6.4 Algorithm R), so no tombstones. Lookups depend on the keys alone,
/// never on the order of insertion, and nothing iterates over it: runs
/// stay deterministic.
#[derive(Clone, Debug, Default)]
struct Table {
    slots: Vec<Slot>,
    len: usize,
}

impl Table {
    /// Home slot: Fibonacci hashing (Knuth, TAOCP vol. 3, 6.4), the top
    /// bits of the key times 2^64 / phi, which spreads runs of consecutive
    /// keys (a page's entries) over the table.
    #[inline]
    fn home(&self, key: u32) -> usize {
        let bits = self.slots.len().trailing_zeros();
        (u64::from(key).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - bits)) as usize
    }

    #[inline]
    fn get(&self, key: u32) -> u32 {
        if self.slots.is_empty() {
            return 0;
        }
        let mask = self.slots.len() - 1;
        let mut i = self.home(key);
        loop {
            let s = self.slots[i];
            if s.key == key {
                return s.val;
            }
            if s.key == EMPTY {
                return 0;
            }
            i = (i + 1) & mask;
        }
    }

    /// The value of `key`, inserted as 0 if absent; and whether it was.
    #[inline]
    fn entry(&mut self, key: u32) -> (&mut u32, bool) {
        if 2 * (self.len + 1) > self.slots.len() {
            self.resize((2 * self.slots.len()).max(MIN_SLOTS));
        }
        let mask = self.slots.len() - 1;
        let mut i = self.home(key);
        loop {
            let k = self.slots[i].key;
            if k == key {
                return (&mut self.slots[i].val, false);
            }
            if k == EMPTY {
                self.slots[i] = Slot { key, val: 0 };
                self.len += 1;
                return (&mut self.slots[i].val, true);
            }
            i = (i + 1) & mask;
        }
    }

    fn remove(&mut self, key: u32) -> Option<u32> {
        if self.slots.is_empty() {
            return None;
        }
        let mask = self.slots.len() - 1;
        let mut hole = self.home(key);
        loop {
            let k = self.slots[hole].key;
            if k == key {
                break;
            }
            if k == EMPTY {
                return None;
            }
            hole = (hole + 1) & mask;
        }
        let val = self.slots[hole].val;
        // Shift back every later entry of the cluster whose home is not
        // between the hole and itself, so each stays reachable from its
        // home without a gap.
        let mut j = hole;
        loop {
            j = (j + 1) & mask;
            let s = self.slots[j];
            if s.key == EMPTY {
                break;
            }
            let h = self.home(s.key);
            if (j.wrapping_sub(h) & mask) >= (j.wrapping_sub(hole) & mask) {
                self.slots[hole] = s;
                hole = j;
            }
        }
        self.slots[hole].key = EMPTY;
        self.len -= 1;
        Some(val)
    }

    /// Halve the table while it is under an eighth full, so that it follows
    /// the entries still hashed after pages have left it.
    fn shrink_if_sparse(&mut self) {
        let mut n = self.slots.len();
        while n > MIN_SLOTS && 8 * self.len < n {
            n /= 2;
        }
        if n != self.slots.len() {
            self.resize(n);
        }
    }

    fn resize(&mut self, n: usize) {
        let old = std::mem::replace(&mut self.slots, vec![Slot { key: EMPTY, val: 0 }; n]);
        let mask = n - 1;
        for s in old.into_iter().filter(|s| s.key != EMPTY) {
            let mut i = self.home(s.key);
            while self.slots[i].key != EMPTY {
                i = (i + 1) & mask;
            }
            self.slots[i] = s;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Chunk `ci`'s stored entries, or `None` when never written.
    fn chunk(s: &Sparse, ci: usize) -> Option<Vec<u32>> {
        if !s.chunk_touched(ci) {
            return None;
        }
        let start = ci * CHUNK;
        let n = CHUNK.min(s.page.len() * PAGE - start);
        let mut v = vec![0; n];
        s.xor_into(start as u64, &mut v);
        Some(v)
    }

    #[test]
    fn allocates_on_first_touch_only() {
        let mut s = Sparse::new(10 * CHUNK as u64);
        assert_eq!(s.get(5), 0);
        assert!(chunk(&s, 1).is_none());
        *s.get_mut(CHUNK as u64 + 3) += 7;
        assert_eq!(s.get(CHUNK as u64 + 3), 7);
        assert_eq!(s.get(CHUNK as u64 + 4), 0);
        *s.get_mut(2 * CHUNK as u64 - 1) = 9;
        assert_eq!(chunk(&s, 1).map(|c| c[CHUNK - 1]), Some(9));
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
            chunk(&s, 2).is_none(),
            "a chunk of an allocated slab never written"
        );
        assert!(chunk(&s, SLAB_CHUNKS).is_none());
        assert_eq!(chunk(&s, 3).map(|c| c[0]), Some(6));
        assert_eq!(s.chunks_allocated(), 2);
    }

    /// Pages filled past PROMOTE move to dense storage with every entry
    /// they had, and the table shrinks after them.
    #[test]
    fn a_page_moves_to_dense_storage_with_its_entries() {
        let mut s = Sparse::new(8 * CHUNK as u64);
        for k in 0..u64::from(PROMOTE) {
            *s.get_mut(PAGE as u64 + 7 * k) = 100 + k as u32;
        }
        assert_eq!(s.page[1], PROMOTE);
        assert!(s.slabs[0].is_none(), "hashed entries allocate no slab");
        *s.get_mut(PAGE as u64 + 1000) = 5;
        assert_eq!(s.page[1], DENSE);
        assert_eq!(s.table.len, 0);
        for k in 0..u64::from(PROMOTE) {
            assert_eq!(s.get(PAGE as u64 + 7 * k), 100 + k as u32);
        }
        assert_eq!(s.get(PAGE as u64 + 1000), 5);
        assert_eq!(s.get(PAGE as u64 + 1), 0);
    }

    /// A bulk writer's pages go dense at their first write, hashed ones at
    /// their next, and later writers hash again.
    #[test]
    fn bulk_writes_go_dense_at_once() {
        let mut s = Sparse::new(4 * CHUNK as u64);
        *s.get_mut(3) = 1;
        assert_eq!(s.page[0], 1);
        s.dense_from_first_write(true);
        *s.get_mut(PAGE as u64) = 2;
        assert_eq!(s.page[1], DENSE);
        *s.get_mut(4) = 3;
        assert_eq!(s.page[0], DENSE);
        assert_eq!((s.get(3), s.get(4), s.get(PAGE as u64)), (1, 3, 2));
        s.dense_from_first_write(false);
        *s.get_mut(2 * PAGE as u64) = 4;
        assert_eq!(s.page[2], 1);
        assert_eq!(s.get(2 * PAGE as u64), 4);
    }

    /// 1,000,000 scattered entries of a 125 M-entry array (mqsim-default's
    /// 476 GiB of 4 KiB units) take 16 B each, not the 478 MiB dense array.
    #[test]
    fn scattered_entries_cost_bytes_per_entry_not_per_page() {
        let len = 125_000_000u64;
        let mut s = Sparse::new(len);
        let mut x = 1u64;
        for _ in 0..1_000_000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            *s.get_mut((x >> 11) % len) ^= 1;
        }
        let b = s.bytes();
        assert!(b < 20 << 20, "{} MiB", b >> 20);
        assert!(s.table.len > 990_000);
    }

    proptest! {
        /// Any sequence of sets reads back as a dense reference array,
        /// through pages moving to dense storage and the table growing and
        /// shrinking, and xor_into agrees with get.
        #[test]
        fn reads_as_a_dense_reference(
            ops in proptest::collection::vec((0u64..3 * CHUNK as u64 + 77, any::<u32>()), 1..3000),
            clustered in any::<bool>(),
        ) {
            let len = 3 * CHUNK as u64 + 77;
            let mut s = Sparse::new(len);
            let mut r = vec![0u32; len as usize];
            for (i, v) in ops {
                // Clustered: most indices in two pages, to cross PROMOTE.
                let i = if clustered { i % (2 * PAGE as u64) } else { i };
                let old = std::mem::replace(s.get_mut(i), v);
                prop_assert_eq!(old, r[i as usize]);
                r[i as usize] = v;
            }
            for i in 0..len {
                prop_assert_eq!(s.get(i), r[i as usize], "entry {}", i);
            }
            for ci in 0..s.chunks_total() {
                let a = ci * CHUNK;
                let b = (a + CHUNK).min(len as usize);
                let mut v = vec![0; b - a];
                s.xor_into(a as u64, &mut v);
                prop_assert_eq!(&v[..], &r[a..b]);
            }
        }
    }
}
