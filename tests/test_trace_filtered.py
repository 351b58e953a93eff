"""A block trace filtered to one action (`blkparse -a issue` keeps only the
dispatches `D`, `-a complete` only the completions `C`) replays from the
events it has, and the run says which it used (events.rs Source).

The filtered text is made two ways: by keeping the lines of that action
from the fixture's blkparse text (no blkparse needed), and, where blkparse
is installed, by blkparse itself from the fixture's binary; the I/Os
replayed are those blkparse's own summary counts for that action.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import FIXTURES, cli

TRACES = FIXTURES / "traces"
TEXT = TRACES / "blkparse" / "regen_blktrace_viewer_sample.pipe-mode.blkparse.txt"
BIN = TRACES / "blktrace_bin" / "blktrace_viewer_sample.blktrace.0"
BLKPARSE = shutil.which("blkparse")

ACTIONS = {
    "issue": ("D", "issue (D)", "Read Dispatches:"),
    "complete": ("C", "complete (C)", "Reads Completed:"),
}


def replay(trace: Path, tmp_path: Path) -> tuple[dict, str]:  # type: ignore[type-arg]
    out = tmp_path / "out.json"
    r = cli(
        "replay", str(trace), "--device", "nullblk", "--remap", "wrap",
        "--output-format", "json", "--output", str(out),
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    return json.loads(out.read_text()), r.stderr


def events(text: str, act: str) -> list[tuple[int, int]]:
    """(sector, sectors) of the read events of one action."""
    out = []
    for line in text.splitlines():
        f = line.split()
        if len(f) >= 10 and f[5] == act and "R" in f[6] and f[8] == "+":
            out.append((int(f[7]), int(f[9])))
    return out


@pytest.mark.parametrize("action", sorted(ACTIONS))
def test_a_trace_of_one_action_replays_those_events(tmp_path: Path, action: str) -> None:
    act, name, _ = ACTIONS[action]
    text = TEXT.read_text()
    kept = "\n".join(ln for ln in text.splitlines() if len(ln.split()) > 5 and ln.split()[5] == act)
    trace = tmp_path / f"{action}.txt"
    trace.write_text(kept + "\n")
    doc, err = replay(trace, tmp_path)
    want = events(text, act)
    assert want, "the fixture has events of this action"
    job = doc["jobs"][0]
    assert job["read"]["total_ios"] == len(want)
    assert job["read"]["io_bytes"] == 512 * sum(n for _, n in want)
    t = doc["flashpath"]["trace"][0]
    assert t["events_replayed"] == name
    assert f"its {name} events were replayed" in err
    # One action alone pairs no event with its completion: no latency.
    assert t["recorded_ios_with_completion"] == 0


def test_a_whole_trace_still_replays_its_queue_events(tmp_path: Path) -> None:
    doc, err = replay(TEXT, tmp_path)
    assert doc["flashpath"]["trace"][0]["events_replayed"] == "queue (Q)"
    assert "were replayed" not in err


@pytest.mark.skipif(BLKPARSE is None, reason="blkparse is not installed")
@pytest.mark.parametrize("action", sorted(ACTIONS))
def test_blkparse_filtered_output_replays_what_blkparse_counts(tmp_path: Path, action: str) -> None:
    assert BLKPARSE is not None
    _, name, summary = ACTIONS[action]
    with BIN.open("rb") as src:
        r = subprocess.run(
            [BLKPARSE, "-a", action, "-i", "-"],
            stdin=src,
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert r.returncode == 0, r.stderr
    trace = tmp_path / f"{action}.txt"
    trace.write_text(r.stdout)
    line = next(ln for ln in r.stdout.splitlines() if ln.strip().startswith(summary))
    f = line.replace(",", " ").replace("KiB", " ").split()
    n, kib = int(f[2]), int(f[3])
    assert n > 0
    doc, _ = replay(trace, tmp_path)
    assert doc["jobs"][0]["read"]["total_ios"] == n
    assert doc["jobs"][0]["read"]["io_bytes"] == kib * 1024
    assert doc["flashpath"]["trace"][0]["events_replayed"] == name


@pytest.mark.skipif(BLKPARSE is None, reason="blkparse is not installed")
def test_blkparse_queue_only_output_replays_its_queue_events(tmp_path: Path) -> None:
    """`blkparse -a queue` keeps the events of the queue category (A, G, P,
    U and Q here) and no completion: its Q events are the I/Os, as in a
    whole trace, with no recorded latency; blkparse's own "Reads Queued"
    counts them (963 reads, 3852 KiB)."""
    assert BLKPARSE is not None
    with BIN.open("rb") as src:
        r = subprocess.run(
            [BLKPARSE, "-a", "queue", "-i", "-"],
            stdin=src,
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert r.returncode == 0, r.stderr
    acts = {ln.split()[5] for ln in r.stdout.splitlines() if len(ln.split()) > 6 and "," in ln[:8]}
    assert "Q" in acts and not acts & {"D", "C"}, acts
    trace = tmp_path / "queue.txt"
    trace.write_text(r.stdout)
    line = next(ln for ln in r.stdout.splitlines() if ln.strip().startswith("Reads Queued:"))
    f = line.replace(",", " ").replace("KiB", " ").split()
    n, kib = int(f[2]), int(f[3])
    doc, err = replay(trace, tmp_path)
    assert (doc["jobs"][0]["read"]["total_ios"], doc["jobs"][0]["read"]["io_bytes"]) == (
        n,
        kib * 1024,
    )
    t = doc["flashpath"]["trace"][0]
    assert t["events_replayed"] == "queue (Q)" and "were replayed" not in err
    assert t["recorded_ios_with_completion"] == 0
