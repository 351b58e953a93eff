"""Shared helpers: where the fixtures are, and running the CLI."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
# The repository carries its test data (tests/fixtures/README.md says how
# each file was made); a missing file fails the test that needs it.
FIXTURES = REPO / "tests" / "fixtures"
REAL_RUNS = FIXTURES / "fio" / "real-runs"


@pytest.fixture(scope="session")
def real_runs() -> list[Path]:
    runs = sorted(p for p in REAL_RUNS.iterdir() if (p / "job.fio").is_file())
    assert runs, f"no fixtures under {REAL_RUNS}"
    return runs


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run the installed `flashpath` command (its module entry point, so the
    test uses this interpreter's install)."""
    return subprocess.run(
        [sys.executable, "-m", "flashpath.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=600,
    )


def real_fio(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The real fio run in `folder` with `args`; the test fails (not skips)
    when fio is missing. Callers mark themselves to skip where fio is not
    installed."""
    fio = shutil.which("fio")
    assert fio is not None, "the real fio is not installed"
    return subprocess.run(
        [fio, *args],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=120,
    )


def real_fio_offload_json(job: Path, timeout_s: float, tries: int) -> dict:  # type: ignore[type-arg]
    """The real fio's JSON output for an `io_submit_mode=offload` job, run
    in the job's folder. fio 3.33 can hang at start-up there (workqueue.c
    start_worker overwrites a fast worker's SW_F_RUNNING, so
    workqueue_init waits forever, and it ignores SIGTERM): a run that takes
    over `timeout_s` is killed and tried again, up to `tries` times."""
    fio = shutil.which("fio")
    assert fio is not None, "the real fio is not installed"
    for _ in range(tries):
        p = subprocess.Popen(
            [fio, "--output-format=json", job.name],
            cwd=job.parent,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            out, err = p.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            p.kill()
            p.communicate()
            continue
        assert p.returncode == 0, err
        return json.loads(out[out.index("{") :])  # type: ignore[no-any-return]
    pytest.fail(f"the real fio hung {tries} times on {job.name}")


def real_fio_json(folder: Path, job: str = "job.fio") -> dict:  # type: ignore[type-arg]
    """The real fio's JSON output for `job` run in `folder`; the test fails
    (not skips) when fio exits non-zero."""
    r = real_fio(folder, "--output-format=json", job)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)  # type: ignore[no-any-return]
