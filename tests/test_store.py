"""The store cleared results are saved to: stable ids, atomic writes, the cap and pruning."""

from __future__ import annotations

import errno
import hashlib
import multiprocessing
import os
import threading
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from rules_compact.store import (ENV_STORE, FolderStore, MemoryStore, Saved, Store, StoreError, content_id,
                                 open_store)

texts = st.text(st.characters(codec="utf-8", exclude_categories=()), max_size=200) | st.text(max_size=50)


def test_content_id_is_the_sha256_of_the_exact_text():
    assert content_id("ok\n") == hashlib.sha256(b"ok\n").hexdigest()
    assert content_id("ok\n") != content_id("ok")


@settings(max_examples=60, deadline=None)
@given(text=texts)
def test_a_saved_result_reads_back_exactly_under_the_same_id_every_time(tmp_path_factory, text):
    folder = tmp_path_factory.mktemp("store")
    for store in (FolderStore(folder), MemoryStore()):
        first, again = store.save(text), store.save(text)
        assert first == again and first.id == content_id(text)
        assert store.load(first.id) == text
        assert store.saved(first.id) == first
        assert first.lines == len(text.splitlines())
    assert Path(FolderStore(folder).save(text).path).read_bytes() == text.encode("utf-8", "surrogatepass")


def test_a_folder_store_names_a_file_holding_exactly_the_original(tmp_path):
    saved = FolderStore(tmp_path / "s").save("line 1\nline 2\n")
    assert saved.path == str(tmp_path / "s" / f"{saved.id}.txt")
    assert Path(saved.path).read_text() == "line 1\nline 2\n"
    assert saved.where == saved.path and saved.lines == 2
    assert MemoryStore().save("x").where == content_id("x")


def test_unknown_and_malformed_ids_load_nothing(tmp_path):
    store = FolderStore(tmp_path)
    for id in ("0" * 64, "../etc/passwd", "", "A" * 64):
        assert store.load(id) is None and store.saved(id) is None
    assert MemoryStore().load("0" * 64) is None


def test_the_cap_prunes_the_oldest_first_and_a_resave_makes_a_result_new(tmp_path):
    store = FolderStore(tmp_path, cap_bytes=30)
    a, b = store.save("a" * 10), store.save("b" * 10)
    os.utime(a.path, ns=(1, 1))
    os.utime(b.path, ns=(2, 2))
    store.save("a" * 10)  # used again: now the newest
    c = store.save("c" * 10)
    assert {store.load(x.id) for x in (a, b, c)} == {"a" * 10, "b" * 10, "c" * 10}
    d = store.save("d" * 10)  # over 30 bytes: the oldest (b) goes
    assert store.load(b.id) is None and store.saved(b.id) is None
    assert store.load(a.id) and store.load(c.id) and store.load(d.id)
    assert sum(p.stat().st_size for p in tmp_path.iterdir()) <= 30


def test_a_result_over_the_cap_is_refused_and_nothing_is_pruned_for_it(tmp_path):
    store = FolderStore(tmp_path, cap_bytes=10)
    kept = store.save("12345")
    with pytest.raises(StoreError, match="over the store's cap of 10 bytes"):
        store.save("x" * 11)
    assert store.load(kept.id) == "12345"
    memory = MemoryStore(cap_bytes=10)
    first = memory.save("12345")
    memory.save("abcde")
    memory.save("vwxyz")
    assert memory.load(first.id) is None and memory.load(content_id("vwxyz")) == "vwxyz"
    with pytest.raises(StoreError):
        memory.save("x" * 11)


def test_a_full_disk_is_one_clean_error_and_leaves_no_file(tmp_path, monkeypatch):
    store = FolderStore(tmp_path)

    def full(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(StoreError, match=f"cannot save to store {tmp_path}: No space left on device"):
        store.save("content")
    assert list(tmp_path.iterdir()) == []
    assert store.load(content_id("content")) is None
    monkeypatch.undo()
    assert store.load(store.save("content").id) == "content"


def _content(i: int) -> str:
    return f"{i % 7}\n" * 20000


def _hammer(folder: str, count: int) -> None:
    store = FolderStore(folder)
    for i in range(count):
        saved = store.save(_content(i))
        assert Path(saved.path).read_text() == _content(i), "a reader saw a partial file"


def test_concurrent_writers_in_threads_and_processes_leave_whole_files(tmp_path):
    failed = []

    def in_thread():
        try:
            _hammer(str(tmp_path), 30)
        except BaseException as exc:
            failed.append(exc)

    threads = [threading.Thread(target=in_thread) for _ in range(4)]
    ctx = multiprocessing.get_context("fork" if hasattr(os, "fork") else "spawn")
    procs = [ctx.Process(target=_hammer, args=(str(tmp_path), 30)) for _ in range(3)]
    for worker in threads + procs:
        worker.start()
    for worker in threads + procs:
        worker.join()
    assert not failed and all(p.exitcode == 0 for p in procs)
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == sorted(f"{content_id(_content(i))}.txt" for i in range(7))


def test_open_store_takes_the_rule_file_key_then_the_environment_then_a_plugin(tmp_path):
    plugin = MemoryStore()
    assert open_store(None, environ={}) is None
    assert open_store(None, environ={}, plugin=plugin) is plugin
    from_env = open_store(None, environ={ENV_STORE: str(tmp_path / "env")}, plugin=plugin)
    assert isinstance(from_env, FolderStore) and from_env.path == tmp_path / "env"
    from_key = open_store({"folder": "saved", "cap_bytes": 99}, tmp_path, environ={ENV_STORE: "x"})
    assert from_key.path == tmp_path / "saved" and from_key.cap_bytes == 99
    assert open_store("saved", tmp_path, environ={}).path == tmp_path / "saved"
    assert isinstance(plugin, Store) and isinstance(from_key, Store)


def test_a_store_protocol_needs_the_three_methods():
    class Partial:
        def save(self, content): return Saved("x", None, 0)

    assert not isinstance(Partial(), Store)
