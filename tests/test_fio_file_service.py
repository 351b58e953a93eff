"""file_service_type as fio 3.33 picks a job's files (io_u.c __get_next_file).

- roundrobin:N: the next file in turn, N I/Os at a time;
- sequential: each file until it is done, then the next;
- random:N: a file drawn uniformly, N I/Os at a time, done files skipped.

Before, any `roundrobin:N` ran as roundrobin:1 (a silent default) and
sequential and random were refused. Each file's own offsets are fio's
(sequential jobs), so the order of files and offsets is compared exactly
with the real fio's write_iolog where no random draw is involved, and for
random draws the rule is checked on both logs: a pick keeps N I/Os unless
its file runs out.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conftest import cli, real_fio

FIO = shutil.which("fio")
need_fio = pytest.mark.skipif(FIO is None, reason="the real fio is not installed")

JOB = "[a]\nioengine=null\nrw=read\nbs=4k\nsize={size}\nnrfiles={n}\nfile_service_type={fst}\n"


def ios(folder: Path, job: str, real: bool) -> list[tuple[str, int]]:
    """(file, offset) of each I/O in the job's write_iolog."""
    folder.mkdir()
    (folder / "job.fio").write_text(job + "write_iolog=io.log\n")
    if real:
        r = real_fio(folder, "--output-format=terse", "job.fio")
    else:
        r = cli("run", "job.fio", "--device", "nullblk", cwd=folder)
    assert r.returncode == 0, r.stderr
    out = []
    for line in (folder / "io.log").read_text().splitlines()[1:]:
        f = line.split()
        if len(f) == 5:
            out.append((f[1], int(f[3])))
    return out


@need_fio
@pytest.mark.parametrize(
    ("fst", "n"),
    [("roundrobin:4", 2), ("roundrobin:3", 3), ("sequential", 3), ("roundrobin", 3)],
)
def test_the_order_of_files_is_fios(tmp_path: Path, fst: str, n: int) -> None:
    job = JOB.format(size=f"{32 * n}k", n=n, fst=fst)
    assert ios(tmp_path / "ours", job, False) == ios(tmp_path / "fio", job, True)


def picks_keep_n(seq: list[tuple[str, int]], n: int, per_file: int) -> bool:
    """Every run of one file's I/Os is a multiple of n long, or ends with
    that file's last I/O (a done file ends its pick early)."""
    done: dict[str, int] = {}
    i = 0
    while i < len(seq):
        j = i
        while j < len(seq) and seq[j][0] == seq[i][0]:
            j += 1
        done[seq[i][0]] = done.get(seq[i][0], 0) + (j - i)
        if (j - i) % n != 0 and done[seq[i][0]] != per_file:
            return False
        i = j
    return True


@need_fio
@pytest.mark.parametrize("n", [1, 3])
def test_random_picks_keep_n_ios_and_skip_done_files(tmp_path: Path, n: int) -> None:
    fst = "random" if n == 1 else f"random:{n}"
    job = JOB.format(size="256k", n=4, fst=fst)
    per_file = 64 * 1024 // 4096
    for who, real in (("fio", True), ("ours", False)):
        seq = ios(tmp_path / who, job, real)
        assert len(seq) == 4 * per_file, who
        # Each file is read through once, in order.
        for name in {f for f, _ in seq}:
            offs = [o for f, o in seq if f == name]
            assert offs == [4096 * k for k in range(per_file)], (who, name)
        assert picks_keep_n(seq, n, per_file), (who, seq)
        # Drawn, not taken in turn: some pick repeats the previous file or
        # skips one (in turn, file k + 1 always follows file k).
        files = [f for f, _ in seq][::n]
        names = sorted({f for f, _ in seq})
        in_turn = all(
            names.index(b) == (names.index(a) + 1) % len(names)
            for a, b in zip(files, files[1:], strict=False)
        )
        assert not in_turn, (who, files)


def test_skewed_file_draws_are_refused_by_name(tmp_path: Path) -> None:
    (tmp_path / "job.fio").write_text(JOB.format(size="64k", n=2, fst="zipf:1.2"))
    r = cli("run", "job.fio", "--device", "nullblk", cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    assert "file_service_type=zipf" in r.stderr and "job.fio:1" in r.stderr
