"""``explain`` as a review tool (filters, ages in the rule file's units, reasoning in turn sizes,
the legend, JSON rows) and ``apply``'s summary when nothing changed and ``--fail-over-budget``."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from rules_compact import compact, load_rules
from rules_compact.cli import main

TRACE = Path(__file__).parent / "data" / "traces" / "mini-swe-agent" / "deepseek_reasoner_dev__sqlfluff__sqlfluff-1763.traj.json"

USER_TURNS = """\
version: 1
name: by-turns
rules:
  - {name: keep-last-turn, match: {age: {unit: user_turns, lt: 1}}, action: keep}
  - {name: strip-old, match: {role: assistant, age: {unit: tokens, gt: 10}}, action: strip-text}
  - {name: clear, match: {role: tool}, action: placeholder}
"""


def conversation(rounds: int) -> list:
    """``rounds`` user turns, each with an assistant turn (reasoning and a call) and its result."""
    messages = [{"role": "system", "content": "You are a coding agent."}]
    for i in range(rounds):
        messages += [
            {"role": "user", "content": f"step {i}"},
            {"role": "assistant", "content": f"I will look at file {i}.", "reasoning_content": "thinking " * 40,
             "tool_calls": [{"id": f"c{i}", "type": "function",
                             "function": {"name": "read", "arguments": json.dumps({"path": f"f{i}.py"})}}]},
            {"role": "tool", "tool_call_id": f"c{i}", "content": f"line of file {i}\n" * 60},
        ]
    return messages


def run(capsys, *argv) -> tuple[int, str, str]:
    try:
        rc = main([str(a) for a in argv])
    except SystemExit as exc:
        rc = exc.code
    out = capsys.readouterr()
    return rc, out.out, out.err


@pytest.fixture
def files(tmp_path):
    (tmp_path / "conv.json").write_text(json.dumps(conversation(4)), encoding="utf-8")
    (tmp_path / "turns.yaml").write_text(USER_TURNS, encoding="utf-8")
    return tmp_path / "conv.json", tmp_path / "turns.yaml"


def table_rows(out: str) -> tuple[list[str], list[list[str]]]:
    """The header and the rows of the (first) explain table, cells split on 2+ spaces."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.lstrip().startswith("#  "))
    header = re.split(r"\s{2,}", lines[start].strip())
    body = []
    for line in lines[start + 1:]:
        if not re.match(r"\s*\d+\s", line):
            break
        body.append(re.split(r"\s{2,}", line.strip()))
    return header, body


def decisions(path, rules):
    messages = json.loads(Path(path).read_text(encoding="utf-8"))
    return compact(messages, [load_rules(str(rules))]).report.passes[0].decisions


# --- filters ----------------------------------------------------------------------------------


def test_explain_filters(capsys, files):
    conv, rules = files
    made = decisions(conv, rules)
    _, out, _ = run(capsys, "explain", conv, "-r", rules)
    _, every = table_rows(out)
    assert len(every) == len(made) == 8

    rc, out, err = run(capsys, "explain", conv, "-r", rules, "--changed")
    _, rows = table_rows(out)
    assert rc == 0 and err == ""
    assert [int(r[0]) for r in rows] == [d.item for d in made if d.changed] != []
    assert f"showing {len(rows)} of 8 items" in out

    _, out, _ = run(capsys, "explain", conv, "-r", rules, "--rule", "clear")
    assert [int(r[0]) for r in table_rows(out)[1]] == [d.item for d in made if d.rule == "clear"]

    _, out, _ = run(capsys, "explain", conv, "-r", rules, "--role", "assistant")
    assert {r[2] for r in table_rows(out)[1]} == {"assistant"}

    _, out, _ = run(capsys, "explain", conv, "-r", rules, "--role", "tool", "--rule", "strip-old")
    assert "no item matches" in out and "showing 0 of 8 items" in out


def test_explain_unknown_rule_names_the_rules(capsys, files):
    conv, rules = files
    rc, out, err = run(capsys, "explain", conv, "-r", rules, "--rule", "clera")
    assert (rc, out) == (2, "")
    assert err == ("rules-compact: error: --rule 'clera': no rule of that name; the rules: keep-last-turn, "
                   "strip-old, clear\n")


def test_explain_json_rows_are_the_report(capsys, files):
    conv, rules = files
    rc, out, err = run(capsys, "explain", conv, "-r", rules, "--json", "--changed")
    assert rc == 0 and err == ""
    rows = [json.loads(line) for line in out.splitlines()]
    expected = [{"conversation": str(conv), "ruleset": "by-turns", **d.to_dict()}
                for d in decisions(conv, rules) if d.changed]
    assert rows == expected and rows


