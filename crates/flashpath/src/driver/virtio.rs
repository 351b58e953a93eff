//! virtio-blk (drivers/block/virtio_blk.c) in a KVM guest, with the host's
//! QEMU device model behind it.
//!
//! Guest side: `virtio_queue_rq` puts the request's descriptors on the
//! virtqueue (descriptor ring of `queue_size` entries, which is also the
//! blk-mq queue depth: one request per indirect descriptor) and kicks the
//! device (`virtqueue_notify`: an MMIO/PIO write that traps, a VM exit,
//! paid on the submitting vCPU). Host side: one I/O thread pops requests in
//! ring order and serves each from RAM in `host_fixed + bytes / host_rate`,
//! one at a time. It then pushes the used-ring entry and injects the
//! completion interrupt, which reaches the guest `irq_inject` later; the
//! guest's `virtblk_done` runs as the driver's interrupt handler.
//!
//! Where the I/O thread runs (`device.host_spare_cpus`,
//! `device.iothread_cpu`): vCPUs and QEMU's threads are threads of the
//! host, which has one physical CPU per vCPU plus `host_spare_cpus`. With
//! a spare one the back end has it to itself (the model above). With none,
//! it shares the physical CPU of one vCPU: while it serves a request that
//! vCPU cannot run (the guest sees steal time, kernel/sched/cputime.c),
//! and it starts a request only once the guest work already booked on
//! that vCPU is done, so the two are one serial server. Which vCPU:
//! `iothread_cpu = "vcpuN"` pins it (libvirt `<iothreadpin>` /
//! `<emulatorpin>` on a shared cpuset); `"any"` is the host scheduler's
//! choice when the thread wakes (it runs on while it has requests): its
//! previous CPU if idle, else the first idle one after it, else its
//! previous CPU (`select_task_rq_fair` -> `select_idle_sibling` ->
//! `select_idle_cpu`'s `for_each_cpu_wrap(cpu, cpus, target + 1)`,
//! kernel/sched/fair.c on the host), where a physical CPU is idle when its
//! vCPU has halted (nothing to run). A host with fewer physical CPUs than
//! vCPUs (vCPUs time-sliced among themselves) is not simulated.

use super::{BlkStatus, DiskInfo, Driver, DriverCpuCosts, DriverCtx, DriverRq};
use crate::device::ram::RamDevice;
use crate::device::{BadBlocks, BlockBackend, CapacityParams};
use crate::error::Result;
use crate::profile::limits::{COST, QUEUES, RATE};
use crate::profile::{range, Profile};
use crate::sim::Ns;

/// Physical CPUs beyond one per vCPU.
const SPARE_CPUS: crate::profile::Range = range(
    0.0,
    8192.0,
    "physical CPUs of the host beyond one per vCPU: none to NR_CPUS = 8192 (arch/x86/Kconfig, MAXSMP)",
);

/// Where the back end's I/O thread runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IoThreadCpu {
    /// A physical CPU no vCPU uses.
    Own,
    /// The physical CPU of this vCPU, always.
    Pinned(u32),
    /// The host scheduler's choice at each wake-up.
    Any,
}

pub struct VirtioBlk {
    name: String,
    queue_size: u32,
    num_queues: u32,
    /// The host's I/O thread over the RAM image: one request at a time,
    /// `host_fixed + bytes / host_rate` each.
    host: RamDevice,
    irq_inject: Ns,
    cpu: DriverCpuCosts,
    iothread: IoThreadCpu,
    /// On a shared physical CPU the I/O thread preempts the vCPU when it
    /// wakes (`device.iothread_wakeup = "preempts"`) or waits for the
    /// vCPU's booked work (`"waits"`).
    iothread_preempts: bool,
    /// The vCPU whose physical CPU the I/O thread last ran on (shared).
    on_vcpu: u32,
    kicks: u64,
    completed: u64,
    /// Time the I/O thread ran on each vCPU's physical CPU.
    shared_ns: Vec<u64>,
    /// Time requests waited for the vCPU to be done before the I/O thread
    /// could start them.
    vcpu_wait_ns: u64,
    /// Wake-ups of the I/O thread that moved it to another vCPU's CPU.
    moves: u64,
    /// `device.badblocks`: sectors the host's image fails (QEMU answers
    /// VIRTIO_BLK_S_IOERR, which virtblk_result maps to BLK_STS_IOERR).
    badblocks: BadBlocks,
}

