"""flashpath's output against the real fio 3.33's, on the same job files:
every key path of fio's JSON is present with the same type; fio-plot
renders our JSON."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from conftest import cli


def key_paths(doc: Any, prefix: str = "") -> dict[str, str]:
    """Every key path with its JSON type; percentile and bins maps are
    compared by their value type only (their keys depend on the data)."""
    out: dict[str, str] = {}
    if isinstance(doc, dict):
        for k, v in doc.items():
            path = f"{prefix}/{k}"
            if k in ("bins",):
                out[path] = "object"
                continue
            out.update(key_paths(v, path))
        out[prefix or "/"] = "object"
    elif isinstance(doc, list):
        out[prefix] = "array"
        if doc:
            out.update(key_paths(doc[0], prefix + "[]"))
    elif isinstance(doc, bool):
        out[prefix] = "bool"
    elif isinstance(doc, (int, float)):
        out[prefix] = "number"
    elif isinstance(doc, str):
        out[prefix] = "string"
    else:
        out[prefix] = "null"
    return out


EOPNOTSUPP = 95


def run_args(run: Path) -> list[str]:
    """A job the real fio ended with EOPNOTSUPP (hipri on a queue without
    polling, on a kernel with submit_bio_noacct's poll-queue check) is
    refused by flashpath, as fio fails it; its report's format is checked
    on a kernel without the check, where the reads complete by interrupt."""
    real = json.loads((run / "out.json").read_text())
    if any(j.get("error") == EOPNOTSUPP for j in real["jobs"]):
        return ["--set", "block.polled_without_poll_queue=interrupt"]
    return []


def run_fixture(run: Path, fmt: str) -> subprocess.CompletedProcess[str]:
    return cli(
        "run", str(run / "job.fio"), "--device", "nullblk", "--output-format", fmt, *run_args(run)
    )


def test_jobs_fio_failed_with_eopnotsupp_are_refused(real_runs: list[Path]) -> None:
    failed = [r for r in real_runs if run_args(r)]
    assert failed, "the fixtures have a run that fio ended with err=95"
    for run in failed:
        r = cli("run", str(run / "job.fio"), "--device", "nullblk")
        assert r.returncode != 0 and "err=95" in r.stderr, (run.name, r.stderr)
        assert "Traceback" not in r.stderr


@pytest.mark.parametrize("fmt,fixture", [("json", "out.json"), ("json+", "out.jsonplus.json")])
def test_every_fio_key_path_is_present_with_its_type(
    real_runs: list[Path], fmt: str, fixture: str
) -> None:
    for run in real_runs:
        r = run_fixture(run, fmt)
        assert r.returncode == 0, f"{run.name}: {r.stderr}"
        ours = key_paths(json.loads(r.stdout))
        theirs = key_paths(json.loads((run / fixture).read_text()))
        # disk_util entries are per real device; ours has the simulated one.
        missing = {
            k: t
            for k, t in theirs.items()
            if k not in ours and "/percentile/" not in k and "/bins" not in k
        }
        assert not missing, f"{run.name}: missing {sorted(missing)[:10]}"
        wrong = {k: (t, ours[k]) for k, t in theirs.items() if k in ours and ours[k] != t}
        # A percentile map fio leaves out for N=0 may be present in ours.
        assert not wrong, f"{run.name}: wrong types {wrong}"
        assert "/flashpath" in ours


def test_terse_has_fios_field_count(real_runs: list[Path]) -> None:
    for run in real_runs:
        r = run_fixture(run, "terse")
        theirs = (run / "out.terse").read_text().strip().splitlines()
        ours = r.stdout.strip().splitlines()
        assert len(ours) == len(theirs), run.name
        for a, b in zip(ours, theirs, strict=True):
            assert len(a.split(";")) == len(b.split(";")), run.name


@pytest.mark.skipif(shutil.which("fio-plot") is None, reason="fio-plot not installed")
def test_fio_plot_renders_our_json(real_runs: list[Path], tmp_path: Path) -> None:
    run = next(r for r in real_runs if r.name == "randrw70-4jobs-grouped")
    r = cli(
        "run",
        str(run / "job.fio"),
        "--device",
        "nullblk",
        "--output-format",
        "json",
        "--output",
        str(tmp_path / "out.json"),
    )
    assert r.returncode == 0, r.stderr
    png = tmp_path / "chart.png"
    env = dict(os.environ, MPLBACKEND="Agg")
    p = subprocess.run(
        [
            "fio-plot",
            "-i",
            str(tmp_path),
            "-T",
            "flashpath",
            "-l",
            "-r",
            "randrw",
            "-f",
            "read",
            "-d",
            "8",
            "-n",
            "4",
            "-o",
            str(png),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert p.returncode == 0, p.stdout + p.stderr
    assert png.stat().st_size > 10_000
