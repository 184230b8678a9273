"""The measuring commands: ``stats``, ``replay`` and ``diff``.

Each runs in-process through ``rules_compact.cli.main`` on short cuts of real mini-swe-agent
traces (tests/data/traces/mini-swe-agent/), and its numbers are checked against the library
functions they print (``rules_compact.replay.replay``, ``rules_compact.analysis``), so a table
that drifts from what the library computes fails here. Usage errors must be one
``rules-compact: error:`` line with exit code 2.
"""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest

from rules_compact import compact, load_rules
from rules_compact.analysis import conversation_stats, decision_changes
from rules_compact.cli import main
from rules_compact.documents import read_conversations_from
from rules_compact.readers import read_conversations
from rules_compact.replay import PRICES, Price, cold_rounds, parse_price, replay, round_starts

TRACES = Path(__file__).parent / "data" / "traces" / "mini-swe-agent"
ASTROID = TRACES / "deepseek_chat_dev_rerun__pylint-dev__astroid-1333.traj.json"
REASONER = TRACES / "deepseek_reasoner_dev__sqlfluff__sqlfluff-1763.traj.json"

KEEP3 = """\
version: 1
name: keep-three
rules:
  - {name: keep-recent, match: {age: {unit: tool_results, lt: 3}}, action: keep}
  - {name: clear, match: {role: tool}, action: placeholder}
"""
KEEP10 = KEEP3.replace("keep-three", "keep-ten").replace("lt: 3", "lt: 10")


def run(capsys, *argv: str) -> tuple[int, str, str]:
    try:
        rc = main([str(a) for a in argv])
    except SystemExit as exc:  # argparse usage errors
        rc = exc.code
    captured = capsys.readouterr()
    return rc, captured.out, captured.err


def cut(path: Path, messages: int) -> list:
    return read_conversations(path.read_bytes(), path.name)[0].messages[:messages]


@pytest.fixture
def convs(tmp_path):
    """Two short conversations as files: (path, messages) each."""
    out = []
    for source, n, name in ((ASTROID, 61, "astroid.json"), (REASONER, 41, "reasoner.json")):
        messages = cut(source, n)
        path = tmp_path / name
        path.write_text(json.dumps({"messages": messages}), encoding="utf-8")
        out.append((path, messages))
    return out


@pytest.fixture
def rule_files(tmp_path):
    old, new = tmp_path / "keep10.yaml", tmp_path / "keep3.yaml"
    old.write_text(KEEP10, encoding="utf-8")
    new.write_text(KEEP3, encoding="utf-8")
    return old, new


def rows(out: str) -> list[list[str]]:
    """A text table's rows as lists of cells (cells are separated by 2+ spaces)."""
    return [re.split(r"\s{2,}", line.strip()) for line in out.splitlines() if line.strip()]


def one_error_line(err: str) -> str:
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("rules-compact: error: ") and "Traceback" not in err
    return lines[0]


# --- stats ------------------------------------------------------------------------------------


def test_stats_one_row_per_conversation_and_a_total(capsys, convs, rule_files):
    rc, out, err = run(capsys, "stats", convs[0][0], convs[1][0], "-r", rule_files[1])
    assert rc == 0 and err == ""
    table = rows(out)
    assert table[0] == ["conversation", "messages", "tool results", "tokens before", "tokens after", "saved",
                        "saved by rule"]
    assert len(table) == 1 + len(convs) + 1
    rules = load_rules(str(rule_files[1]))
    totals = [0, 0, 0, 0]
    for row, (path, messages) in zip(table[1:], convs):
        stats = conversation_stats(str(path), messages, [rules], None)
        before, after = stats.report.tokens_before, stats.report.tokens_after
        assert str(path.name) in row[0]
        assert row[1:6] == [str(len(messages)), str(stats.tool_results), f"{before:,}", f"{after:,}",
                            f"{(before - after) / before:.1%}"]
        assert row[6] == f"clear {stats.saved_by_rule['clear'] / before:.0%}"
        for i, value in enumerate((len(messages), stats.tool_results, before, after)):
            totals[i] += value
    assert table[-1][:6] == ["total (2)", str(totals[0]), str(totals[1]), f"{totals[2]:,}", f"{totals[3]:,}",
                             f"{(totals[2] - totals[3]) / totals[2]:.1%}"]
    assert table[-1][6] == f"clear {(totals[2] - totals[3]) / totals[2]:.0%}"  # the only rule that saves


