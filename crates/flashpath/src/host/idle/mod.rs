//! CPU idle: C-states, the menu governor, residency counters.
//!
//! A core with nothing to run asks the cpuidle governor for a state
//! ([`menu::MenuGovernor::select`]), stays in it until a wake-up (timer,
//! interrupt, IPI), pays the state's exit latency, and tells the governor
//! how long it was idle ([`menu::MenuGovernor::reflect`]). The exit latency
//! paid on an interrupt-driven I/O completion is what polling saves
//! (SEEDS.md section 3, KERNEL-NOTES section 3(e)).
//!
//! Time in this module's API is integer nanoseconds like the rest of
//! flashpath; the governors compute in microseconds internally because the
//! kernel texts they mirror do (`ktime_to_us()`, truncating).

pub mod core;
pub mod cstates;
pub mod menu;
pub mod qcom_lpm;

pub use self::core::{CoreIdle, IdleConfig};

pub use cstates::IntelIdleTable;
pub use menu::{MenuGovernor, MenuVariant, SelectInput};
pub use qcom_lpm::QcomLpmGovernor;

use crate::sim::Ns;

/// `CPUIDLE_STATE_MAX` in `include/linux/cpuidle.h`: a driver registers at
/// most this many states.
pub const CPUIDLE_STATE_MAX: usize = 10;

/// One idle state as a cpuidle driver registers it (`struct cpuidle_state`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CState {
    /// `name`, as shown in `/sys/devices/system/cpu/cpuN/cpuidle/stateM/name`.
    pub name: String,
    /// `exit_latency`: worst-case time from the wake-up event to running
    /// code again.
    pub exit_latency_ns: Ns,
    /// `target_residency`: minimum stay for the state to save energy; the
    /// governor does not pick it for a shorter predicted idle period.
    pub target_residency_ns: Ns,
    /// Not selectable: `CPUIDLE_FLAG_UNUSABLE` in the driver, or
    /// `stateM/disable` written by the user. The governor skips it.
    pub disabled: bool,
    /// `CPUIDLE_FLAG_POLLING`: the CPU spins in C0 (`poll_idle()` in
    /// `drivers/cpuidle/poll_state.c`), so there is no exit latency.
    pub polling: bool,
    /// What a wake-up from the state costs the CPU. Equal to
    /// `exit_latency_ns` for the tables that give one number; for a device
    /// tree state it is the DT `exit-latency-us` alone, while the governor
    /// sees `exit_latency_ns` = entry + exit as `dt_idle_states.c`
    /// registers it (see [`CState::psci`]).
    pub wake_latency_ns: Ns,
    /// Time the state's own entry takes once the idle path has chosen it
    /// (for a device-tree state, `entry-latency-us`: saving context and
    /// cleaning caches before the power-down WFI). An interrupt that
    /// arrives before the state is reached waits for the entry to finish
    /// (it runs with interrupts masked) and then pays no exit latency: the
    /// wait-for-interrupt instruction falls through at once on a pending
    /// interrupt. 0 where the driver table gives no entry time (intel_idle
    /// tables, WFI, POLL).
    pub entry_ns: Ns,
    /// The state cuts the core's power (a device-tree power-collapse
    /// state): once in it, the core is asleep to the interrupt controller
    /// (GICR_WAKER.ProcessorSleep), which a 1-of-N interrupt avoids.
    pub power_down: bool,
}

impl CState {
    /// A hardware state with latencies in microseconds, as the driver tables
    /// write them.
    pub fn from_us(name: &str, exit_latency_us: u64, target_residency_us: u64) -> Self {
        CState {
            name: name.to_string(),
            exit_latency_ns: exit_latency_us * 1_000,
            target_residency_ns: target_residency_us * 1_000,
            disabled: false,
            polling: false,
            wake_latency_ns: exit_latency_us * 1_000,
            entry_ns: 0,
            power_down: false,
        }
    }

    /// State 0 of the ARM cpuidle drivers (`cpuidle-psci.c`,
    /// `cpuidle-arm.c`): architectural WFI, `exit_latency = 1`,
    /// `target_residency = 1` (us).
    pub fn arm_wfi() -> Self {
        CState::from_us("WFI", 1, 1)
    }

