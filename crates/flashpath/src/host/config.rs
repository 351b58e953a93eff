//! The host as a profile describes it (`host.*`): its CPUs and where
//! interrupts land, the cpuidle driver and governor, and where a woken
//! thread runs. Each part's `from_profile` reads its keys and checks them
//! against the kernel's own limits; `model::build_model` calls them.

use crate::error::{InputError, Result};
use crate::host::cpu::Cpu;
use crate::host::idle::{CState, CStateTable, IdleConfig, IntelIdleTable, MenuVariant};
use crate::host::sched::WakePlacement;
use crate::profile::{range, Choice, Profile, Range};
use crate::types::IrqCpu;

/// Host facts the job-file parser needs for `$ncpus` and friends.
pub struct HostFacts {
    pub ncpus: u32,
    pub mb_memory: u64,
}

/// `host.cpus`: every CPU gets its state, and the kernel's own limit is
/// NR_CPUS.
pub const HOST_CPUS: Range = range(
    1.0,
    8192.0,
    "CPUs of the host: at least one runs the job, at most NR_CPUS = 8192 \
     (arch/x86/Kconfig, MAXSMP)",
);
/// `host.memory`: what `$mb_memory` says and what the page cache may use.
pub const HOST_MEMORY: Range = range(
    (16u64 << 20) as f64,
    (64u64 << 40) as f64,
    "the host's memory: from 16 MiB to the 64 TiB that x86-64's 4-level paging maps \
     (Documentation/arch/x86/x86_64/mm.rst)",
);

pub fn host_facts(profile: &Profile) -> Result<HostFacts> {
    let host = HostParams::read(profile)?;
    Ok(HostFacts {
        ncpus: host.cpus,
        mb_memory: host.memory >> 20,
    })
}

/// `host.freq`, `host.reference_freq`: a cost given at the reference
/// clock takes reference / freq times as long.
const CPU_FREQ: Range = range(
    1e6,
    1e10,
    "a CPU clock from 1 MHz to 10 GHz: costs are scaled by the reference clock over it",
);

/// A CPU mask (bit c = CPU c, as a device tree or
/// `/proc/irq/N/smp_affinity` writes it) of at most 64 CPUs.
const CPU_MASK: Range = range(
    1.0,
    u64::MAX as f64,
    "a CPU mask of at most 64 CPUs, not empty (bit c = CPU c)",
);

/// `host.irq_cpu` as a profile names it: the submitter's CPU, 1-of-N
/// routing, or `cpuN`; `HostCpus::from_profile` checks N against
/// `host.cpus`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IrqCpuName {
    Submitter,
    OneOfN,
    Cpu(u32),
}

impl Choice for IrqCpuName {
    const NAMES: &'static [&'static str] = &["submitter", "one-of-n", "cpuN"];
    fn from_name(name: &str) -> Option<Self> {
        match name {
            "submitter" => Some(IrqCpuName::Submitter),
            "one-of-n" => Some(IrqCpuName::OneOfN),
            _ => cpu_index(name).map(IrqCpuName::Cpu),
        }
    }
}

/// N of a `cpuN` name (digits only: `parse` would also take "+1"); the
/// caller checks N against `host.cpus`.
pub fn cpu_index(name: &str) -> Option<u32> {
    let n = name.strip_prefix("cpu")?;
    if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    n.parse().ok()
}

impl Choice for WakePlacement {
    const NAMES: &'static [&'static str] = &WakePlacement::NAMES;
    fn from_name(name: &str) -> Option<Self> {
        WakePlacement::from_name(name)
    }
}

crate::params! {
    /// The host's own keys (`host.*` outside its parts' groups).
    pub struct HostParams {
        /// CPUs of the host (fio's `$ncpus`): each gets its state.
        pub cpus: u32 = required count_u32("host.cpus", HOST_CPUS),
        /// The host's memory: fio's `$mb_memory`, and what the page cache
        /// may use.
        pub memory: u64 = required bytes("host.memory", HOST_MEMORY),
        /// The CPUs' clock.
        pub freq: f64 = required hz("host.freq", CPU_FREQ),
        /// The clock the profile's costs are given at: a cost takes
        /// reference_freq / freq times as long.
        pub reference_freq: f64 = required hz("host.reference_freq", CPU_FREQ),
        /// The CPU a device's completion interrupt goes to: the submitter's
        /// (per-CPU completion queues with matching MSI-X affinity), 1-of-N
        /// routing over `host.irq_affinity`, or one fixed CPU `cpuN`.
        pub irq_cpu: IrqCpuName = required choice("host.irq_cpu", IrqCpuName),
        /// The CPUs a 1-of-N interrupt may reach (bit c = CPU c); given
        /// exactly when `host.irq_cpu` is "one-of-n".
        pub irq_affinity: Option<u64> = optional count("host.irq_affinity", CPU_MASK),
        /// Where a thread woken by a completion interrupt runs. Absent:
        /// prev-cpu (every thread stays on its CPU).
        pub wake_placement: Option<WakePlacement> =
            optional choice("host.wake_placement", WakePlacement),
    }
}

