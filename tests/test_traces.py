"""The engine's guarantees on real agent traces (tests/data/traces/, see SOURCES.md).

* every mini-swe-agent trajectory (OpenAI chat-completions: the ``messages`` of the
  trajectory object) and the Claude Code subagent conversation (Anthropic Messages),
* with the bundled default rules and with hand-written rule files that exercise
  strip-text (with a marker), truncate, clear-inputs, ages in spans and user turns, and an
  ``error_when`` for mini-swe-agent's ``<returncode>N</returncode>`` results,
* plus what a user notices with the default rules: old big results become
  ``[Previous: used bash]``; the newest results (everything after the step boundary, at
  least the 5 newest unless their call was repeated later) and every error result stay byte
  for byte; tool calls stay; the estimated tokens go down.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

import pytest
import yaml

from rules_compact.testing import check_invariants
from rules_compact import compact, load_rules, parse_rules
from rules_compact.formats import FORMATS
from rules_compact.formats.base import is_shortened
from rules_compact.readers import read_conversations
from rules_compact.resources import bundled_rules
from rules_compact.engine.facts import Facts as View
from rules_compact.engine.interpreter import content_rules

TRACES = Path(__file__).parent / "data" / "traces"
MINI_SWE = sorted((TRACES / "mini-swe-agent").glob("*.traj.json"))
CLAUDE = TRACES / "claude-code" / "agent-a7be2f0.messages.json"
TRACE_IDS = {p: p.name.removesuffix(".traj.json") for p in MINI_SWE} | {CLAUDE: "claude-code"}
ALL_TRACES = [*MINI_SWE, CLAUDE]

#: mini-swe-agent wraps every output as ``<returncode>N</returncode><output>...``; N != 0 is a failure.
MINI_SWE_ERROR_WHEN = {"all": [{"text": {"startswith": "<returncode>"}},
                               {"not": {"text": {"startswith": "<returncode>0</returncode>"}}}]}


@lru_cache(maxsize=None)
def _load(path: Path) -> tuple[str, str]:
    """(format, messages as JSON), as the readers give them: each test gets a fresh copy."""
    conv = read_conversations(path.read_bytes(), path.name)[0]
    return conv.format, json.dumps(conv.messages, ensure_ascii=False)


def trace(path: Path) -> tuple[str, list]:
    fmt, text = _load(path)
    return fmt, json.loads(text)


def test_traces_are_there():
    assert len(MINI_SWE) >= 3 and CLAUDE.is_file()


# -- hand-written rule files ----------------------------------------------------

STRIP_TEXT = """
version: 1
name: strip-old-reasoning
rules:
  - name: keep-recent-turns
    match: {role: assistant, age: {unit: spans, lt: 3}}
    action: keep
  - name: strip-old-tool-turns
    match: {role: assistant, has_tool_calls: true}
    action: {strip-text: {marker: "[reasoning removed]", keep_max_chars: 80}}
"""

TRUNCATE = """
version: 1
name: truncate-big
rules:
  - name: keep-recent
    match: {age: {unit: tool_results, lt: 5}}
    action: keep
  - name: truncate-big
    match: {role: tool, size: {gt: 1500}}
    action: {truncate: {head: 300, tail: 200, marker: "\\n[... {omitted} chars cut from {tool_name} ...]\\n"}}
"""

CLEAR_INPUTS = """
version: 1
name: clear-old-spans
rules:
  - name: keep-recent-spans
    match: {age: {unit: spans, lt: 4}}
    action: keep
  - name: clear-old-results
    match: {role: tool, size: {gt: 200}}
    action: [{placeholder: "[cleared {tool_name} {tool_call_id}: {lines} lines]"}, clear-inputs]
  - name: clear-old-calls
    match: {role: assistant, has_tool_calls: true, age: {unit: spans, gte: 8}}
    action: clear-inputs
"""

USER_TURNS = """
version: 1
name: older-user-turns
rules:
  - name: earlier-turns
    match: {role: tool, age: {unit: user_turns, gte: 1}}
    action: {placeholder: "[earlier turn: {tool_name}, {chars} chars]"}
  - name: old-spans-of-this-turn
    match: {role: tool, in_tail: true, size: {gt: 500}, age: {unit: spans, gte: 6, include_self: true}}
    action: placeholder
"""

ERRORS = """
version: 1
name: mini-swe-errors
error_when: %s
rules:
  - name: truncate-big-errors
    match: {is_error: true, size: {gt: 1500}}
    action: {truncate: {head: 600, tail: 400}}
  - name: keep-other-errors
    match: {is_error: true}
    action: keep
  - name: keep-recent
    match: {age: {unit: tool_results, lt: 10}}
    action: keep
  - name: old-results
    match: {role: tool, size: {gt: 300}}
    action: {placeholder: "[Previous: used {tool_name}, exit 0]"}
