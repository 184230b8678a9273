"""The sweep (rules_compact/incremental/sweep.py): a pay-back walk's prefix compactions, each
decided from the previous one, give exactly what a fresh pass gives on each prefix."""

from __future__ import annotations

import copy
import json

import pytest
from hypothesis import event, given, note
from hypothesis import strategies as st

from conftest import TRACES, property_settings
from rules_compact import load_rules
from rules_compact.engine.interpreter import content_rules, run_pass
from rules_compact.formats import FORMATS
from rules_compact.incremental import held
from rules_compact.incremental.sweep import Sweep
from rules_compact.readers import read_conversations
from rules_compact.replay import round_starts
from strategies import anthropic_conversations, conversations, openai_conversations, rule_files, to_ruleset

EXAMPLES = property_settings(0.5)


def _fresh(messages: list, content, fmt, end: int) -> list:
    return run_pass(messages[:end], content, fmt).messages


LONG = st.one_of(st.tuples(st.just("openai"), openai_conversations(max_segments=30)),
                 st.tuples(st.just("anthropic"), anthropic_conversations(max_turns=20)))


@EXAMPLES
@given(conversation=st.one_of(conversations(), LONG), file=rule_files(), keyed=st.sampled_from([0, 3, held.KEYED]),
       data=st.data())
def test_every_prefix_is_what_a_fresh_pass_gives(conversation, file, keyed, data):
    """Growing prefixes (and now and then a shorter one, which starts afresh), on generated
    histories and rule files (the default's concepts among them, through ``extends``), with
    change keys from 0, 3 or the usual number of items to check on."""
    name, messages = conversation
    note(json.dumps(file, ensure_ascii=False))
    content = content_rules(to_ruleset(file))
    fmt = FORMATS[name]
    messages = copy.deepcopy(messages)
    sweep = Sweep.of(messages, content, fmt)
    event("swept" if sweep is not None else "not sweepable")
    if sweep is None:
        return
    every = data.draw(st.sampled_from([1, 1, 2, 5]))  # prefixes a walk asks for: close together, mostly
    ends = sorted({*range(data.draw(st.integers(0, 3)), len(messages) + 1, every), len(messages)})
    if data.draw(st.booleans()):
        ends.append(data.draw(st.integers(0, len(messages))))
    kept = 0
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(held, "KEYED", keyed)
        for end in ends:
            assert sweep(end) == _fresh(messages, content, fmt, end), f"prefix of {end} messages"
            kept += sweep.items - sweep.acting
    event("held items" if kept else "held nothing")


@pytest.mark.parametrize("path", [
    "mini-swe-agent/deepseek_chat_dev_rerun__pylint-dev__astroid-1333.traj.json",
    "claude-code/ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl",
    "tau-bench/gpt-4o-airline.json",
])
def test_the_defaults_prefixes_of_real_traces(path):
    """The default's content rules, every round of a real trace (a tau-bench file's first ten
    conversations): each prefix as a fresh pass decides it, and the sweep holds most items."""
    content = content_rules(load_rules("default"))
    source = TRACES / path
    held = opened = 0
    for conv in read_conversations(source.read_bytes(), source.name)[:10]:
        fmt = FORMATS[conv.format]
        sweep = Sweep.of(conv.messages, content, fmt)
        assert sweep is not None
        for end in [*round_starts(conv.messages), len(conv.messages)]:
            assert sweep(end) == _fresh(conv.messages, content, fmt, end), f"{conv.name}: prefix of {end} messages"
            held += sweep.items - sweep.acting
            opened += sweep.acting
    assert held > opened


def test_spans_linked_by_a_result_outside_its_calls_span_decide_together():
    """tau-bench logs reuse call ids, so a later result answers the first call with its id, in
    an earlier span (its clear-inputs edits that call): the two spans are held or decided
    together, and every prefix is still what a fresh pass gives."""
    messages = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "bash", "arguments": '{"cmd": "' + "x" * 300 + '"}'}}]},
        {"role": "tool", "tool_call_id": "a", "content": "y" * 300},
        {"role": "user", "content": "again"},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "bash", "arguments": '{"cmd": "z"}'}}]},
        {"role": "tool", "tool_call_id": "a", "content": "w" * 300},
    ] + [m for k in range(12) for m in (
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": f"c{k}", "type": "function", "function": {"name": "Read", "arguments": f'{{"path": "f{k}"}}'}}]},
        {"role": "tool", "tool_call_id": f"c{k}", "content": "v" * 400})]
    content = content_rules(load_rules("default"))
    fmt = FORMATS["openai"]
    sweep = Sweep.of(messages, content, fmt)
    assert sweep is not None and sweep.linked
    for end in range(len(messages) + 1):
        assert sweep(end) == _fresh(messages, content, fmt, end), f"prefix of {end} messages"


def test_a_result_before_its_call_is_not_swept():
    """A result whose call comes later links to it in the whole history but not in the prefixes
    that end between them: the walk compacts those with a Compactor instead."""
    messages = [
        {"role": "user", "content": "go"},
        {"role": "tool", "tool_call_id": "a", "content": "early"},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "bash", "arguments": "{}"}}]},
    ]
    assert Sweep.of(messages, content_rules(load_rules("default")), FORMATS["openai"]) is None
