"""fio 3.33's flow control between jobs (flow.c): the jobs of one flow_id
share their I/Os by their `flow` weights; a job ahead of its share waits
(flow_sleep, or at once again with flow_sleep=0) until the others catch up.

Each test asserts the share fio's source gives (without fio), and, where
the real fio is installed, that fio shares the I/Os the same way.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import cli, real_fio_json

FIO = shutil.which("fio")
need_fio = pytest.mark.skipif(FIO is None, reason="the real fio is not installed")

# Three free-running null-engine jobs of weights 1, 5 and 10 (as fio's
# t0012 test); with flow_sleep a held job sleeps 100 us.
WEIGHTS = """[global]
bs=4k
ioengine=null
size=100g
runtime=1
time_based
flow_id=1
{sleep}
[flow1]
flow=1
[flow2]
flow=5
[flow3]
flow=10
"""

# A rate-limited job of weight 1 paces a free one of weight 8 (fio's t0011).
PACED = """[global]
bs=4k
ioengine=null
size=100g
runtime=1
flow_id=1
[flow1]
flow=1
rate_iops=1000
[flow2]
flow=8
"""


def ios_of(doc: dict) -> dict[str, int]:  # type: ignore[type-arg]
    return {j["jobname"]: j["read"]["total_ios"] for j in doc["jobs"]}


def ours(tmp_path: Path, text: str) -> dict[str, int]:
    (tmp_path / "job.fio").write_text(text)
    r = cli("run", "job.fio", "--device", "nullblk", "--output-format", "json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    return ios_of(json.loads(r.stdout))


def real(tmp_path: Path, text: str) -> dict[str, int]:
    assert FIO is not None
    (tmp_path / "job.fio").write_text(text)
    return ios_of(real_fio_json(tmp_path))


def assert_shared_by_weight(n: dict[str, int], weights: dict[str, int]) -> None:
    base = n["flow1"] / weights["flow1"]
    assert base > 10, n
    for name, w in weights.items():
        # flow_threshold_exceeded holds a job once its share is above its
        # weight's: the counts stay within an I/O per job of the weights.
        assert abs(n[name] / w - base) <= 0.02 * base + 1, n


@pytest.mark.parametrize("sleep", ["", "flow_sleep=100"])
def test_jobs_of_a_flow_share_ios_by_weight(tmp_path: Path, sleep: str) -> None:
    n = ours(tmp_path, WEIGHTS.format(sleep=sleep))
    assert_shared_by_weight(n, {"flow1": 1, "flow2": 5, "flow3": 10})


# The real fio's jobs run in wall-clock time, and free-running jobs of a
# shared runtime end at moments the machine's load decides: a job left
# alone runs free, and on a loaded 2-core machine the counts of WEIGHTS
# were off their weights by any amount. So the real fio is checked on
# jobs whose life lies inside a paced anchor's: weights 5 and 10 bounded
# to 5 x 1024 and 10 x 1024 I/Os each need 1024 of the anchor's I/Os
# (1000 IOPS) and end together after about 1.02 s.
ANCHORED = """[global]
bs=4k
ioengine=null
size=100g
flow_id=1
{sleep}
[flow1]
flow=1
rate_iops=1000
runtime=8
time_based
[flow2]
flow=5
size=20m
[flow3]
flow=10
size=40m
"""


@need_fio
@pytest.mark.parametrize("sleep", ["", "flow_sleep=100"])
def test_the_real_fio_shares_ios_by_weight(tmp_path: Path, sleep: str) -> None:
    assert FIO is not None
    (tmp_path / "job.fio").write_text(ANCHORED.format(sleep=sleep))
    doc = real_fio_json(tmp_path)
    n, ms = ios_of(doc), runtimes_of(doc)
    assert (n["flow2"], n["flow3"]) == (5120, 10240), n
    # Held to its weight's share: neither runs ahead of the anchor's 1024
    # I/Os (a free null-engine job would issue them in milliseconds).
    assert ms["flow2"] >= 1000 and ms["flow3"] >= 1000, ms
    if sleep:
        # Sleeping while held, they leave the anchor its CPU and end inside
        # its life. (With flow_sleep=0 fio's held jobs spin, and three
        # spinning threads on two cores slow the anchor itself: 558 I/Os in
        # 3 s were seen, so no upper bound holds there.)
        assert ms["flow2"] < ms["flow1"] and ms["flow3"] < ms["flow1"], ms


# The real fio 3.33 on ANCHORED (fio --output-format=json, 2026-11-27, this
# machine): flow2 and flow3 end after 1019 and 1021 ms with flow_sleep=100,
# their mean lat 185 and 111 ns; the anchor's 1024 I/Os at 1000 IOPS bound
# the run time from below. fio checks the flow before it takes an io_u
# (backend.c do_io: flow_threshold_exceeded, then get_io_u stamps
# start_time), so a held job's sleep is never part of an I/O's latency.
REAL_ANCHORED_MS = (1019, 1021)


@pytest.mark.parametrize("sleep", ["", "flow_sleep=100"])
def test_a_held_jobs_wait_is_not_latency_and_it_ends_with_the_anchor(
    tmp_path: Path, sleep: str
) -> None:
    (tmp_path / "job.fio").write_text(ANCHORED.format(sleep=sleep))
    r = cli("run", "job.fio", "--device", "nullblk", "--output-format", "json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    n, ms = ios_of(doc), runtimes_of(doc)
    assert (n["flow2"], n["flow3"]) == (5120, 10240), n
    # Each needs 1024 of the anchor's I/Os: 1.023 s at 1000 IOPS, as the
    # real fio's 1019-1021 ms. (A sleeping job that held its core for its
    # wake-up delayed the others' I/Os by a whole sleep: 1397 ms.)
    for name in ("flow2", "flow3"):
        assert 1000 <= ms[name] <= 1.02 * max(REAL_ANCHORED_MS), ms
    for j in doc["jobs"]:
        if j["jobname"] in ("flow2", "flow3"):
            lat = j["read"]["lat_ns"]
            # A null-engine I/O costs fio's own work, under a microsecond
            # (the real fio: 111-250 ns); a held job's wait (a 100 us
            # flow_sleep, or the 1 us re-check) counted in it gave 100-136 us.
            assert lat["mean"] < 1_000 and lat["max"] < 100_000, (j["jobname"], lat)


@need_fio
def test_the_real_fios_held_jobs_have_null_engine_latency(tmp_path: Path) -> None:
    assert FIO is not None
    (tmp_path / "job.fio").write_text(ANCHORED.format(sleep="flow_sleep=100"))
    for j in real_fio_json(tmp_path)["jobs"]:
        if j["jobname"] in ("flow2", "flow3"):
            # The mean over 5120 or 10240 I/Os (111-185 ns here): preempted
            # I/Os on a loaded machine move it by microseconds; a hold in
            # the latency would put a 100 us sleep (plus its 50 us slack)
            # in most I/Os, as flashpath's 136 us mean did.
            assert j["read"]["lat_ns"]["mean"] < 50_000, j["read"]["lat_ns"]


def test_a_rate_limited_job_paces_its_flow(tmp_path: Path) -> None:
    n = ours(tmp_path, PACED)
    # flow1 issues at most 1000 IOPS for 1 s; flow2 is held to 8 times it.
    assert 0 < n["flow1"] <= 1001
    # Within one I/O of flow1 plus what flow2 issues in the moment after
    # flow1 ends and leaves the group (flow_exit_job) before flow2 ends.
    assert abs(n["flow2"] - 8 * n["flow1"]) <= 0.005 * 8 * n["flow1"] + 8
    # Without flow control the null engine's job runs far ahead.
    free = tmp_path / "free"
    free.mkdir()
    m = ours(free, PACED.replace("flow_id=1\n", "").replace("flow=8\n", "flow=0\n"))
    assert m["flow2"] > 20 * n["flow2"]


# A paced job that outlives a bounded one (8192 I/Os of weight 8): the
# bounded job is held to 8 I/Os per paced I/O for its whole life, so it
# needs 8192 / 8 = 1024 of the paced job's I/Os, about 1.02 s at 1000 IOPS.
# Its run time measures the pacing without the wall-clock tail the shared
# runtime leaves (after the paced job ends, the other runs free for as
# long as the machine's load lets it, which no bound holds on a busy CI).
BOUNDED = """[global]
bs=4k
ioengine=null
size=100g
flow_id=1
[flow1]
flow=1
rate_iops=1000
runtime=8
time_based
[flow2]
flow=8
size=32m
"""


def runtimes_of(doc: dict) -> dict[str, int]:  # type: ignore[type-arg]
    return {j["jobname"]: j["job_runtime"] for j in doc["jobs"]}


def assert_bounded_job_paced(n: dict[str, int], ms: dict[str, int]) -> None:
    assert n["flow2"] == 8192, n
    # At most 8 I/Os per paced I/O (flow_threshold_exceeded), and the paced
    # job issues at most 1000 a second: 1024 of them take at least ~1.02 s,
    # where a free null-engine job issues 8192 in milliseconds. Load on the
    # machine can only make it later, and it ends while flow1 still runs
    # (flow1 runs 8 s, so that a loaded machine that stretches flow2's
    # ~1 s several times over still ends it first; with 3 s the real fio
    # once ran past it at a load average of 16 on two cores).
    assert 1000 <= ms["flow2"] < ms["flow1"], ms


def test_a_paced_job_holds_a_bounded_one_to_its_share(tmp_path: Path) -> None:
    (tmp_path / "job.fio").write_text(BOUNDED)
    r = cli("run", "job.fio", "--device", "nullblk", "--output-format", "json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert_bounded_job_paced(ios_of(doc), runtimes_of(doc))


@need_fio
def test_a_rate_limited_job_paces_its_flow_in_the_real_fio(tmp_path: Path) -> None:
    assert FIO is not None
    (tmp_path / "job.fio").write_text(BOUNDED)
    doc = real_fio_json(tmp_path)
    assert_bounded_job_paced(ios_of(doc), runtimes_of(doc))


def test_flow_is_refused_outside_fios_limits(tmp_path: Path) -> None:
    # options.c: flow takes 0..FLOW_MAX_WEIGHT (1000).
    (tmp_path / "job.fio").write_text("[a]\nioengine=null\nsize=1m\nflow=1001\n")
    r = cli("run", "job.fio", "--device", "nullblk", cwd=tmp_path)
    assert r.returncode != 0
    assert "flow" in r.stderr and "job.fio" in r.stderr