""" % json.dumps(MINI_SWE_ERROR_WHEN)

RULE_FILES = {"strip-text": STRIP_TEXT, "truncate": TRUNCATE, "clear-inputs": CLEAR_INPUTS,
              "user-turns": USER_TURNS, "errors": ERRORS}


def _default_with_error_when() -> str:
    data = yaml.safe_load(bundled_rules("default").read_text(encoding="utf-8"))
    data["error_when"] = MINI_SWE_ERROR_WHEN
    return yaml.safe_dump(data, sort_keys=False)


def rules(name: str):
    if name == "default":
        return load_rules("default")
    if name == "default-content":  # without its pay-back step: a short trace is compacted too
        return content_rules(load_rules("default"))
    if name == "default+error_when":
        return parse_rules(_default_with_error_when(), "default+error_when")
    if name == "all-passes":
        return [parse_rules(RULE_FILES[n], n) for n in ("errors", "strip-text", "truncate")] + [load_rules("default")]
    return parse_rules(RULE_FILES[name], name)


RULE_NAMES = ["default", "default-content", "default+error_when", *RULE_FILES, "all-passes"]
CHANGES_NOTHING = {("default", "claude-code"), ("default+error_when", "claude-code")}  # too short to pay back


@pytest.mark.parametrize("rules_name", RULE_NAMES)
@pytest.mark.parametrize("path", ALL_TRACES, ids=TRACE_IDS.get)
def test_invariants_on_real_traces(path, rules_name):
    fmt, messages = trace(path)
    result = check_invariants(messages, rules(rules_name), fmt)
    assert result.report.format == fmt
    changed = any(d.changed for p in result.report.passes for d in p.decisions)
    assert changed != ((rules_name, TRACE_IDS[path]) in CHANGES_NOTHING), "the rules changed nothing, or something"


# -- each hand-written rule file does what it says --------------------------------------

def _results(messages: list, fmt: str) -> list[tuple[int, object, object]]:
    """(item index, content, message) of every tool result, oldest first."""
    form = FORMATS[fmt]
    return [(it.index, form.result_content(messages[it.msg_index], it.block_index), it)
            for it in form.items(messages) if it.kind == "tool_result"]


def _texts(messages: list, fmt: str) -> list[str]:
    form = FORMATS[fmt]
    return [it.text for it in form.items(messages) if it.kind == "tool_result"]


def _args(messages: list, fmt: str) -> list:
    """Every tool call's arguments, in order."""
    out = []
    for msg in messages:
        if fmt == "openai":
            out += [c["function"]["arguments"] for c in msg.get("tool_calls") or []]
        elif isinstance(msg.get("content"), list):
            out += [b["input"] for b in msg["content"] if isinstance(b, dict) and b.get("type") == "tool_use"]
    return out


@pytest.mark.parametrize("path", ALL_TRACES, ids=TRACE_IDS.get)
def test_strip_text_marks_old_assistant_turns(path):
    fmt, messages = trace(path)
    out = compact(messages, rules("strip-text"), format=fmt).messages
    changed = [i for i, (a, b) in enumerate(zip(messages, out)) if a != b]
    assert changed and all(messages[i]["role"] == "assistant" for i in changed)
    form = FORMATS[fmt]
    for i in changed:  # removed text leaves the marker; removed reasoning_content alone leaves none
        assert ("[reasoning removed]" in form.text_blocks(out[i])
                or (out[i]["content"] == messages[i]["content"] and "reasoning_content" in messages[i]))
    if any(out[i].get("content") != messages[i].get("content") for i in changed):
        assert any("[reasoning removed]" in form.text_blocks(out[i]) for i in changed)
    spans = form.scan(messages).span_starts
    for start in spans[-3:]:  # the three newest tool turns are kept
        assert out[start] == messages[start]
    if fmt == "openai" and any("reasoning_content" in m for m in messages):
        assert all("reasoning_content" not in out[i] for i in changed)


@pytest.mark.parametrize("path", ALL_TRACES, ids=TRACE_IDS.get)
def test_truncate_keeps_head_and_tail(path):
    fmt, messages = trace(path)
    out = compact(messages, rules("truncate"), format=fmt).messages
    before, after = _texts(messages, fmt), _texts(out, fmt)
    cut = [(b, a) for b, a in zip(before, after) if a != b]
    assert cut
    for b, a in cut:
        assert len(b) > 1500 and len(a) < len(b)
        assert a.startswith(b[:300]) and a.endswith(b[-200:])
        assert f"[... {len(b) - 500} chars cut from " in a
    assert before[-5:] == after[-5:]


@pytest.mark.parametrize("path", ALL_TRACES, ids=TRACE_IDS.get)
def test_clear_inputs_blanks_old_arguments(path):
    fmt, messages = trace(path)
    out = compact(messages, rules("clear-inputs"), format=fmt).messages
    empty = "{}" if fmt == "openai" else {}
    before, after = _args(messages, fmt), _args(out, fmt)
    assert len(before) == len(after)
    cleared = [i for i, (b, a) in enumerate(zip(before, after)) if a != b]
    assert cleared and all(after[i] == empty for i in cleared)
    placeholders = [t for t in _texts(out, fmt) if t.startswith("[cleared ")]
    assert placeholders


