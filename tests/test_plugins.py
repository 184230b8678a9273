"""Plugins: discovery through entry points, lazy loading, tool metadata and its precedence,
summarizers, plugin matchers/actions with schema fragments, failures and --strict, the
``tools``/``audit``/``schema`` commands, rules_compact.testing, and docs/plugins.md.

Unit tests replace ``importlib.metadata.entry_points`` as plugins/manager.py sees it (and call
``plugins.reset()`` around each test).  The end-to-end tests install the example plugin
package under examples/ for real with pip, once per session, into a private folder put on
the PYTHONPATH of fresh ``python -m rules_compact`` subprocesses (so the shared environment
is never changed), and check what a user of that plugin sees.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import pytest
import yaml
from jsonschema import Draft202012Validator

import rules_compact
from rules_compact import InputError, compact, load_rules, parse_rules, plugins
from rules_compact.plugins import hookspecs, manager as plugin_registry
from rules_compact.plugins import Action, ActionKind
from rules_compact.cli import main
from rules_compact.errors import ConfigError
from rules_compact.plugins import hookimpl
from rules_compact.language.loader import check_rules
from rules_compact.plugins import MatcherKind
from rules_compact.plugins import ToolSpec
from rules_compact.language.schema import extended_schema
from rules_compact.plugins import ENV_PLUGINS, PluginError, PluginFailure, registry, use_plugins
from rules_compact.language.schema import rule_schema
from rules_compact.testing import check_invariants, check_plugin, check_tool_specs, run_golden_case

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "rules-compact-example-plugin"
EXAMPLE_GOLDEN = EXAMPLE / "tests" / "golden" / "example.yaml"
PLUGINS_DOC = ROOT / "docs" / "plugins.md"
PROG = "rules-compact"


# --- fakes ------------------------------------------------------------------------------------


class FakeDist:
    def __init__(self, version: str):
        self.version = version


class FakeEntryPoint:
    """What ``entry_points(group=...)`` yields: a name, a distribution, ``load()``."""

    def __init__(self, name: str, target, version: str = "1.0"):
        self.name, self.target, self.dist = name, target, FakeDist(version)
        self.loads = 0

    def load(self):
        self.loads += 1
        if isinstance(self.target, BaseException):
            raise self.target
        return self.target


def plugin(tools=None, matchers=None, actions=None, estimators=None, readers=None, name="FakePlugin"):
    """An object implementing the given hooks (each value: what the hook returns, or an
    exception it raises)."""

    def hook(value):
        def impl(self):
            if isinstance(value, BaseException):
                raise value
            return value
        return hookimpl(impl)

    attrs = {}
    for key, value in (("tools", tools), ("matchers", matchers), ("actions", actions), ("estimators", estimators),
                       ("readers", readers)):
        if value is not None:
            attrs[f"rules_compact_{key}"] = hook(value)
    return type(name, (), attrs)()


@pytest.fixture
def installed(monkeypatch):
    """Install fake entry-point plugins: ``installed(name, plugin_object, version=...)``."""
    eps: list[FakeEntryPoint] = []
    calls = []

    def fake_entry_points(group):
        calls.append(group)
        return [ep for ep in eps if group == plugins.ENTRY_POINT_GROUP]

    def install(name, target, version="1.0"):
        ep = FakeEntryPoint(name, target, version)
        eps.append(ep)
        plugins.reset()
        return ep

    monkeypatch.setattr(plugin_registry, "entry_points", fake_entry_points)
    monkeypatch.delenv(ENV_PLUGINS, raising=False)
    plugins.reset()
    install.calls = calls
    yield install
    plugins.reset()


def run(capsys, *argv: str) -> tuple[int, str, str]:
    try:
        rc = main(list(argv))
    except SystemExit as exc:
        rc = exc.code
    captured = capsys.readouterr()
    return rc, captured.out, captured.err


def rules_text(*lines: str, tools: dict | None = None) -> str:
    head = ["version: 1", "name: t"]
    if tools:
        head += ["tools:"] + [f"  {k!r}: {json.dumps(v)}" for k, v in tools.items()]
    return "\n".join(head + ["rules:"] + list(lines)) + "\n"


def openai_call(cid: str, name: str, args: dict) -> dict:
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


def conversation(*calls: tuple[str, str, dict, str]) -> list[dict]:
    """One assistant turn per ``(id, tool name, args, result)``, each followed by its result."""
    messages = [{"role": "user", "content": "go"}]
    for cid, name, args, result in calls:
        messages.append({"role": "assistant", "content": None, "tool_calls": [openai_call(cid, name, args)]})
        messages.append({"role": "tool", "tool_call_id": cid, "content": result})
    return messages


@pytest.fixture(scope="module")
def example():
    """The example plugin's module, imported from its source folder (not installed)."""
    spec = importlib.util.spec_from_file_location(
        "rules_compact_example", EXAMPLE / "src" / "rules_compact_example" / "__init__.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# --- the marker and laziness --------------------------------------------------------------------


def test_hookimpl_is_exported_from_the_package():
    assert rules_compact.hookimpl is hookspecs.hookimpl
    assert plugins.hookimpl is hookspecs.hookimpl


def test_plugins_load_once_on_first_use_not_before(installed):
    ep = installed("p", plugin(tools=[{"name": "x", "compact": True}]))
    assert installed.calls == [] and ep.loads == 0
    load_rules("default")
    assert ep.loads == 1 and installed.calls == [plugins.ENTRY_POINT_GROUP]
    load_rules("default")
    registry()
    assert ep.loads == 1 and len(installed.calls) == 1


def write_fake_distribution(site: Path, module: str, body: str, name: str = "fake") -> None:
    """A hand-made installed distribution: enough for importlib.metadata to find its entry point."""
    (site / f"{module}.py").write_text(body, encoding="utf-8")
    info = site / f"{module}-1.2.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module}\nVersion: 1.2\n", encoding="utf-8")
    (info / "entry_points.txt").write_text(f"[rules_compact]\n{name} = {module}\n", encoding="utf-8")


def python(code: str, *pythonpath: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    full = {k: v for k, v in os.environ.items() if k != ENV_PLUGINS}
    full["PYTHONPATH"] = os.pathsep.join([*map(str, pythonpath), str(ROOT)])
    full.update(env or {})
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=full, timeout=120)


