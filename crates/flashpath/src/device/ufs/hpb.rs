//! UFS Host Performance Booster (HPB 1.0): the device side, and what both
//! sides share (the region geometry of the HPB descriptors, the HPB sense
//! data of a response UPIU). The host side is
//! [`crate::driver::ufshpb`] (KERNEL-NOTES §2(a)).
//!
//! The device (device control mode): counts normal reads per sub-region and
//! recommends a sub-region for activation once it has seen
//! `device_activation_reads` normal reads of it (a dirty one is recommended
//! again: the kernel then reloads it); keeps its own view of the active
//! regions, at most `max_active_regions` (wLUMaxActiveHPBRegions), and when
//! a new region would exceed that limit applies its eviction policy
//! (`device_policy`):
//!
//! - `lru`: inactivate the least-recently-read active region, always. Under
//!   a uniform load wider than the limit this thrashes: every normal read
//!   of an inactive region evicts a region that is as likely to be read
//!   next, so fewer regions are loaded than a static set would hold.
//! - `reads` (hysteresis): the policy the mainline driver's host control
//!   mode describes for HPB 1.0 (`ufshpb.c`, Documentation/ABI/testing/
//!   sysfs-driver-ufs: `eviction_thld_enter`, `eviction_thld_exit`,
//!   `normalization_factor`). Each region counts its reads (normal and HPB
//!   READ); a region enters at the expense of another only if it has at
//!   least `eviction_thld_enter` reads and the victim, the least recently
//!   read active region, at most `eviction_thld_exit`; the counts are a
//!   comparative score, shifted right by `normalization_factor` whenever one
//!   region passes `entries_per_srgn` reads, and an active region whose
//!   count falls to zero is inactivated. Eviction is then "an extreme
//!   measure" (sysfs-driver-ufs): a region must be read more than the one it
//!   displaces, so the active set never does worse than a static one.
//!
//! What a device's firmware does in device control mode is not published;
//! the policy is a profile choice and its thresholds are profile
//! parameters (docs/hpb.md shows their effect).
//!
//! A response carries at most 2 + 2 recommendations (`MAX_ACTIVE_NUM`,
//! `MAX_INACTIVE_NUM`).

use crate::error::{InputError, Result};
use crate::profile::{range, Choice, Profile, Range};
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

/// The device's eviction policy when its active regions are at the limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HpbDevicePolicy {
    Lru,
    Reads,
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
    /// Device control mode: the eviction policy at the region limit.
    pub device_policy: HpbDevicePolicy,
    /// `reads` policy: reads a region needs to displace another.
    pub eviction_thld_enter: u32,
    /// `reads` policy: most reads a region may have to be displaced.
    pub eviction_thld_exit: u32,
    /// `reads` policy: right shift of every region's count when one passes
    /// `entries_per_srgn`.
    pub normalization_factor: u32,
    /// Host control mode: `activation_thld`.
    pub activation_thld: u32,
    /// Blocks an HPB READ may carry (1 for HPB 1.0).
    pub max_single_cmd_blocks: u32,
}

impl Choice for HpbMode {
    const NAMES: &'static [&'static str] = &["device", "host"];
    fn from_name(name: &str) -> Option<Self> {
        match name {
            "device" => Some(HpbMode::Device),
            "host" => Some(HpbMode::Host),
            _ => None,
        }
    }
}

impl Choice for HpbDevicePolicy {
    const NAMES: &'static [&'static str] = &["lru", "reads"];
    fn from_name(name: &str) -> Option<Self> {
        match name {
            "lru" => Some(HpbDevicePolicy::Lru),
            "reads" => Some(HpbDevicePolicy::Reads),
            _ => None,
        }
    }
}

/// An HPB size exponent (JESD220 geometry descriptor).
const HPB_EXP: Range = range(
    12.0,
    40.0,
    "an HPB size exponent: 512 B x 2^exp, from a 2 MiB sub-region to 512 TiB",
);

