//! UFS Host Performance Booster (HPB 1.0), the host side, as the kernel's
//! ufshpb (`drivers/ufs/core/ufshpb.c`) does it (KERNEL-NOTES §2(a)); the
//! device side and the protocol both share (region geometry, the response
//! UPIU's sense data) are in [`crate::device::ufs::hpb`].
//!
//! Host: per region and sub-region state, the host copy of the L2P entries
//! of VALID sub-regions, a dirty bitmap per sub-region, the active-region
//! LRU bounded by `max_active_regions` (wLUMaxActiveHPBRegions; the map
//! pool is sized from it as ufshpb's init does), the activation and
//! inactivation lists filled from response UPIUs, and the counters of the
//! sysfs `hpb_stats` group.
//!
//! Host control mode (option): the host counts reads per sub-region and
//! activates one itself at `activation_thld` reads; the device sends no
//! recommendations.

use crate::device::ufs::hpb::{HpbGeometry, RegionLru};
use crate::device::{FactoryLayout, Ppn};
use std::collections::VecDeque;

pub use crate::device::ufs::hpb::{
    HpbDevicePolicy, HpbMode, HpbParams, HpbRsp, HPB_ENTRY_SIZE, MAX_ACTIVE_NUM, MAX_INACTIVE_NUM,
};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SrgnState {
    Unused,
    Invalid,
    Issued,
    Valid,
}

/// A sub-region's map context (`struct ufshpb_map_ctx`): the host copy of
/// its PPNs and the dirty bitmap (`ppn_dirty`). Taken from the pool when the
/// sub-region's READ BUFFER is issued and given back when its region is
/// inactivated (`ufshpb_get_map_ctx` / `ufshpb_put_map_ctx` on the map
/// mempool), so a run allocates at most one per sub-region that is active at
/// once: memory follows the active-region limit, not the device, and the
/// per-I/O path allocates nothing once the pool is warm.
///
/// A load whose entries all still follow the device's factory layout keeps
/// that rule instead of the copy (`factory`): the same PPNs, without
/// writing 1024 entries per READ BUFFER.
struct MapCtx {
    ppns: Box<[Ppn]>,
    dirty: Box<[u64]>,
    factory: bool,
}

impl MapCtx {
    fn new(entries: usize) -> MapCtx {
        MapCtx {
            ppns: vec![Ppn::MAX; entries].into_boxed_slice(),
            dirty: vec![0; entries.div_ceil(64)].into_boxed_slice(),
            factory: false,
        }
    }
}

struct Srgn {
    state: SrgnState,
    /// Held while the sub-region is ISSUED or VALID (and kept when a VALID
    /// one is recommended again, as the kernel keeps it for the reload).
    mctx: Option<MapCtx>,
    /// HCM read counter.
    reads: u32,
    /// Queued for activation (on lh_act_srgn).
    queued: bool,
}

struct Rgn {
    active: bool,
    srgns: Vec<Srgn>,
}

/// What `prep` decided for a read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Prep {
    Normal,
    HpbRead(Ppn),
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HpbStats {
    pub hit_cnt: u64,
    pub miss_cnt: u64,
    pub rcmd_noti_cnt: u64,
    pub rcmd_active_cnt: u64,
    pub rcmd_inactive_cnt: u64,
    pub map_req_cnt: u64,
    pub umap_req_cnt: u64,
    /// Regions the host LRU evicted to make room.
    pub lru_evictions: u64,
    /// HPB READs whose PPN the device found stale.
    pub stale_at_device: u64,
}

pub struct Hpb {
    pub p: HpbParams,
    rgns: Vec<Rgn>,
    /// Host LRU of active regions.
    lru: RegionLru,
    active_regions: u32,
    /// lh_act_srgn / lh_inact_rgn, drained by map_work.
    pub act_list: VecDeque<(u32, u32)>,
    pub inact_list: VecDeque<u32>,
    pub stats: HpbStats,
    /// Map contexts given back by inactivated regions (the mempool).
    free_mctx: Vec<MapCtx>,
    /// The device's factory layout, for map contexts kept as the rule.
    layout: Option<FactoryLayout>,
    geo: HpbGeometry,
}

impl Hpb {
    pub fn new(p: HpbParams, user_lpns: u64) -> Hpb {
        let geo = HpbGeometry::new(&p, user_lpns);
        let nrgn = geo.regions as usize;
        let srgns_per_rgn = geo.srgns_per_rgn;
        // Every region and sub-region descriptor up front, as
        // ufshpb_alloc_region_tbl does (a few tens of bytes per 4 MiB of
        // LBA); only map contexts (4 KiB of PPNs per 4 MiB) follow use.
        let rgns = (0..nrgn)
            .map(|_| Rgn {
                active: false,
                srgns: (0..srgns_per_rgn).map(|_| new_srgn()).collect(),
            })
            .collect();
        Hpb {
            p,
            rgns,
            lru: RegionLru::new(nrgn),
            active_regions: 0,
            act_list: VecDeque::new(),
            inact_list: VecDeque::new(),
            stats: HpbStats::default(),
            free_mctx: Vec::new(),
            layout: None,
            geo,
        }
    }

