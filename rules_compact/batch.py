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

:func:`run` maps files on ``jobs`` processes (this one and workers; a file of many conversations
in chunks, spread over all of them) or on a Dask cluster (``scheduler``, a file per task), in
input order; :func:`write_table` writes rows as JSONL or Parquet.  Rows are the ``--json`` objects (docs/json.md), one shape per task; docs/batch.md has more.  With
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
import pickle
import signal
import sys
from abc import ABC, abstractmethod
from collections import deque
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from functools import partial
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
                raise InputError(f"{conv.name}: {error}; the content looks like {conv.format} "
                                 f"(--format {conv.format})") from None
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
    except RulesCompactError as exc:
        return FileResult(path, (), tuple(warnings), exc)
    return _computed(task, path, found, tuple(warnings))


def _computed(task: Task, path: str, found: Sequence[tuple[Conversation, str]], warnings: tuple[str, ...]) -> FileResult:
    try:
        return FileResult(path, tuple(task.compute(conv, fmt) for conv, fmt in found), warnings)
    except RulesCompactError as exc:
        return FileResult(path, (), warnings, exc)


#: A file of more messages than this, in more than one conversation, is computed in chunks of
#: about this many messages (whole conversations) on all the workers.
CHUNK_MESSAGES = 500


@dataclass(frozen=True)
class _Split:
    """A file read and split: its warnings, the results of its first chunk when the reader
    computed it, and its other conversations in chunks, each pickled (a list of
    (Conversation, format)) to travel to a worker as bytes."""

    path: str
    warnings: tuple[str, ...]
    first: FileResult | None
    chunks: tuple[bytes, ...]

    def joined(self, parts: Sequence[FileResult]) -> FileResult:
        """The file's result from its chunks' (in order): what :func:`read_results` gives."""
        parts = [self.first, *parts] if self.first is not None else parts
        error = next((part.error for part in parts if part.error is not None), None)
        if error is not None:
            return FileResult(self.path, (), self.warnings, error)
        return FileResult(self.path, tuple(r for part in parts for r in part.results), self.warnings)


def _chunks(found: list[tuple[Conversation, str]]) -> list[list[tuple[Conversation, str]]]:
    """Consecutive conversations in chunks of at least CHUNK_MESSAGES messages (the last may have fewer)."""
    chunks: list[list[tuple[Conversation, str]]] = [[]]
    size = 0
    for conv, fmt in found:
        if size >= CHUNK_MESSAGES:
            chunks.append([])
            size = 0
        chunks[-1].append((conv, fmt))
        size += len(conv.messages)
    return chunks


def _read_or_split(task: Task, path: str, compute_first: bool = True) -> FileResult | _Split:
    """A file's result, or when it splits in chunks, its :class:`_Split` (with the first chunk
    computed: a worker that read a file has it at hand); a bad file's error returned."""
    warnings: list[str] = []
    try:
        found = read_file(path, task.format, warnings.append)
    except RulesCompactError as exc:
        return FileResult(path, (), tuple(warnings), exc)
    chunks = _chunks(found)
    if len(chunks) == 1:
        return _computed(task, path, found, tuple(warnings))
    first = _computed(task, "", chunks.pop(0), ()) if compute_first else None
    return _Split(path, tuple(warnings), first, tuple(pickle.dumps(chunk, pickle.HIGHEST_PROTOCOL) for chunk in chunks))


def default_jobs() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def run(task: Task, paths: Sequence[str], jobs: int | None = None, scheduler: str | None = None,
        refuse: Callable[[str], str | None] | None = None) -> Iterator[FileResult]:
    """Each file's :class:`FileResult`, in the order of ``paths`` (``-``: stdin, read here).

    ``jobs``: worker processes (default: the cores; 1: this process computes, no worker).
    Each file is read by one of them (stdin by this process), a few per worker ahead, so no
    process holds more than the files it works on; a file of more than CHUNK_MESSAGES messages
    in several conversations is split into chunks of whole conversations, which all of them
    compute.  ``scheduler``: a Dask scheduler's address (the
    ``dask`` extra; there a file is the unit of work, read by the worker that computes it from
    the path as given, so give paths its workers can see); ``refuse``: a reason not to read a
    path (a glob that matched nothing), then that path's InputError.  Closing the iterator (or
    an interrupt while it waits) stops the workers."""
    if scheduler is not None:
        return _on_dask(task, paths, scheduler, refuse)
    jobs = jobs or default_jobs()
    if jobs <= 1:
        return (_here(task, path, refuse, read_results).result() for path in paths)
    return _Workers(task, jobs, refuse).results(paths)


