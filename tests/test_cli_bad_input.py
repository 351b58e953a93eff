"""Every command on bad command lines and files: one message, exit status
2, never a Python traceback (found by running each command on wrong types,
missing files, folders, empty and non-UTF-8 files and arguments)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import FIXTURES, cli

GOOD = "[j]\nioengine=psync\ndirect=1\nrw=read\nbs=4k\nsize=64k\n"
TRACE = str(FIXTURES / "traces" / "fio-iolog-randrw" / "trace.iolog")
BAD = b"x\xff"  # not UTF-8: Python hands it over as a lone surrogate


def cli_bytes(*args: str | bytes, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """The CLI with arguments as raw bytes, as a shell passes them."""
    r = subprocess.run(
        [sys.executable, "-m", "flashpath.cli", *args],
        capture_output=True,
        cwd=cwd,
        timeout=600,
    )
    return subprocess.CompletedProcess(
        r.args, r.returncode, r.stdout.decode(errors="replace"), r.stderr.decode()
    )


def one_message(r: subprocess.CompletedProcess[str]) -> str:
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert "Traceback" not in r.stderr and "panicked" not in r.stderr
    lines = r.stderr.splitlines()
    assert len(lines) == 1, r.stderr
    return lines[0]


@pytest.mark.parametrize(
    "args",
    [
        ["run", "job.fio", "--device", BAD],
        ["run", "job.fio", "--device", "nullblk", "--set", BAD + b"=1"],
        ["run", "job.fio", "--device", "nullblk", "--output-format", BAD],
        ["run", "job.fio", "--device", BAD, "--parse-only"],
        ["profile", "show", BAD],
        ["profile", "show", "nullblk", "--set", b"device.completion_nsec=1" + BAD],
        ["iozone", "--device", "nullblk", "--", b"-s" + BAD],
        ["iozone", "--device", BAD, "--", "-s", "1m", "-r", "4k", "-i", "0", "-t", "1"],
        ["dd", "if=/dev/sda", "count=1", "--device", BAD],
        ["dd", "if=/dev/sda", "count=1", "--device", "nullblk", "--set", BAD],
        ["replay", TRACE, "--device", "nullblk", "--ioengine", BAD],
        ["replay", TRACE, "--device", "nullblk", "--format", BAD],
        ["reproduce", BAD],
        ["bench", "--ios", "10", "--only", "whole model", "--set", BAD + b"=1"],
    ],
)
def test_undecodable_arguments_get_a_message(tmp_path: Path, args: list[str | bytes]) -> None:
    (tmp_path / "job.fio").write_text(GOOD)
    line = one_message(cli_bytes(*args, cwd=tmp_path))
    assert line.startswith("flashpath: error: "), line


@pytest.mark.parametrize(
    "args",
    [
        ["run", "job.fio", "--device", "nullblk"],
        ["dd", "if=/dev/sda", "count=1", "--device", "nullblk"],
        ["replay", TRACE, "--device", "nullblk"],
        ["iozone", "--device", "nullblk", "--", "-s", "1m", "-r", "4k", "-i", "0", "-t", "1"],
        ["reproduce", "io-poll"],
    ],
)
def test_seeds_are_64_bit(tmp_path: Path, args: list[str]) -> None:
    (tmp_path / "job.fio").write_text(GOOD)
    # Before iozone's own arguments, which follow "--".
    at = args.index("--") if "--" in args else len(args)
    r = cli(*args[:at], "--seed", str(2**64), *args[at:], cwd=tmp_path)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "'--seed': 18446744073709551616 is not in the range" in r.stderr


def test_the_largest_seed_runs(tmp_path: Path) -> None:
    (tmp_path / "job.fio").write_text(GOOD)
    r = cli("run", "job.fio", "--device", "nullblk", "--seed", str(2**64 - 1), cwd=tmp_path)
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("text", ["", "; nothing\n", "[global]\nrw=read\n"])
def test_a_file_without_jobs_is_refused_as_fio_refuses_it(tmp_path: Path, text: str) -> None:
    job = tmp_path / "job.fio"
    job.write_text(text)
    real = subprocess.run(["fio", str(job)], capture_output=True, text=True, timeout=60)
    assert real.returncode == 1 and "No job(s) defined" in real.stdout + real.stderr
    line = one_message(cli("run", str(job), "--device", "nullblk"))
    assert line.startswith(f"flashpath: error: {job}: No job(s) defined"), line
    # fio --parse-only accepts it (it checks less than a run), but
    # flashpath's --parse-only makes every check its run makes, so what
    # passes it runs: it refuses the file with the run's message.
    real = subprocess.run(["fio", "--parse-only", str(job)], capture_output=True, timeout=60)
    assert real.returncode == 0
    parse_only = one_message(cli("run", str(job), "--device", "nullblk", "--parse-only"))
    assert parse_only == line, parse_only


def test_control_characters_in_messages_are_escaped(tmp_path: Path) -> None:
    (tmp_path / "job.fio").write_text("[j]\nrw=re\x1b[31mad\n")
    line = one_message(cli("run", "job.fio", "--device", "nullblk", cwd=tmp_path))
    # The core escapes what it quotes (error.rs `escape`: `\u{1b}`), so the
    # value is still recognisable and the terminal is not coloured.
    assert "\x1b" not in line and "re\\u{1b}[31mad" in line, line


@pytest.mark.parametrize("name", ["a#b.iolog", "a;b.iolog", "a$b.iolog", "a\nb.iolog"])
def test_replay_refuses_a_trace_name_a_job_line_cannot_hold(tmp_path: Path, name: str) -> None:
    (tmp_path / name).write_bytes(Path(TRACE).read_bytes())
    line = one_message(cli("replay", name, "--device", "nullblk", cwd=tmp_path))
    assert "flashpath cannot name this trace in fio's read_iolog" in line, line


@pytest.mark.parametrize(
    "option,message",
    [
        (
            ["--ioengine", "libaio\nrw=write"],
            "--ioengine 'libaio\\nrw=write': not an ioengine name",
        ),
        (["--ioengine", "nope"], "--ioengine nope: engine nope not loadable"),
        (["--iodepth", str(2**32)], f"--iodepth {2**32}: failed parsing iodepth={2**32}: "),
    ],
)
def test_replay_messages_name_the_option(option: list[str], message: str) -> None:
    line = one_message(cli("replay", TRACE, "--device", "nullblk", *option))
    assert line.startswith(f"flashpath: error: {message}"), line


def test_replay_of_a_folder_or_missing_trace(tmp_path: Path) -> None:
    missing = str(tmp_path / "nope.iolog")
    line = one_message(cli("replay", missing, "--device", "nullblk"))
    assert line == f"flashpath: error: {missing}: no such trace file", line
    # A folder: click's usage error, naming it.
    r = cli("replay", str(tmp_path), "--device", "nullblk")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert f"Invalid value for 'TRACE': File '{tmp_path}' is a directory." in r.stderr


@pytest.mark.parametrize("ios", ["0", "-1", str(2**63)])
def test_bench_needs_a_count_of_ios(ios: str) -> None:
    r = cli("bench", "--ios", ios, "--only", "qd1 psync")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "Invalid value for '--ios'" in r.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--only", "no such workload"], "--only 'no such workload': no workload's name contains"),
        (
            ["--only", "qd1 psync", "--set", "device.completion_nsec=1"],
            "--set: applies to the ufs21-64g workloads, and --only chose none of them",
        ),
    ],
)
def test_bench_refuses_a_filter_or_override_that_does_nothing(
    args: list[str], message: str
) -> None:
    """Before: exit 0 with no workload run, or the override silently unused."""
    r = cli("bench", "--ios", "10", *args)
    line = one_message(r)
    assert line.startswith("flashpath: error: ") and message in line, line
    assert r.stdout == ""


def test_a_non_utf8_job_file_name_runs(tmp_path: Path) -> None:
    name = os.fsdecode(b"j\xff.fio")
    (tmp_path / name).write_text(GOOD)
    r = cli_bytes(
        "run", b"j\xff.fio", "--device", "nullblk", "--output-format", "terse", cwd=tmp_path
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("3;fio-3.33;j;")
