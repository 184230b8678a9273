"""``--scheduler ADDRESS``: the files computed on a Dask cluster, a file per task, in input order."""

from __future__ import annotations

from collections import deque
from typing import Callable, Iterator, Sequence

from ..errors import InputError
from .files import FileResult, here, read_results
from .tasks import Task

__all__ = ["on_dask", "CONNECT_TIMEOUT"]

CONNECT_TIMEOUT = "10s"  # how long --scheduler tries to reach the scheduler


def submitter(task: Task, remote: Callable[[str], object], refuse) -> Callable[[str], object]:
    def submit(path: str):
        if path == "-" or (refuse is not None and refuse(path)):
            return here(task, path, refuse, read_results)
        return remote(path)
    return submit


def in_order(submit: Callable[[str], object], paths: Sequence[str], window: int) -> Iterator[FileResult]:
    """Submit up to ``window`` files ahead; yield their results in input order; cancel what is
    pending when stopped."""
    pending: deque = deque()
    ahead = iter(paths)
    try:
        for path in ahead:
            pending.append(submit(path))
            if len(pending) >= window:
                break
        while pending:
            result = pending.popleft().result()
            following = next(ahead, None)
            if following is not None:
                pending.append(submit(following))
            yield result
    finally:
        for future in pending:
            future.cancel()


def on_dask(task: Task, paths: Sequence[str], address: str, refuse) -> Iterator[FileResult]:
    try:
        from distributed import Client
    except ImportError:
        raise InputError("--scheduler needs Dask: pip install 'rules-compact[dask]'") from None
    try:
        client = Client(address, timeout=CONNECT_TIMEOUT, set_as_default=False)
    except (OSError, ValueError) as exc:
        raise InputError(f"--scheduler {address}: cannot connect: {exc}") from None
    try:
        shipped = client.scatter(task, broadcast=True, hash=False)  # the rule files' text, once per worker
        window = 2 * max(1, sum(client.nthreads().values()))

        def remote(path: str):
            return client.submit(read_results, shipped, path, pure=False)

        yield from in_order(submitter(task, remote, refuse), paths, window)
    finally:
        client.close()
