"""Hypothesis fuzz targets for the Python surfaces' inputs (issue 31):
sweep specs, calibration run files, fio JSON documents and plot tables.
Each target holds one property: a reader returns what its callers may use
(finite figures in range, no duplicate points, one job line per option) or
raises its one error type with a message; never another exception.

The suite runs a few examples per target (FLASHPATH_FUZZ_EXAMPLES, default
40; a quarter of that for plots); `.ci/fuzz` runs a longer campaign with more (docs/testing.md has a
long campaign's counts)."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import FIXTURES
from flashpath import calibrate
from flashpath.outputs import OutputError
from flashpath.plot import PlotError, plot
from flashpath.sweep_spec import SEED_MAX, SpecError, canonical, parse_spec

EXAMPLES = int(os.environ.get("FLASHPATH_FUZZ_EXAMPLES", "40"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    derandomize=os.environ.get("FLASHPATH_FUZZ_RANDOM") is None,
)

# --- values of every JSON and TOML kind, the awkward ones first -------------

AWKWARD_NUMBERS = st.sampled_from(
    [0, -1, 1, 2**63, 2**64, -(2**64), 1e308, -1e308, 5e-324, float("nan"), float("inf")]
)
SCALARS = st.one_of(
    AWKWARD_NUMBERS,
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.none(),
    # No lone surrogates: no TOML or JSON file can hold one.
    st.text(st.characters(blacklist_categories=("Cs",)), max_size=12),
    st.sampled_from(["4", "4k", " 4", "true", "nan", "1e308", "a\nb", "x;y", "[j]", ""]),
)
JSON_VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)

# --- sweep specs -----------------------------------------------------------

KEYS = st.one_of(
    st.sampled_from(["fio.iodepth", "fio.bs", "device.completion_nsec"]),
    st.sampled_from(
        [
            "seed",
            "device",
            "fio.iodepth",
            "fio.bs",
            "fio.rw",
            "device.completion_nsec",
            "host.memory",
            "fio.a-b",
            "fio.",
            "iodepth",
            "x.y.z",
        ]
    ),
    st.from_regex(r"[a-z]{1,6}(\.[a-z_]{1,8}){0,2}", fullmatch=True),
)


def _toml_key(key: str) -> str:
    return ".".join(json.dumps(part, ensure_ascii=False) for part in key.split("."))


def _toml_value(v: Any) -> str:
    """A value as TOML text (JSON's strings and arrays are TOML's; TOML
    has nan and inf, and no null: a None becomes an empty table)."""
    if v is None:
        return "{}"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    if isinstance(v, int | str):
        # Characters past U+FFFF as themselves: JSON's surrogate-pair
        # escapes are no TOML escape.
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    return "{" + ", ".join(f"{_toml_key(k or 'k')} = {_toml_value(x)}" for k, x in v.items()) + "}"


# Values a spec accepts, drawn as often as the awkward ones, so that
# accepted specs (whose points the property checks) are common.
GOOD = st.one_of(
    st.integers(0, 64),
    st.floats(0, 100, allow_nan=False),
    st.booleans(),
    st.sampled_from(["4k", "randread", "1", "true", "1.0", "01"]),
)
VALUES = st.one_of(GOOD, SCALARS)
AXIS_VALUES = st.lists(VALUES, min_size=0, max_size=5)


GOOD_KEYS = st.sampled_from(["fio.iodepth", "fio.bs", "device.completion_nsec", "seed"])
SEEDS = st.integers(0, 2**64 - 1)


@st.composite
def specs(draw: st.DrawFn) -> str:
    """A spec's TOML text: the keys a spec has (and others), values of
    every type, grids, zips and points of random shapes. Half are drawn
    near a valid spec (a device, a base job, good keys and values, so that
    many are accepted and their points checked), half anywhere."""
    near = draw(st.booleans())
    keys = GOOD_KEYS if near else KEYS
    values = GOOD if near else VALUES
    axis = st.lists(values, min_size=1 if near else 0, max_size=5)
    lines: list[str] = []
    if near or draw(st.booleans()):
        device = "nullblk" if near else draw(st.sampled_from(["nullblk"] * 6 + [3, "", "x.toml"]))
        lines.append(f"device = {_toml_value(device)}")
    job = "job_text" if near else draw(st.sampled_from(["job_text", "job", "both", "none"]))
    if job in ("job_text", "both"):
        lines.append('job_text = "[j]\\nrw=read\\n"')
    if job in ("job", "both"):
        lines.append(f"job = {_toml_value(draw(st.sampled_from(['j.fio', '', 'nope.fio', 4])))}")
    if not near:
        top = st.sampled_from(["seed", "name", "description", "other"])
        for key in draw(st.lists(top, max_size=2, unique=True)):
            lines.append(f"{key} = {_toml_value(draw(SCALARS))}")
    if draw(st.booleans()):
        lines.append("[fixed]")
        fixed = st.sampled_from(["fio.bs", "device.completion_nsec"]) if near else keys
        for key in draw(st.lists(fixed, max_size=3, unique=True)):
            lines.append(f"{_toml_key(key)} = {_toml_value(draw(values))}")
    if draw(st.booleans()):
        lines.append("[grid]")
        for key in draw(st.lists(keys, max_size=3, unique=True)):
            value = draw(axis if near else st.one_of(axis, axis, SCALARS))
            lines.append(f"{_toml_key(key)} = {_toml_value(value)}")
    for _ in range(draw(st.integers(0, 1 if near else 2))):
        lines.append("[[zip]]")
        length = draw(st.integers(1, 4))
        same = st.lists(values, min_size=length, max_size=length)
        for key in draw(st.lists(keys, min_size=1 if near else 0, max_size=3, unique=True)):
            lines.append(f"{_toml_key(key)} = {_toml_value(draw(same if near else axis))}")
    point_keys = draw(st.lists(keys, min_size=1, max_size=2, unique=True))
    for _ in range(draw(st.integers(0, 3))):
        lines.append("[[points]]")
        mine = point_keys if near else draw(st.lists(keys, max_size=2, unique=True))
        for key in mine:
            value = draw(SEEDS if near and key == "seed" else values)
            lines.append(f"{_toml_key(key)} = {_toml_value(value)}")
    return "\n".join(lines) + "\n"


def _check_spec_text(text: str, folder: Path) -> None:
    try:
        spec = parse_spec(text, "fuzz.toml", folder)
    except SpecError as err:
        message = str(err)
        assert message.startswith("fuzz.toml"), message
        assert "\n" not in message.rstrip(), message
        return
    # An accepted spec: every point is something the core can be given.
    assert spec.points
    seen = set()
    for p in spec.points:
        assert isinstance(p.seed, int) and 0 <= p.seed <= SEED_MAX
        assert isinstance(p.device, str) and p.device
        for v in p.values.values():
            assert isinstance(v, str | int | float)
            assert not isinstance(v, float) or math.isfinite(v)
        for name, value in p.fio:
            assert "\n" not in name + value
        same = tuple((k, *canonical(v)) for k, v in sorted(p.values.items()))
        assert same not in seen, f"a duplicate point: {p.values}"
        seen.add(same)


_SCRATCH: list[Path] = []


def scratch() -> Path:
    """A folder for the targets' files (a spec's base job, a run file, a
    plot), made once per process."""
    if not _SCRATCH:
        import tempfile

        folder = Path(tempfile.mkdtemp(prefix="flashpath-fuzz-"))
        (folder / "j.fio").write_text("[j]\nrw=read\n")
        _SCRATCH.append(folder)
    return _SCRATCH[0]


def check_spec(text: str) -> None:
    _check_spec_text(text, scratch())


@FUZZ
@given(text=specs())
def test_fuzz_sweep_spec(text: str) -> None:
    check_spec(text)


@FUZZ
@given(text=st.text(max_size=200))
def test_fuzz_sweep_spec_any_text(text: str) -> None:
    check_spec(text)


# --- calibration run files --------------------------------------------------

# A real fio 3.33 run with reads and writes (tests/fixtures/calibrate/README.md).
RUN = json.loads((FIXTURES / "calibrate" / "check-randrw-4k-qd8.json").read_text())


def _paths(doc: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a value in `doc` (to mutate one)."""
    out = [prefix]
    if isinstance(doc, dict):
        for k, v in doc.items():
            out.extend(_paths(v, (*prefix, k)))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out.extend(_paths(v, (*prefix, i)))
    return out