# --- what the table shows -------------------------------------------------------------------------


def test_explain_shows_an_age_column_per_unit_the_rules_count(capsys, files):
    conv, rules = files
    made = decisions(conv, rules)
    _, out, _ = run(capsys, "explain", conv, "-r", rules)
    header, rows = table_rows(out)
    assert header[5:7] == ["age user_turns", "age tokens"]  # in AGE_UNITS order, not tool_results
    for d, row in zip(made, rows):
        assert row[5:7] == [f"{d.ages['user_turns']:,}", f"{d.ages['tokens']:,}"]
    assert [d.ages["user_turns"] for d in made] == [3, 3, 2, 2, 1, 1, 0, 0]

    _, out, _ = run(capsys, "explain", conv)  # the default rules count tool results
    assert "age tool_results" in table_rows(out)[0]


def test_explain_counts_reasoning_in_a_turns_size_and_says_what_was_stripped(capsys, files):
    conv, rules = files
    _, out, _ = run(capsys, "explain", conv, "-r", rules, "--rule", "strip-old", "--changed")
    _, rows = table_rows(out)
    reasoning, text = len("thinking " * 40), len("I will look at file 0.")
    assert rows
    for row in rows:
        assert row[4] == f"{reasoning + text:,}"  # not "chars 0"
        assert row[-1] == f"stripped: reasoning {reasoning:,} -> 0, text {text} -> 0 chars"
        assert int(row[-2]) > 0


def test_explain_legend_and_no_zero_saved_lines(capsys):
    rc, out, _ = run(capsys, "explain", TRACE)
    assert rc == 0
    assert "(cache-breakpoint)" in out  # matched on openai messages, changed nothing
    assert out.rstrip().endswith("(action): the rule matched, but its action changed nothing "
                                 "(the note says why when it can)")
    assert re.findall(r"saved by [\w-]+: 0$", out, re.M) == []
    assert "saved by strip-old-reasoning: " in out

    _, out, _ = run(capsys, "explain", TRACE, "--changed")  # no row in parentheses: no legend
    assert "(action):" not in out


# --- apply ------------------------------------------------------------------------------------


def summary(err: str) -> str:
    (line,) = [line for line in err.splitlines() if "items changed" in line]
    return line


@pytest.mark.parametrize("rules,why", [
    ("version: 1\nname: t\ntrigger: {tokens_over: 100000}\nrules:\n"
     "  - {name: clear, match: {role: tool}, action: placeholder}\n",
     r"not triggered: [\d,]+ tokens ≤ 100,000"),
    ("version: 1\nname: t\ntrigger: {tool_results_over: 50}\nrules:\n"
     "  - {name: clear, match: {role: tool}, action: placeholder}\n",
     r"not triggered: 4 tool results ≤ 50"),
    ("version: 1\nname: t\nrules:\n  - {name: keep, match: {role: tool}, action: keep}\n",
     "no rule changed anything"),
    ("version: 1\nname: t\nbudget: {min_cleared_tokens: 100000}\nrules:\n"
     "  - {name: clear, match: {role: tool}, action: placeholder}\n",
     r"minimum gate: would clear [\d,]+ < 100,000 tokens"),
], ids=["tokens", "results", "nothing-matched", "gate"])
def test_apply_says_why_nothing_changed(capsys, files, tmp_path, rules, why):
    conv, _ = files
    (tmp_path / "r.yaml").write_text(rules, encoding="utf-8")
    rc, _, err = run(capsys, "apply", conv, "-r", tmp_path / "r.yaml")
    assert rc == 0
    assert re.fullmatch(r"rules-compact: 0 items changed; .* estimated tokens \(\+0\.0%\); " + why, summary(err))


def test_apply_names_each_pass_when_several_changed_nothing(capsys, files):
    conv, _ = files
    keep = conv.parent / "keep.yaml"
    keep.write_text("version: 1\nname: keeper\nrules:\n  - {name: k, match: {role: tool}, action: keep}\n")
    _, _, err = run(capsys, "apply", conv, "-r", keep, "-r", keep)
    assert summary(err).endswith("; keeper: no rule changed anything; keeper: no rule changed anything")


def test_apply_summary_has_no_reason_when_something_changed(capsys, files):
    conv, rules = files
    _, _, err = run(capsys, "apply", conv, "-r", rules)
    assert summary(err).endswith("estimated tokens (" + summary(err).rsplit("(", 1)[1])