def test_stats_with_the_default_rules(capsys, convs):
    rc, out, _ = run(capsys, "stats", convs[0][0])
    assert rc == 0
    table = rows(out)
    assert table[0][0] == "conversation" and table[-1][0] == "total (1)"
    before = compact(convs[0][1]).report.tokens_before
    assert table[1][3] == f"{before:,}"


# --- replay -----------------------------------------------------------------------------------


def replay_rows(out: str) -> dict[str, list[str]]:
    table = rows(out)
    header = next(i for i, r in enumerate(table) if r[0] == "rule set")
    assert table[header] == ["rule set", "rounds", "prompt tokens", "vs none", "cached tokens", "cached share",
                             "cost", "vs none", "recall", "recoverable", "regret"]
    return {r[0]: r[1:] for r in table[header + 1:]}


def expected_row(messages: list, rulesets, price: Price, base) -> list[str]:
    r = replay(messages, rulesets, "openai", price)
    return [str(r.rounds), f"{r.total_prompt:,}", f"{r.total_prompt / base.total_prompt:.3f}", f"{r.total_cached:,}",
            f"{r.total_cached / r.total_prompt:.3f}", f"{r.cost:,.0f}", f"{r.cost / base.cost:.3f}", f"{r.recall:.3f}",
            f"{r.recoverable_recall:.3f}", f"{r.regret:.3f}"]


def test_replay_without_rules_compares_none_with_default(capsys, convs):
    path, messages = convs[0]
    rc, out, err = run(capsys, "replay", path)
    assert rc == 0 and err == ""
    rounds = sum(1 for m in messages if m.get("role") == "assistant")
    base = replay(messages, None, "openai", PRICES["anthropic"])
    assert out.splitlines()[0].endswith(
        f": replayed {rounds} rounds; prices: cached 0.1, uncached 1.25 (anthropic); cache never expires; "
        f"recall: {sum(base.referenced):,} references")
    assert sum(base.referenced) > 0
    table = replay_rows(out)
    assert list(table) == ["none", "default"]
    assert table["none"] == expected_row(messages, None, PRICES["anthropic"], base)
    assert table["none"][2] == "1.000" and table["none"][6] == "1.000" and table["none"][7] == "1.000"
    assert table["default"] == expected_row(messages, [load_rules("default")], PRICES["anthropic"], base)


def test_replay_rules_and_repeated_compare(capsys, convs, rule_files):
    path, messages = convs[0]
    rc, out, _ = run(capsys, "replay", path, "-r", rule_files[1], "--compare", "preset:observation-masking",
                     "--compare", "preset:keep-recent-results")
    assert rc == 0
    table = replay_rows(out)
    assert list(table) == ["none", str(rule_files[1]), "preset:observation-masking", "preset:keep-recent-results"]
    price = PRICES["anthropic"]
    base = replay(messages, None, "openai", price)
    assert table[str(rule_files[1])] == expected_row(messages, [load_rules(str(rule_files[1]))], price, base)
    for name in ("preset:observation-masking", "preset:keep-recent-results"):
        assert table[name] == expected_row(messages, [load_rules(name)], price, base)


def test_replay_compare_without_rules_compares_against_the_default(capsys, convs):
    path, messages = convs[0]
    rc, out, _ = run(capsys, "replay", path, "--compare", "preset:keep-recent-results")
    assert rc == 0
    table = replay_rows(out)
    assert list(table) == ["none", "default", "preset:keep-recent-results"]
    base = replay(messages, None, "openai", PRICES["anthropic"])
    assert table["default"] == expected_row(messages, [load_rules("default")], PRICES["anthropic"], base)


def test_replay_two_rule_files_are_successive_passes(capsys, convs, rule_files):
    path, messages = convs[1]
    rc, out, _ = run(capsys, "replay", path, "-r", rule_files[0], "-r", rule_files[1])
    assert rc == 0
    label = f"{rule_files[0]} + {rule_files[1]}"
    table = replay_rows(out)
    assert list(table) == ["none", label]
    passes = [load_rules(str(f)) for f in rule_files]
    base = replay(messages, None, "openai", PRICES["anthropic"])
    assert table[label] == expected_row(messages, passes, PRICES["anthropic"], base)


