"""Compactor: in an agent loop it gives exactly what ``compact`` gives, while reusing work."""

from __future__ import annotations

import copy
import json

import pytest
from hypothesis import event, given, note
from hypothesis import strategies as st

from conftest import ROOT, TRACES, load_json, property_settings, thorough
from rules_compact import Compactor, compact, load_rules, parse_rules
from rules_compact.incremental import compactor as compactor_module, held
from rules_compact.readers import read_conversations
from rules_compact.replay import round_starts
from strategies import (anthropic_conversations, conversations, openai_conversations, rule_files,
                        settling_rule_files, to_ruleset)

PRESETS = ["default", "preset:keep-recent-results", "preset:observation-masking", "preset:langchain-clear-tool-uses",
           "preset:anthropic-clear-tool-uses", "preset:strip-tool-turn-reasoning-selective",
           "preset:opencode-prune", "preset:count-triggered-prune"]
EXAMPLES = property_settings(0.5)


def _same(got, want) -> None:
    assert got.messages == want.messages
    assert json.dumps(got.report.to_dict()) == json.dumps(want.report.to_dict())


MINI_SWE_AGENT = TRACES / "mini-swe-agent" / "deepseek_chat_dev_rerun__pylint-dev__astroid-1333.traj.json"


def _mini_swe_agent() -> list:
    return read_conversations(MINI_SWE_AGENT.read_bytes(), MINI_SWE_AGENT.name)[0].messages


@pytest.mark.parametrize("rules", PRESETS)
def test_an_agent_loop_gets_what_compact_gives_every_round(rules):
    messages = _mini_swe_agent()
    ruleset = load_rules(rules)
    compactors = [Compactor(ruleset, verify=True), Compactor(ruleset, verify=False)]
    ends = round_starts(messages)
    for n, end in enumerate(ends):
        history = messages[:end]
        got = [compactor(history) for compactor in compactors]  # every round, as an agent calls it
        if thorough() or n % 3 == 0 or n == len(ends) - 1:  # compared with compact() on every third
            want = compact(history, ruleset)
            for result in got:
                _same(result, want)


def test_claude_code_session_rounds_match_compact():
    path = next(p for p in sorted((TRACES / "claude-code").iterdir()) if p.suffix == ".jsonl")
    conv = read_conversations(path.read_bytes(), path.name)[0]
    ruleset = load_rules("preset:anthropic-clear-tool-uses")
    compactor = Compactor(ruleset, format=conv.format)
    for end in round_starts(conv.messages):
        history = conv.messages[:end]
        _same(compactor(history), compact(history, ruleset, format=conv.format))


def test_resuming_skips_the_settled_history():
    """keep-recent-results settles every result 10 results old: later rounds evaluate only the rest."""
    messages = _mini_swe_agent()
    compactor = Compactor("preset:keep-recent-results")
    ends = round_starts(messages)
    for end in ends:
        compactor(messages[:end])
    settled = compactor._memos[0].settled
    assert settled is not None and settled.start > ends[-1] // 2


def test_an_edit_in_place_is_noticed():
    messages = copy.deepcopy(_mini_swe_agent())
    compactor = Compactor("preset:keep-recent-results")
    compactor(messages)
    old = next(m for m in messages if m["role"] == "tool")
    old["content"] = "short now"  # an edit in place of a result the rules had cleared
    _same(compactor(messages), compact(messages, "preset:keep-recent-results"))
    assert "short now" in [m.get("content") for m in compactor(messages).messages]
    call = next(m for m in messages if m.get("tool_calls"))
    call["tool_calls"][0]["function"]["arguments"] = '{"command": "ls"}'  # deep inside a message
    _same(compactor(messages), compact(messages, "preset:keep-recent-results"))


