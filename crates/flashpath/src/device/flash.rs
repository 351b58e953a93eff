//! The parameters of a flash device's back end (NAND geometry and timing,
//! the FTL's map, buffer and GC), and their reader from a profile's
//! `device.flash.*` keys. Every NAND-backed device (the NVMe flash SSD,
//! the UFS device, the eMMC card, the flash-backed SD card) gets its
//! translation layer from [`super::ftl::layer::layer_from_profile`], which
//! builds the page FTL ([`super::FlashDevice`]) from these;
//! [`flash_device_from_profile`] also preconditions it.

use super::ftl::slc::SlcWhenFull;
use super::ftl::GcPolicy;
use super::nand::{CellTiming, ChannelParams, Geometry, ReadByPageType};
use crate::error::{InputError, Result};
use crate::profile::limits::{COST, RATE};
use crate::profile::{range, Profile, Range};
use crate::sim::Ns;

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
    /// The SLC cache in front of TLC (none: every row is programmed at
    /// `timing.t_prog`). See [`super::ftl::slc`].
    pub slc: Option<SlcParams>,
}

/// The SLC cache's parameters, `device.flash.slc_*` (see
/// [`super::ftl::slc`] for the mechanism).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SlcParams {
    /// The static region's bytes over the whole device, kept in SLC mode
    /// on blocks taken from the spare.
    pub static_bytes: u64,
    /// The dynamic region's largest size in bytes, in free user space.
    pub dynamic_bytes: u64,
    /// Bits a cell holds in the native mode (3: TLC): an SLC-mode block
    /// holds this fraction of its native data.
    pub bits_per_cell: u32,
    /// Program and sense time of one row in SLC mode.
    pub t_prog: Ns,
    pub t_read: Ns,
    /// Host idle time after which the firmware folds SLC data to TLC.
    pub fold_idle: Ns,
    pub when_full: SlcWhenFull,
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
            slc: None,
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
            slc: None,
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
        let slc_blocks = self.slc.map_or(0, |s| {
            u64::from(super::ftl::slc::static_blocks(
                &s,
                g.dies(),
                u64::from(g.planes_per_die) * u64::from(g.page_bytes),
                g.pages_per_block,
            ))
        });
        let blocks_needed = per_die.div_ceil(slots_per_block)
            + u64::from(self.gc_high_free_blocks)
            + 2
            + slc_blocks;
        if blocks_needed > u64::from(g.blocks_per_plane) {
            return bad(format!(
                "over_provisioning {} too small: a die needs {} blocks for its data, GC reserve \
                 and static SLC region ({slc_blocks} blocks), has {}",
                self.over_provisioning, blocks_needed, g.blocks_per_plane
            ));
        }
        if let Some(s) = self.slc {
            if s.bits_per_cell < 2 || s.bits_per_cell > g.pages_per_block {
                return bad(format!(
                    "slc_bits_per_cell {} must be 2 (MLC) to 4 (QLC) and at most pages_per_block",
                    s.bits_per_cell
                ));
            }
        }
        Ok(())
    }
}

/// `device.flash.t_read_page_type`, optional: tR of each page type, two
/// values (MLC: LSB, MSB) or three (TLC: LSB, CSB, MSB).
fn read_by_page_type(p: &Profile, v: Option<&[f64]>) -> Result<ReadByPageType> {
    const KEY: &str = "device.flash.t_read_page_type";
    let Some(v) = v else {
        return Ok(ReadByPageType::Uniform);
    };
    let ns: Vec<Ns> = v.iter().map(|v| v.round() as Ns).collect();
    match ns[..] {
        [lsb, msb] => Ok(ReadByPageType::Mlc([lsb, msb])),
        [lsb, csb, msb] => Ok(ReadByPageType::Tlc([lsb, csb, msb])),
        _ => Err(InputError::new(
            p.file_of(KEY),
            None,
            format!(
                "parameter '{KEY}' needs 2 (MLC: LSB, MSB) or 3 (TLC: LSB, CSB, MSB) read \
                 latencies, got {}",
                ns.len()
            ),
        )),
    }
}

