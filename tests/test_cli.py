"""The command line on good input: a real simulation, fio's formats,
determinism, the Python API."""

from __future__ import annotations

import json
import re
from pathlib import Path

import flashpath
from conftest import cli

JOB = """[global]
ioengine=libaio
direct=1
[rr]
rw=randread
bs=4k
iodepth=8
size=64m
"""


def write_job(tmp_path: Path, text: str = JOB) -> Path:
    p = tmp_path / "job.fio"
    p.write_text(text)
    return p


def test_run_prints_fio_normal_output(tmp_path: Path) -> None:
    r = cli("run", str(write_job(tmp_path)), "--device", "nullblk")
    assert r.returncode == 0, r.stderr
    assert "rr: (g=0): rw=randread" in r.stdout
    assert "read: IOPS=" in r.stdout
    assert "Run status group 0 (all jobs):" in r.stdout


def test_bytes_read_equal_bytes_asked(tmp_path: Path) -> None:
    r = cli("run", str(write_job(tmp_path)), "--device", "nullblk", "--output-format", "json")
    doc = json.loads(r.stdout)
    assert doc["jobs"][0]["read"]["io_bytes"] == 64 * 2**20
    assert doc["jobs"][0]["read"]["total_ios"] == 64 * 2**20 // 4096


def test_same_seed_byte_identical_output(tmp_path: Path) -> None:
    job = str(write_job(tmp_path))
    outs = [
        cli(
            "run",
            job,
            "--device",
            "nullblk",
            "--output-format",
            "json+,terse,normal",
            "--seed",
            "7",
        ).stdout
        for _ in range(2)
    ]
    assert outs[0] == outs[1]
    assert outs[0]


def test_override_changes_the_device_latency(tmp_path: Path) -> None:
    job = write_job(tmp_path, JOB.replace("iodepth=8", "iodepth=1").replace("libaio", "psync"))
    base = flashpath.run(job, device="nullblk")
    slow = flashpath.run(job, device="nullblk", overrides={"device.completion_nsec": "50us"})
    b = base.fio_json()["jobs"][0]["read"]["clat_ns"]["mean"]
    s = slow.fio_json()["jobs"][0]["read"]["clat_ns"]["mean"]
    # Exactly 40 us more per I/O: the device is the only thing that changed.
    assert abs((s - b) - 40_000) < 1e-6


def test_python_api_breakdown_and_pandas(tmp_path: Path) -> None:
    res = flashpath.run(JOB, device="nullblk")
    br = res.breakdown()
    assert br["device"] == 10_000
    df = res.to_pandas()
    assert list(df["ddir"]) == ["read"]
    assert int(df["total_ios"][0]) == 16384


def test_output_file_and_parse_only(tmp_path: Path) -> None:
    job = write_job(tmp_path)
    out = tmp_path / "o.json"
    r = cli("run", str(job), "--device", "nullblk", "--output-format", "json", "--output", str(out))
    assert r.returncode == 0 and r.stdout == ""
    assert json.loads(out.read_text())["fio version"] == "fio-3.33"
    r = cli("run", str(job), "--device", "nullblk", "--parse-only")
    assert r.returncode == 0 and r.stdout == ""


def test_profiles_listed_and_shown() -> None:
    r = cli("profiles")
    assert "nullblk" in r.stdout
    r = cli("profile", "show", "nullblk")
    assert "device.completion_nsec" in r.stdout and "source:" in r.stdout


def test_ignored_option_is_listed_where_users_look_not_on_stderr(tmp_path: Path) -> None:
    """fio prints nothing for an option flashpath ignores: the run's stderr
    stays clean; --parse-only and the JSON's flashpath section list it."""
    # (write_hist_log was the example until flashpath wrote its log.)
    job = write_job(tmp_path, JOB + "log_store_compressed=1\n")
    r = cli("run", str(job), "--device", "nullblk", "--output-format", "json")
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""
    listed = json.loads(r.stdout)["flashpath"]["ignored_options"]
    assert any("log_store_compressed" in x and "job.fio:" in x for x in listed), listed
    p = cli("run", "--parse-only", str(job), "--device", "nullblk")
    assert p.returncode == 0
    assert "log_store_compressed" in p.stderr and "job.fio:" in p.stderr


def test_bench_runs_the_hpb_workload_and_takes_ufs_overrides() -> None:
    r = cli("bench", "--ios", "3000", "--only", "HPB on")
    assert r.returncode == 0, r.stderr
    lines = [x for x in r.stdout.splitlines() if "I/Os" in x]
    assert len(lines) == 1 and "HPB on" in lines[0]
    assert re.search(r"\b3000 I/Os\b", lines[0]), lines[0]
    bad = cli("bench", "--ios", "100", "--only", "whole model", "--set", "ufs.hpb.nope=1")
    assert bad.returncode != 0
    assert "ufs.hpb.nope" in bad.stderr


def test_bench_runs_the_nvme_flash_workload() -> None:
    r = cli("bench", "--ios", "3000", "--only", "NVMe flash")
    assert r.returncode == 0, r.stderr
    lines = [x for x in r.stdout.splitlines() if "I/Os" in x]
    assert len(lines) == 1 and lines[0].startswith("mqsim-default"), lines
    assert re.search(r"\b3000 I/Os\b", lines[0]), lines[0]
