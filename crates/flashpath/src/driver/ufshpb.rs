//! UFS Host Performance Booster (HPB 1.0), both sides, as the kernel's
//! ufshpb (`drivers/ufs/core/ufshpb.c`) and an HPB device do it
//! (KERNEL-NOTES §2(a)).
//!
//! Host: per region and sub-region state, the host copy of the L2P entries
//! of VALID sub-regions, a dirty bitmap per sub-region, the active-region
//! LRU bounded by `max_active_regions` (wLUMaxActiveHPBRegions; the map
//! pool is sized from it as ufshpb's init does), the activation and
//! inactivation lists filled from response UPIUs, and the counters of the
//! sysfs `hpb_stats` group.
//!
//! Device (device control mode): counts normal reads per sub-region and
//! recommends a sub-region for activation once it has seen
//! `device_activation_reads` normal reads of it (a dirty one is recommended
//! again: the kernel then reloads it); keeps its own view of the active
//! regions and recommends inactivation of its least-recently-read region
//! when a new one would exceed the limit. A response carries at most 2 + 2
//! recommendations (`MAX_ACTIVE_NUM`, `MAX_INACTIVE_NUM`).
//!
//! Host control mode (option): the host counts reads per sub-region and
//! activates one itself at `activation_thld` reads; the device sends no
//! recommendations.

use crate::device::{FactoryLayout, Ppn};
use std::collections::VecDeque;

pub const MAX_ACTIVE_NUM: usize = 2;
pub const MAX_INACTIVE_NUM: usize = 2;
/// HPB entry: 8 B per 4 KiB block (`HPB_ENTRY_SIZE`).
pub const HPB_ENTRY_SIZE: u64 = 8;
/// Normal reads of an already recommended sub-region after which the
/// device recommends it again **[assumption]**: well above the reads in
/// flight during one activation (one per thread), so a load in progress is
/// not restarted.
const RE_RECOMMEND_READS: u32 = 64;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HpbMode {
    Device,
    Host,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HpbParams {
    pub mode: HpbMode,
    /// 4 KiB entries per region and per sub-region.
    pub entries_per_region: u64,
    pub entries_per_srgn: u64,
    pub max_active_regions: u32,
    /// Device control mode: normal reads of a sub-region before the device
    /// recommends it.
    pub device_activation_reads: u32,
    /// Host control mode: `activation_thld`.
    pub activation_thld: u32,
    /// Blocks an HPB READ may carry (1 for HPB 1.0).
    pub max_single_cmd_blocks: u32,
}

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

const NIL: u32 = u32::MAX;

/// An LRU list of regions threaded through arrays (the kernel's
/// `lru_info.lh_lru_rgn` with `list_move_tail` on access): touching,
/// removing and finding the oldest are O(1) and allocate nothing.
struct RegionLru {
    prev: Vec<u32>,
    next: Vec<u32>,
    linked: Vec<bool>,
    head: u32,
    tail: u32,
}

impl RegionLru {
    fn new(n: usize) -> RegionLru {
        RegionLru {
            prev: vec![NIL; n],
            next: vec![NIL; n],
            linked: vec![false; n],
            head: NIL,
            tail: NIL,
        }
    }

    fn remove(&mut self, i: u32) {
        let iu = i as usize;
        if !self.linked[iu] {
            return;
        }
        let (p, n) = (self.prev[iu], self.next[iu]);
        if p == NIL {
            self.head = n;
        } else {
            self.next[p as usize] = n;
        }
        if n == NIL {
            self.tail = p;
        } else {
            self.prev[n as usize] = p;
        }
        self.linked[iu] = false;
    }

    /// Make `i` the most recently used.
    fn touch(&mut self, i: u32) {
        self.remove(i);
        let iu = i as usize;
        self.prev[iu] = self.tail;
        self.next[iu] = NIL;
        if self.tail == NIL {
            self.head = i;
        } else {
            self.next[self.tail as usize] = i;
        }
        self.tail = i;
        self.linked[iu] = true;
    }

    /// The least recently used entry satisfying `ok`.
    fn oldest(&self, mut ok: impl FnMut(u32) -> bool) -> Option<u32> {
        let mut i = self.head;
        while i != NIL {
            if ok(i) {
                return Some(i);
            }
            i = self.next[i as usize];
        }
        None
    }
}

struct Rgn {
    active: bool,
    srgns: Vec<Srgn>,
}

/// A response UPIU's HPB sense data.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HpbRsp {
    pub act: [(u32, u32); MAX_ACTIVE_NUM],
    pub n_act: u8,
    pub inact: [u32; MAX_INACTIVE_NUM],
    pub n_inact: u8,
}

