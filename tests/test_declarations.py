"""What a tool declares decides something (issue 28, section 1): a plugin's or a rule file's
``compact: false`` keeps a tool's results under the default and the presets that honour
declarations, ``compact: true`` clears them without the size floor, a plugin's summarizer
writes the default's placeholders, and ``presets`` lists only what a preset really keeps."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from rules_compact import compact, load_rules
from rules_compact.cli.presets import preset_summary
from rules_compact.language.lints import lint_rules
from rules_compact.plugins import hookimpl
from rules_compact.plugins.manager import use_plugins
from rules_compact.readers import read_conversations

ROOT = Path(__file__).parent.parent
TRACES = ROOT / "tests" / "data" / "traces"
AIRLINE = TRACES / "tau-bench" / "gpt-4o-airline.json"
MINI_SWE = TRACES / "mini-swe-agent" / "deepseek_lite_dev__marshmallow-code__marshmallow-1343.traj.json"
EXAMPLE = ROOT / "examples" / "rules-compact-example-plugin" / "src" / "rules_compact_example" / "__init__.py"


class KeepReservations:
    """A plugin in the example plugin's style: reservation details are never compacted."""

    @hookimpl
    def rules_compact_tools(self):
        return [{"name": "get_reservation_details", "compact": False}]


@pytest.fixture(scope="module")
def example():
    spec = importlib.util.spec_from_file_location("rules_compact_example", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def conversations(path: Path):
    return read_conversations(path.read_bytes(), str(path))


def changed_tools(rules: str, plugins=()) -> list[str]:
    """The tools whose results a compaction of the airline conversations changes."""
    out = []
    with use_plugins(plugins):
        ruleset = load_rules(rules)
        for conv in conversations(AIRLINE):
            result = compact(conv.messages, ruleset, format=conv.format)
            out += [d.tool for d in result.report.passes[-1].decisions if d.changed and d.role == "tool"]
    return out


def test_a_preset_that_honours_declarations_keeps_a_declared_tool():
    before = changed_tools("preset:observation-masking")
    assert before.count("get_reservation_details") > 10
    after = changed_tools("preset:observation-masking", [KeepReservations()])
    assert "get_reservation_details" not in after
    assert len(after) == len(before) - before.count("get_reservation_details")


def test_a_seed_preset_ignores_plugins_and_lists_no_kept_tool():
    before = changed_tools("preset:count-triggered-prune")
    assert before.count("get_reservation_details") > 10
    assert changed_tools("preset:count-triggered-prune", [KeepReservations()]) == before
    with use_plugins([KeepReservations()]):
        assert not any("kept tools" in p for p in preset_summary("count-triggered-prune")["parameters"])
        assert "kept tools: get_reservation_details" in preset_summary("observation-masking")["parameters"]


def test_a_seed_preset_honours_its_extending_files_own_tools(tmp_path):
    child = tmp_path / "child.yaml"
    child.write_text("version: 1\nname: child\nextends: preset:count-triggered-prune\n"
                     "tools:\n  get_reservation_details: {compact: false}\n", encoding="utf-8")
    assert "get_reservation_details" not in changed_tools(str(child))
    assert changed_tools(str(child)) != []


def test_the_default_uses_a_plugins_summarizer(example):
    conv = conversations(MINI_SWE)[0]
    plain = compact(conv.messages, load_rules("default"), format=conv.format).messages
    with use_plugins([example]):
        summarized = compact(conv.messages, load_rules("default"), format=conv.format).messages
    texts = [m["content"] for m in summarized if m["role"] == "tool" and isinstance(m["content"], str)]
    assert summarized != plain
    assert any(t.startswith("[Previous: used bash: exit 0, last line: ") for t in texts)
    assert not any(t.startswith("[Previous: used bash: exit") for t in
                   (m["content"] for m in plain if m["role"] == "tool" and isinstance(m["content"], str)))


def test_declared_tools_no_rule_reads_are_linted(tmp_path):
    path = tmp_path / "r.yaml"
    path.write_text("version: 1\nname: r\ntools:\n  get_user_details: {compact: false}\n"
                    "rules:\n  - {name: clear, match: {role: tool}, action: placeholder}\n", encoding="utf-8")
    found = lint_rules(path)
    assert [(x.line, x.name) for x in found] == [(4, "unread-tool-metadata")]
    assert found[0].message.startswith("tools: get_user_details is declared but no rule matches on compactable")
    read = tmp_path / "read.yaml"
    read.write_text(path.read_text(encoding="utf-8").replace("{role: tool}", "{role: tool, compactable: true}"),
                    encoding="utf-8")
    assert lint_rules(read) == []


def test_every_preset_honours_declarations_or_says_it_ignores_them():
    from rules_compact.resources import preset_names
    for name in preset_names():
        ruleset = load_rules(f"preset:{name}")
        text = " ".join(ruleset.description.split())
        assert "Tool declarations" in text or "tool declarations" in text, name