def test_an_edit_to_an_equal_value_is_not_noticed_as_documented():
    """verify=True compares copies with ==: True -> 1 goes unnoticed (docs/rules.md); reset() helps."""
    rules = parse_rules("version: 1\nname: t\nrules:\n  - {name: clear, match: {role: tool, is_error: false, "
                        "age: {unit: tool_results, gte: 2}}, action: placeholder}\n", "t")
    messages = [{"role": "user", "content": "go"}]
    for i in range(8):
        messages += [{"role": "assistant", "content": None, "tool_calls": [
                         {"id": f"c{i}", "type": "function", "function": {"name": "bash", "arguments": "{}"}}]},
                     {"role": "tool", "tool_call_id": f"c{i}", "content": f"output {i}\n" * 50,
                      **({"is_error": True} if i == 0 else {})}]
    compactor = Compactor(rules)
    for end in range(5, len(messages) + 1, 2):  # round by round: the error result settles
        assert compactor(messages[:end]).messages[2] is messages[2]  # an error: kept
    messages[2]["is_error"] = 1  # in place, to a value that compares equal: no longer the error flag
    assert compact(messages, rules).messages[2] is not messages[2]  # compact() clears it now
    assert compactor(messages).messages[2] is messages[2]  # the Compactor keeps its decision
    compactor.reset()
    _same(compactor(messages), compact(messages, rules))


def test_a_different_list_is_decided_anew():
    first, second = _mini_swe_agent(), copy.deepcopy(_mini_swe_agent())
    second[5]["content"] = "another conversation"
    compactor = Compactor("default")
    compactor(first)
    _same(compactor(second), compact(second))
    compactor.reset()
    _same(compactor(first), compact(first))


def test_a_shared_compactor_serves_several_passes_and_formats():
    rules = ["preset:strip-tool-turn-reasoning", "preset:keep-recent-results"]
    compactor = Compactor(rules)
    anthropic = load_json(ROOT / "examples" / "anthropic-session.json")["messages"]
    for messages in (_mini_swe_agent(), anthropic, _mini_swe_agent()):
        _same(compactor(messages), compact(messages, rules))


def test_a_failed_call_leaves_the_compactor_sound(monkeypatch):
    """A call that fails after the pass grew its remembered lists (settle.py grows them in
    place) leaves a Compactor whose next calls still give what compact gives."""
    import rules_compact.incremental.compactor as compactor_module

    messages = _mini_swe_agent()
    ends = round_starts(messages)
    compactor = Compactor("preset:keep-recent-results")
    for end in ends[:-2]:
        compactor(messages[:end])
    real_of = compactor_module._Memo.of

    def failing_of(*args):
        raise MemoryError("out of memory")

    monkeypatch.setattr(compactor_module._Memo, "of", failing_of)
    with pytest.raises(MemoryError):
        compactor(messages[:ends[-2]])
    monkeypatch.setattr(compactor_module._Memo, "of", real_of)
    for end in ends[-2:]:
        _same(compactor(messages[:end]), compact(messages[:end], "preset:keep-recent-results"))


def test_an_earlier_report_stays_true_after_later_rounds():
    """The settled records grow in place from round to round: a report of an earlier round,
    read only after later rounds, still describes its own round."""
    messages, ruleset = _mini_swe_agent(), load_rules("preset:keep-recent-results")
    ends = round_starts(messages)
    compactor = Compactor(ruleset)
    early = compactor(messages[:ends[-20]])
    for end in ends[-19:]:
        compactor(messages[:end])
    assert compactor._memos[0].settled.start > ends[-20]  # the store grew past the early round
    want = compact(messages[:ends[-20]], ruleset)
    _same(early, want)


def test_reuse_off_computes_every_call_afresh():
    messages, ruleset = _mini_swe_agent(), load_rules("default")
    compactor = Compactor(ruleset, reuse=False)
    for end in round_starts(messages)[-5:]:
        _same(compactor(messages[:end]), compact(messages[:end], ruleset))
    assert compactor._memos == [None]


def test_threads_sharing_a_compactor_get_what_compact_gives():
    """Four threads call one Compactor with every round of a trace, switching as often as the
    interpreter allows: each call still gets exactly what compact gives."""
    import sys
    import threading

    messages, rules = _mini_swe_agent(), load_rules("preset:keep-recent-results")
    ends = round_starts(messages)
    want = {end: compact(messages[:end], rules).messages for end in ends}
    compactor, wrong = Compactor(rules, verify=False), []

    def agent():
        for end in ends:
            if compactor(messages[:end]).messages != want[end]:
                wrong.append(end)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=agent) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    assert wrong == []


