//! What the FTL shows without timing: the current mapping (for HPB's
//! READ BUFFER and the factory layout it may follow), map-page state,
//! preconditioning to a steady state, statistics, memory use and the
//! consistency audit.

use super::*;

impl FlashDevice {
    // ----- host-side views (HPB) ---------------------------------------------

    /// Current physical location of `lpn` (None: unmapped). No timing and no
    /// map-cache effect: this is what an HPB READ BUFFER would return.
    pub fn ppn_of(&self, lpn: u64) -> Option<Ppn> {
        let p = self.l2p_get(lpn);
        (p != NONE).then_some(p)
    }

    /// [`Self::ppn_of`] for `out.len()` consecutive LPNs from `start`, in
    /// bulk (NONE = `u32::MAX` where unmapped): a READ BUFFER returns a
    /// whole sub-region's entries, and the device copies them out of its map
    /// pages as runs, not entry by entry. Allocation-free: touched runs are
    /// copied from the L2P chunks, untouched runs of a prefilled device
    /// follow the factory layout incrementally.
    pub fn ppns_into(&self, start: u64, out: &mut [Ppn]) {
        self.check_range(start, out.len() as u32);
        let mut l = start;
        let mut k = 0;
        while k < out.len() {
            let ci = (l / CHUNK as u64) as usize;
            let off = (l % CHUNK as u64) as usize;
            let take = (CHUNK - off).min(out.len() - k);
            let dst = &mut out[k..k + take];
            // The default run, then the chunk's stored differences from it
            // (see `l2p_get`).
            if self.p.prefilled {
                self.factory_ppns_into(l, dst);
            } else {
                dst.fill(NONE);
            }
            if self.l2p.chunk_touched(ci) {
                self.l2p.xor_into(l, dst);
            }
            k += take;
            l += take as u64;
        }
    }

    /// The factory layout, if the device came prefilled.
    pub fn factory_layout(&self) -> Option<FactoryLayout> {
        self.p.prefilled.then(|| FactoryLayout {
            dies: u64::from(self.dies),
            slots_per_die: u64::from(self.blocks_per_die) * u64::from(self.slots_per_block),
        })
    }

    /// Whether every entry of `start .. start + n` still follows the factory
    /// layout (prefilled device, no entry of their map chunks ever set), so
    /// that a copy of them can be kept as [`FactoryLayout`].
    pub fn run_is_factory(&self, start: u64, n: u64) -> bool {
        if !self.p.prefilled || n == 0 {
            return self.p.prefilled;
        }
        self.check_range(start, n as u32);
        let first = (start / CHUNK as u64) as usize;
        let last = ((start + n - 1) / CHUNK as u64) as usize;
        (first..=last).all(|ci| !self.l2p.chunk_touched(ci))
    }

    /// [`Self::factory_ppn`] of consecutive LPNs from `lpn`: the factory
    /// PPN is `die × slots_per_die + index in die`, so stepping an LPN moves
    /// to the next die and, after the last die, to the next index.
    pub(super) fn factory_ppns_into(&self, lpn: u64, out: &mut [Ppn]) {
        let dies = u64::from(self.dies);
        let per_die = u64::from(self.blocks_per_die) * u64::from(self.slots_per_block);
        let (mut d, mut i) = (self.dies_div.rem(lpn), self.dies_div.div(lpn));
        for o in out {
            *o = (d * per_die + i) as u32;
            d += 1;
            if d == dies {
                d = 0;
                i += 1;
            }
        }
    }

    /// The map page holding `lpn`'s entry.
    #[inline]
    pub fn map_page_of(&self, lpn: u64) -> u32 {
        self.epm_div.div(lpn) as u32
    }

    /// Changes every time an entry of map page `mp` changes (host write
    /// flushed, GC migration, trim): a host copy taken at generation g is
    /// current while the generation is still g.
    pub fn map_page_generation(&self, mp: u32) -> u32 {
        self.map_gen[mp as usize]
    }

    /// Whether map page `mp` is cached in controller SRAM, and dirty there.
    pub fn map_page_cached(&self, mp: u32) -> (bool, bool) {
        (self.cache.contains(mp), self.cache.is_dirty(mp))
    }

    // ----- preconditioning ------------------------------------------------------

    /// Bring the device to a steady state fast, without timing: optionally a
    /// sequential fill (analytic on a pristine device), then
    /// `random_overwrites` × capacity uniformly random unit writes applied to
    /// the mapping directly (GC bookkeeping runs, NAND timing does not).
    /// The map cache ends empty (as after a power cycle). Returns the
    /// counters of the preconditioning and resets [`Self::stats`].
    pub fn precondition(
        &mut self,
        sequential: bool,
        random_overwrites: f64,
        seed: u64,
    ) -> FtlStats {
        self.timed = false;
        for d in 0..self.dies {
            for s in 0..self.streams() {
                self.flush_die(d, s, 0);
            }
        }
        // Preconditioning writes in the default stream.
        self.stream = 0;
        let pristine = self.stats.units_programmed_host == 0 && self.clock == 0;
        // A sequential rewrite sets every entry, and random overwrites of
        // n units set about n x 1024 / user_lpns of each 1024-entry page: at 32
        // or more a page would go dense anyway, so skip its time hashed.
        let n = (random_overwrites * self.user_lpns as f64) as u64;
        let bulk = sequential || n >= self.user_lpns / 32;
        self.l2p.dense_from_first_write(bulk);
        self.lpn_ver.dense_from_first_write(bulk);
        if sequential {
            if pristine && !self.p.prefilled {
                self.p.prefilled = true;
                self.factory_fill();
            } else if !pristine {
                for l in 0..self.user_lpns {
                    self.bulk_write(l);
                }
            }
        }
        let mut rng = RngStream::new(seed, "device.precondition");
        for _ in 0..n {
            let l = rng.below(self.user_lpns);
            self.bulk_write(l);
        }
        self.l2p.dense_from_first_write(false);
        self.lpn_ver.dense_from_first_write(false);
        for d in 0..self.dies {
            self.pad_row(d, false);
        }
        self.inflight.clear();
        self.buf_inflight = 0;
        self.cache.clear();
        self.timed = true;
        std::mem::take(&mut self.stats)
    }

