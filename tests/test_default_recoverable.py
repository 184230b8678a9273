"""default-recoverable: addressed as ``default`` is, it saves every cleared result to a store
that is never the working folder, and its placeholders say where to read the result back."""

from __future__ import annotations

import json
import os
from pathlib import Path

from rules_compact import compact, load_rules
from rules_compact.cli import main
from rules_compact.resources import bundled_rules, shown_source
from rules_compact.store import ENV_STORE, USER_CACHE, FolderStore, MemoryStore, content_id, open_store, \
    user_cache_folder

BIG = "line of the file src/pkg/module.py: def handler(request): return process(request)\n" * 4


def _history(n: int = 3) -> list:
    msgs = [{"role": "user", "content": "fix the handler"}]
    for i in range(n):
        call = {"name": "grep", "arguments": json.dumps({"q": f"a{i}"})}
        msgs.append({"role": "assistant", "content": None,
                     "tool_calls": [{"id": f"c{i}", "type": "function", "function": call}]})
        msgs.append({"role": "tool", "tool_call_id": f"c{i}", "content": f"{i} {BIG}"})
    return msgs


def _deciding(store=None):
    """The preset with a step that decides the whole history (a short one is otherwise left alone)."""
    return load_rules("version: 1\nname: t\nextends: default-recoverable\nstep: {unit: messages, every: 1}\n",
                      store=store)


def test_it_is_addressed_as_default_is_and_as_a_preset():
    assert bundled_rules("default-recoverable") == bundled_rules("preset:default-recoverable")
    assert bundled_rules("default-recoverable").is_file()
    assert load_rules("default-recoverable").name == "default-recoverable"
    assert shown_source(str(bundled_rules("default-recoverable"))) == "preset:default-recoverable"


def test_without_a_store_configured_it_saves_in_the_user_cache_folder(tmp_path, monkeypatch):
    monkeypatch.delenv(ENV_STORE, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    result = compact(_history(), _deciding())
    folder = tmp_path / "cache" / "rules-compact" / "store"
    saved = sorted(folder.iterdir())
    assert [p.name for p in saved] == sorted(f"{content_id(f'{i} {BIG}')}.txt" for i in range(2))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cache"]  # nothing in the working folder
    text = result.messages[2]["content"]
    assert text == (f"[grep result cleared to save space (4 lines); the full result is saved in "
                    f"{folder / (content_id('0 ' + BIG) + '.txt')}: read that file to see it again]")
    assert Path(text.split(" saved in ")[1].split(": read")[0]).read_text() == f"0 {BIG}"


def test_the_environment_and_a_plugin_store_win_over_the_user_cache(tmp_path):
    plugin = MemoryStore()
    assert open_store(USER_CACHE, tmp_path, environ={ENV_STORE: str(tmp_path / "env")}, plugin=plugin).path == \
        tmp_path / "env"
    assert open_store(USER_CACHE, tmp_path, environ={}, plugin=plugin) is plugin
    fallback = open_store(USER_CACHE, tmp_path, environ={"XDG_CACHE_HOME": str(tmp_path / "c")})
    assert isinstance(fallback, FolderStore) and fallback.path == tmp_path / "c" / "rules-compact" / "store"


def test_the_user_cache_folder_follows_xdg_and_ignores_a_relative_one(tmp_path):
    assert user_cache_folder({"XDG_CACHE_HOME": str(tmp_path)}) == tmp_path / "rules-compact" / "store"
    home = Path(os.path.expanduser("~"))
    if os.name != "nt":
        assert user_cache_folder({"XDG_CACHE_HOME": "relative"}) == home / ".cache" / "rules-compact" / "store"
        assert user_cache_folder({}) == home / ".cache" / "rules-compact" / "store"


def test_it_clears_more_than_the_default_and_every_cleared_result_is_saved():
    store = MemoryStore()
    msgs = _history(6)
    mine = compact(msgs, _deciding(store)).messages
    default = compact(msgs, load_rules("version: 1\nname: d\nextends: default\nstep: {unit: messages, every: 1}\n"))
    assert default.messages == msgs  # the default keeps its 8 newest
    cleared = [m for m, o in zip(mine, msgs) if m != o]
    assert len(cleared) == 5 and mine[-1] == msgs[-1]  # all but the newest result
    for i, m in enumerate(cleared):
        assert m["content"].startswith("[grep result cleared to save space")
        assert store.load(content_id(f"{i} {BIG}")) == f"{i} {BIG}"
        assert f"call recall_result with id {content_id(f'{i} {BIG}')}" in m["content"]


def test_its_placeholders_do_not_read_as_a_failure():
    from test_tracing import FAILURE_WORDS

    for store in (MemoryStore(), None):
        texts = [m["content"] for m in compact(_history(), _deciding(store)).messages[2:-1:2]]
        assert texts and all("cleared to save space" in t and "to see it again" in t for t in texts)
        assert not any(FAILURE_WORDS.search(t) for t in texts)


def test_apply_with_r_default_recoverable(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(ENV_STORE, str(tmp_path / "store"))
    src = tmp_path / "in.json"
    src.write_text(json.dumps(_history(12)))
    assert main(["apply", str(src), "-r", "default-recoverable", "-o", str(tmp_path / "out.json")]) == 0
    assert json.loads(src.read_text()) == _history(12)  # the input is never modified


LONG_SESSIONS = sorted(p for p in (Path(__file__).parent / "data" / "traces" / "claude-code").glob("*.jsonl")
                       if not p.name.startswith("agent-"))


def test_issue_32_targets_on_the_long_claude_code_sessions(tmp_path):
    """Cost <= 0.70 of no compaction, recoverable recall >= observation masking's recall - 0.005
    (bench/replay_table.py measures the same on every file)."""
    from rules_compact.documents import read_conversations_from
    from rules_compact.replay import PRICES, replay

    assert len(LONG_SESSIONS) == 3
    rules, masking = load_rules("default-recoverable", store=FolderStore(tmp_path)), \
        load_rules("preset:observation-masking")
    for path in LONG_SESSIONS:
        (conv,) = read_conversations_from(str(path))
        base = replay(conv.messages, None, conv.format, PRICES["anthropic"])
        mine = replay(conv.messages, [rules], conv.format, PRICES["anthropic"])
        theirs = replay(conv.messages, [masking], conv.format, PRICES["anthropic"])
        assert mine.cost / base.cost <= 0.70, path.name
        assert mine.recoverable_recall >= theirs.recall - 0.005, path.name
        assert mine.recall < mine.recoverable_recall  # what is cleared is saved, and named
