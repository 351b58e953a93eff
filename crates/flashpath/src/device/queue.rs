//! A device whose inside is unknown (a virtio disk over a host file or
//! volume, a cloud block volume, an SSD behind a RAID card), as a queueing
//! model: a throttle at the front and `servers` identical servers behind
//! it, each serving one command at a time in
//! `fixed(op) + bytes / transfer_rate`. It is what `flashpath calibrate`
//! fits to a user's fio runs; every parameter is one a set of fio runs can
//! pin (docs/calibrate.md).
//!
//! - Servers, `dispatch = "shared"`: a command goes to the server that is
//!   free first, in arrival order (one FIFO queue before all servers): an
//!   M/D/c station whose saturation rate is `servers / service time`.
//! - Servers, `dispatch = "by-address"`: the command's address picks its
//!   server (a hash of its first 4 KiB unit), and each server has its own
//!   FIFO queue, as an SSD's dies or a RAID's members. Random offsets then
//!   collide on a server before all are busy, so throughput rises with the
//!   queue depth gradually rather than with a knee: the shape measured on
//!   a virtio disk over a host SSD (docs/calibrate.md), which a shared queue
//!   cannot follow.
//! - The throttle: an IOPS cap and a bandwidth cap, each a gate that lets a
//!   command in no sooner than `1 / iops_cap` (or `bytes / bandwidth_cap`)
//!   after the one before: the leaky bucket without burst of QEMU's
//!   `throttle.iops-total` / `throttle.bps-total` (util/throttle.c) and of
//!   a cloud volume's provisioned IOPS and throughput. 0 = no cap.
//!
//! - Service times vary with `service_cv` (their coefficient of
//!   variation, 0 to 1): a command's time is `(1 - cv)` of its mean as a
//!   fixed part plus an exponential part of mean `cv` times it (a shifted
//!   exponential: mean unchanged, standard deviation `cv` times the mean).
//!   0 is a deterministic M/D/c server, 1 an M/M/c one. Variable service
//!   softens the knee of throughput against queue depth further, as a
//!   host's own queueing behind a virtual disk does.
//!
//! - `service_tail` (σ, 0 to 3): the variable part's shape. 0 keeps the
//!   exponential above; σ > 0 makes it log-normal of the same mean
//!   (`cv · mean · exp(σZ − σ²/2)`, Z standard normal), whose tail is
//!   heavier than the exponential's at p99.9 and lighter at p90 for
//!   σ near 1: the shape of a virtio disk's completion latencies at QD1
//!   (docs/calibrate.md), whose excess over its minimum has p99/p50 ~9
//!   and p99.9/p99 ~4, where an exponential has 6.6 and 1.5.
//! - A write-back cache (`writeback_bytes`, `writeback_flush`): writes
//!   land in a cache; each time `writeback_bytes` more bytes have been
//!   written, the write that fills it waits `writeback_flush` for the
//!   cache to be written back; its server goes on with the next command
//!   meanwhile (a guest disk over a host file with `cache=writeback`:
//!   the host thread doing that write blocks in the host's dirty
//!   throttling, mm/page-writeback.c balance_dirty_pages, while QEMU's
//!   other threads serve the rest). Rare millisecond stalls of writes
//!   alone: the runs of docs/calibrate.md show them on writes, not on the
//!   reads of a mix. 0 bytes = no cache. `writeback_spread` (σ, 0 to 3) draws
//!   each write-back's time log-normal with that log-sd and mean
//!   `writeback_flush` (0: every one the same): a host's write-backs last
//!   from about a millisecond to tens of them (docs/calibrate.md).
//! - `turnaround`: a server whose previous command went the other
//!   direction (a read after a write, or a write after a read) spends
//!   this much longer on the command: the cost of switching a path
//!   between reads and writes (a NAND die's read/program mode switch, a
//!   host thread's switch between its read and write paths). It adds
//!   nothing to a pure read or pure write job, so only a mixed job pins
//!   it.
//! - `switch_delay`: the same switch, but one that the server makes
//!   while it still serves the command before: a command of the other
//!   direction than its server's previous one starts no sooner than
//!   `switch_delay` after it is let in, so the switch costs its full time
//!   on an idle server (at iodepth 1, every switch) and nothing behind
//!   queued work, and occupies no server. The shape of the virtio disk's
//!   mixes of docs/calibrate.md (2026-11-27 11:51): at iodepth 1 a 50/50
//!   and a 70/30 mix ran 29-33% below what the pure jobs' times give,
//!   while at iodepth 16-32 the mixes ran within 11% of the pure jobs; a
//!   switch that held the server (`turnaround`) would cost throughput at
//!   every depth (though the fit to that sitting's plan chose the
//!   turnaround: docs/calibrate.md says why). An assumption about the mechanism (a host whose reads
//!   and writes go different paths, one of which must be woken: QEMU's
//!   thread pool, util/thread-pool.c, or a host page cache's write path);
//!   the runs pin only its size.
//!
//! - `policy`: which waiting command a free server takes. `fifo` (the
//!   default, and every profile's before the key existed): arrival order,
//!   so a command's completion is known when it arrives ([`QueueDevice::submit`]).
//!   `reads-first`: the device keeps its waiting commands
//!   ([`QueueDevice::enqueue`]) and a server that comes free takes the
//!   oldest waiting read before any write, unless `writes_starved` reads
//!   have passed a waiting write since a write was last taken; then it
//!   takes the oldest write. This is mq-deadline's dispatch rule
//!   (block/mq-deadline.c `__dd_dispatch_request`: `if (fifo write waits
//!   && dd->starved++ >= dd->writes_starved) goto dispatch_writes`,
//!   `writes_starved` 2 by default), which a virtio disk's host applies
//!   below the guest when QEMU's I/O goes through a host block device
//!   with that scheduler, and the read priority an SSD's firmware gives
//!   reads over buffered writes. Its batching (`fifo_batch` commands of
//!   one direction in sector order) and expiry (`read_expire` 500 ms,
//!   `write_expire` 5 s) are not modelled: a virtio disk's queue holds a
//!   few dozen commands of microseconds, far from either deadline. With
//!   `dispatch = "shared"` there is one queue before all servers; with
//!   `by-address`, each server's own. The mixes of docs/calibrate.md
//!   (2026-11-27 14:48) show it: in a 50/50 mix at iodepth 16 the reads
//!   took 159 us and the writes 294 us at the same rate, and a 10/90
//!   mix's reads took the pure iodepth-1 reads' time while its writes
//!   queued, though pure writes ran faster than pure reads.
//!
//! Flushes and trims take the write's fixed time and move no data.

