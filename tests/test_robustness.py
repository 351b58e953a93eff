"""Issue 31, the Python surfaces: no input or device file is ever
overwritten, every figure read from a run file, spec or table is checked,
and every bad input is one message with exit status 2. Each test that
hands the CLI files checks their hashes afterwards."""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import stat
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from conftest import FIXTURES, cli
from flashpath import _core, api, calibrate, outputs
from flashpath._core import FlashpathError
from flashpath.plot import PlotError, plot
from flashpath.sweep_run import SweepError, run_sweep
from flashpath.sweep_spec import SpecError, load_spec, parse_spec

JOB = "[j]\nioengine=psync\ndirect=1\nrw=randread\nbs=4k\nsize=1m\nnumber_ios=8\n"
SPEC = 'job = "job.fio"\ndevice = "nullblk"\n[grid]\nfio.iodepth = [1, 2]\n'
TRACE = FIXTURES / "traces" / "fio-iolog-randrw" / "trace.iolog"
RUN = FIXTURES / "calibrate" / "randread-4k-qd1.json"


def hashes(folder: Path) -> dict[str, str]:
    """Every regular file under `folder` by its SHA-256."""
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


def one_message(r: subprocess.CompletedProcess[str], *parts: str) -> str:
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert "Traceback" not in r.stderr
    [line] = r.stderr.splitlines()
    assert line.startswith("flashpath: error: "), line
    for part in parts:
        assert part in line, line
    return line


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "job.fio").write_text(JOB)
    (tmp_path / "s.toml").write_text(SPEC)
    (tmp_path / "trace.iolog").write_bytes(TRACE.read_bytes())
    (tmp_path / "run.json").write_bytes(RUN.read_bytes())
    return tmp_path


# --- 1. one output rule -------------------------------------------------


@pytest.mark.parametrize(
    ("args", "what"),
    [
        (["sweep", "s.toml", "--out", "s.toml"], "is the sweep spec"),
        (["sweep", "s.toml", "--out", "job.fio"], "is the sweep's base job"),
        (["sweep", "s.toml", "--out", "link.toml"], "is the sweep spec"),
        (["sweep", "s.toml", "--out", "hard.toml"], "is the sweep spec"),
        (["run", "job.fio", "--device", "nullblk", "--output", "job.fio"], "is the job file"),
        (["run", "job.fio", "--device", "nullblk", "--output", "hard.fio"], "is the job file"),
        (["run", "job.fio", "--device", "nullblk", "--output", "link.fio"], "is the job file"),
        (
            ["replay", "trace.iolog", "--device", "nullblk", "--output", "trace.iolog"],
            "is the trace",
        ),
        (
            ["replay", "trace.iolog", "--device", "nullblk", "--lat-csv", "trace.iolog"],
            "is the trace",
        ),
        (
            ["calibrate", "fit", "--host", "x86-generic", "--out", "run.json", "run.json"],
            "is a run file",
        ),
        (
            ["calibrate", "check", "nullblk", "run.json", "--plot", "hard.png"],
            "is a run file",
        ),
        (["plot", "run.json", "--kind", "cdf", "-o", "link.png"], "is the table"),
    ],
)
def test_an_output_that_is_an_input_is_refused(folder: Path, args: list[str], what: str) -> None:
    os.link(folder / "s.toml", folder / "hard.toml")
    os.symlink("s.toml", folder / "link.toml")
    os.link(folder / "job.fio", folder / "hard.fio")
    os.symlink("job.fio", folder / "link.fio")
    os.link(folder / "run.json", folder / "hard.png")
    os.symlink("run.json", folder / "link.png")
    before = hashes(folder)
    one_message(cli(*args, cwd=folder), what, "an input of this run")
    assert hashes(folder) == before
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        ["job.fio", "s.toml", "trace.iolog", "run.json", "hard.toml", "link.toml"]
        + ["hard.fio", "link.fio", "hard.png", "link.png"]
    )


