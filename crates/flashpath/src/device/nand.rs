//! NAND flash: geometry, array timing per cell type, and the two shared
//! resources of the back end (channel buses and dies) as *timelines*.
//!
//! The device needs no events of its own. Every NAND operation is placed on
//! the timelines when it is issued and its completion time is computed
//! arithmetically:
//!
//! * a **die** does one array operation at a time (sense, program, erase)
//!   and keeps its page register busy until the data has left it, so it is a
//!   single `busy_until` (FIFO in call order);
//! * a **channel** bus is shared by all dies behind it and carries only the
//!   data (and the data-out/data-in command cycles). It is a short sorted
//!   list of reserved intervals with first-fit gap filling, so die
//!   interleaving works as on real hardware: while die A senses for tR,
//!   die B's transfer can use the bus. A single `busy_until` would serialise
//!   every die behind the last transfer reserved, which is wrong by a factor
//!   of the dies per channel.
//!
//! This is MQSim's resource model (`CMU-SAFARI/MQSim:src/ssd/NVM_PHY_ONFI_NVDDR2.cpp`:
//! command/address cycles, tR, data-out on the channel; die-level
//! interleaving; multi-plane commands of one page offset on the planes of a
//! die) without its event queue.

pub use crate::sim::timeline::Timeline;
use crate::sim::Ns;

const NOT_POW2: u32 = u32::MAX;

/// Cell technology, used to pick example timings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CellType {
    Slc,
    Mlc,
    Tlc,
}

/// How tR depends on which bit of its cells a page holds: one value for
/// every page, or one per page type as MQSim's `Flash_Chip::
/// Get_command_execution_latency` (`CMU-SAFARI/MQSim:src/ssd/Flash_Chip.h`,
/// its `Page_Read_Latency_LSB/CSB/MSB`): an MLC page's type is its index in
/// the block mod 2; a TLC page's follows the shared-page program order of
/// Yaakobi et al., "Characterization and Error-Correcting Codes for TLC
/// Flash Memories", ICNC 2012 (pages 0-5 LSB, 6-7 CSB, then pairs of pages
/// cycling LSB, CSB, MSB). Sensing an upper page takes more read levels,
/// so its tR is longer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadByPageType {
    /// Every page senses in `t_read`.
    Uniform,
    /// MLC: LSB, MSB.
    Mlc([Ns; 2]),
    /// TLC: LSB, CSB, MSB.
    Tlc([Ns; 3]),
}

impl ReadByPageType {
    /// The page type (0 = LSB, 1 = CSB or MLC's MSB, 2 = MSB) of the page at
    /// `page` within its block, by MQSim's rule.
    pub fn page_type(self, page: u32) -> usize {
        match self {
            ReadByPageType::Uniform => 0,
            ReadByPageType::Mlc(_) => (page % 2) as usize,
            ReadByPageType::Tlc(_) => match page {
                0..=5 => 0,
                6..=7 => 1,
                _ => (((page - 8) >> 1) % 3) as usize,
            },
        }
    }

    /// tR of the page at `page`, `None` when every page has the same.
    #[inline]
    fn t_read_of(self, page: u32) -> Option<Ns> {
        match self {
            ReadByPageType::Uniform => None,
            ReadByPageType::Mlc(t) => Some(t[self.page_type(page)]),
            ReadByPageType::Tlc(t) => Some(t[self.page_type(page)]),
        }
    }
}

/// Array timings of one die. Values come from profiles; the constants below
/// are documented examples.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CellTiming {
    /// Page read (array to page register), tR (of every page when
    /// `read_by_page_type` is `Uniform`).
    pub t_read: Ns,
    /// tR per page type, where the profile gives one.
    pub read_by_page_type: ReadByPageType,
    /// Page program (page register to array), tPROG.
    pub t_prog: Ns,
    /// Block erase, tBERS.
    pub t_erase: Ns,
}

impl CellTiming {
    /// SLC: tR 25 µs, tPROG 200–300 µs (midpoint 250), erase 1.5–2 ms (2 ms).
    /// Source: HP white paper "SSD technology differences between SLC, MLC
    /// and TLC NAND", via KERNEL-NOTES §1(c) / §6.
    pub const SLC: CellTiming = CellTiming {
        t_read: 25_000,
        read_by_page_type: ReadByPageType::Uniform,
        t_prog: 250_000,
        t_erase: 2_000_000,
    };
    /// MLC: tR 50 µs, tPROG 600–900 µs (midpoint 750), erase 3 ms. Same source.
    pub const MLC: CellTiming = CellTiming {
        t_read: 50_000,
        read_by_page_type: ReadByPageType::Uniform,
        t_prog: 750_000,
        t_erase: 3_000_000,
    };
    /// TLC: tR ~75 µs, tPROG ~900–1350 µs (midpoint 1125), erase ~4.5 ms.
    /// Same source; tR 75 µs is also MQSim's default page read latency
    /// (`CMU-SAFARI/MQSim:ssdconfig.xml`, KERNEL-NOTES §6), and MQSim's block
    /// erase is 3.8 ms.
    pub const TLC: CellTiming = CellTiming {
        t_read: 75_000,
        read_by_page_type: ReadByPageType::Uniform,
        t_prog: 1_125_000,
        t_erase: 4_500_000,
    };