impl HpbRsp {
    pub fn is_empty(&self) -> bool {
        self.n_act == 0 && self.n_inact == 0
    }
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
    // Device side.
    dev_reads: Vec<u32>,
    dev_recommended: Vec<bool>,
    dev_rgn_active: Vec<bool>,
    /// Device LRU of its active regions.
    dev_lru: RegionLru,
    dev_active: u32,
    dev_pending_act: VecDeque<(u32, u32)>,
    dev_pending_inact: VecDeque<u32>,
    srgns_per_rgn: u32,
    rgn_shift: u32,
    srgn_shift: u32,
}

impl Hpb {
    pub fn new(p: HpbParams, user_lpns: u64) -> Hpb {
        assert!(
            p.entries_per_region.is_power_of_two()
                && p.entries_per_srgn.is_power_of_two()
                && p.entries_per_srgn <= p.entries_per_region,
            "HPB region and sub-region entry counts are powers of two (512 B x 2^exp), sub-region <= region"
        );
        let nrgn = user_lpns.div_ceil(p.entries_per_region) as usize;
        let srgns_per_rgn = (p.entries_per_region / p.entries_per_srgn) as u32;
        // Every region and sub-region descriptor up front, as
        // ufshpb_alloc_region_tbl does (a few tens of bytes per 4 MiB of
        // LBA); only map contexts (4 KiB of PPNs per 4 MiB) follow use.
        let rgns = (0..nrgn)
            .map(|_| Rgn {
                active: false,
                srgns: (0..srgns_per_rgn).map(|_| new_srgn()).collect(),
            })
            .collect();
        let nsrgn = nrgn * srgns_per_rgn as usize;
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
            dev_reads: vec![0; nsrgn],
            dev_recommended: vec![false; nsrgn],
            dev_rgn_active: vec![false; nrgn],
            dev_lru: RegionLru::new(nrgn),
            dev_active: 0,
            dev_pending_act: VecDeque::new(),
            dev_pending_inact: VecDeque::new(),
            srgns_per_rgn,
            rgn_shift: p.entries_per_region.trailing_zeros(),
            srgn_shift: p.entries_per_srgn.trailing_zeros(),
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
        self.srgns_per_rgn
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

    #[inline]
    fn locate(&self, lpn: u64) -> (u32, u32, usize) {
        // Region and sub-region sizes are 512 B x 2^exp (JESD220 geometry
        // descriptor), so their entry counts are powers of two: shifts and
        // masks, as ufshpb_get_pos_from_lpn does.
        let rgn = (lpn >> self.rgn_shift) as u32;
        let in_rgn = lpn & (self.p.entries_per_region - 1);
        let srgn = (in_rgn >> self.srgn_shift) as u32;
        (rgn, srgn, (in_rgn & (self.p.entries_per_srgn - 1)) as usize)
    }

    #[inline]
    fn flat(&self, rgn: u32, srgn: u32) -> usize {
        (rgn * self.srgns_per_rgn + srgn) as usize
    }

    /// ufshpb_prep for a READ of `blocks` 4 KiB blocks at `lpn`.
    pub fn prep_read(&mut self, lpn: u64, blocks: u32) -> Prep {
        if blocks > self.p.max_single_cmd_blocks {
            return Prep::Normal;
        }
        let (rgn, srgn, off) = self.locate(lpn);
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
            let (rgn, srgn, off) = self.locate(l);
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
        let start =
            u64::from(rgn) * self.p.entries_per_region + u64::from(srgn) * self.p.entries_per_srgn;
        (
            start,
            self.p.entries_per_srgn.min(user_lpns.saturating_sub(start)),
        )
    }

    /// One number for a sub-region (for event ids): `rgn × srgns_per_rgn +
    /// srgn`.
    pub fn srgn_id(&self, rgn: u32, srgn: u32) -> u32 {
        self.flat(rgn, srgn) as u32
    }

    /// Inverse of [`Self::srgn_id`].
    pub fn srgn_of_id(&self, id: u32) -> (u32, u32) {
        (id / self.srgns_per_rgn, id % self.srgns_per_rgn)
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

    // ----- device side ---------------------------------------------------------

    /// The device saw a normal READ of `lpn`.
    pub fn dev_normal_read(&mut self, lpn: u64) {
        if self.p.mode != HpbMode::Device {
            return;
        }
        let (rgn, srgn, _) = self.locate(lpn);
        let f = self.flat(rgn, srgn);
        if self.dev_rgn_active[rgn as usize] {
            self.dev_lru.touch(rgn);
        }
        self.dev_reads[f] += 1;
        // A recommended sub-region keeps getting normal reads while the host
        // loads it; if they go on (the host dropped it from its LRU, which
        // the device is not told of in device control mode) recommend it
        // again.
        let need = if self.dev_recommended[f] {
            self.p.device_activation_reads.max(RE_RECOMMEND_READS)
        } else {
            self.p.device_activation_reads
        };
        if self.dev_reads[f] < need {
            return;
        }
        self.dev_recommended[f] = true;
        self.dev_reads[f] = 0;
        if !self.dev_rgn_active[rgn as usize] {
            if self.dev_active >= self.p.max_active_regions {
                let victim = self.dev_lru.oldest(|i| i != rgn).map(|i| i as usize);
                if let Some(v) = victim {
                    self.dev_lru.remove(v as u32);
                    self.dev_rgn_active[v] = false;
                    self.dev_active -= 1;
                    let base = v * self.srgns_per_rgn as usize;
                    for k in 0..self.srgns_per_rgn as usize {
                        self.dev_recommended[base + k] = false;
                        self.dev_reads[base + k] = 0;
                    }
                    self.dev_pending_inact.push_back(v as u32);
                }
            }
            self.dev_rgn_active[rgn as usize] = true;
            self.dev_lru.touch(rgn);
            self.dev_active += 1;
        }
        self.dev_pending_act.push_back((rgn, srgn));
    }

    /// The device saw an HPB READ of `lpn` (keeps its region recent).
    pub fn dev_hpb_read(&mut self, lpn: u64) {
        let (rgn, _, _) = self.locate(lpn);
        if self.dev_rgn_active[rgn as usize] {
            self.dev_lru.touch(rgn);
        }
    }

    /// The device saw a WRITE of `lpn`: the host copy of that entry is now
    /// stale, so the sub-region may be recommended again.
    pub fn dev_write(&mut self, lpn: u64, blocks: u32) {
        for l in lpn..lpn + u64::from(blocks) {
            let (rgn, srgn, _) = self.locate(l);
            let f = self.flat(rgn, srgn);
            self.dev_recommended[f] = false;
            self.dev_reads[f] = 0;
        }
    }

    /// Recommendations for the next response UPIU (up to 2 + 2).
    pub fn dev_take_rsp(&mut self) -> HpbRsp {
        let mut rsp = HpbRsp::default();
        while (rsp.n_inact as usize) < MAX_INACTIVE_NUM {
            match self.dev_pending_inact.pop_front() {
                Some(r) => {
                    rsp.inact[rsp.n_inact as usize] = r;
                    rsp.n_inact += 1;
                }
                None => break,
            }
        }
        while (rsp.n_act as usize) < MAX_ACTIVE_NUM {
            match self.dev_pending_act.pop_front() {
                Some(a) => {
                    rsp.act[rsp.n_act as usize] = a;
                    rsp.n_act += 1;
                }
                None => break,
            }
        }
        rsp
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
