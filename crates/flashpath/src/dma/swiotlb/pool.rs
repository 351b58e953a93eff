//! One IO TLB memory pool (`struct io_tlb_pool` in `kernel/dma/swiotlb.c`):
//! `nslabs` slots of `IO_TLB_SIZE` bytes split into `nareas` areas, each with
//! its own spinlock, `used` count and search `index`. The slot search
//! (`swiotlb_search_pool_area`, called `swiotlb_area_find_slots` before commit
//! 55c543865b76) and the release (`swiotlb_release_slots`) are the kernel's
//! algorithms, step for step: the same `list` free-run counts, the same
//! alignment checks, the same index wrap. Only the costs are ours: the
//! functions return what they did (slots scanned, slots written) and the
//! caller turns that into time.

use super::{IO_TLB_SEGSIZE, IO_TLB_SHIFT, IO_TLB_SIZE, PAGE_SIZE};

/// `INVALID_PHYS_ADDR` in swiotlb.c: `orig_addr` of a free slot.
pub const INVALID_PHYS_ADDR: u64 = u64::MAX;

/// `struct io_tlb_slot`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IoTlbSlot {
    /// Original (non-bounced) address of the data this slot bounces.
    pub orig_addr: u64,
    /// Bytes of the allocation from this slot to its end (the kernel keeps
    /// the remaining size per slot so a partial sync can be checked).
    pub alloc_size: u64,
    /// Number of free slots from this one up to the next `IO_TLB_SEGSIZE`
    /// boundary; 0 when the slot is allocated.
    pub list: u32,
}

/// A spinlock in virtual time, held over `[held_from, held_until)`. A CPU
/// that wants it inside that interval spins until `held_until`; one that
/// wants it before `held_from` (an operation booked at a core's later busy
/// time) takes it without waiting; `last_cpu` tells whether its cache line (which also
/// holds the area's `used` and `index`: one `struct io_tlb_area`) must come
/// from another core.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AreaLock {
    pub held_from: u64,
    pub held_until: u64,
    /// `u32::MAX` before first use (line is in no core's cache yet; charged
    /// as a local acquire).
    pub last_cpu: u32,
}

/// `struct io_tlb_area`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IoTlbArea {
    /// Slots in use in this area.
    pub used: u32,
    /// Slot index (relative to the area) where the next search starts.
    pub index: u32,
    pub lock: AreaLock,
}

/// What one `swiotlb_search_pool_area` call did, for the cost model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AreaSearch {
    /// First allocated slot (pool-relative), if found.
    pub slot: Option<u32>,
    /// `true` when the `nslots > area_nslabs - used` check failed before
    /// any slot was looked at.
    pub fast_fail: bool,
    /// Loop iterations of the slot scan (each is one slot examined).
    pub scanned: u32,
    /// `list` (and size) entries written: the allocated run plus the free
    /// slots before it whose counts were lowered.
    pub written: u32,
}

/// What one `swiotlb_release_slots` call did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Release {
    pub area: u32,
    pub nslots: u32,
    /// `list` entries written (freed run plus the merged free slots before).
    pub written: u32,
}

/// The alignment inputs of one search, as `swiotlb_search_pool_area` derives
/// them from the device and the request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SearchReq {
    /// Original buffer address (0 = no address constraint, as for
    /// `swiotlb_alloc`).
    pub orig_addr: u64,
    /// Requested size including the initial alignment padding (`offset`).
    pub alloc_size: u64,
    /// `dma_get_min_align_mask(dev)`.
    pub min_align_mask: u64,
    /// Caller's `alloc_align_mask`.
    pub alloc_align_mask: u64,
    /// `dma_get_seg_boundary(dev)` (`u64::MAX` when the device sets none).
    pub seg_boundary_mask: u64,
}

/// `nr_slots()`: slots needed for `val` bytes.
#[inline]
pub fn nr_slots(val: u64) -> u64 {
    val.div_ceil(IO_TLB_SIZE)
}

