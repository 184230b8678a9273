"""Files read into results: a file's conversations, checked in the format their rules see,
and, for a file of many conversations, its chunks (what several workers compute)."""

from __future__ import annotations

import os
import pickle
import shutil
import tempfile
from concurrent.futures import Future
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Sequence

from ..documents import read_conversations_from
from ..errors import InputError, RulesCompactError
from ..formats import FORMATS
from ..readers import Conversation

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no file locks, no sweep
    fcntl = None

if TYPE_CHECKING:
    from .tasks import Task

__all__ = ["read_file", "FileResult", "read_results", "CHUNK_MESSAGES", "here", "Split", "load_chunk", "Spill",
           "spill_folder", "spill_root", "remove_unowned", "SPILL_PREFIX"]

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
    return computed(task, path, found, tuple(warnings))


def computed(task: Task, path: str, found: Sequence[tuple[Conversation, str]], warnings: tuple[str, ...]) -> FileResult:
    try:
        return FileResult(path, tuple(task.compute(conv, fmt) for conv, fmt in found), warnings)
    except RulesCompactError as exc:
        return FileResult(path, (), warnings, exc)


#: A file of more messages than this, in more than one conversation, is computed in chunks of
#: about this many messages (whole conversations) on all the workers.
CHUNK_MESSAGES = 500


@dataclass(frozen=True)
class Split:
    """A file read and split: its warnings, the results of its first chunk when the reader
    computed it, and its other conversations in chunks, each pickled (a list of
    (Conversation, format)) into ``spill``, a file of the workers' spill folder, at
    ``(offset, size)``: a worker reads its chunk there, and the command's process never
    holds them."""

    path: str
    warnings: tuple[str, ...]
    first: FileResult | None
    chunks: tuple[tuple[int, int], ...]
    spill: str = ""

    def chunk(self, index: int) -> tuple[str, int, int]:
        """Where chunk ``index`` lies: (spill file, offset, size), what :func:`load_chunk` reads."""
        return (self.spill, *self.chunks[index])

    def joined(self, parts: Sequence[FileResult]) -> FileResult:
        """The file's result from its chunks' (in order): what :func:`read_results` gives."""
        parts = [self.first, *parts] if self.first is not None else parts
        error = next((part.error for part in parts if part.error is not None), None)
        if error is not None:
            return FileResult(self.path, (), self.warnings, error)
        return FileResult(self.path, tuple(r for part in parts for r in part.results), self.warnings)


def chunks_of(found: list[tuple[Conversation, str]]) -> list[list[tuple[Conversation, str]]]:
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


def read_or_split(task: Task, path: str, spill: str, compute_first: bool = True) -> FileResult | Split:
    """A file's result, or when it splits in chunks, its :class:`Split`, the chunks written to
    a file in the folder ``spill`` (with the first chunk computed: a worker that read a file
    has it at hand); a bad file's error returned."""
    warnings: list[str] = []
    try:
        found = read_file(path, task.format, warnings.append)
    except RulesCompactError as exc:
        return FileResult(path, (), tuple(warnings), exc)
    chunks = chunks_of(found)
    if len(chunks) == 1:
        return computed(task, path, found, tuple(warnings))
    first = computed(task, "", chunks.pop(0), ()) if compute_first else None
    handle, name = tempfile.mkstemp(suffix=".chunks", dir=spill)
    places, offset = [], 0
    with os.fdopen(handle, "wb") as out:
        for chunk in chunks:
            data = pickle.dumps(chunk, pickle.HIGHEST_PROTOCOL)
            out.write(data)
            places.append((offset, len(data)))
            offset += len(data)
    return Split(path, tuple(warnings), first, tuple(places), name)


def load_chunk(where: tuple[str, int, int]) -> list[tuple[Conversation, str]]:
    """The conversations of a chunk of a :class:`Split`, from its spill file."""
    name, offset, size = where
    with open(name, "rb") as spilled:
        spilled.seek(offset)
        return pickle.loads(spilled.read(size))


SPILL_PREFIX = "rules-compact-"  # a spill folder's name: this, the pid of the process that made it, a random part


@dataclass(frozen=True)
class Spill:
    """A spill folder and the lock that says it is in use: a file lock on the folder, held
    through ``lock`` by the process that made it and the workers it forks (they inherit it),
    so it is released when all of them are gone, however they end."""

    path: str
    lock: int | None = None  # None where there are no file locks

    def remove(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)
        if self.lock is not None:
            os.close(self.lock)


def spill_root() -> str:
    """Where spill folders go: in memory (/dev/shm) where there is one, else the temporary folder."""
    memory = "/dev/shm"
    return memory if os.access(memory, os.W_OK) else tempfile.gettempdir()


def spill_folder() -> Spill:
    """A new spill folder for split files' chunks, locked, after removing the spill folders no
    live process owns (a run that was killed could not remove its own)."""
    root = spill_root()
    remove_unowned(root)
    made = tempfile.mkdtemp(prefix=f".{SPILL_PREFIX}{os.getpid()}-", dir=root)  # a name no sweep takes
    try:
        lock = _locked(made) if fcntl is not None else None
    except OSError:  # a file system without locks on folders
        lock = None
    if lock is None:
        return Spill(made)  # only this run removes it
    path = os.path.join(root, os.path.basename(made)[1:])
    os.rename(made, path)  # locked before it is a name that sweeps look at
    return Spill(path, lock)


def remove_unowned(root: str) -> None:
    """Remove this user's spill folders in ``root`` whose lock no live process holds."""
    if fcntl is None:
        return
    try:
        entries = os.scandir(root)
    except OSError:  # not ours to list: nothing of ours to remove there
        return
    with entries:
        for entry in entries:
            try:
                if not entry.name.startswith(SPILL_PREFIX) or not entry.is_dir(follow_symlinks=False) or \
                        entry.stat(follow_symlinks=False).st_uid != os.getuid():
                    continue
                lock = _locked(entry.path)
            except OSError:  # in use (locked), gone meanwhile, or not ours to open
                continue
            try:
                shutil.rmtree(entry.path, ignore_errors=True)
            finally:
                os.close(lock)


def _locked(folder: str) -> int:
    """A descriptor of ``folder`` holding its exclusive lock; OSError when another process holds it."""
    handle = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BaseException:
        os.close(handle)
        raise
    return handle


def here(task: Task, path: str, refuse, read: Callable[[Task, str], object]) -> Future:
    """A path's result (``read``'s) computed in this process (stdin, a refused path, ``jobs`` 1)."""
    why = refuse(path) if refuse is not None else None
    return done(FileResult(path, error=InputError(why)) if why else read(task, path))


def done(result) -> Future:
    future: Future = Future()
    future.set_result(result)
    return future