crate::choice_enum! {
    /// `device.iothread_wakeup`: on a shared physical CPU, the I/O thread
    /// preempts the vCPU when it wakes, or waits for the vCPU's booked
    /// work.
    pub enum IoThreadWakeup {
        Preempts = "preempts",
        Waits = "waits",
    }
}

crate::params! {
    /// virtio-blk's virtqueues and QEMU's back end over a RAM image.
    pub struct VirtioParams {
        /// Entries of each virtqueue.
        queue_size: u32 = required count_u32(
            "device.queue_size",
            range(
                1.0,
                32768.0,
                "a virtqueue's size: at most 32768 entries (virtio 1.x, split virtqueues)",
            )
        ),
        /// Virtqueues (num-queues of QEMU's virtio-blk device).
        num_queues: u32 = required count_u32("device.num_queues", QUEUES),
        /// The host I/O thread's rate over the image.
        host_rate: f64 = required rate("device.host_rate", RATE),
        /// The host I/O thread's fixed time per request.
        host_fixed: Ns = required ns("device.host_fixed", COST),
        /// The kick's VM exit, which stalls the submitting vCPU: part of
        /// queue_rq.
        kick_vmexit: Ns = required ns("driver.kick_vmexit", COST),
        /// Injecting the completion interrupt into the guest.
        irq_inject: Ns = required ns("device.irq_inject", COST),
    }
}

crate::params! {
    /// Where QEMU's I/O thread runs: both keys or neither (then it has a
    /// CPU of its own).
    pub struct IoThreadParams {
        /// Physical CPUs of the host beyond one per vCPU: with any, the I/O
        /// thread has one of its own.
        host_spare_cpus: u32 = required count_u32("device.host_spare_cpus", SPARE_CPUS),
        /// The vCPU whose physical CPU the I/O thread shares, `vcpuN` (N
        /// below host.cpus) or `any`.
        iothread_cpu: String = required text("device.iothread_cpu"),
        /// What the I/O thread does on a shared CPU when it wakes.
        iothread_wakeup: IoThreadWakeup =
            required choice("device.iothread_wakeup", IoThreadWakeup),
    }
}

impl VirtioBlk {
    /// `vcpus`: the guest's CPUs (host.cpus).
    pub fn from_profile(p: &Profile, vcpus: u32) -> Result<VirtioBlk> {
        let vp = VirtioParams::read(p)?;
        let mut cpu = DriverCpuCosts::from_profile(p, false)?;
        // The kick's VM exit stalls the submitting vCPU: part of queue_rq.
        cpu.submit += vp.kick_vmexit;
        let (iothread, iothread_preempts) = Self::iothread_cpu(p, vcpus)?;
        Ok(VirtioBlk {
            name: "vda".into(),
            queue_size: vp.queue_size,
            num_queues: vp.num_queues,
            host: RamDevice::serial(
                CapacityParams::read(p)?.capacity,
                vp.host_fixed,
                vp.host_rate,
            ),
            irq_inject: vp.irq_inject,
            cpu,
            iothread,
            iothread_preempts,
            on_vcpu: match iothread {
                IoThreadCpu::Pinned(v) => v,
                _ => 0,
            },
            kicks: 0,
            completed: 0,
            shared_ns: vec![0; vcpus as usize],
            vcpu_wait_ns: 0,
            moves: 0,
            badblocks: BadBlocks::from_profile(p)?,
        })
    }

