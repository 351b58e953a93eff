"""Jobs given as text (the API's run(text), dd, replay, reproduce, bench)
run from memory: no temporary file, and messages name what the user wrote."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import flashpath
from conftest import FIXTURES
from flashpath import cli
from flashpath import reproduce as rp

JOB = "[j]\nioengine=psync\ndirect=1\nrw=read\nbs=4k\nsize=1m\n"


@pytest.fixture
def no_temp_files(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any temporary file or folder fails the test."""

    def refuse(*_a: Any, **_k: Any) -> Any:
        raise AssertionError("a temporary file was made")

    for name in ("NamedTemporaryFile", "TemporaryFile", "TemporaryDirectory", "mkstemp", "mkdtemp"):
        monkeypatch.setattr(tempfile, name, refuse)


def test_api_runs_job_text_without_a_file(no_temp_files: None) -> None:
    res = flashpath.run(JOB, device="nullblk")
    assert res.completed_ios == 256


def test_api_errors_name_the_job_text_line() -> None:
    with pytest.raises(flashpath.FlashpathError) as info:
        flashpath.run("[j]\nioengine=psync\ndirect=1\nrw=sideways\nsize=1m\n", device="nullblk")
    message = info.value.args[0]
    assert message.startswith("<job text>:4: "), message
    assert "sideways" in message and "/tmp" not in message


def test_api_job_text_includes_relative_to_the_current_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "part.fio").write_text("rw=read\nbs=4k\nsize=64k\n")
    monkeypatch.chdir(tmp_path)
    res = flashpath.run("[j]\nioengine=psync\ndirect=1\ninclude part.fio\n", device="nullblk")
    assert res.completed_ios == 16


def test_cli_dd_replay_and_bench_make_no_temp_file(no_temp_files: None) -> None:
    runner = CliRunner()
    dd = runner.invoke(
        cli.main,
        ["dd", "if=/dev/nullb0", "of=/dev/null", "bs=4k", "count=10", "--device", "nullblk"],
    )
    assert dd.exit_code == 0, dd.output
    assert "10+0 records in" in dd.output
    trace = str(FIXTURES / "traces" / "fio-iolog-randrw" / "trace.iolog")
    replay = runner.invoke(
        cli.main, ["replay", trace, "--device", "nullblk", "--output-format", "json"]
    )
    assert replay.exit_code == 0, replay.output
    assert json.loads(replay.output)["jobs"][0]["read"]["total_ios"] == 555
    bench = runner.invoke(cli.main, ["bench", "--ios", "1000", "--only", "qd1 psync"])
    assert bench.exit_code == 0, bench.output
    assert " 1000 I/Os" in bench.output


def test_reproduce_runs_case_text_without_a_file(no_temp_files: None) -> None:
    doc = rp.RUNNERS["job"]({"case": "c", "job": JOB}, "nullblk", [], 0)
    assert doc["jobs"][0]["read"]["total_ios"] == 256


def test_replay_errors_name_the_trace(tmp_path: Path) -> None:
    trace = tmp_path / "bad.iolog"
    trace.write_text("fio version 2 iolog\n/dev/x add\n/dev/x open\n/dev/x read zero 4096\n")
    r = CliRunner().invoke(cli.main, ["replay", str(trace), "--device", "nullblk"])
    assert r.exit_code != 0
    assert f"{trace}:4" in r.output, r.output
