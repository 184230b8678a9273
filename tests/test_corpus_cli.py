"""Corpora for ``stats``, ``replay`` and ``diff``: folders, globs, bad files skipped, ``--json``
rows (docs/json.md) and ``diff --exit-code``.

The rows are checked against the library (``rules_compact.rows``, ``replay``, ``analysis``) on
short cuts of real mini-swe-agent traces, as in test_measure.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from conftest import ROOT
from rules_compact import compact, load_rules
from rules_compact.analysis import conversation_stats, decision_changes
from rules_compact.cli.inputs import expand_inputs
from rules_compact.replay import PRICES, replay
from test_measure import convs, rows, rule_files, run  # noqa: F401  (fixtures)


def json_lines(out: str) -> list[dict]:
    return [json.loads(line) for line in out.splitlines()]


def error_lines(err: str) -> list[str]:
    lines = err.splitlines()
    assert all(line.startswith("rules-compact: error: ") for line in lines) and "Traceback" not in err
    return lines


# --- inputs -----------------------------------------------------------------------------------


def test_expand_inputs_folders_and_globs(tmp_path):
    for name in ("b.json", "a.jsonl", "sub/c.traj", "sub/deeper/d.json", "notes.txt", ".hidden.json",
                 ".git/e.json"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("[]")
    t = str(tmp_path)
    folder = [os.path.join(t, n) for n in ("a.jsonl", "b.json", "sub/c.traj", "sub/deeper/d.json")]
    assert list(expand_inputs([t])) == folder
    assert list(expand_inputs([f"{t}/*.json*"])) == folder[:2]
    assert list(expand_inputs([f"{t}/**/*.json"])) == [folder[1], folder[3]]
    assert list(expand_inputs([f"{t}/su*"])) == folder[2:]  # a folder matched by a glob is expanded
    assert list(expand_inputs([f"{t}/notes.txt", "-"])) == [f"{t}/notes.txt", "-"]  # files as given
    assert list(expand_inputs([f"{t}/*.yaml"])) == [f"{t}/*.yaml"]  # left for reading to report


def test_a_file_named_like_a_glob_is_a_file(tmp_path):
    odd = tmp_path / "run[1].json"
    odd.write_text("[]")
    assert list(expand_inputs([str(odd)])) == [str(odd)]


# --- folders, globs and bad files ---------------------------------------------------------------


def test_stats_of_a_folder_and_of_a_glob_equal_stats_of_its_files(capsys, convs, rule_files):
    folder = convs[0][0].parent
    _, by_files, _ = run(capsys, "stats", convs[0][0], convs[1][0], "-r", rule_files[1])
    rc, by_folder, err = run(capsys, "stats", folder, "-r", rule_files[1])
    assert rc == 0 and err == "" and by_folder == by_files
    rc, by_glob, _ = run(capsys, "stats", f"{folder}/*.json", "-r", rule_files[1])
    assert rc == 0 and by_glob == by_files


def test_a_bad_file_is_reported_and_skipped_and_the_exit_code_says_so(capsys, convs, rule_files, tmp_path):
    (tmp_path / "broken.json").write_text("{not json")
    (tmp_path / "robot.json").write_text(json.dumps([{"role": "robot", "content": "x"}]))
    rc, out, err = run(capsys, "stats", tmp_path, "-r", rule_files[1])
    assert rc == 2
    table = rows(out)
    assert [r[0] for r in table[1:]] == [str(convs[0][0]), str(convs[1][0]), "total (2)"]  # the others counted
    lines = error_lines(err)
    assert len(lines) == 3
    assert lines[0].startswith(f"rules-compact: error: {tmp_path / 'broken.json'}:1:2: invalid JSON")
    assert lines[1].startswith(f"rules-compact: error: {tmp_path / 'robot.json'}: message 0: unknown role 'robot'")
    assert lines[2] == "rules-compact: error: 2 of 4 inputs failed and are left out of the results above"


@pytest.mark.parametrize("command", ["stats", "replay", "diff"])
def test_every_corpus_command_skips_bad_files(capsys, convs, rule_files, tmp_path, command):
    missing = tmp_path / "gone.json"
    argv = [command, *((rule_files[0], rule_files[1]) if command == "diff" else ()), missing, convs[0][0]]
    rc, out, err = run(capsys, *argv, "--json")
    assert rc == 2
    assert {row["conversation"] for row in json_lines(out)} == {str(convs[0][0])}
    assert error_lines(err)[0] == f"rules-compact: error: {missing}: cannot read: No such file or directory"


@pytest.mark.parametrize("pattern,why", [("*.yaml", "no file matches"),
                                         ("empty", "a folder with no conversation file (.json, .jsonl, .traj)")])
def test_a_glob_or_folder_with_no_file_is_a_failed_input(capsys, tmp_path, pattern, why):
    (tmp_path / "empty").mkdir()
    rc, out, err = run(capsys, "stats", tmp_path / pattern)
    assert (rc, out, error_lines(err)) == (2, "", [f"rules-compact: error: {tmp_path / pattern}: {why}"])


@pytest.mark.parametrize("jobs", ["1", "2"])
@pytest.mark.parametrize("command", ["stats", "replay", "diff"])
def test_a_fifo_in_a_folder_is_skipped_and_reported(convs, rule_files, command, jobs):
    """A FIFO named ``*.json`` in a folder blocked every corpus command forever: only a path
    named on the command line is read whatever it is (a subprocess, so that a regression fails
    on the timeout instead of hanging)."""
    folder = convs[0][0].parent
    os.mkfifo(folder / "pipe.json")
    argv = [command, *((rule_files[0], rule_files[1]) if command == "diff" else ()), folder, "--json", "--jobs", jobs]
    done = subprocess.run([sys.executable, "-m", "rules_compact", *map(str, argv)], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    assert {row["conversation"] for row in json_lines(done.stdout)} == {str(p) for p, _ in convs}
    assert done.stderr == (f"rules-compact: warning: {folder / 'pipe.json'}: is a FIFO, not a regular file; skipped "
                           "(name it on the command line to read it)\n")


def test_a_file_name_with_a_newline_keeps_the_table_on_its_lines(capsys, convs):
    odd = convs[0][0].parent / "two\nlines.json"
    convs[0][0].rename(odd)
    rc, out, err = run(capsys, "stats", odd.parent)
    assert rc == 0, err
    assert [r[0] for r in rows(out)] == ["conversation", str(convs[1][0]), str(odd).replace("\n", "\\n"), "total (2)"]
    assert len(out.splitlines()) == 4  # header, two rows, total


# --- --json rows ------------------------------------------------------------------------------


def test_stats_json_rows(capsys, convs, rule_files):
    rc, out, err = run(capsys, "stats", convs[0][0], convs[1][0], "-r", rule_files[1], "--json")
    assert rc == 0 and err == ""
    got = json_lines(out)
    rules = load_rules(str(rule_files[1]))
    assert len(got) == 2
    for row, (path, messages) in zip(got, convs):
        stats = conversation_stats(str(path), messages, [rules], None)
        before, after = stats.report.tokens_before, stats.report.tokens_after
        assert row == {"conversation": str(path), "format": "openai", "messages": len(messages),
                       "tool_results": stats.tool_results, "tokens_before": before, "tokens_after": after,
                       "saved": before - after, "saved_share": (before - after) / before,
                       "saved_by_rule": {"clear": stats.saved_by_rule["clear"]}, "over_budget": False}


def test_replay_json_rows_and_a_total_for_several_conversations(capsys, convs, rule_files):
    rc, out, err = run(capsys, "replay", convs[0][0].parent, "-r", rule_files[1], "--json")
    assert rc == 0 and err == ""
    got = json_lines(out)
    rules = load_rules(str(rule_files[1]))
    assert [(r["conversation"], r["rule_set"]) for r in got] == [
        (str(p), label) for p, _ in convs for label in ("none", str(rule_files[1]))]
    for row in got:
        messages = dict((str(p), m) for p, m in convs)[row["conversation"]]
        r = replay(messages, None if row["rule_set"] == "none" else [rules], "openai", PRICES["anthropic"])
        assert row == {"conversation": row["conversation"], "rule_set": row["rule_set"], "rounds": r.rounds,
                       "prompt_tokens": r.total_prompt, "cached_tokens": r.total_cached, "cost": r.cost,
                       "references": sum(r.referenced), "kept_references": sum(r.kept), "cold_rounds": None,
                       "cleared_results": r.cleared, "refetched_results": r.refetched, "billed": None,
                       "recall": r.recall, "recoverable_references": sum(r.recoverable),
                       "recoverable_recall": r.recoverable_recall, "regret": r.regret}
    _, text, _ = run(capsys, "replay", convs[0][0].parent, "-r", rule_files[1])
    lines = text.splitlines()
    total = rows("\n".join(lines[lines.index("total: 2 conversations") + 1:]))
    assert total[1][:3] == ["none", f"{sum(r['rounds'] for r in got[::2]):,}",
                            f"{sum(r['prompt_tokens'] for r in got[::2]):,}"]
    assert total[2][2] == f"{sum(r['prompt_tokens'] for r in got[1::2]):,}"


def test_diff_json_rows(capsys, convs, rule_files):
    old, new = rule_files
    rc, out, err = run(capsys, "diff", old, new, convs[0][0], "--json")
    assert rc == 0 and err == ""
    (row,) = json_lines(out)
    messages = convs[0][1]
    a, b = (compact(messages, [load_rules(str(f))]).report for f in rule_files)
    changes = decision_changes(a, b)
    assert row["conversation"] == str(convs[0][0]) and row["decisions_changed"] == len(changes) > 0
    assert row["changes"] == [{"item": c.item, "message": c.message, "role": c.role, "tool": c.tool, "old": c.old,
                               "new": c.new, "old_rule": c.old_rule, "old_action": c.old_action,
                               "new_rule": c.new_rule, "new_action": c.new_action, "old_changed": c.old_changed,
                               "new_changed": c.new_changed, "reason": c.reason} for c in changes]
    assert (row["tokens_after_old"], row["tokens_after_new"]) == (a.tokens_after, b.tokens_after)
    costs = [replay(messages, [load_rules(str(f))], "openai", PRICES["anthropic"]) for f in rule_files]
    assert (row["cost_old"], row["cost_new"]) == (costs[0].cost, costs[1].cost)
    assert (row["recall_old"], row["recall_new"]) == (costs[0].recall, costs[1].recall)
    assert row["references"] == sum(costs[0].referenced)


# --- diff --exit-code ---------------------------------------------------------------------------


def test_diff_exit_code(capsys, convs, rule_files, tmp_path):
    old, new = rule_files
    assert run(capsys, "diff", old, new, convs[0][0], "--exit-code")[0] == 1  # decisions change
    assert run(capsys, "diff", old, new, convs[0][0])[0] == 0  # without the option: 0
    assert run(capsys, "diff", new, new, convs[0][0], "--exit-code")[0] == 0  # nothing changes
    rc, _, err = run(capsys, "diff", old, new, convs[0][0], tmp_path / "gone.json", "--exit-code")
    assert rc == 2 and "gone.json" in err  # a failed input says more than a change


# --- replay --plot is checked first ------------------------------------------------------------


def test_replay_plot_checks_the_file_type_before_reading(capsys, tmp_path):
    rc, out, err = run(capsys, "replay", tmp_path / "missing.json", "--plot", tmp_path / "out.pdf")
    assert (rc, out) == (2, "")
    assert error_lines(err) == [f"rules-compact: error: {tmp_path / 'out.pdf'}: --plot writes .png or .svg files"]


def test_replay_plot_checks_matplotlib_before_reading(capsys, tmp_path, monkeypatch):
    import builtins

    real = builtins.__import__

    def no_matplotlib(name, *args, **kwargs):
        if name.startswith("matplotlib"):
            raise ImportError(name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    rc, out, err = run(capsys, "replay", tmp_path / "missing.json", "--plot", tmp_path / "out.png")
    assert (rc, out) == (2, "")
    assert error_lines(err) == ["rules-compact: error: --plot needs matplotlib: pip install 'rules-compact[plot]'"]


def test_replay_plot_of_several_conversations_writes_one_file_each(capsys, convs, tmp_path):
    pytest.importorskip("matplotlib")
    rc, _, err = run(capsys, "replay", convs[0][0], convs[1][0], "--plot", tmp_path / "rounds.png")
    assert rc == 0 and err == ""
    assert (tmp_path / "rounds-1.png").stat().st_size > 0 and (tmp_path / "rounds-2.png").stat().st_size > 0
    assert not (tmp_path / "rounds.png").exists()
