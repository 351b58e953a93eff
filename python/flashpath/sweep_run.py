"""Running a sweep: its points on a backend, each finished point saved at
once, and the table merged from them.

With an output file `OUT`, each finished point is written atomically to
`OUT.parts/<key>.json`, named by the point's run key (a hash of all the
core is given; `sweep_spec.run_key`). A sweep run again with the same
spec finds its finished points there and runs only the others; the
merged table does not depend on which run made which point. The spec's
points are recorded in `OUT.parts/sweep.json`: a different spec is
refused unless `extend` (then points already run for any spec are
reused, and the table has exactly the new spec's points). Wall times,
hosts and workers go to the run log `OUT.log` (JSON lines), never to the
table."""

from __future__ import annotations

import hashlib
import json
import math
import os
import socket
import tempfile
import time
import tomllib
from collections.abc import Callable
from contextlib import chdir
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flashpath import _core, outputs
from flashpath._core import FlashpathError
from flashpath._jobtext import files_read
from flashpath._messages import shown
from flashpath.engine import BACKENDS, Done, Task, TaskFailed, run_tasks
from flashpath.progress import Progress, rate
from flashpath.sweep_spec import Point, Spec, check, explain, run_key
from flashpath.sweep_table import (
    SCHEMA_VERSION,
    axis_types,
    build_table,
    rows_of_run,
    write_parquet,
)

# 2: a part carries the digest of its figures (a resumed sweep reruns a
# part whose figures no longer match it).
PART_FORMAT = 2


class SweepError(FlashpathError):
    """A sweep that cannot go on: one message for the user."""


# What a point may ship to a worker that cannot see the spec's folder
# (a Ray cluster's other nodes): its profile files and the job's includes
# and iologs, read whole. A sweep whose files are larger runs where they are.
SHIP_MAX = 256 << 20


def run_point(
    job_text: str,
    job_name: str,
    job_folder: str,
    folder: str,
    device: str,
    overrides: list[str],
    seed: int,
    files: dict[str, bytes] | None = None,
) -> dict[str, Any]:
    """One point, in a worker: the run's rows and its event count. The
    spec's folder is the current directory, so a device given as a path
    and the job's includes are found as the spec names them. With `files`
    (absolute path -> contents: what `point_files` ships), the point runs
    in a copy of those files under a scratch folder, at their own paths
    below it, so it needs nothing of the machine it runs on."""
    if files is None:
        with chdir(folder):
            run = _core.run_job_text(
                job_text, job_name, job_folder, device, overrides, seed, "terse"
            )
    else:
        with tempfile.TemporaryDirectory(prefix="flashpath-point-") as root:
            for path, data in files.items():
                copy = Path(root + path)
                copy.parent.mkdir(parents=True, exist_ok=True)
                copy.write_bytes(data)
            # The folders as absolute paths without "..", as the files' keys.
            here = root + os.path.abspath(folder)
            there = root + os.path.abspath(job_folder)
            for made in (here, there):
                Path(made).mkdir(parents=True, exist_ok=True)
            absolute = os.path.abspath(device) if os.path.isabs(device) else None
            shipped_device = root + absolute if absolute in files else device
            with chdir(here):
                run = _core.run_job_text(
                    job_text, job_name, there, shipped_device, overrides, seed, "terse"
                )
    doc = json.loads(run.json_text)
    return {"rows": rows_of_run(doc), "events": run.events, "ios": run.completed_ios}


def _profile_includes(text: str) -> list[str]:
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return []
    profile = doc.get("profile")
    includes = profile.get("include") if isinstance(profile, dict) else None
    return [i for i in includes if isinstance(i, str)] if isinstance(includes, list) else []