def test_apply_fail_over_budget(capsys, files, tmp_path):
    conv, _ = files
    rules = tmp_path / "budget.yaml"
    rules.write_text("version: 1\nname: b\ndefaults: {over_budget_tokens: 10}\nrules:\n"
                     "  - {name: clear, match: {role: tool}, action: placeholder}\n", encoding="utf-8")
    out = tmp_path / "out.json"
    rc, _, err = run(capsys, "apply", conv, "-r", rules, "-o", out, "--fail-over-budget")
    assert rc == 3 and "still over budget" in err
    assert json.loads(out.read_text())  # written all the same
    assert run(capsys, "apply", conv, "-r", rules, "-o", out)[0] == 0  # without the option: a warning only
    roomy = tmp_path / "roomy.yaml"
    roomy.write_text(rules.read_text().replace("over_budget_tokens: 10", "over_budget_tokens: 100000"))
    assert run(capsys, "apply", conv, "-r", roomy, "-o", out, "--fail-over-budget")[0] == 0


# --- where errors -------------------------------------------------------------------------------


def test_explain_warns_of_a_where_expression_that_fails_on_the_data(capsys, files, tmp_path):
    conv, _ = files
    rules = tmp_path / "where.yaml"
    rules.write_text("version: 1\nname: w\nrules:\n"
                     "  - {name: long, match: {role: tool, where: 'length(args.missing) > `1`'}, action: placeholder}\n",
                     encoding="utf-8")
    warning = "rule 'long': where 'length(args.missing) > `1`' failed on 4 items (JMESPath: In function length()"
    rc, out, err = run(capsys, "explain", conv, "-r", rules)
    assert rc == 0 and err == ""
    assert [line for line in out.splitlines() if line.startswith("warning: ")] == [
        next(line for line in out.splitlines() if line.startswith(f"warning: {warning}"))]
    assert out.count("failed on") == 1 and "which count as no match" in out
    rc, out, err = run(capsys, "explain", conv, "-r", rules, "--json")
    assert rc == 0 and err.startswith(f"rules-compact: warning: {conv}: {warning}")
    assert len(err.splitlines()) == 1


# --- several inputs, the text the model gets, a rule that decided nothing, help -----------------


def test_explain_takes_files_folders_and_globs(capsys, files, tmp_path):
    conv, rules = files
    other = tmp_path / "more" / "conv2.json"
    other.parent.mkdir()
    other.write_text(json.dumps(conversation(2)), encoding="utf-8")
    for inputs in ([conv, other], [tmp_path], [str(tmp_path / "**" / "*.json")]):
        rc, out, err = run(capsys, "explain", *inputs, "-r", rules, "--json")
        assert rc == 0 and err == ""
        assert sorted({json.loads(line)["conversation"] for line in out.splitlines()}) == sorted([str(conv), str(other)])
    rc, out, err = run(capsys, "explain", conv, tmp_path / "gone.json", "-r", rules)
    assert rc == 2 and f"{conv}: 13 messages" in out and "gone.json" in err


def test_explain_show_text_prints_what_the_model_gets(capsys, files):
    conv, rules = files
    rc, out, _ = run(capsys, "explain", conv, "-r", rules, "--changed", "--show-text")
    assert rc == 0
    text = out.split("text the model gets:\n", 1)[1]
    made = [d for d in decisions(conv, rules) if d.changed]
    headings = [line for line in text.splitlines() if line.startswith("#")]
    assert headings == [f"#{d.item} (message {d.message}, {'tool read' if d.role == 'tool' else 'assistant turn'}):"
                        for d in made]
    assert "    [Previous: used read]" in text.splitlines()
    assert "text the model gets" not in run(capsys, "explain", conv, "-r", rules, "--changed")[1]


def test_explain_a_rule_that_decided_nothing_says_so(capsys, files, tmp_path):
    conv, _ = files
    rules = tmp_path / "r.yaml"
    rules.write_text(USER_TURNS.replace("lt: 1", "lt: 100"), encoding="utf-8")  # keep-last-turn takes all
    rc, out, _ = run(capsys, "explain", conv, "-r", rules, "--rule", "clear")
    assert rc == 0 and "rule clear decided nothing" in out and "no item matches" not in out


def test_every_positional_argument_has_help():
    from rules_compact.cli import build_parser

    parser = build_parser()
    commands = next(a for a in parser._actions if a.dest == "command" or a.__class__.__name__ == "_SubParsersAction")
    missing = [f"{name} {action.metavar or action.dest}" for name, sub in commands.choices.items()
               for action in sub._actions if not action.option_strings and not action.help]
    assert missing == []
