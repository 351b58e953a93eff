//! Page-level FTL: L2P map (chunked, lazily allocated) whose pages live in
//! NAND and are cached LRU in controller SRAM, a write buffer flushed as
//! multi-plane page rows, static striping of LPNs over dies with a dynamic
//! write frontier per die, garbage collection (greedy or cost-benefit), and
//! a data-integrity oracle.
//!
//! Physical addressing. A *block* here is a multi-plane block: block `b` of
//! every plane of a die, operated in lock-step (same page offset on all
//! planes: one tR / tPROG / tBERS for all of them, the multi-plane rule of
//! ONFI and MQSim). A block has `pages_per_block` *rows*; a row is one page
//! per plane, `planes × page_bytes / unit_bytes` slots. PPN =
//! `((die × blocks_per_die) + block) × slots_per_block + slot`.
//!
//! Static allocation: LPN `l` lives on die `l % dies` for its whole life
//! (GC migrates within the die), so consecutive LPNs stripe over dies and
//! channels (die numbering is channel-fastest). Within a die the position
//! is dynamic: the die's write frontier. GC has its own frontier per die
//! (hot/cold separation of host and GC writes, as MQSim's GC write
//! frontier).
//!
//! Host write streams. The host frontier and the write buffer's rows are
//! kept per stream ([`FlashDevice::set_streams`], [`FlashDevice::write_stream`]):
//! a unit is buffered and programmed with the units of its own stream only,
//! so each stream fills blocks of its own. The conventional FTL has one
//! stream; a placement-aware layer (NVMe FDP, `device/fdp.rs`) has one per
//! reclaim unit handle. GC's frontier is shared by all streams, unless
//! GC keeps streams apart ([`FlashDevice::set_gc_per_stream`], FDP's
//! persistently isolated handles): then each stream has a GC frontier of
//! its own, and a victim's valid data goes to the frontier of the stream
//! whose block it was.

pub mod analytic;
mod counters;
mod gc;
pub mod groups;
pub mod layer;
pub mod map_cache;
pub mod slc;
pub mod sparse;
mod views;
mod write;

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use crate::error::Result;
use crate::sim::rng::RngStream;
use crate::sim::Ns;

use super::nand::Nand;
use super::FlashParams;
use map_cache::{Access, MapCache};
use sparse::{Sparse, CHUNK};

/// Physical page number of one 4 KiB slot.
pub type Ppn = u32;

/// No mapping / no data.
const NONE: u32 = u32::MAX;

/// The factory layout of a prefilled device as a rule: LPN `l` sits at
/// `(l % dies) × slots_per_die + l / dies` until it is first rewritten. A
/// copy of entries that all followed it can be kept as the rule itself
/// (the HPB host map does), which is exact: the rule never changes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FactoryLayout {
    dies: u64,
    slots_per_die: u64,
}

impl FactoryLayout {
    #[inline]
    pub fn ppn(&self, lpn: u64) -> Ppn {
        ((lpn % self.dies) * self.slots_per_die + lpn / self.dies) as Ppn
    }
}

/// Victim selection for garbage collection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GcPolicy {
    /// Fewest valid pages (MQSim `GREEDY`).
    Greedy,
    /// Highest (1 − u) / 2u × age (Rosenblum & Ousterhout, "The Design and
    /// Implementation of a Log-Structured File System", SOSP'91; Kawaguchi
    /// et al., USENIX'95). Age counts host writes since the block's last
    /// program.
    CostBenefit,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum BlockState {
    Free,
    Open,
    Full,
}

/// Counters. NAND operation counts are array operations: a multi-plane
/// read or program counts once.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FtlStats {
    pub host_read_units: u64,
    pub host_write_units: u64,
    pub trimmed_units: u64,
    /// Reads served from the write buffer.
    pub buffer_read_hits: u64,
    /// Writes that overwrote a unit still in the buffer.
    pub buffer_coalesced: u64,
    /// Reads of unmapped (trimmed / never written) units: no NAND.
    pub unmapped_reads: u64,
    pub map_hits: u64,
    pub map_misses: u64,
    pub map_evictions: u64,
    pub map_dirty_writebacks: u64,
    pub nand_reads_data: u64,
    pub nand_reads_map: u64,
    pub nand_reads_gc: u64,
    pub nand_programs_data: u64,
    pub nand_programs_gc: u64,
    pub nand_programs_map: u64,
    pub nand_erases: u64,
    /// Units programmed for the host (flush), by GC (migration), and wasted
    /// padding of partial rows.
    pub units_programmed_host: u64,
    pub units_programmed_gc: u64,
    pub units_padded: u64,
    pub gc_runs: u64,
    pub gc_victims: u64,
    pub hpb_reads: u64,
    /// HPB READs whose PPN was stale (or whose data was in the buffer): the
    /// device did the normal lookup.
    pub hpb_stale: u64,
    /// Time host writes waited for buffer space.
    pub write_stall_ns: u64,
    pub integrity_checks: u64,
}

impl FtlStats {
    /// Write amplification: units programmed (host + GC + padding) per unit
    /// flushed for the host. 1.0 when nothing was written.
    pub fn waf(&self) -> f64 {
        if self.units_programmed_host == 0 {
            return 1.0;
        }
        (self.units_programmed_host + self.units_programmed_gc + self.units_padded) as f64
            / self.units_programmed_host as f64
    }

    pub fn map_hit_ratio(&self) -> f64 {
        let n = self.map_hits + self.map_misses;
        if n == 0 {
            0.0
        } else {
            self.map_hits as f64 / n as f64
        }
    }
}

/// Rows of one request remembered as sensed; a request touching more
/// distinct rows senses the later ones again for each unit.
const SCRATCH_ROWS: usize = 64;
/// End of a die's chain in `FlashDevice::scratch`.
const NO_ROW: u32 = u32::MAX;

