//! swiotlb on the I/O path: `dma_map_sg` in the driver's `queue_rq` on the
//! submitting CPU (slot search under the area locks, then the copy into the
//! bounce buffer, which the kernel does for every direction), and
//! `dma_unmap_sg` on the CPU that handles the completion (the copy back for
//! reads, then the release under the area lock), before the waiter wakes.
//!
//! The allocator ([`IoTlbMem`]) books its own lock holds and spins; this
//! wrapper places each call on a core (a call starts when the core is free)
//! and runs the `dyn_alloc` worker: when a map schedules growth, the new
//! pool is added `grow_delay` later (applied before the first allocator
//! call at or after that time; only allocator calls can see the pool list,
//! so this is exact).

use super::swiotlb::{
    DmaDir, ForceMode, IoTlbMem, IoTlbMemConfig, MapRequest, SearchOrder, SlotAddr, SwiotlbCosts,
    SwiotlbParam,
};
use crate::error::{InputError, Result};
use crate::host::cpu::Cpu;
use crate::profile::Profile;
use crate::sim::Ns;
use crate::workload::Ddir;

/// Where the model places the original (user) buffer of request `key`:
/// page-aligned and distinct per request (fio's buffers are page-aligned).
fn orig_addr(key: u32) -> u64 {
    (1u64 << 40) + (u64::from(key) << 24)
}

/// swiotlb bouncing for one device, with its own time accounting.
pub struct SwiotlbPath {
    mem: IoTlbMem,
    grow_delay: Ns,
    /// When the queued `dyn_alloc` worker adds its pool.
    grow_at: Option<Ns>,
    /// The live mapping of each request (by slab key).
    maps: Vec<Option<(SlotAddr, DmaDir)>>,
    /// CPU time of maps (search, locks, spins) and unmaps (lookups, locks,
    /// release), and of the copies in and out.
    pub map_ns: u64,
    pub unmap_ns: u64,
    pub copy_in_ns: u64,
    pub copy_out_ns: u64,
    /// Maps per CPU (`raw_smp_processor_id()` of each `swiotlb_find_slots`).
    maps_by_cpu: Vec<u64>,
}