crate::params! {
    /// UFS Host Performance Booster (JESD220-3, drivers/ufs/core/ufshpb.c),
    /// read whether HPB is enabled or not.
    pub struct HpbKeys {
        /// The control mode: the device recommends regions, or the host
        /// activates them.
        mode: HpbMode = required choice("ufs.hpb.mode", HpbMode),
        /// bHPBRegionSize: a region is 512 B x 2^exp.
        region_size_exp: u64 = required count("ufs.hpb.region_size_exp", HPB_EXP),
        /// bHPBSubRegionSize: a sub-region is 512 B x 2^exp.
        srgn_size_exp: u64 = required count("ufs.hpb.srgn_size_exp", HPB_EXP),
        /// wLUMaxActiveHPBRegions: regions active at once.
        max_active_regions: u32 = required count_u32(
            "ufs.hpb.max_active_regions",
            range(1.0, 65535.0, "wLUMaxActiveHPBRegions is 16 bits")
        ),
        /// Device control mode: normal reads of a sub-region before the
        /// device recommends it.
        device_activation_reads: u32 = required count_u32(
            "ufs.hpb.device_activation_reads",
            range(1.0, 1e6, "reads of a sub-region before the device recommends it")
        ),
        /// Device control mode: the eviction policy at the region limit.
        device_policy: HpbDevicePolicy =
            required choice("ufs.hpb.device_policy", HpbDevicePolicy),
        /// `reads` policy: reads a region needs to displace another.
        eviction_thld_enter: u32 = required count_u32(
            "ufs.hpb.eviction_thld_enter",
            range(0.0, 1e9, "reads a region needs to displace another")
        ),
        /// `reads` policy: most reads a region may have to be displaced.
        eviction_thld_exit: u32 = required count_u32(
            "ufs.hpb.eviction_thld_exit",
            range(0.0, 1e9, "most reads of a region that may be displaced")
        ),
        /// `reads` policy: right shift of every region's count when one
        /// passes entries_per_srgn.
        normalization_factor: u32 = required count_u32(
            "ufs.hpb.normalization_factor",
            range(1.0, 31.0, "a right shift of the read counts (sysfs normalization_factor)")
        ),
        /// Host control mode: reads of a sub-region before the host
        /// activates it.
        activation_thld: u32 = required count_u32(
            "ufs.hpb.activation_thld",
            range(1.0, 1e6, "reads of a sub-region before the host activates it")
        ),
        /// Blocks an HPB READ may carry (1 for HPB 1.0).
        max_single_cmd_blocks: u32 = required count_u32(
            "ufs.hpb.max_single_cmd_blocks",
            range(1.0, 255.0, "bMAX_HPB_SINGLE_CMD (HPB 2.0) is 8 bits")
        ),
    }
}

impl HpbParams {
    /// `ufs.hpb.*` (read whether HPB is enabled or not).
    pub fn from_profile(p: &Profile) -> Result<HpbParams> {
        let k = HpbKeys::read(p)?;
        if k.srgn_size_exp > k.region_size_exp {
            return Err(InputError::new(
                p.file_of("ufs.hpb.srgn_size_exp"),
                None,
                "ufs.hpb.srgn_size_exp must not exceed ufs.hpb.region_size_exp (a sub-region \
                 lies inside a region)",
            ));
        }
        Ok(HpbParams {
            mode: k.mode,
            entries_per_region: (512u64 << k.region_size_exp) / super::super::UNIT,
            entries_per_srgn: (512u64 << k.srgn_size_exp) / super::super::UNIT,
            max_active_regions: k.max_active_regions,
            device_activation_reads: k.device_activation_reads,
            device_policy: k.device_policy,
            eviction_thld_enter: k.eviction_thld_enter,
            eviction_thld_exit: k.eviction_thld_exit,
            normalization_factor: k.normalization_factor,
            activation_thld: k.activation_thld,
            max_single_cmd_blocks: k.max_single_cmd_blocks,
        })
    }
}

/// Where an LPN lies: regions and sub-regions of the device's logical
/// space. Their sizes are 512 B x 2^exp (JESD220 geometry descriptor), so
/// their entry counts are powers of two: shifts and masks, as
/// ufshpb_get_pos_from_lpn does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HpbGeometry {
    pub entries_per_region: u64,
    pub entries_per_srgn: u64,
    /// Regions of the device (the last one may be partial).
    pub regions: u32,
    pub srgns_per_rgn: u32,
    rgn_shift: u32,
    srgn_shift: u32,
}

impl HpbGeometry {
    pub fn new(p: &HpbParams, user_lpns: u64) -> HpbGeometry {
        assert!(
            p.entries_per_region.is_power_of_two()
                && p.entries_per_srgn.is_power_of_two()
                && p.entries_per_srgn <= p.entries_per_region,
            "HPB region and sub-region entry counts are powers of two (512 B x 2^exp), sub-region <= region"
        );
        HpbGeometry {
            entries_per_region: p.entries_per_region,
            entries_per_srgn: p.entries_per_srgn,
            regions: user_lpns.div_ceil(p.entries_per_region) as u32,
            srgns_per_rgn: (p.entries_per_region / p.entries_per_srgn) as u32,
            rgn_shift: p.entries_per_region.trailing_zeros(),
            srgn_shift: p.entries_per_srgn.trailing_zeros(),
        }
    }

    /// Region, sub-region and entry offset inside the sub-region of `lpn`.
    #[inline]
    pub fn locate(&self, lpn: u64) -> (u32, u32, usize) {
        let rgn = (lpn >> self.rgn_shift) as u32;
        let in_rgn = lpn & (self.entries_per_region - 1);
        let srgn = (in_rgn >> self.srgn_shift) as u32;
        (rgn, srgn, (in_rgn & (self.entries_per_srgn - 1)) as usize)
    }