use super::{BlockBackend, Command, Completion, Op, UNIT};
use crate::sim::rng::RngStream;
use crate::sim::Ns;

/// How a command finds its server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dispatch {
    /// One queue before all servers: the first free server takes it.
    Shared,
    /// The server its address hashes to.
    ByAddress,
}

/// Which waiting command a free server takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    /// Arrival order.
    Fifo,
    /// Reads before writes, up to `writes_starved` reads passing a
    /// waiting write (mq-deadline's rule).
    ReadsFirst,
}

/// What [`QueueDevice`] is built from.
#[derive(Clone, Debug, PartialEq)]
pub struct QueueParams {
    pub capacity: u64,
    /// Per-command time of a read and of a write, whatever their size.
    pub read_fixed: Ns,
    pub write_fixed: Ns,
    /// Bytes per second a server moves; the per-byte part of a command.
    pub transfer_rate: f64,
    /// Commands served at once.
    pub servers: u32,
    pub dispatch: Dispatch,
    /// Coefficient of variation of the service time, 0 to 1.
    pub service_cv: f64,
    /// Commands per second the throttle lets in; 0 = no cap.
    pub iops_cap: f64,
    /// Bytes per second the throttle lets in; 0 = no cap.
    pub bandwidth_cap: f64,
    /// Log-normal σ of the service time's variable part; 0 = exponential.
    pub service_tail: f64,
    /// Time a server adds to a command of the other direction than its
    /// previous one.
    pub turnaround: Ns,
    /// Time after its admission before a command of the other direction
    /// than its server's previous one can start (overlapping the
    /// server's queued work; no server time).
    pub switch_delay: Ns,
    /// Bytes written between two write-backs of the cache; 0 = no cache.
    pub writeback_bytes: u64,
    /// Time the write that fills the cache waits for the write-back
    /// (the mean, when `writeback_spread` > 0).
    pub writeback_flush: Ns,
    /// Log-normal σ of a write-back's time; 0 = always `writeback_flush`.
    pub writeback_spread: f64,
    /// Which waiting command a free server takes.
    pub policy: Policy,
    /// Under `ReadsFirst`: reads that may pass a waiting write before the
    /// write is taken.
    pub writes_starved: u32,
}

/// A command waiting in the device's queue (`ReadsFirst`).
#[derive(Clone, Copy, Debug)]
struct Waiting {
    tag: u32,
    cmd: Command,
    /// When the throttle let it in; it cannot start before.
    admitted: Ns,
    /// Its queue: the server's under `by-address`, 0 under `shared`.
    queue: usize,
    /// Arrival order, for the oldest of a direction.
    seq: u64,
}

/// A command a server has started ([`QueueDevice::start_next`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Started {
    pub tag: u32,
    pub cmd: Command,
    /// Its completion (after any write-back it waits for).
    pub done: Completion,
    /// When its server is free again.
    pub free_at: Ns,
}

