//! Placement groups of dies and the per-die and per-stream accounting a
//! placement-aware layer reports (NVMe FDP's reclaim groups,
//! `device/fdp.rs`).
//!
//! With one group (every FTL but FDP with several reclaim groups) an LPN
//! lives on its static die (`lpn % dies`) for good. With `g` groups the
//! dies are split into `g` runs of `dies / g` consecutive dies (die
//! numbering is channel-fastest, so a run of at least `channels` dies
//! spans every channel), and a host write names the group its data goes
//! to: the unit is buffered for die `first + lpn % (dies / g)` of that
//! group, and its later GC moves stay on that die (GC is per die, and a
//! victim's valid data goes to the victim's die's GC frontier), so data
//! never crosses groups after it is placed. The die an LPN lives on is then
//! kept per LPN (`home`, stored as the XOR with the static die, so an LPN
//! never written through a group reads as static: the factory layout and
//! preconditioning stay valid).
//!
//! A group can be asked to hold more than its dies do (every write through
//! one group of several). The FTL keeps each die at or below `die_cap`
//! LPNs, the share the spare check of the layer provisions for
//! (`Fdp::from_profile`): a unit whose die is at the cap goes to the
//! group's least-filled die below it, and if the whole group is at the cap,
//! to the device's least-filled die (a *spill*, counted). The NVMe
//! specification leaves what a controller does when a reclaim group runs
//! out of space to the controller; spilling keeps the write succeeding,
//! which is the assumption here (a device could instead fail the write).
//! Since `dies x die_cap >= user LPNs`, some die is always below the cap.

use super::{Divisor, FlashDevice, NONE};
use crate::sim::Ns;

/// Units programmed on one die, by purpose (for a reclaim group's media
/// bytes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DieUnits {
    pub host: u64,
    pub gc: u64,
    pub padded: u64,
    /// Blocks erased.
    pub erases: u64,
}

/// Units programmed for one host stream: its own units flushed, the padding
/// of its partial rows, and the valid units GC moved out of blocks its
/// host frontier (or, with a GC frontier per stream, its GC frontier)
/// opened.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StreamUnits {
    pub host: u64,
    pub padded: u64,
    pub gc_moved: u64,
}

/// The accounting, allocated by [`FlashDevice::set_streams`] (empty, and
/// never touched, otherwise).
#[derive(Clone, Debug, Default)]
pub(super) struct Accounting {
    pub(super) per_die: Vec<DieUnits>,
    pub(super) per_stream: Vec<StreamUnits>,
    /// Units GC moved out of blocks the shared GC frontier opened (data of
    /// any stream, mixed: initially isolated handles) and the padding of
    /// that frontier's rows.
    pub(super) gc_shared: u64,
}

/// `owner` of a block the shared GC frontier opened.
pub(super) const SHARED_GC: u16 = u16::MAX;

impl FlashDevice {
    /// Split the dies into `groups` runs of `dies / groups` dies (after
    /// [`Self::set_streams`], before the first timed write); host writes
    /// then name their group ([`Self::write_placed`]). `groups` must
    /// divide the die count. A die may hold at most `die_cap` LPNs
    /// (mapped or buffered for it); `dies x die_cap` must cover the user
    /// space.
    pub fn set_die_groups(&mut self, groups: u32, die_cap: u64) {
        assert!(
            groups >= 1 && self.dies.is_multiple_of(groups),
            "{groups} groups of {} dies",
            self.dies
        );
        assert!(
            u64::from(self.dies) * die_cap >= self.user_lpns,
            "{} dies of {die_cap} LPNs cannot hold {} LPNs",
            self.dies,
            self.user_lpns
        );
        self.groups = groups;
        self.group_dies = Divisor::new(u64::from(self.dies / groups));
        if groups > 1 {
            self.home = super::Sparse::new(self.user_lpns);
            self.claimed = self.mapped.clone();
            for (d, ds) in self.die_state.iter().enumerate() {
                self.claimed[d] += ds.pending.iter().map(|p| p.len() as u64).sum::<u64>();
            }
            self.die_cap = die_cap;
        }
    }

    /// Placement groups of dies (1: static striping).
    pub fn die_groups(&self) -> u32 {
        self.groups
    }

    /// The group `die` belongs to.
    pub fn group_of_die(&self, die: u32) -> u32 {
        self.group_dies.div(u64::from(die)) as u32
    }

    /// Host units placed outside the group they named (their group's dies
    /// were full).
    pub fn spilled(&self) -> u64 {
        self.spilled
    }

    /// LPNs each die holds or has buffered, with groups (empty without).
    pub fn claimed(&self) -> &[u64] {
        &self.claimed
    }

