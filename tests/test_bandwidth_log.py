"""fio's `--bandwidth-log` (`-b`), side by side with the real fio 3.33.

fio writes `agg-read_bw.log`, `agg-write_bw.log` and `agg-trim_bw.log` in
the current folder (backend.c setup_log, flushed after the run). Their
samples come from eta.c calc_thread_status, which its helper thread calls
every 250 ms and which returns before sampling when stdout is not a
terminal (unless `--eta=always`) or when the report goes to stdout without
the normal format; the JSON report calls it once more, forced, as the run
ends (stat.c show_thread_status_json). Each sample, once the window passes
bwavgtime (500 ms), is `ms since start, KiB/s, ddir, 0, 0` for every
direction.

Compared exactly: the files, whether they are empty, the columns and the
ddir, bs and priority columns, the one row of the JSON report's sample.
Compared in shape where fio's wall clock decides: the times and the row
count of the periodic samples (fio's helper wakes late under load, never
early, see the test) and the rates (rate-limited jobs: each row after the
first within 10% of the limit, as fio's own rows are, its first row
holding the job's start-up)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import cli

FIO = shutil.which("fio")
need_fio = pytest.mark.skipif(FIO is None, reason="the real fio is not installed")

NAMES = ["agg-read_bw.log", "agg-trim_bw.log", "agg-write_bw.log"]
# rate=40m,20m: fio's m is MiB here (kb_base 1024): KiB/s per direction.
RATES = {0: 40960, 1: 20480, 2: 0}


def job(folder: Path) -> Path:
    """Three seconds of rate-limited random reads and writes, no data."""
    path = folder / "j.fio"
    path.write_text(
        "[j]\nioengine=null\nsize=1g\nrw=randrw\nbs=4k\nruntime=3\ntime_based\nrate=40m,20m\n"
    )
    return path


def run_both(tmp_path: Path, *extra: str) -> dict[str, dict[str, str]]:
    """Each tool's agg logs, run in a folder of its own."""
    logs: dict[str, dict[str, str]] = {}
    for who in ("fio", "flashpath"):
        folder = tmp_path / who
        folder.mkdir()
        job(folder)
        if who == "fio":
            r = subprocess.run(
                [FIO or "fio", "--bandwidth-log", *extra, "j.fio"],
                cwd=folder,
                capture_output=True,
                text=True,
                timeout=60,
            )
        else:
            r = cli("run", "j.fio", "--device", "nullblk", "--bandwidth-log", *extra, cwd=folder)
        assert r.returncode == 0, (who, r.stderr)
        logs[who] = {
            p.name: p.read_text() for p in sorted(folder.iterdir()) if p.name.startswith("agg-")
        }
    return logs


def rows(text: str) -> list[list[int]]:
    return [[int(v) for v in line.split(", ")] for line in text.splitlines()]


@need_fio
@pytest.mark.parametrize(
    "extra",
    [[], ["--eta=never"], ["--eta=always", "--output-format=terse"]],
    ids=["not-a-terminal", "eta-never", "terse-to-stdout"],
)
def test_without_a_status_line_the_logs_are_empty(tmp_path: Path, extra: list[str]) -> None:
    """stdout is a pipe here: fio prints no status, so it takes no sample
    and writes three empty files; so does flashpath."""
    logs = run_both(tmp_path, *extra)
    assert sorted(logs["fio"]) == sorted(logs["flashpath"]) == NAMES
    assert all(text == "" for who in logs.values() for text in who.values())


@need_fio
@pytest.mark.parametrize("eta", ["never", "always"])
def test_the_json_report_takes_one_sample_at_the_end(tmp_path: Path, eta: str) -> None:
    """JSON to stdout: no status line, but the report's forced call takes
    one sample of the whole run, after its 3 s (fio's at about 3.1 s, after
    its teardown; flashpath's at the end)."""
    logs = run_both(tmp_path, "--output-format=json", f"--eta={eta}")
    assert sorted(logs["fio"]) == sorted(logs["flashpath"]) == NAMES
    for name in NAMES:
        ddir = {"agg-read_bw.log": 0, "agg-write_bw.log": 1, "agg-trim_bw.log": 2}[name]
        (real,), (ours,) = rows(logs["fio"][name]), rows(logs["flashpath"][name])
        assert real[2:] == ours[2:] == [ddir, 0, 0]
        assert 3000 <= ours[0] <= real[0] <= 4000
        for row in (real, ours):
            assert abs(row[1] - RATES[ddir]) <= RATES[ddir] // 10, (name, row)


@need_fio
@pytest.mark.parametrize(
    "fmt,count", [("normal", 5), ("json", 6)], ids=["periodic", "periodic-and-report"]
)
def test_with_eta_always_the_rows_are_fios(tmp_path: Path, fmt: str, count: int) -> None:
    """A status line (--eta=always, the report to a file): flashpath's
    helper wakes every 250 ms exactly, so a row every other wake, 500 ms
    apart: five in 3 s, and the JSON report adds its own at the end, 500
    ms after the last. fio's wakes come late, a few ms on a quiet machine
    (504, 1022, 1530 ms) and up to 150 ms here under load (501, 1102,
    1751), never early: so its rows are never before flashpath's, each
    at least 500 ms after the one before, and late wakes can only leave
    rows out (fewer, never more). The columns are the same."""
    logs = run_both(tmp_path, "--eta=always", "--output=report.txt", f"--output-format={fmt}")
    assert sorted(logs["fio"]) == sorted(logs["flashpath"]) == NAMES
    for name in NAMES:
        ddir = {"agg-read_bw.log": 0, "agg-write_bw.log": 1, "agg-trim_bw.log": 2}[name]
        real, ours = rows(logs["fio"][name]), rows(logs["flashpath"][name])
        assert [o[0] for o in ours] == [500 * (k + 1) for k in range(count)], name
        assert 1 <= len(real) <= count, name
        for k, r in enumerate(real):
            assert len(r) == 5 and r[2:] == [ddir, 0, 0], (name, r)
            assert r[0] >= ours[k][0], (name, r)
            if k:
                assert r[0] - real[k - 1][0] >= 500, (name, real)
        for k, row in enumerate(ours):
            assert len(row) == 5 and row[2:] == [ddir, 0, 0], (name, row)
            # The first window holds the job's start-up in fio's rows.
            for sample in [row] + ([real[k]] if 0 < k < len(real) else []):
                if k > 0 or ddir == 2:
                    assert abs(sample[1] - RATES[ddir]) <= RATES[ddir] // 10, (name, sample)