/// Entries a host read looks up at once ([`FlashDevice::read`]): a
/// 128 KiB request's 32 units in one run, on the stack.
const READ_BATCH: usize = 64;

/// What the model has allocated, for memory checks (chunk counts, not RSS).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryUse {
    pub l2p_chunks: usize,
    pub l2p_chunks_total: usize,
    /// Bytes the L2P holds (slabs allocated, hashed entries, page state):
    /// follows the entries written, not the chunks they fall in.
    pub l2p_bytes: usize,
    pub version_chunks: usize,
    pub phys_version_chunks: usize,
    /// Blocks with an explicit reverse map (P2L) allocated.
    pub p2l_blocks: usize,
    pub blocks_total: usize,
}

/// Bytes of the FTL model's own structures, by what they hold: the
/// capacities of its vectors, slabs and tables (what it asked the
/// allocator for), not RSS. Deterministic: the same run gives the same
/// counts on any machine. Shown in the JSON's `ftl` object
/// (docs/fio-json.md).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ModelBytes {
    /// The logical-to-physical map (slabs, hashed entries, page states).
    pub l2p: usize,
    /// The integrity oracle's version arrays (logical and physical).
    pub oracle: usize,
    /// Per-block reverse maps (only of blocks opened) and their table.
    pub reverse_map: usize,
    /// Per-block state: valid counts, state, age stamp, erase count.
    pub blocks: usize,
    /// The map cache and the map pages' generations.
    pub map_cache: usize,
    /// Per-die free lists, frontiers and write-buffer rows; the in-flight
    /// rows, per-request scratch and per-die counters.
    pub dies: usize,
}

impl ModelBytes {
    pub fn total(&self) -> usize {
        self.l2p + self.oracle + self.reverse_map + self.blocks + self.map_cache + self.dies
    }

    /// The JSON object (`ftl.model_bytes`).
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "l2p": self.l2p,
            "oracle": self.oracle,
            "reverse_map": self.reverse_map,
            "blocks": self.blocks,
            "map_cache": self.map_cache,
            "dies": self.dies,
            "total": self.total(),
        })
    }
}

#[derive(Clone, Copy, Debug)]
struct Frontier {
    block: u32,
    next: u32,
}

#[derive(Clone, Debug)]
struct DieState {
    free: VecDeque<u32>,
    /// The host frontier of each stream.
    user: Vec<Frontier>,
    /// The GC frontier: one shared, or one per stream.
    gc: Vec<Frontier>,
    /// LPNs of each stream waiting in the write buffer for this die (< one
    /// row each).
    pending: Vec<Vec<u32>>,
}

/// A divisor fixed when the device is built: a shift and a mask when it is
/// a power of two (the dies, rows and blocks of every shipped profile), a
/// division otherwise. The read path divides by the die count and the row
/// and block sizes several times per 4 KiB unit, and a 64-bit division
/// takes tens of cycles where a shift takes one; the quotients are the
/// same either way.
#[derive(Clone, Copy, Debug)]
struct Divisor {
    d: u64,
    /// log2(d), or `NOT_POW2`.
    shift: u32,
}

const NOT_POW2: u32 = u32::MAX;

impl Divisor {
    fn new(d: u64) -> Self {
        assert!(d > 0, "divisor 0");
        let shift = if d.is_power_of_two() {
            d.trailing_zeros()
        } else {
            NOT_POW2
        };
        Divisor { d, shift }
    }

    #[inline]
    fn div(self, x: u64) -> u64 {
        if self.shift != NOT_POW2 {
            x >> self.shift
        } else {
            x / self.d
        }
    }

    #[inline]
    fn rem(self, x: u64) -> u64 {
        if self.shift != NOT_POW2 {
            x & (self.d - 1)
        } else {
            x % self.d
        }
    }
}

