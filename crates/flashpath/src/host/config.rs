//! The host as a profile describes it (`host.*`): its CPUs and where
//! interrupts land, the cpuidle driver and governor, and where a woken
//! thread runs. Each part's `from_profile` reads its keys and checks them
//! against the kernel's own limits; `model::build_model` calls them.

use crate::error::{InputError, Result};
use crate::host::cpu::Cpu;
use crate::host::idle::{CState, CStateTable, IdleConfig, IntelIdleTable, MenuVariant};
use crate::host::sched::WakePlacement;
use crate::profile::{range, Profile, Range};
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
    Ok(HostFacts {
        ncpus: profile.count_u32("host.cpus", HOST_CPUS)?,
        mb_memory: profile.bytes("host.memory", HOST_MEMORY)? >> 20,
    })
}

/// `host.freq`, `host.reference_freq`: a cost given at the reference
/// clock takes reference / freq times as long.
const CPU_FREQ: Range = range(
    1e6,
    1e10,
    "a CPU clock from 1 MHz to 10 GHz: costs are scaled by the reference clock over it",
);

/// The host's cores (`host.cpus`, at `host.freq` with costs given at
/// `host.reference_freq`) and the CPU completion interrupts go to
/// (`host.irq_cpu`: the submitter's, or one fixed core).
pub struct HostCpus {
    pub cpus: Vec<Cpu>,
    pub irq_cpu: IrqCpu,
}

impl HostCpus {
    pub fn from_profile(p: &Profile) -> Result<HostCpus> {
        let n = p.count_u32("host.cpus", HOST_CPUS)?;
        let hz = p.hz("host.freq", CPU_FREQ)?;
        let reference = p.hz("host.reference_freq", CPU_FREQ)?;
        let names: Vec<String> = ["submitter", "one-of-n"]
            .into_iter()
            .map(str::to_string)
            .chain((0..n).map(|c| format!("cpu{c}")))
            .collect();
        let valid: Vec<&str> = names.iter().map(String::as_str).collect();
        let irq = p.choice("host.irq_cpu", &valid)?;
        let one_of_n = irq == "one-of-n";
        if p.has("host.irq_affinity") != one_of_n {
            return Err(InputError::new(
                p.file_of("host.irq_cpu"),
                None,
                "host.irq_affinity (the CPU mask of a 1-of-N interrupt) goes with \
                 host.irq_cpu = \"one-of-n\", and one-of-n needs it",
            ));
        }
        let irq = match irq.strip_prefix("cpu") {
            Some(c) => IrqCpu::Fixed(c.parse().expect("choice() checked it")),
            None if one_of_n => IrqCpu::OneOfN(irq_affinity(p, n)?),
            None => IrqCpu::Submitter,
        };
        Ok(HostCpus {
            cpus: (0..n).map(|i| Cpu::new(i, reference, hz)).collect(),
            irq_cpu: irq,
        })
    }
}

