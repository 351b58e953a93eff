//! The FTL's write side: host writes into the write buffer, its flush as
//! multi-plane page rows per die, and trim.

use super::*;

impl FlashDevice {
    // ----- host writes --------------------------------------------------------

    /// Write `npages` units from `lpn`. Completes when the data is in the
    /// write buffer; waits for space when the buffer is full.
    pub fn write(&mut self, now: Ns, lpn: u64, npages: u32) -> Ns {
        self.write_stream(now, lpn, npages, 0)
    }

    /// [`Self::write`] in host stream `stream` (< [`Self::streams`]): its
    /// units are buffered and programmed with that stream's only.
    pub fn write_stream(&mut self, now: Ns, lpn: u64, npages: u32, stream: usize) -> Ns {
        self.write_units(now, lpn, npages, stream, None)
    }

    /// The host write loop: each unit buffered for its die (the static
    /// die, or with `group` the die [`Self::rehome`] picks in that group).
    pub(super) fn write_units(
        &mut self,
        now: Ns,
        lpn: u64,
        npages: u32,
        stream: usize,
        group: Option<u32>,
    ) -> Ns {
        self.check_range(lpn, npages);
        assert!(stream < self.streams(), "stream {stream} not kept");
        self.slc_host_arrival(now);
        self.nand.set_now(now);
        let mut t = now;
        for l in lpn..lpn + u64::from(npages) {
            self.stats.host_write_units += 1;
            self.clock += 1;
            if self.p.check_integrity {
                let v = self.lpn_ver.get_mut(l);
                *v = v.wrapping_add(1);
            }
            let die = match group {
                Some(g) => self.rehome(l, g),
                None => self.die_of_lpn(l),
            };
            if self.in_buffer(l) {
                self.stats.buffer_coalesced += 1;
                continue;
            }
            t = self.buffer_room(t);
            self.die_state[die as usize].pending[stream].push(l as u32);
            self.buf_pending += 1;
            if self.die_state[die as usize].pending[stream].len() == self.row_slots as usize {
                self.flush_die(die, stream, t);
            }
        }
        t
    }

    /// Wait (from `t`) until the buffer has room for one unit.
    pub(super) fn buffer_room(&mut self, mut t: Ns) -> Ns {
        loop {
            while let Some(&Reverse((rt, k))) = self.inflight.peek() {
                if rt > t {
                    break;
                }
                self.inflight.pop();
                self.buf_inflight -= k;
            }
            if self.buf_pending + self.buf_inflight < self.p.write_buffer_units {
                return t;
            }
            if let Some(Reverse((rt, k))) = self.inflight.pop() {
                self.stats.write_stall_ns += rt - t;
                t = rt;
                self.buf_inflight -= k;
            } else {
                // Full of partial rows: flush the fullest, padded (ties:
                // the lowest die, then the lowest stream).
                let streams = self.streams();
                let (die, stream) = (0..self.dies)
                    .flat_map(|d| (0..streams).map(move |s| (d, s)))
                    .max_by_key(|&(d, s)| {
                        (self.die_state[d as usize].pending[s].len(), Reverse((d, s)))
                    })
                    .unwrap_or((0, 0));
                self.flush_die(die, stream, t);
            }
        }
    }

    /// Program the die's buffered units of `stream` as one (padded if
    /// partial) multi-plane row at that stream's frontier, from `t`.
    pub(super) fn flush_die(&mut self, die: u32, stream: usize, t: Ns) {
        let mut pending = std::mem::take(&mut self.die_state[die as usize].pending[stream]);
        let n = pending.len() as u32;
        if n == 0 {
            self.die_state[die as usize].pending[stream] = pending;
            return;
        }
        self.stream = stream;
        let mut row = 0;
        for &l in &pending {
            let l = u64::from(l);
            let ver = self.lpn_version(l);
            row = self
                .row_div
                .div(u64::from(self.place(l, die, false, t, ver))) as u32;
            if self.timed {
                // Read-modify-write of the entry's map page; a miss reads it
                // from NAND. The data program does not wait for it (the
                // entry is updated when both are done; DFTL-style).
                let mp = self.map_page_of(l);
                self.map_touch(t, mp, true);
            }
        }
        self.stats.units_programmed_host += u64::from(n);
        if let Some(u) = self.acct.per_stream.get_mut(stream) {
            u.host += u64::from(n);
        }
        if let Some(u) = self.acct.per_die.get_mut(die as usize) {
            u.host += u64::from(n);
        }
        self.pad_row(die, false);
        pending.clear();
        self.die_state[die as usize].pending[stream] = pending;
        self.buf_pending -= n;
        let end = if self.timed {
            self.stats.nand_programs_data += 1;
            let t_prog = self.slc_admit(die, row, t);
            self.nand.program_for_xfer(t, die, self.row_xfer_ns, t_prog)
        } else {
            t
        };
        self.buf_inflight += n;
        self.inflight.push(Reverse((end, n)));
    }

    /// Skip the rest of the frontier's current row (left unwritten).
    pub(super) fn pad_row(&mut self, die: u32, for_gc: bool) {
        let row = self.row_slots;
        let f = self.frontier_mut(die, for_gc);
        if f.block == NONE {
            return;
        }
        let r = f.next % row;
        if r != 0 {
            f.next += row - r;
            let pad = u64::from(row - r);
            self.stats.units_padded += pad;
            self.account_padding(die, for_gc, pad);
        }
    }

    /// Flush everything buffered; returns when all of it is on NAND.
    pub fn flush(&mut self, now: Ns) -> Ns {
        self.slc_host_arrival(now);
        self.nand.set_now(now);
        for d in 0..self.dies {
            for s in 0..self.streams() {
                self.flush_die(d, s, now);
            }
        }
        self.inflight
            .iter()
            .map(|r| r.0 .0)
            .max()
            .unwrap_or(now)
            .max(now)
    }

    /// Unmap `npages` units from `lpn` (UNMAP / discard). Returns when the
    /// map update is done (a map-page miss costs its read).
    pub fn trim(&mut self, now: Ns, lpn: u64, npages: u32) -> Ns {
        self.check_range(lpn, npages);
        self.slc_host_arrival(now);
        self.nand.set_now(now);
        let mut done = now;
        for l in lpn..lpn + u64::from(npages) {
            self.stats.trimmed_units += 1;
            let die = self.die_of_lpn(l) as usize;
            let mut was_buffered = false;
            for p in &mut self.die_state[die].pending {
                if let Some(i) = p.iter().position(|&x| u64::from(x) == l) {
                    p.swap_remove(i);
                    self.buf_pending -= 1;
                    was_buffered = true;
                }
            }
            let old = self.l2p_set(l, NONE);
            if self.groups > 1 && (was_buffered || old != NONE) {
                self.claimed[die] -= 1;
            }
            if old != NONE {
                self.invalidate(old);
                // With placement groups the mapped copy may be on another
                // die than a buffered one.
                let was = self.die_of_ppn(old) as usize;
                self.mapped[was] -= 1;
                let mp = self.map_page_of(l) as usize;
                self.map_gen[mp] = self.map_gen[mp].wrapping_add(1);
                if self.timed {
                    done = done.max(self.map_touch(now, mp as u32, true));
                }
            }
        }
        done
    }
}