def point_files(spec: Spec, point: Point, contents: bool = True) -> dict[str, bytes]:
    """The files `point` reads, by absolute path: its device's profile file
    and the profiles it includes (relative to the including file, as the
    core resolves them: profile/mod.rs), and the files the job's include
    and read_iolog lines name (relative to the job's folder). A name that
    is no file here (a built-in profile) is left to the worker. Without
    `contents`, only the paths (every value empty)."""
    files: dict[str, bytes] = {}
    total = 0

    def add(path: Path, profile: bool) -> bytes | None:
        nonlocal total
        key = os.path.abspath(path)
        if key in files or not path.is_file():
            return None
        if not contents and not profile:
            files[key] = b""
            return None
        total += path.stat().st_size
        if total > SHIP_MAX:
            raise SweepError(
                f"{shown(str(path))}: the files point {point.index} reads are over "
                f"{SHIP_MAX >> 20} MiB: too much to ship to a worker"
            )
        data = path.read_bytes()
        files[key] = data if contents else b""
        return data

    pending = [spec.folder / point.device] if point.device.endswith(".toml") else []
    while pending:
        path = pending.pop()
        data = add(path, profile=True)
        if data is not None:
            text = data.decode("utf-8", errors="replace")
            pending.extend(path.parent / inc for inc in _profile_includes(text))
    for name, _line in files_read(spec.composed(point).text):
        add(spec.job_folder / name, profile=False)
    return files


def point_task(spec: Spec, point: Point, ship: bool = False) -> Task:
    """The task of one point; with `ship`, the files it reads travel with
    it (`point_files`), for a worker that cannot see the spec's folder."""
    return Task(
        label=point.describe() or spec.name,
        fn=run_point,
        args=(
            spec.composed(point).text,
            spec.job_name,
            str(spec.job_folder),
            str(spec.folder),
            point.device,
            list(point.overrides),
            point.seed,
            point_files(spec, point) if ship else None,
        ),
    )


def _atomic_write(path: Path, text: str) -> None:
    outputs.write_text(path, text, "--out")


def _digest(result: dict[str, Any]) -> str:
    """The digest of a point's figures (rows, events, I/Os) as saved."""
    blob = json.dumps(
        {k: result.get(k) for k in ("rows", "events", "ios")},
        sort_keys=True,
        separators=(",", ":"),
        allow_nan=True,
    ).encode()
    return hashlib.sha256(blob).hexdigest()


def _cell_ok(v: Any) -> bool:
    if v is None or isinstance(v, bool | str):
        return True
    if isinstance(v, int):
        return True
    return isinstance(v, float) and math.isfinite(v)


def part_problem(doc: Any, key: str) -> str | None:
    """Why a part file cannot stand for its point's run, or None: the
    wrong layout or key, figures that are not what a run writes (a row
    that is not a table of numbers and text, a count that is not a
    non-negative integer), or figures that no longer match the digest
    saved with them (edited or damaged)."""
    if not isinstance(doc, dict):
        return "not a JSON object"
    if doc.get("format") != PART_FORMAT:
        return f"format {doc.get('format')!r}, not {PART_FORMAT}"
    if doc.get("key") != key:
        return "written for another point"
    for count in ("events", "ios"):
        v = doc.get(count)
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            return f"{count} is not a count"
    rows = doc.get("rows")
    if not isinstance(rows, list):
        return "no rows"
    for i, row in enumerate(rows):
        if not isinstance(row, dict):
            return f"row {i + 1} is not a table"
        bad = next((k for k, v in row.items() if not _cell_ok(v)), None)
        if bad is not None:
            return f"row {i + 1}: {bad} is not a number or text"
    if doc.get("digest") != _digest(doc):
        return "its figures do not match the digest saved with them (edited or damaged)"
    return None


