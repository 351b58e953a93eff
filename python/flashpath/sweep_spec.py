"""Sweep specs: one TOML file that names a base fio job, a device profile
and the axes to vary; each point of the sweep is one simulation.

```toml
name = "qd-mapcache"
job = "sweep-qd-mapcache.fio"        # relative to this file; or job_text = '''...'''
device = "ufs21-64g"                 # a profile name or a .toml path
seed = 0                             # when seed is not an axis

[fixed]                              # the same for every point
"ufs.hpb.enabled" = false

[grid]                               # every combination of these
fio.iodepth = [1, 4, 16]             # fio.NAME: a fio option of every job section
device.flash.map_cache_pages = [24, 96]   # any other dotted key: a --set key
seed = [1, 2]

[[zip]]                              # these vary together (equal lengths)
fio.bs = ["4k", "64k"]
fio.rw = ["randread", "read"]

[[points]]                           # explicit points (one table each)
device = "nvme-dram"
fio.iodepth = 32
```

The sweep is the product of its dimensions, in this order: each [grid]
key, each [[zip]] group, the [[points]] list. docs/sweeps.md has the whole
format. A bad spec raises `SpecError`, whose message names the spec file,
the line and the key.
"""

from __future__ import annotations

import difflib
import errno
import hashlib
import itertools
import json
import math
import os
import re
import stat
import tempfile
import tomllib
from collections.abc import Iterator
from contextlib import chdir, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flashpath import _core
from flashpath._core import FlashpathError
from flashpath._jobtext import Composed, add_options, job_value_problem
from flashpath._messages import named, shown
from flashpath._tomlpos import TablePath, key_lines, line_of

Scalar = str | int | float | bool

# A sweep larger than this is refused before anything is built: a typo in
# a grid (an axis of 10,000 values) should not fill memory with points.
MAX_POINTS = 1_000_000
# Seeds are 64-bit, as the core's.
SEED_MAX = 2**64 - 1
_FIO_NAME = re.compile(r"[A-Za-z0-9_]+")
_TOP_KEYS = ("name", "description", "job", "job_text", "device", "seed", "fixed", "grid", "zip")
_TOP_KEYS += ("points",)


class SpecError(FlashpathError):
    """A bad sweep spec: the message names the file, the line and the key."""


@dataclass(frozen=True)
class Point:
    """One simulation of the sweep: `values` are its axis values (the
    table's columns), the rest is what the core is asked to run."""

    index: int
    values: dict[str, Scalar]
    device: str
    seed: int
    overrides: tuple[str, ...]
    fio: tuple[tuple[str, str], ...]

    def describe(self) -> str:
        return ", ".join(f"{k}={_shown_value(v)}" for k, v in self.values.items())


@dataclass
class Spec:
    """A parsed, type-checked sweep spec (see the module's docstring)."""

    path: str  # as the user named it, for messages
    folder: Path  # where relative paths in it are read from
    name: str
    description: str
    job_name: str  # names the job to the core (relative, so runs do not depend on the folder)
    job_shown: str  # names the job in messages
    job_text: str
    job_folder: Path  # the job's relative includes and iologs
    job_line: int | None
    axes: list[str]  # the table's axis columns, in spec order
    points: list[Point]
    # key -> (table, line) of where each axis or fixed key is written.
    where: dict[str, tuple[TablePath, int | None]] = field(default_factory=dict)
    # Where every key is written (_tomlpos.key_lines), and how many
    # [[points]] tables the spec has: the last dimension, so point i has
    # the values of table i % points_tables.
    lines: dict[tuple[TablePath, str], int] = field(default_factory=dict)
    points_tables: int = 0
    # The files a run reads, for the output rule (flashpath.outputs): the
    # spec's own file (None for a spec given as text) and the base job's.
    source: Path | None = None
    job_file: Path | None = None

    def inputs(self) -> list[tuple[Path, str]]:
        """The files the sweep reads: (path, what it is)."""
        found = [(self.source, "the sweep spec")] if self.source else []
        if self.job_file:
            found.append((self.job_file, "the sweep's base job"))
        for device in dict.fromkeys(p.device for p in self.points):
            if device.endswith(".toml") and (self.folder / device).is_file():
                found.append((self.folder / device, "a device profile of the sweep"))
        return [(Path(p), what) for p, what in found]

    def line(self, key: str, point: Point | None = None) -> int | None:
        table, line = self.where.get(key, ((), None))
        if point is not None and self.points_tables and table[:1] == ("points",):
            return line_of(self.lines, ("points", point.index % self.points_tables), key)
        return line

    def at(self, key: str, point: Point | None = None) -> str:
        """`spec.toml:LINE: KEY` for a message (the line of `point`'s own
        [[points]] table when the key is written there)."""
        line = self.line(key, point)
        return f"{self.path}:{line}: {key}" if line else f"{self.path}: {key}"

    def composed(self, point: Point) -> Composed:
        return add_options(self.job_text, point.fio)