    /// A device-tree `arm,idle-state` as `init_state_node()` in
    /// `drivers/cpuidle/dt_idle_states.c` registers it when the node has no
    /// `wakeup-latency-us`: "default to entry+exit latencies as defined in
    /// idle states bindings", so the governor compares entry + exit with
    /// latency limits, and `min-residency-us` is the target residency. A
    /// wake-up after the state was reached costs `exit-latency-us`, the
    /// binding's "worst case latency ... required to exit the idle state"
    /// (`Documentation/devicetree/bindings/cpu/idle-states.yaml`).
    pub fn psci(name: &str, entry_us: u64, exit_us: u64, min_residency_us: u64) -> Self {
        CState {
            name: name.to_string(),
            exit_latency_ns: (entry_us + exit_us) * 1_000,
            target_residency_ns: min_residency_us * 1_000,
            disabled: false,
            polling: false,
            wake_latency_ns: exit_us * 1_000,
            entry_ns: entry_us * 1_000,
            power_down: true,
        }
    }

    /// The POLL state of `cpuidle_poll_state_init()`
    /// (`drivers/cpuidle/poll_state.c`): exit latency 0, target residency 0,
    /// `CPUIDLE_FLAG_POLLING`. On x86 it is state 0 of every driver.
    pub fn poll() -> Self {
        CState {
            name: "POLL".to_string(),
            exit_latency_ns: 0,
            target_residency_ns: 0,
            disabled: false,
            polling: true,
            wake_latency_ns: 0,
            entry_ns: 0,
            power_down: false,
        }
    }
}

/// A cpuidle driver's state table, shallowest first (index = the
/// `stateM` number in sysfs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CStateTable {
    /// Where the table comes from (e.g. `intel_idle:skl`, or a profile name).
    pub name: String,
    pub states: Vec<CState>,
}

impl CStateTable {
    pub fn new(name: &str, states: Vec<CState>) -> Self {
        CStateTable {
            name: name.to_string(),
            states,
        }
    }

    pub fn as_slice(&self) -> &[CState] {
        &self.states
    }

    pub fn len(&self) -> usize {
        self.states.len()
    }

    pub fn is_empty(&self) -> bool {
        self.states.is_empty()
    }

    /// Index of the state with this name (exact match), if any.
    pub fn find(&self, name: &str) -> Option<usize> {
        find_state(&self.states, name)
    }

    /// What the cpuidle core would refuse to register, in one sentence.
    /// Only structural rules are checked: the kernel does not require
    /// latencies to grow with depth (and some real tables do not).
    pub fn validate(&self) -> Result<(), String> {
        if self.states.is_empty() {
            return Err(format!("C-state table '{}' has no states", self.name));
        }
        if self.states.len() > CPUIDLE_STATE_MAX {
            return Err(format!(
                "C-state table '{}' has {} states; cpuidle allows at most {} (CPUIDLE_STATE_MAX)",
                self.name,
                self.states.len(),
                CPUIDLE_STATE_MAX
            ));
        }
        if let Some((i, s)) = self
            .states
            .iter()
            .enumerate()
            .skip(1)
            .find(|(_, s)| s.polling)
        {
            return Err(format!(
                "C-state table '{}': state {} ('{}') is polling; only state 0 may be (cpuidle_poll_state_init)",
                self.name, i, s.name
            ));
        }
        Ok(())
    }
}

fn find_state(states: &[CState], name: &str) -> Option<usize> {
    states.iter().position(|s| s.name == name)
}