/// `io_tlb_offset()`: position of a slot inside its segment.
#[inline]
fn io_tlb_offset(val: u32) -> u32 {
    val & (IO_TLB_SEGSIZE - 1)
}

/// `swiotlb_align_offset()`: offset into the first slot that keeps the
/// device's minimum alignment of the original address.
#[inline]
pub fn align_offset(min_align_mask: u64, addr: u64) -> u64 {
    addr & min_align_mask & (IO_TLB_SIZE - 1)
}

/// `iommu_is_span_boundary()` (include/linux/iommu-helper.h).
#[inline]
fn is_span_boundary(index: u64, nr: u64, shift: u64, boundary_size: u64) -> bool {
    let off = shift.wrapping_add(index) & boundary_size.wrapping_sub(1);
    off + nr > boundary_size
}

/// `struct io_tlb_pool`.
#[derive(Debug, Clone)]
pub struct IoTlbPool {
    /// Physical (= DMA) address of slot 0.
    pub start: u64,
    pub nslabs: u32,
    pub nareas: u32,
    pub area_nslabs: u32,
    /// A transient pool: allocated on the I/O path for one mapping, freed
    /// at its unmap (`pool->transient`).
    pub transient: bool,
    pub areas: Vec<IoTlbArea>,
    pub slots: Vec<IoTlbSlot>,
}

impl IoTlbPool {
    /// `swiotlb_init_io_tlb_pool()`: every slot free, `list` counting down
    /// to each segment boundary, every area empty with index 0.
    pub fn new(start: u64, nslabs: u32, nareas: u32, transient: bool) -> Self {
        assert!(nareas >= 1 && nareas.is_power_of_two(), "nareas {nareas}");
        assert!(nslabs >= nareas, "nslabs {nslabs} < nareas {nareas}");
        let slots = (0..nslabs)
            .map(|i| IoTlbSlot {
                orig_addr: INVALID_PHYS_ADDR,
                alloc_size: 0,
                // swiotlb_init_io_tlb_pool: min(IO_TLB_SEGSIZE -
                // io_tlb_offset(i), nslabs - i), so a free run never reaches
                // past the end of a pool whose size is not a multiple of the
                // segment (transient pools).
                list: (IO_TLB_SEGSIZE - io_tlb_offset(i)).min(nslabs - i),
            })
            .collect();
        let areas = vec![
            IoTlbArea {
                used: 0,
                index: 0,
                lock: AreaLock {
                    held_from: 0,
                    held_until: 0,
                    last_cpu: u32::MAX,
                },
            };
            nareas as usize
        ];
        IoTlbPool {
            start,
            nslabs,
            nareas,
            area_nslabs: nslabs / nareas,
            transient,
            areas,
            slots,
        }
    }

    /// Bytes covered by the pool.
    pub fn bytes(&self) -> u64 {
        u64::from(self.nslabs) << IO_TLB_SHIFT
    }

    pub fn end(&self) -> u64 {
        self.start + self.bytes()
    }

    pub fn contains(&self, addr: u64) -> bool {
        addr >= self.start && addr < self.end()
    }

    /// Slots in use, summed over the areas.
    pub fn used(&self) -> u32 {
        self.areas.iter().map(|a| a.used).sum()
    }

    /// `wrap_area_index()`: the kernel restarts at 0 rather than taking a
    /// modulo, so a stride that overshoots the end resumes at slot 0.
    #[inline]
    fn wrap_area_index(&self, index: u32) -> u32 {
        if index >= self.area_nslabs {
            0
        } else {
            index
        }
    }

