"""fio's per-job logs side by side with the real fio 3.33: the files it
names (init.c gen_log_name), the lines each holds, their columns
(iolog.c flush_samples: time, value, direction, block size, the offset
with log_offset, the priority) and the averaged windows of log_avg_msec.

What is compared exactly: file names, line counts where the I/O count is
fixed (number_ios), directions, sizes, offsets and priorities. Times and
latencies are the real machine's: the real fio sleeps and measures in
wall-clock time on a loaded 2-core machine, so its times are held within
margins stated with each test, and flashpath's to their closed forms."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conftest import cli, real_fio_json

FIO = shutil.which("fio")
need_fio = pytest.mark.skipif(FIO is None, reason="the real fio is not installed")

KINDS = ("lat", "clat", "slat", "bw", "iops")


def rows(path: Path) -> list[list[str]]:
    return [[f.strip() for f in line.split(",")] for line in path.read_text().splitlines()]


def logs(folder: Path) -> dict[str, list[list[str]]]:
    return {p.name: rows(p) for p in sorted(folder.glob("*.log"))}


def both(tmp_path: Path, job: str) -> tuple[dict[str, list[list[str]]], dict[str, list[list[str]]]]:
    """The logs the real fio and flashpath write for `job`, each in its own
    folder."""
    real, ours = tmp_path / "real", tmp_path / "ours"
    for d in (real, ours):
        d.mkdir()
        (d / "job.fio").write_text(job)
    real_fio_json(real)
    out = cli("run", "job.fio", "--device", "nullblk", "--output-format", "json", cwd=ours)
    assert out.returncode == 0, out.stderr
    return logs(real), logs(ours)


BARE = """[global]
ioengine=null
size=64m
bs=4k
number_ios=50
write_bw_log=basic
write_lat_log=basic
write_iops_log=basic
log_offset=1
{extra}
[j]
numjobs=2
"""


@need_fio
def test_bare_log_names_and_their_lines(tmp_path: Path) -> None:
    """write_bw_log=basic with two jobs: fio writes basic_bw.1.log and
    basic_bw.2.log (not _bw.1.log), and the same for lat, clat, slat and
    iops; each holds one line per I/O (50), direction 0, 4096 bytes, the
    offsets 0, 4096, ... in order, priority 0. The slat files are empty for
    the null engine in both."""
    real, ours = both(tmp_path, BARE.format(extra=""))
    want = {f"basic_{k}.{j}.log" for k in KINDS for j in (1, 2)}
    assert set(real) == set(ours) == want
    for name in want:
        assert len(ours[name]) == len(real[name]), name
        assert [r[2:] for r in ours[name]] == [r[2:] for r in real[name]], name
    assert [r[2:] for r in real["basic_lat.1.log"]] == [
        ["0", "4096", str(4096 * i), "0"] for i in range(50)
    ]


@need_fio
def test_per_job_logs_0_shares_one_file_per_kind(tmp_path: Path) -> None:
    """per_job_logs=0: one basic_<kind>.log without the job number, both
    jobs' lines in it, each job's added as it ends (fio's flush_log opens
    it with "a"): 100 lines, two runs of offsets 0 .. 49 x 4096. fio
    appends in the order its jobs exit, which the wall clock decides;
    flashpath in the jobs' order; the lines are the same either way."""
    real, ours = both(tmp_path, BARE.format(extra="per_job_logs=0"))
    want = {f"basic_{k}.log" for k in KINDS}
    assert set(real) == set(ours) == want
    one_job = [["0", "4096", str(4096 * i), "0"] for i in range(50)]
    for name in want - {"basic_slat.log"}:
        for logged in (real[name], ours[name]):
            assert [r[2:] for r in logged] == one_job + one_job, name
    assert real["basic_slat.log"] == ours["basic_slat.log"] == []


AVERAGED = """[j]
ioengine=null
size=64m
bs=4k
rate_iops=1000
runtime=1050ms
time_based
write_bw_log=w
write_lat_log=w
write_iops_log=w
log_avg_msec=100
"""


