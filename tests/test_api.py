"""The Python API: load_rules and compact, on the bundled examples."""

from __future__ import annotations

import copy
import dataclasses
import json
from pathlib import Path

import pytest
import yaml

from rules_compact import ConfigError, InputError, Result, RuleSet, compact, load_rules, parse_rules
from rules_compact.resources import preset_names

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
DEFAULT = ROOT / "rules" / "default.yaml"

AGGRESSIVE = """\
version: 1
name: aggressive
defaults:
  placeholder: "[{tool_name}: {chars} chars, {lines} lines]"
rules:
  - name: keep-errors
    match: {is_error: true}
    action: keep
  - name: strip-old-reasoning
    match:
      all: [{role: assistant}, {has_tool_calls: true}, {age: {unit: tool_results, gt: 2}}]
    action: {strip-text: {marker: "[thinking removed]"}}
  - name: truncate-big
    match: {role: tool, size: {gt: 2000}}
    action: [{truncate: {head: 200, tail: 200}}, clear-inputs]
  - name: placeholder-rest
    match: {role: tool, age: {unit: tool_results, gt: 3}}
    action: placeholder
"""

# the first default rules (keep errors, the 10 newest, <= 800 chars, workflow tools): a fixed policy
# for these API tests, whatever the bundled default becomes
KEEP_RECENT_800 = Path(__file__).parent / "data" / "keep_recent_800.yaml"


def messages_of(name: str) -> list:
    return json.loads((EXAMPLES / name).read_text(encoding="utf-8"))["messages"]


def with_budget(tokens: int) -> RuleSet:
    text = DEFAULT.read_text(encoding="utf-8").replace("defaults:\n", f"defaults:\n  over_budget_tokens: {tokens}\n")
    return parse_rules(text, "budget.yaml")


def all_decisions(result: Result):
    return [d for p in result.report.passes for d in p.decisions]


# --- load_rules ---------------------------------------------------------------------------------


def test_load_rules_from_path():
    names = [r["name"] for r in yaml.safe_load(DEFAULT.read_text(encoding="utf-8"))["rules"]]
    for source in (str(DEFAULT), DEFAULT):
        ruleset = load_rules(source)
        assert isinstance(ruleset, RuleSet)
        assert ruleset.name == "default"
        assert ruleset.version == 1
        assert [r.name for r in ruleset.rules] == names
        assert ruleset.source == str(DEFAULT)


def test_load_rules_default_name():
    ruleset = load_rules("default")
    assert ruleset.name == "default"
    assert [r.name for r in ruleset.rules] == [r.name for r in load_rules(DEFAULT).rules]


def test_load_rules_from_text():
    ruleset = load_rules(AGGRESSIVE)
    assert ruleset.name == "aggressive"
    assert [r.name for r in ruleset.rules] == ["keep-errors", "strip-old-reasoning", "truncate-big",
                                                "placeholder-rest"]
    assert [[a.name for a in r.actions] for r in ruleset.rules] == [
        ["keep"], ["strip-text"], ["truncate", "clear-inputs"], ["placeholder"]]


def test_load_rules_from_json_text():
    ruleset = load_rules('{"version": 1, "name": "j", "rules": [{"name": "k", "match": {}, "action": "keep"}]}')
    assert ruleset.name == "j"
    assert [r.name for r in ruleset.rules] == ["k"]


@pytest.mark.parametrize("name", preset_names() or [pytest.param("none", marks=pytest.mark.skip("no presets"))])
def test_load_rules_presets(name):
    assert isinstance(load_rules(f"preset:{name}"), RuleSet)


def test_load_rules_errors():
    with pytest.raises(ConfigError) as info:
        load_rules("version: 1\nname: x\nrules: []\nbogus: 1\n")
    assert str(info.value).startswith("<string>:4:1: unknown key 'bogus'")
    with pytest.raises(InputError) as info:
        load_rules("preset:does-not-exist")
    assert str(info.value).startswith("preset:does-not-exist: no such preset")


def test_ruleset_is_reusable():
    ruleset = load_rules("default")
    messages = messages_of("coding-session.json")
    assert compact(messages, ruleset).messages == compact(messages, ruleset).messages