/// The device back end. See the module docs of [`crate::device`] for the
/// API and the model.
pub struct FlashDevice {
    p: FlashParams,
    nand: Nand,
    dies: u32,
    blocks_per_die: u32,
    slots_per_block: u32,
    row_slots: u32,
    /// `dies`, `slots_per_block`, `row_slots` and the slots of a die as
    /// [`Divisor`]s.
    dies_div: Divisor,
    block_div: Divisor,
    row_div: Divisor,
    die_div: Divisor,
    user_lpns: u64,
    entries_per_map_page: u64,
    /// `entries_per_map_page` as a [`Divisor`]: a unit's map page is
    /// looked up on every unit read and written.
    epm_div: Divisor,
    unit_bytes: u64,
    /// [`Nand::xfer_ns`] of one unit, computed once: the channel's
    /// parameters are fixed when the device is built, and the division it
    /// takes was one per unit read (32 per 128 KiB read).
    unit_xfer_ns: Ns,
    /// The same for a map page and a row (a map miss, a row's program).
    map_xfer_ns: Ns,
    row_xfer_ns: Ns,
    /// Pages per block, as a [`Divisor`] (a map page's page type).
    ppb_div: Divisor,
    row_bytes: u64,
    l2p: Sparse,
    /// Oracle: version of the latest write of each LPN.
    lpn_ver: Sparse,
    /// Oracle: version of the data each physical slot holds.
    phys_ver: Sparse,
    valid: Vec<u32>,
    state: Vec<BlockState>,
    /// Host-write clock at the block's last program (cost-benefit age).
    stamp: Vec<u64>,
    erase_count: Vec<u32>,
    /// Reverse map per block, allocated when a block is first opened; a
    /// factory-filled block without one uses the analytic layout.
    p2l: Vec<Option<Box<[u32]>>>,
    die_state: Vec<DieState>,
    cache: MapCache,
    map_gen: Vec<u32>,
    buf_pending: u32,
    buf_inflight: u32,
    inflight: BinaryHeap<Reverse<(Ns, u32)>>,
    stats: FtlStats,
    timed: bool,
    clock: u64,
    /// Rows sensed during the current request: (global row, sense end,
    /// index of the previous entry of the same die or `NO_ROW`), so units of
    /// one row are read with one tR. At most `SCRATCH_ROWS`.
    scratch: Vec<(u32, Ns, u32)>,
    /// Per die: (request number, index in `scratch` of the die's latest
    /// row). A row lies in one die, so a lookup walks that die's rows only,
    /// not every row of the request (a 128 KiB read striped over 32 dies
    /// scanned 16 rows a unit on average).
    scratch_head: Vec<(u64, u32)>,
    /// Requests begun, numbering `scratch_head`'s entries: one that is not
    /// the current request's is empty without clearing it.
    scratch_req: u64,
    /// The run seed, for device-side random streams (none yet: the model is
    /// deterministic given the request sequence).
    seed: u64,
    /// Blocks of each die in the FTL's pool (all but the static SLC
    /// region's).
    pool: u32,
    /// Mapped (written, not trimmed) LPNs of each die: the SLC cache's
    /// dynamic region lives in the rest.
    mapped: Vec<u64>,
    slc: Option<slc::Slc>,
    /// The host stream being placed (an index into `DieState::user`).
    stream: usize,
    /// The GC frontier being filled (an index into `DieState::gc`).
    gc_stream: usize,
    /// Per block: the stream whose frontier opened it (host or GC;
    /// `groups::SHARED_GC` for the shared GC frontier).
    owner: Vec<u16>,
    /// Placement groups of dies (1: static striping; see `groups`).
    groups: u32,
    /// Dies per group.
    group_dies: Divisor,
    /// Per LPN, with groups: its die XOR its static die.
    home: Sparse,
    /// Per die, with groups: LPNs mapped or buffered there.
    claimed: Vec<u64>,
    /// The most LPNs a die may hold, with groups.
    die_cap: u64,
    /// Host units placed outside the group they named.
    spilled: u64,
    /// Units programmed per die and per stream (placement-aware layers).
    acct: groups::Accounting,
}

impl FlashDevice {
    pub fn new(params: &FlashParams, seed: u64) -> Result<FlashDevice> {
        params.validate()?;
        let p = params.clone();
        let g = p.geometry;
        let dies = g.dies();
        let blocks_per_die = g.blocks_per_plane;
        let row_slots = g.planes_per_die * p.units_per_page();
        let slots_per_block = row_slots * g.pages_per_block;
        let nblocks = (dies * blocks_per_die) as usize;
        let user_lpns = p.user_units();
        let epm = p.entries_per_map_page();
        let map_pages = user_lpns.div_ceil(epm) as u32;
        let phys = p.physical_units();
        // The static SLC region's blocks (the last of each die) never join
        // the free pool.
        let pool = blocks_per_die
            - p.slc.map_or(0, |s| {
                slc::static_blocks(
                    &s,
                    dies,
                    u64::from(g.planes_per_die) * u64::from(g.page_bytes),
                    g.pages_per_block,
                )
            });
        let nand = Nand::new(g, p.timing, p.channel);
        let unit_xfer_ns = nand.xfer_ns(u64::from(p.unit_bytes));
        let row_bytes = u64::from(g.planes_per_die) * u64::from(g.page_bytes);
        let map_xfer_ns = nand.xfer_ns(u64::from(p.map_page_bytes));
        let row_xfer_ns = nand.xfer_ns(row_bytes);
        let mut dev = FlashDevice {
            nand,
            dies,
            blocks_per_die,
            slots_per_block,
            row_slots,
            dies_div: Divisor::new(u64::from(dies)),
            block_div: Divisor::new(u64::from(slots_per_block)),
            row_div: Divisor::new(u64::from(row_slots)),
            die_div: Divisor::new(u64::from(blocks_per_die) * u64::from(slots_per_block)),
            user_lpns,
            entries_per_map_page: epm,
            epm_div: Divisor::new(epm),
            unit_bytes: u64::from(p.unit_bytes),
            unit_xfer_ns,
            map_xfer_ns,
            row_xfer_ns,
            ppb_div: Divisor::new(u64::from(g.pages_per_block)),
            row_bytes,
            l2p: Sparse::new(user_lpns),
            lpn_ver: Sparse::new(if p.check_integrity { user_lpns } else { 0 }),
            phys_ver: Sparse::new(if p.check_integrity { phys } else { 0 }),
            valid: vec![0; nblocks],
            state: vec![BlockState::Free; nblocks],
            stamp: vec![0; nblocks],
            erase_count: vec![0; nblocks],
            p2l: (0..nblocks).map(|_| None).collect(),
            die_state: (0..dies)
                .map(|_| DieState {
                    free: (0..pool).collect(),
                    user: vec![Frontier {
                        block: NONE,
                        next: 0,
                    }],
                    gc: vec![Frontier {
                        block: NONE,
                        next: 0,
                    }],
                    pending: vec![Vec::with_capacity(row_slots as usize)],
                })
                .collect(),
            cache: MapCache::new(p.map_cache_pages, map_pages),
            map_gen: vec![0; map_pages as usize],
            buf_pending: 0,
            buf_inflight: 0,
            inflight: BinaryHeap::with_capacity(p.write_buffer_units as usize + 1),
            stats: FtlStats::default(),
            timed: true,
            clock: 0,
            scratch: Vec::with_capacity(SCRATCH_ROWS),
            scratch_head: vec![(0, NO_ROW); dies as usize],
            scratch_req: 0,
            seed,
            pool,
            mapped: vec![0; dies as usize],
            slc: p.slc.map(|s| {
                slc::Slc::new(
                    s,
                    dies,
                    u64::from(g.planes_per_die) * u64::from(g.page_bytes),
                    nblocks as u64 * u64::from(g.pages_per_block),
                )
            }),
            p,
            stream: 0,
            gc_stream: 0,
            owner: vec![0; nblocks],
            groups: 1,
            group_dies: Divisor::new(u64::from(dies)),
            home: Sparse::new(0),
            claimed: Vec::new(),
            die_cap: 0,
            spilled: 0,
            acct: groups::Accounting::default(),
        };
        if dev.p.prefilled {
            dev.factory_fill();
        }
        Ok(dev)
    }

