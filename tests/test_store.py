"""The store cleared results are saved to: stable ids, atomic writes, the cap and pruning."""

from __future__ import annotations

import errno
import json
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


# -- placeholder: {save: true} ----------------------------------------------------------------

from rules_compact import compact, load_rules  # noqa: E402
from rules_compact.cli import main  # noqa: E402
from rules_compact.errors import ConfigError  # noqa: E402

SAVING = """version: 1
name: saving
{store}rules:
  - name: keep-newest
    match: {{age: {{unit: tool_results, lt: 1}}}}
    action: keep
  - name: clear-old
    match: {{role: tool}}
    action: {{placeholder: {{save: true{text}}}}}
"""
ORIGINAL = "".join(f"src/module_{i}.py: def handler_{i}(request): ...\n" for i in range(40))


def _rules(store: str = "", text: str = "") -> str:
    return SAVING.format(store=store, text=text)


def _history(rounds: int = 3) -> list:
    messages = [{"role": "user", "content": "find the handlers"}]
    for i in range(rounds):
        messages += [{"role": "assistant", "content": None, "tool_calls": [
                         {"id": f"c{i}", "type": "function", "function": {"name": "grep", "arguments": "{}"}}]},
                     {"role": "tool", "tool_call_id": f"c{i}", "content": ORIGINAL if i == 0 else f"{i}\n" * 80}]
    return messages


