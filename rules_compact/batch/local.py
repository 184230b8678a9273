"""``--jobs N``: worker processes on this machine, each file read by one of them, the chunks of
a file that splits computed by all, the results in input order."""

from __future__ import annotations

import gc
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections import deque
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from functools import partial
from typing import Callable, Iterator, Sequence

from ..errors import RulesCompactError
from .files import FileResult, Spill, Split, computed, here, load_chunk, read_or_split, spill_folder
from .tasks import Task

__all__ = ["WorkerError", "Workers", "default_jobs"]


class WorkerError(RulesCompactError):
    """A worker process stopped without an answer (killed, or out of memory)."""


def default_jobs() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


_TASK: Task | None = None  # a worker process's task, set once when it starts
_SPILL = ""  # and the folder its split files' chunks go to
PARENT_CHECK = 0.5  # seconds between a worker's looks at whether the command's process is still there


def _start_worker(task: Task, spill: str, parent: int) -> None:
    global _TASK, _SPILL
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole process group: the parent stops us
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # not the CLI's handler inherited through fork
    _watch(parent)
    gc.freeze()  # what the parent made stays shared: the collector need not touch (and copy) it
    _TASK, _SPILL = task, spill


def _watch(parent: int) -> None:
    """End this worker once ``parent``, the command's process, is gone: killed (SIGKILL), it
    could not stop us, and nothing else would (this process then has another parent)."""
    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_CHECK)
        os._exit(1)

    threading.Thread(target=watch, name="rules-compact-parent-watch", daemon=True).start()


def _worker_read(path: str) -> FileResult | Split:
    return read_or_split(_TASK, path, _SPILL)


def _worker_chunk(where: tuple[str, int, int]) -> FileResult:
    """A chunk's results (as a FileResult without path or warnings: the file's are in its Split)."""
    return computed(_TASK, "", load_chunk(where), ())


def _start_method():
    """Fork where it is safe (Linux): a worker starts with the package imported and the rules
    compiled (the task's RuleSources are in the inherited cache); elsewhere the platform's default."""
    return multiprocessing.get_context("fork") if sys.platform.startswith("linux") else None


@dataclass
class _File:
    """A file of :class:`Workers`: the future that reads it, and once it splits, its chunks' futures."""

    path: str
    read: Future
    split: Split | None = None
    parts: list[Future] = field(default_factory=list)
    opened: bool = False  # read, and its chunks (if any) queued

    def finished(self) -> bool:
        if not self.opened:
            return False
        return self.split is None or (len(self.parts) == len(self.split.chunks) and all(p.done() for p in self.parts))

    def result(self) -> FileResult:
        if self.split is None:
            return self.read.result()
        os.unlink(self.split.spill)  # its chunks are computed
        return self.split.joined([part.result() for part in self.parts])


class Workers:
    """:func:`run` on ``jobs`` worker processes: each file read by one of them, the chunks of a
    file that splits computed by all (before any further file), the results in input order.

    This process computes nothing: it reads only what a worker cannot (stdin) and hands out the
    pieces of work, one running and one waiting per worker so that none idles (a thread of
    this process computing beside them cost a fifth more CPU: the two threads share one
    interpreter lock).  The workers are forked at the first piece, with the rules compiled.
    At most ``2 * jobs`` files are in flight; the chunks of the split ones among them wait in
    a spill folder (in memory where there is one), which this process removes when done (the
    next run does, if it was killed: workers end when it is gone); it holds only the file it
    reads itself."""

    def __init__(self, task: Task, jobs: int, refuse):
        self.task, self.refuse = task, refuse
        self.jobs, self.window = jobs, 2 * jobs
        self.pool: ProcessPoolExecutor | None = None
        self.spill: Spill | None = None  # the folder of the split files' chunks, made with the pool
        self.files: deque[_File] = deque()  # in input order, until yielded
        self.chunks: deque[tuple[_File, int]] = deque()  # to compute, in order, before the next file
        self.running: dict[Future, _File | None] = {}  # a piece of work, and the file it reads

    def results(self, paths: Sequence[str]) -> Iterator[FileResult]:
        before = {child.pid for child in multiprocessing.active_children()}
        ahead = iter(paths)
        try:
            while True:
                while len(self.running) < 2 * self.jobs and self._take(ahead):
                    pass
                if not self.files:
                    break
                if self.files[0].finished():
                    file = self.files.popleft()
                    for part in file.parts:  # done, maybe not yet collected
                        self.running.pop(part, None)
                    yield file.result()
                else:
                    self._collect()
        except BrokenProcessPool:
            self._stop(before)
            raise WorkerError("a worker process stopped without an answer (killed, or out of memory?)") from None
        except BaseException:  # an interrupt, or the caller closed the iterator: stop now, not after the work
            self._stop(before)
            raise
        finally:
            if self.spill is not None:
                self.spill.remove()
        if self.pool is not None:
            self.pool.shutdown()

    def _take(self, ahead: Iterator[str]) -> bool:
        """Start the next piece of work, a queued chunk or else the next file (within the
        window); False when there is none."""
        if self.chunks:
            file, index = self.chunks.popleft()
            file.parts.append(self._submit(_worker_chunk, file.split.chunk(index)))
            return True
        path = next(ahead, None) if len(self.files) < self.window else None
        if path is None:
            return False
        if path == "-" or (self.refuse is not None and self.refuse(path)):  # read here, computed by the workers
            self._start()
            read = partial(read_or_split, spill=self.spill.path, compute_first=False)
            file = _File(path, here(self.task, path, self.refuse, read))
            self._open(file)
        else:
            file = _File(path, self._submit(_worker_read, path))
            self.running[file.read] = file
        self.files.append(file)
        return True

    def _start(self) -> None:
        """The spill folder and the workers, at the first piece of work."""
        if self.pool is None:
            self.spill = spill_folder()
            self.pool = ProcessPoolExecutor(self.jobs, mp_context=_start_method(), initializer=_start_worker,
                                            initargs=(self.task, self.spill.path, os.getpid()))

    def _submit(self, work: Callable, argument) -> Future:
        self._start()
        future = self.pool.submit(work, argument)
        self.running[future] = None
        return future

    def _collect(self) -> None:
        """Wait for pieces to be done; queue the chunks of the files that split."""
        done, _ = wait(self.running, return_when=FIRST_COMPLETED)
        for future in done:
            file = self.running.pop(future)
            if file is not None:
                self._open(file)

    def _open(self, file: _File) -> None:
        """A file is read: queue its chunks if it split."""
        read = file.read.result()
        if isinstance(read, Split):
            file.split = read
            self.chunks.extend((file, index) for index in range(len(read.chunks)))
        file.opened = True

    def _stop(self, before: set) -> None:
        for future in self.running:
            future.cancel()
        if self.pool is None:
            return
        self.pool.shutdown(wait=False, cancel_futures=True)
        workers = [child for child in multiprocessing.active_children() if child.pid not in before]
        for child in workers:
            child.terminate()
        for child in workers:
            child.join(5)