def _shown_value(v: Scalar) -> str:
    return json.dumps(v) if isinstance(v, str) else _toml_scalar(v)


def _toml_scalar(v: Scalar) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return repr(v)


def _kind(v: Any) -> str:
    """The TOML type of a value, for messages."""
    if isinstance(v, bool):
        return "a boolean"
    if isinstance(v, int):
        return "an integer"
    if isinstance(v, float):
        return "a float"
    if isinstance(v, str):
        return "a string"
    if isinstance(v, list):
        return "an array"
    if isinstance(v, dict):
        return "a table"
    return f"a {type(v).__name__}"  # dates and times


def _flatten(table: dict[str, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    """Dotted keys: `fio.iodepth = [...]` is {"fio": {"iodepth": [...]}}
    to tomllib; a sweep names it "fio.iodepth"."""
    for k, v in table.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict) and v:
            yield from _flatten(v, key + ".")
        else:
            yield key, v


class _Reader:
    """Reads one spec file, with the lines of its keys for messages."""

    def __init__(self, path: str, text: str) -> None:
        self.path = path
        self.lines = key_lines(text)
        self.where: dict[str, tuple[TablePath, int | None]] = {}

    def line(self, table: TablePath, key: str) -> int | None:
        return line_of(self.lines, table, key)

    def fail(self, table: TablePath, key: str, what: str) -> SpecError:
        line = self.line(table, key)
        shown_key = key or _table_name(table)
        at = f"{self.path}:{line}" if line else self.path
        return SpecError(f"{at}: {shown_key}: {what}")


def _table_name(table: TablePath) -> str:
    if not table:
        return "(top level)"
    if len(table) == 2:
        return f"[[{table[0]}]] number {int(table[1]) + 1}"
    return f"[{table[0]}]"


def _check_value(r: _Reader, table: TablePath, key: str, v: Any) -> Scalar:
    """An axis or fixed value of `key`: its type checked for what the
    key names (seed, device, a fio option, a profile key)."""
    if key == "seed":
        if isinstance(v, bool) or not isinstance(v, int):
            raise r.fail(table, key, f"a seed is an integer, not {_kind(v)} ({_brief(v)})")
        if not 0 <= v <= SEED_MAX:
            raise r.fail(table, key, f"seed {v} is outside 0 to 2^64 - 1")
        return v
    if key == "device":
        if not isinstance(v, str):
            raise r.fail(table, key, f"a device is a profile name or .toml path, not {_kind(v)}")
        if not v or any(ord(c) < 32 for c in v):
            raise r.fail(table, key, f"{shown(v)} is not a profile name or path")
        return v
    if not isinstance(v, str | int | float):
        raise r.fail(table, key, f"a value is a string, integer, float or boolean, not {_kind(v)}")
    if isinstance(v, float) and not math.isfinite(v):
        raise r.fail(table, key, f"{v} is not a finite number")
    if key.startswith("fio."):
        problem = job_value_problem(_fio_text(v))
        if problem:
            raise r.fail(table, key, f"{shown(str(v))} cannot be a fio option value: {problem}")
    elif isinstance(v, str) and any(ord(c) < 32 or ord(c) == 127 for c in v):
        raise r.fail(table, key, f"{shown(v)} holds control characters")
    return v


def _brief(v: Any) -> str:
    """A value as TOML would write it (near enough), cut short."""
    text = json.dumps(v, default=str) if not isinstance(v, bool) else _toml_scalar(v)
    return text if len(text) <= 40 else text[:40] + "..."


def _check_key(r: _Reader, table: TablePath, key: str) -> None:
    """An axis or fixed key: seed, device, fio.NAME or a dotted profile
    key (which the core checks later, with the device)."""
    if key in ("seed", "device"):
        return
    if key.startswith("fio."):
        name = key[4:]
        if not _FIO_NAME.fullmatch(name):
            raise r.fail(table, key, f"{shown(name)} is not a fio option name")
        return
    if "." not in key:
        hint = difflib.get_close_matches(key, ["seed", "device"], n=1)
        also = f"; did you mean {hint[0]!r}?" if hint else ""
        raise r.fail(
            table,
            key,
            "not an axis: an axis is seed, device, fio.OPTION (a fio option) or a "
            f"profile key such as device.flash.map_cache_pages{also}",
        )


def _fio_text(v: Scalar) -> str:
    """A value as a fio job line writes it (fio's booleans are 1 and 0)."""
    if isinstance(v, bool):
        return "1" if v else "0"
    return str(v) if not isinstance(v, float) else repr(v)


def _set_text(v: Scalar) -> str:
    """A value as `--set key=value` writes it."""
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v) if not isinstance(v, float) else repr(v)