@dataclass
class Store:
    """The parts folder of an output file."""

    out: Path

    @property
    def folder(self) -> Path:
        return self.out.with_name(self.out.name + ".parts")

    @property
    def manifest(self) -> Path:
        return self.folder / "sweep.json"

    def part(self, key: str) -> Path:
        return self.folder / f"{key}.json"

    def load(self, key: str, stale: list[str] | None = None) -> dict[str, Any] | None:
        """The part of `key`, or None to run the point again: missing, or
        not a whole, unedited part (a file is only ever renamed into place
        whole, but a user may have edited it). A part that exists but is
        refused is named in `stale`."""
        path = self.part(key)
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError, RecursionError) as exc:
            problem: str | None = f"cannot be read: {exc}"
        else:
            problem = part_problem(doc, key)
        if problem:
            if stale is not None:
                stale.append(f"{path.name}: {problem}")
            return None
        return doc

    def save(self, key: str, result: dict[str, Any]) -> None:
        doc = {"format": PART_FORMAT, "key": key, "digest": _digest(result), **result}
        _atomic_write(self.part(key), json.dumps(doc, separators=(",", ":")) + "\n")


def _manifest(spec: Spec, keys: list[str]) -> dict[str, Any]:
    points = [[p.values, k] for p, k in zip(spec.points, keys, strict=True)]
    blob = json.dumps([spec.axes, points], sort_keys=True).encode()
    return {
        "format": PART_FORMAT,
        "fingerprint": hashlib.sha256(blob).hexdigest(),
        "axes": spec.axes,
        "points": points,
    }


def _open_store(out: Path, spec: Spec, keys: list[str], extend: bool) -> Store:
    store = Store(out)
    new = _manifest(spec, keys)
    try:
        old = json.loads(store.manifest.read_text(encoding="utf-8"))
    except FileNotFoundError:
        old = None
    except (OSError, ValueError, RecursionError) as exc:
        raise SweepError(f"{shown(str(store.manifest))}: not a sweep's record: {exc}") from None
    if old is not None and (
        not isinstance(old, dict)
        or not isinstance(old.get("points"), list)
        or not all(isinstance(p, list) and len(p) == 2 for p in old["points"])
    ):
        raise SweepError(f"{shown(str(store.manifest))}: not a sweep's record")
    if old is not None and old.get("fingerprint") != new["fingerprint"] and not extend:
        old_keys = {str(k) for _, k in old["points"]}
        added = sum(1 for k in keys if k not in old_keys)
        gone = len(old_keys - set(keys))
        raise SweepError(
            f"{shown(str(out))}: an earlier sweep with another spec wrote here "
            f"({shown(str(store.folder))}: {added} of this spec's {len(keys)} points are new, "
            f"{gone} of its points are not in this spec); rerun with --extend to reuse "
            "its finished points for this spec, or choose another --out"
        )
    try:
        store.folder.mkdir(exist_ok=True)
        _atomic_write(store.manifest, json.dumps(new, indent=1) + "\n")
    except OSError as exc:
        raise SweepError(
            f"{shown(str(store.folder))}: cannot write the sweep's parts: {exc.strerror or exc}"
        ) from None
    return store


class _Log:
    """The run log: one JSON line per point run and one per sweep."""

    def __init__(self, path: Path | None) -> None:
        self.file = path.open("a", encoding="utf-8") if path else None

    def write(self, record: dict[str, Any]) -> None:
        if self.file:
            self.file.write(json.dumps(record) + "\n")
            self.file.flush()

    def close(self) -> None:
        if self.file:
            self.file.close()


@dataclass
class Outcome:
    """What `run_sweep` did, for the summary line."""

    table: Any
    points: int
    ran: int
    reused: int
    wall_s: float
    rows: int
    # Worker processes used (--jobs as capped), and what the user should
    # know about the run (a capped --jobs, parts run again).
    jobs: int = 1
    notes: list[str] = field(default_factory=list)


