//! Garbage collection, per die (MQSim `GC_and_WL_Unit_Page_Level`: GC is
//! per plane there; here per die because blocks are multi-plane).
//!
//! Triggered when a host-frontier allocation finds fewer than
//! `gc_low_free_blocks` free blocks; reclaims victims until the die has
//! `gc_high_free_blocks` (hysteresis, as MQSim's `GC_Exec_Threshold` with a
//! stop point). Each victim: its valid units are read (one multi-plane
//! sense per row holding valid data, transfer of the valid units to the
//! controller, as MQSim moves GC data through the controller rather than
//! with copy-back) and appended to the die's GC frontier (programmed one
//! row at a time when a row fills), then the block is erased. All of it is
//! booked on the die's timeline from the trigger time, so host operations
//! queued behind it on that die wait: foreground GC.
//!
//! Without timing (preconditioning) the same code does only the
//! bookkeeping.

use super::{BlockState, FlashDevice, GcPolicy, NONE};
use crate::sim::Ns;

impl FlashDevice {
    /// Reclaim blocks of `die` until it has `gc_high_free_blocks` free.
    pub(super) fn collect(&mut self, die: u32, t: Ns) {
        self.stats.gc_runs += 1;
        let high = self.p.gc_high_free_blocks as usize;
        // Each round frees a block or stops; the guard only bounds a bug.
        let mut guard = 4 * self.blocks_per_die;
        while self.die_state[die as usize].free.len() < high && guard > 0 {
            guard -= 1;
            let Some(victim) = self.select_victim(die) else {
                break;
            };
            let gb = (die * self.blocks_per_die + victim) as usize;
            if self.valid[gb] >= self.slots_per_block {
                // Nothing to gain anywhere (the best victim is all valid).
                break;
            }
            self.migrate(die, gb, t);
            debug_assert_eq!(self.valid[gb], 0, "victim still holds valid data");
            if self.timed {
                self.nand.erase(t, die);
            }
            if let Some(s) = &mut self.slc {
                // The block's rows hold no SLC data from now on.
                let rows = self.slots_per_block / self.row_slots;
                s.erased(gb as u32 * rows, rows);
            }
            self.stats.nand_erases += 1;
            self.account_erase(die);
            self.stats.gc_victims += 1;
            self.erase_count[gb] += 1;
            self.state[gb] = BlockState::Free;
            self.die_state[die as usize].free.push_back(victim);
        }
    }

    /// Greedy: fewest valid units; cost-benefit: highest (1−u)/2u × age.
    /// Only full blocks are candidates (never an open frontier). Ties go to
    /// the lowest block number (deterministic).
    fn select_victim(&self, die: u32) -> Option<u32> {
        let base = (die * self.blocks_per_die) as usize;
        let spb = f64::from(self.slots_per_block);
        let mut best: Option<(u32, f64)> = None;
        for b in 0..self.blocks_per_die {
            let gb = base + b as usize;
            if self.state[gb] != BlockState::Full {
                continue;
            }
            let v = self.valid[gb];
            let score = match self.p.gc_policy {
                GcPolicy::Greedy => -f64::from(v),
                GcPolicy::CostBenefit => {
                    if v == 0 {
                        f64::INFINITY
                    } else {
                        let u = f64::from(v) / spb;
                        let age = (self.clock - self.stamp[gb] + 1) as f64;
                        (1.0 - u) / (2.0 * u) * age
                    }
                }
            };
            if best.is_none_or(|(_, s)| score > s) {
                best = Some((b, score));
            }
        }
        best.map(|(b, _)| b)
    }

    /// Move every valid unit of global block `gb` to the GC frontier (of
    /// the block's stream when GC keeps streams apart).
    fn migrate(&mut self, die: u32, gb: usize, t: Ns) {
        // A block the shared GC frontier opened before the streams got GC
        // frontiers of their own (preconditioning) goes to stream 0's.
        self.gc_stream = match self.owner[gb] {
            o if self.die_state[die as usize].gc.len() > 1 && o != super::groups::SHARED_GC => {
                usize::from(o)
            }
            _ => 0,
        };
        let spb = self.slots_per_block;
        let row = self.row_slots;
        let base = gb as u32 * spb;
        for r in 0..spb / row {
            let first = base + r * row;
            // Pass 1: how many valid units this row holds (one sense + their
            // transfer out).
            let mut count = 0u64;
            for ppn in (first..first + row).filter(|_| self.timed) {
                let l = self.slot_lpn(ppn);
                if l != NONE && self.l2p_get(u64::from(l)) == ppn {
                    count += 1;
                }
            }
            if self.timed {
                if count == 0 {
                    continue;
                }
                self.stats.nand_reads_gc += 1;
                self.nand.read(t, die, r, count * self.unit_bytes);
            }
            // Pass 2: append them to the GC frontier.
            for ppn in first..first + row {
                let l = self.slot_lpn(ppn);
                if l == NONE || self.l2p_get(u64::from(l)) != ppn {
                    continue;
                }
                let ver = self.phys_version(ppn);
                // The victim's die: data never leaves its die (nor so its
                // placement group) when GC moves it.
                let new = self.place(u64::from(l), die, true, t, ver);
                self.stats.units_programmed_gc += 1;
                self.account_gc_move(die, gb);
                if self.timed {
                    // The moved entry dirties its map page (DFTL: GC updates
                    // the translation pages too).
                    let mp = self.map_page_of(u64::from(l));
                    self.map_touch(t, mp, true);
                    if (new + 1).is_multiple_of(row) {
                        self.stats.nand_programs_gc += 1;
                        self.nand.program(t, die, self.row_bytes);
                    }
                }
            }
        }
    }
}
