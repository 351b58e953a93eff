"""write_hist_log as fio 3.33 writes it (stat.c add_clat_sample, iolog.c
flush_hist_samples): per direction, every log_hist_msec, the clat
histogram's change since the last line, its 1856 bins summed
2^log_hist_coarseness at a time; read by fio's own tools/hist/
fiologparser_hist.py (copied byte for byte from fio 3.33 into
tests/fixtures/fio_tools, see the README there: GPL-2.0 as fio).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import FIXTURES, cli, real_fio_json

FIO = shutil.which("fio")
need_fio = pytest.mark.skipif(FIO is None, reason="the real fio is not installed")
PARSER = FIXTURES / "fio_tools" / "fiologparser_hist.py"

# A paced null-engine job: 2000 IOPS for 1 s, a histogram every 100 ms.
JOB = """[h]
ioengine=null
size=1g
bs=4k
rate_iops=2000
runtime=1
time_based
write_hist_log=h
log_hist_msec=100
log_hist_coarseness={coarse}
"""

PLAT_NR = 1856  # FIO_IO_U_PLAT_GROUP_NR (29) x 64, stat.h


def rows(path: Path) -> list[list[int]]:
    return [[int(x) for x in line.split(",")] for line in path.read_text().splitlines()]


def ours(tmp_path: Path, coarse: int) -> list[list[int]]:
    (tmp_path / "job.fio").write_text(JOB.format(coarse=coarse))
    r = cli("run", "job.fio", "--device", "nullblk", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    return rows(tmp_path / "h_clat_hist.1.log")


@pytest.mark.parametrize("coarse", [0, 4, 7])
def test_hist_log_windows_and_bins(tmp_path: Path, coarse: int) -> None:
    log = ours(tmp_path, coarse)
    # fio's loop sums bins j..j+stride for j < 1856 - stride, then one sum
    # at 1856 - stride: 1856 / stride columns, rounded up.
    stride = 1 << coarse
    assert {len(r) for r in log} == {3 + -(-PLAT_NR // stride)}
    # The first window starts at the first completion whose elapsed ms is
    # not 0 (1 ms here: add_clat_sample takes hist_last = elapsed only while
    # it is 0) and each moves on by exactly 100 ms; the one open at the end
    # (901 .. 1000 ms) is not written.
    assert [r[0] for r in log] == list(range(101, 1000, 100))
    assert {(r[1], r[2]) for r in log} == {(0, 4096)}
    # Each line holds the I/Os completed since the line before: 200 in 100
    # ms at 2000 IOPS, and the first everything from the start (the I/Os
    # at 0, 0.5, ... 101 ms: 203). (A stride that does not divide 1856
    # makes the last two columns overlap; the null engine's latencies fall
    # in the first.)
    assert [sum(r[3:]) for r in log] == [203] + [200] * 8


def test_hist_log_with_no_period_is_an_empty_file(tmp_path: Path) -> None:
    # log_hist_msec=0 (the default): fio creates the file and writes nothing.
    (tmp_path / "job.fio").write_text("[h]\nioengine=null\nsize=1m\nwrite_hist_log\n")
    r = cli("run", "job.fio", "--device", "nullblk", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "h_clat_hist.1.log").read_text() == ""


def test_hist_log_coarseness_past_the_bins_is_refused(tmp_path: Path) -> None:
    (tmp_path / "job.fio").write_text(JOB.format(coarse=11))
    r = cli("run", "job.fio", "--device", "nullblk", cwd=tmp_path)
    assert r.returncode != 0
    assert "job.fio" in r.stderr and "log_hist_coarseness" in r.stderr


@need_fio
@pytest.mark.parametrize("coarse", [0, 4, 7])
def test_hist_log_shape_matches_the_real_fio(tmp_path: Path, coarse: int) -> None:
    assert FIO is not None
    (tmp_path / "job.fio").write_text(JOB.format(coarse=coarse))
    real_fio_json(tmp_path)
    real = rows(tmp_path / "h_clat_hist.1.log")
    (tmp_path / "ours").mkdir()
    mine = ours(tmp_path / "ours", coarse)
    assert real, "the real fio wrote no histogram line"
    assert {len(x) for x in real} == {len(x) for x in mine}
    assert {(x[1], x[2]) for x in real} == {(0, 4096)}
    # The real windows move on by 100 ms too: the k-th line comes at least
    # 100 k ms after the first window opened (>= 1 ms), later under load
    # (a line's time is the completion that closed it), and a 1 s job
    # leaves at most nine.
    times = [x[0] for x in real]
    assert times == sorted(set(times)), times
    assert all(t >= 1 + 100 * (k + 1) for k, t in enumerate(times)), times
    assert len(real) <= 9, times


def parse_hist(folder: Path, *extra: str) -> list[str]:
    """fio's fiologparser_hist.py on folder's h_clat_hist.1.log."""
    r = subprocess.run(
        [sys.executable, str(PARSER), "--group_nr", "29", *extra, "h_clat_hist.1.log"],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    return r.stdout.splitlines()


def test_fios_hist_parser_reads_our_log(tmp_path: Path) -> None:
    ours(tmp_path, 4)
    lines = parse_hist(tmp_path)
    assert lines[0].startswith("end-time, samples,"), lines[:2]
    # Its default 1000 ms interval takes in the nine lines: the 1803 I/Os
    # they hold, with min, percentiles and max read from the bins.
    assert len(lines) == 2, lines
    fields = [float(x) for x in lines[1].split(",")]
    assert fields[0] == 1000 and fields[1] == 1803, lines


@need_fio
def test_fios_hist_parser_reads_ours_as_the_real_fios(tmp_path: Path) -> None:
    """The parser at 100 ms intervals on both logs: the same header and the
    same rows (end times 100 .. 1000 ms). Its sample counts spread each
    line over the intervals it overlaps (ours: 203, 403, 400 x 7, 200;
    1803 I/Os counted about twice); the real fio's come within 10% of ours
    row by row (its lines are stamped by the completion that closed them,
    a few ms late under load, and its rate limiter lets a few I/Os more or
    fewer through a window: 388 to 404 seen)."""
    (tmp_path / "job.fio").write_text(JOB.format(coarse=4))
    real_fio_json(tmp_path)
    (tmp_path / "ours").mkdir()
    ours(tmp_path / "ours", 4)
    real = parse_hist(tmp_path, "-i", "100")
    mine = parse_hist(tmp_path / "ours", "-i", "100")
    assert real[0] == mine[0] and real[0].startswith("end-time, samples,"), (real[0], mine[0])

    def table(lines: list[str]) -> list[tuple[int, float]]:
        return [(int(float(x.split(",")[0])), float(x.split(",")[1])) for x in lines[1:]]

    assert table(mine) == [(100, 203), (200, 403)] + [(t, 400) for t in range(300, 1000, 100)] + [
        (1000, 200)
    ]
    assert [t for t, _ in table(real)] == [t for t, _ in table(mine)], real
    for (_, r), (_, m) in zip(table(real), table(mine), strict=True):
        assert abs(r - m) <= 0.1 * m, (real, mine)
