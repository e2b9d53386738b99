"""Where the notebooks run: a Dask cluster given by address, or one started on this machine.

Tasks carry the code of :mod:`grading.execute` with them (pickled by value), so the
scheduler and the workers need the course's Python environment (nbgrader, the kernel's
packages) but neither this package nor the course files.

Example
-------
>>> with connect(None, workers=2) as client:        # doctest: +SKIP
...     client.submit(sum, [1, 2]).result()
3
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported where used, so that the command line starts (and refuses) quickly
    from distributed import Client, Future


def _by_value() -> None:
    """Make the task code travel with each task (pickled by value)."""
    import cloudpickle

    from grading import (
        execute,
        executor,
        forked,
        judge,
        kernel,
        limits,
        private_api,
        relay,
        roles,
        room,
        sandbox,
        snapshot,
        submission,
        tasks,
        zygote,
    )

    for module in (
        limits,
        private_api,
        tasks,
        submission,
        snapshot,
        zygote,
        sandbox,
        relay,
        forked,
        room,
        judge,
        roles,
        kernel,
        executor,
        execute,
    ):
        cloudpickle.register_pickle_by_value(module)


def default_workers() -> int:
    """The cores this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


@contextlib.contextmanager
def connect(scheduler: str | None, workers: int) -> Iterator[Client]:
    """A client of the scheduler at ``scheduler``, or of a cluster in this process running ``workers`` tasks at once.

    The local cluster runs each task in a worker process of its own (one task at a time per
    worker): notebook execution drives an event loop, and threads sharing one process could
    leave a task waiting forever after another task's kernel died.
    """
    from distributed import Client, LocalCluster

    if scheduler:
        with Client(scheduler, timeout="30s") as client:
            yield client
        return
    with (
        LocalCluster(
            n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None, silence_logs=logging.ERROR
        ) as cluster,
        Client(cluster) as client,
    ):
        yield client


class _Call:
    """Unpickling this object calls ``func(*args)``."""

    def __init__(self, func: Callable[..., Any], *args: Any) -> None:
        self.func, self.args = func, args

    def __reduce__(self) -> tuple[Callable[..., Any], tuple[Any, ...]]:
        return self.func, self.args


def submit(client: Client, func: Callable[..., Any], *args: Any, key: str, retries: int = 1) -> Future[Any]:
    """Run ``func(*args)`` on the cluster, the function's code travelling with the task.

    Dask pickles a task with the standard pickler when it can, which names functions by
    module; the task here is ``cloudpickle.loads`` of bytes whose unpickling runs the call,
    so neither the scheduler nor the workers have to import this package.
    """
    import cloudpickle

    _by_value()
    blob = cloudpickle.dumps(_Call(func, *args))
    return client.submit(cloudpickle.loads, blob, key=key, pure=False, retries=retries)
