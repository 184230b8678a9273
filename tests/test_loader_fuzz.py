"""Fuzzing the loader: random and mutated rule files either load or raise a located ConfigError."""

from __future__ import annotations

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import ROOT
from rules_compact import ConfigError, RuleSet, parse_rules

VALID = [p.read_text(encoding="utf-8") for p in sorted((ROOT / "rules").rglob("*.yaml"))]
FUZZ = settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def loads_or_fails_located(text: str) -> None:
    try:
        assert isinstance(parse_rules(text, "fuzz.yaml"), RuleSet)
    except ConfigError as exc:
        assert exc.problems
        for problem in exc.problems:
            assert problem.file == "fuzz.yaml" and problem.line >= 1 and problem.col >= 1 and problem.message


scalars = st.one_of(st.none(), st.booleans(), st.integers(-5, 10**6), st.text(max_size=12),
                    st.sampled_from(["tool", "assistant", "keep", "placeholder", "strip-text", "chars",
                                     "tool_results", "{tool_name}", "{nope}", "(", "a b", "*"]))
keys = st.sampled_from(["version", "name", "rules", "match", "action", "role", "size", "age", "unit", "gt",
                        "lt", "among", "all", "any", "not", "where", "text", "regex", "placeholder",
                        "truncate", "head", "tail", "trigger", "budget", "defaults", "tools", "compact",
                        "error_when", "extends", "before", "x"])
documents = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                           st.dictionaries(keys, inner, max_size=5)),
                         max_leaves=25)


@FUZZ
@given(st.text(max_size=300))
def test_random_text(text):
    loads_or_fails_located(text)


@FUZZ
@given(documents)
def test_random_documents(doc):
    loads_or_fails_located(yaml.safe_dump(doc))


@FUZZ
@given(st.data())
def test_mutated_valid_files(data):
    text = data.draw(st.sampled_from(VALID))
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(text)))
        kind = data.draw(st.sampled_from(["delete", "insert", "duplicate-line", "indent"]))
        if kind == "delete":
            text = text[:at] + text[at + data.draw(st.integers(1, 20)):]
        elif kind == "insert":
            text = text[:at] + data.draw(st.text(alphabet=" \t\n:-{}[]'\"&*!|>#%@`,?abc0123", max_size=6)) + text[at:]
        elif kind == "duplicate-line":
            lines = text.splitlines(keepends=True)
            i = data.draw(st.integers(0, max(0, len(lines) - 1)))
            text = "".join(lines[:i + 1] + lines[i:i + 1] + lines[i + 1:])
        else:
            lines = text.splitlines(keepends=True)
            i = data.draw(st.integers(0, max(0, len(lines) - 1)))
            text = "".join(lines[:i] + ["  " + line for line in lines[i:i + 1]] + lines[i + 1:])
    loads_or_fails_located(text)
