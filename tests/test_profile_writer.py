"""The profile `flashpath calibrate fit` writes comes from the core's
profile writer (crates/flashpath/src/profile/write.rs, `_core.write_profile`):
it writes the shipped fitted profile byte for byte from its values, what it
writes loads back to the same values, and a parameter it cannot write is
one message naming it."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from conftest import REPO
from flashpath import _core, calibrate
from flashpath._core import FlashpathError

FITTED = REPO / "profiles" / "virtio-vda-fitted.toml"


def _from_profile(text: str) -> tuple[calibrate.Candidate, dict[str, str]]:
    dev = tomllib.loads(text)["device"]
    cand = calibrate.Candidate(
        read_fixed_ns=dev["read_fixed"]["value"] * 1e3,
        write_fixed_ns=dev["write_fixed"]["value"] * 1e3,
        transfer_rate=dev["transfer_rate"]["value"] * 1e6,
        iops_cap=dev["iops_cap"]["value"],
        bandwidth_cap=dev["bandwidth_cap"]["value"] * 1e6,
        servers=dev["servers"]["value"],
        dispatch=dev["dispatch"]["value"],
        service_cv=dev["service_cv"]["value"],
    )
    return cand, {f"device.{k}": v["source"] for k, v in dev.items()}


def test_the_shipped_fitted_profile_is_what_the_writer_writes() -> None:
    text = FITTED.read_text()
    cand, sources = _from_profile(text)
    meta = tomllib.loads(text)["profile"]
    # The lines after the writer's own two header lines say where the
    # runs came from (written by hand when the profile was fitted).
    lines = text.splitlines()
    assert lines[:2] == ["# " + h for h in calibrate.HEADER]
    notes = tuple(line.removeprefix("# ").removeprefix("#") for line in lines[2:6])
    out = calibrate.profile_text(
        meta["include"][0], cand, sources, meta["name"], meta["description"], notes
    )
    assert out == text


def test_a_written_profile_loads_back_to_the_fitted_values(tmp_path: Path) -> None:
    cand = calibrate.Candidate(
        12345.6789, 82500.0, 1.33331251e9, 73786.4, 1.0498534e9, 4, "shared", 0.70031
    )
    text = calibrate.profile_text("hosts/x86-generic.toml", cand, {"device.servers": "by hand"})
    path = tmp_path / "fit.toml"
    path.write_text(text)
    dev = tomllib.loads(text)["device"]
    # The values at the precision the fit states them, of the same kind.
    assert dev["read_fixed"]["value"] == 12.346 and dev["read_fixed"]["unit"] == "us"
    assert dev["write_fixed"]["value"] == 82.5 and isinstance(dev["write_fixed"]["value"], float)
    assert dev["transfer_rate"]["value"] == 1333.313
    assert dev["iops_cap"]["value"] == 73786 and isinstance(dev["iops_cap"]["value"], int)
    assert dev["service_cv"]["value"] == 0.7003
    assert dev["servers"] == {"value": 4, "unit": "count", "source": "by hand"}
    assert dev["dispatch"]["source"] == "fitted"
    # The core loads it (with its host include), and takes --set on a
    # fault key as on every shipped profile.
    shown = _core.profile_show(str(path), ["device.badblocks=0,7"])
    assert "read_fixed" in shown and "12.346" in shown
    assert "--set device.badblocks=0,7" in shown
    # The simulated QD1 read takes the fitted fixed time plus the host's.
    job = "[j]\nioengine=libaio\ndirect=1\nrw=randread\nbs=4k\nsize=1g\nnumber_ios=200\n"
    run = _core.run_job_text(job, "<job>", str(tmp_path), str(path), [], 0, "json")
    assert run.completed_ios == 200


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ([("servers", 1, "count", "s")], "parameter 'servers': not under a section"),
        ([("device.x", 1, "furlong", "s")], "parameter 'device.x': unknown unit 'furlong'"),
        ([("device.x", 1, "count", "")], "parameter 'device.x': empty source"),
        ([("device.x", float("nan"), "ns", "s")], "parameter 'device.x': NaN is not a finite"),
        ([("device.x", {"a": 1}, "count", "s")], "parameter 'device.x': a value is a bool"),
        ([("device.x", 2**64, "count", "s")], "parameter 'device.x': an integer outside 64 bits"),
        (
            [("device.x", [[[[[1]]]]], "count", "s")],
            "parameter 'device.x': lists nested too deeply",
        ),
        ([("device.x", 1, "count", "s"), ("device.x", 2, "count", "s")], "given twice"),
    ],
)
def test_a_parameter_the_writer_cannot_write_is_one_message(params, expected: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(FlashpathError) as err:
        _core.write_profile("n", "d", [], params)
    assert expected in str(err.value.args[0]), err.value.args


def test_values_of_every_kind_read_back() -> None:
    params = [
        ("device.flag", True, "bool", "s"),
        ("device.count", -3, "count", "s"),
        ("device.time", 1e-3, "us", "s"),
        ("device.whole", 2.0, "us", "s"),
        ("device.name", 'a "quoted"\tname', "name", "s\n2"),
        ("device.list", [1, 2.5], "count", "s"),
    ]
    text = _core.write_profile("n", "d", ["hosts/x86-generic.toml"], params, ["c"])
    assert text.startswith("# c\n\n[profile]\n")
    dev = tomllib.loads(text)["device"]
    for key, value, unit, source in params:
        got = dev[key.split(".")[1]]
        assert got == {"value": value, "unit": unit, "source": source}
        assert type(got["value"]) is type(value)