def _here(task: Task, path: str, refuse, read: Callable[[Task, str], object]) -> Future:
    """A path's result (``read``'s) computed in this process (stdin, a refused path, ``jobs`` 1)."""
    why = refuse(path) if refuse is not None else None
    return _done(FileResult(path, error=InputError(why)) if why else read(task, path))


def _submitter(task: Task, remote: Callable[[str], object], refuse) -> Callable[[str], object]:
    def submit(path: str):
        if path == "-" or (refuse is not None and refuse(path)):
            return _here(task, path, refuse, read_results)
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


def _worker_read(path: str) -> FileResult | _Split:
    return _read_or_split(_TASK, path)


def _worker_chunk(chunk: bytes) -> FileResult:
    """A chunk's results (as a FileResult without path or warnings: the file's are in its _Split)."""
    return _computed(_TASK, "", pickle.loads(chunk), ())


def _done(result) -> Future:
    future: Future = Future()
    future.set_result(result)
    return future


def _start_method():
    """Fork where it is safe (Linux): a worker starts with the package imported and the rules
    compiled (the task's RuleSources are in the inherited cache); elsewhere the platform's default."""
    return multiprocessing.get_context("fork") if sys.platform.startswith("linux") else None


@dataclass
class _File:
    """A file of :class:`_Workers`: the future that reads it, and once it splits, its chunks' futures."""

    path: str
    read: Future
    split: _Split | None = None
    parts: list[Future] = field(default_factory=list)
    opened: bool = False  # read, and its chunks (if any) queued

    def finished(self) -> bool:
        if not self.opened:
            return False
        return self.split is None or (len(self.parts) == len(self.split.chunks) and all(p.done() for p in self.parts))

    def result(self) -> FileResult:
        if self.split is None:
            return self.read.result()
        return self.split.joined([part.result() for part in self.parts])


class _Workers:
    """:func:`run` on ``jobs`` worker processes: each file read by one of them, the chunks of a
    file that splits computed by all (before any further file), the results in input order.

    This process computes nothing: it reads only what a worker cannot (stdin) and hands out the
    pieces of work, one running and one waiting per worker so that none idles (a thread of
    this process computing beside them cost a fifth more CPU: the two threads share one
    interpreter lock).  The workers are forked at the first piece, with the rules compiled.
    At most ``2 * jobs`` files are in flight; this process holds the pickled chunks of the
    split ones among them and the file it reads itself."""

    def __init__(self, task: Task, jobs: int, refuse):
        self.task, self.refuse = task, refuse
        self.jobs, self.window = jobs, 2 * jobs
        self.pool: ProcessPoolExecutor | None = None
        self.files: deque[_File] = deque()  # in input order, until yielded
        self.chunks: deque[tuple[_File, bytes]] = deque()  # to compute, in order, before the next file
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
        if self.pool is not None:
            self.pool.shutdown()

    def _take(self, ahead: Iterator[str]) -> bool:
        """Start the next piece of work, a queued chunk or else the next file (within the
        window); False when there is none."""
        if self.chunks:
            file, chunk = self.chunks.popleft()
            file.parts.append(self._submit(_worker_chunk, chunk))
            return True
        path = next(ahead, None) if len(self.files) < self.window else None
        if path is None:
            return False
        if path == "-" or (self.refuse is not None and self.refuse(path)):  # read here, computed by the workers
            file = _File(path, _here(self.task, path, self.refuse, partial(_read_or_split, compute_first=False)))
            self._open(file)
        else:
            file = _File(path, self._submit(_worker_read, path))
            self.running[file.read] = file
        self.files.append(file)
        return True

    def _submit(self, work: Callable, argument) -> Future:
        if self.pool is None:
            self.pool = ProcessPoolExecutor(self.jobs, mp_context=_start_method(), initializer=_start_worker,
                                            initargs=(self.task,))
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
        if isinstance(read, _Split):
            file.split = read
            self.chunks.extend((file, chunk) for chunk in read.chunks)
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