@pytest.mark.parametrize("price, cached, uncached, name", [
    ("openai", 0.1, 1.25, "openai"),
    ("openai-legacy", 0.1, 1.0, "openai-legacy"),
    ("anthropic-1h", 0.1, 2.0, "anthropic-1h"),
    ("0.1,1.25", 0.1, 1.25, "0.1,1.25"),
    ("0.25,2", 0.25, 2.0, "0.25,2"),
    ("0.25,2,90s", 0.25, 2.0, "0.25,2,90s"),
])
def test_replay_prices(capsys, convs, rule_files, price, cached, uncached, name):
    path, messages = convs[1]
    rc, out, _ = run(capsys, "replay", path, "-r", rule_files[1], "--price", price)
    assert rc == 0
    assert f"prices: cached {cached}, uncached {uncached} ({name})" in out.splitlines()[0]
    table = replay_rows(out)
    parsed = parse_price(price)
    base = replay(messages, None, "openai", parsed)
    assert table[str(rule_files[1])] == expected_row(messages, [load_rules(str(rule_files[1]))], parsed, base)
    r = replay(messages, [load_rules(str(rule_files[1]))], "openai", parsed)
    assert r.cost == pytest.approx(cached * r.total_cached + uncached * (r.total_prompt - r.total_cached))


def test_replay_custom_price_equals_the_named_one(capsys, convs):
    path, _ = convs[1]
    _, named, _ = run(capsys, "replay", path, "--price", "anthropic")
    _, custom, _ = run(capsys, "replay", path, "--price", "0.1,1.25")
    assert replay_rows(named) == replay_rows(custom)


SUBAGENT = TRACES.parent / "claude-code" / "agent-a7be2f0.jsonl"


def test_replay_cache_expiry_uses_the_log_timestamps(capsys):
    rc, out, err = run(capsys, "replay", SUBAGENT, "--price", "0.1,1.25,5s", "--cache-expiry")
    assert rc == 0 and err == ""
    (conv,) = read_conversations_from(str(SUBAGENT))
    price = parse_price("0.1,1.25,5s")
    cold = cold_rounds(conv.timestamps, round_starts(conv.messages), price.lifetime)
    assert 0 < sum(cold) < len(cold)
    assert f"cache expires after 5s: {sum(cold)} rounds found it expired" in out.splitlines()[0]
    base = replay(conv.messages, None, "anthropic", price).expire(cold)
    default = replay(conv.messages, [load_rules("default")], "anthropic", price).expire(cold)
    table = replay_rows(out)
    assert table["none"] == [str(base.rounds), f"{base.total_prompt:,}", "1.000", f"{base.total_cached:,}",
                             f"{base.total_cached / base.total_prompt:.3f}", f"{base.cost:,.0f}", "1.000", "1.000",
                             "1.000", "0.000"]
    assert table["default"][3] == f"{default.total_cached:,}" and table["default"][6] == f"{default.cost / base.cost:.3f}"
    _, plain, _ = run(capsys, "replay", SUBAGENT, "--price", "0.1,1.25,5s")
    assert "cache never expires" in plain and replay_rows(plain)["none"][3] != table["none"][3]


def test_replay_cache_expiry_without_timestamps_or_lifetime(capsys, convs):
    rc, out, _ = run(capsys, "replay", convs[1][0], "--cache-expiry")
    assert rc == 0 and "no timestamps in this log: cache never expires" in out.splitlines()[0]
    rc, out, err = run(capsys, "replay", convs[1][0], "--cache-expiry", "--price", "0.1,1.25")
    assert rc == 2 and out == "" and "has no cache lifetime" in one_error_line(err)


@pytest.mark.parametrize("price", ["cheap", "0.1", "0.1,1.25,3,4", "0.1,1.25,5d", "0.1,1.25,0", "0.1,-1", "nan,1",
                                   "a,b", ""])
def test_replay_bad_price_is_a_one_line_usage_error(capsys, convs, price):
    rc, out, err = run(capsys, "replay", convs[1][0], "--price", price)
    assert rc == 2 and out == ""
    line = one_error_line(err)
    assert f"--price {price!r}" in line and "anthropic, anthropic-1h, openai, openai-legacy or CACHED,UNCACHED[,LIFETIME]" in line


def test_diff_bad_price_is_a_one_line_usage_error(capsys, convs, rule_files):
    rc, out, err = run(capsys, "diff", rule_files[0], rule_files[1], convs[1][0], "--price", "free")
    assert rc == 2 and out == ""
    assert "--price 'free'" in one_error_line(err)