    /// `swiotlb_search_pool_area()` (kernel/dma/swiotlb.c, 6.7 text, which
    /// is the same before and after commit 55c543865b76 apart from its
    /// name): the part done under the area lock. Marks the slots allocated
    /// and updates `index`/`used` when it finds room.
    pub fn search_area(&mut self, area_index: u32, req: &SearchReq) -> AreaSearch {
        debug_assert!(area_index < self.nareas);
        let boundary_mask = req.seg_boundary_mask;
        let tbl_dma_addr = self.start & boundary_mask;
        // get_max_slots(): careful with boundary_mask == ~0.
        let max_slots = (boundary_mask >> IO_TLB_SHIFT) + 1;
        let mut iotlb_align_mask = req.min_align_mask | req.alloc_align_mask;
        let nslots64 = nr_slots(req.alloc_size);
        let offset = align_offset(req.min_align_mask, req.orig_addr);
        assert!(nslots64 > 0, "BUG_ON(!nslots)");

        // "For allocations of PAGE_SIZE or larger only look for page
        // aligned allocations."
        if req.alloc_size >= PAGE_SIZE {
            iotlb_align_mask |= PAGE_SIZE - 1;
        }
        iotlb_align_mask &= !(IO_TLB_SIZE - 1);
        // "don't bother looping to unaligned slots once we found an aligned
        // one": the stride is the alignment granularity in slots.
        let stride = ((iotlb_align_mask >> IO_TLB_SHIFT) + 1).min(u64::from(u32::MAX)) as u32;

        let area_nslabs = self.area_nslabs;
        let area = self.areas[area_index as usize];
        let mut out = AreaSearch::default();
        if nslots64 > u64::from(area_nslabs - area.used) {
            out.fast_fail = true;
            return out;
        }
        let nslots = nslots64 as u32;
        let slot_base = area_index * area_nslabs;
        let mut index = area.index;
        let mut slots_checked: u32 = 0;
        let shift = nr_slots(tbl_dma_addr);
        let mut found = None;
        while slots_checked < area_nslabs {
            let slot_index = slot_base + index;
            out.scanned += 1;
            let slot_addr = tbl_dma_addr.wrapping_add(u64::from(slot_index) << IO_TLB_SHIFT);
            if req.orig_addr != 0
                && (slot_addr & iotlb_align_mask) != (req.orig_addr & iotlb_align_mask)
            {
                index = self.wrap_area_index(index + 1);
                slots_checked += 1;
                continue;
            }
            if !is_span_boundary(u64::from(slot_index), nslots64, shift, max_slots)
                && self.slots[slot_index as usize].list >= nslots
            {
                found = Some(slot_index);
                break;
            }
            index = self.wrap_area_index(index.saturating_add(stride));
            slots_checked = slots_checked.saturating_add(stride);
        }
        let Some(slot_index) = found else {
            return out;
        };

        // found: the run gets list = 0, each slot remembers the size left
        // from it; then the free slots before it in the same segment get
        // their counts lowered (1, 2, 3, ...) going backwards.
        for i in slot_index..slot_index + nslots {
            let s = &mut self.slots[i as usize];
            s.list = 0;
            // size_t arithmetic: with a min_align_mask offset the last
            // slot's value wraps in the kernel too (only the first slot's
            // value is used, by the release and by bounces at the start).
            s.alloc_size = req
                .alloc_size
                .wrapping_sub(offset + (u64::from(i - slot_index) << IO_TLB_SHIFT));
        }
        out.written = nslots;
        let mut count = 0;
        let mut i = slot_index;
        while i > 0 {
            i -= 1;
            if io_tlb_offset(i) == IO_TLB_SEGSIZE - 1 || self.slots[i as usize].list == 0 {
                break;
            }
            count += 1;
            self.slots[i as usize].list = count;
            out.written += 1;
        }
        // "Update the indices to avoid searching in the next round."
        let a = &mut self.areas[area_index as usize];
        a.index = if index + nslots >= area_nslabs {
            0
        } else {
            index + nslots
        };
        a.used += nslots;
        out.slot = Some(slot_index);
        out
    }