@pytest.mark.parametrize("target", ["common.fio", "trace.iolog", "base.toml"])
def test_a_sweep_never_overwrites_what_its_points_read(folder: Path, target: str) -> None:
    # The base job includes a file and replays an iolog; the device
    # profile includes another: each is an input of the sweep.
    (folder / "common.fio").write_text("ioengine=psync\ndirect=1\n")
    (folder / "job.fio").write_text("[r]\ninclude common.fio\nread_iolog=trace.iolog\n")
    (folder / "base.toml").write_text('[profile]\nname = "b"\ninclude = ["nullblk.toml"]\n')
    (folder / "dev.toml").write_text('[profile]\nname = "d"\ninclude = ["base.toml"]\n')
    (folder / "s.toml").write_text('job = "job.fio"\ndevice = "dev.toml"\n')
    before = hashes(folder)
    one_message(
        cli("sweep", "s.toml", "--out", target, cwd=folder),
        "is a file the sweep's points read",
    )
    assert hashes(folder) == before


def test_a_log_the_job_asks_for_never_overwrites_its_job(folder: Path) -> None:
    # write_iolog names the job file itself: refused before anything is
    # written, and the report is not written either.
    (folder / "job.fio").write_text(JOB + "write_iolog=job.fio\n")
    before = hashes(folder)
    one_message(
        cli("run", "job.fio", "--device", "nullblk", "--output", "r.txt", cwd=folder),
        "write_iolog",
        "is the job file",
    )
    assert hashes(folder) == before


def test_two_outputs_of_one_run_are_refused(folder: Path) -> None:
    before = hashes(folder)
    one_message(
        cli(
            "replay",
            "trace.iolog",
            "--device",
            "nullblk",
            "--format",
            "iolog",
            "--output",
            "same.txt",
            "--lat-csv",
            "same.txt",
            cwd=folder,
        ),
        "--lat-csv 'same.txt'",
        "--output writes that file too",
    )
    assert hashes(folder) == before


@pytest.mark.parametrize(
    ("target", "kind"),
    [
        ("/dev/null", "a character device"),
        ("fifo", "a FIFO"),
        ("sub", "cannot write 'sub': Is a directory"),
    ],
)
@pytest.mark.parametrize(
    "command", ["sweep", "run", "plot", "replay", "lat-csv", "reproduce", "report", "fit"]
)
def test_device_nodes_fifos_and_folders_are_never_outputs(
    folder: Path, target: str, kind: str, command: str
) -> None:
    os.mkfifo(folder / "fifo")
    (folder / "sub").mkdir()
    before = os.stat("/dev/null")
    args = {
        "sweep": ["sweep", "s.toml", "--out", target],
        "run": ["run", "job.fio", "--device", "nullblk", "--output", target],
        "plot": ["plot", "run.json", "--kind", "cdf", "-o", target],
        "replay": ["replay", "trace.iolog", "--device", "nullblk", "--output", target],
        "lat-csv": ["replay", "trace.iolog", "--device", "nullblk", "--lat-csv", target],
        # Refused before the grid runs.
        "reproduce": ["reproduce", "io-poll", "--plot", target],
        "report": ["reproduce", "io-poll", "--report", target],
        "fit": ["calibrate", "fit", "--host", "x86-generic", "--out", target, "run.json"],
    }[command]
    one_message(cli(*args, cwd=folder), kind)
    after = os.stat("/dev/null")
    assert stat.S_ISCHR(after.st_mode) and after.st_rdev == before.st_rdev
    assert stat.S_ISFIFO(os.stat(folder / "fifo").st_mode)
    assert list((folder / "sub").iterdir()) == []
    assert not (folder / "s.parquet").exists()