    /// Units programmed on each die (empty before [`Self::set_streams`]).
    pub fn die_units(&self) -> &[DieUnits] {
        &self.acct.per_die
    }

    /// Units programmed for each host stream (empty before
    /// [`Self::set_streams`]).
    pub fn stream_units(&self) -> &[StreamUnits] {
        &self.acct.per_stream
    }

    /// Units GC moved out of blocks of the shared GC frontier.
    pub fn gc_moved_shared(&self) -> u64 {
        self.acct.gc_shared
    }

    /// The die an LPN's data is on (or buffered for), with groups.
    #[inline]
    pub(super) fn home_die(&self, lpn: u64) -> u32 {
        self.home.get(lpn) ^ self.dies_div.rem(lpn) as u32
    }

    /// The die a host write of `lpn` through `group` goes to: the group's
    /// die for the LPN's stripe, or, when that one is at the cap, the
    /// group's least-filled die, or the device's (a spill). Ties go to the
    /// lowest die. `live`: the die the LPN's data is on now, if it has
    /// data (staying there takes no room).
    fn target_die(&mut self, lpn: u64, group: u32, live: Option<u32>) -> u32 {
        let k = self.group_dies.d as u32;
        let first = group * k;
        let d = first + self.group_dies.rem(lpn) as u32;
        let room = |s: &Self, x: u32| live == Some(x) || s.claimed[x as usize] < s.die_cap;
        if room(self, d) {
            return d;
        }
        let least = |s: &Self, r: std::ops::Range<u32>| {
            r.filter(|&x| room(s, x))
                .min_by_key(|&x| (s.claimed[x as usize], x))
        };
        if let Some(x) = least(self, first..first + k) {
            return x;
        }
        self.spilled += 1;
        least(self, 0..self.dies).expect("dies x die_cap covers the user space")
    }

    /// [`Self::write_stream`] with the data going to `group`'s dies (see
    /// the module docs). With one group, the static die.
    pub fn write_placed(
        &mut self,
        now: Ns,
        lpn: u64,
        npages: u32,
        stream: usize,
        group: u32,
    ) -> Ns {
        if self.groups == 1 {
            return self.write_stream(now, lpn, npages, stream);
        }
        assert!(group < self.groups, "group {group} of {}", self.groups);
        self.write_units(now, lpn, npages, stream, Some(group))
    }

    /// Where a host write of `l` through `group` buffers it: moves the
    /// LPN's home (and a copy still buffered elsewhere) to the target die
    /// and returns it.
    pub(super) fn rehome(&mut self, l: u64, group: u32) -> u32 {
        let home = self.home_die(l);
        let live = self.l2p_get(l) != NONE || self.in_buffer(l);
        let d = self.target_die(l, group, live.then_some(home));
        if d == home {
            if !live {
                self.claimed[d as usize] += 1;
            }
            return d;
        }
        // A copy buffered on the old die is superseded by this write.
        for p in &mut self.die_state[home as usize].pending {
            if let Some(i) = p.iter().position(|&x| u64::from(x) == l) {
                p.swap_remove(i);
                self.buf_pending -= 1;
            }
        }
        if live {
            self.claimed[home as usize] -= 1;
        }
        self.claimed[d as usize] += 1;
        *self.home.get_mut(l) = d ^ self.dies_div.rem(l) as u32;
        d
    }

    /// Padding of a partial row, by the die and the stream (or the shared
    /// GC frontier) whose frontier it is.
    pub(super) fn account_padding(&mut self, die: u32, for_gc: bool, pad: u64) {
        if let Some(u) = self.acct.per_die.get_mut(die as usize) {
            u.padded += pad;
        }
        let stream = if !for_gc {
            Some(self.stream)
        } else if self.die_state[die as usize].gc.len() > 1 {
            Some(self.gc_stream)
        } else {
            None
        };
        if self.acct.per_stream.is_empty() {
            return;
        }
        match stream {
            Some(s) => self.acct.per_stream[s].padded += pad,
            None => self.acct.gc_shared += pad,
        }
    }

    /// One unit GC moved out of global block `gb` of `die`.
    pub(super) fn account_gc_move(&mut self, die: u32, gb: usize) {
        if let Some(u) = self.acct.per_die.get_mut(die as usize) {
            u.gc += 1;
        }
        let owner = self.owner[gb];
        if owner == SHARED_GC {
            self.acct.gc_shared += 1;
        } else if let Some(u) = self.acct.per_stream.get_mut(usize::from(owner)) {
            u.gc_moved += 1;
        }
    }

    /// One block of `die` erased.
    pub(super) fn account_erase(&mut self, die: u32) {
        if let Some(u) = self.acct.per_die.get_mut(die as usize) {
            u.erases += 1;
        }
    }
}
