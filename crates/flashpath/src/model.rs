//! The machine a profile describes, built but not run. Each layer reads
//! its own keys in its `from_profile` (the host in `host/config.rs` and
//! `host/cpu.rs`, blk-mq in `block/`, the driver and its device through
//! `driver::probe`, swiotlb in `dma/`); this module calls them in path
//! order, adds the request-queue limits the kernel defaults when the
//! profile is silent, and checks that no key went unread.

use crate::block::{BlockParams, QueueSettings};
use crate::driver::probe::{DeviceKind, ProbeParams};
use crate::driver::Driver;
use crate::error::{InputError, Result};
use crate::host::config::{BackgroundWakeups, HostCpus, HostParams};
use crate::host::cpu::{Cpu, HostCosts};
use crate::host::cpufreq::CpuFreqConfig;
use crate::host::idle::IdleConfig;
use crate::host::sched::WakePlacement;
use crate::machine::{Ev, MachineParts};
use crate::mm::buffered::{CacheCosts, CacheParts};
use crate::mm::thp::{ThpMode, ThpParams};
use crate::profile::Profile;
use crate::types::IrqCpu;
use crate::workload::fio::JobFile;

/// The machine a profile describes, built but not run: every profile value
/// read, checked against its range and turned into the model's parts.
pub struct Model {
    pub cpus: Vec<Cpu>,
    pub irq_cpu: IrqCpu,
    pub wake_placement: WakePlacement,
    pub background: Option<BackgroundWakeups>,
    pub idle: IdleConfig,
    /// The cores' frequency governor (`host.cpufreq.*`), if any.
    pub cpufreq: Option<CpuFreqConfig>,
    pub costs: HostCosts,
    pub settings: QueueSettings,
    pub driver: Box<dyn Driver<Ev>>,
    pub dma: Option<crate::dma::bounce::SwiotlbPath>,
    pub thp: ThpMode,
    pub cache_costs: Option<CacheCosts>,
    pub max_sectors_kb: u64,
    pub read_ahead_kb: u64,
    pub memory: u64,
    /// The largest request a bouncing DMA path maps, in pages.
    pub max_dma_pages: u64,
}

/// Build every part of the machine `profile` describes; a profile key no
/// part reads is an error.
pub fn build_model(profile: &Profile) -> Result<Model> {
    let host = HostParams::read(profile)?;
    let HostCpus { cpus, irq_cpu } = HostCpus::from_profile(profile, &host)?;
    // A host without the key keeps every thread on its CPU.
    let wake_placement = host.wake_placement.unwrap_or(WakePlacement::PrevCpu);
    let background = BackgroundWakeups::from_profile(profile, host.cpus)?;
    let idle = IdleConfig::from_profile(profile, host.cpus)?;
    let cpufreq = CpuFreqConfig::from_profile(profile, host.freq, idle.tick_ns, idle.nohz_idle)?;
    let costs = HostCosts::from_profile(profile)?;
    let block = BlockParams::read(profile)?;
    let settings = QueueSettings::from_params(&block);
    let kind = ProbeParams::read(profile)?.kind;
    let driver = crate::driver::probe::probe(profile, kind, host.cpus, &costs)?;
    let dma = crate::dma::bounce::SwiotlbPath::from_profile(
        profile,
        cpus.len() as u32,
        kind == DeviceKind::VirtioBlk,
    )?;
    let thp = thp_mode(profile, dma.is_some())?;
    let cache_costs = if profile.has("host.cost.copy_user") {
        Some(CacheCosts::from_profile(profile)?)
    } else {
        None
    };
    // The queue's limits, the kernel's defaults unless the profile sets
    // them (declared in block::BlockParams).
    let (max_sectors_kb, read_ahead_kb) = (block.max_sectors_kb, block.read_ahead_kb);
    let memory = host.memory;
    let max_dma_pages = max_dma_pages(dma.is_some());
    profile.check_all_read()?;
    Ok(Model {
        cpus,
        irq_cpu,
        wake_placement,
        background,
        idle,
        cpufreq,
        costs,
        settings,
        driver,
        dma,
        thp,
        cache_costs,
        max_sectors_kb,
        read_ahead_kb,
        memory,
        max_dma_pages,
    })
}

/// Transparent huge pages decide how many DMA segments a request's
/// buffer makes; only a bouncing DMA path can tell (mm/thp.rs), so
/// `host.thp` is read only then or when the profile gives it.
fn thp_mode(profile: &Profile, bouncing: bool) -> Result<ThpMode> {
    if !bouncing && !profile.has("host.thp") {
        return Ok(ThpMode::Never);
    }
    Ok(ThpParams::read(profile)?.thp)
}

/// A bouncing DMA path caps the request: drivers set max_hw_sectors
/// from dma_max_mapping_size(), which swiotlb bounds to IO_TLB_SEGSIZE
/// slots (swiotlb_max_mapping_size; virtio_max_dma_size).
fn max_dma_pages(bouncing: bool) -> u64 {
    if !bouncing {
        return u64::MAX;
    }
    use crate::dma::swiotlb::{IO_TLB_SEGSIZE, IO_TLB_SIZE};
    u64::from(IO_TLB_SEGSIZE) * IO_TLB_SIZE / crate::mm::PAGE_SIZE
}

impl Model {
    /// The page cache the jobs need: none when every job does direct I/O
    /// (or no I/O, the null engine); else the profile's page cache costs,
    /// which a buffered job cannot run without.
    pub fn page_cache(&self, jobs: &JobFile, disk_bytes: u64) -> Result<Option<CacheParts>> {
        let Some(spec) = jobs
            .jobs
            .iter()
            .find(|s| !s.direct && s.ioengine.moves_data())
        else {
            return Ok(None);
        };
        let Some(costs) = self.cache_costs else {
            return Err(InputError::new(
                jobs.path.clone(),
                Some(spec.line),
                format!(
                    "job '{}': buffered I/O (direct=0, fio's default) needs the host's page cache costs (host.cost.copy_user, buffered_call, page_cache_lookup, page_cache_add, page_writeback), which this profile does not give; set direct=1 or add them",
                    spec.name
                ),
            ));
        };
        Ok(Some(CacheParts {
            costs,
            memory: self.memory,
            disk_bytes,
            ra_pages: self.read_ahead_kb / 4,
            max_rq_pages: (self.max_sectors_kb / 4).max(1).min(self.max_dma_pages),
        }))
    }

    /// The parts `Machine::new` wires together, with the page cache the
    /// jobs need.
    pub fn into_parts(self, cache: Option<CacheParts>) -> MachineParts {
        MachineParts {
            cpus: self.cpus,
            idle: self.idle,
            cpufreq: self.cpufreq,
            costs: self.costs,
            irq_cpu: self.irq_cpu,
            wake_placement: self.wake_placement,
            background: self.background,
            settings: self.settings,
            driver: self.driver,
            dma: self.dma,
            thp: self.thp,
            cache,
        }
    }
}
