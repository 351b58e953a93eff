"""Bad input of every kind: one clear message naming the file, the line
where there is one, and what is wrong; a non-zero exit; never a
traceback or a panic."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import cli

GOOD = "[j]\nioengine=psync\ndirect=1\nrw=read\nsize=1m\n"

# (name, job text, extra args, what the message must contain)
CASES = [
    ("unknown option", "[j]\nioengine=psync\ndirect=1\nbz=4k\nsize=1m\n", [], ["job.fio:4", "bz"]),
    (
        "bad value",
        "[j]\nioengine=psync\ndirect=1\nrw=sideways\nsize=1m\n",
        [],
        ["job.fio:4", "sideways"],
    ),
    ("option before section", "rw=read\n[j]\nsize=1m\n", [], ["job.fio:1"]),
    (
        "unmodelled option",
        "[j]\nioengine=psync\ndirect=1\nsize=1m\nexec_prerun=ls\n",
        [],
        ["job.fio:5", "exec_prerun"],
    ),
    (
        # fio 3.33 crashes on it (a segmentation fault).
        "a merge without traces",
        "[j]\nioengine=psync\ndirect=1\nsize=1m\nmerge_blktrace_file=x.log\n",
        [],
        ["job.fio:1", "merge_blktrace_file needs read_iolog"],
    ),
    (
        "size=N% of a file fio would create (checked when jobs are set up)",
        "[j]\nioengine=psync\ndirect=1\nfilesize=1m\nsize=20%\n",
        [],
        ["job.fio:1", "size=N% with filesize= is not modelled"],
    ),
    (
        "missing iolog",
        "[j]\nioengine=libaio\ndirect=1\nread_iolog=nothere.iolog\n",
        [],
        ["job.fio:1", "read_iolog=nothere.iolog", "cannot read"],
    ),
    (
        "iolog with time_based",
        "[j]\nioengine=libaio\ndirect=1\nread_iolog=nothere.iolog\ntime_based\nruntime=1\n",
        [],
        ["job.fio:1", "time_based with read_iolog"],
    ),
    (
        "buffered io_uring with several calls in flight",
        "[j]\nioengine=io_uring\nrw=read\nsize=1m\niodepth=4\n",
        [],
        ["job.fio:1", "io_uring with buffered I/O", "iodepth > 1"],
    ),
    ("no size", "[j]\nioengine=psync\ndirect=1\nrw=read\n", [], ["job.fio:1", "size"]),
    (
        "unknown engine",
        "[j]\nioengine=spdk_nope\ndirect=1\nsize=1m\n",
        [],
        ["job.fio:2", "spdk_nope"],
    ),
    ("unknown profile", GOOD, ["--device", "nulblk"], ["nulblk", "did you mean 'nullblk'"]),
    ("override typo", GOOD, ["--set", "device.completion_nsce=1"], ["--set", "completion_nsec"]),
    ("override bad unit", GOOD, ["--set", "device.completion_nsec=4KiB"], ["--set", "KiB"]),
    ("override not key=value", GOOD, ["--set", "device.completion_nsec"], ["--set", "key=value"]),
    ("bad output format", GOOD, ["--output-format", "jsonn"], ["jsonn"]),
    (
        # The real fio on kernel 6.18 ends this job with err=95
        # (fixtures/fio/real-runs/iouring-hipri).
        "hipri without a poll queue",
        "[j]\nioengine=io_uring\nhipri\ndirect=1\nrw=randread\nsize=1m\n",
        ["--set", "block.io_poll=0"],
        ["job.fio:1", "EOPNOTSUPP", "err=95"],
    ),
    (
        "too big for the device",
        "[j]\nioengine=psync\ndirect=1\nsize=900g\n",
        [],
        ["job.fio:1", "device has"],
    ),
]


@pytest.mark.parametrize("name,text,extra,needles", CASES, ids=[c[0] for c in CASES])
def test_bad_job_and_options(
    tmp_path: Path, name: str, text: str, extra: list[str], needles: list[str]
) -> None:
    job = tmp_path / "job.fio"
    job.write_text(text)
    args = ["run", str(job)]
    if "--device" not in extra:
        args += ["--device", "nullblk"]
    r = cli(*args, *extra)
    assert r.returncode != 0, f"{name}: accepted\n{r.stdout}"
    assert "Traceback" not in r.stderr and "panicked" not in r.stderr
    assert r.stdout == ""
    for needle in needles:
        assert needle in r.stderr, f"{name}: {needle!r} not in {r.stderr!r}"


PROFILE_CASES = [
    (
        "missing source",
        '[device]\nkind = { value = "null_blk", unit = "name" }\n',
        ["p.toml:2", "source"],
    ),
    ("bad toml", "[device\n", ["p.toml:1", "TOML"]),
    ("unknown unit", '[device]\nx = { value = 1, unit = "parsecs", source = "a" }\n', ["parsecs"]),
    (
        "unused parameter",
        '[profile]\ninclude = ["nullblk"]\n[device]\n'
        'completion_nsecs = { value = 1, unit = "ns", source = "a" }\n',
        ["completion_nsecs", "did you mean"],
    ),
    (
        "missing parameter",
        '[profile]\ninclude = ["hosts/x86-generic"]\n[device]\n'
        'kind = { value = "null_blk", unit = "name", source = "a" }\n',
        ["lacks the parameter"],
    ),
]


@pytest.mark.parametrize("name,text,needles", PROFILE_CASES, ids=[c[0] for c in PROFILE_CASES])
def test_bad_profiles(tmp_path: Path, name: str, text: str, needles: list[str]) -> None:
    prof = tmp_path / "p.toml"
    prof.write_text(text)
    job = tmp_path / "job.fio"
    job.write_text(GOOD)
    r = cli("run", str(job), "--device", str(prof))
    assert r.returncode != 0, f"{name}: accepted"
    assert "Traceback" not in r.stderr
    for needle in needles:
        assert needle in r.stderr, f"{name}: {needle!r} not in {r.stderr!r}"


@pytest.mark.parametrize(
    "args,needle",
    [
        (["run", "nope.fio", "--device", "nullblk"], "nope.fio"),
        (["run"], "Missing argument"),
        (["frobnicate"], "No such command"),
        (["run", "x.fio", "--seed", "-3", "--device", "nullblk"], "seed"),
    ],
)
def test_bad_command_lines(args: list[str], needle: str) -> None:
    r = cli(*args)
    assert r.returncode != 0
    assert "Traceback" not in r.stderr
    assert needle in r.stderr


@pytest.mark.parametrize("name", ["some/path", "io_poll", "a\x01b"])
def test_unknown_scenario_is_one_message(name: str) -> None:
    r = cli("reproduce", name)
    assert r.returncode == 2 and r.stdout == ""
    [line] = r.stderr.splitlines()
    assert line.startswith("flashpath: error: reproduce: no scenario named '"), line
    # Not a Python tuple's repr; the shipped names to choose from.
    assert "('" not in line and "None" not in line
    assert line.endswith("(scenarios: devfreq-qos, hpb, io-poll, swcmdq, swiotlb, all)")
    assert "\x01" not in line


GOOD_LOGGED = "[j]\nioengine=psync\ndirect=1\nrw=read\nbs=4k\nsize=64k\n"


@pytest.mark.parametrize(
    "option,message",
    [
        (
            "write_iolog=nodir/x.log",
            "job.fio:1: job 'j': write_iolog=nodir/x.log: cannot write 'nodir/x.log': "
            "No such file or directory",
        ),
        (
            "write_lat_log=afile/lat",
            "job.fio:1: job 'j': write_lat_log=afile/lat: cannot write 'afile/lat_lat.1.log': "
            "Not a directory",
        ),
        (
            "write_iolog=adir",
            "job.fio:1: job 'j': write_iolog=adir: cannot write 'adir': Is a directory",
        ),
    ],
)
def test_unwritable_log_is_one_message(tmp_path: Path, option: str, message: str) -> None:
    (tmp_path / "afile").write_text("")
    (tmp_path / "adir").mkdir()
    (tmp_path / "job.fio").write_text(GOOD_LOGGED + option + "\n")
    r = cli("run", "job.fio", "--device", "nullblk", cwd=tmp_path)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr == f"flashpath: error: {message}\n"


@pytest.mark.parametrize("target", ["nodir/out.txt", "afile/out.txt"])
def test_unwritable_output_is_one_message(tmp_path: Path, target: str) -> None:
    (tmp_path / "afile").write_text("")
    (tmp_path / "job.fio").write_text(GOOD_LOGGED)
    r = cli("run", "job.fio", "--device", "nullblk", "--output", target, cwd=tmp_path)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.startswith(f"flashpath: error: --output: cannot write '{target}': ")
    assert len(r.stderr.splitlines()) == 1


@pytest.mark.parametrize(
    "target,needle",
    [
        ("nodir/p.png", "--plot: cannot write 'nodir/p.png': No such file or directory"),
        ("p.xyz", "--plot: matplotlib cannot write '.xyz' images (it writes "),
    ],
)
def test_unwritable_plot_is_refused_before_the_grid_runs(
    tmp_path: Path, target: str, needle: str
) -> None:
    r = cli("reproduce", "io-poll", "--plot", target, cwd=tmp_path)
    assert r.returncode == 2
    # Refused before the grid: no table on stdout.
    assert r.stdout == ""
    [line] = r.stderr.splitlines()
    assert line.startswith(f"flashpath: error: {needle}"), line