/// A CPU mask key (bit c = CPU c, as a device tree or
/// `/proc/irq/N/smp_affinity` writes it) of at most 64 CPUs, restricted to
/// the host's `ncpus`; a mask naming none of them is refused by name.
fn cpu_mask(p: &Profile, key: &str, ncpus: u32) -> Result<u64> {
    let v = p.count(
        key,
        range(
            1.0,
            u64::MAX as f64,
            "a CPU mask of at most 64 CPUs, not empty (bit c = CPU c)",
        ),
    )?;
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

/// `host.irq_affinity`: the CPUs a 1-of-N interrupt may reach; 1-of-N
/// routing is a GICv3 feature of at most 64 CPUs here.
fn irq_affinity(p: &Profile, ncpus: u32) -> Result<u64> {
    cpu_mask(p, "host.irq_affinity", ncpus)
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

impl BackgroundWakeups {
    pub fn from_profile(p: &Profile) -> Result<Option<BackgroundWakeups>> {
        const RATE: &str = "host.background_wakeups.rate";
        if !p.has(RATE) {
            return Ok(None);
        }
        let ncpus = p.count_u32("host.cpus", HOST_CPUS)?;
        let mask = cpu_mask(p, "host.background_wakeups.cpus", ncpus)?;
        Ok(Some(BackgroundWakeups {
            mask,
            rate_hz: p.hz(
                RATE,
                range(
                    1e-3,
                    1e6,
                    "background wake-ups per second per CPU: from one in 1000 s to 10^6 \
                     (one per microsecond)",
                ),
            )?,
            cost: p.ns(
                "host.background_wakeups.cost",
                range(0.0, 1e7, "a handler's time: up to 10 ms"),
            )?,
        }))
    }
}

impl WakePlacement {
    /// `host.wake_placement`: where a thread woken by a completion interrupt
    /// runs. A host without the key keeps every thread on its CPU.
    pub fn from_profile(p: &Profile) -> Result<WakePlacement> {
        if !p.has("host.wake_placement") {
            return Ok(WakePlacement::PrevCpu);
        }
        let name = p.choice("host.wake_placement", &WakePlacement::NAMES)?;
        Ok(WakePlacement::from_name(&name).expect("choice() checked the name"))
    }
}

impl IdleConfig {
    /// The cpuidle model (`host.idle.*`): an `intel_idle` state table by
    /// processor family, the menu governor's text, the tick, and the C1E
    /// auto-promotion switch. A host without `host.idle.table` has no cpuidle
    /// driver: its cores wait in C0 and wake at no cost.
    pub fn from_profile(p: &Profile) -> Result<IdleConfig> {
        if !p.has("host.idle.table") {
            return Ok(IdleConfig::poll_only());
        }
        let mut names: Vec<&str> = IntelIdleTable::ALL.iter().map(|t| t.short_name()).collect();
        names.push("poll");
        names.push("psci");
        let table = p.choice("host.idle.table", &names)?;
        let mut per_cpu = Vec::new();
        let table = match IntelIdleTable::from_short_name(&table) {
            Some(t) => t.table(),
            None if table == "psci" => {
                per_cpu = psci_tables(p)?;
                per_cpu[0].clone()
            }
            None => IdleConfig::poll_only().table,
        };
        let governor = p.choice("host.idle.governor", &["menu-v4.4", "menu", "qcom-lpm"])?;
        let variant = match governor.as_str() {
            "menu-v4.4" => MenuVariant::Linux44,
            _ => MenuVariant::Modern,
        };
        Ok(IdleConfig {
            table,
            variant,
            tick_ns: p.ns(
                "host.idle.tick",
                range(
                    1e5,
                    1e8,
                    "the scheduler tick, 1/HZ: CONFIG_HZ from 100 to 1000 (kernel/Kconfig.hz) and \
                     some room (0.1 to 100 ms)",
                ),
            )?,
            c1e_auto_promotion: p.flag("host.idle.c1e_auto_promotion")?,
            load_avg: p.ratio(
                "host.idle.load_avg",
                range(
                    0.0,
                    f64::from(1u32 << 20),
                    "the load average the menu governor reads (get_loadavg): runnable tasks, \
                     kept where its FSHIFT fixed point (11 bits) fits 32 bits",
                ),
            )?,
            per_cpu,
            // CONFIG_NO_HZ_IDLE; a profile without the key keeps the tick.
            nohz_idle: p.has("host.idle.nohz") && p.flag("host.idle.nohz")?,
            qcom_lpm: governor == "qcom-lpm",
            entry_path_ns: p.ns(
                "host.idle.entry_path",
                range(
                    0.0,
                    1e6,
                    "the idle path from the last task blocking to the idle state (switch to \
                     the idle task, tick_nohz_idle_enter, the governor's select): 0 to 1 ms",
                ),
            )?,
        })
    }
}

/// `host.idle.table = "psci"`: one cpuidle-psci driver per CPU, state 0
/// architectural WFI and state 1 the CPU's device-tree power-collapse state,
/// given per CPU (`host.idle.psci.entry`, `.exit`, `.min_residency`, one
/// value per CPU, as the SoC's `idle-states` nodes give them).
fn psci_tables(p: &Profile) -> Result<Vec<CStateTable>> {
    let n = p.count_u32("host.cpus", HOST_CPUS)? as usize;
    let per_cpu = |key: &str| -> Result<Vec<u64>> {
        let v = p.list(
            key,
            "time",
            range(
                0.0,
                1e10,
                "a device-tree idle-state latency (entry-latency-us, exit-latency-us, \
                 min-residency-us): microseconds, at most 10 s",
            ),
            HOST_CPUS.max as usize,
        )?;
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
    let entry = per_cpu("host.idle.psci.entry")?;
    let exit = per_cpu("host.idle.psci.exit")?;
    let residency = per_cpu("host.idle.psci.min_residency")?;
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
