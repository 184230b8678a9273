"""Golden cases: YAML files under tests/golden/ holding messages, rules and the expected output."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from invariants import check_invariants
from rules_compact import parse_rules

GOLDEN = Path(__file__).parent / "golden"
CASES = sorted(GOLDEN.glob("*.yaml"))


def load_cases():
    for path in CASES:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        for case in doc["cases"]:
            yield pytest.param(path, doc, case, id=f"{path.stem}::{case['name']}")


@pytest.mark.parametrize("path,doc,case", list(load_cases()))
def test_golden(path, doc, case):
    rules = case.get("rules", doc.get("rules"))
    passes = rules if isinstance(rules, list) else [rules]
    rulesets = [parse_rules(yaml.safe_dump(r, sort_keys=False), f"{path.name}::{case['name']}") for r in passes]
    messages = case.get("messages", doc.get("messages"))
    result = check_invariants(messages, rulesets, case.get("format", doc.get("format")),
                              idempotent=case.get("idempotent", True))
    assert result.messages == case["expected"]
    if "decisions" in case:
        decided = [d.rule for d in result.report.passes[-1].decisions]
        assert decided == case["decisions"]
    if "over_budget" in case:
        assert result.over_budget is case["over_budget"]