    // ----- geometry helpers -------------------------------------------------

    pub fn params(&self) -> &FlashParams {
        &self.p
    }

    /// Keep `n` host write streams (at least 1), each with its own host
    /// frontier and write-buffer rows on every die. Called before the
    /// first timed write; units written before (preconditioning) are in
    /// stream 0's blocks.
    pub fn set_streams(&mut self, n: usize) {
        let n = n.max(1);
        let row = self.row_slots as usize;
        for ds in &mut self.die_state {
            ds.user.resize(
                n,
                Frontier {
                    block: NONE,
                    next: 0,
                },
            );
            ds.pending.resize_with(n, || Vec::with_capacity(row));
        }
        self.acct.per_stream = vec![groups::StreamUnits::default(); n];
        self.acct.per_die = vec![groups::DieUnits::default(); self.dies as usize];
    }

    /// Give each host stream a GC frontier of its own (after
    /// [`Self::set_streams`]): GC moves a victim's valid data to the GC
    /// frontier of the stream that wrote the victim (its frontier opened
    /// the block), so no block ever holds two streams' data.
    pub fn set_gc_per_stream(&mut self) {
        let n = self.streams();
        for ds in &mut self.die_state {
            ds.gc.resize(
                n,
                Frontier {
                    block: NONE,
                    next: 0,
                },
            );
        }
    }

    /// GC frontiers of each die (1: shared by every stream).
    pub fn gc_frontiers(&self) -> usize {
        self.die_state.first().map_or(1, |d| d.gc.len())
    }

    /// The logical units whose latest data is in `block` of `die`, for
    /// tests and diagnostics (allocates).
    pub fn valid_lpns(&self, die: u32, block: u32) -> Vec<u64> {
        let first = (die * self.blocks_per_die + block) * self.slots_per_block;
        (first..first + self.slots_per_block)
            .filter_map(|ppn| {
                let l = self.slot_lpn(ppn);
                (l != NONE && self.l2p_get(u64::from(l)) == ppn).then_some(u64::from(l))
            })
            .collect()
    }

    /// Blocks of each die.
    pub fn blocks_per_die(&self) -> u32 {
        self.blocks_per_die
    }

    /// Host write streams kept.
    pub fn streams(&self) -> usize {
        self.die_state.first().map_or(1, |d| d.user.len())
    }

    pub fn seed(&self) -> u64 {
        self.seed
    }

    pub fn nand(&self) -> &Nand {
        &self.nand
    }

    /// Logical pages (mapping units) the host can address.
    pub fn user_lpns(&self) -> u64 {
        self.user_lpns
    }

    pub fn entries_per_map_page(&self) -> u64 {
        self.entries_per_map_page
    }

    pub fn map_pages(&self) -> u32 {
        self.map_gen.len() as u32
    }

    /// The die an LPN lives on: its static die, or with placement groups
    /// the die its latest write went to.
    #[inline]
    fn die_of_lpn(&self, lpn: u64) -> u32 {
        if self.groups > 1 {
            self.home_die(lpn)
        } else {
            self.dies_div.rem(lpn) as u32
        }
    }

    #[inline]
    fn die_of_ppn(&self, ppn: u32) -> u32 {
        self.die_div.div(u64::from(ppn)) as u32
    }

    #[inline]
    fn block_of(&self, ppn: u32) -> usize {
        self.block_div.div(u64::from(ppn)) as usize
    }

    #[inline]
    fn map_die(&self, mp: u32) -> u32 {
        self.dies_div.rem(u64::from(mp)) as u32
    }

    /// Where the factory layout puts `lpn`: die `lpn % dies`, then in order
    /// through that die's blocks.
    #[inline]
    fn factory_ppn(&self, lpn: u64) -> u32 {
        let d = self.dies_div.rem(lpn);
        let i = self.dies_div.div(lpn);
        let spb = u64::from(self.slots_per_block);
        ((d * u64::from(self.blocks_per_die) + self.block_div.div(i)) * spb + self.block_div.rem(i))
            as u32
    }

    /// Inverse of [`Self::factory_ppn`]; NONE past the end of user space.
    #[inline]
    fn factory_lpn(&self, ppn: u32) -> u32 {
        let spb = u64::from(self.slots_per_block);
        let per_die = u64::from(self.blocks_per_die) * spb;
        let d = u64::from(ppn) / per_die;
        let i = u64::from(ppn) % per_die;
        let lpn = i * u64::from(self.dies) + d;
        if lpn < self.user_lpns {
            lpn as u32
        } else {
            NONE
        }
    }

    /// The entry of an LPN never written: the factory layout on a
    /// prefilled device, unmapped otherwise.
    #[inline]
    fn l2p_default(&self, lpn: u64) -> u32 {
        if self.p.prefilled {
            self.factory_ppn(lpn)
        } else {
            NONE
        }
    }