pub struct QueueDevice {
    params: QueueParams,
    /// ns per byte of a server's transfer.
    ns_per_byte: f64,
    /// When each server is free again.
    free_at: Vec<Ns>,
    /// Whether each server's last command was a write, None before its
    /// first (for `turnaround`).
    last_write: Vec<Option<bool>>,
    /// Bytes written since the cache was last written back.
    dirty: u64,
    /// When the IOPS and the bandwidth gate next let a command in
    /// (fractional ns, so that a cap's spacing does not drift by rounding).
    iops_gate: f64,
    bw_gate: f64,
    /// The service times' random part. The probe table builds drivers
    /// without the run seed, so the stream is the same in every run: a
    /// fitted profile answers the same way each time.
    rng: RngStream,
    /// Commands served and the servers' summed busy time.
    pub commands: u64,
    pub busy_ns: u64,
    /// Time commands waited at the throttle, summed.
    pub throttled_ns: u64,
    /// Write-backs of the cache, and direction switches paid.
    pub writebacks: u64,
    pub turnarounds: u64,
    /// Commands whose start a switch delay put off, and by how much in
    /// all (what queued work did not hide).
    pub switch_waits: u64,
    pub switch_wait_ns: u64,
    /// The waiting commands (`ReadsFirst`), reserved at the tag count.
    waiting: Vec<Waiting>,
    /// Per queue: reads taken past a waiting write since a write was
    /// last taken (mq-deadline's `dd->starved`).
    starved: Vec<u32>,
    seq: u64,
    /// Writes that waited while a read was taken before them.
    pub reads_passed: u64,
}

impl QueueDevice {
    pub fn new(params: QueueParams) -> QueueDevice {
        let servers = params.servers.max(1) as usize;
        QueueDevice {
            ns_per_byte: 1e9 / params.transfer_rate,
            free_at: vec![0; servers],
            last_write: vec![None; servers],
            dirty: 0,
            iops_gate: 0.0,
            bw_gate: 0.0,
            rng: RngStream::new(0, "device.queue.service"),
            commands: 0,
            busy_ns: 0,
            throttled_ns: 0,
            writebacks: 0,
            turnarounds: 0,
            switch_waits: 0,
            switch_wait_ns: 0,
            waiting: Vec::new(),
            starved: vec![0; servers],
            seq: 0,
            reads_passed: 0,
            params,
        }
    }

    /// Room for `n` waiting commands (the driver's tag count), so that
    /// queueing allocates nothing on the I/O path.
    pub fn reserve(&mut self, n: usize) {
        self.waiting.reserve(n);
    }

    /// Whether the device keeps a queue ([`Self::enqueue`],
    /// [`Self::start_next`]) rather than fixing each completion on
    /// arrival ([`Self::submit`]).
    pub fn queued(&self) -> bool {
        self.params.policy != Policy::Fifo
    }

    /// A command arrives at `at` with tag `tag` and waits; returns when
    /// the throttle lets it in (it can start no sooner).
    pub fn enqueue(&mut self, at: Ns, cmd: &Command, tag: u32) -> Ns {
        let len = match cmd.op {
            Op::Read | Op::Write => cmd.len,
            _ => 0,
        };
        let admitted = self.admit(at, len);
        self.throttled_ns += admitted - at;
        let queue = match self.params.dispatch {
            Dispatch::Shared => 0,
            Dispatch::ByAddress => self.server_of(cmd),
        };
        self.waiting.push(Waiting {
            tag,
            cmd: *cmd,
            admitted,
            queue,
            seq: self.seq,
        });
        self.seq += 1;
        admitted
    }

    /// Start one waiting command at `now` on a server that is free, if
    /// any: the queue's pick by the policy among the commands let in by
    /// `now`. Call until None.
    pub fn start_next(&mut self, now: Ns) -> Option<Started> {
        let queues = match self.params.dispatch {
            Dispatch::Shared => 1,
            Dispatch::ByAddress => self.free_at.len(),
        };
        for q in 0..queues {
            let server = match self.params.dispatch {
                // The server free first, the lowest index on a tie, as
                // `submit` picks it.
                Dispatch::Shared => self
                    .free_at
                    .iter()
                    .copied()
                    .enumerate()
                    .filter(|&(_, t)| t <= now)
                    .min_by_key(|&(i, t)| (t, i))
                    .map(|(i, _)| i)?,
                Dispatch::ByAddress if self.free_at[q] <= now => q,
                Dispatch::ByAddress => continue,
            };
            let Some(i) = self.pick(q, now) else {
                continue;
            };
            let w = self.waiting.swap_remove(i);
            let len = match w.cmd.op {
                Op::Read | Op::Write => w.cmd.len,
                _ => 0,
            };
            let (done, free_at) = self.serve(server, w.admitted, now, w.cmd.op, len);
            return Some(Started {
                tag: w.tag,
                cmd: w.cmd,
                done: Completion::ok(done),
                free_at,
            });
        }
        None
    }

