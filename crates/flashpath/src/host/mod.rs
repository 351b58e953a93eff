//! The host: CPU cores that run the kernel's I/O path (costs scaled by core
//! frequency), the threads (fio jobs) on them, and idle states.
//!
//! * [`config`]: the host a profile describes (`host.*`): CPUs, idle
//!   configuration, wake-up placement.
//! * [`cpu`]: cores as serial servers of kernel and application work.
//! * [`cpufreq`]: the v4.4 x86 frequency governors (intel_pstate's PID on
//!   APERF/MPERF, acpi-cpufreq with ondemand) that set each core's clock.
//! * [`idle`]: C-state tables (`drivers/idle/intel_idle.c`, the POLL state of
//!   `drivers/cpuidle/poll_state.c`), the menu idle governor
//!   (`drivers/cpuidle/governors/menu.c`, v4.4 and a recent text), C-state
//!   residency counters and the C1 -> C1E hardware auto-promotion switch.
//! * [`sched`]: where CFS puts a thread it wakes (`select_task_rq_fair`).
//! * [`task`]: the threads as the scheduler keeps them on the cores: waking
//!   a core, idle entry, wake-up placement, a poller's hold on its core.
//! * [`pm_qos`]: CPU latency and device frequency PM QoS requests.
//! * [`syscall`]: a task's system calls as fio makes them: its user-space
//!   work, the kernel's entry and exit, and the work in between.

pub mod config;
pub mod cpu;
pub mod cpufreq;
pub mod idle;
pub mod pm_qos;
pub mod sched;
pub mod syscall;
pub mod task;