# The parts of a run the reader uses, where a mutation matters most.
HOT = [p for p in _paths(RUN) if len(p) <= 5 and "bins" not in p and "percentile" not in p[:4]]


def _mutated(draw: st.DrawFn, base: Any, paths: list[tuple[Any, ...]]) -> Any:
    """A copy of `base` with one to four of the values at `paths` replaced
    by any JSON value or (one time in six) removed."""
    doc = json.loads(json.dumps(base))
    for _ in range(draw(st.integers(1, 4))):
        path = draw(st.sampled_from(paths))
        if not path:
            continue
        parent = doc
        try:
            for part in path[:-1]:
                parent = parent[part]
            if draw(st.integers(0, 5)) == 0 and isinstance(parent, dict):
                parent.pop(path[-1], None)
            else:
                parent[path[-1]] = draw(JSON_VALUES)
        except (KeyError, IndexError, TypeError):
            continue
    return doc


@st.composite
def runs(draw: st.DrawFn) -> Any:
    return _mutated(draw, RUN, HOT)


def _check_run_doc(doc: Any, folder: Path) -> None:
    path = folder / "run.json"
    path.write_text(json.dumps(doc, allow_nan=True))
    try:
        measured = calibrate.load_runs([str(path)])
    except calibrate.CalibrateError as err:
        assert str(err).startswith(str(path)) or "no fio JSON" in str(err), err
        assert "\n" not in str(err), err
        return
    for m in measured:
        assert m.dirs
        for figs in m.dirs.values():
            assert 0 < figs.iops < 2**64 and 0 < figs.lat_mean_ns < 2**64
            assert figs.clat_p99_ns is None or 0 <= figs.clat_p99_ns < 2**64
        text = calibrate.sim_job_text(m, 100)
        lines = text.splitlines()
        # One line per option and the lines the simulation adds: a value
        # never starts a line or a section of its own.
        assert lines[0] == f"[{m.name}]"
        assert sum(1 for ln in lines if ln.startswith("[")) == 1, text
        assert all(ord(c) >= 32 for ln in lines for c in ln), text