/// The host's cores (`host.cpus`, at `host.freq` with costs given at
/// `host.reference_freq`) and the CPU completion interrupts go to
/// (`host.irq_cpu`: the submitter's, or one fixed core).
pub struct HostCpus {
    pub cpus: Vec<Cpu>,
    pub irq_cpu: IrqCpu,
}

impl HostCpus {
    pub fn from_profile(p: &Profile, host: &HostParams) -> Result<HostCpus> {
        let n = host.cpus;
        let one_of_n = host.irq_cpu == IrqCpuName::OneOfN;
        if host.irq_affinity.is_some() != one_of_n {
            return Err(InputError::new(
                p.file_of("host.irq_cpu"),
                None,
                "host.irq_affinity (the CPU mask of a 1-of-N interrupt) goes with \
                 host.irq_cpu = \"one-of-n\", and one-of-n needs it",
            ));
        }
        let irq = match (host.irq_cpu, host.irq_affinity) {
            (IrqCpuName::Cpu(c), _) if c >= n => {
                return Err(InputError::new(
                    p.file_of("host.irq_cpu"),
                    None,
                    format!(
                        "parameter 'host.irq_cpu' is \"cpu{c}\" but the model needs one of \
                         submitter, one-of-n, cpu0 to cpu{}: host.cpus is {n}",
                        n - 1
                    ),
                ))
            }
            (IrqCpuName::Cpu(c), _) => IrqCpu::Fixed(c),
            (IrqCpuName::OneOfN, Some(mask)) => {
                IrqCpu::OneOfN(cpu_mask(p, "host.irq_affinity", mask, n)?)
            }
            _ => IrqCpu::Submitter,
        };
        Ok(HostCpus {
            cpus: (0..n)
                .map(|i| Cpu::new(i, host.reference_freq, host.freq))
                .collect(),
            irq_cpu: irq,
        })
    }
}

/// A CPU mask `v` read from `key`, restricted to the host's `ncpus`; a
/// mask naming none of them is refused by name.
fn cpu_mask(p: &Profile, key: &str, v: u64, ncpus: u32) -> Result<u64> {
    let online = if ncpus >= 64 {
        u64::MAX
    } else {
        (1u64 << ncpus) - 1
    };
    if v & online == 0 {
        return Err(InputError::new(
            p.file_of(key),
            None,
            format!("{key} = {v:#x} names no CPU of the host's {ncpus}"),
        ));
    }
    Ok(v & online)
}

/// `host.background_wakeups.*`: wake-ups of some CPUs that the simulated
/// jobs do not cause (other devices' interrupts, other tasks' timers,
/// IPIs), as a Poisson process per CPU. Absent: none (the simulated jobs
/// are all the machine does). A phone's or a server's background rate is
/// a property of that machine that no seed publishes: a profile parameter
/// to study the sensitivity of an idle-state result to it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BackgroundWakeups {
    /// CPUs woken (bit c = CPU c).
    pub mask: u64,
    /// Mean wake-ups per second on each of them.
    pub rate_hz: f64,
    /// The handler each runs (reference-ns): interrupt entry, a handler,
    /// exit.
    pub cost: crate::sim::Ns,
}

crate::params! {
    /// `host.background_wakeups.*`, read when `host.background_wakeups.rate`
    /// is given.
    pub struct BackgroundParams {
        /// Mean background wake-ups per second on each CPU of
        /// `host.background_wakeups.cpus`, a Poisson process per CPU.
        /// Absent: none (the simulated jobs are all the machine does).
        rate: f64 = required hz(
            "host.background_wakeups.rate",
            range(
                1e-3,
                1e6,
                "background wake-ups per second per CPU: from one in 1000 s to 10^6 \
                 (one per microsecond)",
            )
        ),
        /// The CPUs background wake-ups reach (bit c = CPU c).
        cpus: u64 = required count("host.background_wakeups.cpus", CPU_MASK),
        /// The handler each background wake-up runs (reference-ns):
        /// interrupt entry, a handler, exit.
        cost: crate::sim::Ns = required ns(
            "host.background_wakeups.cost",
            range(0.0, 1e7, "a handler's time: up to 10 ms")
        ),
    }
}