    /// Queue `q`'s next command at `now` (its index in `waiting`), by the
    /// policy; moves the queue's starvation count.
    fn pick(&mut self, q: usize, now: Ns) -> Option<usize> {
        let mut read: Option<(u64, usize)> = None;
        let mut write: Option<(u64, usize)> = None;
        for (i, w) in self.waiting.iter().enumerate() {
            if w.queue != q || w.admitted > now {
                continue;
            }
            let slot = if w.cmd.op == Op::Read {
                &mut read
            } else {
                &mut write
            };
            if slot.is_none_or(|(seq, _)| w.seq < seq) {
                *slot = Some((w.seq, i));
            }
        }
        match (read, write) {
            (Some((rs, r)), Some((ws, w))) => {
                if self.params.policy == Policy::Fifo {
                    return Some(if rs < ws { r } else { w });
                }
                if self.starved[q] >= self.params.writes_starved {
                    self.starved[q] = 0;
                    Some(w)
                } else {
                    self.starved[q] += 1;
                    self.reads_passed += 1;
                    Some(r)
                }
            }
            (Some((_, r)), None) => Some(r),
            (None, Some((_, w))) => {
                self.starved[q] = 0;
                Some(w)
            }
            (None, None) => None,
        }
    }

    fn server_of(&self, cmd: &Command) -> usize {
        (mix(cmd.offset / UNIT) % self.free_at.len() as u64) as usize
    }

    pub fn params(&self) -> &QueueParams {
        &self.params
    }

    /// A server's time for one command of `len` bytes, once started.
    pub fn service_ns(&self, op: Op, len: u32) -> Ns {
        match op {
            Op::Read => self.params.read_fixed + self.transfer_ns(len),
            Op::Write => self.params.write_fixed + self.transfer_ns(len),
            _ => self.params.write_fixed,
        }
    }

    /// Serve a command of `op` and `len` bytes, let in at `admitted`, on
    /// `server` from `ready` (when the server has it and is free):
    /// its completion (after any write-back it waits for) and when the
    /// server is free again.
    fn serve(&mut self, server: usize, admitted: Ns, ready: Ns, op: Op, len: u32) -> (Ns, Ns) {
        let mean = self.service_ns(op, len);
        let mut service = if self.params.service_cv > 0.0 {
            let cv = self.params.service_cv;
            let m = mean as f64;
            let variable = if self.params.service_tail > 0.0 {
                let sigma = self.params.service_tail;
                cv * m * (sigma * self.rng.standard_normal() - 0.5 * sigma * sigma).exp()
            } else {
                self.rng.exponential(cv * m)
            };
            ((1.0 - cv) * m + variable).round() as Ns
        } else {
            mean
        };
        // Reads go one way, everything else (writes, flushes, trims) the
        // other.
        let is_write = op != Op::Read;
        let switched = self.last_write[server] == Some(!is_write);
        if self.params.turnaround > 0 && switched {
            service += self.params.turnaround;
            self.turnarounds += 1;
        }
        self.last_write[server] = Some(is_write);
        // The switch delay runs from admission, alongside the server's
        // queued work: only what outlasts that work delays the start.
        let mut ready = ready;
        if self.params.switch_delay > 0 && switched {
            let switch_done = admitted + self.params.switch_delay;
            if switch_done > ready {
                self.switch_waits += 1;
                self.switch_wait_ns += switch_done - ready;
                ready = switch_done;
            }
        }
        let mut stall = 0;
        if op == Op::Write && self.params.writeback_bytes > 0 {
            self.dirty += u64::from(len);
            if self.dirty >= self.params.writeback_bytes {
                // One write-back per write at most: a write larger than
                // the cache waits for one, and the rest of it starts the
                // next cache-full.
                self.dirty %= self.params.writeback_bytes;
                let flush = self.params.writeback_flush as f64;
                let sigma = self.params.writeback_spread;
                stall = if sigma > 0.0 {
                    (flush * (sigma * self.rng.standard_normal() - 0.5 * sigma * sigma).exp())
                        .round() as Ns
                } else {
                    self.params.writeback_flush
                };
                self.writebacks += 1;
            }
        }
        let done = ready + service;
        self.free_at[server] = done;
        self.commands += 1;
        self.busy_ns += service;
        (done + stall, done)
    }

    fn transfer_ns(&self, len: u32) -> Ns {
        (f64::from(len) * self.ns_per_byte).round() as Ns
    }

