"""Re-fetch regret (rules_compact.regret) on hand-made histories whose answers are known.

Each history is OpenAI Chat: a round ends before every assistant message, and its response is
that message (with its calls). Regret is re-fetched / cleared results over the whole replay.
"""

from __future__ import annotations

import json

import pytest

from rules_compact import load_rules
from rules_compact.formats import FORMATS
from rules_compact.regret import Refetches
from rules_compact.replay import PRICES, StepSchedules, replay, round_starts
from rules_compact.rows import replay_rows, replay_total

ANTHROPIC = PRICES["anthropic"]


def call(call_id: str, name: str = "read", **args) -> dict:
    return {"role": "assistant", "content": None,
            "tool_calls": [{"id": call_id, "type": "function",
                            "function": {"name": name, "arguments": json.dumps(args)}}]}


def result(call_id: str, content: str = "line\n" * 20) -> dict:
    return {"role": "tool", "tool_call_id": call_id, "content": content}


def rules(text: str):
    return load_rules("version: 1\nname: test\n" + text)


CLEAR_ALL = rules("rules:\n  - {name: clear, match: {role: tool}, action: {placeholder: '[x]'}}\n")
KEEP_NEWEST = rules("rules:\n  - {name: clear-old, match: {role: tool, age: {unit: tool_results, gte: 1}}, "
                    "action: {placeholder: '[x]'}}\n")  # every result but the newest
TRUNCATE = rules("rules:\n  - {name: cut, match: {role: tool}, action: {truncate: {head: 10, tail: 10}}}\n")
BREAKPOINT = rules("rules:\n  - {name: mark, match: {role: tool}, action: cache-breakpoint}\n")

TASK = {"role": "user", "content": "Fix the bug."}


def regret_of(messages: list, ruleset) -> tuple[int, int, float]:
    r = replay(messages, [ruleset], "openai", ANTHROPIC, "x")
    return r.cleared, r.refetched, r.regret


def test_no_compaction_clears_nothing_and_regrets_nothing():
    messages = [TASK, call("a", path="x.py"), result("a"), call("b", path="x.py"), result("b"),
                {"role": "assistant", "content": "done"}]
    r = replay(messages, None, "openai", ANTHROPIC)
    assert (r.cleared, r.refetched, r.regret) == (0, 0, 0.0)


def test_a_call_made_again_while_its_result_is_cleared_is_regret():
    # round 1's prompt clears a's result; its response reads x.py again: a regrets; b is cleared
    # from round 2 on and never asked for again
    messages = [TASK, call("a", path="x.py"), result("a"), call("b", path="x.py"), result("b"),
                {"role": "assistant", "content": "done"}]
    assert regret_of(messages, CLEAR_ALL) == (2, 1, 0.5)


def test_no_call_made_again_is_no_regret():
    messages = [TASK, call("a", path="x.py"), result("a"), call("b", path="y.py"), result("b"),
                {"role": "assistant", "content": "done"}]
    assert regret_of(messages, CLEAR_ALL) == (2, 0, 0.0)


def test_arguments_compare_canonically_and_by_tool():
    same = [TASK, call("a", path="x.py", limit=5), result("a"),
            {"role": "assistant", "content": None, "tool_calls": [{"id": "b", "type": "function", "function": {
                "name": "read", "arguments": '{ "limit": 5,  "path": "x.py" }'}}]}, result("b")]
    assert regret_of(same, CLEAR_ALL)[1] == 1
    other_tool = [TASK, call("a", path="x.py"), result("a"), call("b", "cat", path="x.py"), result("b")]
    assert regret_of(other_tool, CLEAR_ALL)[1] == 0
    other_args = [TASK, call("a", path="x.py"), result("a"), call("b", path="x.py", limit=5), result("b")]
    assert regret_of(other_args, CLEAR_ALL)[1] == 0


def test_only_a_repeat_while_the_result_is_hidden_counts():
    # KEEP_NEWEST hides every result but the newest. The call of a is made again at round 2
    # while a is hidden (c is newest): regret. Made at round 1, a is still the newest, shown.
    hidden = [TASK, call("a", path="x.py"), result("a"), call("c", path="y.py"), result("c"),
              call("b", path="x.py"), result("b"), {"role": "assistant", "content": "done"}]
    assert regret_of(hidden, KEEP_NEWEST) == (2, 1, 0.5)  # a and c cleared (b is newest at the end)
    shown = [TASK, call("a", path="x.py"), result("a"), call("b", path="x.py"), result("b"),
             call("c", path="y.py"), result("c"), {"role": "assistant", "content": "done"}]
    assert regret_of(shown, KEEP_NEWEST) == (2, 0, 0.0)


#: hides the results of the latest user turn only: a result shows again once the user speaks
CLEAR_TAIL = rules("rules:\n  - {name: clear-tail, match: {role: tool, in_tail: true}, action: {placeholder: '[x]'}}\n")


def test_a_call_made_again_after_the_result_became_visible_again_does_not_count():
    messages = [TASK, call("a", path="x.py"), result("a"), {"role": "assistant", "content": "Shall I go on?"},
                {"role": "user", "content": "Yes."}, call("b", path="x.py"), result("b")]
    # round 1 hides a; round 2 (after the user's yes) shows it again, and its response reads x.py
    assert regret_of(messages, CLEAR_TAIL) == (1, 0, 0.0)
    # the same repeat made in round 1, while a is hidden, counts
    repeat = [TASK, call("a", path="x.py"), result("a"), call("b", path="x.py"), result("b")]
    assert regret_of(repeat, CLEAR_TAIL) == (1, 1, 1.0)