def test_user_turn_age_on_the_trace_with_a_second_user_turn():
    """The django run has a second user message (a tool-call parsing error) at index 266."""
    path = next(p for p in MINI_SWE if "django" in p.name)
    fmt, messages = trace(path)
    assert messages[266]["role"] == "user"
    out = compact(messages, rules("user-turns"), format=fmt).messages
    for i, (before, after) in enumerate(zip(messages, out)):
        if before["role"] != "tool":
            assert before == after
        elif i < 266:
            assert after["content"].startswith("[earlier turn: bash, ") or after == before
        else:
            assert not after["content"].startswith("[earlier turn")
    assert sum(1 for m in out[:266] if str(m.get("content")).startswith("[earlier turn: bash, ")) > 100


@pytest.mark.parametrize("path", MINI_SWE, ids=TRACE_IDS.get)
def test_error_when_finds_failed_commands(path):
    fmt, messages = trace(path)
    failed = {i for i, m in enumerate(messages)
              if m["role"] == "tool" and not m["content"].startswith("<returncode>0</returncode>")}
    assert failed
    result = compact(messages, rules("errors"), format=fmt)
    decisions = result.report.passes[0].decisions
    assert {d.message for d in decisions if d.error} == failed
    for d in decisions:
        if d.error and d.changed:
            assert d.rule == "truncate-big-errors"
            text = result.messages[d.message]["content"]
            assert "chars omitted" in text and text.startswith(messages[d.message]["content"][:600])
        elif d.error:
            assert result.messages[d.message] is messages[d.message]


# -- what a user notices with the default rules ------------------------------------------

def _tokens(messages: list, fmt: str, ruleset) -> int:
    return View(messages, FORMATS[fmt], ruleset).total_tokens


def _same(a, b) -> bool:
    return json.dumps(a, ensure_ascii=False) == json.dumps(b, ensure_ascii=False)


def _check_user_facts(path: Path, ruleset, errors) -> None:
    """What the default's content rules (the default without its pay-back step, so that short
    traces are compacted too) do to a real trace, as a user would check it."""
    fmt, messages = trace(path)
    snapshot = json.dumps(messages, ensure_ascii=False)
    result = compact(messages, ruleset, format=fmt)
    out = result.messages
    assert json.dumps(messages, ensure_ascii=False) == snapshot, "input mutated"
    decided = {d.item: d for d in result.report.passes[0].decisions}
    results = _results(messages, fmt)
    after = {index: content for index, content, _ in _results(out, fmt)}
    # at least one old result became the placeholder naming its tool and its call's arguments;
    # every change is that placeholder
    replaced = [it for index, content, it in results if not _same(after[index], content)]
    assert replaced
    assert all(after[it.index].startswith(f"[Previous: used {it.tool_name}: ") for it in replaced)
    if fmt == "openai":
        assert any(isinstance(v, str) and v.startswith("[Previous: used bash: ") for v in after.values())
    # the 8 newest results are byte-identical, except a large one whose exact call was run again
    # later (clear-superseded)
    for index, content, it in results[-8:]:
        if not _same(after[index], content):
            assert decided[index].rule == "clear-superseded", (index, decided[index])
    assert sum(_same(after[index], content) for index, content, _ in results[-8:]) >= 4
    # every error result is byte-identical
    error_items = [(index, content) for index, content, it in results if errors(it)]
    for index, content in error_items:
        assert _same(after[index], content)
    # every tool call (the final dangling submit call too) stays, its id and name too; only
    # argument values over 200 characters of old calls are shortened
    before_args, after_args = _args(messages, fmt), _args(out, fmt)
    assert len(before_args) == len(after_args)
    assert all(is_shortened(a, b, 200) for a, b in zip(before_args, after_args))
    for before, now in zip(messages, out):
        if before["role"] == "assistant" and fmt == "openai":
            assert [(c["id"], c["function"]["name"]) for c in now.get("tool_calls") or []] == \
                [(c["id"], c["function"]["name"]) for c in before.get("tool_calls") or []]
    # estimated tokens went down, and the report says so too
    report = result.report.passes[0]
    assert _tokens(out, fmt, ruleset) < _tokens(messages, fmt, ruleset)
    assert report.tokens_after == _tokens(out, fmt, ruleset) < report.tokens_before


@pytest.mark.parametrize("path", ALL_TRACES, ids=TRACE_IDS.get)
def test_default_rules_user_facts(path):
    """Errors here are what the format flags: none in mini-swe-agent, two in the Claude Code trace."""
    _check_user_facts(path, content_rules(load_rules("default")), lambda it: it.is_error)


@pytest.mark.parametrize("path", MINI_SWE, ids=TRACE_IDS.get)
def test_default_rules_with_error_when_keep_failed_commands(path):
    """mini-swe-agent has no error flag: with error_when, failed commands stay byte for byte."""
    _check_user_facts(path, content_rules(rules("default+error_when")),
                      lambda it: not it.text.startswith("<returncode>0</returncode>"))


def test_claude_trace_has_flagged_errors():
    fmt, messages = trace(CLAUDE)
    assert sum(1 for it in FORMATS[fmt].items(messages) if it.is_error) == 2