    /// Current L2P entry without allocating. The map stores
    /// `ppn ^ l2p_default(lpn)`, so that an entry never set (0, in a chunk
    /// allocated zeroed) reads as the default: a chunk's first write costs no
    /// pass over its other entries (see `sparse`). XOR with a fixed value is
    /// a bijection, so every PPN, NONE included, round-trips exactly.
    #[inline]
    fn l2p_get(&self, lpn: u64) -> u32 {
        self.l2p.get(lpn) ^ self.l2p_default(lpn)
    }

    /// Set the entry of `lpn` to `ppn`; returns the previous one.
    #[inline]
    fn l2p_set(&mut self, lpn: u64, ppn: u32) -> u32 {
        let d = self.l2p_default(lpn);
        std::mem::replace(self.l2p.get_mut(lpn), ppn ^ d) ^ d
    }

    /// The LPN whose data a physical slot holds (NONE if none was written).
    #[inline]
    fn slot_lpn(&self, ppn: u32) -> u32 {
        let b = self.block_of(ppn);
        match &self.p2l[b] {
            Some(m) => m[(ppn % self.slots_per_block) as usize],
            None if self.p.prefilled => self.factory_lpn(ppn),
            None => NONE,
        }
    }

    fn phys_version(&self, ppn: u32) -> u32 {
        self.phys_ver.get(u64::from(ppn))
    }

    fn lpn_version(&self, lpn: u64) -> u32 {
        self.lpn_ver.get(lpn)
    }

    /// The device arrives full: every LPN laid out in order (analytic, no
    /// per-page work: only the per-block counts are set).
    fn factory_fill(&mut self) {
        let spb = u64::from(self.slots_per_block);
        for d in 0..self.dies {
            let count = self
                .user_lpns
                .saturating_sub(u64::from(d))
                .div_ceil(u64::from(self.dies));
            let nblocks = count.div_ceil(spb) as u32;
            for b in 0..nblocks {
                let gb = (d * self.blocks_per_die + b) as usize;
                let v = (count - u64::from(b) * spb).min(spb);
                self.valid[gb] = v as u32;
                self.state[gb] = BlockState::Full;
            }
            let ds = &mut self.die_state[d as usize];
            ds.free.clear();
            ds.free.extend(nblocks..self.pool);
            self.mapped[d as usize] = count;
        }
    }

    // ----- placement, shared by host flushes, GC and preconditioning -------

    /// Take a free block of `die` and open it. A host-frontier allocation
    /// below the low watermark runs GC first (foreground GC, charged on the
    /// die's timeline from `t`).
    fn open_block(&mut self, die: u32, for_gc: bool, t: Ns) -> u32 {
        if !for_gc && self.die_state[die as usize].free.len() < self.p.gc_low_free_blocks as usize {
            self.collect(die, t);
        }
        let b = self.die_state[die as usize]
            .free
            .pop_front()
            .expect("no free block: validated over-provisioning should prevent this");
        let gb = (die * self.blocks_per_die + b) as usize;
        self.state[gb] = BlockState::Open;
        self.owner[gb] = match (for_gc, self.die_state[die as usize].gc.len()) {
            (true, 1) => groups::SHARED_GC,
            (true, _) => self.gc_stream as u16,
            (false, _) => self.stream as u16,
        };
        let spb = self.slots_per_block as usize;
        match &mut self.p2l[gb] {
            Some(m) => m.fill(NONE),
            slot @ None => *slot = Some(vec![NONE; spb].into_boxed_slice()),
        }
        b
    }

    /// The next slot of a frontier, opening a block when needed.
    fn next_slot(&mut self, die: u32, for_gc: bool, t: Ns) -> u32 {
        let spb = self.slots_per_block;
        let f = self.frontier(die, for_gc);
        if f.block == NONE || f.next == spb {
            if f.block != NONE {
                let gb = (die * self.blocks_per_die + f.block) as usize;
                self.state[gb] = BlockState::Full;
            }
            let b = self.open_block(die, for_gc, t);
            *self.frontier_mut(die, for_gc) = Frontier { block: b, next: 0 };
        }
        let bpd = self.blocks_per_die;
        let f = self.frontier_mut(die, for_gc);
        let s = f.next;
        f.next += 1;
        (die * bpd + f.block) * spb + s
    }

    #[inline]
    fn frontier(&self, die: u32, for_gc: bool) -> Frontier {
        let ds = &self.die_state[die as usize];
        if for_gc {
            ds.gc[self.gc_stream]
        } else {
            ds.user[self.stream]
        }
    }

    #[inline]
    fn frontier_mut(&mut self, die: u32, for_gc: bool) -> &mut Frontier {
        let ds = &mut self.die_state[die as usize];
        if for_gc {
            &mut ds.gc[self.gc_stream]
        } else {
            &mut ds.user[self.stream]
        }
    }

    fn invalidate(&mut self, ppn: u32) {
        let b = self.block_of(ppn);
        debug_assert!(
            self.valid[b] > 0,
            "invalidating in a block with no valid data"
        );
        self.valid[b] -= 1;
    }

    /// Write `lpn` (data version `ver`) at the next slot of a frontier of
    /// `die` and update L2P, P2L, valid counts, the map generation and the
    /// oracle.
    fn place(&mut self, lpn: u64, die: u32, for_gc: bool, t: Ns, ver: u32) -> u32 {
        // Take the slot first: it may run GC, which may move lpn's old copy.
        let ppn = self.next_slot(die, for_gc, t);
        let old = self.l2p_set(lpn, ppn);
        if old != NONE {
            self.invalidate(old);
            // With placement groups the old copy may be on another die.
            let was = self.die_of_ppn(old);
            if was != die {
                self.mapped[was as usize] -= 1;
                self.mapped[die as usize] += 1;
            }
        } else {
            self.mapped[die as usize] += 1;
        }
        let b = self.block_of(ppn);
        self.valid[b] += 1;
        self.stamp[b] = self.clock;
        if let Some(m) = &mut self.p2l[b] {
            m[self.block_div.rem(u64::from(ppn)) as usize] = lpn as u32;
        }
        if self.p.check_integrity {
            *self.phys_ver.get_mut(u64::from(ppn)) = ver;
        }
        let mp = self.map_page_of(lpn) as usize;
        self.map_gen[mp] = self.map_gen[mp].wrapping_add(1);
        ppn
    }