    /// When the throttle lets a command of `len` bytes in that arrived at
    /// `at`; moves the gates past it.
    fn admit(&mut self, at: Ns, len: u32) -> Ns {
        let p = &self.params;
        let mut t = at as f64;
        if p.iops_cap > 0.0 {
            t = t.max(self.iops_gate);
        }
        if p.bandwidth_cap > 0.0 {
            t = t.max(self.bw_gate);
        }
        if p.iops_cap > 0.0 {
            self.iops_gate = t + 1e9 / p.iops_cap;
        }
        if p.bandwidth_cap > 0.0 {
            self.bw_gate = t + f64::from(len) * 1e9 / p.bandwidth_cap;
        }
        t.ceil() as Ns
    }
}

impl BlockBackend for QueueDevice {
    fn capacity(&self) -> u64 {
        self.params.capacity
    }
    fn submit(&mut self, at: Ns, cmd: &Command) -> Completion {
        if !cmd.op.conventional() {
            return Completion::unsupported(at);
        }
        let len = match cmd.op {
            Op::Read | Op::Write => cmd.len,
            _ => 0,
        };
        let admitted = self.admit(at, len);
        self.throttled_ns += admitted - at;
        let server = match self.params.dispatch {
            // The server free first; the lowest index on a tie, so a run
            // is the same every time.
            Dispatch::Shared => self
                .free_at
                .iter()
                .copied()
                .enumerate()
                .min_by_key(|&(i, t)| (t, i))
                .map_or(0, |(i, _)| i),
            Dispatch::ByAddress => self.server_of(cmd),
        };
        let free = self.free_at[server];
        let (done, _) = self.serve(server, admitted, admitted.max(free), cmd.op, len);
        Completion::ok(done)
    }
}