    /// `device.host_spare_cpus` and `device.iothread_cpu` (a vCPU below
    /// `vcpus`); both absent: the I/O thread has a CPU of its own. With
    /// them, whether it preempts the vCPU it shares.
    fn iothread_cpu(p: &Profile, vcpus: u32) -> Result<(IoThreadCpu, bool)> {
        const SPARE: &str = "device.host_spare_cpus";
        const PLACE: &str = "device.iothread_cpu";
        let (has_spare, has_place) = (p.has(SPARE), p.has(PLACE));
        if !has_spare && !has_place {
            return Ok((IoThreadCpu::Own, false));
        }
        if has_spare != has_place {
            let (set, missing) = if has_spare {
                (SPARE, PLACE)
            } else {
                (PLACE, SPARE)
            };
            return Err(crate::error::InputError::new(
                p.file_of(set),
                None,
                format!(
                    "parameter '{set}' needs '{missing}' too: where QEMU's I/O thread runs \
                     depends on both"
                ),
            ));
        }
        let it = IoThreadParams::read(p)?;
        let (spare, place) = (it.host_spare_cpus, it.iothread_cpu);
        let placed = if place == "any" {
            IoThreadCpu::Any
        } else {
            let n = place
                .strip_prefix("vcpu")
                .filter(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
                .and_then(|d| d.parse::<u32>().ok())
                .filter(|&n| n < vcpus)
                .ok_or_else(|| {
                    crate::error::InputError::new(
                        p.file_of(PLACE),
                        None,
                        format!(
                            "parameter '{PLACE}' is '{}' but the model needs 'any' or 'vcpuN' \
                             with N below host.cpus = {vcpus}",
                            place.chars().take(40).collect::<String>()
                        ),
                    )
                })?;
            IoThreadCpu::Pinned(n)
        };
        let cpu = if spare > 0 { IoThreadCpu::Own } else { placed };
        Ok((cpu, it.iothread_wakeup == IoThreadWakeup::Preempts))
    }

    /// The vCPU whose physical CPU the I/O thread runs a request on that
    /// arrives at `now` (a wake-up when the thread is idle).
    fn place<E>(&mut self, now: Ns, ctx: &DriverCtx<'_, E>) -> Option<u32> {
        let n = ctx.ncpus();
        match self.iothread {
            IoThreadCpu::Own => None,
            _ if n == 0 => None,
            IoThreadCpu::Pinned(v) => Some(v),
            IoThreadCpu::Any => {
                if self.host.idle_at(now) {
                    let prev = self.on_vcpu;
                    if !ctx.core_idle(prev, now) {
                        // select_idle_cpu: the first idle CPU after the
                        // target, wrapping; none idle: stay.
                        if let Some(c) = (1..n)
                            .map(|i| (prev + i) % n)
                            .find(|&c| ctx.core_idle(c, now))
                        {
                            self.on_vcpu = c;
                            self.moves += 1;
                        }
                    }
                }
                Some(self.on_vcpu)
            }
        }
    }
}

impl<E> Driver<E> for VirtioBlk {
    fn info(&self) -> DiskInfo {
        DiskInfo {
            hw_queues: self.num_queues,
            ..DiskInfo::single_queue(&self.name, self.host.capacity(), self.queue_size, self.cpu)
        }
    }
    fn queue_rq(&mut self, rq: DriverRq, ctx: &mut DriverCtx<'_, E>) {
        self.kicks += 1;
        let now = ctx.now();
        let cmd = rq.command();
        let served = match self.place(now, ctx) {
            None => self.host.submit(now, &cmd),
            Some(v) if self.iothread_preempts => {
                // The host scheduler's wake-up preemption (EEVDF,
                // kernel/sched/fair.c check_preempt_wakeup_fair: a woken
                // task with an earlier deadline preempts the running one):
                // the thread starts when its earlier requests are done and
                // the vCPU, and whatever it holds, waits meanwhile.
                let start = now.max(self.host.free_at());
                let served = self.host.submit(now, &cmd);
                self.shared_ns[v as usize] += served.at - start;
                ctx.steal_core(v, start, served.at);
                served
            }
            Some(v) => {
                // One physical CPU: the request starts once the vCPU's
                // booked work and the thread's earlier requests are done.
                let ready = ctx.core_free_at(v, now);
                let start = ready.max(self.host.free_at());
                self.vcpu_wait_ns += start - now.max(self.host.free_at());
                let served = self.host.submit(ready, &cmd);
                self.shared_ns[v as usize] += served.at - start;
                ctx.occupy_core(v, served.at);
                served
            }
        };
        self.completed += 1;
        let served = self.badblocks.outcome(&cmd, served);
        ctx.complete(
            served.at + self.irq_inject,
            rq.tag,
            BlkStatus::from_device(served.status),
        );
    }
    fn counters(&self) -> serde_json::Value {
        serde_json::json!({
            "kind": "virtio-blk",
            "kicks": self.kicks,
            "completed": self.completed,
            "host_busy_ns": self.host.busy_ns,
            "iothread_cpu": match self.iothread {
                IoThreadCpu::Own => "own".to_string(),
                IoThreadCpu::Pinned(v) => format!("vcpu{v}"),
                IoThreadCpu::Any => "any".to_string(),
            },
            "iothread_on_vcpu_ns": self.shared_ns,
            "iothread_vcpu_wait_ns": self.vcpu_wait_ns,
            "iothread_moves": self.moves,
        })
    }
}
