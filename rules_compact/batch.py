"""Whole corpora: conversations and files mapped to result rows, on local processes or on Dask.

A *task* is what ``rules-compact stats``, ``replay`` or ``diff`` computes for one conversation,
as plain data that pickles: :class:`Stats`, :class:`Replays`, :class:`Diff`.  Rule files travel
as their text (:class:`RuleSource`: the file and every file it extends), never compiled; each
process compiles a rule file once, on first use.  Plugins are the ones installed where the rows
are computed: a worker that lacks one the rules were loaded with (or has another version of it)
raises PluginError rather than computing other numbers.

Each task maps

* a conversation to its rows: ``task.rows(conversation)``;
* a file to the rows of all its conversations: ``task.file_rows(path)`` (InputError for a bad
  file), or :func:`read_results` (each conversation's result, the file's error and warnings
  as data);
* JSON text, such as a JSONL line holding one request body: ``task.text_rows(text, name)``.

:func:`run` maps files on worker processes (``jobs``) or on a Dask cluster (``scheduler``), in
input order, each file read by the worker that handles it; :func:`write_table` writes rows as
JSONL or Parquet.  Rows are the ``--json`` objects (docs/json.md), one shape per task; docs/batch.md has more.  With
Dask directly::

    import dask.bag as db
    from rules_compact import batch

    task = batch.Stats.of(["default"])
    rows = db.from_sequence(paths, npartitions=64).map(task.file_rows).flatten()
    batch.write_table(rows.compute(), "stats.parquet")
"""

from __future__ import annotations

import gc
import multiprocessing
import os
from abc import ABC, abstractmethod
import signal
from collections import deque
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Callable, Iterable, Iterator, Sequence

from .documents import conversations_in, dump_json_line, read_conversations_from, write_atomic
from .errors import InputError, RulesCompactError
from .formats import FORMATS
from .language.loader import parse_rules, read_source
from .language.model import RuleSet
from .plugins.manager import PluginError, registry
from .readers import Conversation
from .replay import Price, Replay, cold_rounds, parse_price, round_starts
from .rows import DiffRow, ReplayRow, StatsRow, diff_row, replays, stats_row

__all__ = ["RuleSource", "Task", "Stats", "Replays", "Replayed", "Diff", "FileResult", "read_file", "read_results", "run",
           "default_jobs", "write_table", "require_table", "WorkerError"]


class WorkerError(RulesCompactError):
    """A worker process stopped without an answer (killed, or out of memory)."""


CONNECT_TIMEOUT = "10s"  # how long --scheduler tries to reach the scheduler
_COMPILED: dict[RuleSource, RuleSet] = {}  # per process: each rule source compiled once


@dataclass(frozen=True)
class RuleSource:
    """A rule file as data that travels to workers: its text, the texts of the files it extends,
    and the plugins (name, version) it was loaded with."""

    spec: str  # as given: a path, ``default``, ``preset:NAME``
    text: str
    file: str
    extended: tuple[tuple[str, str, str], ...]  # (extends target, text, file name), as read
    plugins: tuple[tuple[str, str], ...]

    @classmethod
    def read(cls, spec: str) -> RuleSource:
        """Read and compile ``spec`` here (ConfigError, InputError as :func:`load_rules` raises them)."""
        read: list[tuple[str, str, str]] = []

        def recording(target: str) -> tuple[str, str]:
            text, file = read_source(target)
            read.append((target, text, file))
            return text, file

        text, file = read_source(spec)
        ruleset = parse_rules(text, file, read=recording)
        source = cls(spec, text, file, tuple(read), registry().plugins)
        _COMPILED[source] = ruleset
        return source

    def load(self) -> RuleSet:
        """The compiled rule set, compiled in this process on first use."""
        ruleset = _COMPILED.get(self)
        if ruleset is None:
            here = set(registry().plugins)
            missing = [f"{name} {version}" for name, version in self.plugins if (name, version) not in here]
            if missing:
                raise PluginError(f"{self.spec}: this worker lacks plugin {', '.join(missing)}, which the rules "
                                  "were loaded with; install the same plugins on every worker")
            texts = {target: (text, file) for target, text, file in self.extended}
            ruleset = _COMPILED[self] = parse_rules(self.text, self.file, read=texts.__getitem__)
        return ruleset