    /// Record the original address of each slot of a new mapping
    /// (`swiotlb_tbl_map_single`, after `swiotlb_find_slots`).
    pub fn set_orig(&mut self, index: u32, nslots: u32, orig_addr: u64) {
        for i in 0..nslots {
            self.slots[(index + i) as usize].orig_addr =
                orig_addr.wrapping_add(u64::from(i) << IO_TLB_SHIFT);
        }
    }

    /// The slot index and slot count of the mapping at `tlb_addr`, as
    /// `swiotlb_release_slots` computes them.
    pub fn mapping_at(&self, tlb_addr: u64, min_align_mask: u64) -> (u32, u32) {
        let offset = align_offset(min_align_mask, tlb_addr);
        let index = ((tlb_addr - offset - self.start) >> IO_TLB_SHIFT) as u32;
        let nslots = nr_slots(self.slots[index as usize].alloc_size + offset) as u32;
        (index, nslots)
    }

    /// `swiotlb_release_slots()`, the part under the area lock: return the
    /// run to the free list, merging with the free run after it (same
    /// segment) and then counting up the free slots before it, backwards.
    pub fn release(&mut self, index: u32, nslots: u32) -> Release {
        let aindex = index / self.area_nslabs;
        assert!(aindex < self.nareas, "BUG_ON(aindex >= mem->nareas)");
        let seg_end = (index + 1).next_multiple_of(IO_TLB_SEGSIZE);
        let mut count = if index + nslots < seg_end.min(self.nslabs) {
            self.slots[(index + nslots) as usize].list
        } else {
            0
        };
        // Step 1: the freed slots, merged with the following free run.
        for i in (index..index + nslots).rev() {
            count += 1;
            let s = &mut self.slots[i as usize];
            s.list = count;
            s.orig_addr = INVALID_PHYS_ADDR;
            s.alloc_size = 0;
        }
        let mut written = nslots;
        // Step 2: merge with the preceding free slots (non-zero list).
        let mut i = index;
        while i > 0 {
            i -= 1;
            if io_tlb_offset(i) == IO_TLB_SEGSIZE - 1 || self.slots[i as usize].list == 0 {
                break;
            }
            count += 1;
            self.slots[i as usize].list = count;
            written += 1;
        }
        self.areas[aindex as usize].used -= nslots;
        Release {
            area: aindex,
            nslots,
            written,
        }
    }

    /// The `list` values a freshly initialised pool has.
    pub fn initial_list(nslabs: u32) -> impl Iterator<Item = u32> {
        (0..nslabs).map(move |i| (IO_TLB_SEGSIZE - io_tlb_offset(i)).min(nslabs - i))
    }

    /// Check the free-list invariant the kernel relies on: a free slot's
    /// `list` is the length of the free run from it to the end of its
    /// segment, an allocated slot's is 0; `used` matches per area. Returns
    /// a description of the first violation. Used by tests.
    pub fn check_invariants(&self, allocated: &[bool]) -> Result<(), String> {
        let n = self.nslabs as usize;
        let mut expect = vec![0u32; n];
        for i in (0..n).rev() {
            if allocated[i] {
                expect[i] = 0;
            } else {
                // A free run ends at the segment's end or the pool's end.
                let next = if io_tlb_offset(i as u32) == IO_TLB_SEGSIZE - 1 || i + 1 == n {
                    0
                } else {
                    expect[i + 1]
                };
                expect[i] = 1 + next;
            }
        }
        for (i, (slot, want)) in self.slots.iter().zip(&expect).enumerate() {
            if slot.list != *want {
                return Err(format!("slot {i}: list {} expected {want}", slot.list));
            }
        }
        for a in 0..self.nareas as usize {
            let lo = a * self.area_nslabs as usize;
            let hi = lo + self.area_nslabs as usize;
            let used = allocated[lo..hi].iter().filter(|&&b| b).count() as u32;
            if used != self.areas[a].used {
                return Err(format!(
                    "area {a}: used {} but {used} slots allocated",
                    self.areas[a].used
                ));
            }
        }
        Ok(())
    }
}
