//! The devices behind the drivers, as the driver talks to them: through
//! commands. Following MQSim's split, a device is a front end (its host
//! interface: command decode, queues, caches, firmware cores) over a back
//! end (the FTL over NAND PHY, or plain memory); the driver keeps the host
//! controller's side (queues, doorbells, link transfers, interrupts, clock
//! votes) and the link in between is in [`crate::link`].
//!
//! | device | model | driver |
//! |---|---|---|
//! | [`ram::RamDevice`] | fixed latency, optional bandwidth | null_blk |
//! | [`queue::QueueDevice`] | servers behind an IOPS and bandwidth throttle | generic |
//! | [`nvme::NvmeSsd`] | parallel units, fixed + media time | nvme |
//! | [`nvme_flash::NvmeFlashSsd`] | NVMe front end (slots, MDTS, DMA, data cache) over the FTL | nvme |
//! | [`sd::SdCard`] | access time + internal rate, one at a time | sdhci |
//! | [`sd::SdFlashCard`] | SD firmware, one command at a time, over a translation layer | sdhci |
//! | [`emmc::EmmcCard`] | firmware, read-ahead cache, write commit over a translation layer | mmc |
//! | [`ufs::UfsDevice`] | firmware core, HPB device side over a translation layer | ufs |
//! | [`ftl::FlashDevice`] | the page FTL over NAND, every flash front end's default layer | |
//! | [`zns::Zns`] | zones over NAND, the layer of a ZNS namespace or a zoned UFS LU | |
//!
//! Every flash front end holds its translation layer through one seam
//! ([`ftl::layer`]: `Box<dyn TranslationLayer>` built by
//! `layer_from_profile`), so a new layer is behind all of them.
//!
//! Every device takes a [`Command`] through [`BlockBackend::submit`] and
//! answers with a [`Completion`]: a booking model, the device reserves
//! its resources' time when the command reaches it and returns when the
//! work is done, so most commands need no event. Devices with a richer
//! protocol (the UFS device's map-miss path and HPB sense data, the eMMC
//! card's command-queue tasks) add methods of their own on top.
//!
//! # The FTL back end
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

pub mod badblocks;
pub mod devfreq;
pub mod emmc;
pub mod fdp;
pub mod flash;
pub mod ftl;
pub mod nand;
pub mod nvme;
pub mod nvme_arb;
pub mod nvme_flash;
pub mod queue;
pub mod ram;
pub mod sd;
pub mod ufs;
pub mod zns;

pub use ftl::{FactoryLayout, FlashDevice, FtlStats, GcPolicy, MemoryUse, ModelBytes, Ppn};
pub use nand::{CellTiming, CellType, ChannelParams, Geometry, ReadByPageType};

pub use badblocks::BadBlocks;
pub use flash::{FlashParams, SlcParams, MAX_BLOCKS};

use crate::sim::Ns;
use crate::types::Ddir;
pub use crate::types::{Op, ZoneAction};

crate::params! {
    /// The size every device has.
    pub struct CapacityParams {
        /// The device's capacity (what the block device's size shows).
        pub capacity: u64 = required bytes("device.capacity", crate::profile::limits::CAPACITY),
    }
}

pub use crate::types::Hint;

/// One command as the device receives it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Command {
    pub op: Op,
    /// Byte offset on the device (the LBA times the logical block size).
    pub offset: u64,
    /// Bytes moved (0 for a flush or a zone action on the whole zone).
    pub len: u32,
    pub hint: Hint,
    /// Force Unit Access on a write: complete only once the data is on
    /// stable media (NVMe Write's FUA bit, CDW12 bit 30; SCSI WRITE's FUA;
    /// eMMC CMD23's reliable write). Ignored on other operations.
    pub fua: bool,
}

impl Op {
    /// The operation of a block-layer data direction.
    pub fn of_ddir(ddir: Ddir) -> Op {
        match ddir {
            Ddir::Read => Op::Read,
            Ddir::Write => Op::Write,
            Ddir::Trim => Op::Trim,
        }
    }
}

impl Command {
    /// The command of a block-layer data direction.
    pub fn new(ddir: Ddir, offset: u64, len: u32) -> Command {
        Command::of(Op::of_ddir(ddir), offset, len)
    }

    /// A command of any operation, without FUA or a hint.
    pub fn of(op: Op, offset: u64, len: u32) -> Command {
        Command {
            op,
            offset,
            len,
            hint: Hint::None,
            fua: false,
        }
    }

    /// First 4 KiB mapping unit and the number of units the command covers
    /// (the FTL's LPNs).
    pub fn units(&self) -> (u64, u32) {
        (
            self.offset / UNIT,
            u64::from(self.len).div_ceil(UNIT) as u32,
        )
    }
}