# --- compact: default rules on the examples -----------------------------------------------------------


def test_compact_openai_example():
    messages = messages_of("coding-session.json")
    original = copy.deepcopy(messages)
    result = compact(messages, load_rules(KEEP_RECENT_800))

    assert messages == original  # the caller's list and messages are not mutated
    assert result.messages is not messages
    assert len(result.messages) == len(messages)
    assert result.report.format == "openai"

    (p,) = result.report.passes
    changed = [d for d in p.decisions if d.changed]
    assert changed, "the default rules compact this example"
    assert all(d.rule == "placeholder-old-results" and d.role == "tool" for d in changed)
    touched = {d.message for d in changed}
    for i, (old, new) in enumerate(zip(messages, result.messages)):
        if i not in touched:
            assert new is old  # unchanged messages are shared, not copied
            continue
        assert new is not old
        d = next(d for d in changed if d.message == i)
        assert new["content"] == f"[Previous: used {d.tool}]"
        assert {k: v for k, v in new.items() if k != "content"} == {k: v for k, v in old.items() if k != "content"}
        assert len(old["content"]) > 800  # keep-small protects anything shorter
    # the 10 most recent tool results are kept
    results = [i for i, m in enumerate(messages) if m["role"] == "tool"]
    assert not touched & set(results[-10:])


def test_compact_anthropic_example():
    messages = messages_of("anthropic-session.json")
    original = copy.deepcopy(messages)
    result = compact(messages, KEEP_RECENT_800)

    assert messages == original
    assert result.report.format == "anthropic"
    changed = [d for d in all_decisions(result) if d.changed]
    assert changed
    blocks: dict[int, dict[int, str]] = {}
    for d in changed:
        assert d.role == "tool" and d.block is not None
        blocks.setdefault(d.message, {})[d.block] = d.tool
    for i, (old, new) in enumerate(zip(messages, result.messages)):
        if i not in blocks:
            assert new is old
            continue
        assert {k: v for k, v in new.items() if k != "content"} == {k: v for k, v in old.items() if k != "content"}
        assert len(new["content"]) == len(old["content"])
        for j, (ob, nb) in enumerate(zip(old["content"], new["content"])):
            if j not in blocks[i]:
                assert nb == ob
                continue
            text = f"[Previous: used {blocks[i][j]}]"
            assert nb["content"] in (text, [{"type": "text", "text": text}])
            assert {k: v for k, v in nb.items() if k != "content"} == {k: v for k, v in ob.items() if k != "content"}


@pytest.mark.parametrize("example", ["coding-session.json", "anthropic-session.json"])
@pytest.mark.parametrize("rules", ["default", AGGRESSIVE], ids=["default", "aggressive"])
def test_caller_objects_never_mutated(example, rules):
    messages = messages_of(example)
    original = copy.deepcopy(messages)
    ids = [id(m) for m in messages]
    # the default's content rules: on the short Anthropic session its boundary never pays back
    rules = dataclasses.replace(load_rules(rules), step=None)
    result = compact(messages, rules)
    assert messages == original
    assert [id(m) for m in messages] == ids
    assert result.messages != original  # something was compacted
    # and a second run over the untouched input gives the same result
    assert compact(messages, rules).messages == result.messages
    # unchanged messages are shared
    for old, new in zip(messages, result.messages):
        if new == old:
            assert new is old


@pytest.mark.parametrize("example", ["coding-session.json", "anthropic-session.json"])
@pytest.mark.parametrize("rules", ["default", AGGRESSIVE], ids=["default", "aggressive"])
def test_report_totals_consistent(example, rules):
    # the default's content rules: on the short Anthropic session its boundary never pays back
    result = compact(messages_of(example), dataclasses.replace(load_rules(rules), step=None))
    report = result.report
    (p,) = report.passes
    assert report.tokens_before - report.tokens_after == sum(d.saved for d in p.decisions)
    assert report.items_changed == sum(d.changed for d in p.decisions) > 0
    assert report.tokens_after < report.tokens_before
    assert report.chars_after < report.chars_before
    assert sum(p.saved_by_rule().values()) == report.tokens_before - report.tokens_after
    for d in p.decisions:
        assert d.saved == d.tokens_before - d.tokens_after
        if not d.changed:
            assert d.saved == 0
    assert len({d.item for d in p.decisions}) == len(p.decisions)
    as_dict = report.to_dict()
    as_dict = json.loads(json.dumps(as_dict))  # JSON-ready
    assert as_dict["tokens_before"] - as_dict["tokens_after"] == sum(
        d["saved"] for d in as_dict["passes"][0]["decisions"])


