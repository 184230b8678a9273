"""docs/json.md lists exactly the fields each command's ``--json`` prints, with the right types."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conftest import ROOT
from rules_compact.cli import main

DOC = (ROOT / "docs" / "json.md").read_text(encoding="utf-8")
TRACE = ROOT / "tests" / "data" / "traces" / "mini-swe-agent" / "deepseek_chat_dev_rerun__pylint-dev__astroid-1333.traj.json"
TYPES = {"string": str, "integer": int, "number": (int, float), "boolean": bool, "object": dict, "array": list,
         "null": type(None)}


def documented(command: str) -> dict[str, tuple]:
    """Field -> the Python types its documented JSON type allows, from the command's section."""
    section = DOC.split(f"## `{command}`", 1)[1].split("\n## ", 1)[0]
    fields = {}
    for name, kind in re.findall(r"^\| `(\w+)` \| ([\w ]+?) \|", section, re.M):
        fields[name] = tuple(TYPES[t] for t in kind.split(" or "))
    assert fields, command
    return fields


ARGV = {
    "stats": ["stats", str(TRACE)],
    "replay": ["replay", str(TRACE), "--compare", "preset:observation-masking", "--cache-expiry"],
    "diff": ["diff", "default", "preset:observation-masking", str(TRACE)],
    "explain": ["explain", str(TRACE)],
    "audit": ["audit", str(TRACE)],
    "tools": ["tools", "-r", "TOOLS"],
    "presets": ["presets"],
}

TOOLS = """\
version: 1
name: tools
tools:
  TodoWrite: {compact: false}
  "mcp__*": {compact: true, placeholder: "[{tool_name} output]"}
rules:
  - {name: clear, match: {role: tool}, action: placeholder}
"""


@pytest.mark.parametrize("command", sorted(ARGV))
def test_documented_fields_are_the_printed_fields(capsys, tmp_path, command):
    (tmp_path / "tools.yaml").write_text(TOOLS, encoding="utf-8")
    argv = [str(tmp_path / "tools.yaml") if a == "TOOLS" else a for a in ARGV[command]]
    assert main(argv + ["--json"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines
    fields = documented(command)
    for line in lines:
        row = json.loads(line)
        assert list(row) and set(row) == set(fields), (set(row) ^ set(fields))
        for name, value in row.items():
            allowed = fields[name]
            assert isinstance(value, allowed) and not (isinstance(value, bool) and bool not in allowed), name


def test_audit_and_tools_rows_say_what_their_tables_say(capsys, tmp_path):
    (tmp_path / "tools.yaml").write_text(TOOLS, encoding="utf-8")
    rules = str(tmp_path / "tools.yaml")
    for argv in (["audit", str(TRACE), "-r", rules], ["tools", "-r", rules]):
        main(argv + ["--json"])
        rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
        main(argv)
        table = [re.split(r"\s{2,}", line.strip()) for line in capsys.readouterr().out.splitlines()[1:]]
        assert [r["tool"] for r in rows] == [cells[0] for cells in table[:len(rows)]]
        if argv[0] == "audit":
            assert [[f"{r['calls']:,}", f"{r['results']:,}", f"{r['total_chars']:,}"] for r in rows] == \
                [cells[1:4] for cells in table]
        else:
            assert [r["compact"] for r in rows] == [cells[1] == "true" for cells in table[:len(rows)]]
            assert rows[1]["placeholder"] == "[{tool_name} output]" and rows[1]["glob"]