HAS_MATPLOTLIB = importlib.util.find_spec("matplotlib") is not None


@pytest.mark.skipif(not HAS_MATPLOTLIB, reason="matplotlib (the plot extra) is not installed")
def test_replay_plot_writes_a_png(capsys, convs, tmp_path):
    png = tmp_path / "rounds.png"
    rc, out, err = run(capsys, "replay", convs[1][0], "--plot", png)
    assert rc == 0 and err == "" and "rule set" in out
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.skipif(HAS_MATPLOTLIB, reason="matplotlib is installed")
def test_replay_plot_without_matplotlib_is_a_one_line_error(capsys, convs, tmp_path):
    png = tmp_path / "rounds.png"
    rc, _, err = run(capsys, "replay", convs[1][0], "--plot", png)
    assert rc == 2
    assert "matplotlib" in one_error_line(err)
    assert not png.exists()


def test_replay_plot_needs_png_or_svg(capsys, convs, tmp_path):
    target = tmp_path / "rounds.txt"
    rc, _, err = run(capsys, "replay", convs[1][0], "--plot", target)
    assert rc == 2
    assert ".png or .svg" in one_error_line(err)
    assert not target.exists()


# --- diff -------------------------------------------------------------------------------------


def expected_changes(messages: list, old: Path, new: Path):
    a, b = load_rules(str(old)), load_rules(str(new))
    changes = decision_changes(compact(messages, a).report, compact(messages, b).report)
    costs = [replay(messages, [r], "openai", PRICES["anthropic"]) for r in (a, b)]
    tokens = [compact(messages, r).report.tokens_after for r in (a, b)]
    return changes, costs, tokens


def test_diff_text(capsys, convs, rule_files):
    old, new = rule_files
    rc, out, err = run(capsys, "diff", old, new, convs[0][0], convs[1][0])
    assert rc == 0 and err == ""
    lines = out.splitlines()
    assert lines[0] == f"diff {old} -> {new}"
    totals = [0, 0, 0.0, 0.0]
    kept, referenced, changed = [0, 0], 0, 0
    for path, messages in convs:
        changes, costs, tokens = expected_changes(messages, old, new)
        # keep-ten -> keep-three: exactly the results of age 3..9 change, from keep to placeholder
        decided = compact(messages, load_rules(str(new))).report.passes[0].decisions
        assert changes and {c.item for c in changes} == {d.item for d in decided if d.changed and 3 <= d.age < 10}
        assert all(c.old == "keep-recent: keep" and c.new == "clear: placeholder" for c in changes)
        header = next(i for i, line in enumerate(lines) if line == f"{path}:")
        assert lines[header + 1] == (
            f"{len(changes)} decisions change; tokens after {tokens[0]:,} -> {tokens[1]:,}; replay cost "
            f"{costs[0].cost:,.0f} -> {costs[1].cost:,.0f} ({costs[1].cost / costs[0].cost:.3f}x); recall "
            f"{costs[0].recall:.3f} -> {costs[1].recall:.3f}")
        table = rows("\n".join(lines[header + 3:header + 4 + len(changes)]))
        assert table[0] == ["item", "msg", "role", "tool", "old", "new"]
        assert table[1:] == [[str(c.item), str(c.message), c.role, c.tool or "-", c.old, c.new] for c in changes]
        totals = [totals[0] + tokens[0], totals[1] + tokens[1], totals[2] + costs[0].cost, totals[3] + costs[1].cost]
        kept = [kept[0] + sum(costs[0].kept), kept[1] + sum(costs[1].kept)]
        referenced += sum(costs[0].referenced)
        changed += len(changes)
    assert lines[-1] == (f"total: {changed} decisions change in 2 conversations; tokens after {totals[0]:,} -> {totals[1]:,}; replay cost {totals[2]:,.0f} -> "
                         f"{totals[3]:,.0f} ({totals[3] / totals[2]:.3f}x); recall {kept[0] / referenced:.3f} -> "
                         f"{kept[1] / referenced:.3f}")


