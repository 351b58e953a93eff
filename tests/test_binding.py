"""The core's Python binding returns named, read-only results."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flashpath import _core

JOB = "[j]\nioengine=psync\ndirect=1\nrw=randread\nbs=4k\nsize=1m\nwrite_iolog=j.iolog\n"


def test_run_job_result_has_named_fields(tmp_path: Path) -> None:
    job = tmp_path / "j.fio"
    job.write_text(JOB + "log_store_compressed=1\n")
    run = _core.run_job(str(job), "nullblk", [], 0, "terse")
    assert isinstance(run, _core.JobRun)
    doc = json.loads(run.json_text)
    # 1 MiB of 4 KiB reads: the count the JSON reports, the I/Os the engine completed.
    assert doc["jobs"][0]["read"]["total_ios"] == run.completed_ios == 256
    assert run.events > run.completed_ios
    assert run.text.startswith("3;fio-3.33;j;")
    # An ignored option is listed in the JSON, not in the notes (stderr).
    assert any("log_store_compressed" in n for n in doc["flashpath"]["ignored_options"])
    assert not any("log_store_compressed" in n for n in run.notes)
    [log] = run.logs
    assert isinstance(log, _core.LogFile)
    assert log.name == "j.iolog"
    assert log.option == f"{job}:1: job 'j': write_iolog=j.iolog"
    assert log.contents.startswith("fio version 3 iolog\n")
    assert log.contents.count(" read ") == 256
    # fio opens write_iolog with "a" (iolog.c init_iolog_write).
    assert log.append
    assert "completed_ios=256" in repr(run)


def test_results_are_read_only(tmp_path: Path) -> None:
    job = tmp_path / "j.fio"
    job.write_text(JOB)
    run = _core.run_job(str(job), "nullblk")
    with pytest.raises(AttributeError):
        run.text = "changed"  # type: ignore[misc]
    with pytest.raises(TypeError):
        run[0]  # type: ignore[index]


def test_iozone_result_has_named_fields() -> None:
    run = _core.run_iozone(["-s", "1m", "-r", "4k", "-i", "0", "-I", "-t", "1"], "nullblk")
    assert isinstance(run, _core.IozoneRun)
    doc = json.loads(run.json_text)
    assert [t["test"] for t in doc["tests"]] == ["initial writers", "rewriters"]
    # Two passes of 1 MiB in 4 KiB records.
    assert run.completed_ios == 2 * 256
    assert "Children see throughput" in run.text
