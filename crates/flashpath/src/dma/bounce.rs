//! swiotlb on the I/O path: `dma_map_sg` in the driver's `queue_rq` on the
//! submitting CPU (slot search under the area locks, then the copy into the
//! bounce buffer, which the kernel does for every direction), and
//! `dma_unmap_sg` on the CPU that handles the completion (the copy back for
//! reads, then the release under the area lock), before the waiter wakes.
//!
//! A request is not one mapping: `blk_rq_map_sg` makes a scatterlist entry
//! per physically contiguous piece of its buffer, and the DMA API maps each
//! entry on its own (`dma_direct_map_sg` -> `swiotlb_map` per entry,
//! kernel/dma/direct.c). A driver may add mappings of its own: virtio-blk
//! puts the request header and the status byte in their own entries and,
//! with indirect descriptors, maps the descriptor table too
//! ([`RingMaps::VirtioIndirect`]).
//!
//! The allocator ([`IoTlbMem`]) books its own lock holds and spins; this
//! wrapper places each call on a core (a call starts when the core is free)
//! and runs the `dyn_alloc` worker: when a map schedules growth, the new
//! pool is added `grow_delay` later (applied before the first allocator
//! call at or after that time; only allocator calls can see the pool list,
//! so this is exact).

use super::swiotlb::{
    DmaDir, ForceMode, IoTlbMem, IoTlbMemConfig, MapRequest, PvSpinlock, SearchOrder, SlotAddr,
    SwiotlbCosts, SwiotlbParam,
};
use crate::error::{InputError, Result};
use crate::host::task::Host;
use crate::mm::thp::segments;
use crate::profile::limits::{COST, DELAY, RATE};
use crate::profile::Profile;
use crate::sim::Ns;
use crate::types::Ddir;

/// Where the model places the original (user) buffer of request `key`:
/// page-aligned and distinct per request (fio's buffers are page-aligned).
fn orig_addr(key: u32) -> u64 {
    (1u64 << 40) + (u64::from(key) << 24)
}

/// Where the driver's per-request data lives (virtio-blk's `virtblk_req`
/// in the request's PDU, its indirect table from kmalloc): only the low
/// bits could matter, and virtio has no `min_align_mask`.
fn driver_addr(key: u32, what: u64) -> u64 {
    (2u64 << 40) + (u64::from(key) << 12) + what * 64
}

/// The mappings a driver adds around a request's data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RingMaps {
    /// None: the data's scatterlist only (SCSI, MMC: their command
    /// descriptors live in coherent memory, which swiotlb does not bounce).
    DataOnly,
    /// virtio-blk through `virtqueue_add_split` (drivers/block/virtio_blk.c
    /// `virtblk_add_req`, drivers/virtio/virtio_ring.c): the 16-byte
    /// `virtio_blk_outhdr` (to the device), the data entries, the 1-byte
    /// status (from the device), each mapped by `vring_map_one_sg`; then,
    /// with VIRTIO_RING_F_INDIRECT_DESC (QEMU's default) and more than one
    /// entry, the indirect table of 16 bytes per entry (`vring_map_single`,
    /// to the device). `detach_buf_split` unmaps the table first, then the
    /// entries in order.
    VirtioIndirect,
}

/// `sizeof(struct virtio_blk_outhdr)` (include/uapi/linux/virtio_blk.h).
const VIRTIO_BLK_OUTHDR_BYTES: u64 = 16;
/// The status byte (`virtblk_req.in_hdr.status`, `in_hdr_len` 1 without
/// zoned commands).
const VIRTIO_BLK_STATUS_BYTES: u64 = 1;
/// `sizeof(struct vring_desc)` (include/uapi/linux/virtio_ring.h).
const VRING_DESC_BYTES: u64 = 16;

/// swiotlb bouncing for one device, with its own time accounting.
pub struct SwiotlbPath {
    mem: IoTlbMem,
    grow_delay: Ns,
    /// When the queued `dyn_alloc` worker adds its pool.
    grow_at: Option<Ns>,
    ring: RingMaps,
    /// The live mappings of each request (by slab key), in unmap order.
    /// The vectors keep their capacity: no allocation once warm.
    maps: Vec<Vec<(SlotAddr, DmaDir)>>,
    /// CPU time of maps (search, locks, spins) and unmaps (lookups, locks,
    /// release), and of the copies in and out.
    pub map_ns: u64,
    pub unmap_ns: u64,
    pub copy_in_ns: u64,
    pub copy_out_ns: u64,
    /// Maps per CPU (`raw_smp_processor_id()` of each `swiotlb_find_slots`).
    maps_by_cpu: Vec<u64>,
}