def test_diff_markdown(capsys, convs, rule_files):
    old, new = rule_files
    path, messages = convs[0]
    rc, out, _ = run(capsys, "diff", old, new, path, "--output-format", "markdown")
    assert rc == 0
    lines = out.splitlines()
    assert lines[0] == f"## rules-compact diff: `{old}` → `{new}`"
    assert f"### {path}" in lines
    changes, costs, tokens = expected_changes(messages, old, new)
    assert f"{len(changes)} decisions change; tokens after {tokens[0]:,} -> {tokens[1]:,}" in out
    start = lines.index("| item | msg | role | tool | old | new |")
    assert lines[start + 1] == "|---|---|---|---|---|---|"
    body = lines[start + 2:start + 2 + len(changes)]
    assert body == [f"| {c.item} | {c.message} | {c.role} | {c.tool or '-'} | {c.old} | {c.new} |" for c in changes]
    assert lines[-1].startswith(f"**Total**: {len(changes)} decisions change in 1 conversation; tokens after {tokens[0]:,} -> {tokens[1]:,}; replay cost ")


def test_diff_same_rules_changes_nothing(capsys, convs, rule_files):
    path, messages = convs[1]
    rc, out, _ = run(capsys, "diff", rule_files[1], rule_files[1], path)
    assert rc == 0
    assert "0 decisions change" in out and "| item" not in out and "item  msg" not in out
    recall = replay(messages, [load_rules(str(rule_files[1]))], "openai", PRICES["anthropic"]).recall
    assert out.splitlines()[-1].endswith(f"(1.000x); recall {recall:.3f} -> {recall:.3f}")


def test_diff_shows_only_conversations_that_change_unless_all(capsys, convs, rule_files, tmp_path):
    keep3 = rule_files[1]
    keep2 = tmp_path / "keep2.yaml"
    keep2.write_text(KEEP3.replace("lt: 3", "lt: 2"), encoding="utf-8")
    paths = [str(p) for p, _ in convs]
    _, out, _ = run(capsys, "diff", keep3, keep3, *paths)
    assert not any(line in (f"{p}:" for p in paths) for line in out.splitlines())
    assert "2 conversations where no decision changes not shown (--all shows them)" in out
    _, out, _ = run(capsys, "diff", keep3, keep3, *paths, "--all")
    assert [line for line in out.splitlines() if line.endswith(".json:")] == [f"{p}:" for p in paths]
    assert "not shown" not in out
    _, out, _ = run(capsys, "diff", keep3, keep2, paths[0])  # the third newest result alone changes
    assert "\n1 decision changes; tokens after" in out and out.splitlines()[-1].startswith(
        "total: 1 decision changes in 1 conversation;")


def test_diff_says_why_a_rule_set_decided_nothing(capsys, convs, rule_files, tmp_path):
    late = tmp_path / "late.yaml"
    late.write_text(KEEP3.replace("rules:", "trigger: {tokens_over: 100000}\nrules:"), encoding="utf-8")
    path, messages = convs[0]
    tokens = compact(messages, load_rules(str(late))).report.tokens_before
    why = f"not triggered: {tokens:,} tokens ≤ 100,000"
    _, out, _ = run(capsys, "diff", rule_files[1], late, path)
    assert "unchanged (no rule)" not in out and f"new: unchanged ({why})" not in out
    assert f"clear: placeholder  unchanged ({why})" in out
    assert f"new rules {why}" in out
    assert out.splitlines()[-1] == f"{late} decided nothing in any conversation, {why} in the largest"
    _, out, _ = run(capsys, "diff", rule_files[1], late, path, "--json")
    (row,) = [json.loads(line) for line in out.splitlines()]
    assert (row["not_run_old"], row["not_run_new"]) == (None, why)
    change = row["changes"][0]
    assert {k: change[k] for k in ("old_rule", "old_action", "old_changed", "new_rule", "new_action",
                                   "new_changed", "reason")} == {
        "old_rule": "clear", "old_action": "placeholder", "old_changed": True,
        "new_rule": None, "new_action": None, "new_changed": False, "reason": why}


def test_diff_default_against_a_preset_names_rules_and_actions(capsys, convs):
    path, messages = convs[0]
    rc, out, _ = run(capsys, "diff", "default", "preset:observation-masking", path)
    assert rc == 0
    changes, _, _ = expected_changes(messages, "default", "preset:observation-masking")
    assert changes
    for c in changes:
        assert re.search(rf"^\s*{c.item}\s+{c.message}\s+{c.role}\s+.*{re.escape(c.old)}\s+{re.escape(c.new)}$",
                         out, re.M), c