def read_file(path: str, forced: str | None, warn: Callable[[str], None]) -> list[tuple[Conversation, str]]:
    """Each conversation of a file (``-``: stdin) with the format its rules see: ``forced``, else
    the detected one.

    Messages the API would reject in a forced format raise InputError naming the detected
    format.  A forced format that finds fewer items (tool results and assistant turns) than the
    detected one, none at all for instance, is a ``warn``-ing saying which format the content
    looks like.
    """
    out = []
    for conv in read_conversations_from(path):
        fmt = forced or conv.format
        if fmt != conv.format and conv.messages:
            try:  # one error line: the API would reject the messages in the forced format
                FORMATS[fmt].check(conv.messages)
            except InputError as error:
                raise InputError(f"{error}; the content looks like {conv.format} (--format {conv.format})") from None
            found = len(FORMATS[fmt].items(conv.messages))
            detected = len(FORMATS[conv.format].items(conv.messages))
            if found < detected:
                what = f"finds only {found} of the {detected}" if found else f"finds none of the {detected}"
                warn(f"{conv.name}: --format {fmt} {what} tool results and assistant turns; "
                     f"the content looks like {conv.format} (--format {conv.format})")
        out.append((conv, fmt))
    return out


class Task(ABC):
    """What one command computes per conversation; subclasses are frozen dataclasses with a
    ``format`` (None: each conversation's detected format)."""

    format: str | None

    @abstractmethod
    def compute(self, conversation: Conversation, fmt: str | None = None):
        """The command's result for one conversation (a row record of :mod:`rules_compact.rows`)."""

    def records(self, result) -> list[dict]:
        """``compute``'s result as table rows (the ``--json`` objects)."""
        return [result.to_dict()]

    def rows(self, conversation: Conversation, fmt: str | None = None) -> list[dict]:
        """The table rows of one conversation."""
        return self.records(self.compute(conversation, fmt))

    def file_rows(self, path: str) -> list[dict]:
        """The rows of every conversation in a file; InputError for a bad file."""
        result = read_results(self, path)
        if result.error is not None:
            raise result.error
        return result.rows(self)

    def text_rows(self, text: str, name: str = "<text>") -> list[dict]:
        """The rows of the conversations in JSON or JSONL text (a line of ``dask.bag.read_text``)."""
        convs = conversations_in(text, name)
        return [row for conv in convs for row in self.rows(conv)]


@dataclass(frozen=True)
class Stats(Task):
    """``stats``: a :class:`~rules_compact.rows.StatsRow` per conversation."""

    passes: tuple[RuleSource, ...]
    format: str | None = None

    @classmethod
    def of(cls, rules: Sequence[str] = ("default",), format: str | None = None) -> Stats:
        return cls(tuple(RuleSource.read(r) for r in rules or ("default",)), format)

    def compute(self, conversation: Conversation, fmt: str | None = None) -> StatsRow:
        return stats_row(conversation.name, conversation.messages, [p.load() for p in self.passes],
                         fmt or self.format or conversation.format)


@dataclass(frozen=True)
class Replayed:
    """One conversation replayed: a row per rule set, the replays themselves (their rounds, for
    ``--plot``), and whether the log has timestamps (without, the cache never expires)."""

    rows: tuple[ReplayRow, ...]
    replays: tuple[Replay, ...]
    timestamps: bool