    /// tR of the page at `page` within its block.
    #[inline]
    pub fn t_read_of(&self, page: u32) -> Ns {
        self.read_by_page_type
            .t_read_of(page)
            .unwrap_or(self.t_read)
    }

    pub fn for_cell(cell: CellType) -> CellTiming {
        match cell {
            CellType::Slc => Self::SLC,
            CellType::Mlc => Self::MLC,
            CellType::Tlc => Self::TLC,
        }
    }
}

/// The physical hierarchy: channel / chip (package, one chip-enable) / die
/// (LUN) / plane / block / page, as in MQSim's `Flash_Parameter_Set`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    pub channels: u32,
    pub chips_per_channel: u32,
    pub dies_per_chip: u32,
    pub planes_per_die: u32,
    pub blocks_per_plane: u32,
    pub pages_per_block: u32,
    /// Bytes of one physical page of one plane.
    pub page_bytes: u32,
}

impl Geometry {
    /// MQSim's default SSD (`CMU-SAFARI/MQSim:ssdconfig.xml`, KERNEL-NOTES §6):
    /// 8 channels × 4 chips × 2 dies × 2 planes, 2048 blocks/plane,
    /// 256 pages/block, 8 KiB pages (= 512 GiB raw).
    pub const MQSIM: Geometry = Geometry {
        channels: 8,
        chips_per_channel: 4,
        dies_per_chip: 2,
        planes_per_die: 2,
        blocks_per_plane: 2048,
        pages_per_block: 256,
        page_bytes: 8192,
    };

    pub fn dies(&self) -> u32 {
        self.channels * self.chips_per_channel * self.dies_per_chip
    }

    pub fn raw_bytes(&self) -> u64 {
        u64::from(self.dies())
            * u64::from(self.planes_per_die)
            * u64::from(self.blocks_per_plane)
            * u64::from(self.pages_per_block)
            * u64::from(self.page_bytes)
    }

    /// Dies are numbered channel-fastest (die `d` is on channel
    /// `d % channels`), so consecutive die numbers spread over the channels
    /// first: MQSim's "CWDP" plane-allocation order.
    #[inline]
    pub fn channel_of(&self, die: u32) -> u32 {
        die % self.channels
    }
}

/// The ONFI/Toggle bus between the controller and the dies of a channel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChannelParams {
    /// Data rate in bytes per second. MQSim's default is 333 MT/s NV-DDR2 on
    /// an 8-bit bus, i.e. 333 MB/s (`ssdconfig.xml`, KERNEL-NOTES §6);
    /// ONFI 4.x NV-DDR3 parts run 800 MT/s and beyond.
    pub bytes_per_sec: u64,
    /// Command + address cycles that start an array operation (CMD, 5 ADDR,
    /// CMD ≈ 7 cycles). Delays the die; not booked on the bus (it is tiny
    /// and booking it would forbid the gap filling that interleaving needs).
    pub cmd_ns: Ns,
    /// Per-transfer bus overhead: the data-out (random data output) or
    /// data-in command cycles and the status read around a transfer. Booked
    /// on the bus together with the data.
    pub xfer_overhead_ns: Ns,
}

impl ChannelParams {
    /// Example: MQSim's 333 MB/s channel; 7 command cycles at ~25 ns
    /// (ONFI SDR-mode command cycle tWC) ≈ 175 ns, rounded to 200 ns for
    /// both the command and the per-transfer overhead. Profiles override.
    pub const MQSIM: ChannelParams = ChannelParams {
        bytes_per_sec: 333_000_000,
        cmd_ns: 200,
        xfer_overhead_ns: 200,
    };
}

/// Where page reads spent their time, for breakdowns: waiting for the die
/// (behind other operations of the same die), and waiting for the channel
/// after the sense.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReadWaits {
    pub reads: u64,
    pub die_wait_ns: u64,
    pub channel_wait_ns: u64,
}

