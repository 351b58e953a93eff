"""fio 3.33's semantics for jobs flashpath used to refuse: a shared log
(per_job_logs=0), a null-engine file larger than the device, a second job
whose offset lies past the first job's file.

Each test asserts what fio's source says (without fio), then, where the
real fio is installed (CI has it), that fio does the same on the same job.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import cli
from flashpath import fiojson

FIO = shutil.which("fio")
need_fio = pytest.mark.skipif(FIO is None, reason="the real fio is not installed")


def run_ours(job: Path) -> dict:  # type: ignore[type-arg]
    r = cli("run", job.name, "--device", "nullblk", "--output-format", "json", cwd=job.parent)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)  # type: ignore[no-any-return]


def run_fio(job: Path) -> dict:  # type: ignore[type-arg]
    assert FIO is not None
    r = subprocess.run(
        [FIO, "--output-format=json", job.name],
        cwd=job.parent,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    # exitall makes fio signal its other jobs, and under load it may print
    # "fio: terminating on signal 15" before the JSON on stdout: the one
    # reader (fiojson.decode) starts the document at its first "{" then.
    return fiojson.decode(r.stdout, str(job))  # type: ignore[no-any-return]


def ios(doc: dict, d: str) -> list[tuple[str, int, int]]:  # type: ignore[type-arg]
    return [(j["jobname"], j[d]["total_ios"], j[d]["io_bytes"]) for j in doc["jobs"]]


SHARED_LOG = """[global]
ioengine=null
filesize=64k
write_bw_log=test
per_job_logs=0
log_offset=1
[a]
[b]
"""


def logs_of(folder: Path) -> dict[str, int]:
    return {p.name: len(p.read_text().splitlines()) for p in folder.glob("*.log")}


def test_shared_log_is_one_file_both_jobs_append_to(tmp_path: Path) -> None:
    # init.c gen_log_name: no job number with per_job_logs=0; iolog.c
    # flush_log opens it with "a", so a file already there is kept.
    (tmp_path / "job.fio").write_text(SHARED_LOG)
    (tmp_path / "test_bw.log").write_text("earlier line\n")
    run_ours(tmp_path / "job.fio")
    assert logs_of(tmp_path) == {"test_bw.log": 1 + 2 * 16}
    lines = (tmp_path / "test_bw.log").read_text().splitlines()
    assert lines[0] == "earlier line"
    # log_offset=1: the offsets of both jobs, each 0..60k in its own file.
    offsets = [int(x.split(", ")[4]) for x in lines[1:]]
    assert sorted(offsets) == sorted(list(range(0, 65536, 4096)) * 2)


@need_fio
def test_shared_log_matches_the_real_fio(tmp_path: Path) -> None:
    ours, real = tmp_path / "ours", tmp_path / "real"
    for d in (ours, real):
        d.mkdir()
        (d / "job.fio").write_text(SHARED_LOG)
    run_ours(ours / "job.fio")
    run_fio(real / "job.fio")
    assert logs_of(ours) == logs_of(real)


BIG_NULL = """[global]
ioengine=null
filesize=1T
rw=randread
number_ios=200
[a]
[b]
offset=900g
size=200g
"""


def test_null_engine_file_larger_than_the_device_runs(tmp_path: Path) -> None:
    # engines/null.c does no I/O (FIO_DISKLESSIO): the device's size is
    # no limit; the nullblk profile's device is far smaller than 1 TiB.
    (tmp_path / "job.fio").write_text(BIG_NULL)
    doc = run_ours(tmp_path / "job.fio")
    assert ios(doc, "read") == [("a", 200, 200 * 4096), ("b", 200, 200 * 4096)]
    # No disk stats: fio keeps none for a diskless engine.
    assert "disk_util" not in doc


@need_fio
def test_null_engine_file_larger_than_the_device_matches_fio(tmp_path: Path) -> None:
    (tmp_path / "job.fio").write_text(BIG_NULL)
    ours, real = run_ours(tmp_path / "job.fio"), run_fio(tmp_path / "job.fio")
    assert ios(ours, "read") == ios(real, "read")
    assert ("disk_util" in ours) == ("disk_util" in real)


SHARED_FILE = """[global]
ioengine=psync
filename=shared.dat
bs=4k
rw=write
size=64k
[first]
[second]
stonewall
offset=1m
"""


def test_a_later_offset_extends_the_shared_file(tmp_path: Path) -> None:
    # filesetup.c: a job whose offset + size passes the file's end extends
    # it; both jobs write their whole size.
    (tmp_path / "job.fio").write_text(SHARED_FILE)
    doc = run_ours(tmp_path / "job.fio")
    assert ios(doc, "write") == [("first", 16, 65536), ("second", 16, 65536)]


@need_fio
def test_a_later_offset_extends_the_shared_file_as_fio_does(tmp_path: Path) -> None:
    (tmp_path / "job.fio").write_text(SHARED_FILE)
    real = run_fio(tmp_path / "job.fio")
    assert (tmp_path / "shared.dat").stat().st_size == (1 << 20) + 65536
    assert ios(run_ours(tmp_path / "job.fio"), "write") == ios(real, "write")


def offsets_of(iolog: Path) -> list[int]:
    """The offsets of the I/Os in a version-3 iolog, in issue order."""
    out = []
    for line in iolog.read_text().splitlines()[1:]:
        parts = line.split()
        if len(parts) == 5 and parts[2] in ("read", "write"):
            out.append(int(parts[3]))
    return out


LFSR = """[test]
ioengine=null
filesize=1M
rw=randread
norandommap=1
write_iolog=io.log
"""


def run_log(tmp_path: Path, text: str, *args: str) -> list[int]:
    (tmp_path / "job.fio").write_text(text)
    # fio (and flashpath) add to an existing write_iolog file.
    (tmp_path / "io.log").unlink(missing_ok=True)
    r = cli("run", "job.fio", "--device", "nullblk", *args, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    return offsets_of(tmp_path / "io.log")


def test_lfsr_touches_each_block_once(tmp_path: Path) -> None:
    # filesetup.c init_random_map: random_generator=lfsr walks every block
    # of the file once (lib/lfsr.c), even with norandommap.
    offs = run_log(tmp_path, LFSR + "random_generator=lfsr\n")
    assert sorted(offs) == list(range(0, 1 << 20, 4096))
    assert offs != sorted(offs)
    # Without it, norandommap draws blocks with repeats (t0022's point).
    plain = run_log(tmp_path, LFSR)
    assert len(plain) == 256 and len(set(plain)) < 256


@need_fio
def test_lfsr_touches_each_block_once_in_the_real_fio(tmp_path: Path) -> None:
    (tmp_path / "job.fio").write_text(LFSR + "random_generator=lfsr\n")
    run_fio(tmp_path / "job.fio")
    (tmp_path / "real.log").write_text((tmp_path / "io.log").read_text())
    real = offsets_of(tmp_path / "real.log")
    ours = run_log(tmp_path, LFSR + "random_generator=lfsr\n")
    assert sorted(real) == sorted(ours) == list(range(0, 1 << 20, 4096))


SEEDED = """[test]
ioengine=null
size=4M
rw=randread
norandommap=1
number_ios=64
write_iolog=io.log
"""


def test_offsets_follow_fio_seeding_not_the_run_seed(tmp_path: Path) -> None:
    # init.c setup_random_seeds: with randrepeat=1 (the default) the
    # workload's seeds come from randseed, so every run draws the same
    # offsets whatever --seed (the simulated machine's) is.
    a = run_log(tmp_path, SEEDED, "--seed", "1")
    b = run_log(tmp_path, SEEDED, "--seed", "2")
    assert a == b and len(set(a)) > 1
    # randseed moves them...
    c = run_log(tmp_path, SEEDED + "randseed=7\n", "--seed", "1")
    assert c != a
    assert c == run_log(tmp_path, SEEDED + "randseed=7\n", "--seed", "2")
    # ... and with randrepeat=0 (fio: fresh entropy each run) the run seed does.
    d1 = run_log(tmp_path, SEEDED + "randrepeat=0\n", "--seed", "1")
    d2 = run_log(tmp_path, SEEDED + "randrepeat=0\n", "--seed", "2")
    assert d1 != d2


@need_fio
def test_the_real_fio_repeats_its_offsets_with_randrepeat(tmp_path: Path) -> None:
    runs = []
    for _ in range(2):
        (tmp_path / "job.fio").write_text(SEEDED)
        (tmp_path / "io.log").unlink(missing_ok=True)
        run_fio(tmp_path / "job.fio")
        runs.append(offsets_of(tmp_path / "io.log"))
    assert runs[0] == runs[1] and len(set(runs[0])) > 1


# A random job of three loops over 16 blocks. fio's thread_main starts each
# loop with clear_io_state, whose td_fill_rand_seeds seeds the offsets again
# (libfio.c): with randrepeat=1 from the same seed, and with the random map
# emptied (fio_file_reset) every loop draws the first loop's offsets. The
# real fio 3.33 (2026-11-27): one order three times; with randrepeat=0 or
# norandommap=1 three different loops.
LOOPED = """[test]
ioengine=null
rw=randread
size=64k
bs=4k
loops=3
write_iolog=io.log
"""


def loops_of(offs: list[int]) -> list[list[int]]:
    assert len(offs) == 48, offs
    return [offs[i : i + 16] for i in range(0, 48, 16)]


@pytest.mark.parametrize(
    ("extra", "repeats"),
    [("", True), ("randrepeat=0\n", False), ("norandommap=1\n", False)],
)
def test_loops_repeat_their_offsets_as_fio_seeds_them(
    tmp_path: Path, extra: str, repeats: bool
) -> None:
    first, *rest = loops_of(run_log(tmp_path, LOOPED + extra))
    if repeats:
        assert rest == [first, first]
        assert sorted(first) == list(range(0, 65536, 4096)) and first != sorted(first)
    else:
        assert first not in rest and rest[0] != rest[1]


@need_fio
@pytest.mark.parametrize(
    ("extra", "repeats"),
    [("", True), ("randrepeat=0\n", False), ("norandommap=1\n", False)],
)
def test_the_real_fios_loops_repeat_their_offsets(
    tmp_path: Path, extra: str, repeats: bool
) -> None:
    (tmp_path / "job.fio").write_text(LOOPED + extra)
    run_fio(tmp_path / "job.fio")
    first, *rest = loops_of(offsets_of(tmp_path / "io.log"))
    # (Without repeats, two equal loops of 16 random draws would be a
    # chance below 1e-13 with the random map, and far less without it.)
    assert (rest == [first, first]) == repeats, (first, rest)


def test_write_iolog_adds_to_an_existing_file(tmp_path: Path) -> None:
    # iolog.c init_iolog_write opens write_iolog with "a".
    (tmp_path / "job.fio").write_text(SEEDED)
    (tmp_path / "io.log").write_text("kept\n")
    r = cli("run", "job.fio", "--device", "nullblk", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    lines = (tmp_path / "io.log").read_text().splitlines()
    assert lines[0] == "kept" and lines[1] == "fio version 3 iolog"
    assert len(lines) == 1 + 3 + 64 + 1


EXITALL = """[global]
ioengine=null
exitall
[short]
size=64k
[long]
size=100g
rate_iops=1000
runtime=3
[later]
stonewall
size=64k
"""


def test_exitall_ends_the_group_when_a_job_ends(tmp_path: Path) -> None:
    # backend.c: with exitall, a job's end terminates its group
    # (exit_what=group): 'long' stops after its first rate-limited I/O,
    # 'later' (the next group) runs whole.
    (tmp_path / "job.fio").write_text(EXITALL)
    doc = run_ours(tmp_path / "job.fio")
    assert ios(doc, "read") == [("short", 16, 65536), ("long", 1, 4096), ("later", 16, 65536)]


@need_fio
def test_exitall_matches_the_real_fio(tmp_path: Path) -> None:
    # The real 'long' is stopped within a few of its 1 ms rate slots (how
    # many depends on when the real processes notice: 0 to 5 seen on a
    # quiet machine; on a loaded one 'short' may start later), far below
    # the 3000 its runtime would give; the other jobs run whole.
    (tmp_path / "job.fio").write_text(EXITALL)
    ours = ios(run_ours(tmp_path / "job.fio"), "read")
    real = ios(run_fio(tmp_path / "job.fio"), "read")
    assert [ours[0], ours[2]] == [real[0], real[2]]
    assert real[1][1] < 1000 and ours[1][1] <= 1


def test_exit_what_all_stops_jobs_not_yet_started(tmp_path: Path) -> None:
    # TERMINATE_ALL: run_threads never starts a terminated job.
    (tmp_path / "job.fio").write_text(
        EXITALL.replace("[short]\n", "[short]\nexit_what=all\n").replace(
            "[later]\nstonewall\n", "[later]\nstartdelay=1\n"
        )
    )
    doc = run_ours(tmp_path / "job.fio")
    assert ios(doc, "read") == [("short", 16, 65536), ("long", 1, 4096), ("later", 0, 0)]


WAIT_FOR = """[global]
ioengine=null
size=64k
rate_iops=100
[a]
[b]
wait_for=a
"""


def test_wait_for_starts_the_job_when_its_waitee_ends(tmp_path: Path) -> None:
    # 16 I/Os at 100 IOPS take 150 ms; b starts when a has exited.
    (tmp_path / "job.fio").write_text(WAIT_FOR)
    assert run_ours(tmp_path / "job.fio")["timestamp_ms"] == 300
    (tmp_path / "job.fio").write_text(WAIT_FOR.replace("wait_for=a\n", ""))
    assert run_ours(tmp_path / "job.fio")["timestamp_ms"] == 150


@need_fio
def test_wait_for_makes_the_real_fio_wait_too(tmp_path: Path) -> None:
    (tmp_path / "job.fio").write_text(WAIT_FOR)
    r = subprocess.run(
        [FIO, "--debug=process", "job.fio"], cwd=tmp_path, capture_output=True, text=True
    )
    assert r.returncode == 0 and "b: waiting for a" in r.stdout + r.stderr


@pytest.mark.parametrize(
    "text,message",
    [
        ("[b]\nwait_for=a\n[a]\n", "b: waitee job a unknown."),
        ("[b]\nwait_for=b\n", "b: a job cannot wait for itself (wait_for=b)."),
    ],
)
def test_wait_for_refused_as_fio_refuses_it(tmp_path: Path, text: str, message: str) -> None:
    (tmp_path / "job.fio").write_text("[global]\nioengine=null\nsize=64k\n" + text)
    r = cli("run", "job.fio", "--device", "nullblk", cwd=tmp_path)
    assert r.returncode != 0 and message in r.stderr
    if FIO is not None:
        f = subprocess.run([FIO, "job.fio"], cwd=tmp_path, capture_output=True, text=True)
        assert f.returncode != 0 and message in f.stdout + f.stderr


LOG_NAMES = """[job]
ioengine=null
size=16k
write_bw_log=basic
write_lat_log
write_iops_log=x
[two]
ioengine=null
size=16k
write_bw_log=basic
"""


def test_log_names_follow_gen_log_name(tmp_path: Path) -> None:
    # init.c gen_log_name: "<name>_<type>.<job number>.log"; a bare option
    # takes the job's name.
    (tmp_path / "job.fio").write_text(LOG_NAMES)
    run_ours(tmp_path / "job.fio")
    assert sorted(logs_of(tmp_path)) == [
        "basic_bw.1.log",
        "basic_bw.2.log",
        "job_clat.1.log",
        "job_lat.1.log",
        "job_slat.1.log",
        "x_iops.1.log",
    ]


@need_fio
def test_log_names_match_the_real_fio(tmp_path: Path) -> None:
    ours, real = tmp_path / "ours", tmp_path / "real"
    for d in (ours, real):
        d.mkdir()
        (d / "job.fio").write_text(LOG_NAMES)
    run_ours(ours / "job.fio")
    run_fio(real / "job.fio")
    assert logs_of(ours) == logs_of(real)


# (extra job lines, I/Os fio 3.33 does): a sequential pass that reaches the
# end of its file ends the job unless time_based, io_size or loops ask for
# another (io_u.c get_next_seq_offset, backend.c keep_running).
END_OF_FILE = [
    ("filesize=64k\nsize=64k\noffset=32k\nrw=read", 8),
    ("filesize=64k\nio_size=64k\noffset=32k\nrw=read", 16),
    ("size=64k\nrw=read:8k", 6),
    ("size=64k\nrw=read:8k\nloops=2", 12),
    ("size=64k\nrw=read:4k", 16),
    ("size=64k\nrw=read\nio_size=100k", 25),
]


@pytest.mark.parametrize("extra,n", END_OF_FILE)
def test_a_sequential_job_stops_at_the_end_of_its_file(tmp_path: Path, extra: str, n: int) -> None:
    (tmp_path / "job.fio").write_text(f"[job]\nioengine=null\nbs=4k\n{extra}\n")
    assert ios(run_ours(tmp_path / "job.fio"), "read")[0][1] == n


@need_fio
@pytest.mark.parametrize("extra,n", END_OF_FILE)
def test_the_real_fio_stops_at_the_end_of_the_file_too(tmp_path: Path, extra: str, n: int) -> None:
    (tmp_path / "job.fio").write_text(f"[job]\nioengine=null\nbs=4k\n{extra}\n")
    assert ios(run_fio(tmp_path / "job.fio"), "read")[0][1] == n