/// `device.flash.*` geometry counts: the FTL keeps state per die and per
/// block, so each is bounded where a real part is; `FlashParams::validate`
/// bounds their product.
const FLASH_CHANNELS: Range = range(1.0, 32.0, "NAND channels of one controller");
const FLASH_PER_LEVEL: Range = range(
    1.0,
    16.0,
    "chips per channel, dies per chip and planes per die: 16 at most (ONFI addresses 16 \
     targets per channel)",
);
const FLASH_BLOCKS: Range = range(
    1.0,
    65536.0,
    "blocks of one plane: 65536 at most (2^16 blocks, past any NAND part)",
);
const FLASH_PAGES: Range = range(1.0, 4096.0, "pages of one block: 4096 at most");
const FLASH_PAGE_BYTES: Range = range(
    4096.0,
    65536.0,
    "a NAND page holds whole 4 KiB mapping units: 4 to 64 KiB",
);

impl crate::profile::Choice for GcPolicy {
    const NAMES: &'static [&'static str] = &["greedy", "cost_benefit"];
    fn from_name(name: &str) -> Option<Self> {
        match name {
            "greedy" => Some(GcPolicy::Greedy),
            "cost_benefit" => Some(GcPolicy::CostBenefit),
            _ => None,
        }
    }
}

crate::params! {
    /// The NAND of every flash device (`device.flash.*`: the NVMe flash
    /// SSD, UFS, eMMC, the flash-backed SD card), whatever translation
    /// layer is above it.
    pub struct NandKeys {
        /// NAND channels of the controller.
        channels: u32 = required count_u32("device.flash.channels", FLASH_CHANNELS),
        /// Chips (targets) on each channel.
        chips_per_channel: u32 = required count_u32("device.flash.chips_per_channel", FLASH_PER_LEVEL),
        /// Dies of each chip.
        dies_per_chip: u32 = required count_u32("device.flash.dies_per_chip", FLASH_PER_LEVEL),
        /// Planes of each die.
        planes_per_die: u32 = required count_u32("device.flash.planes_per_die", FLASH_PER_LEVEL),
        /// Erase blocks of each plane.
        blocks_per_plane: u32 = required count_u32("device.flash.blocks_per_plane", FLASH_BLOCKS),
        /// Pages of each block.
        pages_per_block: u32 = required count_u32("device.flash.pages_per_block", FLASH_PAGES),
        /// Bytes of one NAND page.
        page_bytes: u64 = required bytes("device.flash.page_bytes", FLASH_PAGE_BYTES),
        /// tR: a page read from the array into the die's register.
        t_read: Ns = required ns("device.flash.t_read", COST),
        /// tR of each page type: two values (MLC: LSB, MSB) or three (TLC:
        /// LSB, CSB, MSB). Absent: `device.flash.t_read` for every page.
        t_read_page_type: Option<Vec<f64>> =
            optional list("device.flash.t_read_page_type", "time", COST, 64),
        /// tPROG: a page program.
        t_prog: Ns = required ns("device.flash.t_prog", COST),
        /// tBERS: a block erase.
        t_erase: Ns = required ns("device.flash.t_erase", COST),
        /// A channel's data rate.
        channel_rate: f64 = required rate("device.flash.channel_rate", RATE),
        /// A command and address cycle on the channel.
        channel_cmd: Ns = required ns("device.flash.channel_cmd", COST),
        /// The fixed part of a data transfer on the channel.
        channel_xfer_overhead: Ns = required ns("device.flash.channel_xfer_overhead", COST),
    }
}

/// The NAND a profile's `device.flash.*` keys describe: geometry, cell
/// timing and channels (every translation layer's back end).
pub fn nand_from_profile(p: &Profile) -> Result<(Geometry, CellTiming, ChannelParams)> {
    let k = NandKeys::read(p)?;
    Ok((
        Geometry {
            channels: k.channels,
            chips_per_channel: k.chips_per_channel,
            dies_per_chip: k.dies_per_chip,
            planes_per_die: k.planes_per_die,
            blocks_per_plane: k.blocks_per_plane,
            pages_per_block: k.pages_per_block,
            page_bytes: k.page_bytes as u32,
        },
        CellTiming {
            t_read: k.t_read,
            read_by_page_type: read_by_page_type(p, k.t_read_page_type.as_deref())?,
            t_prog: k.t_prog,
            t_erase: k.t_erase,
        },
        ChannelParams {
            bytes_per_sec: k.channel_rate as u64,
            cmd_ns: k.channel_cmd,
            xfer_overhead_ns: k.channel_xfer_overhead,
        },
    ))
}

