"""``validate`` lints: rules that are valid but cannot work as written, as located warnings in
yamllint's form; ``--fail-on-warning``; unknown tools with ``--strict`` or ``--known-tools``;
mis-indented rules named with their fix; global options after the subcommand."""

from __future__ import annotations

import re

import pytest

from conftest import ROOT
from rules_compact.cli import main
from rules_compact.language.lints import LINTS, lint_rules
from rules_compact.resources import preset_names

LINT_LINE = re.compile(r"^(?P<file>[^:]+):(?P<line>\d+):(?P<col>\d+): \[warning\] (?P<message>.+) \((?P<name>[a-z-]+)\)$")

HEAD = "version: 1\nname: t\nrules:\n"


def run(capsys, *argv) -> tuple[int, str, str]:
    try:
        rc = main([str(a) for a in argv])
    except SystemExit as exc:
        rc = exc.code
    out = capsys.readouterr()
    return rc, out.out, out.err


def write(tmp_path, rules: str, name: str = "r.yaml", head: str = HEAD):
    path = tmp_path / name
    path.write_text(head + rules, encoding="utf-8")
    return path


def lints_of(capsys, path, *options) -> tuple[int, list[tuple[int, int, str, str]], str]:
    """validate's exit code, its warnings as (line, col, lint name, message), and its last line."""
    rc, out, err = run(capsys, "validate", path, *options)
    assert err == ""
    *warnings, last = out.splitlines()
    found = []
    for line in warnings:
        m = LINT_LINE.match(line)
        assert m, line
        assert m["file"] == str(path)
        found.append((int(m["line"]), int(m["col"]), m["name"], m["message"]))
    return rc, found, last


CASES = [
    ("keep-with-other-actions",
     "  - name: keep-and-clear\n    match: {role: tool}\n    action: [keep, placeholder]\n",
     (6, 14, "rule 'keep-and-clear': keep next to placeholder keeps nothing: placeholder still applies; "
             "use keep alone to leave the items as they are")),
    ("action-never-applies",
     "  - {name: strip-results, match: {role: tool}, action: strip-text}\n",
     (4, 56, "rule 'strip-results': strip-text changes only assistant turns, but the rule reaches only tool results")),
    ("empty-range",
     "  - {name: odd, match: {size: {gt: 1000, lt: 100}}, action: placeholder}\n",
     (4, 31, "rule 'odd': size {gt: 1000, lt: 100} matches nothing: no whole number meets every bound")),
    ("empty-range",
     "  - {name: negative-age, match: {age: {unit: messages, lt: 0}}, action: placeholder}\n",
     (4, 39, "rule 'negative-age': age {lt: 0} matches nothing: no whole number of 0 or more meets every bound")),
    ("empty-range",
     "  - {name: negative-size, match: {size: {lt: 0}}, action: placeholder}\n",
     (4, 41, "rule 'negative-size': size {lt: 0} matches nothing: no whole number of 0 or more meets every bound")),
    ("glob-unclosed-bracket",
     "  - {name: reads, match: {tool: \"Read[\"}, action: placeholder}\n",
     (4, 33, "tool: 'Read[': no ']' closes its '[', so it matches a literal '[' ('Read[[]' says so); "
             "close the set (e.g. 'Read[12]'), or drop the '['")),
    ("glob-looks-like-regex",
     "  - {name: gets, match: {tool: \"get_.*\"}, action: placeholder}\n",
     (4, 32, "tool: 'get_.*' looks like a regex, but tool patterns are globs ('.', '|', '+' and '\\' are plain "
             "characters there); write 'get_*'")),
    ("unreachable-rule",
     "  - {name: clear, match: {role: tool}, action: placeholder}\n"
     "  - {name: keep-small, match: {role: tool, size: {lt: 100}}, action: keep}\n",
     (5, 5, "rule 'keep-small' is unreachable: 'clear' (line 4) takes every tool result first; "
            "move it before 'clear' or narrow that rule")),
]


@pytest.mark.parametrize("name,rules,expected", CASES, ids=[c[0] for c in CASES])
def test_each_lint_is_a_located_warning(capsys, tmp_path, name, rules, expected):
    path = write(tmp_path, rules)
    rc, found, last = lints_of(capsys, path)
    assert rc == 0  # warnings alone do not fail
    assert found == [(expected[0], expected[1], name, expected[2])]
    assert last == f"{path}: valid, 1 warning"
    rc, _, _ = lints_of(capsys, path, "--fail-on-warning")
    assert rc == 1


