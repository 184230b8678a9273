"""Where cleared results are saved so that the agent can read them back.

A store is content-addressed: a result is saved under :func:`content_id`, the sha256 of its
exact text, so saving the same content again gives the same id and path on every round and
every replica (the placeholder naming it stays byte-stable).  :class:`FolderStore` (the
default: the rule file's ``store:`` key or ``RULES_COMPACT_STORE``) keeps one file per result
and prunes the oldest over its size cap; :class:`MemoryStore` keeps them in the process; a
plugin can supply any other through the ``rules_compact_store`` hook.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Protocol, runtime_checkable

from .errors import RulesCompactError

__all__ = ["content_id", "Saved", "Store", "StoreError", "FolderStore", "MemoryStore", "open_store",
           "ENV_STORE", "USER_CACHE", "user_cache_folder", "DEFAULT_CAP_BYTES", "ID_PATTERN", "is_content_id",
           "names_missing", "NO_STORE"]

ENV_STORE = "RULES_COMPACT_STORE"
USER_CACHE = "user-cache"  # a store: value: RULES_COMPACT_STORE, else a plugin's, else user_cache_folder()
DEFAULT_CAP_BYTES = 512 * 1024 * 1024
SUFFIX = ".txt"
ID_PATTERN = _ID = re.compile(r"[0-9a-f]{64}")  # a content id, wherever it is named


def _bytes(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")  # a lone surrogate from JSON is content too


def content_id(text: str) -> str:
    """The id of a result: the hex sha256 of its exact text (UTF-8)."""
    return hashlib.sha256(_bytes(text)).hexdigest()


def is_content_id(value: Any) -> bool:
    return isinstance(value, str) and _ID.fullmatch(value) is not None


NO_STORE = ("save: true needs a store to save to: add `store: FOLDER` to this rule file, set "
            "RULES_COMPACT_STORE=FOLDER in the environment, or install a plugin that supplies one "
            "(rules_compact_store)")


def names_missing(store: "Store", text: str) -> bool:
    """Whether ``text`` (a placeholder) names a saved result the store no longer holds (a
    store that cannot tell: no)."""
    try:
        return any(store.saved(found) is None for found in _ID.findall(text))
    except StoreError:
        return False


@dataclass(frozen=True)
class Saved:
    """A saved result: its id, the file that holds it (None: a store without files), its lines."""

    id: str
    path: str | None
    lines: int

    @property
    def where(self) -> str:
        """What a placeholder names: the path when there is one, else the id."""
        return self.path if self.path is not None else self.id


class StoreError(RulesCompactError):
    """A result could not be saved (a full disk, a folder that cannot be written)."""


@runtime_checkable
class Store(Protocol):
    """What compaction saves cleared results to, and what reads them back."""

    def save(self, content: str) -> Saved:
        """Save ``content`` (idempotent: the same content, the same Saved); raises StoreError."""

    def load(self, id: str) -> str | None:
        """The content saved under ``id``; None when it is unknown or was pruned."""

    def saved(self, id: str) -> Saved | None:
        """What :meth:`save` gave for ``id``, if the store still holds it."""


def _lines(text: str) -> int:
    return len(text.splitlines())


class FolderStore:
    """One file per result, ``FOLDER/<id>.txt``, holding exactly its text.

    Each file is written to a temporary file in the folder and renamed into place, so a reader
    (another thread, process, or the agent) sees the whole file or none, and concurrent writers
    of one content leave one file.  Saving content already there only marks it used (its
    modification time), so the cap prunes what has gone unsaved longest: over ``cap_bytes``,
    the oldest files go first."""

    def __init__(self, path: str | os.PathLike, cap_bytes: int = DEFAULT_CAP_BYTES):
        if isinstance(cap_bytes, bool) or not isinstance(cap_bytes, int) or cap_bytes < 1:
            raise ValueError(f"cap_bytes must be a positive whole number, got {cap_bytes!r}")
        self.path = Path(os.path.abspath(os.fspath(path)))
        self.cap_bytes = cap_bytes
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"FolderStore({str(self.path)!r}, cap_bytes={self.cap_bytes})"

    def _file(self, id: str) -> Path:
        return self.path / f"{id}{SUFFIX}"

    def save(self, content: str) -> Saved:
        data = _bytes(content)
        id = content_id(content)
        if len(data) > self.cap_bytes:
            raise StoreError(f"cannot save to store {self.path}: the result ({len(data):,} bytes) is over the "
                             f"store's cap of {self.cap_bytes:,} bytes")
        target = self._file(id)
        try:
            os.utime(target)  # already saved: now the newest
            return Saved(id, str(target), _lines(content))
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise self._error(exc) from None
        self._write(target, data)
        self._prune(keep=target.name)
        return Saved(id, str(target), _lines(content))

    def _write(self, target: Path, data: bytes) -> None:
        tmp = None
        try:
            self.path.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.path, prefix=f".{target.stem[:16]}.", suffix=".tmp")
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, target)
            tmp = None
        except OSError as exc:
            raise self._error(exc) from None
        finally:
            if tmp is not None:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass

    def _error(self, exc: OSError) -> StoreError:
        return StoreError(f"cannot save to store {self.path}: {exc.strerror or exc}")

    def _prune(self, keep: str) -> None:
        """Remove the oldest files until the rest fit the cap (never ``keep``, just saved)."""
        with self._lock:
            files = []
            try:
                with os.scandir(self.path) as found:
                    for entry in found:
                        if entry.name.endswith(SUFFIX) and _ID.fullmatch(entry.name[:-len(SUFFIX)]):
                            try:
                                stat = entry.stat()
                            except FileNotFoundError:  # pruned by another writer meanwhile
                                continue
                            files.append((stat.st_mtime_ns, entry.name, stat.st_size))
            except OSError:
                return
            total = sum(size for _, _, size in files)
            for _, name, size in sorted(files):
                if total <= self.cap_bytes:
                    break
                if name == keep:
                    continue
                try:
                    os.unlink(self.path / name)
                except FileNotFoundError:
                    pass
                except OSError:
                    continue
                total -= size

    def load(self, id: str) -> str | None:
        if not is_content_id(id):
            return None
        try:
            return self._file(id).read_bytes().decode("utf-8", "surrogatepass")
        except (OSError, UnicodeDecodeError):
            return None

    def saved(self, id: str) -> Saved | None:
        content = self.load(id)
        return None if content is None else Saved(id, str(self._file(id)), _lines(content))


class MemoryStore:
    """Results held in the process (tests, or an agent whose tool reads them back); with
    ``cap_bytes``, the least recently saved go first."""

    def __init__(self, cap_bytes: int | None = None):
        self.cap_bytes = cap_bytes
        self._held: OrderedDict[str, str] = OrderedDict()
        self._size = 0
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"MemoryStore(cap_bytes={self.cap_bytes}, held={len(self._held)})"

    def save(self, content: str) -> Saved:
        id = content_id(content)
        size = len(_bytes(content))
        with self._lock:
            if id in self._held:
                self._held.move_to_end(id)
            else:
                if self.cap_bytes is not None and size > self.cap_bytes:
                    raise StoreError(f"cannot save to the memory store: the result ({size:,} bytes) is over its "
                                     f"cap of {self.cap_bytes:,} bytes")
                self._held[id] = content
                self._size += size
                while self.cap_bytes is not None and self._size > self.cap_bytes:
                    _, dropped = self._held.popitem(last=False)
                    self._size -= len(_bytes(dropped))
        return Saved(id, None, _lines(content))

    def load(self, id: str) -> str | None:
        with self._lock:
            return self._held.get(id) if isinstance(id, str) else None

    def saved(self, id: str) -> Saved | None:
        content = self.load(id)
        return None if content is None else Saved(id, None, _lines(content))


def user_cache_folder(environ: Mapping[str, str] | None = None) -> Path:
    """The per-user store folder: ``rules-compact/store`` in ``$XDG_CACHE_HOME`` (when absolute),
    else in ``%LOCALAPPDATA%`` on Windows, else in ``~/.cache``."""
    environ = os.environ if environ is None else environ
    xdg = environ.get("XDG_CACHE_HOME", "")
    if os.path.isabs(xdg):
        root = Path(xdg)
    elif os.name == "nt" and environ.get("LOCALAPPDATA"):
        root = Path(environ["LOCALAPPDATA"])
    else:
        root = Path(os.path.expanduser("~")) / ".cache"
    return root / "rules-compact" / "store"


def open_store(spec: Any = None, base: str | os.PathLike | None = None, *,
               environ: Mapping[str, str] | None = None, plugin: Store | None = None) -> Store | None:
    """The store a rule file saves to: its ``store:`` key (``spec``: a folder, or ``{folder,
    cap_bytes}``; a relative folder is taken from ``base``, the rule file's folder), else the
    folder ``RULES_COMPACT_STORE`` names, else the store a plugin supplies, else None.  A
    ``spec`` of ``user-cache`` (:data:`USER_CACHE`) falls back further, to
    :func:`user_cache_folder`, instead of None: a bundled file that saves never writes into the
    working folder, and a deployment's environment or plugin still wins."""
    environ = os.environ if environ is None else environ
    if isinstance(spec, Store):
        return spec
    fallback = spec == USER_CACHE
    if (spec is None or fallback) and environ.get(ENV_STORE, "").strip():
        spec = environ[ENV_STORE].strip()
        base = None
    elif fallback:
        if plugin is not None:
            return plugin
        spec, base = user_cache_folder(environ), None
    if spec is None:
        return plugin
    folder, cap = (spec, DEFAULT_CAP_BYTES) if isinstance(spec, (str, os.PathLike)) else \
        (spec["folder"], spec.get("cap_bytes", DEFAULT_CAP_BYTES))
    folder = Path(os.path.expanduser(os.fspath(folder)))
    if base is not None and not folder.is_absolute():
        folder = Path(base) / folder
    return FolderStore(folder, cap)