def test_an_earlier_result_of_the_call_in_view_means_no_regret():
    # a (x.py) is hidden, b (x.py again) is the newest and shown when c repeats the call: the
    # agent had the content in view
    messages = [TASK, call("a", path="x.py"), result("a"), call("b", path="x.py"), result("b"),
                call("c", path="x.py"), result("c")]
    fetches = Refetches(messages, FORMATS["openai"], round_starts(messages, "openai"))
    # round 2 (before c's call): a hidden, b shown
    prompt = [TASK, messages[1], {**messages[2], "content": "[x]"}, messages[3], messages[4]]
    hidden, again = fetches.observe(2, prompt)
    assert hidden == {0} and again == set()
    # both hidden: both regret
    prompt[4] = {**messages[4], "content": "[x]"}
    assert fetches.observe(2, prompt) == ({0, 1}, {0, 1})


def test_a_truncated_result_is_cleared_a_breakpoint_is_not():
    messages = [TASK, call("a", path="x.py"), result("a"), call("b", path="x.py"), result("b")]
    assert regret_of(messages, TRUNCATE) == (1, 1, 1.0)  # b's result is never shown in a prompt
    anthropic = [TASK,
                 {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "read",
                                                    "input": {"path": "x.py"}}]},
                 {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": "line\n" * 20}]},
                 {"role": "assistant", "content": [{"type": "tool_use", "id": "b", "name": "read",
                                                    "input": {"path": "x.py"}}]}]
    r = replay(anthropic, [BREAKPOINT], "anthropic", ANTHROPIC, "x")
    assert (r.cleared, r.refetched) == (0, 0)
    r = replay(anthropic, [CLEAR_ALL], "anthropic", ANTHROPIC, "x")
    assert (r.cleared, r.refetched) == (1, 1)


def test_results_without_a_call_are_left_out():
    messages = [TASK, result("ghost"), call("a", path="x.py"), result("a")]
    assert regret_of(messages, CLEAR_ALL) == (0, 0, 0.0)


def test_rows_carry_regret_and_totals_pool_it():
    one = [TASK, call("a", path="x.py"), result("a"), call("b", path="x.py"), result("b"),
           {"role": "assistant", "content": "done"}]
    two = [TASK, call("a", path="x.py"), result("a"), call("b", path="y.py"), result("b"),
           {"role": "assistant", "content": "done"}]
    sets = [("none", None), ("clear", [CLEAR_ALL])]
    rows = replay_rows("one", one, "openai", sets, ANTHROPIC) + replay_rows("two", two, "openai", sets, ANTHROPIC)
    assert [(r.cleared_results, r.refetched_results) for r in rows] == [(0, 0), (2, 1), (0, 0), (2, 0)]
    assert rows[1].to_dict()["regret"] == 0.5
    total = replay_total(rows)[1]
    assert (total.cleared_results, total.refetched_results, total.regret) == (4, 1, 0.25)


def test_a_schedule_replay_counts_regret_like_the_replay():
    messages = [TASK, call("a", path="x.py"), result("a"), call("b", path="x.py"), result("b"),
                {"role": "assistant", "content": "done"}]
    schedules = StepSchedules(messages, CLEAR_ALL, "openai")
    at_end = schedules.replay(round_starts(messages, "openai"), ANTHROPIC)
    assert (at_end.cleared, at_end.refetched) == regret_of(messages, CLEAR_ALL)[:2]
    never = schedules.replay([0, 0, 0], ANTHROPIC)
    assert (never.cleared, never.refetched) == (0, 0)


# --- the definition, brute force, on generated conversations and rule files ----------------------

from conftest import property_settings  # noqa: E402
from hypothesis import given  # noqa: E402
from strategies import conversations, rule_files, to_ruleset  # noqa: E402

from rules_compact import compact  # noqa: E402
from rules_compact.regret import call_key  # noqa: E402
from rules_compact.recall import response_spans  # noqa: E402


def brute_force(messages: list, fmt: str, ruleset) -> tuple[int, int]:
    """(cleared, refetched) straight from the definition: each round's prompt compacted on its own."""
    form = FORMATS[fmt]
    items = [i for i in form.items(messages) if i.kind == "tool_result" and i.call is not None and not i.observation]
    results = [(i.msg_index, i.block_index, call_key(i.tool_name, i.call)) for i in items]
    cleared, refetched = set(), set()
    starts = round_starts(messages, fmt)
    for (begin, stop), end in zip(response_spans(messages, form, starts), starts):
        prompt = compact(messages[:end], [ruleset], format=fmt).messages
        hidden = {n for n, (m, b, _) in enumerate(results)
                  if m < end and form.result_text(prompt[m], b) != form.result_text(messages[m], b)}
        cleared |= hidden
        for key in {call_key(name, call) for msg in messages[begin:stop] for _, name, call in form.calls(msg)}:
            earlier = {n for n, (m, _, k) in enumerate(results) if k == key and m < end}
            if earlier and earlier <= hidden:
                refetched |= earlier
    return len(cleared), len(refetched)


@property_settings(0.5)
@given(conversations(), rule_files())
def test_regret_is_its_definition(conv, rule_file):
    fmt, messages = conv
    ruleset = to_ruleset(rule_file)
    r = replay(messages, [ruleset], fmt, ANTHROPIC, "x")
    assert (r.cleared, r.refetched) == brute_force(messages, fmt, ruleset)
    assert 0 <= r.refetched <= r.cleared and 0.0 <= r.regret <= 1.0