    /// Index of a sub-region among all of them.
    #[inline]
    pub fn flat(&self, rgn: u32, srgn: u32) -> usize {
        (rgn * self.srgns_per_rgn + srgn) as usize
    }

    /// First LPN of a sub-region and its entry count (clipped at the end of
    /// the device).
    pub fn srgn_span(&self, rgn: u32, srgn: u32, user_lpns: u64) -> (u64, u64) {
        let start =
            u64::from(rgn) * self.entries_per_region + u64::from(srgn) * self.entries_per_srgn;
        (
            start,
            self.entries_per_srgn.min(user_lpns.saturating_sub(start)),
        )
    }

    /// One number for a sub-region: `rgn × srgns_per_rgn + srgn`.
    pub fn srgn_id(&self, rgn: u32, srgn: u32) -> u32 {
        self.flat(rgn, srgn) as u32
    }

    /// Inverse of [`Self::srgn_id`].
    pub fn srgn_of_id(&self, id: u32) -> (u32, u32) {
        (id / self.srgns_per_rgn, id % self.srgns_per_rgn)
    }
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

const NIL: u32 = u32::MAX;

/// An LRU list of regions threaded through arrays (the kernel's
/// `lru_info.lh_lru_rgn` with `list_move_tail` on access): touching,
/// removing and finding the oldest are O(1) and allocate nothing.
pub(crate) struct RegionLru {
    prev: Vec<u32>,
    next: Vec<u32>,
    linked: Vec<bool>,
    head: u32,
    tail: u32,
}

impl RegionLru {
    pub(crate) fn new(n: usize) -> RegionLru {
        RegionLru {
            prev: vec![NIL; n],
            next: vec![NIL; n],
            linked: vec![false; n],
            head: NIL,
            tail: NIL,
        }
    }