    /// Map-cache access for map page `mp` at `t`; on a miss the map page is
    /// read from its die (and a dirty victim written back to its own die).
    /// Returns when the entry is available.
    fn map_touch(&mut self, t: Ns, mp: u32, dirty: bool) -> Ns {
        match self.cache.access(mp, dirty) {
            Access::Hit => {
                self.stats.map_hits += 1;
                t
            }
            Access::Miss { evicted } => {
                self.stats.map_misses += 1;
                if let Some((e, was_dirty)) = evicted {
                    self.stats.map_evictions += 1;
                    if was_dirty {
                        self.stats.map_dirty_writebacks += 1;
                        self.stats.nand_programs_map += 1;
                        let die = self.map_die(e);
                        let t_prog = self.nand.timing.t_prog;
                        self.nand.program_for_xfer(t, die, self.map_xfer_ns, t_prog);
                    }
                }
                self.stats.nand_reads_map += 1;
                let die = self.map_die(mp);
                // Map pages are not placed physically: page types taken in
                // turn over the map pages of a die.
                let page = self.ppb_div.rem(self.dies_div.div(u64::from(mp))) as u32;
                let t_read = self.nand.timing.t_read_of(page);
                self.nand.read_for_xfer(t, die, t_read, self.map_xfer_ns).1
            }
        }
    }

    // ----- host reads --------------------------------------------------------

    fn check_range(&self, lpn: u64, n: u32) {
        assert!(
            lpn + u64::from(n) <= self.user_lpns,
            "I/O beyond the device: lpn {lpn} + {n} > {}",
            self.user_lpns
        );
    }

    /// Read `npages` units from `lpn`; returns when the last is out of NAND
    /// (on the controller side of the channel).
    ///
    /// One pass over the request, unit by unit in LPN order as
    /// [`Self::read_one`] would go (so every booking is made in the same
    /// order, at the same time), with the per-request work hoisted out of
    /// the per-unit loop: the entries are looked up in runs of
    /// [`READ_BATCH`] ([`Self::ppns_into`]: the factory layout stepped die
    /// by die, the stored differences XORed in per page of the map, not a
    /// page-state lookup and a layout division per unit), the unit's map
    /// page is stepped at its boundary instead of divided for (a real
    /// division on a profile whose map pages do not hold a power of two of
    /// entries, as `mqsim-default`'s 2,730), and whether the write buffer
    /// holds anything is asked once. A read changes neither the map nor
    /// the write buffer (a map miss may write back a dirty map page, which
    /// moves no entry), so the entries looked up ahead are the ones the
    /// unit-by-unit loop reads.
    pub fn read(&mut self, now: Ns, lpn: u64, npages: u32) -> Ns {
        self.check_range(lpn, npages);
        self.slc_host_arrival(now);
        self.nand.set_now(now);
        self.clear_scratch();
        self.stats.host_read_units += u64::from(npages);
        let buffered = self.buf_pending != 0;
        if npages == 1 {
            // One unit (every 4 KiB read): the same steps without the run
            // lookup and its buffer, which cost more than they save here.
            if buffered && self.in_buffer(lpn) {
                self.stats.buffer_read_hits += 1;
                return now;
            }
            let ppn = self.l2p_get(lpn);
            if ppn == NONE {
                self.stats.unmapped_reads += 1;
                return now;
            }
            let t = self.map_touch(now, self.map_page_of(lpn), false);
            return now.max(self.read_ppn(t, lpn, ppn));
        }
        let mut done = now;
        let mut memo = (NONE, now);
        let epm = self.entries_per_map_page;
        let mut mp = self.map_page_of(lpn);
        let mut mp_end = (u64::from(mp) + 1) * epm;
        let mut ppns = [NONE; READ_BATCH];
        let end = lpn + u64::from(npages);
        let mut l = lpn;
        while l < end {
            let k = (end - l).min(READ_BATCH as u64) as usize;
            self.ppns_into(l, &mut ppns[..k]);
            for (u, &ppn) in (l..).zip(&ppns[..k]) {
                if buffered && self.in_buffer(u) {
                    self.stats.buffer_read_hits += 1;
                    continue;
                }
                if ppn == NONE {
                    self.stats.unmapped_reads += 1;
                    continue;
                }
                while u >= mp_end {
                    mp += 1;
                    mp_end += epm;
                }
                let t = if memo.0 == mp {
                    memo.1
                } else {
                    let t = self.map_touch(now, mp, false);
                    memo = (mp, t);
                    t
                };
                done = done.max(self.read_ppn(t, u, ppn));
            }
            l += k as u64;
        }
        done
    }

    #[inline]
    fn in_buffer(&self, lpn: u64) -> bool {
        // `buf_pending` counts the units of every die's `pending`: with none
        // (every read-only run, and a write run whose rows have all gone to
        // NAND) there is nothing to look for.
        if self.buf_pending == 0 {
            return false;
        }
        let die = self.die_of_lpn(lpn);
        self.die_state[die as usize]
            .pending
            .iter()
            .any(|p| p.contains(&(lpn as u32)))
    }