@dataclass(frozen=True)
class Replays(Task):
    """``replay``: per conversation, a :class:`~rules_compact.rows.ReplayRow` per rule set,
    ``none`` (no compaction) first."""

    sets: tuple[tuple[str, tuple[RuleSource, ...] | None], ...]  # (label, passes); None: no compaction
    price: Price
    cache_expiry: bool = False
    format: str | None = None

    @classmethod
    def of(cls, rules: Sequence[str] = ("default",), compare: Sequence[str] = (), price: str | Price = "anthropic",
           cache_expiry: bool = False, format: str | None = None) -> Replays:
        profile = parse_price(price) if isinstance(price, str) else price
        if cache_expiry and profile.lifetime is None:
            raise InputError(f"--cache-expiry: the price {profile.name!r} has no cache lifetime; "
                             "give one as CACHED,UNCACHED,LIFETIME or use a profile")
        primary = tuple(rules or ("default",))  # as in apply: the bundled default unless -r says otherwise
        sets = [("none", None), (" + ".join(primary), tuple(RuleSource.read(r) for r in primary))]
        sets += [(name, (RuleSource.read(name),)) for name in compare]
        return cls(tuple(sets), profile, cache_expiry, format)

    def compute(self, conversation: Conversation, fmt: str | None = None) -> Replayed:
        fmt = fmt or self.format or conversation.format
        messages = conversation.messages
        cold = None
        if self.cache_expiry:
            cold = cold_rounds(conversation.timestamps, round_starts(messages, fmt), self.price.lifetime)
        sets = [(label, None if passes is None else [p.load() for p in passes]) for label, passes in self.sets]
        results = replays(messages, fmt, sets, self.price, cold)
        return Replayed(tuple(ReplayRow.of(conversation.name, r, cold) for r in results), tuple(results),
                        conversation.timestamps is not None)

    def records(self, result: Replayed) -> list[dict]:
        return [row.to_dict() for row in result.rows]


@dataclass(frozen=True)
class Diff(Task):
    """``diff``: a :class:`~rules_compact.rows.DiffRow` per conversation, ``old`` against ``new``."""

    old: RuleSource
    new: RuleSource
    price: Price
    format: str | None = None

    @classmethod
    def of(cls, old: str, new: str, price: str | Price = "anthropic", format: str | None = None) -> Diff:
        old_rules, new_rules = RuleSource.read(old), RuleSource.read(new)
        return cls(old_rules, new_rules, parse_price(price) if isinstance(price, str) else price, format)

    def compute(self, conversation: Conversation, fmt: str | None = None) -> DiffRow:
        return diff_row(conversation.name, conversation.messages, fmt or self.format or conversation.format,
                        self.old.load(), self.new.load(), self.price)


@dataclass(frozen=True)
class FileResult:
    """One file's results (one per conversation, ``Task.compute``'s), its warnings, and the error
    that stopped it (then no results)."""

    path: str
    results: tuple = ()
    warnings: tuple[str, ...] = ()
    error: RulesCompactError | None = None

    def rows(self, task: Task) -> list[dict]:
        return [row for result in self.results for row in task.records(result)]


def read_results(task: Task, path: str) -> FileResult:
    """Read one file and compute its results; a bad file's error is returned, not raised."""
    warnings: list[str] = []
    try:
        found = read_file(path, task.format, warnings.append)
        results = tuple(task.compute(conv, fmt) for conv, fmt in found)
    except RulesCompactError as exc:
        return FileResult(path, (), tuple(warnings), exc)
    return FileResult(path, results, tuple(warnings))


def default_jobs() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def run(task: Task, paths: Sequence[str], jobs: int | None = None, scheduler: str | None = None,
        refuse: Callable[[str], str | None] | None = None) -> Iterator[FileResult]:
    """Each file's :class:`FileResult`, in the order of ``paths`` (``-``: stdin, read here).

    Files are read by the worker that handles them, a few per worker in flight, so no process
    holds more than the files it works on.  ``jobs``: worker processes (default: the cores;
    1, or a single file, computes here); ``scheduler``: a Dask scheduler's address (the
    ``dask`` extra; its workers read the paths as given, so give paths they can see);
    ``refuse``: a reason not to read a path (a glob that matched nothing), then that path's
    InputError.  Closing the iterator (or an interrupt while it waits) stops the workers."""
    if scheduler is not None:
        return _on_dask(task, paths, scheduler, refuse)
    jobs = min(jobs or default_jobs(), len(paths))
    if jobs <= 1:
        return (_here(task, path, refuse).result() for path in paths)
    return _on_processes(task, paths, jobs, refuse)


