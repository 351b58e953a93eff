"""blkparse text printed with `-f` format strings (blkparse.1, "OUTPUT
DESCRIPTION AND FORMATTING"): the real blkparse prints the fixture binary
with each format, and `flashpath replay --blkparse-format` reads it back to
the same I/Os, recorded latencies included, as the binary itself."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import FIXTURES, cli

BIN = FIXTURES / "traces" / "blktrace_bin" / "blktrace_viewer_sample.blktrace.0"
BLKPARSE = shutil.which("blkparse")
need_blkparse = pytest.mark.skipif(BLKPARSE is None, reason="blkparse is not installed")

FORMATS = [
    # The default output's fields, written out.
    "%D %2c %8s %5T.%9t %5p %2a %3d %S + %n [%C]\\n",
    # blkreplay's conversion (scripts/conv_blktrace_to_load.sh).
    "%2a ; %6T.%9t ; %12S ; %4n ; %3d ; 0.0 ; 0.0\\n",
    # Bytes instead of sectors, the device as two fields, no blanks.
    "%a,%d,%S,%N,%T.%t,%M,%m\\n",
    # Every field blkparse 1.3 documents (blkparse.1 "OUTPUT DESCRIPTION
    # AND FORMATTING") but %u: the payload (%P, empty here) and its integer
    # (%U), the error, the time as %z, a left-aligned command (%-12C, padded
    # with blanks), %D's padded "259,0  ". (%u, the elapsed time of -t,
    # cannot be printed for this trace: blkparse 1.3 exits with "Expecting
    # elapsed value" at the first event that has none, its first `A`.)
    "%a|%d|%S|%n|%N|%T|%t|%e|%P|%U|%z|%-12C|%M|%m|%c|%s|%p|%D\\n",
]


def printed(fmt: str, tmp_path: Path) -> Path:
    """The fixture binary as `blkparse -i - -f FMT` prints it (pipe mode:
    the file's records are CPU 1's, which blkparse -i FILE refuses)."""
    out = subprocess.run(
        [BLKPARSE or "blkparse", "-i", "-", "-f", fmt.replace("\\n", "\n")],
        stdin=BIN.open("rb"),
        capture_output=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    text = tmp_path / "trace.txt"
    text.write_bytes(out.stdout)
    return text


def replay(trace: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return cli(
        "replay",
        str(trace),
        "--device",
        "nullblk",
        "--remap",
        "wrap",
        "--output-format",
        "json",
        *extra,
    )


@need_blkparse
@pytest.mark.parametrize("fmt", FORMATS)
def test_a_formatted_trace_replays_as_its_binary(tmp_path: Path, fmt: str) -> None:
    whole = replay(BIN)
    assert whole.returncode == 0, whole.stderr
    want = json.loads(whole.stdout)
    out = replay(printed(fmt, tmp_path), "--blkparse-format", fmt)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    for key in ("total_ios", "io_bytes"):
        assert got["jobs"][0]["read"][key] == want["jobs"][0]["read"][key]
    t, w = got["flashpath"]["trace"][0], want["flashpath"]["trace"][0]
    assert t["recorded_ios_with_completion"] == w["recorded_ios_with_completion"] == 963
    assert t["recorded_lat_ns_percentiles"] == w["recorded_lat_ns_percentiles"]


@need_blkparse
def test_a_format_without_what_a_replay_needs_is_refused(tmp_path: Path) -> None:
    fmt = "%a %d %T.%t\\n"
    out = replay(printed(fmt, tmp_path), "--blkparse-format", fmt)
    assert out.returncode != 0 and "a replay needs %S, the sector" in out.stderr, out.stderr
    assert "Traceback" not in out.stderr


@need_blkparse
def test_a_line_that_is_not_the_formats_is_named(tmp_path: Path) -> None:
    text = printed(FORMATS[1], tmp_path)
    out = replay(text, "--blkparse-format", FORMATS[2])
    assert out.returncode != 0, out.stdout
    assert "trace.txt:1: not a line of the blkparse format" in out.stderr, out.stderr
    # A format given with another trace format is a mistake, said so.
    out = replay(text, "--format", "msr", "--blkparse-format", FORMATS[1])
    assert out.returncode != 0 and "--blkparse-format" in out.stderr, out.stderr
