"""bench/mqsim/cg_layers.py: instructions per I/O by layer from two
cachegrind output files (made up here, in cachegrind's format: `fl=` and
`fn=` lines, then `line Ir` pairs)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from conftest import REPO

SCRIPT = REPO / "bench" / "mqsim" / "cg_layers.py"


def _cg(path: Path, counts: dict[str, int]) -> Path:
    """A cachegrind file charging `counts[fn]` instructions to each function,
    split over two lines and two files (inlined code of another file)."""
    lines = ["desc: I1 cache:", "cmd: python", "events: Ir"]
    for fn, ir in counts.items():
        lines += [
            "fl=/src/a.rs",
            f"fn={fn}",
            f"10 {ir // 2}",
            "fi=/rustc/x/library/core/src/cmp.rs",
        ]
        lines += [f"20 {ir - ir // 2}", "fe=/src/a.rs"]
    lines.append(f"summary: {sum(counts.values())}")
    path.write_text("\n".join(lines) + "\n")
    return path


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=60
    )


def test_layers_are_the_difference_per_io_charged_to_the_functions_module(tmp_path: Path) -> None:
    short = _cg(
        tmp_path / "short.out",
        {
            "flashpath::sim::timeline::Timeline::reserve": 1_000,
            "flashpath::run::Prepared::run": 5_000,
            "flashpath::machine::Machine::run": 2_000,
            "_PyEval_EvalFrameDefault": 9_000,
        },
    )
    long = _cg(
        tmp_path / "long.out",
        {
            "flashpath::sim::timeline::Timeline::reserve": 41_000,
            "flashpath::run::Prepared::run": 25_000,
            "flashpath::machine::Machine::run": 12_000,
            "flashpath::machine::thread::<impl flashpath::machine::Machine>::reap": 3_000,
            "<flashpath::driver::nvme::Nvme as flashpath::driver::Driver<E>>::queue_rq": 4_000,
            "flashpath::device::ftl::FlashDevice::read_one": 8_000,
            "_PyEval_EvalFrameDefault": 9_000,
        },
    )
    res = _run(str(short), str(long), "100", "--functions", "1")
    assert res.returncode == 0, res.stderr
    rows = dict(line.split("\t") for line in res.stdout.splitlines() if "\t" in line)
    # (41,000 - 1,000) / 100 and so on; Python's unchanged count cancels.
    # The event loop is run::Prepared::run in older builds and
    # machine::Machine::run in newer ones (200 + 100); the machine's other
    # functions stay in the machine's row.
    assert rows == {
        "total": "850",
        "sim/timeline": "400",
        "event loop (Machine::run)": "300",
        "device/ftl": "80",
        "driver": "40",
        "machine": "30",
    }
    assert res.stdout.splitlines()[-1].split() == [
        "400",
        "flashpath::sim::timeline::Timeline::reserve",
    ]


def test_bad_input_is_one_message_naming_the_file(tmp_path: Path) -> None:
    job = tmp_path / "job.fio"
    job.write_text("[w]\nrw=read\n")
    res = _run(str(job), str(job), "10")
    assert res.returncode != 0
    assert res.stderr.strip() == f"{job}: line 1: not a cachegrind output file"
    res = _run(str(tmp_path / "missing.out"), str(job), "10")
    assert res.returncode != 0 and "missing.out: cannot read" in res.stderr
    assert "Traceback" not in res.stderr
    res = _run(str(job), str(job), "0")
    assert res.returncode == 2 and "ios must be positive, got 0" in res.stderr
