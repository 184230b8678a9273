"""Human-readable output fits 80 columns, or ``COLUMNS`` where set (explain, validate, diff,
stats, presets, replay); bundled rules show as ``default`` / ``preset:NAME``, never as the
path they are installed at, in output and in OpenTelemetry attributes alike."""

from __future__ import annotations

import pytest

from conftest import ROOT
from rules_compact import compact, load_rules
from rules_compact.cli import main
from rules_compact.integrations.tracing import Compaction, Session, attributes

TRACE = "tests/data/traces/tau-bench/gpt-4o-airline.json"
COMMANDS = [
    ["explain", TRACE, "-r", "preset:count-triggered-prune"],
    ["explain", "tests/data/traces/claude-code/agent-a2898e3.jsonl", "-r", "examples/reviewing/keep-three.yaml"],
    ["validate", "examples/reviewing/keep-three-draft.yaml"],
    ["diff", "default", "preset:count-triggered-prune", TRACE, "-j", "1"],
    ["stats", TRACE, "-r", "preset:count-triggered-prune", "-j", "1"],
    ["presets"],
    ["replay", TRACE, "--compare", "preset:count-triggered-prune", "-j", "1"],
]


def output(capsys, monkeypatch, argv, columns: str | None) -> str:
    monkeypatch.chdir(ROOT)
    if columns is None:
        monkeypatch.delenv("COLUMNS")
    else:
        monkeypatch.setenv("COLUMNS", columns)
    try:
        main(argv)
    except SystemExit:
        pass
    return capsys.readouterr().out


@pytest.mark.parametrize("argv", COMMANDS, ids=[" ".join(a[:2]) for a in COMMANDS])
@pytest.mark.parametrize("columns,width", [(None, 80), ("100", 100), ("60", 60)])
def test_every_line_fits_the_terminal(capsys, monkeypatch, argv, columns, width):
    out = output(capsys, monkeypatch, argv, columns)
    assert out.strip()
    wide = [line for line in out.splitlines() if len(line) > width]
    assert wide == []


def test_bundled_rules_show_by_name(capsys, monkeypatch):
    out = output(capsys, monkeypatch, ["explain", TRACE, "-r", "default", "-r", "preset:count-triggered-prune"], None)
    assert "pass: default (default):" in out
    assert "pass: count-triggered-prune (preset:count-triggered-prune):" in out
    assert ".yaml" not in out


def test_otel_rule_files_name_bundled_rules():
    messages = [{"role": "user", "content": "hi"}]
    report = compact(messages, [load_rules("default"), load_rules("preset:count-triggered-prune")]).report
    where = Compaction("sdk", "test", None, None, False, Session())
    assert attributes(report, where)["rules_compact.rule_files"] == ["default", "preset:count-triggered-prune"]
