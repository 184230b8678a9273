"""``extends``: start from a preset or another file, override keys and rules."""

from __future__ import annotations

import pytest

from rules_compact import ConfigError, compact, load_rules
from rules_compact.cli import main

BASE = """\
version: 1
name: base
defaults: {placeholder: "[base {tool_name}]", over_budget_tokens: 1000}
tools: {Read: {compact: true}}
rules:
  - {name: keep-errors, match: {is_error: true}, action: keep}
  - {name: keep-recent, match: {age: {unit: tool_results, lt: 1}}, action: keep}
  - {name: clear, match: {role: tool}, action: placeholder}
"""

MESSAGES = [
    {"role": "user", "content": "go"},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "a", "type": "function", "function": {"name": "Read", "arguments": "{}"}},
        {"id": "b", "type": "function", "function": {"name": "Bash", "arguments": "{}"}}]},
    {"role": "tool", "tool_call_id": "a", "content": "x" * 100},
    {"role": "tool", "tool_call_id": "b", "content": "y" * 100},
]


@pytest.fixture
def base(tmp_path):
    path = tmp_path / "base.yaml"
    path.write_text(BASE)
    return path


def write(tmp_path, text, name="child.yaml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_child_overrides_keys_and_inherits_rules(tmp_path, base):
    child = write(tmp_path, "version: 1\nname: child\nextends: base.yaml\ndefaults: {placeholder: '[child]'}\n")
    rules = load_rules(child)
    assert rules.name == "child"
    assert [r.name for r in rules.rules] == ["keep-errors", "keep-recent", "clear"]
    assert rules.over_budget_tokens == 1000  # defaults merge key by key
    assert rules.tools.compactable("Read")
    out = compact(MESSAGES, rules).messages
    assert out[2]["content"] == "[child]" and out[3]["content"] == "y" * 100


def test_rules_replace_insert_and_remove(tmp_path, base):
    child = write(tmp_path, """\
version: 1
name: child
extends: base.yaml
remove_rules: [keep-errors]
rules:
  - {name: keep-read, match: {tool: Read}, action: keep, before: clear}
  - {name: clear, match: {role: tool}, action: {placeholder: "[gone]"}}
  - {name: last, match: {}, action: keep}
""")
    rules = load_rules(child)
    assert [r.name for r in rules.rules] == ["keep-recent", "keep-read", "clear", "last"]
    assert [r.source for r in rules.rules] == [str(base), str(child), str(child), str(child)]


def test_after_moves_an_inherited_rule(tmp_path, base):
    child = write(tmp_path, "version: 1\nname: c\nextends: base.yaml\nrules:\n"
                            "  - {name: keep-errors, match: {is_error: true}, action: keep, after: clear}\n")
    assert [r.name for r in load_rules(child).rules] == ["keep-recent", "clear", "keep-errors"]


def test_extends_a_bundled_preset_and_explain_names_the_file(tmp_path, capsys):
    child = write(tmp_path, "version: 1\nname: mine\nextends: default\nrules:\n"
                            "  - {name: keep-bash, match: {tool: bash, age: {unit: tool_results, lt: 3}}, action: keep, before: keep-recent}\n")
    rules = load_rules(child)
    assert rules.rules[0].source.endswith("default.yaml")
    assert main(["explain", "examples/coding-session.json", "-r", str(child)]) == 0
    out = capsys.readouterr().out
    assert "cache-breakpoint-at-step (default)" in out
    assert "keep-bash " in out and "keep-bash (" not in out


@pytest.mark.parametrize("text,expected", [
    ("version: 1\nname: c\nextends: nope.yaml\n",
     "child.yaml:3:10: cannot extend 'nope.yaml': "),
    ("version: 1\nname: c\nextends: base.yaml\nremove_rules: [nope]\n",
     "child.yaml:4:16: no inherited rule named 'nope'; inherited: keep-errors, keep-recent, clear "
     "(at remove_rules[0])"),
    ("version: 1\nname: c\nextends: base.yaml\nrules:\n  - {name: n, match: {}, action: keep, before: zz}\n",
     "child.yaml:5:48: no inherited rule named 'zz'; inherited: keep-errors, keep-recent, clear "
     "(at rules[0].before)"),
    ("version: 1\nname: c\nextends: child.yaml\n",
     "child.yaml:3:10: extends 'child.yaml' makes a cycle (at extends)"),
    ("version: 1\nname: c\nextends: base.yaml\nrules:\n  - {name: n, match: {}, action: keep, before: a, after: b}\n",
     "child.yaml:5:5: give at most one of: before, after (at rules[0])"),
])
def test_extends_errors_are_located(tmp_path, base, text, expected):
    child = write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_rules(child)
    assert str(info.value).replace(str(tmp_path) + "/", "").startswith(expected)


def test_problems_in_the_parent_point_at_the_parent(tmp_path):
    write(tmp_path, "version: 1\nname: p\nrules:\n  - {name: a, match: {where: 'a b'}, action: keep}\n", "p.yaml")
    child = write(tmp_path, "version: 1\nname: c\nextends: p.yaml\n")
    with pytest.raises(ConfigError) as info:
        load_rules(child)
    assert [p.file for p in info.value.problems] == [str(tmp_path / "p.yaml")]


def test_a_chain_longer_than_the_recursion_limit_loads(tmp_path, base):
    """1,000 files, each extending the next: read in a loop (it raised RecursionError)."""
    parent = base.name
    for n in range(1000):
        write(tmp_path, f"version: 1\nname: c{n}\nextends: {parent}\n", f"c{n}.yaml")
        parent = f"c{n}.yaml"
    rules = load_rules(tmp_path / parent)
    assert [r.name for r in rules.rules] == ["keep-errors", "keep-recent", "clear"]
    assert compact(MESSAGES, rules).messages[2]["content"] == "[base Read]"