    pub(crate) fn remove(&mut self, i: u32) {
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
    pub(crate) fn touch(&mut self, i: u32) {
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
    pub(crate) fn oldest(&self, mut ok: impl FnMut(u32) -> bool) -> Option<u32> {
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

/// The device's HPB state in device control mode: normal reads per
/// sub-region, what it has recommended, its own view of the active
/// regions (an LRU bounded by `max_active_regions`) and the
/// recommendations waiting for the next response UPIU.
pub struct HpbDevice {
    p: HpbParams,
    geo: HpbGeometry,
    reads: Vec<u32>,
    recommended: Vec<bool>,
    rgn_active: Vec<bool>,
    /// LRU of its active regions.
    lru: RegionLru,
    active: u32,
    /// `reads` policy: each region's read count (normal and HPB READs).
    rgn_reads: Vec<u32>,
    /// `reads` policy: active regions with at most `eviction_thld_exit`
    /// reads, so that a read finds "no victim" without walking the LRU.
    low_active: u32,
    pending_act: VecDeque<(u32, u32)>,
    pending_inact: VecDeque<u32>,
}

impl HpbDevice {
    pub fn new(p: HpbParams, user_lpns: u64) -> HpbDevice {
        let geo = HpbGeometry::new(&p, user_lpns);
        let nrgn = geo.regions as usize;
        let nsrgn = nrgn * geo.srgns_per_rgn as usize;
        HpbDevice {
            p,
            geo,
            reads: vec![0; nsrgn],
            recommended: vec![false; nsrgn],
            rgn_active: vec![false; nrgn],
            lru: RegionLru::new(nrgn),
            active: 0,
            rgn_reads: vec![0; nrgn],
            low_active: 0,
            pending_act: VecDeque::new(),
            pending_inact: VecDeque::new(),
        }
    }

    /// The device saw a normal READ of `lpn`.
    pub fn normal_read(&mut self, lpn: u64) {
        if self.p.mode != HpbMode::Device {
            return;
        }
        let (rgn, srgn, _) = self.geo.locate(lpn);
        let f = self.geo.flat(rgn, srgn);
        self.count_rgn_read(rgn);
        if self.rgn_active[rgn as usize] {
            self.lru.touch(rgn);
        }
        self.reads[f] += 1;
        // A recommended sub-region keeps getting normal reads while the host
        // loads it; if they go on (the host dropped it from its LRU, which
        // the device is not told of in device control mode) recommend it
        // again.
        let need = if self.recommended[f] {
            self.p.device_activation_reads.max(RE_RECOMMEND_READS)
        } else {
            self.p.device_activation_reads
        };
        if self.reads[f] < need {
            return;
        }
        self.reads[f] = 0;
        if !self.rgn_active[rgn as usize] {
            if self.active >= self.p.max_active_regions {
                let Some(victim) = self.victim(rgn) else {
                    // No region may leave for this one (`reads` policy):
                    // it stays inactive, as ufshpb_add_region refuses it.
                    return;
                };
                self.deactivate(victim);
            }
            self.rgn_active[rgn as usize] = true;
            self.lru.touch(rgn);
            self.active += 1;
            if self.low(rgn) {
                self.low_active += 1;
            }
        }
        self.recommended[f] = true;
        self.pending_act.push_back((rgn, srgn));
    }

    /// Whether an active region counts as a possible victim of the `reads`
    /// policy.
    fn low(&self, rgn: u32) -> bool {
        self.rgn_reads[rgn as usize] <= self.p.eviction_thld_exit
    }

    /// The region to inactivate so that `rgn` can enter, if the policy
    /// lets it.
    fn victim(&self, rgn: u32) -> Option<usize> {
        match self.p.device_policy {
            HpbDevicePolicy::Lru => self.lru.oldest(|i| i != rgn).map(|i| i as usize),
            HpbDevicePolicy::Reads => {
                if self.rgn_reads[rgn as usize] < self.p.eviction_thld_enter || self.low_active == 0
                {
                    return None;
                }
                self.lru
                    .oldest(|i| i != rgn && self.low(i))
                    .map(|i| i as usize)
            }
        }
    }

    /// Inactivate region `v` and recommend its inactivation to the host.
    fn deactivate(&mut self, v: usize) {
        if self.low(v as u32) {
            self.low_active -= 1;
        }
        self.lru.remove(v as u32);
        self.rgn_active[v] = false;
        self.active -= 1;
        // The count restarts, as ufshpb_update_inactive_info resets
        // rgn->reads: a few reads of a region just displaced must not
        // bring it back (ufshpb.c "Add reads counter" patch).
        self.rgn_reads[v] = 0;
        let base = v * self.geo.srgns_per_rgn as usize;
        for k in 0..self.geo.srgns_per_rgn as usize {
            self.recommended[base + k] = false;
            self.reads[base + k] = 0;
        }
        self.pending_inact.push_back(v as u32);
    }

    /// One more read of `rgn` for the `reads` policy; normalizes every
    /// count when it passes the bucket size (`entries_per_srgn`, as
    /// ufshpb_prep schedules ufshpb_normalization_work).
    fn count_rgn_read(&mut self, rgn: u32) {
        if self.p.device_policy != HpbDevicePolicy::Reads {
            return;
        }
        let r = rgn as usize;
        let was_low = self.low(rgn);
        self.rgn_reads[r] = self.rgn_reads[r].saturating_add(1);
        if was_low && !self.low(rgn) && self.rgn_active[r] {
            self.low_active -= 1;
        }
        if u64::from(self.rgn_reads[r]) > self.geo.entries_per_srgn {
            self.normalize();
        }
    }

    /// ufshpb_normalization_work_handler: shift every count right; an
    /// active region left with no reads is inactivated. O(regions), once
    /// per `entries_per_srgn` reads of the busiest region.
    fn normalize(&mut self) {
        let shift = self.p.normalization_factor;
        self.low_active = 0;
        for v in 0..self.rgn_reads.len() {
            self.rgn_reads[v] >>= shift;
            if !self.rgn_active[v] {
                continue;
            }
            if self.rgn_reads[v] == 0 {
                self.low_active += 1;
                self.deactivate(v);
            } else if self.low(v as u32) {
                self.low_active += 1;
            }
        }
    }

    /// The device saw an HPB READ of `lpn` (keeps its region recent).
    pub fn hpb_read(&mut self, lpn: u64) {
        let (rgn, _, _) = self.geo.locate(lpn);
        self.count_rgn_read(rgn);
        if self.rgn_active[rgn as usize] {
            self.lru.touch(rgn);
        }
    }

    /// The device saw a WRITE of `lpn`: the host copy of that entry is now
    /// stale, so the sub-region may be recommended again.
    pub fn write(&mut self, lpn: u64, blocks: u32) {
        for l in lpn..lpn + u64::from(blocks) {
            let (rgn, srgn, _) = self.geo.locate(l);
            let f = self.geo.flat(rgn, srgn);
            self.recommended[f] = false;
            self.reads[f] = 0;
        }
    }

    /// Recommendations for the next response UPIU (up to 2 + 2).
    pub fn take_rsp(&mut self) -> HpbRsp {
        let mut rsp = HpbRsp::default();
        while (rsp.n_inact as usize) < MAX_INACTIVE_NUM {
            match self.pending_inact.pop_front() {
                Some(r) => {
                    rsp.inact[rsp.n_inact as usize] = r;
                    rsp.n_inact += 1;
                }
                None => break,
            }
        }
        while (rsp.n_act as usize) < MAX_ACTIVE_NUM {
            match self.pending_act.pop_front() {
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
