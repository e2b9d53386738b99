"""Where the notebooks run: a Dask cluster given by address, or one started on this machine.

Tasks carry the code of :mod:`grading.execute` with them (pickled by value), so a worker
needs the course's Python environment (nbgrader, the kernel's packages) but neither this
package nor the course files.

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
from collections.abc import Iterator

import cloudpickle
from distributed import Client, LocalCluster

from grading import execute

cloudpickle.register_pickle_by_value(execute)


def default_workers() -> int:
    """The cores this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


@contextlib.contextmanager
def connect(scheduler: str | None, workers: int) -> Iterator[Client]:
    """A client of the scheduler at ``scheduler``, or of a local cluster of ``workers`` single-task processes."""
    if scheduler:
        with Client(scheduler, timeout="30s") as client:
            yield client
        return
    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None,
                      silence_logs=logging.ERROR) as cluster, Client(cluster) as client:
        yield client
