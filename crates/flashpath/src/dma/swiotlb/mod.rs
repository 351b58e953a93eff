//! The software IO TLB (`kernel/dma/swiotlb.c`): bounce buffers for DMA the
//! device cannot do directly, or for every DMA with `swiotlb=force`.
//!
//! This is the kernel's allocator, not a cost formula. [`IoTlbMem`] is
//! `struct io_tlb_mem`: a list of [`IoTlbPool`]s, newest first (as
//! `list_add_rcu` leaves it), each split into areas with their own lock.
//! [`IoTlbMem::map`] is `swiotlb_tbl_map_single` → `swiotlb_find_slots`, in
//! either search order:
//!
//! * [`SearchOrder::PoolFirst`] — before commit 55c543865b76 (Petr Tesarik,
//!   "swiotlb: reduce area lock contention for non-primary IO TLB pools",
//!   merged for 6.8): `swiotlb_find_slots` walks the pools and, in each,
//!   `swiotlb_pool_find_slots` tries every area starting at
//!   `raw_smp_processor_id() & (pool->nareas - 1)`, wrapping.
//! * [`SearchOrder::AreaFirst`] — after it: `cpu = raw_smp_processor_id()`
//!   once; for `i` in `0..default_nareas`, `swiotlb_search_area` tries area
//!   `(cpu + i) & (pool->nareas - 1)` of every pool, skipping pools with
//!   `pool->nareas <= i`, so no area is tried twice and the CPU's own area
//!   is tried in every pool before any other area.
//!
//! When everything is full and the allocator can grow
//! (`CONFIG_SWIOTLB_DYNAMIC`), the kernel schedules the `dyn_alloc` worker
//! (a new full-size pool, added later) and allocates a *transient* pool of
//! exactly the request's size on the I/O path, freed at unmap. The model
//! reports `schedule_growth` and the simulator calls [`IoTlbMem::add_pool`]
//! after whatever delay it models for the worker.
//!
//! Time: every call takes the virtual time `now` and the CPU. Each area
//! visited takes that area's spinlock ([`AreaLock`]): if another operation
//! holds it until `T`, the caller spins until `T`; the lock's cache line
//! comes from another core when a different CPU used it last. A call is
//! resolved entirely when it is made: its lock holds are booked into the
//! future, and a later call (in call order) that needs one of those locks
//! waits behind it.
//!
//! Hot path: `map`/`unmap` allocate nothing, except the rare transient pool
//! and the optional visit trace.

mod param;
mod pool;

pub use param::{limit_nareas, ForceMode, SwiotlbConfig, SwiotlbParam};
pub use pool::{
    align_offset, nr_slots, AreaLock, AreaSearch, IoTlbArea, IoTlbPool, IoTlbSlot, Release,
    SearchReq, INVALID_PHYS_ADDR,
};

/// `IO_TLB_SHIFT`: slots are 2 KiB (include/linux/swiotlb.h).
pub const IO_TLB_SHIFT: u32 = 11;
/// `IO_TLB_SIZE`.
pub const IO_TLB_SIZE: u64 = 1 << IO_TLB_SHIFT;
/// `IO_TLB_SEGSIZE`: the most contiguous slots one mapping can take (so at
/// most 256 KiB); `list` counts never cross a segment boundary.
pub const IO_TLB_SEGSIZE: u32 = 128;
/// `IO_TLB_DEFAULT_SIZE`: 64 MiB.
pub const IO_TLB_DEFAULT_SIZE: u64 = 64 << 20;
/// `IO_TLB_MIN_SLABS`: 1 MiB worth of slots.
pub const IO_TLB_MIN_SLABS: u32 = ((1 << 20) >> IO_TLB_SHIFT) as u32;
/// 4 KiB pages (x86, arm64 default).
pub const PAGE_SIZE: u64 = 4096;
/// `MAX_ORDER` (6.7; `MAX_PAGE_ORDER` from 6.8): the largest buddy block.
pub const MAX_PAGE_ORDER: u32 = 10;
/// `SLABS_PER_PAGE << MAX_ORDER`: `swiotlb_alloc_pool` caps a dynamic pool
/// at the largest buddy allocation (4 MiB).
pub const MAX_DYN_POOL_SLABS: u32 = ((PAGE_SIZE >> IO_TLB_SHIFT) as u32) << MAX_PAGE_ORDER;

/// Where physical addresses of pools start in the model (any non-zero,
/// well-aligned value: only alignment of pool starts matters).
const PHYS_BASE: u64 = 1 << 30;

/// Which `swiotlb_find_slots` to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SearchOrder {
    /// Before 55c543865b76: all areas of a pool, then the next pool.
    PoolFirst,
    /// After 55c543865b76: one area index in all pools, then the next index.
    AreaFirst,
}