def test_glob_in_tools_section_and_with_a_star(capsys, tmp_path):
    path = write(tmp_path, "  - {name: mcp, match: {tool: [Bash, \"mcp__[*\"]}, action: placeholder}\n",
                 head='version: 1\nname: t\ntools:\n  "mcp__[*": {compact: true}\nrules:\n')
    _, found, _ = lints_of(capsys, path)
    assert [(line, name) for line, _, name, _ in found] == [(4, "glob-unclosed-bracket"), (4, "unread-tool-metadata"),
                                                            (6, "glob-unclosed-bracket")]
    ok = write(tmp_path, "  - {name: mcp, match: {tool: [\"Read[12]\", \"[!a]*\", \"x[]]\"]}, action: placeholder}\n",
               name="ok.yaml")
    assert lints_of(capsys, ok)[1] == []  # closed sets


def test_a_rule_that_matches_nothing(capsys, tmp_path):
    path = write(tmp_path, "  - {name: never, match: {role: tool, has_thinking: true}, action: keep}\n")
    _, found, _ = lints_of(capsys, path)
    assert found == [(4, 5, "unreachable-rule", "rule 'never' matches no item: no tool result or assistant turn "
                                                 "meets all of its conditions")]


def test_error_results_still_reach_an_is_error_rule_after_a_catch_all(capsys, tmp_path):
    path = write(tmp_path, "  - {name: clear, match: {role: tool}, action: placeholder}\n"
                           "  - {name: errors, match: {is_error: true}, action: keep}\n"
                           "  - {name: turns, match: {role: assistant}, action: strip-text}\n")
    assert lints_of(capsys, path)[1] == []


def test_an_action_a_catch_all_leaves_no_item_for(capsys, tmp_path):
    path = write(tmp_path, "  - {name: clear, match: {role: tool}, action: placeholder}\n"
                           "  - {name: grep, match: {tool: Grep}, action: truncate}\n")  # reaches turns only
    _, found, _ = lints_of(capsys, path)
    assert found == [(5, 47, "action-never-applies", "rule 'grep': truncate changes only tool results, but the rule "
                                                     "reaches only assistant turns: 'clear' (line 4) takes every "
                                                     "tool result first")]


def test_an_inherited_catch_all_is_named_with_its_file(capsys, tmp_path):
    write(tmp_path, "  - {name: clear, match: {role: tool}, action: placeholder}\n", name="base.yaml")
    path = write(tmp_path, "  - {name: late, match: {role: tool, tool: Read}, action: keep}\n",
                 head="version: 1\nname: child\nextends: base.yaml\nrules:\n")
    _, found, _ = lints_of(capsys, path)
    assert found == [(5, 5, "unreachable-rule", "rule 'late' is unreachable: 'clear' (base.yaml:4) takes every tool "
                                                "result first; move it before 'clear' or narrow that rule")]


COVERED = [
    ("  - {name: keep-old, match: {age: {unit: tool_results, gte: 5}}, action: keep}\n"
     "  - {name: clear-old, match: {role: tool, age: {unit: tool_results, gte: 5}}, action: placeholder}\n",
     "rule 'clear-old' is unreachable: 'keep-old' (line 4) takes every tool result this rule matches first; "
     "move it before 'keep-old' or narrow that rule"),
    ("  - {name: big, match: {size: {gt: 100}}, action: placeholder}\n"
     "  - {name: huge, match: {size: {gt: 1000}}, action: truncate}\n",
     "rule 'huge' is unreachable: 'big' (line 4) takes every tool result and assistant turn this rule matches "
     "first; move it before 'big' or narrow that rule"),
    ("  - {name: strip-old, match: {age: {unit: tool_results, gte: 5}}, action: strip-text}\n"
     "  - {name: clear-old, match: {role: tool, age: {unit: tool_results, gte: 6}}, action: placeholder}\n",
     "rule 'clear-old' is unreachable: 'strip-old' (line 4) takes every tool result this rule matches first, "
     "and leaves them unchanged (strip-text changes only assistant turns); move it before 'strip-old' or "
     "narrow that rule"),
    ("  - {name: gets, match: {tool: 'get_*'}, action: placeholder}\n"
     "  - {name: users, match: {tool: [get_user, get_order], size: {gt: 3}}, action: keep}\n",
     "rule 'users' is unreachable: 'gets' (line 4) takes every tool result and assistant turn this rule matches "
     "first; move it before 'gets' or narrow that rule"),
]