def _note(r: _Reader, table: TablePath, key: str) -> None:
    if key in r.where:
        first_table, first = r.where[key]
        where = f"line {first}" if first else _table_name(first_table)
        raise r.fail(table, key, f"{key} is already given ({where}); a key is set in one place")
    r.where[key] = (table, r.line(table, key))


def _dimension_of_list(
    r: _Reader, table: TablePath, key: str, values: Any
) -> list[dict[str, Scalar]]:
    if not isinstance(values, list):
        raise r.fail(
            table,
            key,
            f"an axis is an array of values, not {_kind(values)} "
            f"(write {key} = [{_brief(values)}])",
        )
    if not values:
        raise r.fail(table, key, "an empty axis (no values: the sweep would have no points)")
    checked = [_check_value(r, table, key, v) for v in values]
    seen: dict[tuple[str, Any], int] = {}
    for i, v in enumerate(checked):
        same = canonical(v)
        if same in seen:
            first = checked[seen[same]]
            what = (
                f"value {_shown_value(v)} is listed twice"
                if type(first) is type(v) and first == v
                else f"value {_shown_value(v)} ({_kind(v)}) is the same value as "
                f"{_shown_value(first)} ({_kind(first)})"
            )
            raise r.fail(
                table,
                key,
                f"{what} (values {seen[same] + 1} and {i + 1}): each point would run twice; "
                "write each value once",
            )
        seen[same] = i
    return [{key: v} for v in checked]


def canonical(v: Scalar) -> tuple[str, Any]:
    """What a value means to the run, to find duplicates of different
    types: a boolean is 0 or 1 (fio and --set take both), a number is its
    value (4 and 4.0 are one), text that reads as a number or a boolean is
    that number (fio and --set read "4" as 4); other text is itself.
    Duplicates are refused, not normalised: which of `4` and `"4"` the
    table's column should hold is the user's to say."""
    if isinstance(v, bool):
        return ("number", int(v))
    if isinstance(v, int | float):
        return ("number", v)
    text = v.strip()
    if "_" in text:
        # Python reads "1_000" as a number; fio and --set do not.
        return ("text", text)
    lowered = text.lower()
    if lowered in ("true", "false"):
        return ("number", int(lowered == "true"))
    try:
        return ("number", int(text, 10))
    except ValueError:
        pass
    try:
        number = float(text)
    except ValueError:
        return ("text", text)
    return ("number", number) if math.isfinite(number) else ("text", text)


def _count(n: int) -> str:
    return f"{n} value" if n == 1 else f"{n} values"