crate::params! {
    /// The page-mapping FTL of every flash device (`device.flash.*`: the
    /// default layer behind the NVMe, UFS, eMMC and SD front ends).
    pub struct FlashKeys {
        /// Bytes of one L2P map page in NAND.
        map_page_bytes: u64 = required bytes(
            "device.flash.map_page_bytes",
            range(512.0, (1u32 << 20) as f64, "an L2P map page in NAND: 512 B to 1 MiB")
        ),
        /// Bytes per L2P entry (one per 4 KiB mapping unit).
        map_entry_bytes: u64 = required bytes(
            "device.flash.map_entry_bytes",
            range(1.0, 16.0, "one L2P entry: 1 to 16 bytes")
        ),
        /// Map pages the controller SRAM holds (the map cache, LRU).
        map_cache_pages: u32 = required count_u32(
            "device.flash.map_cache_pages",
            range(
                0.0,
                (1u32 << 20) as f64,
                "map pages in controller SRAM: 0 to 2^20 (the SRAM is megabytes)",
            )
        ),
        /// Write buffer capacity in 4 KiB mapping units: a write completes
        /// when buffered.
        write_buffer_units: u32 = required count_u32(
            "device.flash.write_buffer_units",
            range(
                1.0,
                (1u32 << 20) as f64,
                "4 KiB units of the controller's write buffer: 1 to 2^20 (4 GiB)",
            )
        ),
        /// Spare capacity over user capacity, (physical - user) / user.
        over_provisioning: f64 = required ratio(
            "device.flash.over_provisioning",
            range(
                1e-3,
                1.0,
                "spare over user capacity: GC needs some, and a device with more spare than \
                 user space is not a product",
            )
        ),
        /// GC starts on a die when its free blocks fall below this.
        gc_low_free_blocks: u32 = required count_u32("device.flash.gc_low_free_blocks", FLASH_BLOCKS),
        /// GC runs until the die has this many free blocks.
        gc_high_free_blocks: u32 = required count_u32("device.flash.gc_high_free_blocks", FLASH_BLOCKS),
        /// GC's victim selection.
        gc_policy: GcPolicy = required choice("device.flash.gc_policy", GcPolicy),
        /// The device comes full from the factory: every LPN is mapped, so
        /// reads of never-written data cost a real NAND read.
        prefilled: bool = required flag("device.flash.prefilled"),
    }
}

crate::params! {
    /// The state the FTL starts in (UFS and the NVMe flash SSD; the eMMC
    /// and SD cards start fresh).
    pub struct PreconditionParams {
        /// Random 4 KiB overwrites before the run, in device capacities.
        pub precondition_random_overwrites: f64 = required ratio(
            "device.flash.precondition_random_overwrites",
            range(
                0.0,
                4.0,
                "random 4 KiB overwrites before the run, in device capacities: garbage \
                 collection reaches its steady state within a few, and each costs about 8 s \
                 per 64 GiB of device before the run starts",
            )
        ),
    }
}

impl FlashParams {
    /// The device back end's parameters from `device.flash.*` (the NAND
    /// and page FTL of every flash device).
    pub fn from_profile(p: &Profile) -> Result<FlashParams> {
        let (geometry, timing, channel) = nand_from_profile(p)?;
        let k = FlashKeys::read(p)?;
        let fp = FlashParams {
            geometry,
            timing,
            channel,
            unit_bytes: 4096,
            map_page_bytes: k.map_page_bytes as u32,
            map_entry_bytes: k.map_entry_bytes as u32,
            map_cache_pages: k.map_cache_pages,
            write_buffer_units: k.write_buffer_units,
            over_provisioning: k.over_provisioning,
            gc_low_free_blocks: k.gc_low_free_blocks,
            gc_high_free_blocks: k.gc_high_free_blocks,
            gc_policy: k.gc_policy,
            prefilled: k.prefilled,
            check_integrity: cfg!(debug_assertions),
            slc: slc_from_profile(p)?,
        };
        fp.validate()
            .map_err(|e| InputError::new(p.file_of("device.flash.channels"), None, e.message))?;
        Ok(fp)
    }
}

