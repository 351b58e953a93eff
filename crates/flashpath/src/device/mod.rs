//! The flash device's back end: FTL (page mapping, map cache, write buffer,
//! garbage collection) over NAND (channels, dies, planes), usable from an
//! event loop without events of its own.
//!
//! # Model
//!
//! NAND resources are timelines (see [`nand`]): the caller asks
//! `read(now, ...)` / `write(now, ...)` and gets the completion time back,
//! computed from the channel and die reservations the request made. FIFO in
//! call order per die; first-fit gap filling on the channel buses.
//!
//! The FTL ([`ftl::FlashDevice`]) maps 4 KiB logical pages (LPNs) to 4 KiB
//! physical slots (PPNs) of NAND pages. The L2P map lives in NAND map pages
//! of `map_page_bytes / map_entry_bytes` entries (16 KiB / 4 B = 4096
//! entries, covering 16 MiB: HotStorage'17 slides, KERNEL-NOTES §2(c)); the
//! controller caches `map_cache_pages` of them (LRU). A read whose map page
//! is not cached reads it from NAND first (SEEDS.md §2, KERNEL-NOTES §2(e)).
//!
//! # API (all times integer ns, [`crate::sim::Ns`])
//!
//! ```text
//! FlashDevice::new(&FlashParams, seed) -> Result<FlashDevice>
//! read(now, lpn, npages) -> Ns                       completion time
//! write(now, lpn, npages) -> Ns                      buffered (may stall on a full buffer)
//! flush(now) -> Ns                                   everything buffered is on NAND
//! trim(now, lpn, npages) -> Ns
//! read_with_ppn(now, lpn, ppn) -> (Ns, bool)         HPB READ: skips the map lookup if ppn is current
//! read_hpb(now, lpn, &[ppn]) -> (Ns, bool)           same, several pages
//! ppn_of(lpn) -> Option<Ppn>                         current mapping (no timing, no cache effect)
//! map_page_of(lpn), map_page_generation(mp)          staleness for the host (HPB)
//! precondition(sequential, random_overwrites, seed) -> FtlStats
//! stats() -> &FtlStats, reset_stats(), memory() -> MemoryUse
//! ```

pub mod devfreq;
pub mod ftl;
pub mod nand;

pub use ftl::{FactoryLayout, FlashDevice, FtlStats, GcPolicy, MemoryUse, Ppn};
pub use nand::{CellTiming, CellType, ChannelParams, Geometry, ReadByPageType};

use crate::error::{InputError, Result};

/// Every parameter of the device back end. Values come from profiles; the
/// constructors below are documented examples.
#[derive(Clone, Debug, PartialEq)]
pub struct FlashParams {
    pub geometry: Geometry,
    pub timing: CellTiming,
    pub channel: ChannelParams,
    /// Mapping unit (logical page) in bytes. 4096: the L2P entry and the HPB
    /// entry are per 4 KiB block (KERNEL-NOTES §2(a), §2(c)).
    pub unit_bytes: u32,
    /// Bytes of one L2P map page in NAND (16 KiB: HotStorage'17 slides).
    pub map_page_bytes: u32,
    /// Bytes per L2P entry (4 B per 4 KiB: HotStorage'17 slides).
    pub map_entry_bytes: u32,
    /// Map pages the controller SRAM holds (the map cache, LRU).
    pub map_cache_pages: u32,
    /// Write buffer capacity in mapping units. A write completes when
    /// buffered; the buffer is flushed one multi-plane page row per die.
    pub write_buffer_units: u32,
    /// Spare capacity over user capacity, (physical − user) / user, e.g.
    /// 0.07 for the "7%" of a GB-vs-GiB drive. Physical = every block.
    pub over_provisioning: f64,
    /// GC starts on a die when its free blocks fall below this...
    pub gc_low_free_blocks: u32,
    /// ...and runs until the die has this many.
    pub gc_high_free_blocks: u32,
    pub gc_policy: GcPolicy,
    /// The device comes full from the factory: every LPN is mapped (laid out
    /// sequentially, striped over dies), so reads of never-written data cost
    /// a real NAND read. If false, unwritten LPNs read as zeros for free.
    pub prefilled: bool,
    /// Check the data-integrity oracle on every read (default: debug builds).
    pub check_integrity: bool,
}

/// Erase blocks of one device the FTL keeps per-block state for (the
/// shipped profiles have under 24 000).
pub const MAX_BLOCKS: u64 = 1 << 20;

impl FlashParams {
    /// Example UFS 2.1-class 64 GiB TLC device, for tests and examples (not a
    /// calibrated profile). Geometry: 2 channels × 1 chip × 2 dies × 2 planes,
    /// 16 KiB pages, 256 pages/block, 2176 blocks/plane = 68 GiB raw
    /// **[assumption]**; 6.25% over-provisioning gives 64 GiB of user space.
    /// Map cache: 64 map pages = 1 GiB of LBA coverage, the coverage the seed
    /// data imply (KERNEL-NOTES §2(c), §2(e), **[derived]**). Channel 400 MB/s
    /// (Toggle 2.0 class) **[assumption]**.
    pub fn example_ufs_64g() -> FlashParams {
        FlashParams {
            geometry: Geometry {
                channels: 2,
                chips_per_channel: 1,
                dies_per_chip: 2,
                planes_per_die: 2,
                blocks_per_plane: 2176,
                pages_per_block: 256,
                page_bytes: 16384,
            },
            timing: CellTiming::TLC,
            channel: ChannelParams {
                bytes_per_sec: 400_000_000,
                ..ChannelParams::MQSIM
            },
            unit_bytes: 4096,
            map_page_bytes: 16384,
            map_entry_bytes: 4,
            map_cache_pages: 64,
            write_buffer_units: 256,
            over_provisioning: 0.0625,
            gc_low_free_blocks: 8,
            gc_high_free_blocks: 16,
            gc_policy: GcPolicy::Greedy,
            prefilled: true,
            check_integrity: cfg!(debug_assertions),
        }
    }

