"""`flashpath profile show` prints, for every parameter, its value and unit,
its source, and what its declaration says it is and accepts."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import cli


def _blocks(text: str) -> dict[str, list[str]]:
    """Each parameter's first line and the indented lines under it."""
    blocks: dict[str, list[str]] = {}
    key = None
    for line in text.splitlines():
        if line[:1].isalpha() and not line.startswith("profile "):
            key = line.split()[0]
            blocks[key] = [line]
        elif key is not None:
            blocks[key].append(line.strip())
    return blocks


def test_every_parameter_shows_what_it_is_and_accepts() -> None:
    r = cli("profile", "show", "nullblk")
    assert r.returncode == 0, r.stderr
    blocks = _blocks(r.stdout)
    assert "device.completion_nsec" in blocks
    for key, lines in blocks.items():
        assert any(ln.startswith("source: ") for ln in lines), key
        assert any(ln.startswith("what: ") and len(ln) > 10 for ln in lines), key
        assert any(ln.startswith("accepts: ") for ln in lines), key


def test_a_range_is_shown_in_the_base_unit_with_its_reason() -> None:
    r = cli("profile", "show", "nullblk", "--set", "device.completion_nsec=3us")
    assert r.returncode == 0, r.stderr
    lines = _blocks(r.stdout)["device.completion_nsec"]
    # The value is shown in the profile's own unit.
    assert lines[0].split()[1:] == ["3000", "ns"]
    assert "source: --set device.completion_nsec=3us" in lines
    accepts = next(ln for ln in lines if ln.startswith("accepts: "))
    assert re.match(r"accepts: 0 to 1e9 ns: a cost of one operation", accepts), accepts
    choice = next(ln for ln in _blocks(r.stdout)["device.kind"] if ln.startswith("accepts: "))
    assert "null_blk" in choice and "nvme" in choice and "virtio-blk" in choice


@pytest.mark.parametrize(
    ("override", "needle"),
    [
        ("block.io_poll_delay=5e6", "is 5000000 count, outside -1 to 1000000 count"),
        # Past 64 bits: out of range, not "not a whole number".
        ("block.io_poll_delay=1e30", "outside -1 to 1000000 count"),
        ("block.iosched.fifo_batch=0.5", "needs a whole number"),
    ],
)
def test_a_run_names_what_is_wrong_with_an_override(
    tmp_path: Path, override: str, needle: str
) -> None:
    """Before: io_poll_delay=1e30 (past 64 bits, read as a float) was
    refused as 'not a whole number' instead of out of range."""
    (tmp_path / "j.fio").write_text("[j]\nioengine=psync\nrw=read\nbs=4k\nsize=64k\n")
    r = cli("run", "j.fio", "--device", "nullblk", "--set", override, cwd=tmp_path)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    [line] = r.stderr.splitlines()
    assert line.startswith("flashpath: error: --set: ") and needle in line, line
    assert r.stdout == ""