def _read_dimensions(r: _Reader, doc: dict[str, Any]) -> list[list[dict[str, Scalar]]]:
    dims: list[list[dict[str, Scalar]]] = []
    grid = doc.get("grid", {})
    if not isinstance(grid, dict):
        raise r.fail((), "grid", f"[grid] is a table of axes, not {_kind(grid)}")
    for key, values in _flatten(grid):
        _check_key(r, ("grid",), key)
        _note(r, ("grid",), key)
        dims.append(_dimension_of_list(r, ("grid",), key, values))
    zips = doc.get("zip", [])
    if not isinstance(zips, list) or not all(isinstance(z, dict) for z in zips):
        raise r.fail((), "zip", "zip is written as [[zip]] tables of axes of equal length")
    for n, group in enumerate(zips):
        table: TablePath = ("zip", n)
        columns: list[list[dict[str, Scalar]]] = []
        first_key = ""
        for key, values in _flatten(group):
            _check_key(r, table, key)
            _note(r, table, key)
            column = _dimension_of_list(r, table, key, values)
            if columns and len(column) != len(columns[0]):
                raise r.fail(
                    table,
                    key,
                    f"{_count(len(column))}, but {first_key} in the same [[zip]] has "
                    f"{len(columns[0])}: zipped axes have equal lengths",
                )
            first_key = first_key or key
            columns.append(column)
        if not columns:
            raise r.fail(table, "", "an empty [[zip]] (no axes)")
        dims.append(
            [{k: v for c in row for k, v in c.items()} for row in zip(*columns, strict=True)]
        )
    points = doc.get("points", [])
    if not isinstance(points, list) or not all(isinstance(p, dict) for p in points):
        raise r.fail((), "points", "points are written as [[points]] tables, one per point")
    if points:
        dim: list[dict[str, Scalar]] = []
        keys: list[str] | None = None
        seen: dict[tuple[Any, ...], int] = {}
        for n, p in enumerate(points):
            table = ("points", n)
            row: dict[str, Scalar] = {}
            for key, v in _flatten(p):
                _check_key(r, table, key)
                if n == 0:
                    _note(r, table, key)
                row[key] = _check_value(r, table, key, v)
            if not row:
                raise r.fail(table, "", "an empty point (no axis values)")
            if keys is None:
                keys = list(row)
            elif sorted(row) != sorted(keys):
                missing = sorted(set(keys) - set(row))
                extra = sorted(set(row) - set(keys))
                what = f"lacks {', '.join(missing)}" if missing else f"has {', '.join(extra)} too"
                raise r.fail(
                    table,
                    (extra or [""])[0],
                    f"this point {what}: every [[points]] table names the same keys "
                    f"(the first names {', '.join(keys)})",
                )
            same = tuple((k, *canonical(row[k])) for k in keys)
            if same in seen:
                raise r.fail(
                    table,
                    "",
                    f"the same point as [[points]] number {seen[same] + 1} (values equal as "
                    "the run reads them, whatever their types)",
                )
            seen[same] = n
            dim.append({k: row[k] for k in keys})
        dims.append(dim)
    return dims


def _string(r: _Reader, doc: dict[str, Any], key: str, default: str | None = None) -> str | None:
    v = doc.get(key, default)
    if v is not None and not isinstance(v, str):
        raise r.fail((), key, f"{key} is a string, not {_kind(v)}")
    return v


# The longest spec or base job read, as the core bounds a job file
# (workload/fio/parse.rs TEXT_BOUND): a spec naming /dev/zero must not
# fill memory.
TEXT_MAX = 16 << 20


def _read_bounded(path: Path) -> bytes | None:
    """The file's bytes, or None when it is longer than TEXT_MAX. A FIFO or
    socket is an OSError naming it: opening a FIFO blocks until a writer
    comes (fs/pipe.c fifo_open), and a sweep would hang."""
    mode = path.stat().st_mode
    if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
        kind = "a FIFO (named pipe)" if stat.S_ISFIFO(mode) else "a socket"
        raise OSError(
            errno.EINVAL,
            f"it is {kind}, not a regular file: opening it would wait for a writer; "
            "copy it to a file",
        )
    with path.open("rb") as f:
        data = f.read(TEXT_MAX + 1)
    return None if len(data) > TEXT_MAX else data


def load_spec(path: str | os.PathLike[str]) -> Spec:
    """Read and check a spec file (not yet against the core: `check`)."""
    shown_path = named(os.fspath(path))
    try:
        raw = _read_bounded(Path(path))
    except OSError as exc:
        raise SpecError(
            f"{shown_path}: cannot read the sweep spec: {exc.strerror or exc}"
        ) from None
    if raw is None:
        raise SpecError(f"{shown_path}: a sweep spec longer than {TEXT_MAX >> 20} MiB")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise SpecError(f"{shown_path}:{line}: the spec is not UTF-8 text") from None
    spec = parse_spec(text, shown_path, Path(path).resolve().parent)
    spec.source = Path(path)
    return spec


