"""The example plugin's own tests, written with rules_compact.testing as a plugin author would.

Run them with the plugin installed (``pip install -e .``) or from this folder with
``PYTHONPATH=src python -m pytest tests``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import rules_compact_example as plugin
from rules_compact.testing import check_plugin, check_tool_specs, run_golden_case

GOLDEN = Path(__file__).parent / "golden" / "example.yaml"


def test_tool_specs_are_valid_and_summarizers_pure():
    specs = {s.pattern: s for s in check_tool_specs(plugin)}
    assert set(specs) == {"bash", "Bash", "Read", "read_file", "TodoWrite", "mcp__*"}
    assert specs["TodoWrite"].compact is False
    assert specs["bash"].summarize is plugin.summarize_shell


def test_every_hook_loads():
    reg = check_plugin(plugin)
    assert "command_matches" in reg.matchers
    assert "head-lines" in reg.actions
    assert "words" in reg.estimators


def test_golden_cases():
    results = run_golden_case(GOLDEN, plugins=[plugin])
    assert len(results) == 6


@pytest.mark.parametrize("content,summary", [
    ("<returncode>0</returncode>\n<output>\na\nb\n</output>", "exit 0, last line: b"),
    ("<returncode>2</returncode>\n<output>\n</output>", "exit 2, no output"),
    ("plain\noutput\n\n", "last line: output"),
    ("", "no output"),
])
def test_shell_summary(content, summary):
    assert plugin.summarize_shell(content, None) == summary


def test_read_summary_takes_the_path_from_either_format():
    openai = {"id": "c", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "a.py"}'}}
    anthropic = {"type": "tool_use", "id": "t", "name": "Read", "input": {"file_path": "/b.py"}}
    assert plugin.summarize_read("x\ny\n", openai) == "a.py, 2 lines"
    assert plugin.summarize_read("x", anthropic) == "/b.py, 1 line"
    assert plugin.summarize_read("", None) == "a file, 0 lines"
