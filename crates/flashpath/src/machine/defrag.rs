//! fio's e4defrag engine on the host: each write one EXT4_IOC_MOVE_EXT
//! ioctl (engines/e4defrag.c fio_e4defrag_queue, FIO_SYNCIO: the call
//! returns with the I/O done, FIO_Q_COMPLETED), bracketed with `inplace=1`
//! by the donor's fallocate(2) of the I/O's range and its ftruncate(2) to 0.
//!
//! The kernel's move (fs/ext4/move_extent.c ext4_move_extents) walks the
//! range one page at a time (move_extent_per_page): a journal handle, the
//! two files' folios locked (mext_folio_double_lock, created when not
//! cached), and ext4_swap_extents under both inodes' i_data_sem. What it
//! does with the data depends on the file's extent: an unwritten one (what
//! fio's own layout of a write job gives: filesetup.c extend_file unlinks
//! the file and fallocates it) has nothing to copy, and the swap is all
//! (`unwritten` branch); a written one has each page read (from the device
//! when not cached, mext_page_mkuptodate) and left dirty for writeback
//! (block_commit_write). Measured with the real fio 3.33 on ext4
//! (experiments/e4defrag): the unwritten move does no device I/O during the
//! run; the written one reads the whole range synchronously, one 4 KiB
//! read per page, and writes it back only later. flashpath models the
//! unwritten move; workload/fio/e4defrag.rs refuses jobs whose file fio
//! lays out with data.

use super::Machine;
use crate::block::Request;
use crate::sim::Ns;
use crate::types::IoUnit;

/// The kernel's work per page of a move of an unwritten extent: the
/// journal handle's start and stop, two folios created and released, and
/// the extent swap with the splits at the page's edges (ext4_swap_extents,
/// ext4_force_split_extent_at on both files). An assumption, not sourced
/// from the kernel: the median cost per page the real fio 3.33 shows on
/// this project's 2-core x86-64 test machine (experiments/e4defrag/README.md:
/// clat p50 6.5 us for one page, 41 us for 8, 165 us for 32, 5.1 us a page
/// from 1 to 32). Sensitivity: an e4defrag job's completion latency is
/// fio's work and the call's entry and exit plus pages x this, linearly;
/// its device I/O is none whatever the value.
pub const MOVE_EXTENT_PAGE: Ns = 5_000;

/// The page the kernel moves by (PAGE_SIZE on x86-64; the move is
/// page-granular: move_extent_per_page).
const PAGE: u64 = 4096;

impl Machine {
    /// One e4defrag I/O from `now`: fio's work, with `inplace=1` the
    /// donor's fallocate, the ioctl and the donor's ftruncate, each a
    /// system call on the thread's core. The file system's block
    /// allocation and freeing inside fallocate and ftruncate is not
    /// charged (as the falloc engine's: docs/model.md), nor ftruncate's
    /// wait on ext4's journal (experiments/e4defrag: 0.5-8.6 ms on a virtio
    /// disk, tens of us on a loop device in memory). Returns when the
    /// last call has returned; the I/O is then complete.
    pub(super) fn defrag_submit(&mut self, tid: u32, unit: IoUnit, now: Ns) -> Ns {
        let c = self.host.costs();
        let bare_call = c.syscall_entry + c.syscall_exit;
        let inplace = self.threads[tid as usize].defrag_inplace;
        let user_done = self.host.user_io(tid, now);
        let mut at = user_done;
        if inplace {
            at = self.host.run_task(tid, at, 0, bare_call);
        }
        at = self
            .host
            .run_task(tid, at, 0, bare_call + move_cost(unit.offset, unit.len));
        if inplace {
            at = self.host.run_task(tid, at, 0, bare_call);
        }
        let cpu = self.host.task_cpu(tid);
        // A synchronous engine's issue time is taken before the calls
        // (ioengines.c td_io_queue), so clat covers them: no slat.
        let key = self.block.rqs.insert(Request::fio(
            tid, unit, cpu, now, user_done, user_done, false, 0,
        ));
        self.threads[tid as usize].fio.completed_inline(key);
        self.submitted_ios += 1;
        at
    }
}

/// The ioctl's kernel work for a move of `len` bytes at `offset`: the
/// pages the range touches (fio asks for whole file system blocks, which
/// are pages here: me.len rounds the range out to st_blksize).
pub fn move_cost(offset: u64, len: u32) -> Ns {
    move_pages(offset, len) * MOVE_EXTENT_PAGE
}

/// The pages `[offset, offset + len)` touches.
pub fn move_pages(offset: u64, len: u32) -> u64 {
    if len == 0 {
        return 0;
    }
    let first = offset / PAGE;
    let last = (offset + u64::from(len) - 1) / PAGE;
    last - first + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_move_costs_each_page_it_touches() {
        assert_eq!(move_pages(0, 4096), 1);
        assert_eq!(move_pages(0, 32768), 8);
        // Unaligned: fio's me.len rounds the range out to whole blocks.
        assert_eq!(move_pages(100, 4096), 2);
        assert_eq!(move_pages(4095, 2), 2);
        assert_eq!(move_pages(8192, 1), 1);
        assert_eq!(move_pages(0, 0), 0);
        assert_eq!(move_cost(0, 131072), 32 * MOVE_EXTENT_PAGE);
    }
}
