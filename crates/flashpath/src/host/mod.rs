//! The host CPU: what the kernel's CPU does between and around I/Os.
//!
//! * [`idle`]: C-state tables (`drivers/idle/intel_idle.c`, the POLL state of
//!   `drivers/cpuidle/poll_state.c`), the menu idle governor
//!   (`drivers/cpuidle/governors/menu.c`, v4.4 and a recent text), C-state
//!   residency counters and the C1 -> C1E hardware auto-promotion switch.
//!
//! The CPU model that drives these (run queue, frequency, syscall costs,
//! idle entry/exit) lives in `host::cpu`.

pub mod idle;
