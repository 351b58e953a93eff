//! Where a thread woken by a completion interrupt runs
//! (`host.wake_placement`, kernel/sched/fair.c `select_task_rq_fair`): it
//! moves only when its CPU is busy at the wake-up, so a thread with a CPU
//! of its own keeps it, and its maps come from that one CPU.

mod common;

use common::maps_by_cpu;
use flashpath::run::RunOutput;

/// `job` from a file on virtio-ramdisk with `overrides`, seed 7.
fn run(job: &str, overrides: &[&str]) -> RunOutput {
    common::run_job_file("virtio-ramdisk", job, overrides, 7)
}

fn migrations(out: &RunOutput) -> u64 {
    out.result.flashpath["wake_migrations"].as_u64().unwrap()
}

fn bytes(out: &RunOutput) -> Vec<u64> {
    out.result
        .jobs
        .iter()
        .map(|j| j.dirs.iter().map(|d| d.io_bytes).sum())
        .collect()
}

const ONE_THREAD: &str = "[j]\nfilename=/dev/vda\ndirect=1\nioengine=libaio\niodepth=64\n\
                          rw=rw\nbs=4k\nsize=8m\n";

#[test]
fn a_thread_alone_on_its_cpu_stays_there_when_the_interrupt_is_elsewhere() {
    // One queue whose vector is on CPU 1 (the thread starts on CPU 0):
    // every wake-up comes from CPU 1, and CPU 0 is idle while the thread
    // sleeps, so wake_affine_idle keeps it on CPU 0 ("If the prev_cpu is
    // idle and cache affine then avoid a migration").
    let single = ["device.num_queues=1", "host.irq_cpu=cpu1"];
    let fair = run(ONE_THREAD, &single);
    let pinned = run(
        ONE_THREAD,
        &[single[0], single[1], "host.wake_placement=prev-cpu"],
    );
    assert_eq!(migrations(&fair), 0);
    assert_eq!(maps_by_cpu(&fair)[1..], [0, 0, 0]);
    assert_eq!(maps_by_cpu(&fair), maps_by_cpu(&pinned));
    assert_eq!(fair.result.end_time, pinned.result.end_time);
    assert_eq!(bytes(&fair), bytes(&pinned));
}

/// On two CPUs: a synchronous reader, free to run anywhere, and a thread
/// pinned to CPU 0, where the reader starts, that spins 50 ms after each
/// of its two I/Os (fio's thinktime_spin keeps its CPU busy).
const SHARED_CPU: &str = "[reader]\nfilename=/dev/vda\ndirect=1\nioengine=psync\nrw=read\n\
                          bs=4k\nsize=4m\n\
                          [spinner]\nfilename=/dev/vda\ndirect=1\nioengine=psync\nrw=read\n\
                          bs=4k\nsize=8k\nthinktime=50000\nthinktime_spin=50000\n\
                          thinktime_blocks=1\ncpus_allowed=0\n";

#[test]
fn a_thread_woken_while_its_cpu_is_busy_moves_to_an_idle_one() {
    let fair = run(SHARED_CPU, &["host.cpus=2"]);
    let pinned = run(SHARED_CPU, &["host.cpus=2", "host.wake_placement=prev-cpu"]);
    // Every request is four mappings: virtio-blk's header, the data page,
    // the status byte and the indirect table.
    let all = 4 * (1024 + 2);
    assert_eq!(migrations(&pinned), 0);
    assert_eq!(maps_by_cpu(&pinned), [all, 0]);
    // The first completion that finds CPU 0 spinning moves the reader to
    // idle CPU 1 (select_idle_sibling's scan from CPU 0 + 1); CPU 1 is
    // idle at every later wake-up, so it stays there.
    assert_eq!(migrations(&fair), 1);
    let fair_maps = maps_by_cpu(&fair);
    assert!(fair_maps[1] > 0, "{fair_maps:?}");
    assert_eq!(fair_maps[0] + fair_maps[1], all);
    assert_eq!(bytes(&fair), bytes(&pinned));
}

#[test]
fn a_pinned_thread_never_moves() {
    // The reader of the test above, with cpus_allowed=0: the same busy
    // CPU at its wake-ups, but select_idle_sibling may only pick CPU 0.
    let job = SHARED_CPU.replacen("size=4m\n", "size=4m\ncpus_allowed=0\n", 1);
    let out = run(&job, &["host.cpus=2"]);
    assert_eq!(migrations(&out), 0);
    assert_eq!(maps_by_cpu(&out)[1], 0);
}

#[test]
fn same_seed_same_placements() {
    let a = run(SHARED_CPU, &["host.cpus=2"]);
    let b = run(SHARED_CPU, &["host.cpus=2"]);
    assert_eq!(migrations(&a), migrations(&b));
    assert_eq!(maps_by_cpu(&a), maps_by_cpu(&b));
    assert_eq!(a.result.end_time, b.result.end_time);
}

/// cpus_allowed_policy=split (backend.c thread_main, fio_cpus_split with
/// `td->thread_number - 1`): each thread keeps one CPU of its set, the
/// (thread number - 1) mod count-th, numbered over every job of the run,
/// so the reader of the shared-CPU case, free to use CPUs 0-1 but split,
/// cannot move off its CPU when the spinner holds it.
#[test]
fn cpus_allowed_policy_split_pins_each_thread_by_its_number_in_the_run() {
    let all = 4 * (1024 + 2);
    let reader_first = SHARED_CPU.replace(
        "[reader]\n",
        "[reader]\ncpus_allowed=0-1\ncpus_allowed_policy=split\n",
    );
    let shared = SHARED_CPU.replace("[reader]\n", "[reader]\ncpus_allowed=0-1\n");
    let split = run(&reader_first, &["host.cpus=2"]);
    let free = run(&shared, &["host.cpus=2"]);
    // Thread 1 of the run: CPU 0 of {0, 1}, where the spinner is.
    assert_eq!(migrations(&split), 0);
    assert_eq!(maps_by_cpu(&split), [all, 0]);
    // Without split the same set lets it move, as in the test above.
    assert_eq!(migrations(&free), 1);
    // The reader second (the spinner is thread 1): CPU 1 of {0, 1}.
    let (reader, spinner) = reader_first.split_at(reader_first.find("[spinner]").unwrap());
    let second = run(&format!("{spinner}{reader}"), &["host.cpus=2"]);
    assert_eq!(migrations(&second), 0);
    let maps = maps_by_cpu(&second);
    // The spinner's two reads map on CPU 0, all the reader's on CPU 1.
    assert_eq!(maps, [4 * 2, 4 * 1024], "{maps:?}");
    assert_eq!(bytes(&split), bytes(&free));
}
