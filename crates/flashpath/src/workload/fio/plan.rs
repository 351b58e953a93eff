//! Thread planning: which fio job clone runs where and when. Every clone
//! is a thread with its CPU, its wave (jobs after a `stonewall` start when
//! the previous wave is done), its reporting group and its I/O source.

use super::flow::{FlowGroup, FlowMember};
use super::zbd::ZbdJob;
use super::ThreadPlan;
use crate::error::{InputError, Result};
use crate::workload::fio::{IoStream, JobFile, JobSpec};
use crate::workload::IoSource;
use std::rc::Rc;

/// Makes a job clone's I/O source: `(spec, file start, file length, run
/// seed, clone index)`.
pub type SourceFactory<'a> = &'a dyn Fn(&JobSpec, u64, u64, u64, u32) -> Box<dyn IoSource>;

/// The seed of a job's workload (offsets, block sizes, read/write mix), as
/// fio seeds it (init.c setup_random_seeds): from `randseed` whenever
/// `randrepeat` is on (fio's default) or `randseed` is given, so the run's
/// seed, which drives the simulated machine, does not move the offsets;
/// only `randrepeat=0` without `randseed` takes the run's seed, where fio
/// takes fresh entropy (init_random_seeds). Without `randseed` the seed is
/// 0, not fio's default 0x89: flashpath's streams are not fio's
/// tausworthe generator, so fio's value would not give fio's numbers.
pub fn workload_seed(spec: &JobSpec, run_seed: u64) -> u64 {
    if spec.randrepeat || spec.randseed.is_some() {
        spec.randseed.unwrap_or(0)
    } else {
        run_seed
    }
}

/// The I/O source of a fio job clone: the replay of its `read_iolog`, else
/// its `IoStream`, seeded by [`workload_seed`].
pub fn fio_source(
    spec: &JobSpec,
    start: u64,
    len: u64,
    seed: u64,
    clone: u32,
) -> Box<dyn IoSource> {
    if let Some(log) = &spec.iolog {
        return Box::new(log.source(start));
    }
    if let Some(t) = &spec.trace {
        return crate::workload::trace::replay::source_of(t, start, len);
    }
    Box::new(IoStream::new(
        spec,
        start,
        len,
        workload_seed(spec, seed),
        clone,
    ))
}

/// The source of a clone that does no I/O (fio failed it at setup).
struct NoIo;

impl IoSource for NoIo {
    fn next_io(&mut self) -> Option<crate::types::IoUnit> {
        None
    }
}

/// One `ThreadPlan` per job clone, in fio's order (jobs as written, each
/// job's clones in turn), over the files `regions` laid out per clone.
pub fn plan_threads(
    jobs: &JobFile,
    regions: &[Vec<(u64, u64)>],
    ncpus: u32,
    seed: u64,
    make_source: SourceFactory<'_>,
    mut zbd: Vec<Vec<Option<ZbdJob>>>,
) -> Result<Vec<ThreadPlan>> {
    let mut plans = Vec::new();
    let mut wave = 0u32;
    let mut group = 0u32;
    let mut next_cpu = 0u32;
    // flow.c flow_get: one group per flow_id, shared by its jobs' clones.
    let mut flows: Vec<(u64, Rc<FlowGroup>)> = Vec::new();
    for (si, spec) in jobs.jobs.iter().enumerate() {
        if si > 0 && spec.stonewall {
            wave += 1;
        }
        if si > 0 && (spec.stonewall || spec.new_group) {
            group += 1;
        }
        for clone in 0..spec.numjobs.max(1) {
            let allowed: Vec<u32> = match &spec.cpus_allowed {
                Some(list) => list.iter().copied().filter(|c| *c < ncpus).collect(),
                None => (0..ncpus).collect(),
            };
            if allowed.is_empty() {
                return Err(InputError::new(
                    jobs.path.clone(),
                    Some(spec.line),
                    format!(
                        "job '{}': cpus_allowed names no CPU of this {ncpus}-CPU host",
                        spec.name
                    ),
                ));
            }
            // cpus_allowed_policy=split: backend.c thread_main narrows the
            // job's cpus_allowed to one CPU with fio_cpus_split(mask,
            // td->thread_number - 1): the (thread number - 1) mod count-th
            // CPU of the set, numbered over every job of the run (each
            // clone one thread, in order).
            let allowed = if spec.cpus_allowed_split && spec.cpus_allowed.is_some() {
                vec![allowed[plans.len() % allowed.len()]]
            } else {
                allowed
            };
            // The scheduler spreads threads: take the allowed CPUs in turn.
            let cpu = allowed[next_cpu as usize % allowed.len()];
            next_cpu += 1;
            let sq_cpu = sq_thread_cpu(jobs, spec, &allowed, ncpus, &mut next_cpu)?;
            let (start, len) = regions[si][clone as usize];
            // A clone fio fails as it sets its file up runs no I/O.
            let failed_setup = super::layout::offset_past_end(spec, clone, len);
            plans.push(ThreadPlan {
                spec_index: si as u32,
                clone,
                cpu,
                allowed: if spec.cpus_allowed.is_some() {
                    allowed
                } else {
                    Vec::new()
                },
                wave,
                groupid: group,
                source: if failed_setup {
                    Box::new(NoIo)
                } else {
                    make_source(spec, start, len, seed, clone)
                },
                file_start: start,
                flow: (spec.flow > 0).then(|| {
                    let group = match flows.iter().find(|(id, _)| *id == spec.flow_id) {
                        Some((_, g)) => g.clone(),
                        None => {
                            let g = FlowGroup::new();
                            flows.push((spec.flow_id, g.clone()));
                            g
                        }
                    };
                    FlowMember::new(group, spec.flow)
                }),
                zbd: zbd
                    .get_mut(si)
                    .and_then(|c| c.get_mut(clone as usize))
                    .and_then(Option::take),
                sq_cpu,
            });
        }
    }
    Ok(plans)
}

/// The CPU of a job clone's io_uring SQ thread (sqthread_poll), as Linux
/// 6.12 places it (io_uring/sqpoll.c io_sq_offload_create): with
/// sqthread_poll_cpu (IORING_SETUP_SQ_AFF) the thread is bound to that
/// CPU, and a CPU the host does not have fails io_uring_setup with EINVAL;
/// else create_io_thread gives it the creating thread's affinity and the
/// scheduler places it. flashpath's choice for that placement: the next
/// allowed CPU in the same turn as the job threads (`next_cpu`), so the SQ
/// thread lands beside its job's thread when the job may use another CPU
/// (an assumption; a real scheduler balances by load, and on an otherwise
/// idle host also moves a busy-polling thread off its creator's CPU).
fn sq_thread_cpu(
    jobs: &JobFile,
    spec: &JobSpec,
    allowed: &[u32],
    ncpus: u32,
    next_cpu: &mut u32,
) -> Result<Option<u32>> {
    if !spec.sqthread_poll {
        return Ok(None);
    }
    if let Some(cpu) = spec.sqthread_poll_cpu {
        if cpu >= u64::from(ncpus) {
            return Err(InputError::new(
                jobs.path.clone(),
                Some(spec.line),
                format!(
                    "job '{}': sqthread_poll_cpu={cpu} names no CPU of this {ncpus}-CPU host \
                     (io_uring_setup fails with EINVAL: io_uring/sqpoll.c \
                     io_sq_offload_create)",
                    spec.name
                ),
            ));
        }
        return Ok(Some(cpu as u32));
    }
    let cpu = allowed[*next_cpu as usize % allowed.len()];
    *next_cpu += 1;
    Ok(Some(cpu))
}