/// SplitMix64's finaliser (Steele, Lea, Flood, OOPSLA 2014): spreads
/// neighbouring units over the servers as a device's address interleave
/// would, without a stride that a job's block size could alias with.
fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::Ddir;

    fn params(servers: u32) -> QueueParams {
        QueueParams {
            capacity: 1 << 30,
            read_fixed: 100_000,
            write_fixed: 300_000,
            transfer_rate: 1e9,
            servers,
            dispatch: Dispatch::Shared,
            service_cv: 0.0,
            iops_cap: 0.0,
            bandwidth_cap: 0.0,
            service_tail: 0.0,
            turnaround: 0,
            switch_delay: 0,
            writeback_bytes: 0,
            writeback_flush: 0,
            writeback_spread: 0.0,
            policy: Policy::Fifo,
            writes_starved: 2,
        }
    }

    /// Drive a queued device as its driver does: each command arrives at
    /// its time, and whenever a command is let in or a server comes free
    /// the device starts what it can. The completion time of each
    /// command, by its index.
    fn drive(d: &mut QueueDevice, arrivals: &[(Ns, Command)]) -> Vec<Ns> {
        use std::collections::BTreeSet;
        let mut done = vec![0; arrivals.len()];
        let mut times: BTreeSet<Ns> = arrivals.iter().map(|&(at, _)| at).collect();
        while let Some(now) = times.pop_first() {
            for (tag, (at, cmd)) in arrivals.iter().enumerate() {
                if *at == now {
                    let admitted = d.enqueue(now, cmd, tag as u32);
                    if admitted > now {
                        times.insert(admitted);
                    }
                }
            }
            while let Some(s) = d.start_next(now) {
                done[s.tag as usize] = s.done.at;
                times.insert(s.free_at);
            }
        }
        done
    }

    fn read(len: u32) -> Command {
        Command::new(Ddir::Read, 0, len)
    }

    #[test]
    fn service_is_the_fixed_time_plus_the_bytes_at_the_transfer_rate() {
        let mut d = QueueDevice::new(params(1));
        // 4096 B at 1 GB/s = 4096 ns.
        assert_eq!(d.submit(0, &read(4096)).at, 104_096);
        let w = Command::new(Ddir::Write, 0, 4096);
        assert_eq!(d.submit(1_000_000, &w).at, 1_304_096);
    }

    #[test]
    fn commands_beyond_the_servers_wait_for_the_first_free_one() {
        // Three servers, five commands at once: three finish after one
        // service time, the other two after two.
        let mut d = QueueDevice::new(params(3));
        let done: Vec<Ns> = (0..5).map(|_| d.submit(0, &read(0)).at).collect();
        assert_eq!(done, vec![100_000, 100_000, 100_000, 200_000, 200_000]);
    }

    #[test]
    fn by_address_one_address_always_finds_the_same_server() {
        // Eight servers, but every command at one address: they queue on
        // one server as on a single one.
        let mut p = params(8);
        p.dispatch = Dispatch::ByAddress;
        let mut d = QueueDevice::new(p);
        let done: Vec<Ns> = (0..3).map(|_| d.submit(0, &read(0)).at).collect();
        assert_eq!(done, vec![100_000, 200_000, 300_000]);
        // Addresses spread over all servers.
        let mut used = [false; 8];
        for unit in 0..256u64 {
            used[(mix(unit) % 8) as usize] = true;
        }
        assert!(used.iter().all(|&u| u));
    }

    #[test]
    fn variable_service_keeps_its_mean_and_has_the_asked_spread() {
        // One server, commands far apart: each one's time is its service
        // time alone.
        let mut p = params(1);
        p.service_cv = 0.5;
        let mut d = QueueDevice::new(p);
        let n = 20_000u64;
        let times: Vec<f64> = (0..n)
            .map(|i| {
                let at = i * 10_000_000;
                (d.submit(at, &read(0)).at - at) as f64
            })
            .collect();
        let mean = times.iter().sum::<f64>() / n as f64;
        let var = times.iter().map(|t| (t - mean).powi(2)).sum::<f64>() / n as f64;
        assert!((mean - 100_000.0).abs() < 2_000.0, "{mean}");
        assert!(
            (var.sqrt() / mean - 0.5).abs() < 0.02,
            "{}",
            var.sqrt() / mean
        );
        // Never below the fixed part.
        assert!(times.iter().all(|&t| t >= 50_000.0));
    }

    #[test]
    fn the_iops_cap_spaces_admissions() {
        let mut p = params(64);
        p.iops_cap = 1000.0;
        let mut d = QueueDevice::new(p);
        let done: Vec<Ns> = (0..4).map(|_| d.submit(0, &read(0)).at).collect();
        // One command per ms, each then served in 100 us.
        assert_eq!(done, vec![100_000, 1_100_000, 2_100_000, 3_100_000]);
        assert_eq!(d.throttled_ns, 6_000_000);
    }

    #[test]
    fn the_bandwidth_cap_spaces_admissions_by_size() {
        let mut p = params(64);
        p.bandwidth_cap = 1e8; // 100 MB/s: 1 MB every 10 ms.
        let mut d = QueueDevice::new(p);
        let a = d.submit(0, &read(1_000_000)).at;
        let b = d.submit(0, &read(1_000_000)).at;
        assert_eq!(a, 100_000 + 1_000_000);
        assert_eq!(b, 10_000_000 + 100_000 + 1_000_000);
    }

    #[test]
    fn a_log_normal_tail_keeps_the_mean_and_its_log_spread() {
        // One server, commands far apart; the variable part is the whole
        // service time (cv 1), so ln(time) is normal with sd σ and mean
        // ln(mean) − σ²/2: its median is mean · exp(−σ²/2).
        let mut p = params(1);
        p.service_cv = 1.0;
        p.service_tail = 0.8;
        let mut d = QueueDevice::new(p);
        let n = 40_000u64;
        let mut times: Vec<f64> = (0..n)
            .map(|i| {
                let at = i * 100_000_000;
                (d.submit(at, &read(0)).at - at) as f64
            })
            .collect();
        let mean = times.iter().sum::<f64>() / n as f64;
        // sd of the mean: 100 us · sqrt(e^0.64 − 1) / sqrt(n) ~ 0.47 us.
        assert!((mean - 100_000.0).abs() < 2_500.0, "{mean}");
        let logs: Vec<f64> = times.iter().map(|t| t.ln()).collect();
        let lm = logs.iter().sum::<f64>() / n as f64;
        let lsd = (logs.iter().map(|l| (l - lm).powi(2)).sum::<f64>() / n as f64).sqrt();
        assert!((lsd - 0.8).abs() < 0.02, "{lsd}");
        times.sort_by(f64::total_cmp);
        let median = times[times.len() / 2];
        let want = 100_000.0 * (-0.32f64).exp();
        assert!((median / want - 1.0).abs() < 0.03, "{median} vs {want}");
        // p99 is exp(2.326 σ) times the median.
        let p99 = times[times.len() * 99 / 100];
        let ratio = p99 / median;
        assert!(
            (ratio / (2.326f64 * 0.8).exp() - 1.0).abs() < 0.06,
            "{ratio}"
        );
    }

    #[test]
    fn the_write_back_cache_holds_one_write_in_every_cache_full() {
        // 16 KiB cache of 4 KiB writes: every fourth write waits for the
        // write-back; its server does not, nor do reads.
        let mut p = params(1);
        p.writeback_bytes = 16_384;
        p.writeback_flush = 5_000_000;
        let mut d = QueueDevice::new(p);
        let w = Command::new(Ddir::Write, 0, 4096);
        let mut times = vec![];
        for i in 0..8u64 {
            let at = i * 100_000_000;
            times.push(d.submit(at, &w).at - at);
        }
        let base = 300_000 + 4096;
        let long = base + 5_000_000;
        assert_eq!(times, vec![base, base, base, long, base, base, base, long]);
        assert_eq!(d.writebacks, 2);
        // A read queued behind the stalled write waits for its service
        // only, not for the write-back.
        let at = 10_000_000_000;
        for _ in 0..3 {
            d.submit(at, &w);
        }
        let write_done = d.submit(at, &w).at;
        assert_eq!(write_done, at + 4 * base + 5_000_000);
        assert_eq!(d.submit(at, &read(4096)).at, at + 4 * base + 104_096);
    }

    #[test]
    fn turnaround_is_paid_only_when_a_server_changes_direction() {
        let mut p = params(1);
        p.turnaround = 7_000;
        let mut d = QueueDevice::new(p);
        let w = Command::new(Ddir::Write, 0, 0);
        let ops = [read(0), read(0), w, w, read(0), w];
        let mut times = vec![];
        for (i, c) in ops.iter().enumerate() {
            let at = i as u64 * 10_000_000;
            times.push(d.submit(at, c).at - at);
        }
        assert_eq!(
            times,
            vec![100_000, 100_000, 307_000, 300_000, 107_000, 307_000]
        );
        assert_eq!(d.turnarounds, 3);
    }

    #[test]
    fn a_switch_delay_costs_an_idle_server_and_hides_behind_queued_work() {
        let mut p = params(1);
        p.switch_delay = 50_000;
        let mut d = QueueDevice::new(p);
        let w = Command::new(Ddir::Write, 0, 0);
        // Far apart (the server idle each time): a switch waits the full
        // delay before its service, a repeat of the direction does not.
        let ops = [read(0), w, w, read(0), read(0)];
        let mut times = vec![];
        for (i, c) in ops.iter().enumerate() {
            let at = i as u64 * 10_000_000;
            times.push(d.submit(at, c).at - at);
        }
        assert_eq!(times, vec![100_000, 350_000, 300_000, 150_000, 100_000]);
        assert_eq!((d.switch_waits, d.switch_wait_ns), (2, 100_000));
        // All at once: the write after a read switches while the read is
        // served (100 us > 50 us), so nothing is added; the read after it
        // switches during the write's 300 us.
        let at = 1_000_000_000;
        let done: Vec<Ns> = [read(0), w, read(0)]
            .iter()
            .map(|c| d.submit(at, c).at - at)
            .collect();
        assert_eq!(done, vec![100_000, 400_000, 500_000]);
        assert_eq!(d.switch_waits, 2);
        // No server time: the busy time is the services alone.
        assert_eq!(d.busy_ns, 100_000 * 5 + 300_000 * 3);
    }

    #[test]
    fn spread_write_backs_keep_their_mean_and_vary() {
        // Every write fills the 4 KiB cache: each waits one write-back of
        // mean 1 ms, log-normal with σ 1 (log-sd 1 of the excess).
        let mut p = params(1);
        p.writeback_bytes = 4096;
        p.writeback_flush = 1_000_000;
        p.writeback_spread = 1.0;
        let mut d = QueueDevice::new(p);
        let w = Command::new(Ddir::Write, 0, 4096);
        let n = 20_000u64;
        let excess: Vec<f64> = (0..n)
            .map(|i| {
                let at = i * 1_000_000_000;
                (d.submit(at, &w).at - at - 304_096) as f64
            })
            .collect();
        let mean = excess.iter().sum::<f64>() / n as f64;
        // sd of the mean: 1 ms · sqrt(e − 1) / sqrt(n) ~ 9 us.
        assert!((mean - 1e6).abs() < 45_000.0, "{mean}");
        let logs: Vec<f64> = excess.iter().map(|t| t.ln()).collect();
        let lm = logs.iter().sum::<f64>() / n as f64;
        let lsd = (logs.iter().map(|l| (l - lm).powi(2)).sum::<f64>() / n as f64).sqrt();
        assert!((lsd - 1.0).abs() < 0.03, "{lsd}");
    }

    #[test]
    fn reads_first_passes_waiting_writes_up_to_the_starvation_bound() {
        // One server, two writes then four reads waiting at once: with
        // writes_starved 2, two reads pass the oldest write, it is taken,
        // then two more reads pass the other (mq-deadline's rule).
        let mut p = params(1);
        p.policy = Policy::ReadsFirst;
        let mut d = QueueDevice::new(p);
        let w = Command::new(Ddir::Write, 0, 0);
        let arrivals = [
            (0, w),
            (0, w),
            (0, read(0)),
            (0, read(0)),
            (0, read(0)),
            (0, read(0)),
        ];
        let done = drive(&mut d, &arrivals);
        // Order R R W R R W: reads 100 us, writes 300 us.
        assert_eq!(
            done,
            vec![500_000, 1_000_000, 100_000, 200_000, 600_000, 700_000]
        );
        assert_eq!(d.reads_passed, 4);
        // Bound 0: a waiting write is always taken first.
        let mut p = params(1);
        p.policy = Policy::ReadsFirst;
        p.writes_starved = 0;
        let mut d = QueueDevice::new(p);
        let done = drive(&mut d, &arrivals);
        assert_eq!(
            done,
            vec![300_000, 600_000, 700_000, 800_000, 900_000, 1_000_000]
        );
    }

    #[test]
    fn a_read_arriving_later_passes_a_queued_write() {
        // Two servers by address would split them; one shared server:
        // a write is served, a second write waits, a read arriving later
        // starts before it.
        let mut p = params(1);
        p.policy = Policy::ReadsFirst;
        let mut d = QueueDevice::new(p);
        let w = Command::new(Ddir::Write, 0, 0);
        let done = drive(&mut d, &[(0, w), (1_000, w), (50_000, read(0))]);
        assert_eq!(done, vec![300_000, 700_000, 400_000]);
    }

    #[test]
    fn a_shared_queue_gives_a_passed_write_the_first_free_server() {
        // Two servers before one shared queue, reads first: a write waits
        // while two reads pass it, then the first server to come free
        // takes it, whichever it is (no server's own queue holds it).
        let mut p = params(2);
        p.policy = Policy::ReadsFirst;
        let mut d = QueueDevice::new(p);
        let w = Command::new(Ddir::Write, 0, 0);
        let done = drive(
            &mut d,
            &[
                (0, w),
                (0, read(0)),
                (1, w),
                (2, read(0)),
                (2, read(0)),
                (2, read(0)),
            ],
        );
        // At 0 the first read passes the first write (both wait; one
        // server each). Then server 1 (free at 100 us) serves two reads
        // passing the second write (100-200, 200-300). At 300 us both
        // are free: the write (starved) takes server 0, the last read
        // server 1.
        assert_eq!(
            done,
            vec![300_000, 100_000, 600_000, 200_000, 300_000, 400_000]
        );
        assert_eq!(d.reads_passed, 3);
        // Three servers, two of them held by long writes: the waiting
        // write goes to the one server that keeps coming free.
        let mut p = params(3);
        p.policy = Policy::ReadsFirst;
        p.writes_starved = 1;
        let mut d = QueueDevice::new(p);
        let done = drive(
            &mut d,
            &[
                (0, w),
                (0, w),
                (0, read(0)),
                (1, w),
                (2, read(0)),
                (3, read(0)),
            ],
        );
        // At 0 the read passes the first two writes (bound 1 reached),
        // which then take the other two servers until 300 us. The read's
        // server, free at 100 us, serves one more read past the third
        // write (100-200), then that write (200-500), though a read
        // waits: the bound, not the server, decides. The last read
        // takes a write's server at 300.
        assert_eq!(
            done,
            vec![300_000, 300_000, 100_000, 500_000, 200_000, 400_000]
        );
    }

    #[test]
    fn the_queue_in_arrival_order_is_the_arrival_time_model() {
        // The queued path with FIFO picks gives every command the
        // completion `submit` fixes on arrival, on either dispatch, with
        // the throttle, a turnaround and a switch delay (fixed service
        // times, so the random draws do not depend on the order).
        for dispatch in [Dispatch::Shared, Dispatch::ByAddress] {
            let mut p = params(3);
            p.dispatch = dispatch;
            p.iops_cap = 20_000.0;
            p.turnaround = 7_000;
            p.switch_delay = 20_000;
            let mut rng = RngStream::new(7, "test.arrivals");
            let mut at = 0;
            let arrivals: Vec<(Ns, Command)> = (0..400)
                .map(|_| {
                    at += rng.exponential(60_000.0) as Ns;
                    let ddir = if rng.exponential(1.0) < 0.7 {
                        Ddir::Read
                    } else {
                        Ddir::Write
                    };
                    let unit = rng.exponential(1000.0) as u64;
                    (at, Command::new(ddir, unit * UNIT, 4096))
                })
                .collect();
            let mut a = QueueDevice::new(p.clone());
            let want: Vec<Ns> = arrivals.iter().map(|(t, c)| a.submit(*t, c).at).collect();
            let mut b = QueueDevice::new(p);
            assert_eq!(drive(&mut b, &arrivals), want, "{dispatch:?}");
            assert_eq!((a.busy_ns, a.turnarounds), (b.busy_ns, b.turnarounds));
        }
    }
}
