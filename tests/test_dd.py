"""`flashpath dd`: dd's operands read as the real dd reads them, dd's
messages for bad ones, dd's records lines, and reads that complete the way
a plain read(2) completes."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import flashpath
from conftest import cli
from flashpath import _core


def flashpath_dd(*args: str) -> subprocess.CompletedProcess[str]:
    return cli("dd", *args)


# Valid dd lines and what flashpath printed before dd moved into the core
# (the Python front end's output): dd's summary must not change.
UNCHANGED = [
    (
        ["if=/dev/nvme0n1", "of=/dev/null", "bs=4096", "iflag=direct", "count=20k"],
        "nvme-dram",
        "20480+0 records in\n20480+0 records out\n"
        "83886080 bytes (83.9 MB, 80 MiB) copied, 0.381 s, 220 MB/s\n",
    ),
    (
        ["if=/dev/sda", "of=/dev/null", "bs=4096", "count=2000"],
        "ufs21-64g",
        "2000+0 records in\n2000+0 records out\n"
        "8192000 bytes (8.19 MB, 7.81 MiB) copied, 0.015 s, 546 MB/s\n",
    ),
    (
        ["if=/dev/vda", "of=/dev/null", "bs=64k", "count=200", "iflag=direct"],
        "virtio-ramdisk",
        "200+0 records in\n200+0 records out\n"
        "13107200 bytes (13.1 MB, 12.5 MiB) copied, 0.011 s, 1.19 GB/s\n",
    ),
    (
        ["if=/dev/nullb0", "of=/dev/null", "bs=1", "count=3"],
        "nullblk",
        "3+0 records in\n3+0 records out\n3 bytes (3 bytes, 3 bytes) copied, 0.001 s, 3 kB/s\n",
    ),
]


@pytest.mark.parametrize("operands,device,stderr", UNCHANGED, ids=[u[1] for u in UNCHANGED])
def test_summary_of_valid_lines_is_unchanged(operands: list[str], device: str, stderr: str) -> None:
    r = flashpath_dd(*operands, "--device", device)
    assert r.returncode == 0, r.stderr
    assert (r.stdout, r.stderr) == ("", stderr)


def test_direct_reads_run_on_a_kernel_that_refuses_unpolled_hipri() -> None:
    """nullblk's host fails a polled bio on a queue without polling
    (EOPNOTSUPP); dd's plain read(2) is no polled bio."""
    r = flashpath_dd("if=/dev/nullb0", "bs=4k", "count=100", "iflag=direct", "--device", "nullblk")
    assert r.returncode == 0, r.stderr
    assert r.stderr.startswith("100+0 records in\n100+0 records out\n409600 bytes")


def _copied_secs(stderr: str) -> float:
    m = re.search(r"copied, ([0-9.e+-]+) s,", stderr)
    assert m, stderr
    return float(m.group(1))


def test_dd_never_asks_for_polled_completion() -> None:
    """With a queue that polls, fio's pvsync2+hipri polls and gets faster;
    dd (no RWF_HIPRI) completes by interrupt either way."""
    poll = ["--set", "block.io_poll=1"]
    dd = ["if=/dev/nullb0", "bs=4k", "count=2000", "iflag=direct", "--device", "nullblk"]
    plain, polling_queue = flashpath_dd(*dd), flashpath_dd(*dd, *poll)
    assert plain.returncode == polling_queue.returncode == 0, polling_queue.stderr
    assert plain.stderr == polling_queue.stderr
    job = (
        "[j]\nfilename=/dev/nullb0\nioengine={engine}\ndirect=1\nrw=read\nbs=4k\n"
        "number_ios=2000\nsize=8192000\n"
    )
    read = flashpath.run(job.format(engine="psync"), device="nullblk").fio_json()
    polled = flashpath.run(
        job.format(engine="pvsync2\nhipri"), device="nullblk", overrides=["block.io_poll=1"]
    ).fio_json()
    irq_runtime = read["jobs"][0]["read"]["runtime"]
    assert polled["jobs"][0]["read"]["runtime"] < irq_runtime
    assert _copied_secs(plain.stderr) == irq_runtime / 1000


def real_dd(*operands: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["dd", *operands],
        capture_output=True,
        text=True,
        env={**os.environ, "LC_ALL": "C"},
        timeout=60,
    )


def test_the_reference_dd_is_coreutils_9_1() -> None:
    """The comparisons below are with GNU coreutils 9.1's dd (9.2 reads
    `x` recursively and knows the Q and R suffixes)."""
    first = real_dd("--version").stdout.splitlines()[0]
    assert first == "dd (coreutils) 9.1", first