@pytest.mark.parametrize(
    ("args", "parts"),
    [
        (["run", "pipe", "--device", "nullblk"], ["pipe: is a FIFO (named pipe), not a job file"]),
        (["sweep", "pipe"], ["pipe: is a FIFO (named pipe), not a sweep spec"]),
        (["plot", "pipe", "-o", "x.png"], ["pipe: is a FIFO (named pipe), not a table"]),
        (["sweep", "fifo-job.toml"], ["fifo-job.toml:1: job: cannot read 'pipe'", "a FIFO"]),
        (["run", "job.fio", "--device", "pipe.toml"], ["pipe.toml", "a FIFO (named pipe)"]),
        (["profile", "show", "pipe.toml"], ["pipe.toml", "a FIFO (named pipe)"]),
        (["sweep", "fifo-device.toml"], ["pipe.toml", "a FIFO (named pipe)"]),
        (["calibrate", "check", "nullblk", "pipe"], ["pipe: is a FIFO (named pipe), not a run"]),
        (
            ["calibrate", "fit", "--host", "x86-generic", "--out", "o.toml", "pipe"],
            ["pipe: is a FIFO (named pipe), not a run file"],
        ),
    ],
)
def test_a_fifo_input_is_one_message_not_a_hang(
    folder: Path, args: list[str], parts: list[str]
) -> None:
    """open(2) on a FIFO without a writer blocks (fs/pipe.c fifo_open):
    an input that is a named pipe is refused by stat before it is opened.
    The short timeout is the hang this guards against (a run here takes
    about a second)."""
    os.mkfifo(folder / "pipe")
    os.mkfifo(folder / "pipe.toml")
    (folder / "fifo-job.toml").write_text(SPEC.replace("job.fio", "pipe"))
    (folder / "fifo-device.toml").write_text(SPEC.replace('"nullblk"', '"pipe.toml"'))
    r = subprocess.run(
        [sys.executable, "-m", "flashpath.cli", *args],
        capture_output=True,
        text=True,
        cwd=folder,
        timeout=120,
    )
    one_message(r, *parts)


def test_an_output_is_written_whole_beside_its_target(tmp_path: Path) -> None:
    target = tmp_path / "out.txt"
    target.write_text("old")
    target.chmod(0o640)
    # A failure while writing leaves the old file and no temporary file.
    with pytest.raises(RuntimeError), outputs.replacing(target, "--out") as tmp:
        Path(tmp).write_text("half")
        assert Path(tmp).parent == tmp_path
        raise RuntimeError("the run failed")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]
    outputs.write_text(target, "new", "--out")
    assert target.read_text() == "new"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    # Through a symbolic link: the file it points to is replaced, the link kept.
    link = tmp_path / "link.txt"
    link.symlink_to("out.txt")
    outputs.write_text(link, "newer", "--out")
    assert link.is_symlink() and target.read_text() == "newer"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.txt", "out.txt"]


def test_same_file_sees_hard_links_and_symbolic_links(tmp_path: Path) -> None:
    a = tmp_path / "a"
    a.write_text("x")
    os.link(a, tmp_path / "b")
    (tmp_path / "c").symlink_to(a)
    (tmp_path / "d").write_text("x")
    assert outputs.same_file(a, tmp_path / "b")
    assert outputs.same_file(tmp_path / "c", a)
    assert outputs.same_file(tmp_path / "sub" / ".." / "a", a) or not (tmp_path / "sub").exists()
    assert not outputs.same_file(a, tmp_path / "d")
    assert not outputs.same_file(a, tmp_path / "missing")