def test_over_budget_flag():
    messages = messages_of("coding-session.json")
    tiny = compact(messages, with_budget(1))
    assert tiny.over_budget is True
    assert tiny.report.over_budget is True
    assert tiny.report.passes[0].over_budget_tokens == 1
    assert tiny.report.to_dict()["over_budget"] is True
    huge = compact(messages, with_budget(10**9))
    assert huge.over_budget is False
    assert compact(messages).over_budget is False  # no over_budget_tokens: never over budget
    # the budget only reports; it does not change what is compacted
    assert tiny.messages == huge.messages == compact(messages).messages


def test_over_budget_is_judged_after_compaction():
    messages = messages_of("coding-session.json")
    result = compact(messages)
    after = result.report.tokens_after
    assert compact(messages, with_budget(after)).over_budget is False
    assert compact(messages, with_budget(after - 1)).over_budget is True


def test_successive_passes():
    messages = messages_of("coding-session.json")
    once = compact(messages, ["default"])
    twice = compact(messages, ["default", load_rules("default")])
    assert len(twice.report.passes) == 2
    assert twice.messages == once.messages
    first, second = twice.report.passes
    assert second.tokens_before == first.tokens_after
    assert second.changed == 0
    assert twice.report.tokens_before == first.tokens_before
    assert twice.report.tokens_after == second.tokens_after


def test_rules_as_path():
    messages = messages_of("coding-session.json")
    assert compact(messages, str(DEFAULT)).messages == compact(messages, DEFAULT).messages \
        == compact(messages).messages


def test_nothing_to_do_returns_a_new_list():
    messages = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    original = copy.deepcopy(messages)
    result = compact(messages)
    assert result.messages == original
    assert result.messages is not messages
    assert all(a is b for a, b in zip(result.messages, messages))
    assert result.report.items_changed == 0
    assert compact([]).messages == []


def test_format_argument():
    messages = messages_of("coding-session.json")
    assert compact(messages, format="openai").messages == compact(messages).messages
    anthropic = messages_of("anthropic-session.json")
    assert compact(anthropic, format="anthropic").report.format == "anthropic"
    with pytest.raises(InputError, match="^message 3: unknown role 'tool'; allowed: user, assistant, system$"):
        compact(messages, format="anthropic")  # OpenAI messages read as Anthropic ones
    with pytest.raises(InputError) as info:
        compact(messages, format="klingon")
    assert "klingon" in str(info.value) and "openai" in str(info.value)


@pytest.mark.parametrize("bad", [None, "text", {"messages": []}, ({"role": "user"},)])
def test_messages_must_be_a_list(bad):
    with pytest.raises(InputError):
        compact(bad)


def test_result_is_idempotent():
    messages = messages_of("anthropic-session.json")
    result = compact(messages)
    again = compact(result.messages)
    assert again.messages == result.messages
    assert again.report.items_changed == 0


# -- messages a model API would reject: InputError, located ------------------------------------