crate::choice_enum! {
    /// `dma.swiotlb.search`: which loop of `swiotlb_find_slots` is outer.
    pub enum SearchName {
        /// Before 55c543865b76: all areas of a pool, then the next pool.
        PoolFirst = "pool-first",
        /// After 55c543865b76: one area index in all pools, then the next.
        AreaFirst = "area-first",
    }
}

crate::params! {
    /// swiotlb (`dma.swiotlb.*`), read when `dma.swiotlb.boot_param` is
    /// given; a profile without it maps DMA directly.
    pub struct SwiotlbParams {
        /// The kernel's `swiotlb=` boot parameter (kernel/dma/swiotlb.c
        /// setup_io_tlb_npages): slabs, areas, `force`; only `force` bounces
        /// here (the simulated devices address all memory).
        boot_param: String = required text("dma.swiotlb.boot_param"),
        /// The order `swiotlb_find_slots` searches pools and areas (the
        /// kernel's commit 55c543865b76 changed it).
        search: SearchName = required choice("dma.swiotlb.search", SearchName),
        /// CONFIG_SWIOTLB_DYNAMIC: a full pool grows by a worker; only true
        /// is simulated.
        dynamic: bool = required flag("dma.swiotlb.dynamic"),
        /// From `schedule_work(&mem->dyn_alloc)` to the worker's new pool.
        grow_delay: Ns = required ns("dma.swiotlb.grow_delay", DELAY),
        /// Fixed part of `swiotlb_tbl_map_single` (checks, offset, return).
        map_call: Ns = required ns("dma.swiotlb.cost.map_call", COST),
        /// Fixed part of `swiotlb_tbl_unmap_single` and its dma-direct
        /// caller.
        unmap_call: Ns = required ns("dma.swiotlb.cost.unmap_call", COST),
        /// Per area visited, outside the lock (call, area/pool arithmetic).
        area_visit: Ns = required ns("dma.swiotlb.cost.area_visit", COST),
        /// `spin_lock_irqsave` when the lock's line is in this core's cache.
        lock_acquire: Ns = required ns("dma.swiotlb.cost.lock_acquire", COST),
        /// `spin_lock_irqsave` when another core used the area last (cache
        /// line transfer of the lock, `used` and `index`).
        lock_acquire_remote: Ns = required ns("dma.swiotlb.cost.lock_acquire_remote", COST),
        /// `spin_unlock_irqrestore`.
        lock_release: Ns = required ns("dma.swiotlb.cost.lock_release", COST),
        /// The `nslots > area_nslabs - used` check.
        used_check: Ns = required ns("dma.swiotlb.cost.used_check", COST),
        /// One iteration of the slot scan (alignment and `list` checks).
        per_slot_scan: Ns = required ns("dma.swiotlb.cost.per_slot_scan", COST),
        /// One slot entry written (`list`, `alloc_size`, `orig_addr`).
        per_slot_update: Ns = required ns("dma.swiotlb.cost.per_slot_update", COST),
        /// One pool compared in the `swiotlb_find_pool` list walk.
        find_pool_per_pool: Ns = required ns("dma.swiotlb.cost.find_pool_per_pool", COST),
        /// `schedule_work(&mem->dyn_alloc)`.
        schedule_work: Ns = required ns("dma.swiotlb.cost.schedule_work", COST),
        /// Allocating a transient pool on the I/O path (kzalloc, page
        /// allocation, slot array, list insertion), excluding the memset.
        transient_alloc: Ns = required ns("dma.swiotlb.cost.transient_alloc", COST),
        /// Deleting a transient pool at unmap (`swiotlb_del_pool`).
        transient_free: Ns = required ns("dma.swiotlb.cost.transient_free", COST),
        /// memcpy/memset bandwidth for bounce copies and pool clearing.
        memcpy: f64 = required rate("dma.swiotlb.cost.memcpy", RATE),
    }
}