impl BackgroundWakeups {
    pub fn from_profile(p: &Profile, ncpus: u32) -> Result<Option<BackgroundWakeups>> {
        if !p.has("host.background_wakeups.rate") {
            return Ok(None);
        }
        let b = BackgroundParams::read(p)?;
        Ok(Some(BackgroundWakeups {
            mask: cpu_mask(p, "host.background_wakeups.cpus", b.cpus, ncpus)?,
            rate_hz: b.rate,
            cost: b.cost,
        }))
    }
}

/// `host.idle.table` as a profile names it: an `intel_idle` table by its
/// short name, no cpuidle states (`poll`), or per-CPU `psci` states.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IdleTableName {
    Intel(IntelIdleTable),
    Poll,
    Psci,
}

impl Choice for IdleTableName {
    /// `IntelIdleTable::ALL`'s short names, then the two others (a test
    /// checks the list against `ALL`).
    const NAMES: &'static [&'static str] = &[
        "hsw", "bdw", "skl", "skx", "icx", "spr", "adl", "poll", "psci",
    ];
    fn from_name(name: &str) -> Option<Self> {
        match name {
            "poll" => Some(IdleTableName::Poll),
            "psci" => Some(IdleTableName::Psci),
            _ => IntelIdleTable::from_short_name(name).map(IdleTableName::Intel),
        }
    }
}

crate::choice_enum! {
    /// `host.idle.governor`: the menu governor of Linux 4.4, today's menu
    /// governor, or Qualcomm's LPM governor (the menu text with its
    /// cluster rules).
    pub enum IdleGovernor {
        MenuV44 = "menu-v4.4",
        Menu = "menu",
        QcomLpm = "qcom-lpm",
    }
}

/// A device-tree idle-state latency, one per CPU.
const DT_LATENCY: Range = range(
    0.0,
    1e10,
    "a device-tree idle-state latency (entry-latency-us, exit-latency-us, \
     min-residency-us): microseconds, at most 10 s",
);

crate::params! {
    /// The cpuidle model (`host.idle.*`), read when `host.idle.table` is
    /// given; a host without it has no cpuidle driver: its cores wait in
    /// C0 and wake at no cost.
    pub struct IdleParams {
        /// The cpuidle driver's state table: an `intel_idle` table by
        /// processor family, `poll` (none), or `psci` (per-CPU device-tree
        /// states, `host.idle.psci.*`).
        table: IdleTableName = required choice("host.idle.table", IdleTableName),
        /// The cpuidle governor.
        governor: IdleGovernor = required choice("host.idle.governor", IdleGovernor),
        /// The scheduler tick, 1/HZ.
        tick: u64 = required ns(
            "host.idle.tick",
            range(
                1e5,
                1e8,
                "the scheduler tick, 1/HZ: CONFIG_HZ from 100 to 1000 (kernel/Kconfig.hz) and \
                 some room (0.1 to 100 ms)",
            )
        ),
        /// Whether the processor promotes C1 to C1E on its own
        /// (MSR_IA32_POWER_CTL bit 1).
        c1e_auto_promotion: bool = required flag("host.idle.c1e_auto_promotion"),
        /// The load average the menu governor reads (get_loadavg).
        load_avg: f64 = required ratio(
            "host.idle.load_avg",
            range(
                0.0,
                (1u32 << 20) as f64,
                "the load average the menu governor reads (get_loadavg): runnable tasks, \
                 kept where its FSHIFT fixed point (11 bits) fits 32 bits",
            )
        ),
        /// CONFIG_NO_HZ_IDLE: the tick stops on an idle CPU. false: the
        /// tick keeps running.
        nohz: bool = default(false) flag("host.idle.nohz"),
        /// The idle path from the last task blocking to the idle state.
        entry_path: u64 = required ns(
            "host.idle.entry_path",
            range(
                0.0,
                1e6,
                "the idle path from the last task blocking to the idle state (switch to \
                 the idle task, tick_nohz_idle_enter, the governor's select): 0 to 1 ms",
            )
        ),
    }
}

crate::params! {
    /// `host.idle.table = "psci"`: one cpuidle-psci driver per CPU, state 0
    /// architectural WFI and state 1 the CPU's device-tree power-collapse
    /// state, given per CPU as the SoC's `idle-states` nodes give them.
    pub struct PsciParams {
        /// Each CPU's power-collapse entry latency (entry-latency-us), one
        /// value per CPU.
        entry: Vec<f64> = required list("host.idle.psci.entry", "time", DT_LATENCY, HOST_CPUS.max as usize),
        /// Each CPU's power-collapse exit latency (exit-latency-us), one
        /// value per CPU.
        exit: Vec<f64> = required list("host.idle.psci.exit", "time", DT_LATENCY, HOST_CPUS.max as usize),
        /// Each CPU's power-collapse target residency (min-residency-us),
        /// one value per CPU.
        min_residency: Vec<f64> =
            required list("host.idle.psci.min_residency", "time", DT_LATENCY, HOST_CPUS.max as usize),
    }
}