def check_run(doc: Any) -> None:
    _check_run_doc(doc, scratch())


@FUZZ
@given(doc=runs())
def test_fuzz_calibration_run(doc: Any) -> None:
    check_run(doc)


@FUZZ
@given(doc=JSON_VALUES)
def test_fuzz_calibration_run_any_json(doc: Any) -> None:
    check_run(doc)


# --- the fio JSON reader ----------------------------------------------------

# A real fio 3.33 json+ run of four jobs reading and writing, with slat,
# clat percentiles and the "sync" section (tests/fixtures/fio/real-runs).
FIO_RUN = json.loads(
    (FIXTURES / "fio" / "real-runs" / "randrw70-4jobs-grouped" / "out.jsonplus.json").read_text()
)
# Every value but the histograms' bins: the percentiles are the reader's too.
FIO_PATHS = [p for p in _paths(FIO_RUN) if "bins" not in p and len(p) <= 6]


@st.composite
def fio_docs(draw: st.DrawFn) -> Any:
    return _mutated(draw, FIO_RUN, FIO_PATHS)


def check_fio_json(doc: Any) -> None:
    """The reader takes a document or refuses it with one line naming the
    file; every figure it gives is a number in fio's range, and so is
    each of reproduce's extractors over it."""
    from flashpath import fiojson

    try:
        run = fiojson.read(doc, "run.json")
        metrics = [job.metrics() for job in run.jobs]
        errors = [(job.total_err, job.first_error) for job in run.jobs]
        stats = [
            fiojson.aggregate(run, d, stat)
            for d in fiojson.DIRECTIONS
            for stat in fiojson.EXTRACTORS
        ]
    except fiojson.FioJsonError as err:
        assert str(err).startswith("run.json: "), err
        assert "\n" not in str(err), err
        return
    for m in metrics:
        for name, v in m.items():
            assert name.split(".")[0] in fiojson.ALL_DIRECTIONS, name
            assert isinstance(v, float) and 0 <= v < 2**64, (name, v)
    assert all(isinstance(v, float) and 0 <= v < 2**64 for v in stats), stats
    assert all(v is None or 0 <= v < 2**64 for pair in errors for v in pair), errors


