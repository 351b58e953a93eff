"""Jobs given on the command line, as fio 3.33 takes them (init.c
parse_cmd_line): options before the first --name are global, each --name
starts a job, and the JSON lists a job's `name` among its options."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import cli

FIO = shutil.which("fio")
need_fio = pytest.mark.skipif(FIO is None, reason="the real fio is not installed")

ARGS = ["--ioengine=null", "--size=1m", "--name=a", "--name=b", "--rw=randread", "--bs=8k"]


def summary(doc: dict) -> tuple:  # type: ignore[type-arg]
    return (
        doc["global options"],
        [
            (j["jobname"], j["job options"], j["read"]["total_ios"], j["read"]["io_bytes"])
            for j in doc["jobs"]
        ],
    )


def ours(tmp_path: Path) -> dict:  # type: ignore[type-arg]
    r = cli("run", "--device", "nullblk", "--output-format", "json", *ARGS, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_command_line_jobs_run_with_global_options_first(tmp_path: Path) -> None:
    g, jobs = summary(ours(tmp_path))
    assert g == {"ioengine": "null", "size": "1m"}
    # a: 1 MiB of 4 KiB reads; b: 1 MiB of 8 KiB random reads.
    assert jobs == [
        ("a", {"name": "a"}, 256, 1 << 20),
        ("b", {"name": "b", "rw": "randread", "bs": "8k"}, 128, 1 << 20),
    ]


@need_fio
def test_command_line_jobs_match_the_real_fio(tmp_path: Path) -> None:
    assert FIO is not None
    r = subprocess.run(
        [FIO, "--output-format=json", *ARGS],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    # fio 3.33 prints the first job's line before the JSON here.
    real = json.loads(r.stdout[r.stdout.index("{") :])
    assert summary(real) == summary(ours(tmp_path))


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--name=a", "--ioengine=null", "--size=1m", "--bs=foo"], "--bs=foo"),
        (["--ioengine=null", "--size=1m"], "no job defined"),
        (["--name=a", "--ioengine=null", "stray"], "stray"),
        ([], "Missing argument"),
    ],
)
def test_bad_command_line_jobs_are_named(tmp_path: Path, args: list[str], message: str) -> None:
    r = cli("run", "--device", "nullblk", *args, cwd=tmp_path)
    assert r.returncode != 0
    assert message in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert r.stdout == ""