/// The mapping unit of every flash device here: 4 KiB (one L2P entry, one
/// HPB entry).
pub const UNIT: u64 = 4096;

/// How a command ended, as the device reports it (an NVMe completion
/// entry's status field, a SCSI status with its sense key, an eMMC R1
/// response's error bits); the driver turns it into the block layer's
/// status (`driver::BlkStatus`), as nvme_error_status
/// (drivers/nvme/host/core.c) and scsi_io_completion do.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Status {
    #[default]
    Ok,
    /// The device does not implement the operation (a zone action on a
    /// conventional device): Invalid Command Opcode / ILLEGAL REQUEST.
    Unsupported,
    /// The command failed on the medium or in the device (a bad block):
    /// what null_blk's badblocks answer (BLK_STS_IOERR,
    /// drivers/block/null_blk/main.c null_handle_badblocks).
    IoError,
    /// A field of the command is wrong for the device (NVMe Invalid Field
    /// in Command, 0x02: a Zone Append off a zone's start or past ZASL).
    InvalidField,
    /// A zoned device's rule was broken (the NVMe ZNS statuses).
    Zone(ZoneStatus),
}

/// The Zoned Namespace Command Set specific status values (NVMe ZNS
/// Command Set Specification 1.1, figure 27; Linux's NVME_SC_ZONE_* in
/// include/linux/nvme.h), with their status codes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ZoneStatus {
    /// 0xB8: the command would cross the zone's writable capacity.
    BoundaryError,
    /// 0xB9: a write to a full zone.
    Full,
    /// 0xBA: a write to a read-only zone.
    ReadOnly,
    /// 0xBB: any access to an offline zone.
    Offline,
    /// 0xBC: a write not at the zone's write pointer.
    InvalidWrite,
    /// 0xBD: the zone would need an active resource and none is left.
    TooManyActive,
    /// 0xBE: the zone would need an open resource and none is left.
    TooManyOpen,
    /// 0xBF: the zone's state does not allow the action.
    InvalidTransition,
}

impl ZoneStatus {
    /// The Status Code (Status Code Type 1h, command specific).
    pub fn code(self) -> u8 {
        match self {
            ZoneStatus::BoundaryError => 0xB8,
            ZoneStatus::Full => 0xB9,
            ZoneStatus::ReadOnly => 0xBA,
            ZoneStatus::Offline => 0xBB,
            ZoneStatus::InvalidWrite => 0xBC,
            ZoneStatus::TooManyActive => 0xBD,
            ZoneStatus::TooManyOpen => 0xBE,
            ZoneStatus::InvalidTransition => 0xBF,
        }
    }
}

/// The device's answer: when it has done the command's work (read data
/// ready to move, write data accepted, trim or flush done), how it ended
/// and the value a command returns (the LBA a zone append wrote; `None`
/// for every other command).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Completion {
    pub at: Ns,
    pub status: Status,
    pub result: Option<u64>,
}

impl Completion {
    pub fn ok(at: Ns) -> Completion {
        Completion {
            at,
            status: Status::Ok,
            result: None,
        }
    }
    pub fn unsupported(at: Ns) -> Completion {
        Completion {
            at,
            status: Status::Unsupported,
            result: None,
        }
    }
    /// The same completion time with another status (a fault the device
    /// reports for the command: see [`BadBlocks`]).
    pub fn with_status(self, status: Status) -> Completion {
        Completion { status, ..self }
    }
}

/// A device as its driver drives it: commands in, completions out. Drivers
/// hold their device by its concrete type (static dispatch, nothing boxed
/// per command); the trait is what every device answers the same way.
pub trait BlockBackend {
    /// The device's capacity in bytes.
    fn capacity(&self) -> u64;
    /// The command has reached the device at `at` (after the link);
    /// book its work and say when it is done.
    fn submit(&mut self, at: Ns, cmd: &Command) -> Completion;
}

/// The FTL as a back end: reads, writes, trims and flushes of 4 KiB units.
impl BlockBackend for FlashDevice {
    fn capacity(&self) -> u64 {
        self.user_lpns() * UNIT
    }
    fn submit(&mut self, at: Ns, cmd: &Command) -> Completion {
        let (lpn, n) = cmd.units();
        match cmd.op {
            Op::Read => Completion::ok(self.read(at, lpn, n)),
            Op::Write => Completion::ok(self.write(at, lpn, n)),
            Op::Trim => Completion::ok(self.trim(at, lpn, n)),
            Op::Flush => Completion::ok(self.flush(at)),
            Op::WriteZeroes
            | Op::ZoneMgmt(_)
            | Op::ZoneAppend
            | Op::Verify { .. }
            | Op::WriteSame { .. }
            | Op::WriteVerify => Completion::unsupported(at),
        }
    }
}
