//! The SLC cache of the FTL core: part of the NAND programmed one bit per
//! cell as a write cache in front of TLC, as consumer TLC SSDs (Samsung's
//! Intelligent TurboWrite) and UFS WriteBooster devices build it.
//!
//! - **Size.** A static region of blocks kept in SLC mode for the drive's
//!   life (taken from the spare blocks), plus a dynamic region of free
//!   TLC blocks run in SLC mode, up to a maximum. A block in SLC mode holds
//!   `1 / bits_per_cell` of its TLC data, so the dynamic region can only
//!   use unwritten user space: per die it holds at most
//!   (unmapped units / `bits_per_cell`), and it shrinks to nothing as the
//!   drive fills ("this dynamic SLC buffer takes advantage of idle
//!   capacity so will not work ... if there is less than 72GB of free
//!   capacity", kitguru.net's 970 EVO 2TB review on TurboWrite).
//! - **Writes.** A host page row (the write buffer's flush of one die) is
//!   programmed in SLC mode (`slc_t_prog`) while its die's region has room.
//!   When it is full, `bypass` programs the row directly as TLC (Samsung's
//!   "after TurboWrite" rate) and `fold` first folds the oldest SLC row to
//!   TLC on the die (foreground: the host waits for it).
//! - **Folding.** SLC data moves to TLC when the drive is idle: once no host
//!   command has come for `slc_fold_idle`, each die folds rows (an SLC-mode
//!   read of the row, its transfer out and back, a TLC program) as long as
//!   each fold ends before the next host command arrives (a fold in
//!   progress is not suspended; one that would not end in the gap is not
//!   started).
//!
//! - **Reads.** A row still in SLC mode (programmed as SLC and not folded
//!   yet) is sensed at `slc_t_read`, an SLC-mode read (one threshold, not
//!   the TLC page types' several); once folded it is read as TLC.
//!
//! The L2P map points at the data's TLC home from the start (placement,
//! GC and the integrity oracle are unchanged): the cache is a mechanism of
//! NAND time and capacity, and which rows are in SLC mode is kept beside
//! the map (one bit per row, and per die the rows in programming order, so
//! the oldest folds first). Assumptions, with their effect: the dynamic
//! region's blocks are not taken out of the free pool (GC sees the TLC
//! space the data will occupy after folding, not the 3x it occupies
//! before); a block GC erases while some of its rows are still counted in
//! SLC mode leaves them counted until they would have folded (its rows read
//! as TLC from the erase on).

use super::FlashDevice;
use crate::device::flash::SlcParams;
use crate::sim::Ns;
use std::collections::VecDeque;

crate::choice_enum! {
    /// What happens to a host row when its die's SLC region is full.
    pub enum SlcWhenFull {
        /// Program it as TLC directly (the drive's "after the cache" rate).
        Bypass = "bypass",
        /// Fold the oldest SLC row to TLC first, then program it as SLC.
        Fold = "fold",
    }
}

/// The SLC cache's counters, in page rows (one page per plane of a die).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SlcStats {
    /// Host rows programmed in SLC mode.
    pub slc_rows: u64,
    /// Host rows programmed as TLC because the region was full.
    pub direct_rows: u64,
    /// Rows folded to TLC in idle time, and in the foreground (`fold`).
    pub folded_idle_rows: u64,
    pub folded_foreground_rows: u64,
}

/// The SLC cache's state.
#[derive(Clone, Debug)]
pub(super) struct Slc {
    pub(super) p: SlcParams,
    /// Rows of host data each die holds in SLC mode, not yet folded.
    rows: Vec<u32>,
    /// The static region per die, in rows.
    static_rows: u32,
    /// The dynamic region's maximum per die, in rows.
    dynamic_max_rows: u32,
    /// Rows held in all dies (0: nothing to fold).
    resident: u64,
    /// Arrival of the latest host command, for idle folding.
    last_host: Ns,
    /// Per die, the rows in SLC mode in programming order (the front
    /// folds first); as long as `rows`.
    order: Vec<VecDeque<u32>>,
    /// One bit per row of the device: the row's data is in SLC mode.
    in_slc: Vec<u64>,
    pub(super) stats: SlcStats,
}

impl Slc {
    /// The cache of a device of `dies` dies with `row_bytes` per row and
    /// `total_rows` rows in all. The rows' order is allocated here for the
    /// most the region can hold, so admitting a row allocates nothing.
    pub(super) fn new(p: SlcParams, dies: u32, row_bytes: u64, total_rows: u64) -> Slc {
        let per_die = |bytes: u64| (bytes / u64::from(dies) / row_bytes) as u32;
        let (static_rows, dynamic_max_rows) = (per_die(p.static_bytes), per_die(p.dynamic_bytes));
        let most = (static_rows + dynamic_max_rows) as usize;
        Slc {
            rows: vec![0; dies as usize],
            static_rows,
            dynamic_max_rows,
            resident: 0,
            last_host: 0,
            order: (0..dies).map(|_| VecDeque::with_capacity(most)).collect(),
            in_slc: vec![0; total_rows.div_ceil(64) as usize],
            stats: SlcStats::default(),
            p,
        }
    }

    /// Row `row` of die `d` is programmed in SLC mode.
    fn enter(&mut self, d: usize, row: u32) {
        self.rows[d] += 1;
        self.resident += 1;
        self.stats.slc_rows += 1;
        self.order[d].push_back(row);
        self.in_slc[(row / 64) as usize] |= 1 << (row % 64);
    }

    /// The oldest SLC row of die `d` leaves SLC mode (folded).
    fn leave_oldest(&mut self, d: usize) {
        self.rows[d] -= 1;
        self.resident -= 1;
        if let Some(row) = self.order[d].pop_front() {
            self.in_slc[(row / 64) as usize] &= !(1 << (row % 64));
        }
    }