    /// A tiny device for tests: `dies` dies on `channels` channels, SLC
    /// timing, 4 KiB pages, 1 plane.
    pub fn small(channels: u32, dies_per_channel: u32, blocks: u32, pages: u32) -> FlashParams {
        FlashParams {
            geometry: Geometry {
                channels,
                chips_per_channel: dies_per_channel,
                dies_per_chip: 1,
                planes_per_die: 1,
                blocks_per_plane: blocks,
                pages_per_block: pages,
                page_bytes: 4096,
            },
            timing: CellTiming::SLC,
            channel: ChannelParams::MQSIM,
            unit_bytes: 4096,
            map_page_bytes: 16384,
            map_entry_bytes: 4,
            map_cache_pages: 16,
            write_buffer_units: 64,
            over_provisioning: 0.25,
            gc_low_free_blocks: 3,
            gc_high_free_blocks: 5,
            gc_policy: GcPolicy::Greedy,
            prefilled: true,
            check_integrity: true,
        }
    }

    /// Slots (mapping units) per physical page of one plane.
    pub fn units_per_page(&self) -> u32 {
        self.geometry.page_bytes / self.unit_bytes
    }

    /// L2P entries in one map page.
    pub fn entries_per_map_page(&self) -> u64 {
        u64::from(self.map_page_bytes / self.map_entry_bytes)
    }

    pub fn physical_units(&self) -> u64 {
        self.geometry.raw_bytes() / u64::from(self.unit_bytes)
    }

    /// User-visible logical pages: physical / (1 + over-provisioning).
    pub fn user_units(&self) -> u64 {
        (self.physical_units() as f64 / (1.0 + self.over_provisioning)).floor() as u64
    }

    pub fn user_bytes(&self) -> u64 {
        self.user_units() * u64::from(self.unit_bytes)
    }

    pub fn validate(&self) -> Result<()> {
        let bad = |m: String| Err(InputError::new("device profile", None, m));
        let g = &self.geometry;
        if g.channels == 0
            || g.chips_per_channel == 0
            || g.dies_per_chip == 0
            || g.planes_per_die == 0
            || g.blocks_per_plane == 0
            || g.pages_per_block == 0
        {
            return bad("every geometry count must be at least 1".into());
        }
        if self.unit_bytes == 0 || !g.page_bytes.is_multiple_of(self.unit_bytes) {
            return bad(format!(
                "page_bytes {} must be a multiple of the mapping unit {}",
                g.page_bytes, self.unit_bytes
            ));
        }
        if self.map_entry_bytes == 0 || self.map_page_bytes < self.map_entry_bytes {
            return bad("map_page_bytes must hold at least one map entry".into());
        }
        if self.channel.bytes_per_sec == 0 {
            return bad("channel rate must be positive".into());
        }
        if self.write_buffer_units == 0 {
            return bad("write_buffer_units must be at least 1".into());
        }
        if self.over_provisioning.is_nan() || self.over_provisioning <= 0.0 {
            return bad("over_provisioning must be positive (GC needs spare blocks)".into());
        }
        if self.gc_low_free_blocks < 2 || self.gc_high_free_blocks <= self.gc_low_free_blocks {
            return bad("need 2 <= gc_low_free_blocks < gc_high_free_blocks".into());
        }
        // The FTL keeps a valid count, a state, a stamp, an erase count and
        // a reverse map per block: a million blocks is hundreds of MiB.
        let blocks = u64::from(g.channels)
            * u64::from(g.chips_per_channel)
            * u64::from(g.dies_per_chip)
            * u64::from(g.blocks_per_plane);
        if blocks > MAX_BLOCKS {
            return bad(format!(
                "{blocks} blocks in all (dies x blocks_per_plane) is more than the {MAX_BLOCKS} \
                 the FTL keeps state for"
            ));
        }
        if self.physical_units() >= u64::from(u32::MAX) {
            return bad("device too large for 32-bit physical addresses of 4 KiB units".into());
        }
        // Every die must hold its share of user data plus the GC reserve.
        let dies = u64::from(g.dies());
        let slots_per_block = u64::from(g.pages_per_block)
            * u64::from(g.planes_per_die)
            * u64::from(self.units_per_page());
        let per_die = self.user_units().div_ceil(dies);
        let blocks_needed =
            per_die.div_ceil(slots_per_block) + u64::from(self.gc_high_free_blocks) + 2;
        if blocks_needed > u64::from(g.blocks_per_plane) {
            return bad(format!(
                "over_provisioning {} too small: a die needs {} blocks for its data and GC reserve, has {}",
                self.over_provisioning, blocks_needed, g.blocks_per_plane
            ));
        }
        Ok(())
    }
}
