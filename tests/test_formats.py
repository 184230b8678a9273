"""Formats: a format's own scan and check (optimisations) give exactly what the generic ones give."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import TRACES, property_settings
from rules_compact.errors import InputError
from rules_compact.formats import FORMATS, Format
from rules_compact.readers import read_conversations
from strategies import openai_conversations


def _plain(value):
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _same_scans(fmt, messages) -> None:
    fast, generic = fmt.scan(messages), Format.scan(fmt, messages)
    for column in generic.COLUMNS:
        assert _plain(getattr(fast, column)) == _plain(getattr(generic, column)), column
    assert [fast.span_start(i) for i in range(len(fast))] == [generic.span_start(i) for i in range(len(generic))]
    lazy = fmt.scan(messages)  # read in another order: one column before the others it shares work with
    assert _plain(lazy.span_starts) == _plain(generic.span_starts) and _plain(lazy.call_at) == _plain(generic.call_at)


def _openai_traces():
    for path in sorted(TRACES.rglob("*.json*")):
        try:
            conversations = read_conversations(path.read_bytes(), path.name)
        except Exception:  # not a conversation file (SOURCES, rule files)
            continue
        for conv in conversations[:20]:
            if conv.format == "openai":
                yield pytest.param(conv.messages, id=conv.name)


@pytest.mark.parametrize("messages", list(_openai_traces()))
def test_the_openai_scan_equals_the_generic_one_on_real_traces(messages):
    _same_scans(FORMATS["openai"], messages)


@property_settings()
@given(messages=openai_conversations())
def test_the_openai_scan_equals_the_generic_one(messages):
    _same_scans(FORMATS["openai"], messages)


_ODD_VALUES = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=3), st.lists(st.none(), max_size=1),
                        st.dictionaries(st.sampled_from(["type", "text", "name"]), st.text(max_size=2), max_size=2))


@st.composite
def _bent(draw, messages):
    """Messages with a few values swapped for values of other types (where the check looks)."""
    out = [dict(m) for m in messages]
    for _ in range(draw(st.integers(0, 3))):
        if not out:
            break
        i = draw(st.integers(0, len(out) - 1))
        key = draw(st.sampled_from(["role", "content", "tool_calls", "function"]))
        calls = out[i].get("tool_calls")
        if key == "function" and isinstance(calls, list) and calls and isinstance(calls[0], dict):
            call = dict(out[i]["tool_calls"][0])
            call["function"] = draw(st.one_of(_ODD_VALUES, st.fixed_dictionaries({"name": _ODD_VALUES,
                                                                                  "arguments": _ODD_VALUES})))
            out[i]["tool_calls"] = [call] + out[i]["tool_calls"][1:]
        elif key != "function":
            out[i][key] = draw(_ODD_VALUES)
    if out and draw(st.booleans()):
        out[draw(st.integers(0, len(out) - 1))] = draw(_ODD_VALUES)
    return out


@property_settings()
@given(data=st.data(), messages=openai_conversations())
def test_the_openai_scan_reads_bent_messages_as_the_generic_one(data, messages):
    """Where the walk meets a shape it does not vouch for (odd roles, contents, calls, a message
    that is no object), it reads the message as the generic scan does."""
    _same_scans(FORMATS["openai"], data.draw(_bent(messages)))


def _first_problem(fmt, messages):
    try:
        fmt.check(messages)
    except InputError as error:
        return str(error)
    return None


@property_settings()
@given(data=st.data(), messages=openai_conversations())
def test_the_openai_bulk_check_finds_what_the_message_check_finds(data, messages):
    """OpenAIFormat.check's fast path (the scan's walk vouches for the usual shape) passes exactly what
    problem() passes."""
    fmt = FORMATS["openai"]
    bent = data.draw(_bent(messages))
    expected = next((f"message {i}: {p}" for i, m in enumerate(bent) if (p := fmt.problem(m)) is not None), None)
    assert _first_problem(fmt, bent) == expected


_JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5),
                     lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
                     max_leaves=12)


@property_settings()
@given(data=_JSON)
def test_json_written_in_pieces_is_the_same_text(data):
    """apply writes large outputs a message at a time: the text is the one written whole."""
    from rules_compact.jsontext import dumps, dumps_pieces

    assert "".join(dumps_pieces(data)) == dumps(data)


def test_responses_invariants_accept_shortened_call_arguments():
    """clear-inputs longer_than shortens a custom tool call's long input and a function call's
    long JSON values: the invariants of the format take those (found by the thorough profile)."""
    from rules_compact import parse_rules
    from rules_compact.testing import check_invariants

    long = "x" * 500
    messages = [{"role": "user", "content": [{"type": "input_text", "text": "go"}]},
                {"type": "custom_tool_call", "id": "ctc_0", "call_id": "call_0", "name": "apply_patch", "input": long},
                {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "write",
                 "arguments": json.dumps({"path": "a.py", "body": long})},
                {"type": "custom_tool_call_output", "call_id": "call_0", "output": "done"},
                {"type": "function_call_output", "call_id": "call_1", "output": "written"},
                {"type": "function_call", "id": "fc_2", "call_id": "call_2", "name": "ls", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "call_2", "output": "a.py"},  # the last: its breakpoint's
                {"role": "user", "content": "ok"}]
    from rules_compact.engine.interpreter import content_rules
    rules = content_rules(parse_rules("version: 1\nname: gen\nextends: default\nremove_rules: [keep-recent]\n"))
    out = check_invariants(messages, rules, "responses").messages
    assert out[1]["input"] == "[1 lines cleared]"
    assert json.loads(out[2]["arguments"]) == {"path": "a.py", "body": "[1 lines cleared]"}