def check_arguments(jobs: Any, backend: Any, address: Any, extend: Any) -> None:
    """The checks `flashpath sweep`'s options get from the command line,
    for callers of the Python API: one SweepError naming the argument."""
    if isinstance(jobs, bool) or not isinstance(jobs, int):
        raise SweepError(f"jobs: a whole number of worker processes, not {type(jobs).__name__}")
    if jobs < 1:
        raise SweepError(f"jobs: {jobs} worker processes: at least 1")
    if not isinstance(backend, str) or backend not in BACKENDS:
        raise SweepError(f"backend: {backend!r} is not one of {', '.join(BACKENDS)}")
    if address is not None and not isinstance(address, str):
        raise SweepError(f"address: a Ray cluster address (text), not {type(address).__name__}")
    if address is not None and backend != "ray":
        raise SweepError("address: a cluster address is for backend ray")
    if not isinstance(extend, bool):
        raise SweepError(f"extend: True or False, not {type(extend).__name__}")


def capped_jobs(jobs: int, todo: int, backend: str, address: str | None) -> tuple[int, str | None]:
    """`jobs` capped to the points to run and the machine's CPUs (more
    workers than either only cost memory and start-up), with a note when
    capped. A Ray cluster (an address) schedules by its own CPUs."""
    if backend == "ray" and address:
        return jobs, None
    cpus = os.cpu_count() or 1
    limit, why = (
        (cpus, f"the machine's {cpus} CPUs")
        if cpus <= max(todo, 1)
        else (
            max(todo, 1),
            f"the {todo} points to run" if todo != 1 else "the 1 point to run",
        )
    )
    if jobs <= limit:
        return jobs, None
    return limit, f"--jobs {jobs}: capped to {limit} worker{'s' if limit != 1 else ''} ({why})"


def run_sweep(
    spec: Spec,
    out: str | os.PathLike[str] | None = None,
    jobs: int | None = 1,
    backend: str = "local",
    address: str | None = None,
    extend: bool = False,
    show_progress: bool | None = None,
    on_point: Callable[[int, int], None] | None = None,
) -> Outcome:
    """Run the sweep `spec`: check it with the core, run the points not
    yet finished, write the Parquet table to `out` (when given) and
    return it as an Arrow table."""
    t0 = time.perf_counter()
    # None: one worker per CPU, capped to the points without a note.
    default_jobs = jobs is None
    if jobs is None:
        jobs = os.cpu_count() or 1
    check_arguments(jobs, backend, address, extend)
    if out is not None and not isinstance(out, str | os.PathLike):
        # Path(5) would fail deep in pathlib with a bare TypeError.
        raise SweepError(f"out: a path for the Parquet table, not {type(out).__name__}")
    out_path = Path(out) if out is not None else None
    if out_path is not None:
        check_outputs(spec, out_path)
    check(spec)
    keys = [run_key(spec, p) for p in spec.points]
    store = _open_store(out_path, spec, keys, extend) if out_path else None
    results: dict[str, dict[str, Any]] = {}
    stale: list[str] = []
    if store:
        for key in keys:
            part = store.load(key, stale)
            if part is not None:
                results[key] = part
    todo: dict[str, Point] = {}
    for point, key in zip(spec.points, keys, strict=True):
        if key not in results:
            todo.setdefault(key, point)
    reused = sum(1 for k in keys if k in results)
    notes = (
        [
            f"{shown(str(store.folder if store else ''))}: {len(stale)} part"
            f"{'s' if len(stale) != 1 else ''} run again ({stale[0]}"
            + (f"; and {len(stale) - 1} more" if len(stale) > 1 else "")
            + ")"
        ]
        if stale
        else []
    )
    jobs, capped = capped_jobs(jobs, len(todo), backend, address)
    if capped and not default_jobs:
        notes.append(capped)
    log = _Log(out_path.with_name(out_path.name + ".log") if out_path else None)
    order = list(todo)
    progress = Progress(f"sweep {spec.name}", len(keys), reused, show_progress)

    def finished(i: int, done: Done) -> None:
        key = order[i]
        point = todo[key]
        if store:
            store.save(key, done.value)
        results[key] = done.value
        log.write(
            {
                "event": "point",
                "point": point.index,
                "key": key,
                "wall_s": round(done.wall_s, 6),
                "worker": done.worker,
                "events": done.value["events"],
                "ios": done.value["ios"],
            }
        )
        progress.advance(point.describe())
        if on_point:
            on_point(point.index, len(results))

    # Ray's workers may run on nodes that cannot see the spec's folder.
    tasks = [point_task(spec, todo[k], ship=backend == "ray") for k in order]
    try:
        try:
            run_tasks(tasks, finished, jobs=jobs, backend=backend, address=address)
        except TaskFailed as failed:
            progress.close()
            point = todo[order[failed.index]]
            message = explain(spec, point, FlashpathError(*failed.error), spec.job_name)
            kept = f"; {len(results)} finished points are kept in {store.folder}" if store else ""
            raise SweepError(message + kept) from None
        finally:
            progress.close()
        # The device and the seed are columns even when they are not axes.
        columns = [*spec.axes, *(k for k in ("device", "seed") if k not in spec.axes)]
        values = [{**p.values, "device": p.device, "seed": p.seed} for p in spec.points]
        table = build_table(
            columns,
            axis_types(columns, values),
            (
                (p.index, {c: v[c] for c in columns}, results[k]["rows"])
                for p, k, v in zip(spec.points, keys, values, strict=True)
            ),
            {
                "flashpath.schema": SCHEMA_VERSION,
                "flashpath.version": _core.__version__,
                "flashpath.sweep": spec.name,
                "flashpath.description": spec.description,
                "flashpath.axes": json.dumps(spec.axes),
            },
        )
        if out_path:
            try:
                write_parquet(table, str(out_path))
            except OSError as exc:
                raise SweepError(
                    f"{shown(str(out_path))}: cannot write: {exc.strerror or exc}"
                ) from None
        wall = time.perf_counter() - t0
        log.write(
            {
                "event": "sweep",
                "sweep": spec.name,
                "driver": f"{socket.gethostname()}:{os.getpid()}",
                "started": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(time.time() - wall)),
                "backend": backend,
                "jobs": jobs,
                "points": len(keys),
                "ran": len(todo),
                "reused": reused,
                "rows": table.num_rows,
                "wall_s": round(wall, 3),
            }
        )
    finally:
        log.close()
    return Outcome(table, len(keys), len(todo), reused, wall, table.num_rows, jobs, notes)