def parse_spec(text: str, path: str, folder: Path) -> Spec:
    """Check the spec `text` (named `path` in messages; its relative paths
    are read from `folder`)."""
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        what = str(exc)
        m = re.search(r"\(at line (\d+), column \d+\)$", what)
        if m:
            what = what[: m.start()].rstrip()
            raise SpecError(f"{path}:{m.group(1)}: not valid TOML: {what}") from None
        raise SpecError(f"{path}: not valid TOML: {what}") from None
    r = _Reader(path, text)
    for key in doc:
        if key not in _TOP_KEYS:
            hint = difflib.get_close_matches(key, _TOP_KEYS, n=1)
            also = f"; did you mean {hint[0]!r}?" if hint else ""
            raise r.fail((), key, f"unknown key (a spec has {', '.join(_TOP_KEYS)}){also}")
    name = _string(r, doc, "name", Path(path).stem) or ""
    description = _string(r, doc, "description", "") or ""
    job, job_text = _string(r, doc, "job"), _string(r, doc, "job_text")
    if (job is None) == (job_text is None):
        raise r.fail(
            (),
            "job" if job is not None else "",
            'a spec names its base job once: job = "FILE.fio" (relative to the spec) or '
            "job_text = '''...''' (the job itself)",
        )
    if job is not None:
        job_path = folder / job
        try:
            job_bytes = _read_bounded(job_path)
        except OSError as exc:
            raise r.fail((), "job", f"cannot read {shown(job)}: {exc.strerror or exc}") from None
        if job_bytes is None:
            raise r.fail((), "job", f"{shown(job)} is longer than {TEXT_MAX >> 20} MiB")
        job_text = job_bytes.decode("utf-8", errors="replace")
        job_name, job_folder, job_line = job, job_path.parent, r.line((), "job")
        job_shown = job
    else:
        assert job_text is not None
        job_name, job_folder, job_line = (
            f"{Path(path).name} job_text",
            folder,
            r.line((), "job_text"),
        )
        job_shown = f"{path} job_text"
    fixed = doc.get("fixed", {})
    if not isinstance(fixed, dict):
        raise r.fail((), "fixed", f"[fixed] is a table of keys and values, not {_kind(fixed)}")
    fixed_values: dict[str, Scalar] = {}
    for key, v in _flatten(fixed):
        _check_key(r, ("fixed",), key)
        if key in ("seed", "device"):
            raise r.fail(("fixed",), key, f"{key} is given at the top level, not in [fixed]")
        _note(r, ("fixed",), key)
        fixed_values[key] = _check_value(r, ("fixed",), key, v)
    dims = _read_dimensions(r, doc)
    axes = [k for dim in dims for k in dim[0]]
    for key in ("device", "seed"):
        if key in doc and key in axes:
            table, line = r.where[key]
            raise r.fail((), key, f"{key} is an axis too (line {line}); give it in one place")
    if "device" not in doc and "device" not in axes:
        raise SpecError(
            f'{path}: device: no device: name a profile (device = "nvme-dram") or make '
            "device an axis"
        )
    device = _check_value(r, (), "device", doc["device"]) if "device" in doc else ""
    seed = _check_value(r, (), "seed", doc["seed"]) if "seed" in doc else 0
    for key in ("device", "seed"):
        if key in doc:
            r.where[key] = ((), r.line((), key))
    count = math.prod(len(d) for d in dims)
    if count > MAX_POINTS:
        sizes = " x ".join(str(len(d)) for d in dims)
        raise SpecError(f"{path}: the sweep has {count} points ({sizes}), more than {MAX_POINTS}")
    points: list[Point] = []
    for index, combo in enumerate(itertools.product(*dims)):
        values = {k: v for part in combo for k, v in part.items()}
        merged = {**fixed_values, **values}
        overrides = tuple(
            f"{k}={_set_text(v)}"
            for k, v in merged.items()
            if k not in ("seed", "device") and not k.startswith("fio.")
        )
        fio = tuple((k[4:], _fio_text(v)) for k, v in merged.items() if k.startswith("fio."))
        points.append(
            Point(
                index=index,
                values=values,
                device=str(values.get("device", device)),
                seed=int(values.get("seed", seed)),
                overrides=overrides,
                fio=fio,
            )
        )
    return Spec(
        path=path,
        folder=folder,
        name=name,
        description=description,
        job_name=job_name,
        job_shown=job_shown,
        job_text=job_text,
        job_folder=job_folder,
        job_line=job_line,
        axes=axes,
        points=points,
        where=r.where,
        lines=r.lines,
        points_tables=len(doc.get("points", [])),
        job_file=folder / job if job is not None else None,
    )


def run_key(spec: Spec, point: Point) -> str:
    """The identity of a point's simulation: everything the core is given
    (the job as run, the device, the overrides, the seed; a device given
    as a file, by its contents) and the simulator's version. Equal keys
    give equal results, so a finished point is never run twice."""
    device_file = spec.folder / point.device
    device_text = ""
    if point.device.endswith(".toml") and device_file.is_file():
        device_text = device_file.read_text(encoding="utf-8", errors="replace")
    identity = {
        "version": _core.__version__,
        "job": spec.composed(point).text,
        "job_name": spec.job_name,
        "device": point.device,
        "device_text": device_text,
        "overrides": list(point.overrides),
        "seed": point.seed,
    }
    blob = json.dumps(identity, sort_keys=True, ensure_ascii=True).encode()
    return hashlib.sha256(blob).hexdigest()[:32]