@pytest.mark.parametrize("rules,message", COVERED, ids=["keep-before-clear", "bounds", "strip-text", "glob"])
def test_a_rule_an_earlier_rule_covers_is_unreachable(capsys, tmp_path, rules, message):
    _, found, _ = lints_of(capsys, write(tmp_path, rules))
    assert found == [(5, 5, "unreachable-rule", message)]


@pytest.mark.parametrize("rules", [
    "  - {name: huge, match: {size: {gt: 1000}}, action: placeholder}\n"
    "  - {name: big, match: {size: {gt: 100}}, action: truncate}\n",
    "  - {name: chars, match: {size: {gt: 100}}, action: placeholder}\n"
    "  - {name: tokens, match: {size: {gt: 1000, unit: tokens}}, action: placeholder}\n",
    "  - {name: reads, match: {tool: 'Read*'}, action: placeholder}\n"
    "  - {name: others, match: {tool: ['Read', Grep]}, action: placeholder}\n",
], ids=["wider-after", "other-unit", "partly-covered"])
def test_a_rule_only_partly_covered_stays_reachable(capsys, tmp_path, rules):
    assert lints_of(capsys, write(tmp_path, rules))[1] == []


# --- unknown tools ------------------------------------------------------------------------------


TOOLS = "  - {name: a, match: {tool: [Reed, \"mcp__*\", \"Todo*\"]}, action: placeholder}\n"


def test_unknown_tools_only_with_a_known_list_or_strict(capsys, tmp_path):
    path = write(tmp_path, TOOLS + "  - {name: k, match: {compactable: false}, action: keep}\n",
                 head="version: 1\nname: t\ntools:\n  TodoWrite: {compact: false}\nrules:\n")
    assert lints_of(capsys, path)[1] == []  # not checked by default
    known = tmp_path / "tools.txt"
    known.write_text("# from audit\nRead\nTodoWrite\n", encoding="utf-8")
    _, found, _ = lints_of(capsys, path, "--known-tools", known)
    assert found == [(6, 30, "unknown-tool", "tool: 'Reed' is no known tool; did you mean 'Read'?"),
                     (6, 36, "unknown-tool", "tool: 'mcp__*' matches no known tool")]
    _, found, _ = lints_of(capsys, path, "--strict")  # no plugin declares a tool here
    assert [m for *_, m in found] == ["tools: 'TodoWrite' is no known tool", "tool: 'Reed' is no known tool",
                                      "tool: 'mcp__*' matches no known tool", "tool: 'Todo*' matches no known tool"]


def test_known_tools_file_unreadable(capsys, tmp_path):
    path = write(tmp_path, TOOLS)
    rc, out, err = run(capsys, "validate", path, "--known-tools", tmp_path / "nope.txt")
    assert (rc, out) == (2, "")
    assert err == f"rules-compact: error: {tmp_path / 'nope.txt'}: cannot read the known tools: No such file or directory\n"


def test_alternatives_in_a_glob_are_named_as_a_list(capsys, tmp_path):
    path = write(tmp_path, "  - {name: reads, match: {tool: 'Read|Grep'}, action: placeholder}\n")
    _, found, _ = lints_of(capsys, path)
    assert [(name, message.rsplit("; ", 1)[1]) for *_, name, message in found] == [
        ("glob-looks-like-regex", "list the names instead: [Read, Grep]")]


def test_known_tools_from_a_trace_or_a_folder(capsys, tmp_path):
    path = write(tmp_path, "  - {name: a, match: {tool: [get_reservation_details, get_reservaton]}, action: placeholder}\n")
    for known in (ROOT / "tests/data/traces/tau-bench/gpt-4o-airline.json", ROOT / "tests/data/traces/tau-bench"):
        _, found, _ = lints_of(capsys, path, "--known-tools", known)
        assert [m for *_, m in found] == ["tool: 'get_reservaton' is no known tool; did you mean "
                                          "'get_reservation_details'?"]


# --- bundled rules are clean; every lint is documented -------------------------------------------


@pytest.mark.parametrize("name", ["default"] + [f"preset:{p}" for p in preset_names()])
def test_bundled_rules_have_no_warnings(name):
    assert lint_rules(name) == []


def test_every_lint_is_documented():
    doc = (ROOT / "docs" / "rules.md").read_text(encoding="utf-8")
    for name in LINTS:
        assert f"| `{name}` |" in doc