def test_calibrate_plan_never_overwrites_a_folder_unless_forced(tmp_path: Path) -> None:
    r = cli("calibrate", "plan", "--out", "plan", "--file", "/tmp/scratch", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    readme = tmp_path / "plan" / "README.md"
    readme.write_text("my notes")
    before = hashes(tmp_path)
    one_message(
        cli("calibrate", "plan", "--out", "plan", "--file", "/tmp/other", cwd=tmp_path),
        "already has",
        "--force",
    )
    assert hashes(tmp_path) == before
    r = cli("calibrate", "plan", "--out", "plan", "--file", "/tmp/other", "--force", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "/tmp/other" in readme.read_text()
    assert "filename=/tmp/other\n" in (tmp_path / "plan" / "randread-4k-qd1.fio").read_text()
    # A file where the folder should be.
    (tmp_path / "afile").write_text("x")
    one_message(
        cli("calibrate", "plan", "--out", "afile", "--file", "/tmp/s", cwd=tmp_path),
        "is a regular file, not a folder",
    )


# --- 2. figures of run files --------------------------------------------


def _edited(tmp_path: Path, edit, name: str = "r.json") -> str:  # type: ignore[no-untyped-def]
    doc = json.loads(RUN.read_text())
    edit(doc)
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return str(path)


def _read(doc: dict) -> dict:  # type: ignore[type-arg]
    return doc["jobs"][0]["read"]


BAD_FIGURES = [
    ("read.iops", lambda d: _read(d).update(iops=float("nan")), "nan is not a finite number"),
    ("read.iops", lambda d: _read(d).update(iops=float("inf")), "inf is not a finite number"),
    ("read.iops", lambda d: _read(d).update(iops=-5.0), "-5.0 is negative"),
    ("read.iops", lambda d: _read(d).update(iops=1e308), "out of range"),
    ("read.iops", lambda d: _read(d).update(iops="12"), '"12" is not a number'),
    ("read.iops", lambda d: _read(d).update(iops=0), "out of range"),
    ("read.iops", lambda d: _read(d).update(iops=1e9), "at most 1000 per I/O"),
    ("read.total_ios", lambda d: _read(d).update(total_ios=True), "true is not a number"),
    ("read.total_ios", lambda d: _read(d).update(total_ios=2.5), "not a whole number"),
    ("read.lat_ns.mean", lambda d: _read(d)["lat_ns"].update(mean=float("nan")), "finite"),
    ("read.lat_ns.mean", lambda d: _read(d)["lat_ns"].update(mean=-1), "negative"),
    ("read.lat_ns.mean", lambda d: _read(d)["lat_ns"].update(mean=0), "an I/O takes time"),
    ("read.lat_ns.mean", lambda d: _read(d)["lat_ns"].update(mean=1e308), "out of range"),
    (
        "read.clat_ns.percentile.99.000000",
        lambda d: _read(d)["clat_ns"]["percentile"].update({"99.000000": float("inf")}),
        "finite",
    ),
]


@pytest.mark.parametrize(("field", "edit", "what"), BAD_FIGURES)
def test_a_bad_figure_is_refused_naming_file_job_and_field(
    tmp_path: Path, field: str, edit, what: str
) -> None:  # type: ignore[no-untyped-def]
    path = _edited(tmp_path, edit)
    with pytest.raises(calibrate.CalibrateError) as err:
        calibrate.load_runs([path])
    message = str(err.value)
    assert message.startswith(f"{path}: job 'randread-4k-qd1': {field}: "), message
    assert what in message, message


@pytest.mark.parametrize("command", ["check", "fit"])
def test_calibrate_commands_refuse_bad_figures(tmp_path: Path, command: str) -> None:
    path = _edited(tmp_path, lambda d: _read(d).update(iops=float("nan")))
    before = hashes(tmp_path)
    args = (
        ["calibrate", "check", "nullblk", path]
        if command == "check"
        else ["calibrate", "fit", "--host", "x86-generic", "--out", "p.toml", path]
    )
    one_message(cli(*args, cwd=tmp_path), "read.iops: nan is not a finite number")
    assert hashes(tmp_path) == before


def test_a_job_without_options_is_refused_by_name(tmp_path: Path) -> None:
    def strip(d: dict) -> None:  # type: ignore[type-arg]
        d["jobs"][0].pop("job options")
        d.pop("global options", None)

    path = _edited(tmp_path, strip)
    one_message(cli("calibrate", "check", "nullblk", path, cwd=tmp_path), 'no "job options"')


def test_global_options_alone_describe_a_job(tmp_path: Path) -> None:
    # fio 3.33 leaves "job options" out when all options are in [global].
    def move(d: dict) -> None:  # type: ignore[type-arg]
        d["global options"] = d["jobs"][0].pop("job options")

    [run] = calibrate.load_runs([_edited(tmp_path, move)])
    assert run.option("rw") == "randread" and run.option("iodepth") == "1"


def test_an_option_value_cannot_add_a_job_line(tmp_path: Path) -> None:
    path = _edited(tmp_path, lambda d: d["jobs"][0]["job options"].update(bs="4k\n[evil]"))
    with pytest.raises(calibrate.CalibrateError, match="job options: bs: it holds control"):
        calibrate.load_runs([path])


@pytest.mark.parametrize("command", ["calibrate", "plot"])
def test_deeply_nested_json_is_one_message(tmp_path: Path, command: str) -> None:
    (tmp_path / "deep.json").write_text("[" * 200_000 + "]" * 200_000)
    args = (
        ["calibrate", "check", "nullblk", "deep.json"]
        if command == "calibrate"
        else ["plot", "deep.json", "--kind", "cdf", "-o", "c.png"]
    )
    one_message(cli(*args, cwd=tmp_path), "deep.json", "nested too deeply")


# --- 3. sweeps ------------------------------------------------------------


@pytest.mark.parametrize(
    ("values", "what"),
    [
        ('[4, "4", 4.0]', 'value "4" (a string) is the same value as 4 (an integer)'),
        ("[1, true]", "value true (a boolean) is the same value as 1 (an integer)"),
        ("[2, 2.0]", "value 2.0 (a float) is the same value as 2 (an integer)"),
        ('["8", " 8"]', 'value " 8" (a string) is the same value as "8" (a string)'),
    ],
)
def test_equal_values_of_different_types_are_duplicates(values: str, what: str) -> None:
    text = f'device = "nullblk"\njob_text = "[j]"\n[grid]\nfio.iodepth = {values}\n'
    with pytest.raises(SpecError) as err:
        parse_spec(text, "s.toml", Path.cwd())
    assert str(err.value).startswith("s.toml:4: fio.iodepth: "), err.value
    assert what in str(err.value)


def test_equal_points_of_different_types_are_duplicates() -> None:
    text = (
        'device = "nullblk"\njob_text = "[j]"\n[[points]]\nfio.iodepth = 4\n'
        "[[points]]\nfio.iodepth = 4.0\n"
    )
    with pytest.raises(SpecError, match=r"\[\[points\]\] number 2: the same point as"):
        parse_spec(text, "s.toml", Path.cwd())


def test_a_resumed_sweep_reruns_an_edited_part(folder: Path) -> None:
    out = folder / "t.parquet"
    first = run_sweep(load_spec(folder / "s.toml"), out)
    good = out.read_bytes()
    parts = sorted((folder / "t.parquet.parts").glob("[0-9a-f]*.json"))
    assert len(parts) == 2
    doc = json.loads(parts[0].read_text())
    doc["rows"][0]["iops"] = 1e12  # a figure edited by hand
    parts[0].write_text(json.dumps(doc))
    again = run_sweep(load_spec(folder / "s.toml"), out)
    assert (again.ran, again.reused) == (1, 1)
    assert any("1 part run again" in n and "digest" in n for n in again.notes), again.notes
    assert out.read_bytes() == good
    assert first.table.equals(again.table)


def test_jobs_are_capped_to_the_points_and_cpus(folder: Path) -> None:
    r = cli("sweep", "s.toml", "--out", "t.parquet", "--jobs", "100000", cwd=folder)
    assert r.returncode == 0, r.stderr
    cap = min(2, os.cpu_count() or 1)
    assert f"flashpath: --jobs 100000: capped to {cap} worker" in r.stderr, r.stderr
    assert f"on {cap} worker" in r.stderr.splitlines()[-1]
    # The default (one per CPU) is capped to the points without a note.
    r = cli("sweep", "s.toml", "--out", "u.parquet", cwd=folder)
    assert r.returncode == 0 and "capped" not in r.stderr, r.stderr
    assert len(r.stderr.splitlines()) == 1


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda s: api.sweep(s, jobs=0), "jobs: 0 worker processes: at least 1"),
        (lambda s: api.sweep(s, jobs="2"), "jobs: a whole number of worker processes, not str"),
        (lambda s: api.sweep(s, jobs=True), "jobs: a whole number"),
        (lambda s: api.sweep(s, backend="bogus"), "backend: 'bogus' is not one of local, ray"),
        (lambda s: api.sweep(s, address="x:1"), "address: a cluster address is for backend ray"),
        (lambda s: api.sweep(s.encode()), "spec: a path or the text itself as str, not bytes"),
        (lambda s: api.sweep(s, out=s), "is the sweep spec, an input of this run"),
        (lambda s: api.run(JOB.encode(), "nullblk"), "job: a path or the text itself as str"),
        (lambda s: api.run(JOB, "nullblk", seed=-1), "seed: an integer from 0 to 2^64 - 1"),
        (lambda s: api.run(JOB, "nullblk", seed=2**64), "seed: an integer from 0 to 2^64 - 1"),
        (lambda s: api.run(JOB, "nullblk", overrides="a=1"), "overrides: a list of 'key=value'"),
        (lambda s: api.run(JOB, 3), "device: a profile name or .toml path"),
        (lambda s: api.run(JOB, "nullblk", overrides=None), "overrides: a list of 'key=value'"),
        (lambda s: api.run(JOB, "nullblk", overrides=5), "overrides: a list of 'key=value'"),
        (lambda s: api.sweep(s, out=5), "out: a path for the Parquet table, not int"),
    ],
)
def test_the_api_refuses_what_the_cli_refuses(folder: Path, call, message: str) -> None:  # type: ignore[no-untyped-def]
    before = hashes(folder)
    with pytest.raises(FlashpathError) as err:
        call(str(folder / "s.toml"))
    assert message in str(err.value), err.value
    assert hashes(folder) == before
    assert not (folder / "s.parquet").exists()


