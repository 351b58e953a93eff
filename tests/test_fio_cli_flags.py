"""fio 3.33's command-line flags that change a run's output, and a job file
on standard input (init.c parse_cmd_line, parse_jobs_ini):

- `--minimal` sets the output to terse alone, `--append-terse` adds terse to
  the formats, `--output-format` sets its list; the last one given wins;
- `--terse-version` takes 2 to 5 ("fio: bad terse version format"
  otherwise); flashpath writes version 3, fio's default, and refuses the
  others by name;
- a job file named `-` is read from standard input.

Each output is held to its closed form (which lines come, in which order)
and, where the real fio is installed, to the real fio's for the same job:
the kind of every line (a terse record and its job name, a job's heading,
a group's status), not its numbers (a simulated machine is not this one).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

FIO = shutil.which("fio")
need_fio = pytest.mark.skipif(FIO is None, reason="the real fio is not installed")

TWO_JOBS = "[a]\nioengine=null\nsize=64k\nrw=read\n[b]\nioengine=null\nsize=64k\nrw=write\n"


def ours(folder: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "flashpath.cli", "run", *args, "--device", "nullblk"],
        cwd=folder,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
    )


def real(folder: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    assert FIO is not None
    return subprocess.run(
        [FIO, *args], cwd=folder, input=stdin, capture_output=True, text=True, timeout=120
    )


def kinds(text: str) -> list[str]:
    """Each line's kind: a terse record (its version and job name), a
    job's report heading, a group's status heading, a JSON document."""
    out = []
    for line in text.splitlines():
        if line.startswith("3;"):
            out.append("terse " + line.split(";")[2])
        elif "(groupid=" in line:
            out.append("job " + line.split(":", 1)[0])
        elif line.startswith("Run status group"):
            out.append("status")
        elif line == "{":
            out.append("json")
    return out


@pytest.fixture
def job(tmp_path: Path) -> Path:
    (tmp_path / "job.fio").write_text(TWO_JOBS)
    return tmp_path


CASES = {
    # The terse records come first, then each job's report (stat.c
    # __show_run_stats prints terse, then json, then normal).
    "append-terse": (["--append-terse"], ["terse a", "terse b", "job a", "job b", "status"]),
    "minimal": (["--minimal"], ["terse a", "terse b"]),
    # The last word wins: --output-format after --minimal.
    "minimal-then-json": (["--minimal", "--output-format=json"], ["json"]),
    "json-then-minimal": (["--output-format=json", "--minimal"], ["terse a", "terse b"]),
    "json-then-append": (
        ["--output-format=json", "--append-terse"],
        ["terse a", "terse b", "json"],
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_output_flags_give_fios_lines(job: Path, name: str) -> None:
    flags, want = CASES[name]
    r = ours(job, *flags, "job.fio")
    assert r.returncode == 0, r.stderr
    assert kinds(r.stdout) == want


@need_fio
@pytest.mark.parametrize("name", sorted(CASES))
def test_output_flags_match_the_real_fio(job: Path, name: str) -> None:
    flags, _ = CASES[name]
    theirs = real(job, *flags, "job.fio")
    assert theirs.returncode == 0, theirs.stderr
    r = ours(job, *flags, "job.fio")
    assert r.returncode == 0, r.stderr
    assert kinds(r.stdout) == kinds(theirs.stdout)


def test_minimal_record_has_fios_field_count(job: Path) -> None:
    # Terse version 3 with one disk: 130 fields (stat.c show_thread_status_terse_all);
    # the null engine touches no disk, so no disk fields follow.
    r = ours(job, "--minimal", "job.fio")
    assert r.returncode == 0, r.stderr
    counts = [len(line.split(";")) for line in r.stdout.splitlines()]
    if FIO is not None:
        theirs = real(job, "--minimal", "job.fio")
        assert counts == [len(line.split(";")) for line in theirs.stdout.splitlines()]
    assert len(counts) == 2 and counts[0] == counts[1]


@pytest.mark.parametrize("version", ["1", "6", "x"])
def test_bad_terse_version_is_refused_as_fio_refuses_it(job: Path, version: str) -> None:
    r = ours(job, f"--terse-version={version}", "job.fio")
    assert r.returncode != 0
    assert "bad terse version format" in r.stderr
    if FIO is not None:
        theirs = real(job, f"--terse-version={version}", "job.fio")
        assert theirs.returncode != 0
        assert "bad terse version format" in theirs.stdout + theirs.stderr


@pytest.mark.parametrize("version", ["2", "4", "5"])
def test_other_terse_versions_are_refused_by_name(job: Path, version: str) -> None:
    r = ours(job, "--minimal", f"--terse-version={version}", "job.fio")
    assert r.returncode != 0
    assert f"terse version {version} is not modelled" in r.stderr
    assert "Traceback" not in r.stderr


def test_job_on_standard_input_runs_as_the_file(job: Path) -> None:
    from_file = ours(job, "--output-format=json", "job.fio")
    from_stdin = ours(job, "--output-format=json", "-", stdin=TWO_JOBS)
    assert from_stdin.returncode == 0, from_stdin.stderr
    a, b = json.loads(from_file.stdout), json.loads(from_stdin.stdout)
    # The same jobs, the same I/O, the same simulated numbers.
    assert a["jobs"] == b["jobs"]


@need_fio
def test_job_on_standard_input_matches_the_real_fio(job: Path) -> None:
    theirs = real(job, "--output-format=json", "-", stdin=TWO_JOBS)
    assert theirs.returncode == 0, theirs.stderr
    r = ours(job, "--output-format=json", "-", stdin=TWO_JOBS)
    assert r.returncode == 0, r.stderr
    f, o = json.loads(theirs.stdout), json.loads(r.stdout)

    def ios(doc: dict) -> list[tuple[str, int, int]]:  # type: ignore[type-arg]
        return [
            (j["jobname"], j["read"]["total_ios"], j["write"]["total_ios"]) for j in doc["jobs"]
        ]

    assert ios(o) == ios(f) == [("a", 16, 0), ("b", 0, 16)]


GLOBALS = (
    "[global]\nioengine=null\n[a]\nsize=64k\nrw=read\n[global]\nsize=128k\n[b]\nrw=read\n"
    "[c]\nrw=bad\n"
)


def job_sizes(doc: dict) -> list[tuple[str, int]]:  # type: ignore[type-arg]
    return [(j["jobname"], j["read"]["io_bytes"]) for j in doc["jobs"]]


@pytest.mark.parametrize(
    ("picked", "want"),
    [(["b"], [("b", 131072)]), (["a", "b"], [("a", 65536), ("b", 131072)])],
)
def test_section_runs_only_the_named_jobs_with_every_global(
    tmp_path: Path, picked: list[str], want: list[tuple[str, int]]
) -> None:
    # A global section after a skipped job still applies (b gets 128k),
    # and a skipped job is not parsed at all (c's bad rw= is not seen).
    (tmp_path / "job.fio").write_text(GLOBALS)
    flags = [f"--section={p}" for p in picked]
    r = ours(tmp_path, *flags, "--output-format=json", "job.fio")
    assert r.returncode == 0, r.stderr
    assert job_sizes(json.loads(r.stdout)) == want
    if FIO is not None:
        theirs = real(tmp_path, *flags, "--output-format=json", "job.fio")
        assert theirs.returncode == 0, theirs.stderr
        assert job_sizes(json.loads(theirs.stdout)) == want


@pytest.mark.parametrize(
    ("section", "message"),
    [("global", "can't use global as only section"), ("zz", "no job defined")],
)
def test_section_refusals_as_fio(tmp_path: Path, section: str, message: str) -> None:
    (tmp_path / "job.fio").write_text(GLOBALS)
    r = ours(tmp_path, f"--section={section}", "job.fio")
    assert r.returncode != 0 and message in r.stderr, r.stderr
    if FIO is not None:
        # fio: "fio: can't use global as only section" / "No job(s) defined".
        theirs = real(tmp_path, f"--section={section}", "job.fio")
        assert theirs.returncode != 0


def test_section_keeps_the_files_line_numbers(tmp_path: Path) -> None:
    (tmp_path / "job.fio").write_text(GLOBALS.replace("[b]\nrw=read", "[b]\nrw=sideways"))
    r = ours(tmp_path, "--section=b", "job.fio")
    assert r.returncode != 0
    assert "job.fio:9" in r.stderr, r.stderr


@pytest.mark.parametrize(
    ("text", "refused"),
    [
        ("[a]\nioengine=null\nsize=64k\nrw=read\n", False),
        ("[a]\nioengine=null\nsize=64k\nrw=randrw\n", True),
        ("[a]\nioengine=null\nsize=64k\nrw=read\n[b]\nioengine=null\nsize=64k\nrw=trim\n", True),
        ("[global]\nrw=write\n[a]\nioengine=null\nsize=64k\n", True),
    ],
)
def test_readonly_refuses_jobs_that_write_or_trim(tmp_path: Path, text: str, refused: bool) -> None:
    # options.c rw_verify: "fio: job <NAME> has write or trim bit set, but
    # fio is in read-only mode"; fio then runs nothing.
    (tmp_path / "job.fio").write_text(text)
    r = ours(tmp_path, "--readonly", "job.fio")
    if refused:
        assert r.returncode != 0 and r.stdout == ""
        assert "has write or trim bit set, but fio is in read-only mode" in r.stderr
        assert "job.fio:" in r.stderr
    else:
        assert r.returncode == 0, r.stderr
    if FIO is not None:
        theirs = real(tmp_path, "--readonly", "job.fio")
        assert (theirs.returncode != 0) == refused
        if refused:
            assert "read-only mode" in theirs.stdout + theirs.stderr


def test_readonly_checks_jobs_on_the_command_line_and_stdin(tmp_path: Path) -> None:
    r = ours(tmp_path, "--readonly", "--ioengine=null", "--size=64k", "--name=w", "--rw=write")
    assert r.returncode != 0 and "read-only mode" in r.stderr
    r = ours(tmp_path, "--readonly", "-", stdin="[w]\nioengine=null\nsize=64k\nrw=write\n")
    assert r.returncode != 0 and "read-only mode" in r.stderr


PARSE_ONLY_CASES = [
    # (arguments, standard input, fio accepts)
    (("--parse-only", "--name=a", "--ioengine=null", "--size=64k", "--rw=randread"), None, True),
    (("--parse-only", "-"), "[a]\nioengine=null\nsize=64k\nrw=write\n", True),
    (("--parse-only", "--name=a", "--ioengine=null", "--size=64k", "--rw=bogus"), None, False),
    (("--parse-only", "-"), "[a]\nioengine=null\nsize=64k\nrw=bogus\n", False),
    (
        ("--parse-only", "--readonly", "--name=a", "--ioengine=null", "--size=64k", "--rw=write"),
        None,
        False,
    ),
]


@pytest.mark.parametrize(("args", "stdin", "accepted"), PARSE_ONLY_CASES)
def test_parse_only_takes_command_line_jobs_and_stdin(
    tmp_path: Path, args: tuple[str, ...], stdin: str | None, accepted: bool
) -> None:
    """fio --parse-only checks jobs given on the command line or on
    standard input as it checks a job file, runs nothing and prints no
    report. Before, flashpath refused both ("--parse-only checks a job
    file")."""
    r = ours(tmp_path, *args, stdin=stdin)
    assert (r.returncode == 0) == accepted, r.stderr
    assert r.stdout == ""
    assert "Traceback" not in r.stderr
    if not accepted:
        assert r.stderr.startswith("flashpath: error: "), r.stderr
    assert list(tmp_path.iterdir()) == []


@need_fio
@pytest.mark.parametrize(("args", "stdin", "accepted"), PARSE_ONLY_CASES)
def test_parse_only_verdicts_are_the_real_fios(
    tmp_path: Path, args: tuple[str, ...], stdin: str | None, accepted: bool
) -> None:
    theirs = real(tmp_path, *args, stdin=stdin)
    assert (theirs.returncode == 0) == accepted, theirs.stdout + theirs.stderr
