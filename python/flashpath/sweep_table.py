"""A sweep's table: one row per (point, job, direction), flattened from
each run's fio JSON document, and its Parquet file. The direction columns
keep fio's own keys (`clat_ns.p99`, `total_ios`); fiojson.OLD_NAMES maps
each to the reader's namespace (`read.clat.p99`, `read.ios`).

docs/sweeps.md documents the columns. The rules that make the bytes
depend only on the spec: rows in point order, then fio's job order, then
read, write, trim; columns in a fixed order (first appearance over the
rows in that order); one type per column decided from its values; fixed
Parquet writer settings; no wall times, host names or paths."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from typing import Any

from flashpath import fiojson

# The version of the table's layout: a reader can tell old files apart.
SCHEMA_VERSION = "1"
DIRECTIONS = fiojson.DIRECTIONS
# Columns every row has before the axes' and the run's own.
KEY_COLUMNS = ("point",)
ROW_KEY_COLUMNS = ("job_index", "job", "groupid", "ddir")

Row = dict[str, Any]


def _flatten(value: Any, prefix: str, out: Row) -> None:
    """Nested dicts as dotted columns. A list of tables is indexed
    (`cpus.0.idle_ns`); any other list (a trace, the warnings) is one
    column of JSON text. A null is left out (the column, if others have
    it, is null there)."""
    if isinstance(value, dict):
        for k, v in value.items():
            _flatten(v, f"{prefix}.{k}" if prefix else str(k), out)
    elif isinstance(value, list):
        if value and all(isinstance(v, dict) for v in value):
            for i, v in enumerate(value):
                _flatten(v, f"{prefix}.{i}", out)
        else:
            out[prefix] = json.dumps(value, separators=(",", ":"))
    elif value is not None:
        out[prefix] = value


def _direction(d: dict[str, Any]) -> Row:
    """fio's figures for one direction, percentiles named pNN."""
    out: Row = {}
    for k, v in d.items():
        if isinstance(v, dict):
            for sk, sv in v.items():
                if sk == "bins":
                    # json+ latency histogram: thousands of bins; the
                    # percentiles summarise it (RunResult.histogram() has it).
                    continue
                if sk == "percentile" and isinstance(sv, dict):
                    for pk, pv in sv.items():
                        out[f"{k}.{fiojson.percentile_name(pk)}"] = pv
                else:
                    _flatten(sv, f"{k}.{sk}", out)
        else:
            _flatten(v, k, out)
    return out


def _job_figures(job: dict[str, Any]) -> Row:
    """fio's per-job figures other than the directions: CPU use, context
    switches, the I/O depth and latency distributions (`job.*`)."""
    out: Row = {}
    skip = {"jobname", "groupid", "job options", "read", "write", "trim", "sync"}
    for k, v in job.items():
        if k not in skip:
            _flatten(v, f"job.{k}", out)
    return out


def rows_of_run(doc: dict[str, Any]) -> list[Row]:
    """The rows of one run's fio JSON document (json or json+ with the
    "flashpath" section): one per job and direction that did I/O, one with
    ddir "none" for a job that did none."""
    common: Row = {"sim_time_ms": doc.get("timestamp_ms")}
    for i, disk in enumerate(doc.get("disk_util") or []):
        _flatten(disk, f"disk_util.{i}", common)
    _flatten(doc.get("flashpath") or {}, "fp", common)
    rows: list[Row] = []
    for index, job in enumerate(doc.get("jobs", [])):
        head: Row = {"job_index": index, "job": job["jobname"], "groupid": job["groupid"]}
        figures = _job_figures(job)
        dirs = [d for d in DIRECTIONS if job.get(d, {}).get("total_ios", 0) > 0]
        for ddir in dirs or ["none"]:
            row: Row = {**head, "ddir": ddir}
            if ddir != "none":
                row.update(_direction(job[ddir]))
            row.update(figures)
            row.update(common)
            rows.append(row)
    return rows


def _arrow_type(name: str, values: Sequence[Any]) -> Any:
    """One Arrow type per column, from its values: booleans, 64-bit
    integers (unsigned when a value needs it), doubles when integers and
    floats mix, otherwise text (the JSON of each value)."""
    import pyarrow as pa

    present = [v for v in values if v is not None]
    if present and all(isinstance(v, bool) for v in present):
        return pa.bool_()
    if present and all(isinstance(v, int) and not isinstance(v, bool) for v in present):
        if all(-(2**63) <= v < 2**63 for v in present):
            return pa.int64()
        if all(0 <= v < 2**64 for v in present):
            return pa.uint64()
        return pa.string()
    numbers = all(isinstance(v, int | float) and not isinstance(v, bool) for v in present)
    if present and numbers:
        return pa.float64()
    return pa.string()


def _as(type_: Any, v: Any) -> Any:
    import pyarrow as pa

    if v is None:
        return None
    if type_ == pa.string():
        return v if isinstance(v, str) else json.dumps(v)
    if type_ == pa.float64():
        return float(v)
    return v


def build_table(
    axes: Sequence[str],
    axis_types: dict[str, Any],
    points: Iterable[tuple[int, dict[str, Any], list[Row]]],
    metadata: dict[str, str],
) -> Any:
    """The sweep's Arrow table. `points` gives, in point order, each
    point's index, axis values and rows (from `rows_of_run`)."""
    import pyarrow as pa

    rows: list[Row] = []
    for index, values, point_rows in points:
        for r in point_rows:
            rows.append({"point": index, **values, **r})
    names: dict[str, None] = dict.fromkeys([*KEY_COLUMNS, *axes, *ROW_KEY_COLUMNS])
    for r in rows:
        for k in r:
            names.setdefault(k, None)
    columns = []
    fields = []
    for name in names:
        values = [r.get(name) for r in rows]
        type_ = axis_types.get(name) or _arrow_type(name, values)
        if name == "point" or name == "job_index" or name == "groupid":
            type_ = pa.int64()
        if name in ("job", "ddir"):
            type_ = pa.string()
        columns.append(pa.array([_as(type_, v) for v in values], type_))
        fields.append(pa.field(name, type_))
    schema = pa.schema(fields, metadata={k.encode(): v.encode() for k, v in metadata.items()})
    return pa.Table.from_arrays(columns, schema=schema)


def axis_types(axes: Sequence[str], values: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Each axis column's type, from the spec's values alone (so a column
    does not change type with which points have finished): seed is
    uint64, device text, others by `_arrow_type`."""
    import pyarrow as pa

    out: dict[str, Any] = {}
    for axis in axes:
        if axis == "seed":
            out[axis] = pa.uint64()
        elif axis == "device":
            out[axis] = pa.string()
        else:
            out[axis] = _arrow_type(axis, [v.get(axis) for v in values])
    return out


# Fixed writer settings: the same table gives the same bytes. Statistics
# and dictionaries are deterministic; compression is zstd at a fixed level.
WRITER_SETTINGS: dict[str, Any] = {
    "version": "2.6",
    "compression": "zstd",
    "compression_level": 3,
    "use_dictionary": True,
    "write_statistics": True,
    "data_page_size": 1 << 20,
    "row_group_size": 1 << 16,
}


def write_parquet(table: Any, path: str) -> None:
    """Write `table` to `path` atomically (a temporary file beside it,
    then a rename), with the fixed writer settings."""
    import pyarrow.parquet as pq

    from flashpath import outputs

    settings = dict(WRITER_SETTINGS)
    row_group_size = settings.pop("row_group_size")
    with outputs.replacing(path, "--out") as tmp:
        pq.write_table(table, tmp, row_group_size=row_group_size, **settings)


def is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