    /// Let loads of sub-regions whose entries follow `layout` keep the rule
    /// instead of a copy (see [`Self::map_loaded_with`]).
    pub fn set_factory_layout(&mut self, layout: Option<FactoryLayout>) {
        self.layout = layout;
    }

    pub fn has_factory_layout(&self) -> bool {
        self.layout.is_some()
    }

    pub fn regions(&self) -> u32 {
        self.rgns.len() as u32
    }
    pub fn srgns_per_rgn(&self) -> u32 {
        self.geo.srgns_per_rgn
    }
    pub fn active_regions(&self) -> u32 {
        self.active_regions
    }
    /// Host memory holding map entries now (8 B per entry of every
    /// allocated sub-region).
    pub fn host_map_bytes(&self) -> u64 {
        self.rgns
            .iter()
            .filter(|r| r.active)
            .map(|r| r.srgns.len() as u64 * self.p.entries_per_srgn * HPB_ENTRY_SIZE)
            .sum()
    }

    /// ufshpb_prep for a READ of `blocks` 4 KiB blocks at `lpn`.
    pub fn prep_read(&mut self, lpn: u64, blocks: u32) -> Prep {
        if blocks > self.p.max_single_cmd_blocks {
            return Prep::Normal;
        }
        let (rgn, srgn, off) = self.geo.locate(lpn);
        let r = &mut self.rgns[rgn as usize];
        if self.p.mode == HpbMode::Host {
            let s = &mut r.srgns[srgn as usize];
            s.reads += 1;
            if s.reads >= self.p.activation_thld
                && !s.queued
                && s.state != SrgnState::Valid
                && s.state != SrgnState::Issued
            {
                s.queued = true;
                self.act_list.push_back((rgn, srgn));
            }
        }
        if !r.active {
            self.stats.miss_cnt += 1;
            return Prep::Normal;
        }
        self.lru.touch(rgn);
        let r = &self.rgns[rgn as usize];
        let s = &r.srgns[srgn as usize];
        let m = match (&s.mctx, s.state) {
            (Some(m), SrgnState::Valid) if (m.dirty[off / 64] >> (off % 64)) & 1 == 0 => m,
            _ => {
                self.stats.miss_cnt += 1;
                return Prep::Normal;
            }
        };
        self.stats.hit_cnt += 1;
        Prep::HpbRead(match (m.factory, self.layout) {
            (true, Some(layout)) => layout.ppn(lpn),
            _ => m.ppns[off],
        })
    }

    /// ufshpb_prep for a WRITE/DISCARD: dirty the host entries.
    pub fn prep_write(&mut self, lpn: u64, blocks: u32) {
        for l in lpn..lpn + u64::from(blocks) {
            let (rgn, srgn, off) = self.geo.locate(l);
            let s = &mut self.rgns[rgn as usize].srgns[srgn as usize];
            if self.p.mode == HpbMode::Host {
                s.reads = 0;
            }
            if let (SrgnState::Valid, Some(m)) = (s.state, &mut s.mctx) {
                m.dirty[off / 64] |= 1 << (off % 64);
            }
        }
    }

    /// The host side of a response UPIU with HPB sense data
    /// (ufshpb_rsp_req_region_update): queue the work for map_work.
    pub fn host_rsp(&mut self, rsp: &HpbRsp) {
        self.stats.rcmd_noti_cnt += 1;
        for &(rgn, srgn) in &rsp.act[..rsp.n_act as usize] {
            self.stats.rcmd_active_cnt += 1;
            let s = &mut self.rgns[rgn as usize].srgns[srgn as usize];
            // An active sub-region recommended again is reloaded: INVALID
            // until the READ BUFFER completes.
            if s.state == SrgnState::Valid {
                s.state = SrgnState::Invalid;
            }
            if !s.queued {
                s.queued = true;
                self.act_list.push_back((rgn, srgn));
            }
        }
        for &rgn in &rsp.inact[..rsp.n_inact as usize] {
            self.stats.rcmd_inactive_cnt += 1;
            self.inact_list.push_back(rgn);
        }
    }

