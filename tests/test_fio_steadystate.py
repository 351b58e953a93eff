"""fio's steady-state detection (`steadystate=`/`ss`, `ss_dur`, `ss_ramp`;
fio 3.33 steadystate.c): once a second fio takes each job's IOPS and
bandwidth over the last second; once `ss_dur` seconds are in, it checks the
least-squares slope (`*_slope`) or the largest deviation from the mean of
the window against the limit (a `%` limit relative to the mean) and ends the
job (its group with group_reporting) when the criterion is below it. The
JSON's "steadystate" object carries the window (stat.c).

The headline use: a fresh flash device whose random-write IOPS falls once
garbage collection starts, run until its IOPS is steady.

Checked against the real fio 3.33 where it runs here (a rate-limited null
job): the report's keys, the criterion text, the attained flag and the
window exactly; the job's runtime with a margin (see the test).
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

# A small MQSim-like SSD (8 planes of 128 blocks, 2 GiB of NAND, a 16 MiB
# write cache, GC below 4 free blocks a plane): random writes run at the
# cache's and the NAND's full rate until the free blocks run out, then GC
# copies valid pages and IOPS falls.
SMALL_SSD = (
    "device.flash.channels=2",
    "device.flash.chips_per_channel=2",
    "device.flash.dies_per_chip=1",
    "device.flash.planes_per_die=2",
    "device.flash.blocks_per_plane=128",
    "device.flash.write_buffer_units=4096",
    "device.flash.gc_low_free_blocks=4",
    "device.flash.gc_high_free_blocks=5",
    "device.flash.over_provisioning=0.12",
)


def run_ours(folder: Path, text: str, device: str = "nullblk", sets: tuple[str, ...] = ()) -> dict:  # type: ignore[type-arg]
    (folder / "job.fio").write_text(text)
    args = ["run", "job.fio", "--device", device, "--output-format", "json"]
    for s in sets:
        args += ["--set", s]
    r = cli(*args, cwd=folder)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)  # type: ignore[no-any-return]


def slope_pct(y: list[int]) -> float:
    """The least-squares slope of y over x = 0..n-1, in percent of y's mean
    (steadystate.c steadystate_slope with FIO_SS_PCT)."""
    n = len(y)
    sx, sxx = n * (n - 1) / 2, (n - 1) * n * (2 * n - 1) / 6
    sy, sxy = sum(y), sum(i * v for i, v in enumerate(y))
    slope = (sxy - sx * sy / n) / (sxx - sx * sx / n)
    return 100.0 * slope / (sy / n)


GC_JOB = """[gc]
ioengine=libaio
direct=1
iodepth=32
bs=4k
rw=randwrite
filename=/dev/nvme0n1
time_based
runtime=600
write_iops_log=gc
log_avg_msec=1000
ss=iops_slope:{limit}%
ss_dur=20
ss_ramp=5
"""


def test_a_fresh_ssd_reaches_steady_state_after_gc_starts(tmp_path: Path) -> None:
    doc = run_ours(tmp_path, GC_JOB.format(limit=1), "mqsim-default", SMALL_SSD)
    job = doc["jobs"][0]
    ss = job["steadystate"]
    assert ss["ss"] == "iops_slope:1.000000%"
    assert ss["duration"] == 20
    assert ss["attained"] == 1
    iops = ss["data"]["iops"]
    assert len(iops) == 20 == len(ss["data"]["bw"])
    # Ended on the criterion, long before its runtime, and not before
    # ss_ramp + 1 s + the 20 s window.
    assert 26_000 <= job["job_runtime"] < 600_000
    # The criterion is the window's least-squares slope in % of its mean,
    # below the limit; bw is iops x 4 KiB, second by second.
    assert ss["criterion"] == f"{slope_pct(iops):.6f}%"
    assert abs(slope_pct(iops)) < 1.0
    assert ss["data"]["bw"] == [4096 * v for v in iops]
    assert ss["data"]["iops_mean"] == sum(iops) // 20
    # The steady IOPS is GC's: well below the fresh device's first second.
    first = int((tmp_path / "gc_iops.1.log").read_text().splitlines()[0].split(",")[1])
    assert ss["data"]["iops_mean"] < first / 3


def test_a_limit_never_met_runs_to_the_end_with_the_last_window(tmp_path: Path) -> None:
    # |slope| < 0 never holds: the job runs its runtime, attained=0, and the
    # window holds its last ss_dur seconds, oldest first (stat.c prints
    # from the slot before head once the ring is full).
    text = (
        "[j]\nioengine=null\nsize=1g\nbs=4k\nrw=randread\ntime_based\nruntime=9\n"
        "rate_iops=1000\nss=iops_slope:0%\nss_dur=3\n"
    )
    job = run_ours(tmp_path, text)["jobs"][0]
    ss = job["steadystate"]
    assert ss["attained"] == 0
    assert job["job_runtime"] == 9000
    assert ss["data"]["iops"] == [1000, 1000, 1000]


def test_deviation_criterion_and_bandwidth_limit(tmp_path: Path) -> None:
    # bw:N: the largest distance of a second's bytes/s from the window's
    # mean, in bytes/s. A paced job is flat: it is met once the window is
    # full (3 s after the start, no ramp).
    text = (
        "[j]\nioengine=null\nsize=1g\nbs=4k\nrw=randread\ntime_based\nruntime=9\n"
        "rate_iops=1000\nss=bw:10000\nss_dur=3\n"
    )
    job = run_ours(tmp_path, text)["jobs"][0]
    ss = job["steadystate"]
    assert (ss["ss"], ss["attained"], job["job_runtime"]) == ("bw:10000.000000", 1, 3000)
    assert ss["criterion"] == "0.000000"
    assert ss["data"]["bw"] == [4096000] * 3


def test_group_reporting_ends_the_whole_group(tmp_path: Path) -> None:
    # steadystate_check sums the group's jobs; the group's last job holds
    # the window; attained, fio terminates every job of the group.
    text = (
        "[global]\nioengine=null\nsize=1g\nbs=4k\nrw=randread\ntime_based\nruntime=20\n"
        "group_reporting\nss=iops:5%\nss_dur=4\nss_ramp=2\n"
        "[a]\nrate_iops=1000\n[b]\nrate_iops=3000\n"
    )
    doc = run_ours(tmp_path, text)
    assert len(doc["jobs"]) == 1
    job = doc["jobs"][0]
    ss = job["steadystate"]
    assert ss["attained"] == 1
    assert ss["data"]["iops"] == [4000] * 4
    # First sample at the tick after ss_ramp + 1 s (4 s), the 4th at 7 s;
    # a group's job_runtime is its members' summed (stat.c total_run_time).
    assert job["job_runtime"] == 2 * 7000
    assert job["read"]["total_ios"] == 7 * 4000


def test_normal_output_line(tmp_path: Path) -> None:
    (tmp_path / "job.fio").write_text(
        "[j]\nioengine=null\nsize=1g\nbs=4k\nrw=randread\ntime_based\nruntime=9\n"
        "rate_iops=1000\nss=iops_slope:50%\nss_dur=3\n"
    )
    r = cli("run", "job.fio", "--device", "nullblk", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert (
        "  steadystate  : attained=yes, bw=4000KiB/s (4000kB/s), iops=1000, iops slope=0.000%\n"
        in r.stdout
    )


@need_fio
@pytest.mark.parametrize("ramp", [0, 1])
def test_matches_the_real_fio(tmp_path: Path, ramp: int) -> None:
    """The same job under the real fio: the same keys, criterion label,
    attained flag and window length. The runtime: ours is exact (samples
    at 1..3 s after ss_ramp + 1 s); fio's helper thread wakes on wall-clock
    ticks that slip on a loaded machine, so its runtime only has to fall
    within two ticks of ours (2880 ms and 4944 ms on this machine idle)."""
    text = (
        "[j]\nioengine=null\nsize=1g\nbs=4k\nrw=randread\ntime_based\nruntime=12\n"
        f"rate_iops=1000\nss=iops_slope:50%\nss_dur=3\nss_ramp={ramp}\n"
    )
    (tmp_path / "job.fio").write_text(text)
    assert FIO is not None
    real = subprocess.run(
        [FIO, "--output-format=json", "job.fio"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert real.returncode == 0, real.stderr
    rj = json.loads(real.stdout)["jobs"][0]
    oj = run_ours(tmp_path, text)["jobs"][0]
    rs, os_ = rj["steadystate"], oj["steadystate"]
    assert list(os_) == list(rs)
    assert list(os_["data"]) == list(rs["data"])
    assert (os_["ss"], os_["duration"], os_["attained"]) == (rs["ss"], rs["duration"], 1)
    assert len(os_["data"]["iops"]) == len(rs["data"]["iops"]) == 3
    assert oj["job_runtime"] == 1000 * (3 + ramp + (1 if ramp else 0))
    assert abs(rj["job_runtime"] - oj["job_runtime"]) <= 2000
    # Both paced at 1000 IOPS: every sample within 1% of it.
    for v in rs["data"]["iops"] + os_["data"]["iops"]:
        assert abs(v - 1000) <= 10


def test_the_json_reader_names_the_steady_state_figures(tmp_path: Path) -> None:
    # fiojson reads the section into the metric namespace (docs/fio-json.md).
    text = (
        "[j]\nioengine=null\nsize=1g\nbs=4k\nrw=randread\ntime_based\nruntime=9\n"
        "rate_iops=1000\nss=iops_slope:50%\nss_dur=3\n"
    )
    doc = run_ours(tmp_path, text)
    m = fiojson.read(doc).jobs[0].metrics()
    assert {k: v for k, v in m.items() if k.startswith("steadystate.")} == {
        "steadystate.attained": 1.0,
        "steadystate.duration": 3.0,
        "steadystate.iops_mean": 1000.0,
        "steadystate.bw_mean": 4096000.0,
        "steadystate.criterion": 0.0,
    }
    page = (Path(__file__).parent.parent / "docs" / "fio-json.md").read_text()
    for k in m:
        if k.startswith("steadystate."):
            assert f"`{k}`" in page
    doc["jobs"][0]["steadystate"]["criterion"] = "n/a"
    with pytest.raises(fiojson.FioJsonError, match="steadystate.criterion"):
        fiojson.read(doc, "x.json").jobs[0].metrics()


@need_fio
def test_the_json_reader_reads_the_real_fios_section(tmp_path: Path) -> None:
    # A job that cannot attain (limit 0): fio prints a signed criterion.
    (tmp_path / "job.fio").write_text(
        "[j]\nioengine=null\nsize=1g\nbs=4k\nrw=randread\ntime_based\nruntime=3\n"
        "rate_iops=1000\nss=iops_slope:0%\nss_dur=2\n"
    )
    assert FIO is not None
    real = subprocess.run(
        [FIO, "--output-format=json", "job.fio"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert real.returncode == 0, real.stderr
    m = fiojson.read(json.loads(real.stdout)).jobs[0].metrics()
    assert m["steadystate.attained"] == 0.0
    assert m["steadystate.duration"] == 2.0
    assert abs(m["steadystate.iops_mean"] - 1000) <= 20