def check_outputs(spec: Spec, out: Path) -> None:
    """The output rule (flashpath.outputs) for a sweep's table, its run
    log and its parts folder: none may be a file the sweep reads, a
    device node, a FIFO or (but the parts) a folder."""
    inputs = [outputs.Named(str(p), what) for p, what in spec.inputs()]
    # What the points read besides: the profiles a device includes, the
    # job's includes and iologs (a fio axis cannot add a line, so one point
    # per device names them all).
    for point in {p.device: p for p in spec.points}.values():
        for path in point_files(spec, point, contents=False):
            inputs.append(outputs.Named(path, "a file the sweep's points read"))
    log = out.with_name(out.name + ".log")
    parts = out.with_name(out.name + ".parts")
    outputs.check_output(out, "--out", inputs)
    outputs.check_output(log, "--out's run log", inputs, [outputs.Named(str(out), "--out")])
    if parts.exists() and not parts.is_dir():
        raise SweepError(
            f"--out: {shown(str(parts))}, the folder of the sweep's parts, is not a folder"
        )
    for p, what in spec.inputs():
        if outputs.same_file(p.parent, parts):
            raise SweepError(f"--out: {shown(str(parts))} holds {what} {shown(str(p))}")


def summary(spec: Spec, outcome: Outcome, backend: str, jobs: int, out: str | None) -> str:
    where = f" -> {out}" if out else ""
    workers = "Ray" if backend == "ray" else f"{jobs} worker{'s' if jobs != 1 else ''}"
    return (
        f"flashpath sweep {spec.name}: {outcome.points} points ({outcome.ran} run, "
        f"{outcome.reused} reused) in {outcome.wall_s:.1f} s on {workers}"
        f"{rate(outcome.ran, outcome.wall_s)}; {outcome.rows} rows{where}"
    )