    /// One unit through the map lookup. `memo` = (map page, ready time) of
    /// the previous unit of the same request.
    fn read_one(&mut self, now: Ns, lpn: u64, memo: &mut (u32, Ns)) -> Ns {
        self.stats.host_read_units += 1;
        if self.in_buffer(lpn) {
            self.stats.buffer_read_hits += 1;
            return now;
        }
        let ppn = self.l2p_get(lpn);
        if ppn == NONE {
            self.stats.unmapped_reads += 1;
            return now;
        }
        let mp = self.map_page_of(lpn);
        let t = if memo.0 == mp {
            memo.1
        } else {
            let t = self.map_touch(now, mp, false);
            *memo = (mp, t);
            t
        };
        self.read_ppn(t, lpn, ppn)
    }

    /// The NAND part of a read of `lpn` at `ppn`, from `t`. Inlined into
    /// the read loops: a call per unit cost more than its arithmetic.
    #[inline(always)]
    fn read_ppn(&mut self, t: Ns, lpn: u64, ppn: u32) -> Ns {
        let die = self.die_of_ppn(ppn);
        debug_assert_eq!(die, self.die_of_lpn(lpn), "LPN left its die");
        let row = self.row_div.div(u64::from(ppn)) as u32;
        let done = if let Some(se) = self.sensed(die, row) {
            self.nand.read_more_xfer(t, die, se, self.unit_xfer_ns)
        } else {
            let page = self.row_div.div(self.block_div.rem(u64::from(ppn))) as u32;
            let t_read = self.row_t_read(row, self.nand.timing.t_read_of(page));
            let (se, done) = self.nand.read_for_xfer(t, die, t_read, self.unit_xfer_ns);
            if self.scratch.len() < SCRATCH_ROWS {
                let head = &mut self.scratch_head[die as usize];
                let prev = if head.0 == self.scratch_req {
                    head.1
                } else {
                    NO_ROW
                };
                *head = (self.scratch_req, self.scratch.len() as u32);
                self.scratch.push((row, se, prev));
            }
            self.stats.nand_reads_data += 1;
            done
        };
        if self.p.check_integrity {
            self.check(lpn, ppn);
        }
        done
    }

    /// Forget the rows sensed by the previous request.
    #[inline]
    fn clear_scratch(&mut self) {
        self.scratch.clear();
        self.scratch_req += 1;
    }

    /// Sense end of `row` (of `die`) if the current request sensed it.
    #[inline(always)]
    fn sensed(&self, die: u32, row: u32) -> Option<Ns> {
        let (req, mut k) = self.scratch_head[die as usize];
        if req != self.scratch_req {
            return None;
        }
        while k != NO_ROW {
            let (r, se, prev) = self.scratch[k as usize];
            if r == row {
                return Some(se);
            }
            k = prev;
        }
        None
    }

    /// The oracle: the slot must hold this LPN's latest version.
    fn check(&mut self, lpn: u64, ppn: u32) {
        let owner = self.slot_lpn(ppn);
        let want = self.lpn_version(lpn);
        let got = self.phys_version(ppn);
        assert!(
            u64::from(owner) == lpn && want == got,
            "data integrity: lpn {lpn} -> ppn {ppn} holds lpn {owner} version {got}, expected version {want}"
        );
        self.stats.integrity_checks += 1;
    }

    /// HPB READ BUFFER on the device side: bring map page `mp` into the
    /// controller (a NAND map read when it is not cached). Returns when the
    /// map data is ready to send.
    pub fn read_map_page(&mut self, now: Ns, mp: u32) -> Ns {
        self.nand.set_now(now);
        self.map_touch(now, mp, false)
    }

    /// HPB READ of one unit: if `ppn` is the current location the map
    /// lookup is skipped; otherwise (stale entry, or newer data in the
    /// buffer) the device does a normal read. Returns (done, entry valid).
    pub fn read_with_ppn(&mut self, now: Ns, lpn: u64, ppn: Ppn) -> (Ns, bool) {
        self.read_hpb(now, lpn, &[ppn])
    }

    /// HPB READ of `ppns.len()` units from `lpn` (HPB 2.0 allows up to 255).
    /// Returns (done, every entry was valid).
    pub fn read_hpb(&mut self, now: Ns, lpn: u64, ppns: &[Ppn]) -> (Ns, bool) {
        self.check_range(lpn, ppns.len() as u32);
        self.slc_host_arrival(now);
        self.nand.set_now(now);
        self.clear_scratch();
        let mut done = now;
        let mut all_valid = true;
        let mut memo = (NONE, now);
        for (k, &ppn) in ppns.iter().enumerate() {
            let l = lpn + k as u64;
            self.stats.hpb_reads += 1;
            if ppn != NONE && !self.in_buffer(l) && self.l2p_get(l) == ppn {
                self.stats.host_read_units += 1;
                done = done.max(self.read_ppn(now, l, ppn));
            } else {
                self.stats.hpb_stale += 1;
                all_valid = false;
                done = done.max(self.read_one(now, l, &mut memo));
            }
        }
        (done, all_valid)
    }
}

