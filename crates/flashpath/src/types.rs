//! The vocabulary every layer shares: what an I/O is (`Ddir`, `IoUnit`) and
//! where a completion interrupt goes (`IrqCpu`), and the frequency QoS
//! ceiling the host's PM QoS and a device's devfreq both use. It sits below every layer
//! (docs/design.md section 1; crates/flashpath/tests/layers.rs checks the
//! edges) so that a device, a driver or the block layer names an I/O
//! without importing the workload that makes it, and the host and the
//! block layer name the interrupt's CPU without importing each other.

/// Data direction, in fio's order (read, write, trim).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Ddir {
    Read = 0,
    Write = 1,
    Trim = 2,
}

impl Ddir {
    pub const ALL: [Ddir; 3] = [Ddir::Read, Ddir::Write, Ddir::Trim];
    pub fn index(self) -> usize {
        self as usize
    }
}

/// One I/O a job asks for: direction, byte offset on the device, length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IoUnit {
    pub ddir: Ddir,
    pub offset: u64,
    pub len: u32,
}

/// A data placement hint the host attaches to a write: none, a write
/// lifetime hint (`rw_hint`, UFS/SCSI streams) or an NVMe FDP placement
/// handle.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Hint {
    #[default]
    None,
    Lifetime(u8),
    Placement(u16),
}

/// Which CPU takes a device's completion interrupt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IrqCpu {
    /// The CPU that submitted the request (per-CPU completion queues with
    /// matching MSI-X affinity, as NVMe sets up).
    Submitter,
    /// A fixed CPU (a single-vector controller).
    Fixed(u32),
    /// GIC 1-of-N routing over a set of CPUs (bit c = CPU c): the
    /// distributor sends the interrupt to a CPU of the set that is not
    /// asleep, and wakes one only when all are (Qualcomm's
    /// `drivers/soc/qcom/gic_intr_routing.c` sets InterruptRoutingMode for
    /// an SPI whose affinity is a whole CPU class; GIC-600/700).
    OneOfN(u64),
}

/// `FREQ_QOS_MAX_DEFAULT_VALUE` = S32_MAX, in kHz (include/linux/pm_qos.h):
/// the host's PM QoS adds a request at it, a device's devfreq reads it.
pub const FREQ_QOS_MAX_DEFAULT_VALUE: u64 = i32::MAX as u64;

/// What a request asks of the device: the operation every layer from the
/// workload down to the device carries (the kernel's `REQ_OP_*`, and the
/// device command each driver builds from it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Read,
    Write,
    /// Make everything written so far durable (SYNCHRONIZE CACHE, NVMe
    /// Flush, eMMC cache flush).
    Flush,
    /// Deallocate the range (UNMAP, NVMe DSM deallocate, eMMC discard).
    Trim,
    /// Write zeroes over the range without data (NVMe Write Zeroes, SCSI
    /// WRITE SAME with UNMAP): REQ_OP_WRITE_ZEROES. No device here
    /// advertises it (the kernel then writes zero pages instead,
    /// blkdev_issue_zeroout's fallback in block/blk-lib.c).
    WriteZeroes,
    /// A zone management command (ZBC/ZAC, NVMe ZNS, zoned UFS); no device
    /// is zoned yet.
    ZoneMgmt(ZoneAction),
    /// Write at the zone's write pointer (NVMe ZNS Zone Append,
    /// REQ_OP_ZONE_APPEND); the completion's result is the LBA written.
    ZoneAppend,
    /// SCSI VERIFY (SBC-4 5.32/5.34), sent only through SG_IO (fio's sg
    /// engine, `sg_write_mode=verify_bytchk_*`): the device checks the
    /// range on its medium; BYTCHK 0 moves no data, 1 compares a data-out
    /// buffer of the whole range, 3 one block replicated over it.
    Verify {
        bytchk: u8,
    },
    /// SCSI WRITE SAME(10/16) (SBC-4 5.50-5.52) through SG_IO: one block
    /// out, replicated over the range; with NDOB no data out (zeroes).
    WriteSame {
        ndob: bool,
    },
    /// SCSI WRITE AND VERIFY(10/16) (SBC-4 5.45) through SG_IO, BYTCHK 0:
    /// a write the device reads back from its medium before it answers.
    WriteVerify,
}

impl Op {
    /// An operation every conventional device here implements (read,
    /// write, flush, trim); the others are answered "not supported" until a
    /// device implements them.
    pub fn conventional(self) -> bool {
        matches!(self, Op::Read | Op::Write | Op::Flush | Op::Trim)
    }
}

/// Zone management actions (NVMe ZNS Zone Management Send, ZBC).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ZoneAction {
    Open,
    Close,
    Finish,
    Reset,
}

/// A zone's condition in a zone report (include/uapi/linux/blkzoned.h
/// `enum blk_zone_cond`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlkZoneCond {
    /// A conventional zone: no write pointer.
    NotWp,
    Empty,
    ImpOpen,
    ExpOpen,
    Closed,
    ReadOnly,
    Full,
    Offline,
}

/// One zone of a zone report (BLKREPORTZONE's `struct blk_zone`), in
/// bytes: what a zoned disk's driver reports and fio's zbd.c reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlkZone {
    pub start: u64,
    pub len: u64,
    pub capacity: u64,
    pub wp: u64,
    /// BLK_ZONE_TYPE_CONVENTIONAL (else sequential write required).
    pub conventional: bool,
    pub cond: BlkZoneCond,
}