def test_importing_rules_compact_loads_no_plugin(tmp_path):
    write_fake_distribution(tmp_path, "lazy_probe_plugin", textwrap.dedent("""
        from rules_compact.plugins import hookimpl

        @hookimpl
        def rules_compact_tools():
            return [{"name": "probe", "compact": False}]
    """))
    proc = python(textwrap.dedent("""
        import sys
        import rules_compact, rules_compact.cli, rules_compact.testing
        from rules_compact import plugins
        assert "lazy_probe_plugin" not in sys.modules, "loaded at import"
        assert plugins.plugin_manager.cache_info().currsize == 0
        ruleset = rules_compact.load_rules("default")
        assert "lazy_probe_plugin" in sys.modules
        assert ruleset.tools.lookup("probe").source == "fake"
        print("ok")
    """), tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok"


# --- failures and --strict -----------------------------------------------------------------------


def test_failing_import_is_reported_with_name_version_error_and_skipped(installed, capsys):
    installed("broken", ModuleNotFoundError("No module named 'nope'"), version="2.3")
    installed("good", plugin(tools=[{"name": "Grep", "compact": True}]))
    reg = registry()
    assert reg.failures == (PluginFailure("broken", "2.3", "ModuleNotFoundError: No module named 'nope'"),)
    assert [name for name, _ in reg.plugins] == [plugins.BUILTIN, "good"]
    rc, out, err = run(capsys, "tools")
    assert rc == 0
    assert err == f"{PROG}: warning: plugin broken 2.3: ModuleNotFoundError: No module named 'nope'; skipped\n"
    assert re.search(r"^Grep +true +- +- +good$", out, re.M), out


def test_strict_makes_a_failed_plugin_fatal(installed, capsys):
    installed("broken", RuntimeError("boom at import"), version="0.9")
    rc, out, err = run(capsys, "--strict", "tools")
    assert rc == 2 and out == ""
    assert err == f"{PROG}: error: plugin broken 0.9: RuntimeError: boom at import (--strict)\n"
    rc, out, err = run(capsys, "--strict", "apply", str(ROOT / "examples" / "coding-session.json"))
    assert rc == 2 and "plugin broken 0.9" in err and out == ""


def test_a_plugin_whose_hook_raises_is_skipped_whole(installed):
    kind = MatcherKind("never", lambda o, c, p: (lambda item, view: False), "never", {"type": "boolean"})
    installed("half", plugin(tools=RuntimeError("no tools today"), matchers=[kind]), version="3.1")
    reg = registry()
    assert reg.failures == (PluginFailure("half", "3.1", "RuntimeError: no tools today"),)
    assert "never" not in reg.matchers
    assert [n for n, _ in reg.plugins] == [plugins.BUILTIN]


def test_a_hook_that_exits_is_a_failed_plugin_not_the_commands_exit_code(installed, capsys):
    installed("quitter", plugin(tools=SystemExit(3)), version="1.2")
    installed("good", plugin(tools=[{"name": "Grep", "compact": True}]))
    assert registry().failures == (PluginFailure("quitter", "1.2", "SystemExit: 3"),)
    rc, out, err = run(capsys, "tools")
    assert rc == 0 and err == f"{PROG}: warning: plugin quitter 1.2: SystemExit: 3; skipped\n"
    assert re.search(r"^Grep +true +- +- +good$", out, re.M), out
    rc, out, err = run(capsys, "--strict", "apply", str(ROOT / "examples" / "coding-session.json"))
    assert (rc, out, err) == (2, "", f"{PROG}: error: plugin quitter 1.2: SystemExit: 3 (--strict)\n")


BAD_SPECS = [
    pytest.param({"name": "x"}, "a tool spec needs 'name' and 'compact'", id="missing-compact"),
    pytest.param({"name": "x", "compact": "yes"}, "tool 'x': compact must be true or false, got 'yes'", id="str-bool"),
    pytest.param({"name": "", "compact": True}, "a tool name must be a non-empty string", id="empty-name"),
    pytest.param({"name": 3, "compact": True}, "a tool name must be a non-empty string, got 3", id="int-name"),
    pytest.param({"name": "x", "compact": True, "summarise": len}, "unknown tool spec key(s) summarise",
                 id="unknown-key"),
    pytest.param({"name": "x", "compact": True, "placeholder": "[{nope}]"}, "unknown template variable {nope}",
                 id="bad-template"),
    pytest.param({"name": "x", "compact": True, "placeholder": "[{summary}]"}, "unknown template variable {summary}",
                 id="summary-in-tool-placeholder"),
    pytest.param({"name": "x", "compact": True, "summarize": "len"}, "summarize must be callable", id="summarize-str"),
    pytest.param("Read", "a tool spec must be a ToolSpec or a dict", id="bare-string"),
    pytest.param(ToolSpec("x", 1), "compact must be true or false", id="toolspec-int-compact"),
]


@pytest.mark.parametrize("spec,message", BAD_SPECS)
def test_invalid_tool_spec_skips_the_plugin_naming_it(installed, spec, message):
    installed("sloppy", plugin(tools=[spec]), version="0.1")
    (failure,) = registry().failures
    assert (failure.name, failure.version) == ("sloppy", "0.1")
    assert failure.error.startswith("plugin sloppy: ") and message in failure.error, failure.error


@pytest.mark.parametrize("result,message", [
    ({"name": "x", "compact": True}, "rules_compact_tools() must return a list, got dict"),
    ("bash", "rules_compact_tools() must return a list, got str"),
])
def test_tools_hook_must_return_a_list(installed, result, message):
    installed("p", plugin(tools=result))
    assert registry().failures[0].error == message


def test_same_pattern_twice_in_one_plugin_with_different_metadata(installed):
    installed("p", plugin(tools=[{"name": "x", "compact": True}, {"name": "x", "compact": False}]))
    assert registry().failures[0].error == "tool 'x' is declared twice with different metadata"


def test_a_hookimpl_with_a_misspelt_hook_name_is_a_failure(installed):
    class Typo:
        @hookimpl
        def rules_compact_tool(self):
            return [{"name": "x", "compact": True}]

        @hookimpl
        def rules_compact_estimators(self):
            return {"never": len}

    installed("typo", Typo())
    reg = registry()
    (failure,) = reg.failures
    assert failure.name == "typo" and "rules_compact_tool" in failure.error
    assert "never" not in reg.estimators  # unregistered whole, not half


def test_a_plugin_with_no_hooks_is_a_failure(installed):
    installed("empty", object())
    (failure,) = registry().failures
    assert "implements no hook" in failure.error and "@rules_compact.hookimpl" in failure.error


@pytest.mark.parametrize("make,message", [
    (lambda: plugin(matchers=[MatcherKind("tool", None, "", None)]), "compile must be callable"),
    (lambda: plugin(matchers=[MatcherKind("tool", lambda *a: None, "", None)]),
     "matcher 'tool' is already defined by plugin rules_compact.builtin"),
    (lambda: plugin(actions=[ActionKind("keep", lambda *a: None, "", None)]),
     "action 'keep' is already defined by plugin rules_compact.builtin"),
    (lambda: plugin(estimators={"chars4": len}), "estimator 'chars4' is already defined by plugin rules_compact.builtin"),
    (lambda: plugin(estimators=[len]), "rules_compact_estimators() must return a dict"),
    (lambda: plugin(matchers=[MatcherKind("m", lambda *a: None, "", {"type": "nope"})]), "invalid JSON Schema"),
    (lambda: plugin(matchers=[{"name": "m"}]), "rules_compact_matchers() must return MatcherKind objects"),
    (lambda: plugin(actions=[MatcherKind("m", lambda *a: None, "", None)]),
     "rules_compact_actions() must return ActionKind objects"),
])
def test_invalid_kinds_skip_the_plugin(installed, make, message):
    installed("p", make())
    (failure,) = registry().failures
    assert message in failure.error, failure.error


def test_kind_name_clash_between_plugins_names_the_first(installed):
    def act():
        return ActionKind("shout", lambda o, c, p: Action("shout", lambda item, ed: None), "", None)
    installed("b-second", plugin(actions=[act()]))
    installed("a-first", plugin(actions=[act()]))
    reg = registry()
    assert reg.owners[("action", "shout")] == "a-first"
    assert reg.failures == (PluginFailure("b-second", "1.0", "action 'shout' is already defined by plugin a-first"),)


# --- RULES_COMPACT_PLUGINS -----------------------------------------------------------------------


def test_env_selects_plugins(installed, monkeypatch, capsys):
    installed("alpha", plugin(tools=[{"name": "A", "compact": True}]))
    installed("beta", plugin(tools=[{"name": "B", "compact": True}]))

    def loaded():
        plugins.reset()
        return [n for n, _ in registry().plugins if n != plugins.BUILTIN]

    assert loaded() == ["alpha", "beta"]
    monkeypatch.setenv(ENV_PLUGINS, "none")
    assert loaded() == []
    monkeypatch.setenv(ENV_PLUGINS, "beta")
    assert loaded() == ["beta"]
    monkeypatch.setenv(ENV_PLUGINS, " alpha , beta ")
    assert loaded() == ["alpha", "beta"]
    monkeypatch.setenv(ENV_PLUGINS, "beta,gamma")
    assert loaded() == ["beta"]
    assert registry().failures == (
        PluginFailure("gamma", "", f"unknown plugin, named in {ENV_PLUGINS}; installed: alpha, beta"),)
    rc, _, err = run(capsys, "--strict", "tools")
    assert rc == 2 and "plugin gamma: unknown plugin, named in RULES_COMPACT_PLUGINS; installed: alpha, beta" in err
    monkeypatch.setenv(ENV_PLUGINS, "alpah")  # misspelt: named as unknown, the nearest name offered
    assert loaded() == []
    assert str(registry().failures[0]) == (f"plugin alpah: unknown plugin, named in {ENV_PLUGINS}; installed: "
                                           "alpha, beta; did you mean 'alpha'?")


# --- tool metadata: precedence and conflicts -----------------------------------------------------


def test_conflict_between_two_plugins_is_an_error_naming_both(installed):
    installed("one", plugin(tools=[{"name": "bash", "compact": True}]))
    installed("two", plugin(tools=[{"name": "bash", "compact": False}]))
    assert len(registry().conflicts) == 1
    with pytest.raises(ConfigError) as err:
        load_rules("default")
    message = str(err.value)
    assert "'bash'" in message and "plugin one" in message and "plugin two" in message
    # the bundled file cannot be edited: the user's own file settles it
    assert message.endswith("settle it in the tools: section of a rule file of your own with extends: default")
    with pytest.raises(ConfigError, match="settle it in this file's tools: section"):
        parse_rules(rules_text("  []").replace("rules:", "extends: default\nrules:"), "mine.yaml")


def test_conflict_on_the_summarizer_alone(installed):
    installed("one", plugin(tools=[{"name": "Read", "compact": True, "summarize": lambda c, k: "a"}]))
    installed("two", plugin(tools=[{"name": "Read", "compact": True, "summarize": lambda c, k: "b"}]))
    with pytest.raises(ConfigError, match="plugin one.*plugin two"):
        parse_rules(rules_text("  []"))


def test_the_rule_file_settles_a_conflict(installed, tmp_path):
    installed("one", plugin(tools=[{"name": "bash", "compact": True}]))
    installed("two", plugin(tools=[{"name": "bash", "compact": False}]))
    path = tmp_path / "settle.yaml"
    path.write_text(rules_text("  []", tools={"bash": {"compact": False}}), encoding="utf-8")
    spec = load_rules(path).tools.lookup("bash")
    assert (spec.compact, spec.source) == (False, str(path))


def test_same_metadata_from_two_plugins_is_no_conflict(installed):
    installed("one", plugin(tools=[{"name": "TodoWrite", "compact": False}]))
    installed("two", plugin(tools=[ToolSpec("TodoWrite", False)]))
    assert registry().conflicts == ()
    assert load_rules("default").tools.lookup("TodoWrite").source == "one"


def test_the_rule_files_tools_section_overrides_plugins(installed):
    installed("p", plugin(tools=[{"name": "Read", "compact": True, "placeholder": "[plugin {tool_name}]"}]))
    table = parse_rules(rules_text("  []", tools={"Read": {"compact": False}})).tools
    assert (table.compactable("Read"), table.lookup("Read").source) == (False, "<string>")
    table = parse_rules(rules_text("  []")).tools
    assert (table.compactable("Read"), table.lookup("Read").source) == (True, "p")


def test_an_exact_name_beats_a_glob_whoever_declares_them(installed):
    installed("globs", plugin(tools=[{"name": "mcp__*", "compact": False}]))
    installed("exact", plugin(tools=[{"name": "mcp__gh__issue", "compact": True}]))
    table = parse_rules(rules_text("  []")).tools
    assert table.lookup("mcp__gh__issue").source == "exact" and table.compactable("mcp__gh__issue")
    assert table.lookup("mcp__fs__ls").source == "globs" and not table.compactable("mcp__fs__ls")
    # a rule file's glob does not beat a plugin's exact name either: exact names come first
    table = parse_rules(rules_text("  []", tools={"mcp__*": {"compact": False}})).tools
    assert table.lookup("mcp__gh__issue").source == "exact"
    assert table.lookup("mcp__fs__ls").source == "<string>"


def test_plugins_load_in_name_order_so_glob_precedence_is_stable(installed):
    installed("b", plugin(tools=[{"name": "mcp__*", "compact": True}]))
    installed("a", plugin(tools=[{"name": "mcp__gh__*", "compact": False}]))
    assert [n for n, _ in registry().plugins][1:] == ["a", "b"]
    table = load_rules("default").tools
    assert table.lookup("mcp__gh__x").source == "a"
    assert table.lookup("mcp__fs__x").source == "b"


def test_undeclared_tools_follow_the_undeclared_setting(installed):
    installed("p", plugin(tools=[{"name": "Read", "compact": True}]))
    assert parse_rules(rules_text("  []")).tools.compactable("Grep")
    keep = parse_rules("version: 1\nname: k\nundeclared: keep\nrules: []\n").tools
    assert not keep.compactable("Grep") and keep.compactable("Read")


# --- summarizers --------------------------------------------------------------------------------


SUMMARY_RULES = rules_text("  - {name: sum, match: {role: tool}, action: {placeholder: {summary: true, allow_larger: true}}}")


def test_summary_placeholder_uses_the_summarizer_and_a_failure_falls_back_with_a_note(installed, tmp_path, capsys):
    def broken(content, call):
        raise ValueError("boom")

    installed("sums", plugin(tools=[
        {"name": "Read", "compact": True, "summarize": lambda content, call:
            f"{plugins.call_args(call)['path']}, {len(content.splitlines())} lines"},
        {"name": "Bash", "compact": True, "summarize": broken},
        {"name": "Grep", "compact": True, "summarize": lambda content, call: 42},
    ]))
    messages = conversation(("c1", "Read", {"path": "a.py"}, "x = 1\n" * 20), ("c2", "Bash", {"cmd": "ls"}, "out"),
                            ("c3", "Grep", {}, "hit"), ("c4", "Glob", {}, "files"))
    result = check_invariants(messages, parse_rules(SUMMARY_RULES))
    texts = [m["content"] for m in result.messages if m["role"] == "tool"]
    assert texts == ["[Previous: used Read: a.py, 20 lines]", "[Previous: used Bash]", "[Previous: used Grep]",
                     "[Previous: used Glob]"]
    notes = {d.tool: d.note for d in result.report.passes[0].decisions if d.role == "tool"}
    assert notes == {"Read": None, "Bash": "summarizer of 'Bash' (sums) failed: ValueError: boom",
                     "Grep": "summarizer of 'Grep' (sums) failed: TypeError: returned int, not str", "Glob": None}
    assert "summarizer of 'Bash' (sums) failed" in json.dumps(result.report.to_dict())
    (tmp_path / "c.json").write_text(json.dumps(messages), encoding="utf-8")
    (tmp_path / "r.yaml").write_text(SUMMARY_RULES, encoding="utf-8")
    rc, out, _ = run(capsys, "explain", str(tmp_path / "c.json"), "-r", str(tmp_path / "r.yaml"))
    assert rc == 0 and "summarizer of 'Bash' (sums) failed: ValueError: boom" in out


def test_a_summarizer_that_exits_falls_back_with_a_note(installed, tmp_path, capsys):
    def quits(content, call):
        raise SystemExit(3)

    installed("sums", plugin(tools=[{"name": "Bash", "compact": True, "summarize": quits}]))
    (tmp_path / "c.json").write_text(json.dumps(conversation(("c1", "Bash", {}, "out" * 50))), encoding="utf-8")
    (tmp_path / "r.yaml").write_text(SUMMARY_RULES, encoding="utf-8")
    rc, out, err = run(capsys, "explain", str(tmp_path / "c.json"), "-r", str(tmp_path / "r.yaml"))
    assert rc == 0 and "summarizer of 'Bash' (sums) failed: SystemExit: 3" in out, err


def test_a_summary_placeholder_larger_than_the_result_leaves_it_as_it_is(installed):
    installed("sums", plugin(tools=[{"name": "Read", "compact": True, "summarize": lambda content, call:
                                     f"{plugins.call_args(call)['path']}, {len(content.splitlines())} lines"}]))
    small = "x = 1\n" * 4  # 24 characters, 6 tokens; the summary placeholder is 11
    result = check_invariants(conversation(("c1", "Read", {"path": "src/app.py"}, small)), parse_rules(SUMMARY_RULES))
    assert result.messages[-1]["content"] == small
    decision = result.report.passes[0].decisions[-1]
    assert (decision.rule, decision.changed, decision.saved) == ("sum", False, 0)
    assert decision.note == "left as it is: the summary placeholder (11 tokens) is larger than the result (6)"


def test_without_summary_true_the_summarizer_is_not_called(installed):
    calls = []
    installed("p", plugin(tools=[{"name": "Read", "compact": True, "summarize": lambda c, k: calls.append(1) or "s"}]))
    result = compact(conversation(("c1", "Read", {}, "text")),
                     parse_rules(rules_text("  - {name: c, match: {role: tool}, action: {placeholder: {allow_larger: true}}}")))
    assert result.messages[-1]["content"] == "[Previous: used Read]" and calls == []


# --- plugin matchers and actions: schema and validate -------------------------------------------


def test_validate_reports_a_typo_in_plugin_matcher_options_located(example, tmp_path, capsys):
    path = tmp_path / "typo.yaml"
    path.write_text(rules_text("  - name: keep-git",
                               "    match: {command_matches: {regx: '^git'}}",
                               "    action: keep",
                               "  - name: head",
                               "    match: {role: tool}",
                               "    action: {head-lines: {n: 0}}"), encoding="utf-8")
    with use_plugins([example]):
        problems = [str(p) for p in check_rules(path)]
        rc, out, _ = run(capsys, "validate", str(path))
    assert problems == [
        f"{path}:5:30: missing required key 'regex' (at rules[0].match.command_matches)",
        f"{path}:5:31: unknown key 'regx'; allowed: argument, ignore_case, regex (at rules[0].match.command_matches.regx)",
        f"{path}:9:30: expected a number >= 1, got 0 (at rules[1].action.head-lines.n)",
    ]
    assert rc == 1 and out.splitlines() == problems


def test_plugin_kind_compile_problems_are_located(example):
    text = rules_text("  - name: a", "    match: {command_matches: {regex: '(unclosed'}}", "    action: keep")
    with use_plugins([example]), pytest.raises(ConfigError) as err:
        parse_rules(text, "bad.yaml")
    assert str(err.value).startswith("bad.yaml:5:38: invalid regex '(unclosed'")


def test_without_the_plugin_its_kinds_are_unknown_keys():
    with use_plugins([]):
        problems = [str(p) for p in check_rules(rules_text(
            "  - {name: a, match: {command_matches: {regex: x}}, action: keep}"))]
    assert len(problems) == 1 and "unknown key 'command_matches'" in problems[0]


def test_extended_schema_holds_the_fragments_and_stays_valid(example):
    with use_plugins([example]) as reg:
        schema = extended_schema(rule_schema(), reg)
    Draft202012Validator.check_schema(schema)
    matcher = schema["$defs"]["matcher"]["properties"]["command_matches"]
    assert matcher["x-rules-compact-plugin"] == "rules_compact_example"
    assert matcher["required"] == ["regex"]
    action = schema["$defs"]["action"]["anyOf"]
    assert action[1]["properties"]["head-lines"]["properties"]["n"]["minimum"] == 1
    assert "head-lines" not in action[0]["enum"]  # options required: no bare form
    assert "command_matches" not in rule_schema()["$defs"]["matcher"]["properties"]  # base untouched
    estimators = schema["properties"]["defaults"]["properties"]["estimator"]["enum"]
    assert "words" in estimators and "words" not in rule_schema()["properties"]["defaults"]["properties"]["estimator"]["enum"]


def test_bare_action_name_only_when_its_schema_accepts_null():
    def compile_(options, ctx, path):
        return Action("shout", lambda item, ed: None)
    kinds = [ActionKind("shout", compile_, "Shout.", {"type": ["null", "object"], "properties": {}}),
             ActionKind("whisper", compile_, "Whisper.", {"type": "object"})]
    with use_plugins([plugin(actions=kinds)]) as reg:
        enum = extended_schema(rule_schema(), reg)["$defs"]["action"]["anyOf"][0]["enum"]
        assert "shout" in enum and "whisper" not in enum
        parse_rules(rules_text("  - {name: a, match: {}, action: shout}"))
        assert check_rules(rules_text("  - {name: a, match: {}, action: whisper}"))


def test_a_kind_without_schema_accepts_any_options():
    seen = []

    def compile_(options, ctx, path):
        seen.append(options)
        return lambda item, view: True
    with use_plugins([plugin(matchers=[MatcherKind("anything", compile_, "Any options.")])]):
        parse_rules(rules_text("  - {name: a, match: {anything: {x: [1, 2]}}, action: keep}"))
    assert seen == [{"x": [1, 2]}]


def test_schema_command_prints_the_extended_schema(example, capsys):
    with use_plugins([example]):
        rc, out, _ = run(capsys, "schema")
    assert rc == 0
    schema = json.loads(out)
    assert "command_matches" in schema["$defs"]["matcher"]["properties"]
    assert "head-lines" in schema["$defs"]["action"]["anyOf"][1]["properties"]


def test_use_plugins_is_scoped(example):
    outer = registry()
    with use_plugins([example]) as reg:
        assert registry() is reg and "command_matches" in reg.matchers
    assert registry() is outer
    with pytest.raises(PluginError, match="plugin empty: implements no hook"):
        with use_plugins([type("empty", (), {})()]):
            pass  # pragma: no cover


# --- the tools and audit commands ---------------------------------------------------------------


def test_tools_lists_every_tool_its_metadata_and_who_declared_it(installed, tmp_path, capsys):
    installed("p", plugin(tools=[{"name": "Read", "compact": True, "summarize": lambda c, k: "s"},
                                 {"name": "TodoWrite", "compact": False, "placeholder": "[todo {tool_call_id}]"},
                                 {"name": "mcp__*", "compact": True}]))
    path = tmp_path / "r.yaml"
    path.write_text(rules_text("  []", tools={"Read": {"compact": False}, "Grep": {"compact": True}}), "utf-8")
    rc, out, err = run(capsys, "tools", "-r", str(path))
    assert rc == 0 and err == ""
    lines = out.splitlines()
    assert lines[0].split() == ["tool", "compact", "placeholder", "summarizer", "declared", "by"]
    rows = [re.split(r"\s{2,}", line) for line in lines[1:-1]]
    assert rows == [["Grep", "true", "-", "-", str(path)], ["Read", "false", "-", "-", str(path)],
                    ["TodoWrite", "false", "[todo {tool_call_id}]", "-", "p"], ["mcp__*", "true", "-", "-", "p"]]
    assert lines[-1] == "undeclared tools: compact"


def test_audit_lists_tools_seen_large_undeclared_first(installed, tmp_path, capsys):
    installed("p", plugin(tools=[{"name": "Read", "compact": True}]))
    messages = conversation(("c1", "Read", {}, "r" * 5000), ("c2", "Grep", {}, "g" * 300),
                            ("c3", "Bash", {}, "b" * 2000), ("c4", "Bash", {}, "b" * 100))
    path = tmp_path / "c.json"
    path.write_text(json.dumps(messages), encoding="utf-8")
    rc, out, _ = run(capsys, "audit", str(path))
    assert rc == 0
    rows = [re.split(r"\s{2,}", line.strip()) for line in out.splitlines()]
    assert rows == [
        ["tool", "calls", "results", "total chars", "largest", "declared"],
        ["Bash", "2", "2", "2,100", "2,000", "undeclared (compact)"],
        ["Grep", "1", "1", "300", "300", "undeclared (compact)"],
        ["Read", "1", "1", "5,000", "5,000", "compact: true (p)"],
    ]


# --- rules_compact.testing --------------------------------------------------------------------


def test_check_tool_specs_on_the_example(example):
    specs = check_tool_specs(example)
    assert [s.pattern for s in specs] == ["bash", "Bash", "Read", "read_file", "TodoWrite", "mcp__*"]
    assert all(isinstance(s, ToolSpec) and s.source == "rules_compact_example" for s in specs)
    assert specs[3].placeholder.text.startswith("[read_file output removed")
    assert check_tool_specs([{"name": "x", "compact": True}])[0] == ToolSpec("x", True, None, "<specs>")


def test_check_tool_specs_catches_impure_and_broken_summarizers():
    counter = iter(range(10**6))
    with pytest.raises(AssertionError, match="not pure: the same content"):
        check_tool_specs([{"name": "x", "compact": True, "summarize": lambda c, k: str(next(counter))}])

    def mutates(content, call):
        if isinstance(call, dict):
            call["seen"] = True
        return "s"
    with pytest.raises(AssertionError, match="not pure: it changed its call argument"):
        check_tool_specs([{"name": "x", "compact": True, "summarize": mutates}])
    with pytest.raises(AssertionError, match=r"raised TypeError: .* and call .*'arguments': '\{not json'"):
        check_tool_specs([{"name": "x", "compact": True, "summarize": lambda c, k: plugins.call_args(k)["path"]}])
    with pytest.raises(AssertionError, match="returned int, not str"):
        check_tool_specs([{"name": "x", "compact": True, "summarize": lambda c, k: 1}])
    with pytest.raises(AssertionError, match="unknown template variable"):
        check_tool_specs([{"name": "x", "compact": True, "placeholder": "{oops}"}])
    with pytest.raises(AssertionError, match="declared twice with different metadata"):
        check_tool_specs([{"name": "x", "compact": True}, {"name": "x", "compact": False}])
    ok = check_tool_specs([{"name": "x", "compact": True, "summarize": lambda c, k: c[:3]}],
                          samples=[("abcdef", None)])
    assert ok[0].summarize("abcdef", None) == "abc"


def test_check_tool_specs_wants_a_marked_hook():
    class Unmarked:
        @staticmethod
        def rules_compact_tools():
            return []
    with pytest.raises(AssertionError, match="not marked with @rules_compact.hookimpl"):
        check_tool_specs(Unmarked)
    with pytest.raises(AssertionError, match="has no rules_compact_tools hook"):
        check_tool_specs(object())


def test_check_plugin(example):
    reg = check_plugin(example)
    assert {"command_matches"} <= set(reg.matchers) and "words" in reg.estimators
    lazy = plugin(matchers=[MatcherKind("loose", lambda o, c, p: (lambda i, v: True), "no schema")], name="Loose")
    with pytest.raises(AssertionError, match="matcher 'loose' has no schema"):
        check_plugin(lazy)
    assert "loose" in check_plugin(lazy, require_schemas=False).matchers
    with pytest.raises(AssertionError, match="already defined by plugin rules_compact.builtin"):
        check_plugin(plugin(estimators={"bytes4": len}))


def test_run_golden_case_on_the_example(example):
    results = run_golden_case(EXAMPLE_GOLDEN, plugins=[example])
    assert len(results) == 6
    only = run_golden_case(EXAMPLE_GOLDEN, plugins=[example], name="words-estimator")
    assert list(only) == ["words-estimator"]


def test_run_golden_case_reports_what_differs(example):
    doc = yaml.safe_load(EXAMPLE_GOLDEN.read_text(encoding="utf-8"))
    case = dict(doc["cases"][0], format=doc["format"], messages=doc["messages"])
    run_golden_case(case, plugins=[example])  # a mapping without cases is one case
    wrong = dict(case, expected=[dict(m) for m in case["expected"]])
    wrong["expected"][3]["content"] = "something else"
    with pytest.raises(AssertionError, match=r"<case>::summaries-keep.*: message 3 differs"):
        run_golden_case(wrong, plugins=[example])
    with pytest.raises(AssertionError, match=r"decisions \[.*\], expected \['nope'\]"):
        run_golden_case(dict(case, decisions=["nope"]), plugins=[example])
    with pytest.raises(AssertionError, match="message 3 differs"):
        run_golden_case(case)  # without the plugin: no summarizer, the plain placeholder
    with pytest.raises(AssertionError, match=r"::command-matches-keeps-git-results: rules do not load:\n.*"
                                             r"unknown key 'command_matches'"):
        run_golden_case(EXAMPLE_GOLDEN, name="command-matches-keeps-git-results")
    with pytest.raises(AssertionError, match="no case named 'x'"):
        run_golden_case(EXAMPLE_GOLDEN, plugins=[example], name="x")


def test_run_golden_case_runs_this_projects_golden_files():
    results = run_golden_case(ROOT / "tests" / "golden" / "matchers_compactable.yaml")
    assert len(results) >= 5


# --- docs/plugins.md --------------------------------------------------------------------------


def hook_names() -> list[str]:
    tree = ast.parse(Path(hookspecs.__file__).read_text(encoding="utf-8"))
    return [node.name for node in tree.body if isinstance(node, ast.FunctionDef)
            and any(isinstance(d, ast.Name) and d.id == "hookspec" for d in node.decorator_list)]


def test_hooks_are_the_documented_set():
    assert sorted(hook_names()) == sorted(plugins.HOOKS)


@pytest.mark.parametrize("hook", hook_names())
def test_every_hook_has_a_heading_in_the_docs(hook):
    doc = PLUGINS_DOC.read_text(encoding="utf-8")
    assert re.search(rf"^## `?{hook}\(.*\)", doc, re.M), f"docs/plugins.md has no '## {hook}(...)' heading"


def doc_blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", PLUGINS_DOC.read_text(encoding="utf-8"), re.S)


def doc_plugins() -> list:
    """The complete plugins of docs/plugins.md (python blocks starting ``# plugin: NAME.py``) as modules."""
    modules = []
    for block in doc_blocks("python"):
        first = block.split("\n", 1)[0]
        if first.startswith("# plugin: "):
            module = types.ModuleType(first[len("# plugin: "):].removesuffix(".py"))
            exec(compile(block, f"docs/plugins.md ({module.__name__})", "exec"), module.__dict__)
            modules.append(module)
    return modules


def test_each_hook_has_a_complete_example_plugin_that_passes_the_checks():
    modules = doc_plugins()
    implemented = {hook for module in modules for hook in plugins.HOOKS if hasattr(module, hook)}
    assert implemented == set(plugins.HOOKS)
    for module in modules:
        check_plugin(module)


def test_doc_rule_files_load_with_the_documented_plugins(example):
    blocks = [b for b in doc_blocks("yaml") if b.startswith("version: 1")]
    assert len(blocks) >= 4
    with use_plugins([example, *doc_plugins()]):
        for block in blocks:
            parse_rules(block, "docs/plugins.md")


def test_doc_redact_example_works():
    (redaction,) = [m for m in doc_plugins() if m.__name__ == "redaction"]
    with use_plugins([redaction]):
        ruleset = parse_rules(rules_text("  - {name: r, match: {role: tool}, action: {redact: {regex: 'sk-\\w+'}}}"))
        with pytest.raises(ConfigError, match="not idempotent"):
            parse_rules(rules_text("  - {name: r, match: {}, action: {redact: {regex: 'x', replacement: xx}}}"))
    result = check_invariants(conversation(("c1", "Bash", {}, "key sk-abc123 ok")), ruleset)
    assert result.messages[-1]["content"] == "key [redacted] ok"


def test_doc_reader_example_works(tmp_path, capsys):
    (event_log,) = [m for m in doc_plugins() if m.__name__ == "event_log"]
    events = [{"kind": "prompt", "text": "fix it"}]
    for i in range(8):
        events += [{"kind": "tool_call", "id": f"t{i}", "tool": "shell", "args": {"cmd": "cat x"}},
                   {"kind": "tool_output", "id": f"t{i}", "output": "data\n" * 500}]
    log = tmp_path / "agent.log.jsonl"
    log.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    with use_plugins([event_log]):
        rc, out, err = run(capsys, "apply", str(log), "-o", str(tmp_path / "out.json"))
        assert rc == 0, err
        out_messages = json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))
        assert [m["role"] for m in out_messages] == ["user"] + ["assistant", "tool"] * 8
        assert out_messages[2]["tool_call_id"] == "t0"
        log.write_text(log.read_text(encoding="utf-8") + json.dumps({"kind": "tool_output", "output": "?"}) + "\n",
                       encoding="utf-8")
        rc, out, err = run(capsys, "stats", str(log))
    assert rc == 2 and err == f"{PROG}: error: {log}:18: a tool_output without the 'id' of its call\n"