    /// Whether row `row`'s data is in SLC mode.
    #[inline]
    pub(super) fn holds(&self, row: u32) -> bool {
        self.in_slc[(row / 64) as usize] & (1 << (row % 64)) != 0
    }

    /// Rows `first..first + n` were erased (GC): none holds SLC data.
    pub(super) fn erased(&mut self, first: u32, n: u32) {
        for row in first..first + n {
            self.in_slc[(row / 64) as usize] &= !(1 << (row % 64));
        }
    }
}

/// Blocks per die the static region keeps in SLC mode: an SLC-mode block
/// holds `pages_per_block / bits_per_cell` rows of `row_bytes`.
pub fn static_blocks(p: &SlcParams, dies: u32, row_bytes: u64, pages: u32) -> u32 {
    let rows = p.static_bytes / u64::from(dies) / row_bytes;
    let per_block = u64::from((pages / p.bits_per_cell).max(1));
    rows.div_ceil(per_block) as u32
}

impl FlashDevice {
    /// Rows die `die` can hold in SLC mode now: the static region plus the
    /// dynamic one, which needs `bits_per_cell` unwritten units per unit.
    pub fn slc_capacity_rows(&self, die: u32) -> u32 {
        let Some(s) = &self.slc else {
            return 0;
        };
        let lpns = self
            .user_lpns
            .saturating_sub(u64::from(die))
            .div_ceil(u64::from(self.dies));
        let free = lpns.saturating_sub(self.mapped[die as usize]);
        let dynamic = free / u64::from(s.p.bits_per_cell) / u64::from(self.row_slots);
        s.static_rows + dynamic.min(u64::from(s.dynamic_max_rows)) as u32
    }

    /// Rows of host data die `die` holds in SLC mode.
    pub fn slc_rows(&self, die: u32) -> u32 {
        self.slc.as_ref().map_or(0, |s| s.rows[die as usize])
    }

    pub fn slc_stats(&self) -> Option<SlcStats> {
        self.slc.as_ref().map(|s| s.stats)
    }

    /// The sense time of a read of row `row` from NAND: SLC mode while the
    /// row's data is in the SLC cache, else `t_read` (the page type's).
    #[inline]
    pub(super) fn row_t_read(&self, row: u32, t_read: Ns) -> Ns {
        match &self.slc {
            Some(s) if s.holds(row) => s.p.t_read,
            _ => t_read,
        }
    }

    /// The program time of the host row `row` die `die` programs from
    /// `t`, and the SLC bookkeeping for it (a foreground fold is booked on
    /// the die first).
    pub(super) fn slc_admit(&mut self, die: u32, row: u32, t: Ns) -> Ns {
        let tlc = self.nand.timing.t_prog;
        if self.slc.is_none() {
            return tlc;
        }
        let cap = self.slc_capacity_rows(die);
        let s = self.slc.as_mut().expect("checked");
        let d = die as usize;
        if s.rows[d] < cap {
            s.enter(d, row);
            return s.p.t_prog;
        }
        match s.p.when_full {
            SlcWhenFull::Bypass => {
                s.stats.direct_rows += 1;
                tlc
            }
            SlcWhenFull::Fold if cap == 0 => {
                s.stats.direct_rows += 1;
                tlc
            }
            SlcWhenFull::Fold => {
                // Fold until there is room for this row (the region may
                // have shrunk by more than one row as the drive filled).
                while self.slc_rows(die) >= cap {
                    self.fold_row(die, t);
                    let s = self.slc.as_mut().expect("checked");
                    s.stats.folded_foreground_rows += 1;
                }
                let s = self.slc.as_mut().expect("checked");
                s.enter(d, row);
                s.p.t_prog
            }
        }
    }

    /// Fold one SLC row of `die` to TLC from `t`: its SLC-mode sense and
    /// transfer out, then the transfer in and TLC program. Returns the end.
    fn fold_row(&mut self, die: u32, t: Ns) -> Ns {
        let s = self.slc.as_mut().expect("folding needs the SLC cache");
        s.leave_oldest(die as usize);
        let t_read = s.p.t_read;
        let (_, out) = self.nand.read_for(t, die, t_read, self.row_bytes);
        let tlc = self.nand.timing.t_prog;
        self.nand.program_for(out, die, self.row_bytes, tlc)
    }

    /// A host command arrives at `now`: if the drive has been idle for
    /// `slc_fold_idle`, fold what fits in the gap first. Called before the
    /// command's `set_now`, so the gap's bookings are still in the future
    /// of every timeline's floor.
    #[inline]
    pub(super) fn slc_host_arrival(&mut self, now: Ns) {
        let Some(s) = &mut self.slc else {
            return;
        };
        let idle_from = s.last_host + s.p.fold_idle;
        s.last_host = s.last_host.max(now);
        if s.resident == 0 || now <= idle_from {
            return;
        }
        self.slc_fold_idle(idle_from, now);
    }

    fn slc_fold_idle(&mut self, idle_from: Ns, now: Ns) {
        let t_read = self.slc.as_ref().expect("checked").p.t_read;
        // The time one fold takes on an idle die and channel.
        let fold_ns = 2 * self.nand.chan.cmd_ns
            + t_read
            + 2 * self.nand.xfer_ns(self.row_bytes)
            + self.nand.timing.t_prog;
        for die in 0..self.dies {
            let mut start = idle_from.max(self.nand.die_busy_until(die));
            while self.slc_rows(die) > 0 && start + fold_ns <= now {
                start = self.fold_row(die, start);
                let s = self.slc.as_mut().expect("checked");
                s.stats.folded_idle_rows += 1;
            }
        }
    }
}