crate::params! {
    /// A guest's paravirtual spinlocks (`host.pv_spinlock.*`): both keys
    /// or neither (native spinlocks).
    pub struct PvSpinlockParams {
        /// Time of `SPIN_THRESHOLD` spin iterations (each a `cpu_relax`)
        /// before a waiter halts (kernel/locking/qspinlock_paravirt.h).
        spin_threshold: Ns = required ns("host.pv_spinlock.spin_threshold", DELAY),
        /// From the holder's unlock to the halted waiter running again (kick
        /// hypercall, vCPU wake-up, VM entry).
        kick_wake: Ns = required ns("host.pv_spinlock.kick_wake", COST),
    }
}

/// A request's data as its mapping sees it: its direction, `len` bytes in
/// pieces of at most `contiguous` physically contiguous bytes.
#[derive(Clone, Copy, Debug)]
pub struct RqData {
    pub ddir: Ddir,
    pub len: u64,
    pub contiguous: u64,
}

impl SwiotlbPath {
    /// The profile's `dma.swiotlb.*`; `None` when the profile has no
    /// swiotlb section or the boot parameter does not force bouncing (the
    /// simulated devices address all memory, so only `force` bounces).
    /// `virtio_ring`: the driver maps virtio-blk's ring entries too.
    pub fn from_profile(p: &Profile, ncpus: u32, virtio_ring: bool) -> Result<Option<SwiotlbPath>> {
        if !p.has("dma.swiotlb.boot_param") {
            return Ok(None);
        }
        let sp = SwiotlbParams::read(p)?;
        let file = p.file_of("dma.swiotlb.boot_param");
        // The boot parameter's own message, named by where the value came from.
        let param = SwiotlbParam::parse(&sp.boot_param).map_err(|e| {
            InputError::new(
                file.clone(),
                None,
                format!("parameter 'dma.swiotlb.boot_param': {}", e.message),
            )
        })?;
        let order = match sp.search {
            SearchName::PoolFirst => SearchOrder::PoolFirst,
            SearchName::AreaFirst => SearchOrder::AreaFirst,
        };
        let can_grow = sp.dynamic;
        let grow_delay = sp.grow_delay;
        let costs = SwiotlbCosts {
            map_call: sp.map_call,
            unmap_call: sp.unmap_call,
            area_visit: sp.area_visit,
            lock_acquire: sp.lock_acquire,
            lock_acquire_remote: sp.lock_acquire_remote,
            lock_release: sp.lock_release,
            used_check: sp.used_check,
            per_slot_scan: sp.per_slot_scan,
            per_slot_update: sp.per_slot_update,
            find_pool_per_pool: sp.find_pool_per_pool,
            schedule_work: sp.schedule_work,
            transient_alloc: sp.transient_alloc,
            transient_free: sp.transient_free,
            memcpy_bytes_per_ns: sp.memcpy / 1e9,
        };
        costs
            .validate()
            .map_err(|m| InputError::new(file.clone(), None, format!("dma.swiotlb.cost: {m}")))?;
        let pv = Self::pv_spinlock(p)?;
        let pool = param.resolve(ncpus);
        if pool.force != ForceMode::Force {
            return Ok(None);
        }
        if !can_grow {
            return Err(InputError::new(
                p.file_of("dma.swiotlb.dynamic"),
                None,
                "dma.swiotlb.dynamic = false is not simulated: a full pool would fail the \
                 mapping and the driver would requeue the request, which flashpath does not \
                 model; set it to true (CONFIG_SWIOTLB_DYNAMIC)",
            ));
        }
        let mut path = SwiotlbPath::new(
            IoTlbMemConfig {
                pool,
                order,
                can_grow,
                dev: Default::default(),
            },
            costs,
            grow_delay,
        );
        if let Some(pv) = pv {
            path.mem.set_pv_spinlock(pv);
        }
        path.maps_by_cpu = vec![0; ncpus as usize];
        if virtio_ring {
            path.ring = RingMaps::VirtioIndirect;
        }
        Ok(Some(path))
    }