def test_doc_excerpts_of_the_example_are_verbatim():
    source = (EXAMPLE / "src" / "rules_compact_example" / "__init__.py").read_text(encoding="utf-8")
    excerpts = [b for b in doc_blocks("python") if b.startswith("# from src/rules_compact_example/")]
    assert len(excerpts) >= 3
    for block in excerpts:
        body = block.split("\n", 1)[1]
        for chunk in body.split("\n# ...\n"):
            assert chunk.strip() in source, chunk


def test_doc_python_blocks_compile():
    for block in doc_blocks("python"):
        if not block.startswith("# from "):  # excerpts are checked against the source instead
            compile(block, "docs/plugins.md", "exec")


# --- end to end: the example package installed with pip ---------------------------------------------


def _backend_available() -> bool:
    """Whether the example's build backend can run without being downloaded: setuptools
    builds wheels by itself from 70.1, before that with the ``wheel`` package."""
    try:
        import setuptools
    except ImportError:
        return False
    version = tuple(int(p) for p in re.findall(r"\d+", setuptools.__version__)[:2])
    return version >= (70, 1) or importlib.util.find_spec("wheel") is not None


@pytest.fixture(scope="session")
def site(tmp_path_factory):
    """The example plugin built and installed by pip into a private folder, once per session."""
    base = tmp_path_factory.mktemp("example-plugin")
    source = base / "rules-compact-example-plugin"
    shutil.copytree(EXAMPLE, source, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "build"))
    target = base / "site"
    command = [sys.executable, "-m", "pip", "install", "--no-deps", "--no-input", "--disable-pip-version-check",
               "--target", str(target)]
    if _backend_available():
        command += ["--no-build-isolation", "--no-index"]  # nothing to download
    proc = subprocess.run(command + [str(source)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    yield target
    shutil.rmtree(base, ignore_errors=True)


def cli(site: Path, *argv: str, env: dict | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    full = {k: v for k, v in os.environ.items() if k != ENV_PLUGINS}
    full["PYTHONPATH"] = os.pathsep.join([str(site), str(ROOT)])
    full.update(env or {})
    return subprocess.run([sys.executable, "-m", "rules_compact", *argv], capture_output=True, text=True,
                          env=full, cwd=cwd, timeout=120)


def test_e2e_installed_plugin_is_found_lazily(site):
    entry_points = next(site.glob("rules_compact_example_plugin-*.dist-info")) / "entry_points.txt"
    assert "[rules_compact]" in entry_points.read_text(encoding="utf-8")
    proc = python(textwrap.dedent("""
        import sys
        import rules_compact
        assert "rules_compact_example" not in sys.modules
        rules_compact.load_rules("default")
        assert "rules_compact_example" in sys.modules
        from rules_compact.plugins import registry
        print(dict(registry().plugins)["example"])
    """), site)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "0.1.0"


def test_e2e_tools_lists_the_plugins_tools(site):
    proc = cli(site, "tools")
    assert proc.returncode == 0 and proc.stderr == ""
    rows = {re.split(r"\s{2,}", line)[0]: re.split(r"\s{2,}", line) for line in proc.stdout.splitlines()}
    assert rows["bash"] == ["bash", "true", "-", "yes", "example"]
    assert rows["Read"] == ["Read", "true", "-", "yes", "example"]
    assert rows["TodoWrite"] == ["TodoWrite", "false", "-", "-", "example"]
    assert rows["mcp__*"] == ["mcp__*", "true", "-", "-", "example"]
    assert rows["read_file"][2].startswith("[read_file output removed")


E2E_RULES = """\
version: 1
name: e2e
rules:
  - {name: keep-plan, match: {compactable: false}, action: keep}
  - {name: keep-git, match: {role: tool, command_matches: {regex: '^git '}}, action: keep}
  - {name: summarize, match: {role: tool, compactable: true, size: {gt: 40}}, action: {placeholder: {summary: true}}}
"""


def test_e2e_apply_uses_compactable_and_summaries(site, tmp_path):
    (tmp_path / "rules.yaml").write_text(E2E_RULES, encoding="utf-8")
    doc = yaml.safe_load(EXAMPLE_GOLDEN.read_text(encoding="utf-8"))
    (tmp_path / "run.json").write_text(json.dumps({"messages": doc["messages"]}), encoding="utf-8")
    proc = cli(site, "apply", "run.json", "-r", "rules.yaml", "--report", "report.json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    tools = [m["content"] for m in json.loads(proc.stdout)["messages"] if m["role"] == "tool"]
    assert tools == [
        "[Previous: used bash: exit 0, last line: README.md]",
        doc["messages"][5]["content"],  # git status: kept by the plugin's matcher
        "todo list updated",  # TodoWrite: compact false
        "import os\nprint(os.name)\nx = 1\n",  # 31 chars: too small
        "[Previous: used bash: exit 1, last line: 1 failed]",
    ]
    report = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    assert [d["rule"] for d in report["passes"][0]["decisions"] if d["role"] == "tool"] == \
        ["summarize", "keep-git", "keep-plan", None, "summarize"]


def test_e2e_summaries_on_a_real_mini_swe_agent_run(site, tmp_path):
    (tmp_path / "rules.yaml").write_text(E2E_RULES, encoding="utf-8")
    proc = cli(site, "apply", str(ROOT / "examples" / "coding-session.json"), "-r", "rules.yaml", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    tools = [m["content"] for m in json.loads(proc.stdout)["messages"] if m["role"] == "tool"]
    summaries = [t for t in tools if t.startswith("[Previous: used bash: exit ")]
    assert len(summaries) >= 10
    assert all(re.fullmatch(r"\[Previous: used bash: exit -?\d+, (last line: .+|no output)\]", s) for s in summaries)


def test_e2e_validate_locates_a_typo_in_plugin_matcher_options(site, tmp_path):
    (tmp_path / "ok.yaml").write_text(E2E_RULES, encoding="utf-8")
    (tmp_path / "typo.yaml").write_text(E2E_RULES.replace("{regex: '^git '}", "{regexp: '^git '}"), "utf-8")
    proc = cli(site, "validate", "ok.yaml", "typo.yaml", cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stdout.splitlines() == [
        "ok.yaml: ok",
        "typo.yaml:5:59: missing required key 'regex' (at rules[1].match.command_matches)",
        "typo.yaml:5:60: unknown key 'regexp'; allowed: argument, ignore_case, regex "
        "(at rules[1].match.command_matches.regexp)",
    ]


def test_e2e_schema_includes_the_plugin_fragments(site):
    proc = cli(site, "schema")
    assert proc.returncode == 0, proc.stderr
    schema = json.loads(proc.stdout)
    assert schema["$defs"]["matcher"]["properties"]["command_matches"]["x-rules-compact-plugin"] == "example"
    assert schema["$defs"]["action"]["anyOf"][1]["properties"]["head-lines"]["required"] == ["n"]


def test_e2e_env_var_disables_the_plugin(site, tmp_path):
    (tmp_path / "rules.yaml").write_text(E2E_RULES, encoding="utf-8")
    for value in ("none", "other"):
        proc = cli(site, "tools", env={ENV_PLUGINS: value})
        assert proc.returncode == 0 and "example" not in proc.stdout
        proc = cli(site, "validate", "rules.yaml", env={ENV_PLUGINS: value}, cwd=tmp_path)
        assert proc.returncode == 1 and "unknown key 'command_matches'" in proc.stdout
    proc = cli(site, "tools", env={ENV_PLUGINS: "example"})
    assert proc.returncode == 0 and "example" in proc.stdout
    proc = cli(site, "--strict", "tools", env={ENV_PLUGINS: "other"})
    assert proc.returncode == 2
    assert proc.stderr == (f"{PROG}: error: plugin other: unknown plugin, named in {ENV_PLUGINS}; installed: "
                           "example (--strict)\n")


def test_e2e_the_example_packages_own_tests_pass(site):
    source = site.parent / "rules-compact-example-plugin"
    full = {k: v for k, v in os.environ.items() if k != ENV_PLUGINS}
    full["PYTHONPATH"] = os.pathsep.join([str(site), str(ROOT)])
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(source / "tests")],
                          capture_output=True, text=True, env=full, cwd=source, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert re.search(r"\b\d+ passed\b", proc.stdout)


# --- a plugin's functions failing while rules apply --------------------------------------------


def _raises(exc: BaseException):
    def fail(*args):
        raise exc
    return fail


def _kinds(matcher=lambda item, view: True, apply=lambda item, editor: None, compile_matcher=None,
           compile_action=None):
    """A matcher kind ``flaky`` and an action kind ``mangle`` running the given functions."""
    return dict(matchers=[MatcherKind("flaky", compile_matcher or (lambda o, c, p: matcher), "Flaky.")],
                actions=[ActionKind("mangle", compile_action or (lambda o, c, p: Action("mangle", apply)), "Mangle.",
                                    {"type": "null"})])


FAILING = [
    pytest.param(_kinds(matcher=_raises(RuntimeError("no luck"))), "rule clear: matcher flaky raised RuntimeError: "
                 "no luck", id="matcher"),
    pytest.param(_kinds(matcher=_raises(SystemExit(3))), "rule clear: matcher flaky raised SystemExit: 3",
                 id="matcher-exits"),
    pytest.param(_kinds(apply=_raises(KeyError("content"))), "rule clear: action mangle raised KeyError: 'content'",
                 id="action"),
    pytest.param(_kinds(compile_matcher=_raises(ValueError("bad options"))),
                 "rule clear: matcher flaky: compile raised ValueError: bad options", id="matcher-compile"),
    pytest.param(_kinds(compile_matcher=lambda o, c, p: 42),
                 "rule clear: matcher flaky: compile returned int 42, not a predicate (item, view) -> bool",
                 id="matcher-compile-returns-no-predicate"),
    pytest.param(_kinds(compile_action=lambda o, c, p: "mangle"),
                 "rule clear: action mangle: compile returned str 'mangle', not an Action", id="action-compile"),
]


@pytest.mark.parametrize("kinds, message", FAILING)
def test_a_failing_plugin_matcher_or_action_is_one_line_naming_plugin_rule_and_kind(tmp_path, capsys, kinds,
                                                                                     message):
    rules = tmp_path / "r.yaml"
    rules.write_text(rules_text("  - {name: keep-reads, match: {tool: Read}, action: keep}",
                                "  - {name: clear, match: {flaky: {}}, action: mangle}"), encoding="utf-8")
    messages = conversation(("c1", "Bash", {}, "out" * 50), ("c2", "Read", {}, "text"))
    (tmp_path / "c.json").write_text(json.dumps(messages), encoding="utf-8")
    with use_plugins([plugin(**kinds)]):
        for command in (["apply", str(tmp_path / "c.json"), "-o", str(tmp_path / "out.json")],
                        ["replay", str(tmp_path / "c.json")]):
            rc, out, err = run(capsys, *command, "-r", str(rules))
            assert (rc, out, err) == (2, "", f"{PROG}: error: plugin FakePlugin: {message}\n"), command
        with pytest.raises(PluginError, match=re.escape(message)):
            rules_compact.Compactor(str(rules))(messages)
    assert not (tmp_path / "out.json").exists()


def test_a_failing_plugin_matcher_in_error_when_names_error_when():
    kinds = _kinds(matcher=_raises(RuntimeError("no luck")))
    with use_plugins([plugin(**kinds)]):
        ruleset = parse_rules(rules_text("  - {name: clear, match: {role: tool}, action: placeholder}")
                              .replace("rules:", "error_when: {flaky: {}}\nrules:"))
        with pytest.raises(PluginError) as err:
            compact(conversation(("c1", "Bash", {}, "out" * 50)), ruleset)
    assert str(err.value) == "plugin FakePlugin: error_when: matcher flaky raised RuntimeError: no luck"


def test_built_in_kinds_and_estimators_are_not_wrapped():
    """Only a plugin's functions are guarded: the built-in ones pay nothing for it."""
    from rules_compact.kinds.actions import BUILTIN_ACTIONS
    from rules_compact.kinds.estimators import ESTIMATORS
    from rules_compact.kinds.matchers import BUILTIN_MATCHERS

    kinds = _kinds()
    with use_plugins([plugin(**kinds)]) as reg:
        assert all(reg.matchers[name] is kind for name, kind in BUILTIN_MATCHERS.items())
        assert all(reg.actions[name] is kind for name, kind in BUILTIN_ACTIONS.items())
        assert all(reg.estimators[name] is e for name, e in ESTIMATORS.items())
        assert reg.matchers["flaky"] is not kinds["matchers"][0] and reg.actions["mangle"] is not kinds["actions"][0]


ESTIMATES = [
    pytest.param(_raises(RuntimeError("no tokenizer")), "raised RuntimeError: no tokenizer", id="raises"),
    pytest.param(lambda text: str(len(text)), "returned str '", id="string"),
    pytest.param(lambda text: float("nan"), "returned float nan, not a whole number of tokens >= 0", id="nan"),
    pytest.param(lambda text: len(text) / 4, "returned float ", id="float"),
    pytest.param(lambda text: -1, "returned int -1, not a whole number of tokens >= 0", id="negative"),
]


@pytest.mark.parametrize("estimate, message", ESTIMATES)
def test_an_estimator_that_fails_or_counts_no_tokens_is_one_line(tmp_path, capsys, estimate, message):
    rules = tmp_path / "r.yaml"
    rules.write_text(rules_text("  - {name: clear, match: {role: tool}, action: placeholder}")
                     .replace("rules:", "defaults: {estimator: odd}\nrules:"), encoding="utf-8")
    (tmp_path / "c.json").write_text(json.dumps(conversation(("c1", "Bash", {}, "out" * 50))), encoding="utf-8")
    with use_plugins([plugin(estimators={"odd": estimate})]):
        for command in (["apply", str(tmp_path / "c.json"), "-o", str(tmp_path / "out.json"), "--report",
                         str(tmp_path / "report.json")], ["stats", str(tmp_path / "c.json"), "--json"]):
            rc, out, err = run(capsys, *command, "-r", str(rules))
            assert (rc, out) == (2, ""), (command, err)
            assert err.startswith(f"{PROG}: error: plugin FakePlugin: estimator odd {message}") and \
                len(err.splitlines()) == 1, err
    assert not (tmp_path / "out.json").exists() and not (tmp_path / "report.json").exists()


# --- readers ------------------------------------------------------------------------------------


def _chatlog_reader(read=None, detect=None, kind="object"):
    """A made-up log: ``{"chatlog": [{"who": "user" | "bot" | "tool", "said": ..., "call": ...}]}``."""
    from rules_compact.plugins import Draft, Reader

    def read_chatlog(data):
        messages = []
        for i, turn in enumerate(data["chatlog"]):
            if turn["who"] == "bot":
                messages.append({"role": "assistant", "content": turn.get("said"),
                                 **({"tool_calls": [openai_call(f"c{i}", turn["call"], {})]} if "call" in turn else {})})
            elif turn["who"] == "tool":
                messages.append({"role": "tool", "tool_call_id": f"c{i - 1}", "content": turn["said"]})
            else:
                messages.append({"role": "user", "content": turn["said"]})
        return [Draft(messages, "chatlog", "openai", ["read by the chatlog plugin"])]

    return Reader("chatlog", kind, detect or (lambda data: "chatlog" in data), read or read_chatlog)


def _chatlog(n: int = 12) -> bytes:
    turns = [{"who": "user", "said": "fix the bug"}]
    for i in range(n):
        turns += [{"who": "bot", "said": None, "call": "read_file"}, {"who": "tool", "said": f"line {i}\n" * 400}]
    return json.dumps({"chatlog": turns, "meta": {"v": 1}}).encode()


def test_a_plugin_reader_reads_its_log_in_every_command(tmp_path, capsys):
    from rules_compact.readers import read_conversations

    log = tmp_path / "session.chatlog.json"
    log.write_bytes(_chatlog())
    with pytest.raises(InputError, match="the object has keys: chatlog, meta"):  # unknown without the plugin
        read_conversations(log.read_bytes(), log.name)
    with use_plugins([plugin(readers=[_chatlog_reader()])]) as reg:
        assert [r.name for r in reg.readers] == ["chatlog"]
        (conv,) = read_conversations(log.read_bytes(), log.name)
        assert (conv.source_format, conv.format, conv.notes) == ("chatlog", "openai", ("read by the chatlog plugin",))
        assert len(conv.messages) == 25 and conv.messages[2]["role"] == "tool"
        rc, out, err = run(capsys, "apply", str(log), "-o", str(tmp_path / "out.json"))
        assert rc == 0, err
        out_messages = json.loads((tmp_path / "out.json").read_text())
        assert out_messages == compact(conv.messages).messages  # a log gives its API message list
        assert out_messages != conv.messages
        rc, out, err = run(capsys, "stats", str(log))
        assert rc == 0 and "chatlog" in out, err


def test_plugin_readers_come_before_the_built_in_ones(tmp_path):
    """A plugin may claim content a built-in reader would take (here: any message list)."""
    from rules_compact.plugins import Draft, Reader
    from rules_compact.readers import read_conversations

    mine = Reader("tagged", "list", lambda data: True, lambda data: [Draft(data, "tagged", "openai")])
    raw = json.dumps([{"role": "user", "content": "hi"}]).encode()
    assert read_conversations(raw, "m.json")[0].source_format == "messages"
    with use_plugins([plugin(readers=[mine])]):
        assert read_conversations(raw, "m.json")[0].source_format == "tagged"


@pytest.mark.parametrize("make, message", [
    (lambda R, D: "chatlog", "must return Reader objects"),
    (lambda R, D: R("", "object", bool, list), "needs a non-empty name"),
    (lambda R, D: R("x", "yaml", bool, list), "kind must be one of lines, object, list, got 'yaml'"),
    (lambda R, D: R("x", "object", None, list), "detect and read must be callable"),
])
def test_invalid_readers_are_plugin_errors(make, message):
    from rules_compact.plugins import Draft, Reader

    with pytest.raises(PluginError, match=message):
        with use_plugins([plugin(readers=[make(Reader, Draft)])]):
            pass


@pytest.mark.parametrize("reader, message", [
    (lambda: _chatlog_reader(read=lambda data: 1 / 0), "read failed: ZeroDivisionError: division by zero"),
    (lambda: _chatlog_reader(detect=lambda data: data["nope"]), "detect failed: KeyError: 'nope'"),
    (lambda: _chatlog_reader(read=_raises(SystemExit(3))), "read failed: SystemExit: 3"),
    (lambda: _chatlog_reader(read=lambda data: {"messages": []}), "read must return a list of Draft, got dict"),
])
def test_a_failing_plugin_reader_is_one_error_line(tmp_path, capsys, reader, message):
    log = tmp_path / "s.json"
    log.write_bytes(_chatlog())
    with use_plugins([plugin(readers=[reader()])]):
        rc, out, err = run(capsys, "stats", str(log))
    assert (rc, out) == (2, "")
    assert err == f"{PROG}: error: {log}: reader chatlog (plugin FakePlugin): {message}\n"


def test_a_draft_in_an_unknown_format_is_refused(tmp_path):
    from rules_compact.plugins import Draft
    from rules_compact.readers import read_conversations

    bad = _chatlog_reader(read=lambda data: [Draft([], "chatlog", "gemini")])
    with use_plugins([plugin(readers=[bad])]), pytest.raises(InputError, match="a Draft needs a list of messages and a format of .*, got 'gemini'"):
        read_conversations(_chatlog(), "s.json")


# --- what a plugin action produced is checked (issue 29) -----------------------------------------


def _editing(edit):
    """A plugin whose action ``bad`` runs ``edit(item, editor)`` on each item it is given."""
    def compile_bad(options, ctx, path):
        def bad(item, editor):
            return edit(item, editor)
        return Action("bad", bad)
    return plugin(actions=[ActionKind("bad", compile_bad, "Edits badly.", {"type": "null"})], name="BadEdits")


def _with_role(editor, item, role):
    editor.replace(item.msg_index, {**editor.message(item.msg_index), "role": role})


@pytest.mark.parametrize("edit, problem", [
    (lambda item, ed: ed.set_result_text(item, 12345),
     "action bad set a result's text to int 12345, not a string"),
    (lambda item, ed: _with_role(ed, item, "user"),
     "action bad made message 2 invalid: its role changed from 'tool' to 'user'"),
    (lambda item, ed: ed.replace(item.msg_index, {**ed.message(item.msg_index), "tool_call_id": "other"}),
     "action bad made message 2 invalid: its tool results changed from [('c1', None)] to [('other', None)]"),
    (lambda item, ed: ed.replace(item.msg_index, {**ed.message(item.msg_index), "tool_call_id": 7}),
     "action bad made message 2 invalid: 'tool_call_id' is a number, not a string"),
    (lambda item, ed: ed.replace(item.msg_index, {**ed.message(item.msg_index), "content": 12345}),
     "action bad made message 2 invalid: 'content' is a number, not a string, a list of parts or null"),
    (lambda item, ed: 5, "action bad returned the note int 5, not a string or None"),
], ids=["text-not-a-string", "role", "tool-call-id", "tool-call-id-not-a-string", "content-a-number", "note"])
def test_a_plugin_actions_edits_are_checked(tmp_path, capsys, edit, problem):
    """A plugin action that leaves a request a model API would reject, or breaks a call's
    pairing, fails with one line naming the plugin and the rule (it exited 0)."""
    with use_plugins([_editing(edit)]):
        (tmp_path / "r.yaml").write_text(rules_text("  - {name: mangle, match: {role: tool}, action: bad}"))
        (tmp_path / "in.json").write_text(json.dumps(conversation(("c1", "Bash", {}, "x" * 50))))
        code, out, err = run(capsys, "apply", str(tmp_path / "in.json"), "-r", str(tmp_path / "r.yaml"))
    assert code == 2 and out == ""
    assert err == f"rules-compact: error: plugin BadEdits: rule mangle: {problem}\n"


def test_a_plugin_action_that_edits_well_is_unchanged():
    def redact(item, editor):
        editor.set_result_text(item, editor.result_text(item).replace("secret", "[redacted]"))
    with use_plugins([_editing(redact)]):
        ruleset = parse_rules(rules_text("  - {name: r, match: {role: tool}, action: bad}"))
    result = check_invariants(conversation(("c1", "Bash", {}, "a secret")), ruleset)
    assert result.messages[-1]["content"] == "a [redacted]"
