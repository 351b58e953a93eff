"""Sweep specs: the points a spec makes, and one message naming the spec
file, the line and the key for each kind of bad spec (unknown key, bad
value, empty axis, type error, bad TOML), checked with the core."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import cli
from flashpath._jobtext import add_options
from flashpath._tomlpos import key_lines, line_of
from flashpath.sweep_spec import SpecError, check, load_spec, parse_spec

JOB = "[j]\nioengine=libaio\ndirect=1\nrw=randread\nbs=4k\nsize=1m\nnumber_ios=20\n"


def spec_at(tmp_path: Path, body: str) -> Path:
    (tmp_path / "base.fio").write_text(JOB)
    spec = tmp_path / "s.toml"
    spec.write_text('job = "base.fio"\ndevice = "nullblk"\n' + body)
    return spec


def test_grid_zip_and_points_make_the_product_in_spec_order(tmp_path: Path) -> None:
    spec = load_spec(
        spec_at(
            tmp_path,
            "[grid]\nfio.iodepth = [1, 2]\ndevice.completion_nsec = ['5us', '7us']\n"
            "[[zip]]\nfio.bs = ['4k', '8k', '16k']\nseed = [7, 8, 9]\n"
            "[[points]]\nhost.cost.wakeup = 100\n[[points]]\nhost.cost.wakeup = 200\n",
        )
    )
    assert spec.axes == [
        "fio.iodepth",
        "device.completion_nsec",
        "fio.bs",
        "seed",
        "host.cost.wakeup",
    ]
    assert len(spec.points) == 2 * 2 * 3 * 2
    first, second, last = spec.points[0], spec.points[1], spec.points[-1]
    assert first.values == {
        "fio.iodepth": 1,
        "device.completion_nsec": "5us",
        "fio.bs": "4k",
        "seed": 7,
        "host.cost.wakeup": 100,
    }
    # The last dimension varies fastest.
    assert second.values["host.cost.wakeup"] == 200 and second.values["fio.bs"] == "4k"
    assert last.values == {
        "fio.iodepth": 2,
        "device.completion_nsec": "7us",
        "fio.bs": "16k",
        "seed": 9,
        "host.cost.wakeup": 200,
    }
    assert last.seed == 9 and last.device == "nullblk"
    assert last.overrides == ("device.completion_nsec=7us", "host.cost.wakeup=200")
    assert last.fio == (("iodepth", "2"), ("bs", "16k"))
    assert [p.index for p in spec.points] == list(range(24))


def test_fixed_values_apply_to_every_point_and_are_not_columns(tmp_path: Path) -> None:
    spec = load_spec(
        spec_at(tmp_path, "seed = 5\n[fixed]\nfio.direct = true\nblock.io_poll = false\n")
    )
    assert spec.axes == [] and len(spec.points) == 1
    (p,) = spec.points
    assert p.seed == 5 and p.values == {}
    assert p.overrides == ("block.io_poll=false",) and p.fio == (("direct", "1"),)


def test_added_options_end_every_job_section_and_lines_map_back() -> None:
    base = "[global]\nbs=4k\n\n[a]\nrw=read\n; comment [x]\n[b]\nrw=write\n"
    composed = add_options(base, [("iodepth", "8"), ("bs", "16k")])
    assert composed.text == (
        "[global]\nbs=4k\n\n[a]\nrw=read\n; comment [x]\niodepth=8\nbs=16k\n"
        "[b]\nrw=write\niodepth=8\nbs=16k\n"
    )
    assert composed.source_of(5) == 5
    assert composed.source_of(7) == "iodepth" and composed.source_of(8) == "bs"
    assert composed.source_of(9) == 7  # [b]
    assert composed.source_of(12) == "bs"


def test_key_lines_follow_headers_dotted_and_quoted_keys() -> None:
    text = (
        'job_text = """\n[j]\nrw=read # [grid]\n"""\n'  # 1-4: a multi-line string
        "[grid]\n"  # 5
        "fio.iodepth = [\n  1,\n  2,\n]\n"  # 6-9
        '"device.completion_nsec" = [1]\n'  # 10
        "[[zip]]\nseed = [1]\n"  # 11-12
        "[[zip]]\n  fio.bs = ['4k']  # x = 1\n"  # 13-14
        "[grid.host]\ncpus = [2]\n"  # 15-16
    )
    lines = key_lines(text)
    assert line_of(lines, (), "job_text") == 1
    assert line_of(lines, ("grid",), "fio.iodepth") == 6
    assert line_of(lines, ("grid",), "device.completion_nsec") == 10
    assert line_of(lines, ("zip", 0), "seed") == 12
    assert line_of(lines, ("zip", 1), "fio.bs") == 14
    assert line_of(lines, ("grid",), "host.cpus") == 16
    assert line_of(lines, ("grid",), "") == 5
    assert ((), "rw") not in lines and (("grid",), "x") not in lines