    /// `host.pv_spinlock.*`: the guest kernel's spinlocks are paravirtual
    /// (both keys) or native (neither).
    fn pv_spinlock(p: &Profile) -> Result<Option<PvSpinlock>> {
        const T: &str = "host.pv_spinlock.spin_threshold";
        const K: &str = "host.pv_spinlock.kick_wake";
        match (p.has(T), p.has(K)) {
            (false, false) => Ok(None),
            (true, true) => {
                let pv = PvSpinlockParams::read(p)?;
                Ok(Some(PvSpinlock {
                    spin_threshold: pv.spin_threshold,
                    kick_wake: pv.kick_wake,
                }))
            }
            (has_t, _) => {
                let (set, missing) = if has_t { (T, K) } else { (K, T) };
                Err(InputError::new(
                    p.file_of(set),
                    None,
                    format!(
                        "parameter '{set}' needs '{missing}' too: a paravirtual spinlock \
                         has a spin threshold and a wake-up"
                    ),
                ))
            }
        }
    }

    pub fn new(cfg: IoTlbMemConfig, costs: SwiotlbCosts, grow_delay: Ns) -> SwiotlbPath {
        SwiotlbPath {
            mem: IoTlbMem::new(cfg, costs),
            grow_delay,
            grow_at: None,
            ring: RingMaps::DataOnly,
            maps: Vec::new(),
            map_ns: 0,
            unmap_ns: 0,
            copy_in_ns: 0,
            copy_out_ns: 0,
            maps_by_cpu: Vec::new(),
        }
    }

    /// vCPU `cpu` lost its physical CPU from `from` for `len`: its area
    /// lock holds in progress last that much longer.
    pub fn vcpu_preempted(&mut self, cpu: u32, from: Ns, len: Ns) {
        self.mem.preempt_holder(cpu, from, len);
    }

    pub fn mem(&self) -> &IoTlbMem {
        &self.mem
    }

    /// The worker's pool appears once its time has come.
    fn catch_up(&mut self, now: Ns) {
        if let Some(at) = self.grow_at {
            if now >= at {
                self.mem.add_pool();
                self.grow_at = None;
            }
        }
    }

    /// One `swiotlb_map` of `size` bytes at `orig` on `cpu` from `start`:
    /// the search (its spins and lookup burn the core), then the copy into
    /// the bounce buffer (`swiotlb_bounce(DMA_TO_DEVICE)`, for every
    /// direction). Returns the slot and when the core is done.
    fn map_one(
        &mut self,
        host: &mut Host,
        cpu: u32,
        orig: u64,
        size: u64,
        start: Ns,
    ) -> (SlotAddr, Ns) {
        self.catch_up(start);
        if let Some(n) = self.maps_by_cpu.get_mut(cpu as usize) {
            *n += 1;
        }
        let out = self.mem.map(start, cpu, MapRequest::new(orig, size));
        let slot = out
            .slot
            .expect("swiotlb: a growing allocator always finds slots (transient pool)");
        if out.schedule_growth {
            self.grow_at = Some(out.done_at + self.grow_delay);
        }
        let searched = host.burn_sys(cpu, start, out.done_at);
        self.map_ns += searched - start;
        let copy = self.mem.costs().bounce_ns(size);
        let end = host.burn_sys(cpu, searched, searched + copy);
        self.copy_in_ns += copy;
        (slot, end)
    }

    /// `dma_map_sg` of request `key` (its `data`) on `cpu`, asked at
    /// `now`, with the driver's own mappings: returns when all mappings and
    /// their copies in are done.
    pub fn map(&mut self, host: &mut Host, cpu: u32, key: u32, data: RqData, now: Ns) -> Ns {
        let RqData {
            ddir,
            len,
            contiguous,
        } = data;
        let k = key as usize;
        if self.maps.len() <= k {
            self.maps.resize_with(k + 1, Vec::new);
        }
        let mut entries = std::mem::take(&mut self.maps[k]);
        entries.clear();
        let data_dir = match ddir {
            Ddir::Read => DmaDir::FromDevice,
            _ => DmaDir::ToDevice,
        };
        let virtio = self.ring == RingMaps::VirtioIndirect;
        let mut t = now.max(host.busy_until(cpu));
        // The indirect table is mapped last but unmapped first: its place
        // in `entries` is reserved now.
        if virtio {
            entries.push((SlotAddr(0), DmaDir::ToDevice));
            let (slot, end) =
                self.map_one(host, cpu, driver_addr(key, 0), VIRTIO_BLK_OUTHDR_BYTES, t);
            entries.push((slot, DmaDir::ToDevice));
            t = end;
        }
        let piece = contiguous.max(1);
        for i in 0..segments(len, piece) {
            let offset = i * piece;
            let size = piece.min(len.saturating_sub(offset)).max(1);
            let (slot, end) = self.map_one(host, cpu, orig_addr(key) + offset, size, t);
            entries.push((slot, data_dir));
            t = end;
        }
        if virtio {
            let (slot, end) =
                self.map_one(host, cpu, driver_addr(key, 1), VIRTIO_BLK_STATUS_BYTES, t);
            entries.push((slot, DmaDir::FromDevice));
            // total_sg = the entries after the reserved table place.
            let table = (entries.len() as u64 - 1) * VRING_DESC_BYTES;
            let (table_slot, end) = self.map_one(host, cpu, driver_addr(key, 2), table, end);
            entries[0] = (table_slot, DmaDir::ToDevice);
            t = end;
        }
        self.maps[k] = entries;
        t
    }

