"""docs/integrations.md gives each framework one complete loop with a scripted model: each runs
here and prints what its ``# prints:`` line quotes."""

from __future__ import annotations

import importlib.util
import re

import pytest

from conftest import ROOT

DOC = (ROOT / "docs" / "integrations.md").read_text(encoding="utf-8")
LOOPS = dict(re.findall(r"### A complete loop \(([^)]+)\)\n.*?```python\n(.*?)```", DOC, re.S))
NEEDS = {"LangChain": "langchain", "pydantic-ai": "pydantic_ai", "OpenAI Agents SDK": "agents"}


def test_every_framework_has_a_loop():
    assert set(LOOPS) == set(NEEDS)
    assert all("# prints: " in code and "on_compact=" in code for code in LOOPS.values())


@pytest.mark.parametrize("framework", sorted(NEEDS))
def test_the_loop_runs_and_prints_what_it_quotes(framework, capsys):
    if importlib.util.find_spec(NEEDS[framework]) is None:
        pytest.skip(f"{NEEDS[framework]} is in the test extra")
    code = LOOPS[framework]
    exec(compile(code, f"docs/integrations.md ({framework})", "exec"), {"__name__": "loop"})
    quoted = [line.removeprefix("# prints: ") for line in code.splitlines() if line.startswith("# prints: ")]
    assert capsys.readouterr().out.splitlines() == quoted