SUPERSEDED_THEN_AGED = parse_rules("version: 1\nname: t\nrules:\n"
                                   "  - {name: latest, match: {superseded: true}, action: keep}\n"
                                   "  - {name: old, match: {role: tool, age: {unit: user_turns, gte: 1}}, "
                                   "action: placeholder}\n", "t")


def _late_result_history(fmt: str) -> list:
    """``[call A][call B][result B][result A]``, two user turns, then a call repeating B's."""
    def call(cid, name):
        if fmt == "openai":
            return {"role": "assistant", "content": None, "tool_calls": [
                {"id": cid, "type": "function", "function": {"name": name, "arguments": "{}"}}]}
        return {"role": "assistant", "content": [{"type": "tool_use", "id": cid, "name": name, "input": {}}]}

    def result(cid):
        if fmt == "openai":
            return {"role": "tool", "tool_call_id": cid, "content": "out " * 50}
        return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": cid, "content": "out " * 50}]}

    return [{"role": "user", "content": "go"}, call("A", "mcp__x__y"), call("B", "bash"), result("B"), result("A"),
            {"role": "user", "content": "next"}, {"role": "assistant", "content": "ok"},
            {"role": "user", "content": "more"}, {"role": "assistant", "content": "ok"}, call("C", "bash")]


@pytest.mark.parametrize("fmt", ["openai", "anthropic"])
def test_a_late_result_keeps_its_call_when_a_repeated_call_reopens_the_history(fmt):
    """Issue 29: the call repeating B's reopened the settled history at B's span, after A's
    call: A's result was decided without its call (``[Previous: used unknown]``)."""
    messages = _late_result_history(fmt)
    compactor = Compactor(SUPERSEDED_THEN_AGED, format=fmt)
    for end in (1, 7, 10):
        got = compactor(messages[:end])
        _same(got, compact(messages[:end], SUPERSEDED_THEN_AGED, format=fmt))
    assert "[Previous: used mcp__x__y]" in json.dumps(got.messages[4])


def test_an_error_result_in_a_span_decided_again_keeps_its_note():
    """Issue 29: the latest span's error result, held while its span was decided again (a
    parallel call's result was the latest item), lost compact()'s note "error result: only rules
    that match is_error: true apply"."""
    rules = parse_rules("version: 1\nname: t\nrules:\n  - {name: old, match: {role: tool, age: "
                        "{unit: tool_results, gte: 100}}, action: placeholder}\n", "t")
    call = lambda cid: {"id": cid, "type": "function", "function": {"name": "bash", "arguments": "{}"}}  # noqa: E731
    messages = [{"role": "user", "content": "go"}]
    for i in range(20):  # more items than the Compactor holds decisions from
        messages += [{"role": "assistant", "content": None, "tool_calls": [call(f"c{i}")]},
                     {"role": "tool", "tool_call_id": f"c{i}", "content": f"out {i}"}]
    messages += [{"role": "assistant", "content": None, "tool_calls": [call("x"), call("y")]},
                 {"role": "tool", "tool_call_id": "x", "content": "failed", "is_error": True},
                 {"role": "tool", "tool_call_id": "y", "content": "ok"}, {"role": "assistant", "content": "done"}]
    compactor = Compactor(rules)
    for end in range(len(messages) - 2, len(messages) + 1):
        got = compactor(messages[:end])
        _same(got, compact(messages[:end], rules))
    assert got.report.passes[0].decisions[-3].note == "error result: only rules that match is_error: true apply"


@EXAMPLES
@given(conversation=conversations(late_results=True), files=st.lists(rule_files(), min_size=1, max_size=2),
       ends=st.lists(st.integers(0, 60), min_size=1, max_size=6), verify=st.booleans(),
       hold_from=st.sampled_from([0, compactor_module.HOLD_FROM]), keyed=st.sampled_from([0, held.KEYED]),
       data=st.data())
