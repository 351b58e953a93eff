"""Running many independent simulations: in this process, on a local
process pool, or on a Ray cluster.

A simulation is single-threaded and deterministic, so a grid's points
can run anywhere in any order; the caller gets each result as it comes
(to save it at once) and orders them itself. A task is a picklable call
of a module-level function; it returns `Done` (its result, or the core's
error as plain data: the core's exception class does not pickle)."""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any

BACKENDS = ("local", "ray")


@dataclass(frozen=True)
class Task:
    """`fn(*args)` under the name `label` (for progress and the run log)."""

    label: str
    fn: Callable[..., Any]
    args: tuple[Any, ...]


@dataclass(frozen=True)
class Done:
    """A task's outcome: `value`, or `error` (the core's error arguments:
    message, file, line, what is wrong); where and how long it ran."""

    value: Any
    error: tuple[Any, ...] | None
    wall_s: float
    worker: str


def _call(task: Task) -> Done:
    from flashpath._core import FlashpathError

    t0 = time.perf_counter()
    worker = f"{socket.gethostname()}:{os.getpid()}"
    try:
        value = task.fn(*task.args)
    except FlashpathError as err:
        return Done(None, tuple(err.args), time.perf_counter() - t0, worker)
    return Done(value, None, time.perf_counter() - t0, worker)


class TaskFailed(Exception):
    """A task raised the core's error; the sweep stops (finished results
    are kept by the caller)."""

    def __init__(self, index: int, error: tuple[Any, ...]) -> None:
        super().__init__(error[0] if error else "error")
        self.index = index
        self.error = error


OnDone = Callable[[int, Done], None]


def run_tasks(
    tasks: Sequence[Task],
    on_done: OnDone,
    jobs: int = 1,
    backend: str = "local",
    address: str | None = None,
) -> None:
    """Run `tasks`, calling `on_done(i, done)` in this process as each
    finishes (in completion order). The first task that fails stops the
    rest and raises `TaskFailed`."""
    if not tasks:
        return
    if backend == "ray":
        _run_ray(tasks, on_done, jobs, address)
    elif jobs <= 1 or len(tasks) == 1:
        for i, task in enumerate(tasks):
            _deliver(i, _call(task), on_done)
    else:
        _run_pool(tasks, on_done, jobs)


def _deliver(i: int, done: Done, on_done: OnDone) -> None:
    if done.error is not None:
        raise TaskFailed(i, done.error)
    on_done(i, done)


def _run_pool(tasks: Sequence[Task], on_done: OnDone, jobs: int) -> None:
    import multiprocessing

    # spawn, not fork: the parent may hold threads (a progress bar), which
    # a forked child would inherit in whatever state they were.
    context = multiprocessing.get_context("spawn")
    workers = min(jobs, len(tasks))
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        pending: dict[Future[Done], int] = {}
        queue = iter(enumerate(tasks))

        def top_up() -> None:
            # A bounded queue: twice the workers in flight, so a stop
            # leaves little queued work to cancel.
            for i, task in queue:
                pending[pool.submit(_call, task)] = i
                if len(pending) >= 2 * workers:
                    break

        top_up()
        try:
            while pending:
                finished, _ = wait(list(pending), return_when=FIRST_COMPLETED)
                for fut in sorted(finished, key=lambda f: pending[f]):
                    i = pending.pop(fut)
                    try:
                        done = fut.result()
                    except BrokenProcessPool:
                        raise RuntimeError(
                            f"a worker process died while running {tasks[i].label!r} "
                            "(killed, or out of memory)"
                        ) from None
                    _deliver(i, done, on_done)
                top_up()
        except BaseException:
            for fut in pending:
                fut.cancel()
            raise


def _run_ray(tasks: Sequence[Task], on_done: OnDone, jobs: int, address: str | None) -> None:
    try:
        import ray
    except ImportError:
        raise RuntimeError("the ray backend needs Ray: pip install 'flashpath[ray]'") from None
    started_here = not ray.is_initialized()
    if started_here:
        kwargs: dict[str, Any] = {"log_to_driver": False, "include_dashboard": False}
        if address:
            kwargs["address"] = address
        else:
            # A local instance of `jobs` CPUs (one task per CPU).
            kwargs["num_cpus"] = max(1, jobs)
        ray.init(**kwargs)
    try:
        remote = ray.remote(num_cpus=1, max_retries=0)(_call)
        refs: dict[Any, int] = {}
        queue = iter(enumerate(tasks))
        # Enough in flight to keep every CPU of the cluster busy.
        window = max(2 * int(ray.cluster_resources().get("CPU", 1)), 2)

        def top_up() -> None:
            for i, task in queue:
                refs[remote.remote(task)] = i
                if len(refs) >= window:
                    break

        top_up()
        try:
            while refs:
                ready, _ = ray.wait(list(refs), num_returns=1)
                for ref in ready:
                    i = refs.pop(ref)
                    try:
                        done = ray.get(ref)
                    except ray.exceptions.RayError as exc:
                        # A worker that died or raised outside the core
                        # (a node without flashpath, a version apart): one
                        # line, the cause's last, not Ray's traceback.
                        last = str(exc).strip().splitlines()[-1:] or [type(exc).__name__]
                        raise RuntimeError(f"a Ray worker failed: {last[0]}") from None
                    _deliver(i, done, on_done)
                top_up()
        except BaseException:
            for ref in refs:
                ray.cancel(ref, force=True)
            raise
    finally:
        if started_here:
            ray.shutdown()