impl IdleConfig {
    /// The cpuidle model (`host.idle.*`): an `intel_idle` state table by
    /// processor family, the menu governor's text, the tick, and the C1E
    /// auto-promotion switch. A host without `host.idle.table` has no cpuidle
    /// driver: its cores wait in C0 and wake at no cost.
    pub fn from_profile(p: &Profile, ncpus: u32) -> Result<IdleConfig> {
        if !p.has("host.idle.table") {
            return Ok(IdleConfig::poll_only());
        }
        let ip = IdleParams::read(p)?;
        let mut per_cpu = Vec::new();
        let table = match ip.table {
            IdleTableName::Intel(t) => t.table(),
            IdleTableName::Psci => {
                per_cpu = psci_tables(p, &PsciParams::read(p)?, ncpus)?;
                per_cpu[0].clone()
            }
            IdleTableName::Poll => IdleConfig::poll_only().table,
        };
        Ok(IdleConfig {
            table,
            variant: match ip.governor {
                IdleGovernor::MenuV44 => MenuVariant::Linux44,
                _ => MenuVariant::Modern,
            },
            tick_ns: ip.tick,
            c1e_auto_promotion: ip.c1e_auto_promotion,
            load_avg: ip.load_avg,
            per_cpu,
            nohz_idle: ip.nohz,
            qcom_lpm: ip.governor == IdleGovernor::QcomLpm,
            entry_path_ns: ip.entry_path,
        })
    }
}

/// One CPU's `idle-states` power-collapse state per CPU from `host.idle.psci.*`.
fn psci_tables(p: &Profile, psci: &PsciParams, ncpus: u32) -> Result<Vec<CStateTable>> {
    let n = ncpus as usize;
    let per_cpu = |key: &str, v: &[f64]| -> Result<Vec<u64>> {
        if v.len() != n {
            return Err(InputError::new(
                p.file_of(key),
                None,
                format!(
                    "{key} has {} values but host.cpus is {n}: give one per CPU",
                    v.len()
                ),
            ));
        }
        // Device-tree latencies are whole microseconds.
        Ok(v.iter().map(|ns| (ns / 1_000.0).round() as u64).collect())
    };
    let entry = per_cpu("host.idle.psci.entry", &psci.entry)?;
    let exit = per_cpu("host.idle.psci.exit", &psci.exit)?;
    let residency = per_cpu("host.idle.psci.min_residency", &psci.min_residency)?;
    let tables: Vec<CStateTable> = (0..n)
        .map(|c| {
            CStateTable::new(
                &format!("psci:cpu{c}"),
                vec![
                    CState::arm_wfi(),
                    CState::psci("cpu-power-collapse", entry[c], exit[c], residency[c]),
                ],
            )
        })
        .collect();
    for t in &tables {
        t.validate()
            .map_err(|e| InputError::new(p.file_of("host.idle.psci.entry"), None, e))?;
    }
    Ok(tables)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_table_names_are_intel_idles_and_the_two_others() {
        let mut want: Vec<&str> = IntelIdleTable::ALL.iter().map(|t| t.short_name()).collect();
        want.extend(["poll", "psci"]);
        assert_eq!(IdleTableName::NAMES, &want[..]);
        for n in IdleTableName::NAMES {
            assert!(IdleTableName::from_name(n).is_some(), "{n}");
        }
    }

    #[test]
    fn an_irq_cpu_past_the_hosts_cpus_is_refused_with_the_valid_names() {
        let mut p = Profile::load("nullblk").unwrap();
        let n = HostParams::read(&p).unwrap().cpus;
        p.apply_override(&format!("host.irq_cpu=cpu{n}")).unwrap();
        let host = HostParams::read(&p).unwrap();
        let e = HostCpus::from_profile(&p, &host).err().expect("refused");
        assert_eq!(e.file, "--set");
        assert!(
            e.message.contains(&format!("is \"cpu{n}\""))
                && e.message.contains(&format!("cpu0 to cpu{}", n - 1)),
            "{e}"
        );
        // A name that is no CPU at all is refused at the read, with the names.
        p.apply_override("host.irq_cpu=cpu+1").unwrap();
        let e = HostParams::read(&p).err().expect("refused");
        assert!(
            e.message.contains("one of submitter, one-of-n, cpuN"),
            "{e}"
        );
    }

    #[test]
    fn irq_cpu_names_take_digits_only() {
        assert_eq!(IrqCpuName::from_name("cpu12"), Some(IrqCpuName::Cpu(12)));
        for bad in ["cpu", "cpu+1", "cpu-1", "cpux", "CPU1", "one-of-N"] {
            assert_eq!(IrqCpuName::from_name(bad), None, "{bad}");
        }
    }
}