    fn inactivate(&mut self, rgn: u32) {
        let r = &mut self.rgns[rgn as usize];
        if !r.active || r.srgns.iter().any(|s| s.state == SrgnState::Issued) {
            return;
        }
        r.active = false;
        self.lru.remove(rgn);
        for s in &mut r.srgns {
            s.state = SrgnState::Unused;
            if let Some(m) = s.mctx.take() {
                self.free_mctx.push(m);
            }
            s.queued = false;
        }
        self.active_regions -= 1;
    }

    /// map_work: evict what the device asked, then activate. Returns the
    /// sub-regions to load with READ BUFFER (now ISSUED).
    pub fn map_work(&mut self, out: &mut Vec<(u32, u32)>) {
        while let Some(rgn) = self.inact_list.pop_front() {
            self.inactivate(rgn);
        }
        while let Some((rgn, srgn)) = self.act_list.pop_front() {
            if !self.rgns[rgn as usize].active {
                if self.active_regions >= self.p.max_active_regions {
                    // LRU victim: least recently used, nothing in flight.
                    let rgns = &self.rgns;
                    let victim = self.lru.oldest(|i| {
                        i != rgn
                            && rgns[i as usize]
                                .srgns
                                .iter()
                                .all(|s| s.state != SrgnState::Issued)
                    });
                    match victim {
                        Some(v) => {
                            self.inactivate(v);
                            self.stats.lru_evictions += 1;
                        }
                        None => {
                            self.rgns[rgn as usize].srgns[srgn as usize].queued = false;
                            continue;
                        }
                    }
                }
                let r = &mut self.rgns[rgn as usize];
                r.active = true;
                self.lru.touch(rgn);
                for s in &mut r.srgns {
                    s.state = SrgnState::Invalid;
                }
                self.active_regions += 1;
            }
            let s = &mut self.rgns[rgn as usize].srgns[srgn as usize];
            s.queued = false;
            if s.state == SrgnState::Issued {
                continue;
            }
            s.state = SrgnState::Issued;
            if s.mctx.is_none() {
                let n = self.p.entries_per_srgn as usize;
                s.mctx = Some(self.free_mctx.pop().unwrap_or_else(|| MapCtx::new(n)));
            }
            self.stats.map_req_cnt += 1;
            out.push((rgn, srgn));
        }
    }

    /// First LPN of a sub-region and its entry count (clipped at the end of
    /// the device).
    pub fn srgn_span(&self, rgn: u32, srgn: u32, user_lpns: u64) -> (u64, u64) {
        self.geo.srgn_span(rgn, srgn, user_lpns)
    }

    /// One number for a sub-region (for event payloads).
    pub fn srgn_id(&self, rgn: u32, srgn: u32) -> u32 {
        self.geo.srgn_id(rgn, srgn)
    }

    /// Inverse of [`Self::srgn_id`].
    pub fn srgn_of_id(&self, id: u32) -> (u32, u32) {
        self.geo.srgn_of_id(id)
    }

    /// READ BUFFER completed: `fill` writes the sub-region's entries into
    /// the host map context (`entries_per_srgn` of them; entries past the
    /// end of the device are left for `fill` to set to NONE), or, with
    /// `factory` (every entry follows the layout given to
    /// [`Self::set_factory_layout`]), the context keeps the rule and `fill`
    /// is not called. Returns false (and does not call `fill`) when the load
    /// is stale: the region was inactivated or the sub-region is not ISSUED
    /// any more.
    pub fn map_loaded_with(
        &mut self,
        rgn: u32,
        srgn: u32,
        factory: bool,
        fill: impl FnOnce(&mut [Ppn]),
    ) -> bool {
        assert!(
            !factory || self.layout.is_some(),
            "a factory load needs the device's factory layout"
        );
        let r = &mut self.rgns[rgn as usize];
        if !r.active {
            return false;
        }
        let s = &mut r.srgns[srgn as usize];
        if s.state != SrgnState::Issued {
            return false;
        }
        let m = s
            .mctx
            .as_mut()
            .expect("an ISSUED sub-region holds a map context");
        m.factory = factory;
        if !factory {
            fill(&mut m.ppns);
        }
        m.dirty.fill(0);
        s.state = SrgnState::Valid;
        true
    }

    /// [`Self::map_loaded_with`] from a list of PPNs (shorter lists leave
    /// the rest NONE).
    pub fn map_loaded(&mut self, rgn: u32, srgn: u32, ppns: Vec<Ppn>) {
        self.map_loaded_with(rgn, srgn, false, |buf| {
            let n = ppns.len().min(buf.len());
            buf[..n].copy_from_slice(&ppns[..n]);
            buf[n..].fill(Ppn::MAX);
        });
    }
}

fn new_srgn() -> Srgn {
    Srgn {
        state: SrgnState::Unused,
        mctx: None,
        reads: 0,
        queued: false,
    }
}