/// Exit latency the CPU actually pays after idling in `states[chosen]`
/// (its `wake_latency_ns`).
///
/// With `c1e_auto_promotion` on, a request for C1 is promoted by the
/// hardware to C1E (bit 1 of `MSR_IA32_POWER_CTL`, which `intel_idle`
/// leaves as the BIOS set it by default: `C1E_PROMOTION_PRESERVE` in
/// `drivers/idle/intel_idle.c`; on Alder Lake the driver marks C1
/// `CPUIDLE_FLAG_UNUSABLE` for exactly this reason), so the wake-up costs
/// C1E's exit latency. Whether the 2015 polling test machine had promotion
/// on is not in any source (KERNEL-NOTES 3(e) caveat), hence a switch, off
/// by default. Without a state named "C1E" in the table, or when the chosen
/// state is not "C1", the chosen state's own exit latency is returned.
pub fn effective_exit_latency_ns(states: &[CState], chosen: usize, c1e_auto_promotion: bool) -> Ns {
    let s = &states[chosen];
    if c1e_auto_promotion && s.name == "C1" {
        if let Some(c1e) = find_state(states, "C1E") {
            return states[c1e].wake_latency_ns;
        }
    }
    s.wake_latency_ns
}

/// Per-state residency counters, the simulated
/// `/sys/devices/system/cpu/cpuN/cpuidle/stateM/{usage,time,above,below}`.
/// Sized once; recording allocates nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdleStats {
    usage: Vec<u64>,
    time_ns: Vec<Ns>,
    above: Vec<u64>,
    below: Vec<u64>,
}

impl IdleStats {
    pub fn new(nr_states: usize) -> Self {
        IdleStats {
            usage: vec![0; nr_states],
            time_ns: vec![0; nr_states],
            above: vec![0; nr_states],
            below: vec![0; nr_states],
        }
    }

    /// Count one stay of `residency_ns` (entry to exit, exit latency
    /// included, as `cpuidle_enter_state()` measures it) in `states[idx]`.
    ///
    /// `above`/`below` follow `cpuidle_enter_state()` in
    /// `drivers/cpuidle/cpuidle.c`: *above* when the stay was shorter than
    /// the state's target residency and an enabled shallower state exists
    /// (the governor went too deep); *below* when the stay minus the exit
    /// latency reached the target residency of the next enabled deeper
    /// state (it could have gone deeper).
    pub fn record(&mut self, states: &[CState], idx: usize, residency_ns: Ns) {
        self.usage[idx] += 1;
        self.time_ns[idx] += residency_ns;
        let s = &states[idx];
        if residency_ns < s.target_residency_ns {
            if states[..idx].iter().any(|t| !t.disabled) {
                self.above[idx] += 1;
            }
        } else if residency_ns > s.exit_latency_ns {
            if let Some(deeper) = states[idx + 1..].iter().find(|t| !t.disabled) {
                if residency_ns - s.exit_latency_ns >= deeper.target_residency_ns {
                    self.below[idx] += 1;
                }
            }
        }
    }

