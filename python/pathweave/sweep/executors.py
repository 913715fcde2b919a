"""Where sweep runs execute: in this process, in a local process pool, or on a Dask cluster.

Workers only simulate and hand back columns (or an error message); the parent process writes
the cache, so a cluster's workers need no access to it.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import time
import uuid
from collections.abc import Iterator
from typing import TYPE_CHECKING

from pathweave import _core
from pathweave._core import PathweaveError, Simulation
from pathweave.api import _advance, parse
from pathweave.sweep.plan import Task

if TYPE_CHECKING:
    from dask.distributed import Client
    from rich.progress import Progress as RichProgress

WORKER_START_TIMEOUT_S = 120.0
"""How long local worker processes may take to start before a sweep gives up on them."""


def default_jobs() -> int:
    """The number of CPUs this process may use."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


# What a worker hands back: the raw columns and the wall time, or an error message.
_Outcome = tuple["_core._Results", float] | str


def _simulate(text: str, label: str, seed: int) -> _Outcome:
    """Run one task (in a worker, or in this process). Never raises for a failed run."""
    try:
        sim = Simulation(parse(text, label), seed)
        start = time.perf_counter()
        for _ in _advance(sim, start):
            pass
        wall = time.perf_counter() - start
        sim.check_conservation()
        return sim.results(), wall
    except KeyboardInterrupt:
        raise
    except Exception as e:  # reported as a failed point; the sweep goes on
        return f"{type(e).__name__}: {e}"


def execute(
    tasks: list[Task], jobs: int | None, dask: str | Client | None
) -> Iterator[tuple[Task, _Outcome]]:
    """Run ``tasks``, yielding each with its outcome as it finishes."""
    if not tasks:
        return
    if dask is not None:
        yield from _execute_dask(tasks, dask)
        return
    jobs = default_jobs() if jobs is None else jobs
    if jobs < 1:
        raise ValueError(f"jobs must be at least 1, not {jobs}")
    if jobs == 1 or len(tasks) == 1:
        for task in tasks:
            yield task, _simulate(task.point.text, task.point.label, task.seed)
        return
    yield from _execute_pool(tasks, min(jobs, len(tasks)))


def _pool_task(item: tuple[int, str, str, int]) -> tuple[int, _Outcome]:
    n, text, label, seed = item
    return n, _simulate(text, label, seed)


def _ignore_sigint() -> None:
    # Ctrl-C reaches the whole process group; the parent alone decides what to do.
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _worker_ready() -> bool:
    return True


def _execute_pool(tasks: list[Task], jobs: int) -> Iterator[tuple[Task, _Outcome]]:
    # "spawn": fresh interpreters, safe whatever threads this process runs (a progress bar,
    # Dask, a test runner), and the same on Linux and macOS.
    context = multiprocessing.get_context("spawn")
    pool = context.Pool(jobs, initializer=_ignore_sigint)
    items = [(n, t.point.text, t.point.label, t.seed) for n, t in enumerate(tasks)]
    try:
        # A worker that cannot start (a script without the __main__ guard starts a sweep
        # again while it is imported) dies and is replaced for ever; fail instead of hanging.
        try:
            pool.apply_async(_worker_ready).get(timeout=WORKER_START_TIMEOUT_S)
        except multiprocessing.TimeoutError:
            raise PathweaveError(
                f"the worker processes did not start within {WORKER_START_TIMEOUT_S:g} s. "
                "Each worker imports the calling script again, so a script that runs sweeps "
                "with more than one job must do so under 'if __name__ == \"__main__\":' "
                "(or use jobs=1)"
            ) from None
        for n, outcome in pool.imap_unordered(_pool_task, items, chunksize=1):
            yield tasks[n], outcome
        pool.close()
    except BaseException:
        pool.terminate()
        raise
    finally:
        pool.join()


def _execute_dask(tasks: list[Task], dask: str | Client) -> Iterator[tuple[Task, _Outcome]]:
    from dask.distributed import Client, as_completed

    own = not isinstance(dask, Client)
    try:
        # Dask's own setting bounds the wait: distributed.comm.timeouts.connect (30 s).
        client = Client(dask) if isinstance(dask, str) else dask  # type: ignore[no-untyped-call]
    except (OSError, ValueError) as e:  # unreachable, or not an address
        raise PathweaveError(f"cannot connect to the Dask scheduler at {dask}: {e}") from None
    # Named after the run for the dashboard; the suffix keeps a forced rerun from being
    # answered with a result the scheduler still holds under the same name.
    batch = uuid.uuid4().hex[:8]
    try:
        futures = {
            client.submit(
                _simulate,
                t.point.text,
                t.point.label,
                t.seed,
                key=f"pathweave-run-{t.key[:16]}-{batch}",
                pure=False,
            ): t
            for t in tasks
        }
        try:
            for future in as_completed(futures):  # type: ignore[no-untyped-call]
                task = futures[future]
                try:
                    outcome: _Outcome = future.result()
                except Exception as e:  # a worker died or could not unpickle the task
                    outcome = f"{type(e).__name__}: {e}"
                yield task, outcome
        except BaseException:
            client.cancel(list(futures))  # type: ignore[no-untyped-call]
            raise
    finally:
        if own:
            client.close()  # type: ignore[no-untyped-call]


class SweepBar:
    """Runs done of the total, with the time left, on stderr."""

    def __init__(self, description: str, total: int, done: int) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )
        from rich.progress import Progress as RichProgress

        self._bar: RichProgress = RichProgress(
            TextColumn("{task.description}"),
            BarColumn(bar_width=24),
            MofNCompleteColumn(),
            TextColumn("runs"),
            TimeElapsedColumn(),
            TextColumn("eta"),
            TimeRemainingColumn(),
            console=Console(file=sys.stderr),
            transient=True,
        )
        self._task = self._bar.add_task(description, total=total, completed=done)
        self._bar.start()

    def advance(self) -> None:
        self._bar.advance(self._task)

    def close(self) -> None:
        self._bar.stop()
