"""The age matcher's bisection (on runs of more than BISECT_FROM items) picks what the age column picks."""

from __future__ import annotations

import pytest

from conftest import TRACES
from rules_compact import compact, parse_rules
from rules_compact.engine.facts import Facts
from rules_compact.kinds.matchers.age import BISECT_FROM
from rules_compact.readers import read_conversations

TRACE = TRACES / "mini-swe-agent" / "deepseek_chat_dev_rerun__pylint-dev__astroid-1333.traj.json"
BOUNDS = ["gte: 3", "gt: 7", "lt: 5", "lte: 12", "gte: 2, lte: 30", "gt: 40, lt: 45", "gte: 0", "gt: 500"]


def _rules(unit: str, bound: str, include_self: bool) -> str:
    return (f"version: 1\nname: ages\nrules:\n  - name: old\n    match: {{age: {{unit: {unit}, include_self: "
            f"{str(include_self).lower()}, {bound}}}}}\n    action: {{placeholder: 'old'}}\n")


@pytest.mark.parametrize("unit", ["tool_results", "messages"])
@pytest.mark.parametrize("include_self", [False, True])
@pytest.mark.parametrize("bound", BOUNDS)
def test_bisection_and_the_column_agree(monkeypatch, unit, include_self, bound):
    messages = read_conversations(TRACE.read_bytes(), TRACE.name)[0].messages
    assert sum(m.get("role") == "tool" for m in messages) > BISECT_FROM  # the results alone take the bisection
    rules = parse_rules(_rules(unit, bound, include_self))
    fast = compact(messages, rules)
    monkeypatch.setattr(Facts, "fast", False)
    column = compact(messages, rules)
    assert fast.messages == column.messages
    assert [d.changed for d in fast.report.passes[0].decisions] == [d.changed for d in column.report.passes[0].decisions]
