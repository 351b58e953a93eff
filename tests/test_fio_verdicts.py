"""The stored verdicts of the real fio 3.33 (tests/fixtures/fio-verdicts/
verdicts.tsv, which crates/flashpath/tests/fio_differential.rs holds
flashpath to) still are fio's: a deterministic sample of rows is asked
again, the way tests/fio_verdicts.py made them."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

import fio_verdicts as fv

# Every SAMPLE_EVERY-th row: about 245 of them, about half a minute of fio.
SAMPLE_EVERY = 30


def test_fio_still_gives_the_stored_verdicts() -> None:
    assert shutil.which("fio"), "fio is not installed (CI installs Debian's fio 3.33)"
    version = subprocess.run(["fio", "--version"], capture_output=True, text=True).stdout
    assert version.strip() == "fio-3.33", version
    rows = fv.read_tsv()
    assert len(rows) > 5000
    sample = [r for r in rows if r.option not in fv.TIMING][::SAMPLE_EVERY]
    # The sample holds both verdicts, so a fio that accepted (or refused)
    # everything would fail it.
    assert {r.verdict for r in sample} == {"ok", "refused"}
    verdicts = fv.judge_all([r.pair() for r in sample])
    wrong = [
        f"{r.option}={r.value!r}: stored {r.verdict} ({r.message}), now {v} ({m})"
        for r, (v, m) in zip(sample, verdicts, strict=True)
        if v != r.verdict
    ]
    assert not wrong, "\n".join(wrong)


def test_the_tsv_round_trips() -> None:
    rows = fv.read_tsv()
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "v.tsv"
        fv.write_tsv([r.pair() for r in rows], [(r.verdict, r.message) for r in rows], path)
        assert path.read_text() == fv.TSV.read_text()
