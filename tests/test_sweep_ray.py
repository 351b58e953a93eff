"""The Ray backend: the example sweep on a local Ray instance that this
test starts, through `--address`, gives the local backend's bytes."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import ray

from conftest import REPO
from flashpath.sweep_run import run_sweep
from flashpath.sweep_spec import load_spec


@pytest.fixture(scope="module")
def ray_address() -> Iterator[str]:
    """A Ray instance of 2 CPUs on this machine, stopped after the tests."""
    context = ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield context.address_info["gcs_address"]
    finally:
        ray.shutdown()


def _small_example(tmp_path: Path) -> Path:
    """examples/sweep-qd-mapcache.toml with fewer I/Os per point."""
    (tmp_path / "sweep-qd-mapcache.fio").write_text(
        (REPO / "examples" / "sweep-qd-mapcache.fio").read_text()
    )
    spec = tmp_path / "qd.toml"
    spec.write_text(
        (REPO / "examples" / "sweep-qd-mapcache.toml").read_text()
        + "\n[fixed]\nfio.number_ios = 500\n"
    )
    return spec


def test_ray_writes_the_local_backends_bytes(tmp_path: Path, ray_address: str) -> None:
    spec = _small_example(tmp_path)
    run_sweep(load_spec(spec), tmp_path / "local.parquet", jobs=2)
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "flashpath.cli",
            "sweep",
            "qd.toml",
            "--out",
            "ray.parquet",
            "--backend",
            "ray",
            "--address",
            ray_address,
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stderr
    assert "36 points (36 run, 0 reused)" in r.stderr and "on Ray" in r.stderr
    assert (tmp_path / "ray.parquet").read_bytes() == (tmp_path / "local.parquet").read_bytes()
    # The points ran in Ray's worker processes, not in the command's.
    log = [json.loads(line) for line in (tmp_path / "ray.parquet.log").read_text().splitlines()]
    workers = {r["worker"] for r in log if r["event"] == "point"}
    (sweep,) = [r for r in log if r["event"] == "sweep"]
    assert workers and sweep["driver"] not in workers and sweep["backend"] == "ray"


def test_ray_in_process_reuses_the_running_instance(tmp_path: Path, ray_address: str) -> None:
    spec = load_spec(_small_example(tmp_path))
    outcome = run_sweep(spec, tmp_path / "a.parquet", backend="ray")
    assert outcome.ran == 36
    # The instance the fixture started is still up for others.
    assert ray.is_initialized()
    local = run_sweep(spec, tmp_path / "b.parquet", jobs=1)
    assert local.ran == 36
    assert (tmp_path / "a.parquet").read_bytes() == (tmp_path / "b.parquet").read_bytes()