def _here(task: Task, path: str, refuse) -> Future:
    """A path's result computed in this process (stdin, a refused path, or ``jobs`` 1)."""
    done: Future = Future()
    why = refuse(path) if refuse is not None else None
    done.set_result(FileResult(path, error=InputError(why)) if why else read_results(task, path))
    return done


def _submitter(task: Task, remote: Callable[[str], object], refuse) -> Callable[[str], object]:
    def submit(path: str):
        if path == "-" or (refuse is not None and refuse(path)):
            return _here(task, path, refuse)
        return remote(path)
    return submit


def _in_order(submit: Callable[[str], object], paths: Sequence[str], window: int) -> Iterator[FileResult]:
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


_TASK: Task | None = None  # a worker process's task, set once when it starts


def _start_worker(task: Task) -> None:
    global _TASK
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole process group: the parent stops us
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # not the CLI's handler inherited through fork
    gc.freeze()  # what the parent made stays shared: the collector need not touch (and copy) it
    _TASK = task


def _worker_results(path: str) -> FileResult:
    return read_results(_TASK, path)


def _on_processes(task: Task, paths: Sequence[str], jobs: int, refuse) -> Iterator[FileResult]:
    before = {child.pid for child in multiprocessing.active_children()}
    pool = ProcessPoolExecutor(jobs, initializer=_start_worker, initargs=(task,))
    try:
        yield from _in_order(_submitter(task, lambda p: pool.submit(_worker_results, p), refuse), paths, 2 * jobs)
    except BrokenProcessPool:
        _stop(pool, before)
        raise WorkerError("a worker process stopped without an answer (killed, or out of memory?)") from None
    except BaseException:  # an interrupt, or the caller closed the iterator: stop now, not after the work
        _stop(pool, before)
        raise
    pool.shutdown()


def _stop(pool: ProcessPoolExecutor, before: set) -> None:
    pool.shutdown(wait=False, cancel_futures=True)
    workers = [child for child in multiprocessing.active_children() if child.pid not in before]
    for child in workers:
        child.terminate()
    for child in workers:
        child.join(5)


def _on_dask(task: Task, paths: Sequence[str], address: str, refuse) -> Iterator[FileResult]:
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

        yield from _in_order(_submitter(task, remote, refuse), paths, window)
    finally:
        client.close()


def require_table(path: str) -> None:
    """Check before any work that ``path`` can be written as a table (Parquet needs pyarrow)."""
    if path.lower().endswith(".parquet"):
        _pyarrow()


def _pyarrow():
    try:
        import pyarrow
        import pyarrow.parquet
    except ImportError:
        raise InputError("a .parquet table needs pyarrow: pip install 'rules-compact[parquet]'") from None
    return pyarrow, pyarrow.parquet


def _arrow_table(pa, rows: list[dict]):
    """The rows as an Arrow table; a column of mappings (``saved_by_rule``) is a map column
    (string keys), so that rows with different keys, or none, share one type."""
    columns = {}
    for name in dict.fromkeys(key for row in rows for key in row):
        values = [row.get(name) for row in rows]
        if any(isinstance(v, dict) for v in values):
            items = [v for value in values if value for v in value.values()]
            kind = pa.map_(pa.string(), pa.array(items).type if items else pa.int64())
            values = pa.array([None if v is None else list(v.items()) for v in values], type=kind)
        columns[name] = values
    return pa.table(columns)


def write_table(rows: Iterable[dict], path: str) -> None:
    """Write rows atomically: Parquet when ``path`` ends with ``.parquet`` (pyarrow), else JSON Lines."""
    if path.lower().endswith(".parquet"):
        pa, pq = _pyarrow()
        out = pa.BufferOutputStream()
        try:
            pq.write_table(_arrow_table(pa, list(rows)), out)
        except (pa.ArrowException, UnicodeError) as exc:
            raise InputError(f"{path}: cannot write Parquet: {exc}") from None
        write_atomic(path, out.getvalue().to_pybytes())
        return
    write_atomic(path, "".join(dump_json_line(row) for row in rows))