@pytest.mark.parametrize(
    "operands",
    [
        ["bs=4096", "count=100"],
        ["ibs=4096", "count=100"],
        ["ibs=4096", "obs=1000", "count=3"],
        ["bs=1k", "count=8KiB", "iflag=count_bytes"],
        ["ibs=1000", "count=5kB"],
        ["bs=512", "count=3x7", "skip=2"],
    ],
)
@pytest.mark.parametrize("status", ["status=noxfer", "status=none"])
def test_records_lines_are_dds(operands: list[str], status: str) -> None:
    real = real_dd("if=/dev/zero", "of=/dev/null", *operands, status)
    assert real.returncode == 0, real.stderr
    ours = flashpath_dd("if=/dev/nullb0", "of=/dev/null", *operands, status, "--device", "nullblk")
    assert ours.returncode == 0, ours.stderr
    assert ours.stderr == real.stderr


# Values covering dd 9.1's number grammar (parse_integer over xstrtoumax).
NUMBERS = [
    "1x0",
    "0x5",
    "1x",
    "5B",
    "12B",
    "2KB",
    "2kB",
    "2KiB",
    "2k",
    "2K",
    "1m",
    "1M",
    "1MB",
    "1MiB",
    "1g",
    "1G",
    "1T",
    "1t",
    "1w",
    "1c",
    "1b",
    "K",
    "kB",
    "KiB",
    "B",
    "x5",
    " 5",
    "+5",
    "-5",
    "5e",
    "1xx2",
    "2x3x4",
    "00x5",
    "1bB",
    "1BB",
    "1cB",
    "1cx2",
    "",
    "0",
    "01",
    "5xK",
    "2xKiB",
    "1kiB",
    "1KIB",
    "1D",
    "1KD",
    "1MD",
    "1bx2",
    "2Kx3",
    "3x2K",
    "1Bx2",
    "2x1B",
    "5 ",
    "1x2B",
    "1KBx2",
    "1KBx2KB",
    "1Kx2KB",
    "1bD",
    "1ciB",
    "1Mi",
    "1Q",
    "1R",
    "2x+3",
    "1x 2K",
    "8E",
    "7E",
    "1Z",
    "1Zx0",
    "9223372036854775807",
    "9223372036854775808",
    "99999999999999999999x0",
    "0x99999999999999999999",
    "1x99999999999999999999",
]


@pytest.mark.parametrize("value", NUMBERS)
def test_numbers_are_read_as_the_real_dd_reads_them(tmp_path: Path, value: str) -> None:
    """The real dd's seek=V bs=1 count=0 makes a file V bytes long; flashpath's
    skip=V bs=1 reads from byte V. A value dd refuses gets dd's message."""
    out = tmp_path / "f"
    real = real_dd("if=/dev/null", f"of={out}", f"seek={value}", "bs=1", "count=0", "status=none")
    refused = "invalid number" in real.stderr
    try:
        job = _core.dd_job(["if=/dev/sda", "bs=1", "count=1", f"skip={value}"])
    except flashpath.FlashpathError as err:
        message = err.args[0]
        if refused:
            assert message.startswith("dd: " + real.stderr.splitlines()[0].removeprefix("dd: "))
        else:
            # Accepted by dd, but past any device flashpath can address.
            assert "cannot skip: Value too large" in message, message
        return
    assert not refused, real.stderr
    offset = int(re.search(r"^offset=(\d+)$", job, re.M).group(1))
    if real.returncode == 0:
        assert offset == out.stat().st_size
    else:
        # A file system refuses a file that large; dd read the number.
        assert "File too large" in real.stderr and offset > 2**40


@pytest.mark.parametrize(
    "operands,message",
    [
        (["bs=1x0"], "dd: invalid number: '1x0' (operand 'bs=1x0')"),
        (["iflag=directt"], "dd: invalid input flag: 'directt'"),
        (["frob=1"], "dd: unrecognized operand 'frob=1'"),
        (["iflag=direct,nocache"], "dd: cannot combine direct and nocache"),
        (["oflag=direct"], "dd: failed to open '/dev/null': Invalid argument"),
        (
            ["skip=100000000000"],
            "dd: /dev/nvme0n1: cannot skip: Invalid argument "
            "(skip= is at byte 51200000000000 of a 64000000000-byte device)",
        ),
    ],
)
def test_bad_operands_get_one_message(operands: list[str], message: str) -> None:
    base = ["if=/dev/nvme0n1", "of=/dev/null", "count=10"]
    r = flashpath_dd(*base, *operands, "--device", "nvme-dram")
    assert r.returncode == 2
    assert r.stdout == ""
    assert r.stderr == f"flashpath: error: {message}\n"


def test_non_utf8_operands_are_escaped_as_dd_does() -> None:
    r = subprocess.run(
        [sys.executable, "-m", "flashpath.cli", "dd", b"count=\xff\x01", "if=/dev/sda"]
        + ["--device", "nullblk"],
        capture_output=True,
        timeout=60,
    )
    assert r.returncode == 2
    assert (
        r.stderr == b"flashpath: error: dd: invalid number: '\\377\\001' "
        b"(operand 'count=\\377\\001')\n"
    )