def test_overrides_from_a_generator_reach_the_core(folder: Path) -> None:
    """A generator of overrides is read once: checking it must not empty it
    (a silently dropped override would run the profile's default)."""
    with pytest.raises(FlashpathError, match="unknown parameter 'no.such'"):
        api.run(JOB, "nullblk", overrides=(o for o in ["no.such=1"]))


def test_the_api_and_cli_share_the_sweep_checks(folder: Path) -> None:
    with pytest.raises(SweepError, match="jobs: 0"):
        run_sweep(load_spec(folder / "s.toml"), jobs=0)
    r = cli("sweep", "s.toml", "--jobs", "0", cwd=folder)
    assert r.returncode == 2 and "Traceback" not in r.stderr


# --- 4. calibrate plan --file --------------------------------------------


@pytest.mark.parametrize(
    ("filename", "what"),
    [
        ("scratch\n[evil]\nrw=write", "control characters"),
        ("", "an empty file name"),
        ("/dev/sda", "it names a device"),
        ("/dev/null", "it names a device"),
        (".", "it is a folder"),
        ("fifo", "not a regular file"),
        ("a:b", "holds ':'"),
        ("x;y", "holds ';', '#' or '$'"),
    ],
)
def test_the_plan_scratch_file_is_checked(tmp_path: Path, filename: str, what: str) -> None:
    os.mkfifo(tmp_path / "fifo")
    one_message(cli("calibrate", "plan", "--out", "plan", "--file", filename, cwd=tmp_path), what)
    assert not (tmp_path / "plan").exists()