impl SwiotlbPath {
    /// The profile's `dma.swiotlb.*`; `None` when the profile has no
    /// swiotlb section or the boot parameter does not force bouncing (the
    /// simulated devices address all memory, so only `force` bounces).
    pub fn from_profile(p: &Profile, ncpus: u32) -> Result<Option<SwiotlbPath>> {
        if !p.has("dma.swiotlb.boot_param") {
            return Ok(None);
        }
        let file = p.files.last().cloned().unwrap_or_default();
        let param = SwiotlbParam::parse(&p.text("dma.swiotlb.boot_param")?)?;
        let order = match p
            .choice("dma.swiotlb.search", &["pool-first", "area-first"])?
            .as_str()
        {
            "pool-first" => SearchOrder::PoolFirst,
            _ => SearchOrder::AreaFirst,
        };
        let can_grow = p.flag("dma.swiotlb.dynamic")?;
        let grow_delay = p.ns("dma.swiotlb.grow_delay")?;
        let c = |k: &str| p.ns(&format!("dma.swiotlb.cost.{k}"));
        let costs = SwiotlbCosts {
            map_call: c("map_call")?,
            unmap_call: c("unmap_call")?,
            area_visit: c("area_visit")?,
            lock_acquire: c("lock_acquire")?,
            lock_acquire_remote: c("lock_acquire_remote")?,
            lock_release: c("lock_release")?,
            used_check: c("used_check")?,
            per_slot_scan: c("per_slot_scan")?,
            per_slot_update: c("per_slot_update")?,
            find_pool_per_pool: c("find_pool_per_pool")?,
            schedule_work: c("schedule_work")?,
            transient_alloc: c("transient_alloc")?,
            transient_free: c("transient_free")?,
            memcpy_bytes_per_ns: p.rate("dma.swiotlb.cost.memcpy")? / 1e9,
        };
        costs
            .validate()
            .map_err(|m| InputError::new(file.clone(), None, format!("dma.swiotlb.cost: {m}")))?;
        let pool = param.resolve(ncpus);
        if pool.force != ForceMode::Force {
            return Ok(None);
        }
        if !can_grow {
            return Err(InputError::new(
                file,
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
        path.maps_by_cpu = vec![0; ncpus as usize];
        Ok(Some(path))
    }

    pub fn new(cfg: IoTlbMemConfig, costs: SwiotlbCosts, grow_delay: Ns) -> SwiotlbPath {
        SwiotlbPath {
            mem: IoTlbMem::new(cfg, costs),
            grow_delay,
            grow_at: None,
            maps: Vec::new(),
            map_ns: 0,
            unmap_ns: 0,
            copy_in_ns: 0,
            copy_out_ns: 0,
            maps_by_cpu: Vec::new(),
        }
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

    /// `dma_map_sg` of request `key` (`len` bytes) on `cpu`, asked at
    /// `now`: returns when the mapping and the copy in are done.
    pub fn map(&mut self, cpu: &mut Cpu, key: u32, ddir: Ddir, len: u64, now: Ns) -> Ns {
        let start = now.max(cpu.busy_until);
        self.catch_up(start);
        if let Some(n) = self.maps_by_cpu.get_mut(cpu.id as usize) {
            *n += 1;
        }
        let out = self
            .mem
            .map(start, cpu.id, MapRequest::new(orig_addr(key), len));
        let slot = out
            .slot
            .expect("swiotlb: a growing allocator always finds slots (transient pool)");
        if out.schedule_growth {
            self.grow_at = Some(out.done_at + self.grow_delay);
        }
        // The search, its lock spins and the lookup burn the core.
        let searched = cpu.spin_until(start, out.done_at);
        self.map_ns += searched - start;
        // swiotlb_bounce(DMA_TO_DEVICE), for every direction.
        let copy = self.mem.costs().bounce_ns(len);
        let end = cpu.spin_until(searched, searched + copy);
        self.copy_in_ns += copy;
        let dir = match ddir {
            Ddir::Read => DmaDir::FromDevice,
            _ => DmaDir::ToDevice,
        };
        let k = key as usize;
        if self.maps.len() <= k {
            self.maps.resize(k + 1, None);
        }
        self.maps[k] = Some((slot, dir));
        end
    }

    /// `dma_unmap_sg` of request `key` on `cpu` at `at` (interrupt or
    /// polling context: it runs now, pushing queued thread work back).
    /// Returns when it is done (the copy back for reads included).
    pub fn unmap(&mut self, cpu: &mut Cpu, key: u32, at: Ns) -> Ns {
        let Some((slot, dir)) = self.maps.get_mut(key as usize).and_then(Option::take) else {
            return at;
        };
        self.catch_up(at);
        let out = self.mem.unmap(at, cpu.id, slot, dir);
        let spent = out.done_at - at;
        cpu.irq_ns += spent;
        cpu.busy_until = cpu.busy_until.max(at) + spent;
        self.unmap_ns += spent - out.copy_ns;
        self.copy_out_ns += out.copy_ns;
        out.done_at
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
            "pools_tried_per_map": per_map(c.pools_tried),
            "find_pool_calls": c.find_pool_calls,
            "pools_walked": c.pools_walked,
            "pools": self.mem.pool_ids().count(),
            "pools_added": c.pools_added,
            "growth_scheduled": c.growth_scheduled,
            "transient_pools": c.transient_allocs,
            "transient_frees": c.transient_frees,
            "used_hiwater": c.used_hiwater,
            "map_ns_per_map": per_map(self.map_ns),
            "unmap_ns_per_map": per_map(self.unmap_ns),
            "copy_in_ns_per_map": per_map(self.copy_in_ns),
            "copy_out_ns_per_map": per_map(self.copy_out_ns),
        })
    }
}