def test_invalid_files_get_errors_not_lints(capsys, tmp_path):
    path = write(tmp_path, "  - {name: a, match: {role: user}, action: [keep, placeholder]}\n")
    rc, out, _ = run(capsys, "validate", path)
    assert rc == 1 and "[warning]" not in out and "'user' is not allowed" in out


# --- mis-indented rules -------------------------------------------------------------------------


@pytest.mark.parametrize("rules,message", [
    ("  - name: a\n    match: {role: tool}\n  action: keep\n",
     "6:3: YAML error: 'action' is indented 2 spaces in rule 'a' (line 4), whose keys are at 4 (the rule's keys): "
     "indent it 4 spaces"),
    ("  - name: a\n    match: {role: tool}\n    action: keep\n   - name: b\n",
     "7:4: YAML error: rule 'b' is indented 3 spaces, the rules before it 2, as rule 'a' (line 4): put its '-' "
     "under theirs, 2 spaces in"),
    ("  - name: a\n    match:\n      role: tool\n     size: {gt: 1}\n",
     "7:6: YAML error: 'size' is indented 5 spaces in rule 'a' (line 4), whose keys are at 4 (the rule's keys) or 6 "
     "(inside 'match'): indent it like the keys it belongs with"),
    ("  - name: a\n    match: {role: tool}\n    action: keep\n  name: b\n",
     "7:3: YAML error: 'name' is indented 2 spaces in rule 'a' (line 4), whose keys are at 4 (the rule's keys): "
     "indent it 4 spaces, or start a new rule there with '- name:', the '-' 2 spaces in"),
], ids=["key-out", "dash", "nested", "new-rule"])
def test_a_mis_indented_rule_is_named_with_the_fix(capsys, tmp_path, rules, message):
    path = write(tmp_path, rules)
    rc, out, err = run(capsys, "validate", path)
    assert (rc, err) == (1, "")
    assert out == f"{path}:{message}\n"
    assert "<block end>" not in out


# --- global options after the subcommand ----------------------------------------------------------


@pytest.mark.parametrize("argv", [["--strict", "validate"], ["validate", "--strict"]], ids=["before", "after"])
def test_strict_before_or_after_the_subcommand(capsys, tmp_path, argv):
    path = write(tmp_path, TOOLS)
    rc, out, _ = run(capsys, *argv, path)
    assert rc == 0 and "(unknown-tool)" in out


# --- presets --------------------------------------------------------------------------------------


def test_presets_lists_every_preset_with_its_source_and_parameters(capsys):
    rc, out, err = run(capsys, "presets")
    assert rc == 0 and err == ""
    blocks = out.strip().split("\n\n")
    assert [b.split(":", 2)[0] + ":" + b.split(":", 2)[1] for b in blocks] == [f"preset:{p}" for p in preset_names()]
    by_name = {b.split(":", 2)[1]: b for b in blocks}
    assert by_name["observation-masking"].splitlines() == [
        "preset:observation-masking: Reproduces SWE-agent's LastNObservations(n=10) history processor",
        "    8 rules; age tool_results ≥ 10"]
    assert by_name["anthropic-clear-tool-uses"].splitlines()[1] == (
        "    4 rules; trigger: tokens > 100,000; age tool_calls ≥ 3; estimator: utf16_4")
    assert "min_cleared_tokens: 20,001" in by_name["opencode-prune"]


def test_preset_summaries_name_their_source_not_a_seed_number(capsys):
    rc, out, _ = run(capsys, "presets", "--json")
    sources = {row["preset"]: row["source"] for row in map(__import__("json").loads, out.splitlines())}
    assert not [s for s in sources.values() if "seed" in s]
    assert sources["preset:keep-recent-results"] == "Reproduces LingoJack/j micro_compact"
    assert sources["preset:count-triggered-prune"] == "Reproduces jeffkit/recursive Microcompactor::prune"
    assert sources["preset:read-time-spans"] == "Reproduces minorcell/neo-code PR #161's read-time micro compact"


def test_a_preset_name_without_preset_prefix_says_how_to_name_it(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "c.json").write_text('[{"role": "user", "content": "hi"}]', encoding="utf-8")
    rc, out, err = run(capsys, "apply", "c.json", "-r", "keep-recent-results")
    assert (rc, out) == (2, "")
    assert err == "rules-compact: error: keep-recent-results: no such rule file; the preset is preset:keep-recent-results\n"
    (tmp_path / "keep-recent-results").write_text("version: 1\nname: mine\nrules: []\n", encoding="utf-8")
    assert run(capsys, "apply", "c.json", "-r", "keep-recent-results")[0] == 0  # a file of that name wins
