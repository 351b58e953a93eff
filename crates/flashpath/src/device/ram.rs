//! A device backed by memory: every command takes a fixed latency plus,
//! optionally, its bytes at a copy rate. It is the device side of null_blk
//! (`completion_nsec`: the hrtimer that completes a request,
//! drivers/block/null_blk/main.c `null_cmd_end_timer`), of a virtio-blk
//! disk whose QEMU back end is a RAM image (one host I/O thread that
//! copies one request at a time), and of a RAM disk (`brd`).

use super::{BlockBackend, Command, Completion, Op};
use crate::sim::Ns;

#[derive(Clone, Debug, PartialEq)]
pub struct RamDevice {
    capacity: u64,
    /// Time of every command, whatever its size.
    latency: Ns,
    /// Copy rate in bytes per ns; `None`: the size costs nothing.
    bytes_per_ns: Option<f64>,
    /// One command at a time (a single I/O thread) instead of any number at
    /// once.
    serial: bool,
    /// When the single I/O thread is free again (serial only).
    free_at: Ns,
    /// Time spent serving commands.
    pub busy_ns: u64,
}

impl RamDevice {
    /// Every command done `latency` after it arrived, any number at once
    /// (null_blk's timer).
    pub fn fixed(capacity: u64, latency: Ns) -> RamDevice {
        RamDevice {
            capacity,
            latency,
            bytes_per_ns: None,
            serial: false,
            free_at: 0,
            busy_ns: 0,
        }
    }

    /// One I/O thread serving commands in arrival order, each in `latency`
    /// plus its bytes at `bytes_per_sec`.
    pub fn serial(capacity: u64, latency: Ns, bytes_per_sec: f64) -> RamDevice {
        RamDevice {
            capacity,
            latency,
            bytes_per_ns: Some(bytes_per_sec / 1e9),
            serial: true,
            free_at: 0,
            busy_ns: 0,
        }
    }

    /// When the single I/O thread is free again (serial; 0 otherwise).
    pub fn free_at(&self) -> Ns {
        self.free_at
    }

    /// Whether the I/O thread has nothing to do at `at` (it would sleep,
    /// so a new command wakes it).
    pub fn idle_at(&self, at: Ns) -> bool {
        self.free_at <= at
    }

    /// The time one command of `len` bytes takes, once started.
    pub fn service_ns(&self, len: u32) -> Ns {
        match self.bytes_per_ns {
            Some(rate) => self.latency + (f64::from(len) / rate).ceil() as Ns,
            None => self.latency,
        }
    }
}

impl BlockBackend for RamDevice {
    fn capacity(&self) -> u64 {
        self.capacity
    }
    fn submit(&mut self, at: Ns, cmd: &Command) -> Completion {
        let len = match cmd.op {
            // A discard is charged like a write of its range (the memory is
            // zeroed).
            Op::Read | Op::Write | Op::Trim => cmd.len,
            Op::Flush => 0,
            Op::WriteZeroes
            | Op::ZoneMgmt(_)
            | Op::ZoneAppend
            | Op::Verify { .. }
            | Op::WriteSame { .. }
            | Op::WriteVerify => return Completion::unsupported(at),
        };
        let service = self.service_ns(len);
        let start = if self.serial {
            at.max(self.free_at)
        } else {
            at
        };
        let done = start + service;
        if self.serial {
            self.free_at = done;
        }
        self.busy_ns += service;
        Completion::ok(done)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::Ddir;

    #[test]
    fn a_serial_device_queues_commands_behind_each_other() {
        // 1 GB/s: 4096 B in 4096 ns, plus 1 us.
        let mut d = RamDevice::serial(1 << 30, 1000, 1e9);
        let c = Command::new(Ddir::Read, 0, 4096);
        assert_eq!(d.submit(0, &c).at, 5096);
        assert_eq!(d.submit(0, &c).at, 2 * 5096);
        assert_eq!(d.busy_ns, 2 * 5096);
        let mut f = RamDevice::fixed(1 << 30, 1000);
        assert_eq!(f.submit(0, &c).at, 1000);
        assert_eq!(f.submit(0, &c).at, 1000);
    }
}