def test_the_readme_quotes_the_scratch_file(tmp_path: Path) -> None:
    name = "/tmp/my scratch's file & $(rm -rf x)"
    with pytest.raises(calibrate.CalibrateError, match="holds ';', '#' or '\\$'"):
        calibrate.write_plan(tmp_path / "p", name)
    name = "/tmp/my scratch's file & (x) `y` *"
    calibrate.write_plan(tmp_path / "p", name)
    line = next(
        ln for ln in (tmp_path / "p" / "README.md").read_text().splitlines() if "dd if=" in ln
    )
    argv = shlex.split(line)
    assert argv[0] == "dd" and f"of={name}" in argv, argv


# --- 5. plot crashes --------------------------------------------------------


@pytest.fixture(scope="module")
def run_json(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("run")
    (folder / "j.fio").write_text(JOB)
    r = cli(
        "run",
        "j.fio",
        "--device",
        "nullblk",
        "--output-format",
        "json+",
        "--output",
        "j.json",
        cwd=folder,
    )
    assert r.returncode == 0, r.stderr
    return folder / "j.json"


def test_plot_y_on_a_text_column_is_one_message(run_json: Path, tmp_path: Path) -> None:
    r = cli("plot", str(run_json), "--x", "job", "--y", "ddir", "-o", "p.png", cwd=tmp_path)
    one_message(r, "--y 'ddir': not a column of numbers", "'read'")
    assert not (tmp_path / "p.png").exists()


def test_a_cdf_of_a_figure_that_is_no_latency_is_one_message(
    run_json: Path, tmp_path: Path
) -> None:
    # Found by the plot_table fuzz target: --y iops on a run's json+ output
    # raised AttributeError while looking for histogram bins.
    r = cli("plot", str(run_json), "--kind", "cdf", "--y", "iops", "-o", "c.png", cwd=tmp_path)
    one_message(r, "--y 'iops': no percentiles of that latency")
    assert list(tmp_path.iterdir()) == []


def test_a_run_whose_disk_util_is_no_list_is_one_message(run_json: Path, tmp_path: Path) -> None:
    # Found by the plot_table fuzz campaign in CI: "disk_util": -1 raised
    # TypeError while the table's rows were built.
    doc = json.loads(run_json.read_text())
    doc["disk_util"] = -1
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    r = cli("plot", str(bad), "--x", "job", "--y", "read.iops", "-o", "p.png", cwd=tmp_path)
    one_message(r, "disk_util: not a list of disks")
    assert not (tmp_path / "p.png").exists()


def test_plot_without_an_extension_writes_the_named_file(run_json: Path, tmp_path: Path) -> None:
    r = cli("plot", str(run_json), "--kind", "cdf", "-o", "noext", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stderr.strip() == "plot written to noext (PNG: the name has no extension)"
    assert [p.name for p in tmp_path.iterdir()] == ["noext"]
    assert (tmp_path / "noext").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_an_empty_table_is_refused(tmp_path: Path) -> None:
    table = pa.table({"point": pa.array([], pa.int64()), "iops": pa.array([], pa.float64())})
    pq.write_table(table, tmp_path / "e.parquet")
    one_message(
        cli("plot", "e.parquet", "--x", "point", "--y", "iops", "-o", "p.png", cwd=tmp_path),
        "the table has no rows",
    )
    (tmp_path / "e.json").write_text('{"jobs": []}')
    with pytest.raises(PlotError, match="the table has no rows"):
        plot(str(tmp_path / "e.json"), str(tmp_path / "p.png"), kind="cdf")
    assert not (tmp_path / "p.png").exists()


@pytest.mark.parametrize(
    ("doc", "what"),
    [
        ({"jobs": [1]}, "jobs[0]: not a job"),
        ({"jobs": [{"groupid": 0}]}, "jobs[0]: no jobname"),
        ({"jobs": [{"jobname": "j", "groupid": "0"}]}, "jobs[0]: no groupid"),
        ({"jobs": [{"jobname": "j", "groupid": 0, "read": []}]}, "jobs[0].read: not a table"),
        (
            {"jobs": [{"jobname": "j", "groupid": 0, "read": {"total_ios": -1}}]},
            "read.total_ios: not a count",
        ),
        (
            {
                "jobs": [
                    {
                        "jobname": "j",
                        "groupid": 0,
                        "read": {"total_ios": 1, "clat_ns": {"bins": {"x": 1}}},
                    }
                ]
            },
            "read.clat_ns.bins: not fio's json+ bins",
        ),
    ],
)
def test_a_malformed_run_is_refused_naming_the_record(
    tmp_path: Path,
    doc: dict,
    what: str,  # type: ignore[type-arg]
) -> None:
    (tmp_path / "r.json").write_text(json.dumps(doc))
    one_message(cli("plot", "r.json", "--kind", "cdf", "-o", "c.png", cwd=tmp_path), what)


# --- 7. a point needs nothing of the worker's machine -------------------------


def test_a_shipped_point_runs_with_the_spec_folder_gone(tmp_path: Path) -> None:
    """What a Ray worker on another node sees: no spec folder. The point's
    task carries its profile files (two levels of includes) and the job's
    include and iolog, and gives the rows of the point run in place."""
    from flashpath.engine import _call

    spec_dir = tmp_path / "spec"
    (spec_dir / "profiles").mkdir(parents=True)
    (spec_dir / "jobs").mkdir()
    (spec_dir / "profiles" / "base.toml").write_text(
        '[profile]\nname = "base"\ninclude = ["nullblk.toml"]\n'
        '[device]\ncompletion_nsec = { value = 30000, unit = "ns", source = "test" }\n'
    )
    (spec_dir / "profiles" / "dev.toml").write_text(
        '[profile]\nname = "dev"\ndescription = "test"\ninclude = ["base.toml"]\n'
    )
    (spec_dir / "jobs" / "common.fio").write_text("ioengine=psync\ndirect=1\n")
    (spec_dir / "jobs" / "trace.iolog").write_bytes(TRACE.read_bytes())
    (spec_dir / "jobs" / "base.fio").write_text("[r]\ninclude common.fio\nread_iolog=trace.iolog\n")
    (spec_dir / "s.toml").write_text(
        'job = "jobs/base.fio"\ndevice = "profiles/dev.toml"\n[grid]\nseed = [1, 2]\n'
    )
    spec = load_spec(spec_dir / "s.toml")
    from flashpath.sweep_run import point_files, point_task

    shipped = point_files(spec, spec.points[0])
    assert sorted(Path(p).name for p in shipped) == [
        "base.toml",
        "common.fio",
        "dev.toml",
        "trace.iolog",
    ]
    in_place = [_call(point_task(spec, p)).value for p in spec.points]
    tasks = [point_task(spec, p, ship=True) for p in spec.points]
    unshipped = point_task(spec, spec.points[0])
    # The device's 30 us is in the run: the included profile was read.
    assert in_place[0]["rows"][0]["clat_ns.mean"] > 30_000
    before = hashes(spec_dir)
    spec_dir.rename(tmp_path / "gone")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    cwd = os.getcwd()
    os.chdir(elsewhere)
    try:
        shipped_runs = [_call(t).value for t in tasks]
        # Without its files the same point cannot run there.
        with pytest.raises(FileNotFoundError):
            _call(unshipped)
    finally:
        os.chdir(cwd)
    assert shipped_runs == in_place
    assert not spec_dir.exists() and hashes(tmp_path / "gone") == before
    assert list(elsewhere.iterdir()) == []


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"blocks": 0}, "ftl_wa_table: blocks=0: from 128 to 65536"),
        ({"pages": 10**6}, "ftl_wa_table: pages=1000000: from 1 to 4096"),
        ({"blocks": 65536, "pages": 4096}, "blocks x pages at most 2^22"),
        ({"warm": float("nan")}, "ftl_wa_table: warm=NaN: capacities written"),
        ({"measure": -1.0}, "ftl_wa_table: measure=-1: capacities written"),
    ],
)
def test_the_ftl_table_checks_its_arguments(kwargs: dict[str, float], message: str) -> None:
    """Before: blocks=0 panicked in the core ('internal error: no spare'),
    pages=10**6 allocated gigabytes before the device refused its size,
    and a NaN warm-up ran as if it were a number."""
    with pytest.raises(FlashpathError) as err:
        _core.ftl_wa_table(**kwargs)  # type: ignore[arg-type]
    assert message in str(err.value), err.value


def test_the_smallest_ftl_table_runs() -> None:
    """The lower bound is one the model takes: 128 blocks keep a spare at
    the smallest over-provisioning (7%) once the GC reserve is out."""
    rows = _core.ftl_wa_table(blocks=128, pages=8, warm=0.5, measure=0.5)
    assert len(rows) == 7
    assert all(r["simulated_wa"] >= 1.0 for r in rows)