def test_compactor_equals_compact_on_any_sequence_of_calls(conversation, files, ends, verify, hold_from, keyed, data):
    """Histories that grow, repeat, shrink or change in place, with cache breakpoints outside the
    messages that vary from call to call: always compact's messages and report, notes included
    (holding the previous call's decisions from any number of items, or from the usual number,
    and picking the items to decide again by their change keys from any number on)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(compactor_module, "HOLD_FROM", hold_from)
        patch.setattr(held, "KEYED", keyed)
        _calls_agree(conversation, files, ends, verify, data)


def _calls_agree(conversation, files, ends, verify, data):
    fmt, messages = conversation
    for f in files:
        note(json.dumps(f, ensure_ascii=False))
    rulesets = [to_ruleset(f) for f in files]
    compactor = Compactor(rulesets, format=fmt, verify=verify)
    messages = copy.deepcopy(messages)
    for end in sorted(ends) if data.draw(st.booleans()) else ends:
        history = messages[:end]
        outside = data.draw(st.integers(0, 4))  # cache breakpoints in the request's system and tools
        _same(compactor(history, breakpoints_outside=outside),
              compact(history, rulesets, format=fmt, breakpoints_outside=outside))
        memo = compactor._memos[0]
        event("resumed" if memo and memo.settled and memo.settled.start else "decided from the start")
        if verify and messages and data.draw(st.integers(0, 3)) == 0:
            victim = messages[data.draw(st.integers(0, len(messages) - 1))]
            if isinstance(victim, dict):
                victim["content"] = data.draw(st.sampled_from(["", "edited", "x" * 900]))


LOOP_HISTORIES = st.one_of(
    st.tuples(st.just("openai"), openai_conversations(max_segments=20, late_results=True, repeated_calls=True)),
    st.tuples(st.just("anthropic"), anthropic_conversations(max_turns=12, late_results=True, repeated_calls=True)))


@property_settings(2)  # about one example in 50 met issue 29's late result: 300 find it
@given(conversation=LOOP_HISTORIES, file=settling_rule_files(), small=st.booleans())
def test_a_history_growing_by_one_message_with_late_results_gets_what_compact_gives(conversation, file, small):
    """Results that come after another call's span and calls that repeat earlier ones, in a
    history that grows one message a call, with rules that settle (``superseded``, ages,
    ``in_tail``): the Compactor resumes after what settled, holds what still holds (``small``:
    from any number of items) and still gives compact's messages and report (issue 29: a late
    result lost its call, ``[Previous: used unknown]``; a held error result lost its note)."""
    fmt, messages = conversation
    note(json.dumps(file))
    ruleset = to_ruleset(file)
    with pytest.MonkeyPatch.context() as patch:
        if small:
            patch.setattr(compactor_module, "HOLD_FROM", 0)
            patch.setattr(held, "KEYED", 0)
        compactor = Compactor(ruleset, format=fmt)
        for end in range(len(messages) + 1):
            _same(compactor(messages[:end]), compact(messages[:end], ruleset, format=fmt))


def _retained_by_a_loop(rounds: int) -> int:
    """What a Compactor retains (tracemalloc) after an agent loop of ``rounds`` rounds that
    passes a new list each round, as the integrations do (``messages[:n]``)."""
    import gc
    import tracemalloc

    messages = [{"role": "user", "content": "go"}]
    for i in range(rounds):
        messages += [{"role": "assistant", "content": None, "tool_calls": [
                         {"id": f"c{i}", "type": "function", "function": {"name": "bash", "arguments": "{}"}}]},
                     {"role": "tool", "tool_call_id": f"c{i}", "content": f"output {i}\n" * 20}]
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        compactor = Compactor("preset:keep-recent-results")
        for end in range(3, len(messages) + 1, 2):
            compactor(messages[:end])
        gc.collect()
        return tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()


def test_what_a_compactor_retains_grows_linearly_with_the_rounds():
    """Issue 29: each round's input kept the previous round's, so a loop that passes a new list
    each round retained every list it passed (3.1x the memory for twice the rounds)."""
    assert _retained_by_a_loop(600) < 2.5 * _retained_by_a_loop(300)