# --- checks by the core -------------------------------------------------


def explain(spec: Spec, point: Point, err: FlashpathError, job_file: str) -> str:
    """A core error for `point` as a message naming the spec line and key
    that caused it. `job_file` is the name the core knew the job by."""
    message, file, line, what = (list(err.args) + [None] * 4)[:4]
    message = str(message)
    what = str(what) if what is not None else message
    context = f" (point {point.index}: {point.describe()})" if point.values else ""
    if file == "--device":
        return f"{spec.at('device', point)}: {what}{context}"
    if file == "--set":
        keys = [o.split("=", 1)[0] for o in point.overrides]
        key = next((k for k in keys if f"'{k}'" in what or what.startswith(f"{k}=")), None)
        key = key or (keys[0] if keys else "")
        value = point.values.get(key)
        shown_value = f" = {_shown_value(value)}" if value is not None else ""
        return f"{spec.at(key, point)}{shown_value}: {what}{context}"
    if file == job_file:
        source = spec.composed(point).source_of(line)
        if isinstance(source, str):
            key = f"fio.{source}"
            value = point.values.get(key)
            shown_value = f" = {_shown_value(value)}" if value is not None else ""
            return f"{spec.at(key, point)}{shown_value}: {what}{context}"
        used = f" (the job of {spec.path}" + (f":{spec.job_line})" if spec.job_line else ")")
        at = f"{spec.job_shown}:{source}" if isinstance(source, int) else spec.job_shown
        return f"{at}: {what}{used}{context}"
    if file == point.device or (message.startswith(f"{point.device}:")):
        return f"{spec.at('device', point)}: {message}{context}"
    return f"{message} (sweep {spec.path}{context})"


@contextmanager
def _job_file_for_checks(spec: Spec, text: str) -> Iterator[str | None]:
    """A file holding `text` beside the base job, so that its relative
    includes and iologs are found as in the run: the core's
    parse_only reads a file, and it makes every check a run makes. None
    (no checks of this job before the run) when the folder is read-only."""
    try:
        handle = tempfile.NamedTemporaryFile(
            "w",
            dir=spec.job_folder,
            prefix=".flashpath-sweep-check-",
            suffix=".fio",
            delete=False,
            encoding="utf-8",
        )
    except OSError:
        yield None
        return
    try:
        with handle:
            handle.write(text)
        yield handle.name
    finally:
        Path(handle.name).unlink(missing_ok=True)


def check(spec: Spec) -> None:
    """Ask the core about every distinct (job, device, overrides) of the
    sweep before anything runs: every check a run makes (parse_only), so a
    bad value anywhere in the grid stops the sweep before its first point.
    Seeds are not checked (any 64-bit seed runs)."""
    with chdir(spec.folder):
        for device in dict.fromkeys(p.device for p in spec.points):
            point = next(p for p in spec.points if p.device == device)
            try:
                _core.profile_description(device)
            except FlashpathError as err:
                raise SpecError(explain(spec, point, err, "")) from None
        checked_overrides: set[tuple[str, str]] = set()
        for point in spec.points:
            for o in point.overrides:
                if (point.device, o) in checked_overrides:
                    continue
                checked_overrides.add((point.device, o))
                try:
                    _core.profile_show(point.device, [o])
                except FlashpathError as err:
                    # The key and value alone are wrong: the point matters
                    # only through its device.
                    values = {k: v for k, v in point.values.items() if k == "device"}
                    one = Point(point.index, values, point.device, point.seed, (o,), ())
                    raise SpecError(explain(spec, one, err, "")) from None
        by_job: dict[tuple[tuple[str, str], ...], list[Point]] = {}
        for point in spec.points:
            by_job.setdefault(point.fio, []).append(point)
        for fio, points in by_job.items():
            text = add_options(spec.job_text, fio).text
            with _job_file_for_checks(spec, text) as job_file:
                if job_file is None:
                    continue
                seen: set[tuple[str, tuple[str, ...]]] = set()
                for point in points:
                    what = (point.device, point.overrides)
                    if what in seen:
                        continue
                    seen.add(what)
                    try:
                        _core.parse_only(job_file, point.device, list(point.overrides))
                    except FlashpathError as err:
                        raise SpecError(explain(spec, point, err, job_file)) from None