/// `enum dma_data_direction`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DmaDir {
    ToDevice,
    FromDevice,
    Bidirectional,
}

/// Costs of the allocator's steps, in ns (bandwidth in bytes/ns). Values
/// come from a host profile; this struct only names them.
#[derive(Debug, Clone, Copy, PartialEq, serde::Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct SwiotlbCosts {
    /// Fixed part of `swiotlb_tbl_map_single` (checks, offset, return).
    pub map_call: u64,
    /// Fixed part of `swiotlb_tbl_unmap_single` and its dma-direct caller.
    pub unmap_call: u64,
    /// Per area visited, outside the lock (call, area/pool arithmetic).
    pub area_visit: u64,
    /// `spin_lock_irqsave` when the lock's line is in this core's cache.
    pub lock_acquire: u64,
    /// `spin_lock_irqsave` when another core used the area last (cache
    /// line transfer of the lock, `used` and `index`).
    pub lock_acquire_remote: u64,
    /// `spin_unlock_irqrestore`.
    pub lock_release: u64,
    /// The `nslots > area_nslabs - used` check.
    pub used_check: u64,
    /// One iteration of the slot scan (alignment and `list` checks).
    pub per_slot_scan: u64,
    /// One slot entry written (`list`, `alloc_size`, `orig_addr`).
    pub per_slot_update: u64,
    /// One pool compared in the `swiotlb_find_pool` list walk.
    pub find_pool_per_pool: u64,
    /// `schedule_work(&mem->dyn_alloc)`.
    pub schedule_work: u64,
    /// Allocating a transient pool on the I/O path (kzalloc, page
    /// allocation, slot array, list insertion), excluding the memset.
    pub transient_alloc: u64,
    /// Deleting a transient pool at unmap (`swiotlb_del_pool`).
    pub transient_free: u64,
    /// memcpy/memset bandwidth for bounce copies and pool clearing.
    pub memcpy_bytes_per_ns: f64,
}

impl SwiotlbCosts {
    /// Every cost zero and copies free: the allocator's decisions alone.
    pub fn zero() -> Self {
        SwiotlbCosts {
            map_call: 0,
            unmap_call: 0,
            area_visit: 0,
            lock_acquire: 0,
            lock_acquire_remote: 0,
            lock_release: 0,
            used_check: 0,
            per_slot_scan: 0,
            per_slot_update: 0,
            find_pool_per_pool: 0,
            schedule_work: 0,
            transient_alloc: 0,
            transient_free: 0,
            memcpy_bytes_per_ns: f64::INFINITY,
        }
    }

    /// A profile's values must give a positive bandwidth.
    pub fn validate(&self) -> Result<(), String> {
        if self.memcpy_bytes_per_ns.is_nan() || self.memcpy_bytes_per_ns <= 0.0 {
            return Err(format!(
                "memcpy_bytes_per_ns must be positive, got {}",
                self.memcpy_bytes_per_ns
            ));
        }
        Ok(())
    }

    /// Time to copy `bytes` (a bounce in or out, or a memset).
    pub fn bounce_ns(&self, bytes: u64) -> u64 {
        if bytes == 0 {
            return 0;
        }
        (bytes as f64 / self.memcpy_bytes_per_ns).ceil() as u64
    }
}

/// The device's DMA constraints the allocator reads (`struct device`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceDma {
    /// `dma_get_min_align_mask()` (NVMe: 4 KiB - 1; most devices 0).
    pub min_align_mask: u64,
    /// `dma_get_seg_boundary()` (`u64::MAX` when unset).
    pub seg_boundary_mask: u64,
}

impl Default for DeviceDma {
    fn default() -> Self {
        DeviceDma {
            min_align_mask: 0,
            seg_boundary_mask: u64::MAX,
        }
    }
}

/// The paravirtual queued spinlock of a KVM guest
/// (kernel/locking/qspinlock_paravirt.h, CONFIG_PARAVIRT_SPINLOCKS with
/// KVM_FEATURE_PV_UNHALT): a waiter spins `SPIN_THRESHOLD` = 1 << 15 loop
/// iterations (arch/x86/include/asm/spinlock.h; `pv_wait_node`,
/// `pv_wait_head_or_lock`), then halts its vCPU in `pv_wait`
/// (arch/x86/kernel/kvm.c `kvm_wait`: HLT, a VM exit). The holder's unlock
/// finds the slow value and `pv_kick`s it (`kvm_kick_cpu`: the
/// KVM_HC_KICK_CPU hypercall), and the waiter runs again once KVM has woken
/// its vCPU and entered the guest. So a wait longer than the threshold
/// costs the wake-up on top of the holder's remaining time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PvSpinlock {
    /// Time of `SPIN_THRESHOLD` spin iterations (each a `cpu_relax`).
    pub spin_threshold: u64,
    /// From the holder's unlock to the halted waiter running again (kick
    /// hypercall, vCPU wake-up, VM entry).
    pub kick_wake: u64,
}

