//! A task's system calls as fio makes them (`io_submit`, `pread`/`pwrite`,
//! `io_getevents`, `fsync`): fio's user-space work for the call, the
//! kernel's entry (`entry_SYSCALL_64`, arch/x86/entry/entry_64.S; `el0_svc`
//! on arm64), the kernel work the caller names (the block layer's submit
//! path, the page cache's copy), and the exit back to user space. Each
//! part runs on the task's core and is booked to its rusage
//! (`Host::run_task`). The costs are `HostCosts`' `fio_submit`,
//! `fio_complete`, `syscall_entry` and `syscall_exit`.

use super::task::Host;
use crate::sim::Ns;

/// When a submitting call's parts end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CallTimes {
    /// fio's user-space work for the I/O is done: the call is entered.
    pub user_done: Ns,
    /// The kernel's work (and the exit, if the call returned) is done.
    pub end: Ns,
}

impl Host {
    /// fio's user-space work for one I/O, then a system call: its entry,
    /// `kernel` ns of kernel work, and its exit when the call `returns`
    /// now (a synchronous call that waits in the kernel returns later,
    /// through the wake-up's switch back or `exit_kernel`).
    pub fn submit_call(&mut self, tid: u32, now: Ns, kernel: Ns, returns: bool) -> CallTimes {
        let c = self.costs();
        let user_done = self.run_task(tid, now, c.fio_submit, 0);
        let exit = if returns { c.syscall_exit } else { 0 };
        let end = self.run_task(tid, user_done, 0, c.syscall_entry + kernel + exit);
        CallTimes { user_done, end }
    }

    /// fio's user-space work for one I/O that needs no system call (the
    /// null engine completes it in user space). Returns when it is done.
    pub fn user_io(&mut self, tid: u32, now: Ns) -> Ns {
        let c = self.costs();
        self.run_task(tid, now, c.fio_submit, 0)
    }

    /// fio's user-space work for a call and the kernel's entry, booked as
    /// one stretch (fsync's entry; the call's work follows). Returns when
    /// the task is in the kernel.
    pub fn enter_kernel(&mut self, tid: u32, now: Ns) -> Ns {
        let c = self.costs();
        self.run_task(tid, now, c.fio_submit, c.syscall_entry)
    }

    /// The kernel's entry alone (`io_getevents` that will sleep: fio's
    /// work was done by the loop). Returns when the task is in the kernel.
    pub fn enter_to_wait(&mut self, tid: u32, now: Ns) -> Ns {
        let c = self.costs();
        self.run_task(tid, now, 0, c.syscall_entry)
    }

    /// The call returns to user space from `at`. Returns when it has.
    pub fn exit_kernel(&mut self, tid: u32, at: Ns) -> Ns {
        let c = self.costs();
        self.run_task(tid, at, 0, c.syscall_exit)
    }

    /// fio reaps `n` completions at `now` (`fio_complete` each in user
    /// space), through an `io_getevents` call (entry and exit) when
    /// `syscall`: the null engine and a synchronous engine reap without
    /// one. Returns when fio is done.
    pub fn reap_call(&mut self, tid: u32, now: Ns, n: u64, syscall: bool) -> Ns {
        let c = self.costs();
        let sys = if syscall {
            c.syscall_entry + c.syscall_exit
        } else {
            0
        };
        self.run_task(tid, now, c.fio_complete * n, sys)
    }
}
