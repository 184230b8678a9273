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

from typing import Callable, Iterator, Sequence

from .cluster import on_dask
from .files import FileResult, here, read_file, read_results
from .local import WorkerError, Workers, default_jobs
from .tables import require_table, write_table
from .tasks import Diff, Replayed, Replays, RuleSource, Stats, Task

__all__ = ["RuleSource", "Task", "Stats", "Replays", "Replayed", "Diff", "FileResult", "read_file", "read_results", "run",
           "default_jobs", "write_table", "require_table", "WorkerError"]


def run(task: Task, paths: Sequence[str], jobs: int | None = None, scheduler: str | None = None,
        refuse: Callable[[str], str | None] | None = None) -> Iterator[FileResult]:
    """Each file's :class:`FileResult`, in the order of ``paths`` (``-``: stdin, read here).

    ``jobs``: worker processes (default: the cores; 1: this process computes, no worker).
    Each file is read by one of them (stdin by this process), a few per worker ahead, so no
    process holds more than the files it works on; a file of more than ``files.CHUNK_MESSAGES`` messages
    in several conversations is split into chunks of whole conversations, which all of them
    compute.  ``scheduler``: a Dask scheduler's address (the
    ``dask`` extra; there a file is the unit of work, read by the worker that computes it from
    the path as given, so give paths its workers can see); ``refuse``: a reason not to read a
    path (a glob that matched nothing), then that path's InputError.  Closing the iterator (or
    an interrupt while it waits) stops the workers."""
    if scheduler is not None:
        return on_dask(task, paths, scheduler, refuse)
    jobs = jobs or default_jobs()
    if jobs <= 1:
        return (here(task, path, refuse, read_results).result() for path in paths)
    return Workers(task, jobs, refuse).results(paths)
