"""Regexes from rule files run on RE2, so a pattern cannot hang the engine."""

from __future__ import annotations

import pytest

from rules_compact import ConfigError, compact, parse_rules

RULES = """\
version: 1
name: redos
rules:
  - name: catastrophic
    match: {text: {regex: '(a+)+$'}}
    action: placeholder
"""


def test_catastrophic_backtracking_pattern_runs_in_linear_time():
    # With Python's re this search takes longer than the age of the universe.
    messages = [
        {"role": "assistant", "content": None,
         "tool_calls": [{"id": "c", "type": "function", "function": {"name": "t", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c", "content": "a" * 50_000 + "!"},
    ]
    result = compact(messages, parse_rules(RULES))
    assert result.messages[1]["content"].endswith("!")  # no match, and it returned


@pytest.mark.parametrize("pattern,reason", [
    (r"(a)\1", r"invalid escape sequence: \1"),
    (r"(?<=a)b", "invalid perl operator: (?<="),
])
def test_patterns_re2_cannot_run_are_located_load_errors(pattern, reason):
    text = RULES.replace("(a+)+$", pattern)
    with pytest.raises(ConfigError) as info:
        parse_rules(text, "r.yaml")
    (problem,) = info.value.problems
    assert (problem.line, problem.col, problem.path) == (5, 27, "rules[0].match.text.regex")
    assert f"not supported by RE2, the linear-time engine rules run on: {reason}" in problem.message


def test_template_recognition_does_not_backtrack():
    # a template with many variables becomes a pattern with many wildcards
    rules = parse_rules("""\
version: 1
name: t
rules:
  - name: seen
    match: {compacted: true}
    action: keep
  - name: p
    match: {role: tool}
    action: {placeholder: "{tool_name} {chars} {bytes} {tokens} {lines} {tool_call_id} {chars} {bytes}."}
""")
    messages = [
        {"role": "assistant", "content": None,
         "tool_calls": [{"id": "c", "type": "function", "function": {"name": "t", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c", "content": "x " * 30_000},
    ]
    out = compact(messages, rules)
    assert out.messages[1]["content"] == "t 60000 60000 15000 1 c 60000 60000."
    assert compact(out.messages, rules).report.passes[0].decisions[1].rule == "seen"