#[cfg(test)]
mod l2p_tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// A divisor's shift and mask give the quotient and remainder of
        /// the division, for powers of two and the rest.
        #[test]
        fn divisor_divides_as_the_division(d in 1u64..5_000, shift in 0u32..40, x in any::<u64>()) {
            for d in [d, 1 << shift] {
                let v = Divisor::new(d);
                prop_assert_eq!(v.div(x), x / d);
                prop_assert_eq!(v.rem(x), x % d);
            }
        }
    }

    impl FlashDevice {
        /// The read loop [`FlashDevice::read`] replaced: each unit through
        /// [`FlashDevice::read_one`], looked up and map-paged on its own.
        fn read_by_unit(&mut self, now: Ns, lpn: u64, npages: u32) -> Ns {
            self.check_range(lpn, npages);
            self.slc_host_arrival(now);
            self.nand.set_now(now);
            self.clear_scratch();
            let mut done = now;
            let mut memo = (NONE, now);
            for l in lpn..lpn + u64::from(npages) {
                done = done.max(self.read_one(now, l, &mut memo));
            }
            done
        }
    }

    /// A host op: (gap since the last op in ns, 0 read / 1 write / 2 trim,
    /// start as a fraction of the user space, units).
    fn host_op() -> impl Strategy<Value = (u64, u8, f64, u32)> {
        (
            0u64..400_000,
            0u8..3,
            0.0..1.0f64,
            prop_oneof![Just(1u32), 1u32..200],
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// The request-level read loop books exactly what the unit-by-unit
        /// loop booked: the same completion of every read and the same
        /// device afterwards (counters, map cache, die and channel
        /// timelines, as the next operations see them), across reads that
        /// hit the write buffer, unmapped units, map pages of a number of
        /// entries that is not a power of two, map misses with dirty
        /// write-backs, rows of several units, one-unit reads (a path of
        /// their own, drawn half the time) and reads longer than one
        /// lookup batch.
        #[test]
        fn request_read_loop_matches_unit_loop(
            prefilled in any::<bool>(),
            entry_bytes in prop::sample::select(vec![3u32, 4]),
            ops in prop::collection::vec(host_op(), 1..120),
        ) {
            let mut p = FlashParams::small(2, 2, 48, 16);
            p.geometry.planes_per_die = 2;
            p.geometry.page_bytes = 8192;
            p.map_entry_bytes = entry_bytes;
            p.map_page_bytes = 4096;
            p.map_cache_pages = 3;
            p.write_buffer_units = 48;
            p.prefilled = prefilled;
            let mut a = FlashDevice::new(&p, 1).unwrap();
            let mut b = FlashDevice::new(&p, 1).unwrap();
            let n = a.user_lpns;
            let mut now = 0;
            for &(gap, kind, x, units) in &ops {
                now += gap;
                let lpn = ((x * n as f64) as u64).min(n - 1);
                let units = units.min((n - lpn) as u32);
                match kind {
                    0 => prop_assert_eq!(a.read(now, lpn, units), b.read_by_unit(now, lpn, units)),
                    1 => prop_assert_eq!(a.write(now, lpn, units), b.write(now, lpn, units)),
                    _ => prop_assert_eq!(a.trim(now, lpn, units), b.trim(now, lpn, units)),
                }
                prop_assert_eq!(&a.stats, &b.stats);
                prop_assert_eq!(a.nand.waits, b.nand.waits);
            }
            // Whatever the two left booked shows in what comes next: a read
            // of every die's rows at the same time on both.
            now += 1;
            prop_assert_eq!(a.read_by_unit(now, 0, n.min(400) as u32), b.read_by_unit(now, 0, n.min(400) as u32));
            for d in 0..a.dies {
                prop_assert_eq!(a.nand.die_busy_until(d), b.nand.die_busy_until(d));
            }
            for c in 0..p.geometry.channels {
                prop_assert_eq!(a.nand.channel_busy_until(c), b.nand.channel_busy_until(c));
            }
        }
    }

    /// A map op: set `lpn` (a fraction of the user space, so that the runs
    /// hit several chunks) to a PPN, or trim it (NONE).
    fn op() -> impl Strategy<Value = (f64, Option<u32>)> {
        (0.0..1.0f64, prop::option::weighted(0.8, any::<u32>()))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        /// The encoded sparse L2P reads exactly as a dense reference map
        /// that starts at the factory layout (prefilled) or all NONE, after
        /// any sequence of sets and trims: entry by entry, in bulk, and in
        /// which runs still follow the factory layout.
        #[test]
        fn encoded_l2p_matches_dense_reference(
            prefilled in any::<bool>(),
            ops in prop::collection::vec(op(), 1..200),
            window in (0.0..1.0f64, 1usize..3 * CHUNK),
        ) {
            let mut p = FlashParams::small(2, 2, 64, 64);
            p.prefilled = prefilled;
            let mut dev = FlashDevice::new(&p, 1).unwrap();
            let n = dev.user_lpns;
            prop_assert!(n > 2 * CHUNK as u64, "the test must span several chunks");
            let mut reference: Vec<u32> = (0..n)
                .map(|l| if prefilled { dev.factory_ppn(l) } else { NONE })
                .collect();
            let mut touched = vec![false; (n as usize).div_ceil(CHUNK)];
            for &(x, v) in &ops {
                let l = ((x * n as f64) as u64).min(n - 1);
                let ppn = v.unwrap_or(NONE);
                let old = dev.l2p_set(l, ppn);
                prop_assert_eq!(old, reference[l as usize]);
                reference[l as usize] = ppn;
                touched[l as usize / CHUNK] = true;
            }
            for l in 0..n {
                prop_assert_eq!(dev.l2p_get(l), reference[l as usize], "lpn {}", l);
            }
            let mut all = vec![0; n as usize];
            dev.ppns_into(0, &mut all);
            prop_assert_eq!(&all, &reference);
            let start = ((window.0 * n as f64) as u64).min(n - 1);
            let len = window.1.min((n - start) as usize);
            let mut part = vec![0; len];
            dev.ppns_into(start, &mut part);
            prop_assert_eq!(&part[..], &reference[start as usize..start as usize + len]);
            let untouched = touched[start as usize / CHUNK..=(start as usize + len - 1) / CHUNK]
                .iter()
                .all(|t| !t);
            prop_assert_eq!(dev.run_is_factory(start, len as u64), prefilled && untouched);
        }
    }
}