# (spec body after job and device, line, key, words the message has)
BAD_SPECS = [
    ("[grid]\nfio.iodepth = []\n", 4, "fio.iodepth", "empty axis"),
    ("[grid]\nfio.iodepth = 4\n", 4, "fio.iodepth", "an axis is an array of values"),
    ("[grid]\nseed = [1, 'two']\n", 4, "seed", "a seed is an integer, not a string"),
    ("[grid]\nseed = [-1]\n", 4, "seed", "outside 0 to 2^64 - 1"),
    ("[grid]\nfio.bs = [[4096]]\n", 4, "fio.bs", "not an array"),
    ("[grid]\nfio.iodepth = [1, 1]\n", 4, "fio.iodepth", "listed twice"),
    ("[grid]\niodepth = [1, 2]\n", 4, "iodepth", "not an axis"),
    ("devise = 'x'\n", 3, "devise", "unknown key"),
    ("[grid]\nfio.bs = ['4k', '8k#']\n", 4, "fio.bs", "cannot be a fio option value"),
    ("[[zip]]\nfio.bs = ['4k', '8k']\nseed = [1]\n", 5, "seed", "zipped axes have equal lengths"),
    ("[[points]]\nseed = 1\n[[points]]\nfio.bs = '4k'\n", 6, "fio.bs", "names the same keys"),
    ("[grid]\nseed = [1]\n[fixed]\nseed = 3\n", 6, "seed", "top level"),
    ("seed = 2\n[grid]\nseed = [1]\n", 3, "seed", "an axis too"),
    ("[fixed]\nfio.bs = '4k'\n[grid]\nfio.bs = ['8k']\n", 6, "fio.bs", "already given (line 4)"),
    # Asked of the core: a --set key it does not know, a value out of its
    # range, a fio option it does not know, a fio value fio refuses.
    ("[grid]\ndevice.completion_nsex = [1]\n", 4, "device.completion_nsex", "did you mean"),
    ("[grid]\nhost.cpus = [2, 0]\n", 4, "host.cpus", "host.cpus"),
    ("[grid]\nfio.iodeptx = [1]\n", 4, "fio.iodeptx", "not a fio option"),
    ("[grid]\nfio.rw = ['read', 'sideways']\n", 4, "fio.rw", "sideways"),
    ("[grid]\nfio.iodepth = [1, 0]\n", 4, "fio.iodepth", "min value out of range"),
    # The core refuses the second point: its own [[points]] table's line.
    ("[[points]]\nhost.cpus = 2\n[[points]]\nhost.cpus = 0\n", 6, "host.cpus", "point 1"),
    ("[grid]\ndevice = ['nullblk']\n", 2, "device", "an axis too (line 4)"),
    ("[grid\n", 3, "", "not valid TOML"),
]


@pytest.mark.parametrize(("body", "line", "key", "words"), BAD_SPECS)
def test_bad_specs_name_the_file_line_and_key(
    tmp_path: Path, body: str, line: int, key: str, words: str
) -> None:
    spec = spec_at(tmp_path, body)
    with pytest.raises(SpecError) as info:
        check(load_spec(spec))
    message = str(info.value)
    assert message.startswith(f"{spec}:{line}: {key}"), message
    assert words in message, message
    assert "\n" not in message


def test_an_unknown_device_in_an_axis(tmp_path: Path) -> None:
    (tmp_path / "base.fio").write_text(JOB)
    spec = tmp_path / "s.toml"
    spec.write_text('job = "base.fio"\n[grid]\ndevice = ["nullblk", "nope"]\n')
    with pytest.raises(SpecError) as info:
        check(load_spec(spec))
    message = str(info.value)
    assert message.startswith(f"{spec}:3: device: no profile named 'nope'"), message


def test_the_cli_gives_one_message_and_exit_2(tmp_path: Path) -> None:
    spec = spec_at(tmp_path, "[grid]\nfio.iodepth = [1, 2]\ndevice.completion_nsec = [1, -5]\n")
    r = cli("sweep", "s.toml", cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr
    assert r.stderr.splitlines() == [
        "flashpath: error: s.toml:5: device.completion_nsec = -5: "
        + r.stderr.split("device.completion_nsec = -5: ", 1)[1].rstrip("\n")
    ]
    assert "outside" in r.stderr
    # Nothing was run or written.
    assert not (tmp_path / "s.parquet").exists() and not (tmp_path / "s.parquet.parts").exists()
    assert spec.read_text().startswith("job")


def test_a_bad_base_job_is_named_with_the_spec(tmp_path: Path) -> None:
    (tmp_path / "base.fio").write_text("[j]\nioengine=libaio\nrw=sideways\n")
    (tmp_path / "s.toml").write_text('job = "base.fio"\ndevice = "nullblk"\n')
    with pytest.raises(SpecError) as info:
        check(load_spec(tmp_path / "s.toml"))
    message = str(info.value)
    assert message.startswith("base.fio:3: "), message
    assert f"the job of {tmp_path / 's.toml'}:1" in message


def test_missing_job_and_spec_files(tmp_path: Path) -> None:
    (tmp_path / "s.toml").write_text('job = "none.fio"\ndevice = "nullblk"\n')
    with pytest.raises(SpecError, match=r"s\.toml:1: job: cannot read 'none.fio'"):
        load_spec(tmp_path / "s.toml")
    r = cli("sweep", "missing.toml", cwd=tmp_path)
    assert r.returncode == 2 and r.stderr == "flashpath: error: missing.toml: no such sweep spec\n"


def test_inline_job_text_errors_name_the_spec(tmp_path: Path) -> None:
    text = 'device = "nullblk"\njob_text = """\n[j]\nrw=sideways\n"""\n'
    spec = parse_spec(text, "inline.toml", tmp_path)
    with pytest.raises(SpecError) as info:
        check(spec)
    assert str(info.value).startswith("inline.toml job_text:2: "), str(info.value)


def test_checks_leave_no_file_beside_the_job(tmp_path: Path) -> None:
    spec = spec_at(tmp_path, "[grid]\nfio.iodepth = [1, 2, 4]\n")
    check(load_spec(spec))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["base.fio", "s.toml"]


def test_endless_files_are_refused_not_read(tmp_path: Path) -> None:
    (tmp_path / "s.toml").write_text('job = "/dev/zero"\ndevice = "nullblk"\n')
    with pytest.raises(SpecError, match=r"s\.toml:1: job: '/dev/zero' is longer than 16 MiB"):
        load_spec(tmp_path / "s.toml")
    with pytest.raises(SpecError, match=r"^/dev/zero: a sweep spec longer than 16 MiB"):
        load_spec("/dev/zero")
