"""The devfreq-qos scenario (seed 3) from the installed package."""

from __future__ import annotations

import csv
import io
import json
import re
import shutil
import subprocess

from flashpath import reproduce as rp
from flashpath import run


def test_devfreq_qos_grid_csv_and_direction(tmp_path):
    rows = rp.reproduce("devfreq-qos")
    out = list(csv.reader(io.StringIO(rp.to_csv(rows))))
    assert out[0] == ["scenario", "case", "metric", "mode", "simulated", "published"]
    body = out[1:]
    # 2 cases x 4 metrics x 2 modes, held-out rows included.
    assert len(body) == 16
    keys = {(r[1], r[2], r[3]) for r in body}
    for case in ("case=1", "case=2"):
        for metric in ("clat_min_us", "clat_max_us", "clat_avg_us", "bandwidth_MBps"):
            for mode in ("enabled", "disabled"):
                assert (case, metric, mode) in keys
    assert all(r[5] == "" for r in body if r[1] == "case=2")
    sim = {(r.case, r.metric, r.mode): r.simulated for r in rows}
    # The knob lowers case 1's latency (the seed's direction); the minimum
    # is calibrated (profile ufs41-snapdragon), so it must sit within 25%.
    assert sim[("case=1", "clat_avg_us", "enabled")] < sim[("case=1", "clat_avg_us", "disabled")]
    for r in rows:
        if r.case == "case=1" and r.metric == "clat_min_us":
            assert abs(r.simulated - r.published) / r.published <= 0.25, r
    # rate=10ms is 10 MiB/s per job (fio's size parser); the row is fio's
    # per-job figure, not the five jobs' group line.
    assert abs(sim[("case=1", "bandwidth_MBps", "enabled")] - 10 * 2**20 / 1e6) < 0.1
    plot = tmp_path / "devfreq-qos.png"
    rp.PLOTTERS["devfreq-qos"](rows, str(plot))
    assert plot.stat().st_size > 0


# Two rate-capped jobs that never overlap (the seed's startdelay layout).
TWO_JOBS = """
[global]
ioengine=null
rw=randread
bs=64k
size=1G
time_based
runtime=2
rate=10m
[job1]
startdelay=0
[job2]
startdelay=3
"""


def test_per_job_bandwidth_is_fios_read_line(tmp_path):
    """The scenario's bandwidth row reads fio's per-job "BW=" figure: the
    real fio prints each job's own rate on its read line and the group's
    bytes over the longest job runtime on the group line, which for jobs
    run one after another is their count times one job's rate."""
    fio = shutil.which("fio")
    assert fio, "the real fio (Debian's fio package) is needed: apt-get install fio"
    job = tmp_path / "two.fio"
    job.write_text(TWO_JOBS)
    out = subprocess.run(
        [fio, "--output-format=json,normal", str(job)],
        capture_output=True, text=True, check=True, cwd=tmp_path,
    ).stdout
    doc = json.loads(out[out.index("{"): out.rindex("}") + 1])
    per_job = [float(m) for m in re.findall(r"read: IOPS=\S+ BW=[^(]*\(([\d.]+)MB/s\)", out)]
    group = float(re.search(r"READ: bw=[^(]*\(([\d.]+)MB/s\)", out).group(1))
    assert len(per_job) == 2
    mean = rp.extract(doc, "read.job_bw_MBps")
    # fio prints three significant figures.
    for shown in per_job:
        assert abs(shown - mean) / mean < 0.01
    assert abs(group - rp.extract(doc, "read.bw_MBps")) / group < 0.01
    assert abs(group - 2 * mean) / group < 0.02
    # The simulator's own run of the same job reports the same shape.
    sim = run(TWO_JOBS, device="nullblk").fio_json()
    assert abs(rp.extract(sim, "read.job_bw_MBps") - mean) / mean < 0.01
    assert abs(rp.extract(sim, "read.bw_MBps") - 2 * mean) / mean < 0.02
