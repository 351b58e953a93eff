"""`reproduce` on the sweep engine: worker processes, progress, and the
same numbers as the golden outputs (tests/golden)."""

from __future__ import annotations

import csv
import io

from conftest import REPO, cli


def _golden_rows(scenario: str) -> list[list[str]]:
    rows = list(csv.reader((REPO / "tests" / "golden" / "reproduce-all.csv").open()))
    picked = [r for r in rows[1:] if r[0] == scenario]
    assert picked, f"no {scenario} rows in the golden CSV"
    return [rows[0], *picked]


def test_parallel_reproduce_prints_the_golden_rows() -> None:
    r = cli("reproduce", "io-poll", "--format", "csv", "--jobs", "2")
    assert r.returncode == 0, r.stderr
    assert list(csv.reader(io.StringIO(r.stdout))) == _golden_rows("io-poll")
    # Off a terminal: no bar, one summary line.
    [line] = r.stderr.splitlines()
    assert line.startswith("flashpath reproduce io-poll: 6 runs in ") and "on 2 workers" in line


def test_reproduce_progress_when_asked() -> None:
    r = cli("reproduce", "io-poll", "--format", "csv", "--jobs", "1", "--progress")
    assert r.returncode == 0, r.stderr
    assert "0/6 [" in r.stderr and "pt/s" in r.stderr
    assert list(csv.reader(io.StringIO(r.stdout))) == _golden_rows("io-poll")