/// How the allocator is built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IoTlbMemConfig {
    /// Default pool size and areas (from `swiotlb=` and the CPU count).
    pub pool: SwiotlbConfig,
    pub order: SearchOrder,
    /// `mem->can_grow` (`CONFIG_SWIOTLB_DYNAMIC` and no remap).
    pub can_grow: bool,
    pub dev: DeviceDma,
}

/// One mapping request (`swiotlb_map(dev, paddr, size, dir, attrs)`, which
/// passes `alloc_size = mapping_size = size`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MapRequest {
    /// Physical address of the original buffer (its low bits matter for
    /// the device's `min_align_mask` and for page-size allocations).
    pub orig_addr: u64,
    pub size: u64,
    /// `alloc_align_mask` (0 for streaming mappings).
    pub alloc_align_mask: u64,
}

impl MapRequest {
    /// A streaming mapping of `size` bytes at `orig_addr`.
    pub fn new(orig_addr: u64, size: u64) -> Self {
        MapRequest {
            orig_addr,
            size,
            alloc_align_mask: 0,
        }
    }
}

/// Stable id of a pool (its slot in the allocator's arena).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PoolId(pub u32);

/// A bounce buffer address (`tlb_addr`) as the kernel hands it out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SlotAddr(pub u64);

/// Result of [`IoTlbMem::map`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MapOutcome {
    /// The bounce buffer, or `None` ("swiotlb buffer is full").
    pub slot: Option<SlotAddr>,
    /// When the map returns, the copy into the bounce buffer NOT included
    /// (add `bounce_ns(size)`); the `swiotlb_find_pool` walk of that copy
    /// is included.
    pub done_at: u64,
    pub areas_visited: u32,
    pub slots_scanned: u32,
    pub lock_spin_ns: u64,
    /// Distinct pools searched (a transient pool counts).
    pub pools_tried: u32,
    /// Pools compared by `swiotlb_find_pool` (the bounce's lookup).
    pub pools_walked: u32,
    /// The slots are in a transient pool made for this mapping.
    pub transient: bool,
    /// The search failed and the `dyn_alloc` worker was newly scheduled:
    /// the simulator should call [`IoTlbMem::add_pool`] after the worker's
    /// delay.
    pub schedule_growth: bool,
}

/// Result of [`IoTlbMem::unmap`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnmapOutcome {
    /// When the unmap returns, including the copy out of the bounce buffer
    /// (for `FromDevice`/`Bidirectional`), which the kernel does before the
    /// release and so before the area lock.
    pub done_at: u64,
    /// Time of that copy (0 for `ToDevice`), part of `done_at`.
    pub copy_ns: u64,
    /// Pools compared by all the `swiotlb_find_pool` walks of the unmap.
    pub pools_walked: u32,
    pub lock_spin_ns: u64,
    /// The mapping was in a transient pool, which is now deleted.
    pub transient_freed: bool,
}

/// Running totals for reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SwiotlbCounters {
    pub maps: u64,
    pub map_failures: u64,
    pub unmaps: u64,
    /// Areas visited, summed over maps.
    pub areas_visited: u64,
    /// Most areas visited by one map.
    pub areas_visited_max: u32,
    /// Maps by areas visited: index n for n visits, the last for 8 or more.
    pub areas_visited_hist: [u64; 9],
    pub slots_scanned: u64,
    pub lock_acquires: u64,
    /// Acquires whose lock line came from another core.
    pub remote_acquires: u64,
    /// Acquires that had to spin.
    pub lock_spins: u64,
    pub lock_spin_ns: u64,
    /// The longest single wait for a held lock (before any halt's wake-up
    /// is added): what a paravirtual spinlock's waiter compares with its
    /// spin threshold.
    pub lock_spin_max_ns: u64,
    /// Waits that outlasted the paravirtual spin threshold: the waiter
    /// halted and was kicked ([`PvSpinlock`]); 0 on a native spinlock.
    pub pv_halts: u64,
    /// Area locks whose holder's vCPU lost its physical CPU while holding
    /// them ([`IoTlbMem::preempt_holder`]).
    pub holder_preemptions: u64,
    /// Distinct pools searched, summed over maps.
    pub pools_tried: u64,
    pub find_pool_calls: u64,
    pub pools_walked: u64,
    pub transient_allocs: u64,
    /// Transient pools allocated whose search still failed.
    pub transient_failures: u64,
    pub transient_frees: u64,
    /// Most transient pools alive at once.
    pub transient_live_max: u64,
    pub growth_scheduled: u64,
    pub pools_added: u64,
    /// Slots in use now (`mem->total_used`).
    pub used_slots: u64,
    /// `io_tlb_used_hiwater`.
    pub used_hiwater: u64,
}