/// The FTL over NAND a profile's `device.flash.*` keys describe,
/// preconditioned with `device.flash.precondition_random_overwrites`
/// device capacities of random 4 KiB overwrites: the back end of every
/// front end that reads the key (the UFS device, the NVMe flash SSD).
pub fn flash_device_from_profile(p: &Profile, seed: u64) -> Result<super::FlashDevice> {
    let fp = FlashParams::from_profile(p)?;
    let mut ftl = super::FlashDevice::new(&fp, seed)?;
    let overwrites = PreconditionParams::read(p)?.precondition_random_overwrites;
    if overwrites > 0.0 {
        ftl.precondition(true, overwrites, seed);
    }
    Ok(ftl)
}

/// Whether the profile describes a flash back end: any declared key of the
/// translation layer, NAND, FTL, preconditioning or SLC cache. A front end
/// with a service-time model too (NVMe, SD) is then the flash device, and
/// a missing key is refused by name.
pub fn has_flash_back_end(p: &Profile) -> bool {
    let back_end = [
        super::ftl::layer::LayerParams::DECLS,
        NandKeys::DECLS,
        FlashKeys::DECLS,
        PreconditionParams::DECLS,
        SlcKeys::DECLS,
    ];
    back_end.iter().flat_map(|d| d.iter()).any(|d| p.has(d.key))
}

/// The range of an SLC region's size.
const SLC_REGION: Range = range(
    0.0,
    1024.0 * 1024.0 * 1024.0 * 1024.0,
    "an SLC region of 0 to 1 TiB (a drive's cache is a few percent of its capacity)",
);

crate::params! {
    /// The FTL's SLC cache (`device.flash.slc_*`), present when
    /// `slc_static` is given; then every key is required: a cache without
    /// its timing is no cache.
    pub struct SlcKeys {
        /// The static SLC region, reserved on spare blocks.
        slc_static: u64 = required bytes("device.flash.slc_static", SLC_REGION),
        /// The dynamic SLC region at most, taken from unwritten space.
        slc_dynamic: u64 = required bytes("device.flash.slc_dynamic", SLC_REGION),
        /// Bits per cell of the native mode.
        slc_bits_per_cell: u32 = required count_u32(
            "device.flash.slc_bits_per_cell",
            range(
                2.0,
                4.0,
                "bits per cell of the native mode: 2 (MLC), 3 (TLC) or 4 (QLC)",
            )
        ),
        /// A page program in SLC mode.
        slc_t_prog: Ns = required ns("device.flash.slc_t_prog", COST),
        /// A page read in SLC mode.
        slc_t_read: Ns = required ns("device.flash.slc_t_read", COST),
        /// Host idle time after which the drive folds SLC rows to the native mode.
        slc_fold_idle: Ns = required ns("device.flash.slc_fold_idle", COST),
        /// What a write does when its die's SLC region is full.
        slc_when_full: SlcWhenFull = required choice("device.flash.slc_when_full", SlcWhenFull),
    }
}

/// `device.flash.slc_*`: the SLC cache, present when `slc_static` is given.
fn slc_from_profile(p: &Profile) -> Result<Option<SlcParams>> {
    if !p.has("device.flash.slc_static") {
        return Ok(None);
    }
    let k = SlcKeys::read(p)?;
    Ok(Some(SlcParams {
        static_bytes: k.slc_static,
        dynamic_bytes: k.slc_dynamic,
        bits_per_cell: k.slc_bits_per_cell,
        t_prog: k.slc_t_prog,
        t_read: k.slc_t_read,
        fold_idle: k.slc_fold_idle,
        when_full: k.slc_when_full,
    }))
}
