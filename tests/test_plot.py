"""`flashpath plot`: what each kind draws is the table's numbers, and bad
arguments get one message."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from conftest import cli
from flashpath.plot import plot
from flashpath.sweep_run import run_sweep
from flashpath.sweep_spec import parse_spec

# Queue depth x device latency on null_blk, two seeds.
SPEC = """device = "nullblk"
job_text = '''
[r]
ioengine=libaio
direct=1
rw=randread
bs=4k
size=64m
number_ios=64
'''
[grid]
fio.iodepth = [1, 4, 16]
device.completion_nsec = [5000, 20000]
seed = [1, 2]
"""


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("plot")
    out = folder / "t.parquet"
    run_sweep(parse_spec(SPEC, "t.toml", folder), out)
    return out


def test_line_draws_the_mean_per_x_for_each_hue(table: Path, tmp_path: Path) -> None:
    df = pq.read_table(table).to_pandas()
    fig = plot(
        str(table), str(tmp_path / "l.png"), x="fio.iodepth", y="iops", hue="device.completion_nsec"
    )
    (ax,) = fig.axes
    assert [line.get_label() for line in ax.lines] == [
        "device.completion_nsec=5000",
        "device.completion_nsec=20000",
    ]
    for line, device in zip(ax.lines, (5000, 20000), strict=True):
        expected = df[df["device.completion_nsec"] == device].groupby("fio.iodepth")["iops"].mean()
        assert list(line.get_xdata()) == [1, 4, 16]
        assert list(line.get_ydata()) == pytest.approx(list(expected))
    assert (tmp_path / "l.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_breakdown_stacks_the_layers_per_x(table: Path, tmp_path: Path) -> None:
    df = pq.read_table(table).to_pandas()
    fig = plot(
        str(table),
        str(tmp_path / "b.svg"),
        kind="breakdown",
        x="fio.iodepth",
        where=["device.completion_nsec=20000"],
    )
    (ax,) = fig.axes
    sub = df[df["device.completion_nsec"] == 20000]
    heights = {c.get_label(): [p.get_height() for p in c.patches] for c in ax.containers}
    for layer, values in heights.items():
        col = f"fp.breakdown_ns_per_io.{layer}"
        assert values == pytest.approx(list(sub.groupby("fio.iodepth")[col].mean() / 1000))
    # The device's 20 us is in every bar.
    assert all(h >= 20 for h in heights["device"])
    assert (tmp_path / "b.svg").read_text().startswith("<?xml")


def test_cdf_of_a_run_counts_every_io(tmp_path: Path) -> None:
    job = tmp_path / "j.fio"
    job.write_text("[j]\nioengine=libaio\ndirect=1\nrw=randread\nbs=4k\nsize=1m\nnumber_ios=30\n")
    r = cli(
        "run",
        "j.fio",
        "--device",
        "nullblk",
        "--output-format",
        "json+",
        "--output",
        "j.json",
        cwd=tmp_path,
    )
    assert r.returncode == 0, r.stderr
    fig = plot(str(tmp_path / "j.json"), str(tmp_path / "c.png"), kind="cdf")
    (line,) = fig.axes[0].lines
    assert list(line.get_ydata()) == [0.0, 1.0]  # one bin holds all 30
    assert line.get_label() == "j read"


def test_cdf_of_a_table_uses_the_percentiles(table: Path, tmp_path: Path) -> None:
    fig = plot(str(table), str(tmp_path / "c.png"), kind="cdf", hue="fio.iodepth")
    lines = fig.axes[0].lines
    assert len(lines) == 3
    assert list(lines[0].get_ydata())[-1] == pytest.approx(0.9999)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--x", "fio.iodept", "--y", "iops"], "--x 'fio.iodept': no such column; did you mean"),
        (["--x", "fio.iodepth"], "--kind line: give --x and --y"),
        (["--kind", "cdf", "--y", "xlat_ns"], "--y 'xlat_ns': no percentiles of that latency"),
        (["--x", "seed", "--y", "iops", "--where", "seed=9"], "no row has seed = '9'"),
        (["--x", "seed", "--y", "iops", "-o", "p.xyz"], "matplotlib cannot write '.xyz'"),
    ],
)
def test_bad_plot_arguments_are_one_message(
    table: Path, tmp_path: Path, args: list[str], message: str
) -> None:
    out = [] if "-o" in args else ["-o", "p.png"]
    r = cli("plot", str(table), *args, *out, cwd=tmp_path)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    [line] = r.stderr.splitlines()
    assert line.startswith("flashpath: error: ") and message in line, line
    assert not (tmp_path / "p.png").exists()