    pub fn nr_states(&self) -> usize {
        self.usage.len()
    }
    /// Entries into state `idx` (`stateM/usage`).
    pub fn usage(&self, idx: usize) -> u64 {
        self.usage[idx]
    }
    /// Time spent in state `idx` (`stateM/time`, here in ns).
    pub fn time_ns(&self, idx: usize) -> Ns {
        self.time_ns[idx]
    }
    /// Stays shorter than the state's target residency (`stateM/above`).
    pub fn above(&self, idx: usize) -> u64 {
        self.above[idx]
    }
    /// Stays long enough for a deeper state (`stateM/below`).
    pub fn below(&self, idx: usize) -> u64 {
        self.below[idx]
    }
    /// Idle time over all states.
    pub fn total_time_ns(&self) -> Ns {
        self.time_ns.iter().sum()
    }
    /// Fraction of the idle time spent in state `idx` (0 when never idle).
    pub fn time_share(&self, idx: usize) -> f64 {
        let total = self.total_time_ns();
        if total == 0 {
            0.0
        } else {
            self.time_ns[idx] as f64 / total as f64
        }
    }
    /// Zero every counter (e.g. at the end of a ramp period).
    pub fn reset(&mut self) {
        for v in self
            .usage
            .iter_mut()
            .chain(self.time_ns.iter_mut())
            .chain(self.above.iter_mut())
            .chain(self.below.iter_mut())
        {
            *v = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skl() -> CStateTable {
        IntelIdleTable::Skl.table()
    }

    #[test]
    fn c1e_promotion_off_pays_c1() {
        let t = skl();
        let c1 = t.find("C1").unwrap();
        assert_eq!(effective_exit_latency_ns(&t.states, c1, false), 2_000);
    }

    #[test]
    fn c1e_promotion_on_pays_c1e() {
        // skl: C1 exit 2 us, C1E exit 10 us (intel_idle.c skl_cstates).
        let t = skl();
        let c1 = t.find("C1").unwrap();
        assert_eq!(effective_exit_latency_ns(&t.states, c1, true), 10_000);
        // Other states are not promoted.
        let c6 = t.find("C6").unwrap();
        assert_eq!(effective_exit_latency_ns(&t.states, c6, true), 85_000);
        let poll = 0;
        assert_eq!(effective_exit_latency_ns(&t.states, poll, true), 0);
    }

    #[test]
    fn c1e_promotion_without_c1e_in_table() {
        let states = vec![
            CState::poll(),
            CState::from_us("C1", 2, 2),
            CState::from_us("C6", 133, 600),
        ];
        assert_eq!(effective_exit_latency_ns(&states, 1, true), 2_000);
    }

    #[test]
    fn stats_count_time_above_below() {
        // POLL 0/0, C1 2/2, C1E 10/20, C6 133/600 (us)
        let states = vec![
            CState::poll(),
            CState::from_us("C1", 2, 2),
            CState::from_us("C1E", 10, 20),
            CState::from_us("C6", 133, 600),
        ];
        let mut st = IdleStats::new(states.len());
        // 15 us in C1E: < 20 us target residency, shallower enabled -> above.
        st.record(&states, 2, 15_000);
        // 700 us in C1E: 700-10 = 690 >= 600 (C6 residency) -> below.
        st.record(&states, 2, 700_000);
        // 100 us in C1E: 90 < 600 -> neither.
        st.record(&states, 2, 100_000);
        // 1 us in POLL: < 0? no; deeper C1 needs 2 us: 1-0 < 2 -> neither.
        st.record(&states, 0, 1_000);
        assert_eq!(st.usage(2), 3);
        assert_eq!(st.time_ns(2), 815_000);
        assert_eq!(st.above(2), 1);
        assert_eq!(st.below(2), 1);
        assert_eq!(st.usage(0), 1);
        assert_eq!(st.above(0), 0);
        assert_eq!(st.below(0), 0);
        assert_eq!(st.total_time_ns(), 816_000);
        st.reset();
        assert_eq!(st.total_time_ns(), 0);
        assert_eq!(st.usage(2), 0);
    }

    #[test]
    fn psci_state_as_dt_idle_states_registers_it() {
        // sm8650.dtsi silver-rail-power-collapse: entry 550, exit 750,
        // min-residency 6700 us.
        let s = CState::psci("silver-rail-power-collapse", 550, 750, 6700);
        assert_eq!(s.exit_latency_ns, 1_300_000, "entry + exit");
        assert_eq!(s.target_residency_ns, 6_700_000);
        assert_eq!(s.wake_latency_ns, 750_000);
        let states = vec![CState::arm_wfi(), s];
        assert_eq!(effective_exit_latency_ns(&states, 1, false), 750_000);
        assert_eq!(effective_exit_latency_ns(&states, 0, false), 1_000);
        assert!(CStateTable::new("psci", states).validate().is_ok());
    }

    #[test]
    fn validate_rules() {
        assert!(skl().validate().is_ok());
        let bad = CStateTable::new("x", vec![CState::from_us("C1", 1, 1), CState::poll()]);
        assert!(bad.validate().unwrap_err().contains("only state 0"));
        assert!(CStateTable::new("e", vec![]).validate().is_err());
        let many = CStateTable::new(
            "m",
            (0..11)
                .map(|i| CState::from_us(&format!("C{i}"), i, i))
                .collect(),
        );
        assert!(many.validate().unwrap_err().contains("CPUIDLE_STATE_MAX"));
    }
}