/// The NAND back end: geometry, timings, and the timelines of every die and
/// channel.
#[derive(Clone, Debug)]
pub struct Nand {
    pub geo: Geometry,
    pub timing: CellTiming,
    pub chan: ChannelParams,
    die_busy: Vec<Ns>,
    channels: Vec<Timeline>,
    /// `channels - 1` when the channel count is a power of two (every
    /// shipped profile), so that a die's channel is a mask, not a division
    /// per page read; `NOT_POW2` otherwise.
    channel_mask: u32,
    /// The caller's current time (latest seen): bus intervals that ended by
    /// then are forgotten. Kept apart from each operation's earliest start,
    /// which may lie in the future (after a map read, after a GC).
    now: Ns,
    pub waits: ReadWaits,
}

impl Nand {
    pub fn new(geo: Geometry, timing: CellTiming, chan: ChannelParams) -> Self {
        Nand {
            geo,
            timing,
            chan,
            die_busy: vec![0; geo.dies() as usize],
            channels: (0..geo.channels).map(|_| Timeline::new()).collect(),
            channel_mask: if geo.channels.is_power_of_two() {
                geo.channels - 1
            } else {
                NOT_POW2
            },
            now: 0,
            waits: ReadWaits::default(),
        }
    }

    /// The channel timeline of `die` ([`Geometry::channel_of`]).
    #[inline]
    fn channel(&mut self, die: u32) -> &mut Timeline {
        let c = if self.channel_mask != NOT_POW2 {
            die & self.channel_mask
        } else {
            self.geo.channel_of(die)
        };
        &mut self.channels[c as usize]
    }

    /// Tell the timelines the caller's current time (once per request).
    #[inline]
    pub fn set_now(&mut self, now: Ns) {
        self.now = self.now.max(now);
    }

    /// Bus time to move `bytes` plus the per-transfer command overhead.
    #[inline]
    pub fn xfer_ns(&self, bytes: u64) -> Ns {
        self.chan.xfer_overhead_ns + (bytes * 1_000_000_000).div_ceil(self.chan.bytes_per_sec)
    }

    #[inline]
    pub fn die_busy_until(&self, die: u32) -> Ns {
        self.die_busy[die as usize]
    }

    pub fn channel_busy_until(&self, channel: u32) -> Ns {
        self.channels[channel as usize].busy_until()
    }

    /// Sense one page row (a multi-plane read senses the same page offset on
    /// every plane for one tR), the row at `page` within its block, and move
    /// `bytes` out over the channel. Returns `(sense_end, done)`; more data
    /// from the same sensed row can follow with [`Nand::read_more`] without
    /// another tR.
    #[inline]
    pub fn read(&mut self, now: Ns, die: u32, page: u32, bytes: u64) -> (Ns, Ns) {
        let t_read = self.timing.t_read_of(page);
        self.read_for(now, die, t_read, bytes)
    }

    /// [`Nand::read`] with a sense time of the caller's (an SLC-mode read
    /// of a TLC die).
    #[inline]
    pub fn read_for(&mut self, now: Ns, die: u32, t_read: Ns, bytes: u64) -> (Ns, Ns) {
        let x = self.xfer_ns(bytes);
        self.read_for_xfer(now, die, t_read, x)
    }

    /// [`Nand::read_for`] with the transfer's time `x` (= [`Nand::xfer_ns`]
    /// of its bytes) of the caller's: a caller that moves many units of one
    /// size computes it once, not a 64-bit division per unit. Always
    /// inlined: the FTL's read loop calls it once per unit read, and the
    /// call cost more than the booking's arithmetic (docs/performance.md).
    #[inline(always)]
    pub fn read_for_xfer(&mut self, now: Ns, die: u32, t_read: Ns, x: Ns) -> (Ns, Ns) {
        let d = die as usize;
        let start = now.max(self.die_busy[d]);
        let sense_end = start + self.chan.cmd_ns + t_read;
        let seen = self.now;
        let ch = self.channel(die);
        ch.prune(seen);
        let xs = ch.reserve(sense_end, x);
        let done = xs + x;
        self.waits.reads += 1;
        self.waits.die_wait_ns += start - now;
        self.waits.channel_wait_ns += xs - sense_end;
        // The page register holds the data until it is out: the die cannot
        // start its next operation before (no cache read modelled).
        self.die_busy[d] = done;
        (sense_end, done)
    }

    /// Another transfer out of a row sensed by [`Nand::read`].
    #[inline]
    pub fn read_more(&mut self, now: Ns, die: u32, sense_end: Ns, bytes: u64) -> Ns {
        let x = self.xfer_ns(bytes);
        self.read_more_xfer(now, die, sense_end, x)
    }

    /// [`Nand::read_more`] with the transfer's time `x` of the caller's (as
    /// [`Nand::read_for_xfer`]).
    #[inline(always)]
    pub fn read_more_xfer(&mut self, now: Ns, die: u32, sense_end: Ns, x: Ns) -> Ns {
        let seen = self.now;
        let ch = self.channel(die);
        ch.prune(seen);
        let xs = ch.reserve(sense_end.max(now), x);
        let done = xs + x;
        let d = die as usize;
        self.die_busy[d] = self.die_busy[d].max(done);
        done
    }

