"""The docs stay true: examples run, every kind is documented, bundled files validate."""

from __future__ import annotations

import json
import re

import pytest
from jsonschema import Draft202012Validator

from conftest import ROOT
from rules_compact import parse_rules
from rules_compact.kinds.actions import BUILTIN_ACTIONS
from rules_compact.language.loader import check_rules
from rules_compact.kinds.matchers import BUILTIN_MATCHERS

README = (ROOT / "README.md").read_text(encoding="utf-8")
RULES_DOC = (ROOT / "docs" / "rules.md").read_text(encoding="utf-8")
SCHEMA = json.loads((ROOT / "schemas" / "rules.schema.json").read_text(encoding="utf-8"))


def blocks(text: str, lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", text, re.S)


@pytest.mark.parametrize("block", blocks(README, "yaml") + blocks(RULES_DOC, "yaml"))
def test_yaml_examples_are_valid_rule_files(block):
    assert parse_rules(block).name


def test_readme_python_example_runs(monkeypatch):
    monkeypatch.chdir(ROOT)
    for block in blocks(README, "python"):
        exec(compile(block, "README.md", "exec"), {})


def test_readme_quick_start_has_exactly_two_commands():
    section = README.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    commands = blocks(section, "sh")
    assert len(commands) == 2
    assert "rules-compact apply examples/" in commands[0]
    assert "pytest" in commands[1]
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert commands[1].strip() in ci


@pytest.mark.parametrize("kind", sorted(BUILTIN_MATCHERS) + sorted(BUILTIN_ACTIONS))
def test_every_kind_is_documented_and_in_the_schema(kind):
    assert f"| `{kind}` |" in RULES_DOC
    matcher_props = SCHEMA["$defs"]["matcher"]["properties"]
    action_props = SCHEMA["$defs"]["action"]["anyOf"][1]["properties"]
    assert kind in matcher_props or kind in action_props


def test_schema_is_valid_and_described():
    Draft202012Validator.check_schema(SCHEMA)

    def walk(node, path):
        if isinstance(node, dict):
            for name, sub in node.get("properties", {}).items():
                assert "description" in sub, f"{path}.{name} has no description"
            if node.get("type") == "object" and "properties" in node:
                assert "additionalProperties" in node, f"{path} allows unknown keys"
            for key, sub in node.items():
                walk(sub, f"{path}.{key}")
        elif isinstance(node, list):
            for i, sub in enumerate(node):
                walk(sub, f"{path}[{i}]")

    walk(SCHEMA, "$")


@pytest.mark.parametrize("path", sorted((ROOT / "rules").rglob("*.yaml")), ids=lambda p: p.name)
def test_bundled_rule_files_validate_and_name_the_schema(path):
    first = path.read_text(encoding="utf-8").splitlines()[0]
    assert first.startswith("# yaml-language-server: $schema=") and first.endswith("rules.schema.json")
    assert check_rules(path) == []


def test_the_schema_file_is_made_from_the_kinds():
    """schemas/rules.schema.json's kind fragments are the kinds' own: regenerate it with
    ``python -m rules_compact.language.schema`` after changing a kind."""
    from rules_compact.language import schema

    assert schema.main(["--check"]) == 0