    /// `dma_unmap_sg` (and the driver's unmaps) of request `key` on `cpu`
    /// at `at` (interrupt or polling context: it runs now, pushing queued
    /// thread work back). Returns when it is done (the copies back of what
    /// the device wrote included).
    pub fn unmap(&mut self, host: &mut Host, cpu: u32, key: u32, at: Ns) -> Ns {
        let Some(entries) = self.maps.get_mut(key as usize) else {
            return at;
        };
        if entries.is_empty() {
            return at;
        }
        let mut entries = std::mem::take(entries);
        self.catch_up(at);
        let mut t = at;
        for &(slot, dir) in entries.iter() {
            let out = self.mem.unmap(t, cpu, slot, dir);
            self.unmap_ns += out.done_at - t - out.copy_ns;
            self.copy_out_ns += out.copy_ns;
            t = out.done_at;
        }
        let spent = t - at;
        host.account_irq(cpu, at, spent);
        entries.clear();
        self.maps[key as usize] = entries;
        t
    }

    /// The allocator's counters for the run's `flashpath` section.
    pub fn counters(&self) -> serde_json::Value {
        let c = self.mem.counters();
        let per_map = |x: u64| {
            if c.maps == 0 {
                0.0
            } else {
                x as f64 / c.maps as f64
            }
        };
        let cfg = self.mem.config();
        serde_json::json!({
            "search": match cfg.order {
                SearchOrder::PoolFirst => "pool-first",
                SearchOrder::AreaFirst => "area-first",
            },
            "nslabs": cfg.pool.nslabs,
            "nareas": cfg.pool.nareas,
            "maps": c.maps,
            "maps_by_cpu": self.maps_by_cpu,
            "unmaps": c.unmaps,
            "map_failures": c.map_failures,
            "areas_visited": c.areas_visited,
            "areas_visited_per_map": per_map(c.areas_visited),
            "areas_visited_max": c.areas_visited_max,
            "areas_visited_hist": c.areas_visited_hist,
            "slots_scanned_per_map": per_map(c.slots_scanned),
            "lock_acquires": c.lock_acquires,
            "remote_acquires": c.remote_acquires,
            "lock_spins": c.lock_spins,
            "lock_spin_ns": c.lock_spin_ns,
            "lock_spin_max_ns": c.lock_spin_max_ns,
            "pv_spinlock": self.mem.pv_spinlock().is_some(),
            "pv_halts": c.pv_halts,
            "holder_preemptions": c.holder_preemptions,
            "pools_tried_per_map": per_map(c.pools_tried),
            "find_pool_calls": c.find_pool_calls,
            "pools_walked": c.pools_walked,
            "pools": self.mem.pool_ids().count(),
            "io_tlb_nslabs": self.mem.io_tlb_nslabs(),
            "pool_mib": (self.mem.io_tlb_nslabs() << super::swiotlb::IO_TLB_SHIFT) as f64
                / f64::from(1u32 << 20),
            "pools_added": c.pools_added,
            "growth_scheduled": c.growth_scheduled,
            "transient_pools": c.transient_allocs,
            "transient_frees": c.transient_frees,
            "transient_live_max": c.transient_live_max,
            "used_hiwater": c.used_hiwater,
            "map_ns_per_map": per_map(self.map_ns),
            "unmap_ns_per_map": per_map(self.unmap_ns),
            "copy_in_ns_per_map": per_map(self.copy_in_ns),
            "copy_out_ns_per_map": per_map(self.copy_out_ns),
        })
    }
}
