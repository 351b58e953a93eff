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
import os
import socket
import time
from collections.abc import Callable
from contextlib import chdir
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flashpath import _core
from flashpath._core import FlashpathError
from flashpath._messages import shown
from flashpath.engine import Done, Task, TaskFailed, run_tasks
from flashpath.progress import Progress, rate
from flashpath.sweep_spec import Point, Spec, check, explain, run_key
from flashpath.sweep_table import (
    SCHEMA_VERSION,
    axis_types,
    build_table,
    rows_of_run,
    write_parquet,
)

PART_FORMAT = 1


class SweepError(FlashpathError):
    """A sweep that cannot go on: one message for the user."""


def run_point(
    job_text: str,
    job_name: str,
    job_folder: str,
    folder: str,
    device: str,
    overrides: list[str],
    seed: int,
) -> dict[str, Any]:
    """One point, in a worker: the run's rows and its event count. The
    spec's folder is the current directory, so a device given as a path
    and the job's includes are found as the spec names them."""
    with chdir(folder):
        run = _core.run_job_text(job_text, job_name, job_folder, device, overrides, seed, "terse")
    doc = json.loads(run.json_text)
    return {"rows": rows_of_run(doc), "events": run.events, "ios": run.completed_ios}


def point_task(spec: Spec, point: Point) -> Task:
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
        ),
    )


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(f".tmp-{os.getpid()}-{path.name}")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


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

    def load(self, key: str) -> dict[str, Any] | None:
        try:
            doc = json.loads(self.part(key).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            # Missing, or not a whole part (a file is only ever renamed
            # into place whole, but a user may have edited it): run again.
            return None
        if doc.get("format") != PART_FORMAT or doc.get("key") != key:
            return None
        return doc

    def save(self, key: str, result: dict[str, Any]) -> None:
        doc = {"format": PART_FORMAT, "key": key, **result}
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
    except (OSError, ValueError) as exc:
        raise SweepError(f"{shown(str(store.manifest))}: not a sweep's record: {exc}") from None
    if old is not None and old.get("fingerprint") != new["fingerprint"] and not extend:
        old_keys = {k for _, k in old.get("points", [])}
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


def run_sweep(
    spec: Spec,
    out: str | os.PathLike[str] | None = None,
    jobs: int = 1,
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
    check(spec)
    keys = [run_key(spec, p) for p in spec.points]
    out_path = Path(out) if out is not None else None
    store = _open_store(out_path, spec, keys, extend) if out_path else None
    results: dict[str, dict[str, Any]] = {}
    if store:
        for key in keys:
            part = store.load(key)
            if part is not None:
                results[key] = part
    todo: dict[str, Point] = {}
    for point, key in zip(spec.points, keys, strict=True):
        if key not in results:
            todo.setdefault(key, point)
    reused = sum(1 for k in keys if k in results)
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

    tasks = [point_task(spec, todo[k]) for k in order]
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
    return Outcome(table, len(keys), len(todo), reused, wall, table.num_rows)


def summary(spec: Spec, outcome: Outcome, backend: str, jobs: int, out: str | None) -> str:
    where = f" -> {out}" if out else ""
    workers = "Ray" if backend == "ray" else f"{jobs} worker{'s' if jobs != 1 else ''}"
    return (
        f"flashpath sweep {spec.name}: {outcome.points} points ({outcome.ran} run, "
        f"{outcome.reused} reused) in {outcome.wall_s:.1f} s on {workers}"
        f"{rate(outcome.ran, outcome.wall_s)}; {outcome.rows} rows{where}"
    )