def test_save_without_a_store_is_a_located_error_that_says_how_to_configure_one(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv(ENV_STORE, raising=False)
    with pytest.raises(ConfigError) as caught:
        load_rules(_rules())
    (problem,) = caught.value.problems
    assert (problem.line, problem.col, problem.path) == (9, 34, "rules[1].action.placeholder.save")
    assert "add `store: FOLDER` to this rule file, set RULES_COMPACT_STORE=FOLDER" in problem.message
    (tmp_path / "r.yaml").write_text(_rules())
    assert main(["validate", str(tmp_path / "r.yaml")]) == 1
    assert f"{tmp_path / 'r.yaml'}:9:34: save: true needs a store" in capsys.readouterr().out
    monkeypatch.setenv(ENV_STORE, str(tmp_path / "from-env"))
    assert load_rules(_rules()).store.path == tmp_path / "from-env"


def test_saved_variables_need_save_and_save_needs_saved_in_its_template(tmp_path):
    store = f"store: {tmp_path}\n"
    with pytest.raises(ConfigError, match=r"10:46: '\[gone\]': save: true saves what this action clears, but the "
                                          r"template does not say where: add \{saved\}"):
        load_rules(_rules(store, ", text: '[gone]'"))
    for action in ("{text: 'see {saved}'}", "'see {saved_lines}'", "{text: 'see {saved:>4}', save: false}"):
        with pytest.raises(ConfigError, match=r"\{saved\} and \{saved_lines\} need save: true on this action"):
            load_rules(_rules(store).replace("{save: true}", action))
    load_rules(_rules(store).replace("{save: true}", "'a literal {{saved}} is no field'"))
    with pytest.raises(ConfigError, match=r"'\[cut\]': save: true saves what this action clears"):
        load_rules(_rules(store).replace("placeholder: {save: true}", "truncate: {save: true, marker: '[cut]'}"))
    with pytest.raises(ConfigError, match=r"unknown template variable \{saved\}.*at defaults.placeholder"):
        load_rules(_rules(store).replace("rules:\n", "defaults: {placeholder: '{saved}'}\nrules:\n", 1))


def test_a_cleared_result_names_a_file_holding_exactly_the_original_the_same_every_round(tmp_path):
    ruleset = load_rules(_rules(f"store: {tmp_path / 'saved'}\n"))
    history = _history()
    before = json.dumps(history)
    first = compact(history[:5], ruleset).messages[2]["content"]
    saved = FolderStore(tmp_path / "saved").save(ORIGINAL)
    assert first == (f"[grep result cleared to save space (40 lines); the full result is saved in {saved.path}: "
                     "read that file to see it again]")
    assert Path(saved.path).read_text() == ORIGINAL
    later = compact(history, ruleset)
    assert later.messages[2]["content"] == first  # byte-stable: the prompt prefix stays cached
    assert compact(later.messages, ruleset).messages == later.messages  # idempotent on its own output
    assert json.dumps(history) == before  # the input is never modified


def test_a_placeholder_whose_copy_was_pruned_says_the_content_is_gone(tmp_path):
    ruleset = load_rules(_rules(f"store: {tmp_path}\n"))
    compacted = compact(_history(), ruleset).messages
    for saved in tmp_path.iterdir():
        saved.unlink()
    gone = compact(compacted, ruleset).messages
    assert gone[2]["content"] == ("[grep result cleared to save space; its saved copy has since been removed from "
                                  "the store: call grep again if you need it]")
    assert compact(gone, ruleset).messages == gone  # and it stays so
    assert "saved in" not in json.dumps(gone[:3]) and list(tmp_path.iterdir()) == []  # a small result: not saved


def test_a_store_without_files_names_the_id_and_the_recall_tool():
    store = MemoryStore()
    messages = compact(_history(), load_rules(_rules(), store=store)).messages
    id = content_id(ORIGINAL)
    assert messages[2]["content"] == ("[grep result cleared to save space (40 lines); the full result is saved: call "
                                      f"recall_result with id {id} to see it again]")
    assert store.load(id) == ORIGINAL


def test_a_result_that_cannot_be_saved_is_left_as_it_is_with_a_note(tmp_path, monkeypatch):
    ruleset = load_rules(_rules(f"store: {tmp_path}\n"))

    def full(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)
    result = compact(_history(), ruleset)
    assert result.messages[2]["content"] == ORIGINAL
    notes = [d.note for p in result.report.passes for d in p.decisions if d.note]
    assert f"left as it is: cannot save to store {tmp_path}: No space left on device" in notes


# -- a plugin's store (rules_compact_store) ---------------------------------------------------

import types  # noqa: E402

from rules_compact.errors import PluginError  # noqa: E402
from rules_compact.plugins import hookimpl, use_plugins  # noqa: E402


def _store_plugin(name: str, store) -> types.ModuleType:
    module = types.ModuleType(name)
    module.rules_compact_store = hookimpl(lambda: store)
    return module


def test_a_plugin_store_is_used_when_the_rule_file_and_the_environment_name_none(tmp_path, monkeypatch):
    monkeypatch.delenv(ENV_STORE, raising=False)
    held = MemoryStore()
    with use_plugins([_store_plugin("db", held)]) as reg:
        messages = compact(_history(), load_rules(_rules())).messages
        assert held.load(content_id(ORIGINAL)) == ORIGINAL
        assert f"call recall_result with id {content_id(ORIGINAL)}" in messages[2]["content"]
        assert isinstance(load_rules(_rules(f"store: {tmp_path}\n")).store, FolderStore)  # the file's key wins
        assert reg.owners[("store", "")] == "db"


def test_a_second_plugin_store_or_one_that_is_no_store_is_refused():
    with pytest.raises(PluginError, match="plugin second .*: a store is already supplied by plugin first"):
        with use_plugins([_store_plugin("first", MemoryStore()), _store_plugin("second", MemoryStore())]):
            pass
    with pytest.raises(PluginError, match=r"rules_compact_store\(\) must return a store with save"):
        with use_plugins([_store_plugin("bad", {"save": 1})]):
            pass


def test_a_plugin_store_that_fails_leaves_the_result_as_it_is_with_a_note_naming_the_plugin(monkeypatch):
    monkeypatch.delenv(ENV_STORE, raising=False)

    class Broken(MemoryStore):
        def save(self, content):
            raise RuntimeError("bucket unreachable")

    with use_plugins([_store_plugin("bucket", Broken())]):
        result = compact(_history(), load_rules(_rules()))
    assert result.messages[2]["content"] == ORIGINAL
    notes = [d.note for p in result.report.passes for d in p.decisions if d.note]
    assert "left as it is: plugin bucket: store.save raised RuntimeError: bucket unreachable" in notes


def test_the_saved_placeholders_say_the_result_was_cleared_to_save_space_and_how_to_get_it_back():
    """Never read as a tool failure (nanobot#4647): cleared to save space, and where it is."""
    from test_tracing import FAILURE_WORDS

    from rules_compact.kinds.actions.placeholder import GONE, SAVED_AS_ID, SAVED_TO_FILE

    for text, how in ((SAVED_TO_FILE, "read that file to see it again"),
                      (SAVED_AS_ID, "call recall_result with id {saved} to see it again"),
                      (GONE, "call {tool_name} again if you need it")):
        assert "cleared to save space" in text and how in text
        assert not FAILURE_WORDS.search(text), FAILURE_WORDS.search(text)


TRUNCATING = """version: 1
name: truncating
store: {folder}
rules:
  - name: keep-newest
    match: {{age: {{unit: tool_results, lt: 1}}}}
    action: keep
  - name: shorten-old
    match: {{role: tool}}
    action: {{truncate: {{head: 20, tail: 20, save: true}}}}
"""


def test_truncate_with_save_names_the_saved_whole_and_a_pruned_copy_says_it_is_gone(tmp_path, monkeypatch):
    ruleset = load_rules(TRUNCATING.format(folder=tmp_path))
    compacted = compact(_history(), ruleset).messages
    saved = FolderStore(tmp_path).saved(content_id(ORIGINAL))
    omitted = len(ORIGINAL) - 40
    assert compacted[2]["content"] == (
        ORIGINAL[:20] + f"\n[... {omitted} chars cleared to save space; the full result is saved in {saved.path}: "
        "read that file to see all of it ...]\n" + ORIGINAL[-20:])
    assert compact(compacted, ruleset).messages == compacted
    Path(saved.path).unlink()
    gone = compact(compacted, ruleset).messages
    assert gone[2]["content"] == (ORIGINAL[:20] + "\n[... part cleared to save space; its saved copy has since been "
                                  "removed from the store ...]\n" + ORIGINAL[-20:])
    assert compact(gone, ruleset).messages == gone
    monkeypatch.delenv(ENV_STORE, raising=False)
    with pytest.raises(ConfigError, match=r"save: true needs a store .* \(at rules\[1\]\.action\.truncate\.save\)"):
        load_rules(TRUNCATING.format(folder=tmp_path).replace(f"store: {tmp_path}\n", ""))