@need_fio
def test_log_avg_msec_windows_and_the_final_partial_one(tmp_path: Path) -> None:
    """log_avg_msec=100 over a 1050 ms run at 1000 IOPS. A latency log
    writes a window when a sample comes 100 ms or more after the window
    opened, and what is left at the job's end as a last, partial window
    (stat.c add_lat_sample, finalize_logs): flashpath's are exactly 100,
    200, ... 1000 and 1050 ms; the real fio's are 11 too, each within 50 ms
    after its multiple of 100 (its completions come when the wall clock
    lets them: up to 7 ms late at a load average of 12, more seen under the
    test suite) and the last at its runtime. Bandwidth and IOPS logs are
    written by the helper thread at each period and get no partial window
    at the end: 10 lines in flashpath (100 .. 1000 ms); the real fio's
    ticks start late by up to some tens of ms (129 ms seen), so it writes 9
    or 10. The values: 1000 IOPS and 4000 KiB/s per window in flashpath;
    the real fio's rate limiter lets I/Os more or fewer through a window
    when its sleeps overshoot (3,760 to 4,504 KiB/s seen at a load average
    of 12) and catches up in the next, so each of its windows is held
    within 25% and their mean within 5%."""
    real, ours = both(tmp_path, AVERAGED)
    for kind in ("lat", "clat"):
        name = f"w_{kind}.1.log"
        assert [int(r[0]) for r in ours[name]] == [*range(100, 1001, 100), 1050]
        times = [int(r[0]) for r in real[name]]
        assert len(times) == 11, times
        assert all(100 * (k + 1) <= t < 100 * (k + 1) + 50 for k, t in enumerate(times[:10]))
        assert 1050 <= times[-1] < 1150, times
        # Averaged entries carry size and offset 0 (no log_offset here).
        assert {tuple(r[2:]) for r in real[name]} == {tuple(r[2:]) for r in ours[name]}
    for kind, rate in (("bw", 4000), ("iops", 1000)):
        name = f"w_{kind}.1.log"
        assert [int(r[0]) for r in ours[name]] == list(range(100, 1001, 100))
        assert [int(r[1]) for r in ours[name]] == [rate] * 10
        assert 9 <= len(real[name]) <= 10, real[name]
        values = [int(r[1]) for r in real[name]]
        assert all(abs(v - rate) <= rate // 4 for v in values), values
        assert abs(sum(values) / len(values) - rate) <= rate / 20, values


PRIO = """[j]
ioengine={engine}
size=64m
bs=4k
number_ios=5
write_lat_log=w
write_bw_log=w
log_offset=1
log_prio=1
prio=3
{extra}
"""


@need_fio
@pytest.mark.parametrize("engine", ["null", "libaio"])
def test_log_prio_and_log_offset_columns(tmp_path: Path, engine: str) -> None:
    """log_prio=1 with prio=3: every line's last column is the I/O's ioprio
    as 0x%04x, class BE (2) << 13 | 3 = 0x4003, on every engine (io_u.c
    fill_io_u gives each io_u td->ioprio, the null engine's too); with
    log_offset the offsets 0 .. 16384 before it."""
    extra = "direct=1\nfilename=data\n" if engine == "libaio" else ""
    job = PRIO.format(engine=engine, extra=extra)
    if engine == "libaio":
        for d in ("real", "ours"):
            (tmp_path / d).mkdir()
            with (tmp_path / d / "data").open("wb") as f:
                f.truncate(64 << 20)
        real_dir, ours_dir = tmp_path / "real", tmp_path / "ours"
        for d in (real_dir, ours_dir):
            (d / "job.fio").write_text(job)
        real_fio_json(real_dir)
        out = cli("run", "job.fio", "--device", "nullblk", cwd=ours_dir)
        assert out.returncode == 0, out.stderr
        real, ours = logs(real_dir), logs(ours_dir)
    else:
        real, ours = both(tmp_path, job)
    want = [["0", "4096", str(4096 * i), "0x4003"] for i in range(5)]
    for name in ("w_lat.1.log", "w_clat.1.log", "w_bw.1.log"):
        assert [r[2:] for r in real[name]] == [r[2:] for r in ours[name]] == want, name


@need_fio
def test_log_unix_epoch_is_the_virtual_clocks(tmp_path: Path) -> None:
    """log_unix_epoch=1: the real fio writes ms since the Unix epoch (its
    job's wall-clock start plus the elapsed ms); flashpath's simulated host
    starts its clock at the epoch (docs/fio-options.md), so its times are
    the job's virtual start plus the elapsed ms, the same every run (a
    deterministic simulator cannot write today's date). Both keep the
    other columns."""
    import time

    job = PRIO.format(engine="null", extra="log_unix_epoch=1")
    before = int(time.time() * 1000)
    real, ours = both(tmp_path, job)
    after = int(time.time() * 1000)
    assert all(before <= int(r[0]) <= after for r in real["w_lat.1.log"])
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "job.fio").write_text(PRIO.format(engine="null", extra=""))
    out = cli("run", "job.fio", "--device", "nullblk", cwd=plain)
    assert out.returncode == 0, out.stderr
    relative = rows(plain / "w_lat.1.log")
    assert [r[1:] for r in ours["w_lat.1.log"]] == [r[1:] for r in relative]
    assert [r[2:] for r in ours["w_lat.1.log"]] == [r[2:] for r in real["w_lat.1.log"]]
    again = tmp_path / "again"
    again.mkdir()
    (again / "job.fio").write_text(job)
    out = cli("run", "job.fio", "--device", "nullblk", cwd=again)
    assert out.returncode == 0, out.stderr
    assert (again / "w_lat.1.log").read_text() == (tmp_path / "ours" / "w_lat.1.log").read_text()