    /// Move `bytes` in over the channel (one page per plane for a
    /// multi-plane program) and program them in one tPROG. Returns the
    /// program's end. Data-in waits for the die (no cache program).
    pub fn program(&mut self, now: Ns, die: u32, bytes: u64) -> Ns {
        self.program_for(now, die, bytes, self.timing.t_prog)
    }

    /// [`Nand::program`] with a program time of the caller's (an SLC-mode
    /// program of a TLC die).
    pub fn program_for(&mut self, now: Ns, die: u32, bytes: u64, t_prog: Ns) -> Ns {
        let x = self.xfer_ns(bytes);
        self.program_for_xfer(now, die, x, t_prog)
    }

    /// [`Nand::program_for`] with the transfer's time `x` of the caller's
    /// (as [`Nand::read_for_xfer`]).
    #[inline]
    pub fn program_for_xfer(&mut self, now: Ns, die: u32, x: Ns, t_prog: Ns) -> Ns {
        let d = die as usize;
        let ready = now.max(self.die_busy[d]) + self.chan.cmd_ns;
        let seen = self.now;
        let ch = self.channel(die);
        ch.prune(seen);
        let xs = ch.reserve(ready, x);
        let done = xs + x + t_prog;
        self.die_busy[d] = done;
        done
    }

    /// Erase one block (all planes of the die in one multi-plane erase).
    pub fn erase(&mut self, now: Ns, die: u32) -> Ns {
        let d = die as usize;
        let done = now.max(self.die_busy[d]) + self.chan.cmd_ns + self.timing.t_erase;
        self.die_busy[d] = done;
        done
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two dies on one channel, one plane, 4 blocks of `pages_per_block`.
    fn two_dies(pages_per_block: u32) -> Geometry {
        Geometry {
            channels: 1,
            chips_per_channel: 1,
            dies_per_chip: 2,
            planes_per_die: 1,
            blocks_per_plane: 4,
            pages_per_block,
            page_bytes: 4096,
        }
    }

    #[test]
    fn dies_interleave_on_one_channel() {
        let mut n = Nand::new(two_dies(4), CellTiming::SLC, ChannelParams::MQSIM);
        let x = n.xfer_ns(4096);
        let (s0, d0) = n.read(0, 0, 0, 4096);
        let (s1, d1) = n.read(0, 1, 0, 4096);
        assert_eq!(s0, s1, "both dies sense at once");
        assert_eq!(d0, s0 + x);
        assert_eq!(d1, d0 + x, "second transfer queues behind the first");
        // A program on die 0 waits for die 0 and then for the bus (die 1's
        // transfer holds it until d1).
        let p = n.program(0, 0, 4096);
        assert_eq!(p, d1 + x + CellTiming::SLC.t_prog);
        // An erase needs no bus.
        let e = n.erase(0, 1);
        assert_eq!(e, d1 + 200 + CellTiming::SLC.t_erase);
    }

    #[test]
    fn tlc_page_types_follow_mqsim() {
        let tlc = ReadByPageType::Tlc([50_000, 70_000, 90_000]);
        let types: Vec<usize> = (0..16).map(|p| tlc.page_type(p)).collect();
        assert_eq!(types, [0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 1, 1, 2, 2, 0, 0]);
        let mlc = ReadByPageType::Mlc([40_000, 60_000]);
        assert_eq!(
            (0..4).map(|p| mlc.page_type(p)).collect::<Vec<_>>(),
            [0, 1, 0, 1]
        );
        assert_eq!(ReadByPageType::Uniform.page_type(13), 0);
    }

    #[test]
    fn a_read_senses_for_its_page_types_tr() {
        let geo = two_dies(16);
        let timing = CellTiming {
            read_by_page_type: ReadByPageType::Tlc([50_000, 70_000, 90_000]),
            ..CellTiming::TLC
        };
        let mut n = Nand::new(geo, timing, ChannelParams::MQSIM);
        let cmd = n.chan.cmd_ns;
        // Page 12 is an MSB page, page 6 a CSB page, page 0 an LSB page.
        assert_eq!(n.read(0, 0, 12, 4096).0, cmd + 90_000);
        assert_eq!(n.read(0, 1, 6, 4096).0, cmd + 70_000);
        let busy = n.die_busy_until(0);
        assert_eq!(n.read(busy, 0, 0, 4096).0, busy + cmd + 50_000);
        // Uniform timing ignores the page.
        let mut u = Nand::new(geo, CellTiming::TLC, ChannelParams::MQSIM);
        assert_eq!(u.read(0, 0, 12, 4096).0, cmd + CellTiming::TLC.t_read);
    }
}