/// One area visit, for the optional trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AreaVisit {
    pub pool: PoolId,
    pub area: u32,
    pub found: bool,
}

/// The order in which `swiotlb_find_slots` tries (pool list position,
/// area), without allocating: the caller supplies each pool's `nareas` by
/// list position.
#[derive(Debug, Clone)]
pub struct SearchIter {
    order: SearchOrder,
    cpu: u32,
    default_nareas: u32,
    npools: usize,
    /// PoolFirst: current pool; AreaFirst: pool position in this sweep.
    pos: usize,
    /// PoolFirst: areas done in this pool; AreaFirst: `i` (cpu offset).
    step: u32,
}

impl SearchIter {
    pub fn new(order: SearchOrder, cpu: u32, default_nareas: u32, npools: usize) -> Self {
        SearchIter {
            order,
            cpu,
            default_nareas,
            npools,
            pos: 0,
            step: 0,
        }
    }

    /// Next (list position, area index), given each pool's `nareas`.
    pub fn next_with(&mut self, nareas_at: impl Fn(usize) -> u32) -> Option<(usize, u32)> {
        match self.order {
            SearchOrder::PoolFirst => loop {
                // swiotlb_pool_find_slots(): start = cpu & (nareas - 1),
                // then i++, wrapping to 0, until back at start.
                if self.pos >= self.npools {
                    return None;
                }
                let n = nareas_at(self.pos);
                if self.step < n {
                    let start = self.cpu & (n - 1);
                    let area = (start + self.step) & (n - 1);
                    self.step += 1;
                    return Some((self.pos, area));
                }
                self.pos += 1;
                self.step = 0;
            },
            SearchOrder::AreaFirst => loop {
                // swiotlb_find_slots(): for (i = 0; i < default_nareas; ++i)
                // swiotlb_search_area(dev, cpu, i, ...), which walks the
                // pool list and skips `cpu_offset >= pool->nareas`.
                if self.step >= self.default_nareas {
                    return None;
                }
                if self.pos >= self.npools {
                    self.step += 1;
                    self.pos = 0;
                    continue;
                }
                let n = nareas_at(self.pos);
                let pos = self.pos;
                self.pos += 1;
                if self.step >= n {
                    continue;
                }
                let area = self.cpu.wrapping_add(self.step) & (n - 1);
                return Some((pos, area));
            },
        }
    }
}

/// The whole visit sequence for pools with the given area counts (list
/// order, newest first). For tests and documentation; allocates.
pub fn search_sequence(
    order: SearchOrder,
    cpu: u32,
    default_nareas: u32,
    pool_nareas: &[u32],
) -> Vec<(usize, u32)> {
    let mut it = SearchIter::new(order, cpu, default_nareas, pool_nareas.len());
    let mut out = Vec::new();
    while let Some(v) = it.next_with(|p| pool_nareas[p]) {
        out.push(v);
    }
    out
}

/// `struct io_tlb_mem` plus the device's transient pool list
/// (`dev->dma_io_tlb_pools`): the allocator one device maps through.
#[derive(Debug, Clone)]
pub struct IoTlbMem {
    cfg: IoTlbMemConfig,
    costs: SwiotlbCosts,
    arena: Vec<Option<IoTlbPool>>,
    free_ids: Vec<u32>,
    /// `mem->pools`, newest first.
    pools: Vec<u32>,
    /// `dev->dma_io_tlb_pools` (transient pools), newest first.
    dev_pools: Vec<u32>,
    next_phys: u64,
    /// `dyn_alloc` is queued and has not added its pool yet.
    growth_pending: bool,
    counters: SwiotlbCounters,
    trace: Option<Vec<AreaVisit>>,
    /// The area locks are paravirtual spinlocks (a KVM guest); `None`:
    /// native queued spinlocks, which only spin.
    pv: Option<PvSpinlock>,
}

impl IoTlbMem {
    /// Boot: the default pool (`swiotlb_init_remap`), with
    /// `limit_nareas(default_nareas, nslabs)` areas.
    pub fn new(cfg: IoTlbMemConfig, costs: SwiotlbCosts) -> Self {
        let mut mem = IoTlbMem {
            cfg,
            costs,
            arena: Vec::new(),
            free_ids: Vec::new(),
            pools: Vec::new(),
            dev_pools: Vec::new(),
            next_phys: PHYS_BASE,
            growth_pending: false,
            counters: SwiotlbCounters::default(),
            trace: None,
            pv: None,
        };
        let nslabs = cfg.pool.nslabs;
        let nareas = limit_nareas(cfg.pool.nareas, nslabs).max(1);
        mem.add_pool_with(nslabs, nareas);
        mem.counters.pools_added = 0;
        mem
    }