@FUZZ
@given(doc=fio_docs())
def test_fuzz_fio_json(doc: Any) -> None:
    check_fio_json(doc)


@FUZZ
@given(doc=JSON_VALUES)
def test_fuzz_fio_json_any_json(doc: Any) -> None:
    check_fio_json(doc)


# --- plot tables ------------------------------------------------------------

PLOT_RUN = RUN
PLOT_HOT = [p for p in _paths(PLOT_RUN) if len(p) <= 5 and "percentile" not in p[:4]]
COLUMNS = st.sampled_from(
    ["iops", "job", "ddir", "clat_ns.p99", "clat_ns", "lat_ns", "groupid", "bw", "nope", "point"]
)


@st.composite
def plot_runs(draw: st.DrawFn) -> Any:
    doc = json.loads(json.dumps(PLOT_RUN))
    for _ in range(draw(st.integers(0, 3))):
        path = draw(st.sampled_from(PLOT_HOT))
        if not path:
            continue
        parent = doc
        try:
            for part in path[:-1]:
                parent = parent[part]
            parent[path[-1]] = draw(JSON_VALUES)
        except (KeyError, IndexError, TypeError):
            continue
    return doc


PLOTS = st.tuples(
    plot_runs(),
    st.sampled_from(["line", "cdf", "breakdown"]),
    st.one_of(st.none(), COLUMNS),
    st.one_of(st.none(), COLUMNS),
    st.one_of(st.none(), COLUMNS),
)


def check_plot(case: tuple[Any, str, str | None, str | None, str | None]) -> None:
    doc, kind, x, y, hue = case
    folder = scratch()
    source = folder / "t.json"
    source.write_text(json.dumps(doc, allow_nan=True))
    out = folder / "p.png"
    out.unlink(missing_ok=True)
    try:
        plot(str(source), str(out), kind=kind, x=x, y=y, hue=hue)
    except (PlotError, OutputError) as err:
        assert "\n" not in str(err), err
        assert not out.exists()
        return
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# A plot is drawn by matplotlib (about a second each on a loaded machine):
# a quarter of the examples keeps the suite fast.
@settings(FUZZ, max_examples=max(EXAMPLES // 4, 5))
@given(case=PLOTS)
def test_fuzz_plot_table(case: tuple[Any, str, str | None, str | None, str | None]) -> None:
    check_plot(case)


# The campaign's targets (tests/fuzz_campaign.py): name -> (check, inputs).
TARGETS: dict[str, tuple[Any, Any]] = {
    "sweep_spec": (check_spec, specs()),
    "sweep_spec_text": (check_spec, st.text(max_size=200)),
    "calibration_run": (check_run, runs()),
    "calibration_run_json": (check_run, JSON_VALUES),
    "fio_json": (check_fio_json, fio_docs()),
    "fio_json_any": (check_fio_json, JSON_VALUES),
    "plot_table": (check_plot, PLOTS),
}