BAD_MESSAGES = [
    ("openai", [{"role": "assistant", "content": "x", "tool_calls": 5}],
     "message 0: 'tool_calls' is a number, not a list"),
    ("openai", [{"role": "assistant", "content": None, "tool_calls": [
        {"id": "c", "type": "function", "function": {"name": "f", "arguments": {"a": 1}}}]}],
     "message 0: tool call 0: 'function.arguments' is an object, not a JSON string"),
    ("openai", [{"role": "user", "content": "hi"}, {"role": "user", "content": {"text": "hi"}}],
     "message 1: 'content' is an object, not a string, a list of parts or null"),
    ("openai", [{"role": "user", "content": "hi"}, {"role": "exit", "content": ""}],
     "message 1: unknown role 'exit'; allowed: system, developer, user, assistant, tool, function"),
    ("openai", [{"role": "user", "content": "hi"}, "--- compact boundary ---"],
     "message 1: is a string, not an object"),
    ("anthropic", [{"role": "user", "content": [{"type": "text", "text": "hi"}]}, {"role": "assistant"}],
     "message 1: has no 'content'"),
    ("anthropic", [{"role": "user", "content": "hi"}, {"role": "assistant", "content": [{"type": "tool_use", "id": "a",
                                                                                       "name": "f", "input": "ls"}]}],
     "message 1: content block 0: tool_use 'input' is a string, not an object"),
    ("anthropic", [{"role": "tool", "content": "x"}],
     "message 0: unknown role 'tool'; allowed: user, assistant, system"),
    ("responses", [{"type": "function_call", "call_id": "c", "name": "f", "arguments": {"a": 1}}],
     "item 0: function_call 'arguments' is an object, not a string"),
    ("responses", [{"role": "user", "content": "go"}, {"type": "function_call_output", "call_id": 3, "output": "x"}],
     "item 1: function_call_output 'call_id' is a number, not a string"),
    ("responses", [{"role": "robot", "content": "go"}],
     "item 0: unknown role 'robot'; allowed: user, assistant, system, developer"),
]


@pytest.mark.parametrize("fmt,messages,error", BAD_MESSAGES, ids=[e for _, _, e in BAD_MESSAGES])
def test_messages_an_api_would_reject_are_errors(fmt, messages, error):
    from rules_compact import Compactor

    with pytest.raises(InputError) as info:
        compact(messages, format=fmt)
    assert str(info.value) == error
    with pytest.raises(InputError) as info:
        Compactor(format=fmt)(messages)
    assert str(info.value) == error


@pytest.mark.parametrize("messages,error", [(m, e) for f, m, e in BAD_MESSAGES if f == "openai"],
                         ids=[e for f, _, e in BAD_MESSAGES if f == "openai"])
def test_a_long_list_is_checked_as_a_short_one(messages, error):
    """The bulk test of a long OpenAI list (a short one is checked message by message) finds
    the same first problem."""
    ok = [{"role": "user", "content": "go"}] + [{"role": "assistant", "content": "ok"}] * 11
    with pytest.raises(InputError) as info:
        compact(ok + messages, format="openai")
    index = int(error.split(":")[0].split()[1])
    assert str(info.value) == error.replace(f"message {index}:", f"message {index + len(ok)}:", 1)


def test_a_compactor_checks_the_messages_it_has_not_checked():
    """Round after round only the new messages are checked; an earlier message edited in place
    into a bad one is checked again (verify=True notices the edit)."""
    from rules_compact import Compactor

    messages = messages_of("coding-session.json")
    compactor = Compactor("default")
    for end in (20, 40, len(messages)):
        assert compactor(messages[:end]).messages == compact(messages[:end]).messages
    history = copy.deepcopy(messages)
    compactor(history)
    history[2]["tool_calls"] = "ls"  # an assistant message decided in an earlier round
    with pytest.raises(InputError, match="^message 2: 'tool_calls' is a string, not a list$"):
        compactor(history)


def test_a_where_pass_holds_little_more_than_a_text_match():
    # each where document kept for every item, and jmespath's own search (a reference cycle each
    # time, while a pass pauses the collector) made a where pass peak at 6.7x a text match's
    import tracemalloc

    messages = [{"role": "user", "content": "go"}]
    for i in range(2000):
        messages += [{"role": "assistant", "content": None, "tool_calls": [
                         {"id": f"c{i}", "type": "function", "function": {"name": "bash", "arguments": "{}"}}]},
                     {"role": "tool", "tool_call_id": f"c{i}", "content": "x" * 300}]

    def peak(match: str) -> int:
        rules = parse_rules(f"version: 1\nname: w\nrules:\n  - name: r\n    match: {match}\n    action: placeholder\n",
                            "w.yaml")
        assert compact(messages, rules, format="openai").report.items_changed == 0  # all searched, none matched
        tracemalloc.start()
        try:
            compact(messages, rules, format="openai")
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    assert peak("{role: tool, where: \"contains(item.text, 'y')\"}") < 3 * peak("{role: tool, text: {contains: 'y'}}")