    /// Make the area locks paravirtual spinlocks (a KVM guest kernel).
    pub fn set_pv_spinlock(&mut self, pv: PvSpinlock) {
        self.pv = Some(pv);
    }

    pub fn pv_spinlock(&self) -> Option<PvSpinlock> {
        self.pv
    }

    pub fn config(&self) -> &IoTlbMemConfig {
        &self.cfg
    }

    pub fn costs(&self) -> &SwiotlbCosts {
        &self.costs
    }

    pub fn counters(&self) -> &SwiotlbCounters {
        &self.counters
    }

    /// `mem->pools` in list order (newest first).
    pub fn pool_ids(&self) -> impl Iterator<Item = PoolId> + '_ {
        self.pools.iter().map(|&i| PoolId(i))
    }

    /// `mem->nslabs`, what debugfs shows as `io_tlb_nslabs`: the slots of
    /// the default pool and of every pool the `dyn_alloc` worker added
    /// (`add_mem_pool` adds to it); transient pools are not counted (they
    /// go on the device's list, not through `add_mem_pool`).
    pub fn io_tlb_nslabs(&self) -> u64 {
        self.pools
            .iter()
            .map(|&id| u64::from(self.pool_ref(id).nslabs))
            .sum()
    }

    /// Live transient pools, newest first.
    pub fn transient_ids(&self) -> impl Iterator<Item = PoolId> + '_ {
        self.dev_pools.iter().map(|&i| PoolId(i))
    }

    pub fn pool(&self, id: PoolId) -> Option<&IoTlbPool> {
        self.arena.get(id.0 as usize).and_then(|p| p.as_ref())
    }

    /// Whether the `dyn_alloc` worker is queued.
    pub fn growth_pending(&self) -> bool {
        self.growth_pending
    }

    /// Record every area visit from now on (tests, debugging).
    pub fn enable_trace(&mut self) {
        self.trace = Some(Vec::new());
    }

    /// The visits recorded since the last call.
    pub fn take_trace(&mut self) -> Vec<AreaVisit> {
        self.trace.as_mut().map(std::mem::take).unwrap_or_default()
    }

    fn pool_ref(&self, id: u32) -> &IoTlbPool {
        self.arena[id as usize].as_ref().expect("live pool")
    }

    fn pool_mut(&mut self, id: u32) -> &mut IoTlbPool {
        self.arena[id as usize].as_mut().expect("live pool")
    }

    /// Place a new pool's memory: buddy allocations are naturally aligned
    /// to their (power-of-two) size, which the alignment rules of the
    /// search see through the pool's start address.
    fn alloc_phys(&mut self, bytes: u64) -> u64 {
        let align = bytes.next_power_of_two().max(PAGE_SIZE);
        let start = self.next_phys.next_multiple_of(align);
        self.next_phys = start + bytes;
        start
    }

    fn new_pool(&mut self, nslabs: u32, nareas: u32, transient: bool) -> u32 {
        let start = self.alloc_phys(u64::from(nslabs) << IO_TLB_SHIFT);
        let pool = IoTlbPool::new(start, nslabs, nareas, transient);
        match self.free_ids.pop() {
            Some(id) => {
                self.arena[id as usize] = Some(pool);
                id
            }
            None => {
                self.arena.push(Some(pool));
                (self.arena.len() - 1) as u32
            }
        }
    }

    /// Add a pool of `nslabs` slots and `nareas` areas at the head of the
    /// list (`add_mem_pool` → `list_add_rcu`).
    pub fn add_pool_with(&mut self, nslabs: u32, nareas: u32) -> PoolId {
        let id = self.new_pool(nslabs, nareas, false);
        self.pools.insert(0, id);
        self.counters.pools_added += 1;
        PoolId(id)
    }

    /// The `dyn_alloc` worker's pool (`swiotlb_dyn_alloc` →
    /// `swiotlb_alloc_pool(NULL, IO_TLB_MIN_SLABS, default_nslabs,
    /// default_nareas, ...)`): capped at the largest buddy block, areas
    /// limited to whole segments. Clears the pending flag, so a later
    /// failure schedules the worker again.
    pub fn add_pool(&mut self) -> PoolId {
        let nslabs = self.cfg.pool.nslabs.min(MAX_DYN_POOL_SLABS);
        let nareas = limit_nareas(self.cfg.pool.nareas, nslabs).max(1);
        self.growth_pending = false;
        self.add_pool_with(nslabs, nareas)
    }

    /// The vCPU `cpu` lost its physical CPU to a host thread from `from`
    /// for `len` (a preempted lock holder): a hold of `cpu`'s that is in
    /// progress at `from` ends `len` later, and a waiter behind it spins
    /// (or, on a paravirtual spinlock, halts) that much longer. Holds the
    /// vCPU booked to start later are left where they are (an
    /// approximation: its later work moves back on the core, not in the
    /// locks already booked). Returns the holds extended.
    pub fn preempt_holder(&mut self, cpu: u32, from: u64, len: u64) -> u64 {
        let mut extended = 0;
        for i in 0..self.pools.len() + self.dev_pools.len() {
            let id = if i < self.pools.len() {
                self.pools[i]
            } else {
                self.dev_pools[i - self.pools.len()]
            };
            for area in self.pool_mut(id).areas.iter_mut() {
                let l = &mut area.lock;
                if l.last_cpu == cpu && l.held_from <= from && l.held_until > from {
                    l.held_until += len;
                    extended += 1;
                }
            }
        }
        self.counters.holder_preemptions += extended;
        extended
    }

    /// `swiotlb_find_pool`: walk `mem->pools`, then the device's transient
    /// pools. Returns the pool and how many pools were compared.
    pub fn find_pool(&self, addr: u64) -> (Option<PoolId>, u32) {
        let mut walked = 0;
        for &id in self.pools.iter().chain(self.dev_pools.iter()) {
            walked += 1;
            if self.pool_ref(id).contains(addr) {
                return (Some(PoolId(id)), walked);
            }
        }
        (None, walked)
    }

    /// One `swiotlb_find_pool` on the I/O path: counted and timed.
    fn walk(&mut self, t: &mut u64, addr: u64) -> (u32, u32) {
        let (id, walked) = self.find_pool(addr);
        let id = id.unwrap_or_else(|| panic!("swiotlb: {addr:#x} is not in any pool"));
        self.counters.find_pool_calls += 1;
        self.counters.pools_walked += u64::from(walked);
        *t += u64::from(walked) * self.costs.find_pool_per_pool;
        (id.0, walked)
    }

    /// Take an area's lock at `*t`: spin while it is held (a paravirtual
    /// lock's waiter halts past its threshold and wakes `kick_wake` after
    /// the release), pay the acquire (remote if another core used it
    /// last). Returns the wait and when the lock was taken.
    fn lock_area(&mut self, t: &mut u64, cpu: u32, pool: u32, area: u32) -> (u64, u64) {
        let costs = self.costs;
        let lock = self.pool_ref(pool).areas[area as usize].lock;
        let mut spin = 0;
        if lock.held_from <= *t && lock.held_until > *t {
            spin = lock.held_until - *t;
            self.counters.lock_spin_max_ns = self.counters.lock_spin_max_ns.max(spin);
            // A wait on this CPU's own hold is an interrupt held off by
            // spin_lock_irqsave, not a waiter: it never halts.
            if let Some(pv) = self.pv.filter(|_| lock.last_cpu != cpu) {
                if spin > pv.spin_threshold {
                    spin += pv.kick_wake;
                    self.counters.pv_halts += 1;
                }
            }
            *t += spin;
            self.counters.lock_spins += 1;
            self.counters.lock_spin_ns += spin;
        }
        let taken = *t;
        self.counters.lock_acquires += 1;
        if lock.last_cpu != cpu && lock.last_cpu != u32::MAX {
            self.counters.remote_acquires += 1;
            *t += costs.lock_acquire_remote;
        } else {
            *t += costs.lock_acquire;
        }
        (spin, taken)
    }

    /// Release the lock taken at `from`. A hold already booked to end
    /// later (by a core running ahead of this one) stays the lock's state:
    /// it is the later use of the lock and its cache line.
    fn unlock_area(&mut self, from: u64, t: u64, cpu: u32, pool: u32, area: u32) {
        let lock = &mut self.pool_mut(pool).areas[area as usize].lock;
        if lock.held_until > t {
            return;
        }
        *lock = AreaLock {
            held_from: from,
            held_until: t,
            last_cpu: cpu,
        };
    }

    /// One `swiotlb_search_pool_area` call in time.
    fn visit(
        &mut self,
        t: &mut u64,
        cpu: u32,
        pool: u32,
        area: u32,
        req: &SearchReq,
        out: &mut MapOutcome,
    ) -> Option<u32> {
        let costs = self.costs;
        *t += costs.area_visit;
        let (spin, taken) = self.lock_area(t, cpu, pool, area);
        out.lock_spin_ns += spin;
        let res = self.pool_mut(pool).search_area(area, req);
        *t += costs.used_check
            + u64::from(res.scanned) * costs.per_slot_scan
            + u64::from(res.written) * costs.per_slot_update
            + costs.lock_release;
        self.unlock_area(taken, *t, cpu, pool, area);
        out.areas_visited += 1;
        out.slots_scanned += res.scanned;
        if let Some(trace) = self.trace.as_mut() {
            trace.push(AreaVisit {
                pool: PoolId(pool),
                area,
                found: res.slot.is_some(),
            });
        }
        res.slot
    }

    /// `swiotlb_map` → `swiotlb_tbl_map_single`: find slots (in the
    /// configured order; transient pool and growth when full), record the
    /// original address, and look the pool up again for the bounce
    /// (`swiotlb_bounce` → `swiotlb_find_pool`). The copy itself is the
    /// caller's: `costs().bounce_ns(size)` after `done_at`.
    pub fn map(&mut self, now: u64, cpu: u32, req: MapRequest) -> MapOutcome {
        let costs = self.costs;
        let dev = self.cfg.dev;
        let offset = align_offset(dev.min_align_mask, req.orig_addr);
        let sreq = SearchReq {
            orig_addr: req.orig_addr,
            alloc_size: req.size + offset,
            min_align_mask: dev.min_align_mask,
            alloc_align_mask: req.alloc_align_mask,
            seg_boundary_mask: dev.seg_boundary_mask,
        };
        let mut out = MapOutcome {
            slot: None,
            done_at: now,
            areas_visited: 0,
            slots_scanned: 0,
            lock_spin_ns: 0,
            pools_tried: 0,
            pools_walked: 0,
            transient: false,
            schedule_growth: false,
        };
        let mut t = now + costs.map_call;
        self.counters.maps += 1;

        let mut it = SearchIter::new(self.cfg.order, cpu, self.cfg.pool.nareas, self.pools.len());
        let mut found = None;
        let mut max_pos = None;
        while let Some((pos, area)) = {
            let (arena, pools) = (&self.arena, &self.pools);
            it.next_with(|p| arena[pools[p] as usize].as_ref().expect("live pool").nareas)
        } {
            max_pos = Some(max_pos.map_or(pos, |m: usize| m.max(pos)));
            let pool = self.pools[pos];
            if let Some(idx) = self.visit(&mut t, cpu, pool, area, &sreq, &mut out) {
                found = Some((pool, idx));
                break;
            }
        }
        out.pools_tried = max_pos.map_or(0, |m| m as u32 + 1);

        if found.is_none() && self.cfg.can_grow {
            // swiotlb_find_slots(), CONFIG_SWIOTLB_DYNAMIC: queue the
            // worker (a no-op when already queued), then a transient pool
            // of exactly nr_slots(alloc_size) slots and one area.
            t += costs.schedule_work;
            if !self.growth_pending {
                self.growth_pending = true;
                out.schedule_growth = true;
                self.counters.growth_scheduled += 1;
            }
            let nslabs = nr_slots(sreq.alloc_size) as u32;
            let pool = self.new_pool(nslabs, 1, true);
            // swiotlb_init_io_tlb_pool() clears the buffer.
            t += costs.transient_alloc + costs.bounce_ns(u64::from(nslabs) << IO_TLB_SHIFT);
            self.counters.transient_allocs += 1;
            out.pools_tried += 1;
            match self.visit(&mut t, cpu, pool, 0, &sreq, &mut out) {
                Some(idx) => {
                    self.dev_pools.insert(0, pool);
                    self.counters.transient_live_max = self
                        .counters
                        .transient_live_max
                        .max(self.dev_pools.len() as u64);
                    out.transient = true;
                    found = Some((pool, idx));
                }
                None => {
                    // swiotlb_dyn_free(): the pool goes straight back.
                    self.arena[pool as usize] = None;
                    self.free_ids.push(pool);
                    self.counters.transient_failures += 1;
                }
            }
        }

        self.counters.areas_visited += u64::from(out.areas_visited);
        self.counters.areas_visited_max = self.counters.areas_visited_max.max(out.areas_visited);
        self.counters.areas_visited_hist[(out.areas_visited as usize).min(8)] += 1;
        self.counters.slots_scanned += u64::from(out.slots_scanned);
        self.counters.pools_tried += u64::from(out.pools_tried);

        let Some((pool, idx)) = found else {
            self.counters.map_failures += 1;
            out.done_at = t;
            return out;
        };
        let nslots = nr_slots(sreq.alloc_size) as u32;
        self.counters.used_slots += u64::from(nslots);
        self.counters.used_hiwater = self.counters.used_hiwater.max(self.counters.used_slots);
        // Save the original address of every slot (outside the lock).
        self.pool_mut(pool).set_orig(idx, nslots, req.orig_addr);
        t += u64::from(nslots) * costs.per_slot_update;
        let tlb_addr = self.pool_ref(pool).start + (u64::from(idx) << IO_TLB_SHIFT) + offset;
        // swiotlb_bounce(dev, tlb_addr, mapping_size, DMA_TO_DEVICE): done
        // for every direction (preserves unwritten bytes); its lookup here.
        let (_, walked) = self.walk(&mut t, tlb_addr);
        out.pools_walked = walked;
        out.slot = Some(SlotAddr(tlb_addr));
        out.done_at = t;
        out
    }

    /// `dma_direct_unmap_page` for a bounced buffer on a cache-coherent
    /// device, without `DMA_ATTR_SKIP_CPU_SYNC` (kernel/dma/direct.h):
    /// `dma_direct_sync_single_for_cpu` (`is_swiotlb_buffer` lookup, then
    /// for FromDevice/Bidirectional `swiotlb_sync_single_for_cpu` →
    /// `swiotlb_bounce`: lookup and copy out), `is_swiotlb_buffer` again,
    /// then `swiotlb_tbl_unmap_single`: `swiotlb_del_transient` (lookup;
    /// a transient pool is deleted and that is all) or
    /// `swiotlb_release_slots` (lookup, then the release under the area
    /// lock). Each lookup is a `swiotlb_find_pool` list walk.
    ///
    /// # Panics
    /// If `addr` is not a live mapping of this allocator (a simulator bug).
    pub fn unmap(&mut self, now: u64, cpu: u32, addr: SlotAddr, dir: DmaDir) -> UnmapOutcome {
        let costs = self.costs;
        let min_align_mask = self.cfg.dev.min_align_mask;
        let mut t = now + costs.unmap_call;
        let mut out = UnmapOutcome {
            done_at: now,
            copy_ns: 0,
            pools_walked: 0,
            lock_spin_ns: 0,
            transient_freed: false,
        };
        self.counters.unmaps += 1;
        let a = addr.0;

        // dma_direct_sync_single_for_cpu(): is_swiotlb_buffer().
        let (pool, w) = self.walk(&mut t, a);
        out.pools_walked += w;
        let (index, nslots) = self.pool_ref(pool).mapping_at(a, min_align_mask);
        let first = self.pool_ref(pool).slots[index as usize];
        assert!(
            first.list == 0 && first.orig_addr != INVALID_PHYS_ADDR,
            "swiotlb: unmap of {a:#x}, which is not mapped"
        );
        if dir != DmaDir::ToDevice {
            // swiotlb_bounce(..., DMA_FROM_DEVICE): lookup, then the copy.
            let (_, w) = self.walk(&mut t, a);
            out.pools_walked += w;
            // The first slot's alloc_size is the mapping size (swiotlb_map
            // passes alloc_size = mapping_size).
            out.copy_ns = costs.bounce_ns(first.alloc_size);
            t += out.copy_ns;
        }
        // dma_direct_unmap_page(): is_swiotlb_buffer().
        let (_, w) = self.walk(&mut t, a);
        out.pools_walked += w;
        // swiotlb_del_transient().
        let (_, w) = self.walk(&mut t, a);
        out.pools_walked += w;
        if self.pool_ref(pool).transient {
            // dec_used(mem, pool->nslabs); swiotlb_del_pool() under
            // dev->dma_io_tlb_lock, the memory freed after an RCU grace
            // period (off the I/O path).
            let nslabs = self.pool_ref(pool).nslabs;
            self.counters.used_slots = self.counters.used_slots.saturating_sub(u64::from(nslabs));
            self.dev_pools.retain(|&p| p != pool);
            self.arena[pool as usize] = None;
            self.free_ids.push(pool);
            self.counters.transient_frees += 1;
            t += costs.transient_free;
            out.transient_freed = true;
            out.done_at = t;
            return out;
        }
        // swiotlb_release_slots(): lookup, lock, merge, unlock.
        let (_, w) = self.walk(&mut t, a);
        out.pools_walked += w;
        let area = index / self.pool_ref(pool).area_nslabs;
        let (spin, taken) = self.lock_area(&mut t, cpu, pool, area);
        out.lock_spin_ns = spin;
        let rel = self.pool_mut(pool).release(index, nslots);
        t += u64::from(rel.written) * costs.per_slot_update + costs.lock_release;
        self.unlock_area(taken, t, cpu, pool, area);
        self.counters.used_slots = self.counters.used_slots.saturating_sub(u64::from(nslots));
        out.done_at = t;
        out
    }
}

#[cfg(test)]
mod tests;