    pub(super) fn bulk_write(&mut self, l: u64) {
        self.stats.host_write_units += 1;
        self.stats.units_programmed_host += 1;
        self.clock += 1;
        let ver = if self.p.check_integrity {
            let v = self.lpn_ver.get_mut(l);
            *v = v.wrapping_add(1);
            *v
        } else {
            0
        };
        let die = self.die_of_lpn(l);
        self.place(l, die, false, 0, ver);
    }

    // ----- counters -------------------------------------------------------------

    pub fn stats(&self) -> &FtlStats {
        &self.stats
    }

    /// Read the whole map into the map cache at power-on, when all of it
    /// fits (a drive whose DRAM is sized for the map loads it before it
    /// takes commands): no timing, no counters. Returns whether it did.
    pub fn load_whole_map(&mut self) -> bool {
        let n = self.map_pages();
        if self.cache.capacity() < n {
            return false;
        }
        for mp in 0..n {
            self.cache.access(mp, false);
        }
        true
    }

    pub fn reset_stats(&mut self) {
        self.stats = FtlStats::default();
    }

    pub fn memory(&self) -> MemoryUse {
        MemoryUse {
            l2p_chunks: self.l2p.chunks_allocated(),
            l2p_chunks_total: self.l2p.chunks_total(),
            l2p_bytes: self.l2p.bytes(),
            version_chunks: self.lpn_ver.chunks_allocated(),
            phys_version_chunks: self.phys_ver.chunks_allocated(),
            p2l_blocks: self.p2l.iter().filter(|m| m.is_some()).count(),
            blocks_total: self.p2l.len(),
        }
    }

    /// Bytes of the model's own structures (see [`ModelBytes`]): they grow
    /// with the LPNs written and the blocks opened, plus a few bytes per
    /// block and per 1024 LPNs of the device.
    pub fn model_bytes(&self) -> ModelBytes {
        use std::mem::size_of;
        let reverse_map = self.p2l.capacity() * size_of::<Option<Box<[u32]>>>()
            + self
                .p2l
                .iter()
                .flatten()
                .map(|m| m.len() * size_of::<u32>())
                .sum::<usize>();
        let blocks = self.valid.capacity() * size_of::<u32>()
            + self.state.capacity() * size_of::<BlockState>()
            + self.stamp.capacity() * size_of::<u64>()
            + self.erase_count.capacity() * size_of::<u32>()
            + self.owner.capacity() * size_of::<u16>();
        let dies = self.die_state.capacity() * size_of::<DieState>()
            + self
                .die_state
                .iter()
                .map(|d| {
                    d.free.capacity() * size_of::<u32>()
                        + d.user.capacity() * size_of::<Frontier>()
                        + d.gc.capacity() * size_of::<Frontier>()
                        + d.pending.capacity() * size_of::<Vec<u32>>()
                        + d.pending
                            .iter()
                            .map(|p| p.capacity() * size_of::<u32>())
                            .sum::<usize>()
                })
                .sum::<usize>()
            + self.inflight.capacity() * size_of::<Reverse<(Ns, u32)>>()
            + self.scratch.capacity() * size_of::<(u32, Ns, u32)>()
            + self.scratch_head.capacity() * size_of::<(u64, u32)>()
            + self.mapped.capacity() * size_of::<u64>()
            + self.claimed.capacity() * size_of::<u64>()
            + self.acct.per_die.capacity() * size_of::<super::groups::DieUnits>()
            + self.acct.per_stream.capacity() * size_of::<super::groups::StreamUnits>();
        ModelBytes {
            l2p: self.l2p.bytes() + self.home.bytes(),
            oracle: self.lpn_ver.bytes() + self.phys_ver.bytes(),
            reverse_map,
            blocks,
            map_cache: self.cache.model_bytes() + self.map_gen.capacity() * size_of::<u32>(),
            dies,
        }
    }

    /// Valid units in every block of `die`, for tests and reports.
    pub fn valid_counts(&self, die: u32) -> &[u32] {
        let a = (die * self.blocks_per_die) as usize;
        &self.valid[a..a + self.blocks_per_die as usize]
    }

    pub fn free_blocks(&self, die: u32) -> usize {
        self.die_state[die as usize].free.len()
    }

    pub fn erase_counts(&self) -> &[u32] {
        &self.erase_count
    }

    /// Recount valid units from the maps and compare with the per-block
    /// counters (slow; tests).
    pub fn audit(&self) -> std::result::Result<(), String> {
        let spb = self.slots_per_block;
        for gb in 0..self.valid.len() {
            let mut n = 0;
            for s in 0..spb {
                let ppn = gb as u32 * spb + s;
                let l = self.slot_lpn(ppn);
                if l != NONE && self.l2p_get(u64::from(l)) == ppn {
                    n += 1;
                }
            }
            if self.state[gb] == BlockState::Free && n != 0 {
                return Err(format!("free block {gb} holds {n} valid units"));
            }
            if n != self.valid[gb] {
                return Err(format!(
                    "block {gb}: counted {n} valid, counter says {}",
                    self.valid[gb]
                ));
            }
        }
        Ok(())
    }
}
