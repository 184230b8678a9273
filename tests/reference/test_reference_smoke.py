"""Smoke tests for the reference implementations (hand-written conversations).

These check the behaviour each module's docstring states; several of them are
ports of the original projects' own tests (recursive ``micro.rs`` tests,
neo-code ``microcompact_test.go``).
"""

from __future__ import annotations

import copy

import pytest

from . import (
    anthropic_context_editing as ace,
    opencode_prune as oc,
    seed000_keep_recent as s000,
    seed001_microcompact as s001m,
    seed001_selective as s001s,
    seed003_count_prune as s003,
    seed004_neo_code as s004,
    swe_agent_last_n as swe,
)


# ---------------------------------------------------------------------------
# helpers (OpenAI format)
# ---------------------------------------------------------------------------

def user(text):
    return {"role": "user", "content": text}


def call(cid, name, content=None):
    return {
        "role": "assistant",
        "content": content,
        "tool_calls": [{"id": cid, "type": "function", "function": {"name": name, "arguments": "{}"}}],
    }


def calls(*pairs):
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": cid, "type": "function", "function": {"name": name, "arguments": "{}"}}
            for cid, name in pairs
        ],
    }


def result(cid, content, **extra):
    msg = {"role": "tool", "tool_call_id": cid, "content": content}
    msg.update(extra)
    return msg


def pair(cid, name, content):
    return [call(cid, name), result(cid, content)]


def tool_contents(msgs):
    return [m["content"] for m in msgs if m["role"] == "tool"]


# ---------------------------------------------------------------------------
# generic invariants for every module
# ---------------------------------------------------------------------------

def _openai_convo():
    msgs = [user("go")]
    for i in range(14):
        msgs += pair(f"c{i}", "bash", "line\n" * 5000)
    msgs.append(user("next"))
    msgs += pair("z", "bash", "tail")
    return msgs


def _anthropic_convo():
    msgs = [{"role": "user", "content": "go"}]
    for i in range(14):
        msgs.append({"role": "assistant", "content": [
            {"type": "thinking", "thinking": "t" * 50, "signature": "s"},
            {"type": "text", "text": "x" * 40000},
            {"type": "tool_use", "id": f"u{i}", "name": "bash", "input": {"cmd": "ls"}},
        ]})
        msgs.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": f"u{i}", "content": "y" * 5000},
        ]})
        if i == 6:  # a real user message starts a second assistant turn
            msgs.append({"role": "user", "content": "continue"})
    return msgs


OPENAI_APPLIES = [s000.apply, s000.apply_as_briefed, s003.apply, s004.apply, swe.apply, oc.apply]
ANTHROPIC_APPLIES = [
    s001m.apply,
    s001m.microcompact,
    s001s.apply,
    ace.apply,
    lambda m: ace.clear_tool_uses(m, input_tokens=200_000),
    ace.clear_thinking,
]


@pytest.mark.parametrize("fn", OPENAI_APPLIES)
def test_openai_modules_copy_and_keep_shape(fn):
    msgs = _openai_convo()
    before = copy.deepcopy(msgs)
    out = fn(msgs)
    assert msgs == before, "input must not be mutated"
    assert out is not msgs
    assert [m["role"] for m in out] == [m["role"] for m in msgs]
    assert [m.get("tool_call_id") for m in out] == [m.get("tool_call_id") for m in msgs]
    # no shared sub-objects with the input
    out[1]["tool_calls"][0]["id"] = "mutated"
    assert msgs[1]["tool_calls"][0]["id"] == "c0"


@pytest.mark.parametrize("fn", ANTHROPIC_APPLIES)
def test_anthropic_modules_copy_and_keep_shape(fn):
    msgs = _anthropic_convo()
    before = copy.deepcopy(msgs)
    out = fn(msgs)
    assert msgs == before
    assert len(out) == len(msgs)
    assert [m["role"] for m in out] == [m["role"] for m in msgs]
    assert out != msgs, "each conversation above is big enough to be compacted"


# ---------------------------------------------------------------------------
# seed 000
# ---------------------------------------------------------------------------

def _s000_convo(n_results, size=900, first_name="Read", first_content=None):
    msgs = [user("start")]
    for i in range(n_results):
        name = first_name if i == 0 else "Read"
        content = first_content if (i == 0 and first_content is not None) else "x" * size
        msgs += pair(f"c{i}", name, content)
    return msgs


def test_s000_keeps_last_10_and_compacts_older():
    out = s000.apply(_s000_convo(12))
    contents = tool_contents(out)
    assert contents[:2] == ["[Previous: used Read]"] * 2
    assert all(c == "x" * 900 for c in contents[2:])


def test_s000_no_change_at_exactly_keep_recent():
    msgs = _s000_convo(10)
    assert s000.apply(msgs) == msgs


def test_s000_threshold_is_strict():
    assert tool_contents(s000.apply(_s000_convo(11, first_content="x" * 800)))[0] == "x" * 800
    assert tool_contents(s000.apply(_s000_convo(11, first_content="x" * 801)))[0] == "[Previous: used Read]"


def test_s000_length_unit_chars_vs_bytes():
    content = "é" * 500  # 500 chars, 1000 UTF-8 bytes
    msgs = _s000_convo(11, first_content=content)
    assert tool_contents(s000.apply(msgs))[0] == content  # real code: chars
    assert tool_contents(s000.apply_as_briefed(msgs))[0] == "[Previous: used Read]"  # bytes


@pytest.mark.parametrize(
    "name, exempt_code, exempt_briefed",
    [
        ("LoadSkill", True, True),
        ("Task", True, True),
        ("TodoWrite", True, True),
        ("TodoRead", True, True),
        ("EnterPlanMode", True, False),  # seed's "Plan*" glob misses it
        ("ExitPlanMode", True, False),
        ("Agent", True, True),
        ("AgentTeam", True, True),
        ("AgentFoo", False, True),
        ("PlanAhead", False, True),
        ("Ask", True, True),
        ("SendMessage", True, True),
        ("CreateTeammate", True, True),
        ("TaskCreate", False, False),  # "Task" is exact
        ("Askew", False, False),
        ("Read", False, False),
    ],
)
def test_s000_exempt_tools(name, exempt_code, exempt_briefed):
    msgs = _s000_convo(11, first_name=name)
    expected_placeholder = f"[Previous: used {name}]"
    got_code = tool_contents(s000.apply(msgs))[0]
    got_briefed = tool_contents(s000.apply_as_briefed(msgs))[0]
    assert (got_code == "x" * 900) is exempt_code
    assert (got_code == expected_placeholder) is (not exempt_code)
    assert (got_briefed == "x" * 900) is exempt_briefed


def test_s000_unknown_tool_and_list_content():
    msgs = _s000_convo(11)
    msgs[2] = result("missing-id", [{"type": "text", "text": "a" * 500}, {"type": "text", "text": "b" * 400}])
    out = s000.apply(msgs)
    assert out[2]["content"] == "[Previous: used unknown]"


def test_s000_idempotent():
    once = s000.apply(_s000_convo(15))
    assert s000.apply(once) == once


# ---------------------------------------------------------------------------
# seed 001 microcompact
# ---------------------------------------------------------------------------

def test_s001_microcompact_keeps_only_tool_use_blocks():
    tu1 = {"type": "tool_use", "id": "a", "name": "readFile", "input": {"path": "x"}}
    tu2 = {"type": "tool_use", "id": "b", "name": "grep", "input": {}}
    msgs = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "id": "m1", "content": [
            {"type": "thinking", "thinking": "hmm", "signature": "s"},
            {"type": "text", "text": "Let me look. Error here too."},
            tu1,
            {"type": "text", "text": "and more"},
            tu2,
        ]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": "r"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "plain answer"}]},
        {"role": "assistant", "content": "string content"},
    ]
    out = s001m.microcompact(msgs)
    assert out[1] == {"role": "assistant", "id": "m1", "content": [tu1, tu2]}
    assert out[0] == msgs[0] and out[2] == msgs[2] and out[3] == msgs[3] and out[4] == msgs[4]


def _s001_sized(total_chars):
    # tool_use contributes len("t") + len("{}") = 3 characters
    return [
        {"role": "user", "content": "u" * (total_chars - 3)},
        {"role": "assistant", "content": [
            {"type": "text", "text": ""},
            {"type": "tool_use", "id": "a", "name": "t", "input": {}},
        ]},
    ]


def test_s001_token_trigger_is_strict_and_rounds_half_up():
    # js_total: the lengths summed, Math.round(total / 4) once
    assert s001m.estimate_tokens(_s001_sized(480_001), "js_total") == 120_000  # 120000.25
    assert s001m.estimate_tokens(_s001_sized(480_002), "js_total") == 120_001  # 120000.5 -> up
    assert s001m.apply(_s001_sized(480_001), estimator="js_total") == _s001_sized(480_001)
    out = s001m.apply(_s001_sized(480_002), estimator="js_total")
    assert out[1]["content"] == [{"type": "tool_use", "id": "a", "name": "t", "input": {}}]


def test_s001_default_estimator_rounds_each_piece():
    # utf16_4: "u" * 479_998 -> 119_999.5 -> 120_000; "t" -> 0.25 -> 0; "{}" -> 0.5 -> 1
    msgs = _s001_sized(480_001)
    assert s001m.estimate_tokens(msgs) == s001m.estimate_tokens(msgs, "utf16_4") == 120_001
    assert s001m.apply(msgs) != msgs
    assert ace.estimate_tokens(msgs) == 120_001 and ace.estimate_tokens(msgs, "js_total") == 120_000
    with pytest.raises(ValueError):
        s001m.estimate_tokens(msgs, "chars4")


def test_s001_estimate_counts_utf16_units_and_json_input():
    msgs = [{"role": "assistant", "content": [
        {"type": "text", "text": "😀"},  # 2 UTF-16 units
        {"type": "tool_use", "id": "a", "name": "ab", "input": {"k": "é"}},  # 2 + len('{"k":"é"}')=9
    ]}]
    assert s001m.count_chars(msgs) == 2 + 2 + 9


# ---------------------------------------------------------------------------
# seed 001 selective (with recency window)
# ---------------------------------------------------------------------------

def _selective_convo(first_assistant_content):
    msgs = [{"role": "user", "content": "task"},
            {"role": "assistant", "content": first_assistant_content}]
    for i in range(5):  # 10 recent messages
        msgs.append({"role": "user", "content": f"u{i}"})
        msgs.append({"role": "assistant", "content": copy.deepcopy(first_assistant_content)})
    return msgs


def test_s001_selective_keeps_important_text_and_tools_in_old_part_only():
    tu = {"type": "tool_use", "id": "a", "name": "readFile", "input": {}}
    content = [
        {"type": "thinking", "thinking": "long thoughts", "signature": "s"},
        {"type": "text", "text": "z" * 600},                      # long, no keyword -> drop
        {"type": "text", "text": "I will read the file " + "z" * 600},  # decision -> keep
        {"type": "text", "text": "Error: boom " + "z" * 600},     # error -> keep
        {"type": "text", "text": "error lowercase " + "z" * 600},  # case-sensitive -> drop
        {"type": "text", "text": "short note"},                   # short -> keep
        tu,
    ]
    msgs = _selective_convo(content)
    assert len(msgs) == 12
    out = s001s.apply(msgs)
    assert [b.get("text", b["type"]) for b in out[1]["content"]] == [
        "I will read the file " + "z" * 600,
        "Error: boom " + "z" * 600,
        "short note",
        "tool_use",
    ]
    assert out[2:] == msgs[2:], "the last 10 messages are untouched"


def test_s001_selective_reorders_text_before_tools():
    a = {"type": "tool_use", "id": "a", "name": "x", "input": {}}
    b = {"type": "tool_use", "id": "b", "name": "y", "input": {}}
    msgs = _selective_convo([a, {"type": "text", "text": "between"}, b])
    out = s001s.apply(msgs)
    assert out[1]["content"] == [{"type": "text", "text": "between"}, a, b]


def test_s001_selective_length_is_utf16():
    assert s001s.is_important("😀" * 250)       # 500 code units
    assert not s001s.is_important("😀" * 251)   # 502 code units
    assert not s001s.is_important("a" * 501)
    assert s001s.is_important("a" * 500)


def test_s001_selective_short_conversation_untouched():
    tu = {"type": "tool_use", "id": "a", "name": "x", "input": {}}
    msgs = [{"role": "assistant", "content": [{"type": "text", "text": "q" * 900}, tu]}] * 10
    assert s001s.apply(msgs) == msgs


# ---------------------------------------------------------------------------
# seed 003 (recursive Microcompactor) -- ports of micro.rs tests
# ---------------------------------------------------------------------------

P3 = s003.PLACEHOLDER


def _tools(sizes):
    return [result("call_1", "x" * n) for n in sizes]


def test_s003_noop_under_trigger():
    msgs = _tools([300] * 5)
    assert s003.apply(msgs) == msgs


def test_s003_prunes_exactly_count_minus_trigger():
    out = s003.apply(_tools([300] * 15))
    assert [m["content"] == P3 for m in out] == [True] * 3 + [False] * 12


def test_s003_exact_and_just_over_trigger():
    assert s003.apply(_tools([300] * 12)) == _tools([300] * 12)
    out = s003.apply(_tools([300] * 13))
    assert [m["content"] == P3 for m in out] == [True] + [False] * 12


def test_s003_short_oldest_are_skipped_and_never_looks_further():
    msgs = _tools([50, 50, 50] + [300] * 12)
    assert s003.apply(msgs) == msgs  # crate test prune_skips_short_results
    # the rustdoc's literal wording would have gone on to later candidates:
    lit = s003.apply_rustdoc_reading(msgs)
    assert [m["content"] == P3 for m in lit][:6] == [False] * 3 + [True] * 3


def test_s003_custom_trigger_8_keep_4():
    msgs = _tools([50, 50] + [300] * 9)  # 11 tools, target 3, eligible 7
    out = s003.apply(msgs, trigger_tool_count=8, keep_recent=4)
    assert [m["content"] == P3 for m in out] == [False, False, True] + [False] * 8


def test_s003_keep_recent_caps_the_window():
    # trigger 2, keep 4, 5 tools: target 3 but only 1 eligible
    out = s003.apply(_tools([300] * 5), trigger_tool_count=2, keep_recent=4)
    assert [m["content"] == P3 for m in out] == [True, False, False, False, False]


def test_s003_length_is_utf8_bytes_strict():
    msgs = [result("c", "x" * 201), result("c", "x" * 200), result("c", "é" * 101)] + _tools([300] * 12)
    out = s003.apply(msgs)  # 15 tools -> the 3 oldest examined
    assert [m["content"] for m in out[:3]] == [P3, "x" * 200, P3]


def test_s003_idempotent_and_ignores_other_roles():
    msgs = []
    for i in range(15):
        msgs += [call(f"c{i}", "bash"), result(f"c{i}", "y" * 300), user("ok")]
    once = s003.apply(msgs)
    assert sum(m.get("content") == P3 for m in once) == 3
    assert s003.apply(once) == once


# ---------------------------------------------------------------------------
# seed 004 (neo-code) -- ports of microcompact_test.go
# ---------------------------------------------------------------------------

P4 = s004.PLACEHOLDER


def test_s004_clears_older_compactable_results():
    msgs = [
        user("older user"),
        call("call-1", "filesystem_read_file"), result("call-1", "old read result"),
        call("call-2", "bash"), result("call-2", "recent bash result"),
        call("call-3", "webfetch"), result("call-3", "latest webfetch result"),
        user("latest explicit instruction"),
        {"role": "assistant", "content": "current working reply"},
    ]
    out = s004.apply(msgs)
    assert out[2]["content"] == P4
    assert out[4]["content"] == "recent bash result"
    assert out[6]["content"] == "latest webfetch result"
    assert msgs[2]["content"] == "old read result"


def test_s004_protected_tail_untouched():
    msgs = [
        user("older user"),
        call("call-0", "filesystem_grep"), result("call-0", "old grep result"),
        call("call-1", "filesystem_read_file"), result("call-1", "recent read result"),
        call("call-2", "bash"), result("call-2", "recent bash result"),
        user("latest explicit instruction"),
        call("call-3", "bash"), result("call-3", "tail bash result"),
    ]
    out = s004.apply(msgs)
    assert out[2]["content"] == P4
    assert out[4]["content"] == "recent read result"
    assert out[6]["content"] == "recent bash result"
    assert out[9]["content"] == "tail bash result"


def test_s004_skips_non_compactable_errors_orphans_cleared_empty():
    msgs = [
        call("call-1", "custom_tool"), result("call-1", "custom result"),
        call("call-2", "filesystem_edit"), result("call-2", "edit failed", is_error=True),
        result("orphan", "orphan result"),
        call("call-3", "filesystem_write_file"), result("call-3", P4),
        call("call-4", "filesystem_grep"), result("call-4", ""),
    ]
    out = s004.apply(msgs)
    assert out == msgs


def test_s004_mixed_span_clears_only_compactable():
    msgs = [
        user("older user"),
        calls(("call-1", "filesystem_read_file"), ("call-2", "custom_tool")),
        result("call-1", "read result"), result("call-2", "custom result"),
        call("call-3", "bash"), result("call-3", "recent bash result"),
        call("call-4", "webfetch"), result("call-4", "latest webfetch result"),
        user("latest explicit instruction"),
        {"role": "assistant", "content": "current reply"},
    ]
    out = s004.apply(msgs)
    assert out[2]["content"] == P4
    assert out[3]["content"] == "custom result"
    assert out[1] == msgs[1]


def test_s004_empty_or_error_spans_do_not_consume_budget():
    msgs = [
        user("older user"),
        call("call-1", "filesystem_read_file"), result("call-1", "older read result"),
        call("call-2", "filesystem_grep"), result("call-2", "middle grep result"),
        call("call-3", "filesystem_edit"), result("call-3", "near edit result"),
        call("call-4", "bash"), result("call-4", "", is_error=True),
        call("call-5", "webfetch"), result("call-5", ""),
        user("latest explicit instruction"),
        {"role": "assistant", "content": "current reply"},
    ]
    out = s004.apply(msgs)
    assert out[2]["content"] == P4
    assert out[4]["content"] == "middle grep result"
    assert out[6]["content"] == "near edit result"
    assert out[8]["content"] == "" and out[10]["content"] == ""


def test_s004_whitespace_only_user_is_not_an_instruction_and_go_trim():
    msgs = [
        user("real instruction"),
        call("a", "bash"), result("a", "one"),
        call("b", "bash"), result("b", "two"),
        call("c", "bash"), result("c", "three"),
        user(" \u3000\n"),  # whitespace only (Go TrimSpace strips U+3000)
    ]
    out = s004.apply(msgs)
    # protected tail starts at the first message, so nothing is cleared
    assert out == msgs
    # without any user instruction, all spans are eligible
    out2 = s004.apply(msgs[1:7])
    assert [m["content"] for m in out2 if m["role"] == "tool"] == [P4, "two", "three"]
    # Go TrimSpace does not strip U+001F (Python's str.strip would)
    assert s004.go_trim_space("\x1fa\x1f") == "\x1fa\x1f"
    assert s004.go_trim_space("\u00a0a\u2009") == "a"


# ---------------------------------------------------------------------------
# SWE-agent LastNObservations
# ---------------------------------------------------------------------------

def test_swe_masks_all_but_last_10():
    msgs = [user("task")]
    for i in range(12):
        msgs += pair(f"c{i}", "bash", f"out {i}\nsecond\nthird\n")
    out = swe.apply(msgs)
    contents = tool_contents(out)
    assert contents[:2] == ["Old environment output: (3 lines omitted)"] * 2
    assert contents[2:] == [f"out {i}\nsecond\nthird\n" for i in range(2, 12)]


def test_swe_no_masking_up_to_n():
    msgs = [user("task")]
    for i in range(10):
        msgs += pair(f"c{i}", "bash", "x")
    assert swe.apply(msgs) == msgs


def test_swe_line_counting_and_images():
    assert swe.content_stats("") == (0, 0)
    assert swe.content_stats("a\r\nb\rc") == (3, 0)
    assert swe.content_stats([
        {"type": "text", "text": "a\nb"},
        {"type": "image_url", "image_url": {"url": "data:"}},
        {"type": "text", "text": "c"},
    ]) == (3, 1)
    msgs = [result("a", [{"type": "text", "text": "l1\nl2"}, {"type": "image_url", "image_url": {"url": "u"}}])]
    msgs += [result(f"b{i}", "k") for i in range(10)]
    out = swe.apply(msgs)
    assert out[0]["content"] == "Old environment output: (2 lines omitted) (1 images omitted)"


def test_swe_without_template_keeps_first_observation():
    msgs = [result(f"c{i}", "x\ny") for i in range(12)]
    out = swe.apply(msgs, assume_template=False)
    assert [m["content"] for m in out[:3]] == ["x\ny", "Old environment output: (2 lines omitted)", "x\ny"]


def test_swe_polling():
    msgs = [result(f"c{i}", "x") for i in range(13)]
    # virtual list = 14 (template + 13); polling 5 -> (14//5)*5 - 10 = 0 -> nothing
    assert swe.apply(msgs, polling=5) == msgs
    # polling 1 -> 14 - 10 = 4 -> virtual [1:4] -> 3 tool messages
    assert sum(m["content"].startswith("Old environment") for m in swe.apply(msgs)) == 3


# ---------------------------------------------------------------------------
# opencode prune
# ---------------------------------------------------------------------------

POC = oc.PLACEHOLDER
TOK10K = "a" * 40_000  # exactly 10,000 tokens


def test_oc_token_estimate_rounding():
    assert oc.token_estimate("") == 0
    assert oc.token_estimate("a") == 0       # 0.25
    assert oc.token_estimate("ab") == 1      # 0.5 -> up
    assert oc.token_estimate("abcdef") == 2  # 1.5 -> up
    assert oc.token_estimate("abcdefghij") == 3  # 2.5 -> up
    assert oc.token_estimate("😀") == 1      # 2 UTF-16 units
    assert oc.token_estimate(TOK10K) == 10_000


def _oc_convo(n_old, old_content=TOK10K, tail_content="t" * 400_000):
    """n_old results before the second-to-last user turn; huge results after it."""
    msgs = [user("first")]
    for i in range(n_old):
        msgs += pair(f"o{i}", "bash", old_content)
    msgs.append(user("second-to-last"))
    msgs += pair("p1", "bash", tail_content)
    msgs.append(user("last"))
    msgs += pair("p2", "bash", tail_content)
    return msgs


def test_oc_marks_past_40k_but_needs_more_than_20k():
    # 5 results x 10k: walking back, the oldest takes total to 50k -> marked (10k) -> not > 20k
    msgs = _oc_convo(5)
    assert oc.apply(msgs) == msgs


def test_oc_clears_all_marked_when_over_minimum():
    msgs = _oc_convo(7)  # totals 10k..70k; the 3 oldest are > 40k; pruned 30k > 20k
    out = oc.apply(msgs)
    assert tool_contents(out)[:7] == [POC] * 3 + [TOK10K] * 4
    assert tool_contents(out)[7:] == ["t" * 400_000] * 2, "last two turns are protected"


def test_oc_exactly_40k_not_marked_and_exactly_20k_not_enough():
    # 6 x 10k: totals 10..60k; marked: 50k and 60k -> pruned 20k, not > 20k
    msgs = _oc_convo(6)
    assert oc.apply(msgs) == msgs
    # one extra token on the oldest tips it over 20k
    msgs2 = _oc_convo(6)
    msgs2[2]["content"] = TOK10K + "abcd"
    out = oc.apply(msgs2)
    assert tool_contents(out)[:6] == [POC, POC, TOK10K, TOK10K, TOK10K, TOK10K]


def test_oc_marked_result_own_tokens_count():
    # totals: 39,999 then one big 25,000 result -> total 64,999 > 40k; pruned = 25,000 > 20k
    msgs = [user("first")]
    msgs += pair("big", "bash", "b" * 100_000)        # 25,000 tokens
    msgs += pair("r", "bash", "r" * (39_999 * 4))     # 39,999 tokens
    msgs += [user("second-to-last"), user("last")]
    out = oc.apply(msgs)
    assert out[2]["content"] == POC and out[4]["content"] == "r" * (39_999 * 4)


def test_oc_skill_and_errors_are_skipped_not_counted():
    msgs = _oc_convo(7)
    # make the newest pre-tail result a 'skill' call and an error: both skipped
    msgs[14] = call("o6", "skill")
    msgs[12]["is_error"] = True
    out = oc.apply(msgs)
    # counted: o4,o3,o2,o1,o0 (o6 skill, o5 error skipped) -> totals 10..50k: only o0 marked -> 10k
    assert out == msgs
    msgs.insert(1, call("e1", "bash"))
    msgs.insert(2, result("e1", TOK10K))
    msgs.insert(1, call("e0", "bash"))
    msgs.insert(2, result("e0", TOK10K))
    out = oc.apply(msgs)
    assert tool_contents(out)[:3] == [POC] * 3  # e0, e1, o0 -> 30k
    assert tool_contents(out)[7] == TOK10K  # the error result is never cleared


def test_oc_stops_at_already_cleared():
    msgs = _oc_convo(8)
    msgs[8]["content"] = POC  # o3 already cleared
    # walk: o7..o4 = 40k, then o3 is cleared -> stop; nothing marked
    assert oc.apply(msgs) == msgs


def test_oc_empty_user_message_is_not_a_turn():
    msgs = _oc_convo(7)
    msgs.append({"role": "user", "content": ""})
    msgs.append({"role": "user", "content": [{"type": "image_url", "image_url": {"url": "u"}}]})
    out = oc.apply(msgs)
    assert tool_contents(out)[:3] == [POC] * 3


def test_oc_idempotent():
    once = oc.apply(_oc_convo(9))
    assert once != _oc_convo(9)
    assert oc.apply(once) == once


# ---------------------------------------------------------------------------
# Anthropic context editing
# ---------------------------------------------------------------------------

PA = ace.PLACEHOLDER


def _anth_tools(names, result_text="r" * 100):
    msgs = [{"role": "user", "content": "task"}]
    for i, name in enumerate(names):
        msgs.append({"role": "assistant", "content": [
            {"type": "text", "text": f"step {i}"},
            {"type": "tool_use", "id": f"u{i}", "name": name, "input": {"i": i}},
        ]})
        msgs.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": f"u{i}", "content": result_text, "is_error": False},
        ]})
    return msgs


def _results(msgs):
    return [b["content"] for m in msgs if m["role"] == "user" and isinstance(m["content"], list)
            for b in m["content"] if b["type"] == "tool_result"]


def _inputs(msgs):
    return [b["input"] for m in msgs if m["role"] == "assistant"
            for b in m["content"] if b["type"] == "tool_use"]


def test_ace_trigger_strict_and_keep_3():
    msgs = _anth_tools(["bash"] * 5)
    assert ace.clear_tool_uses(msgs, input_tokens=100_000) == msgs
    out = ace.clear_tool_uses(msgs, input_tokens=100_001)
    assert _results(out) == [PA, PA] + ["r" * 100] * 3
    assert _inputs(out) == [{"i": i} for i in range(5)]
    assert out[2]["content"][0]["is_error"] is False and out[2]["content"][0]["tool_use_id"] == "u0"


def test_ace_estimate_trigger_without_input_tokens():
    small = _anth_tools(["bash"] * 5)
    assert ace.clear_tool_uses(small) == small
    big = _anth_tools(["bash"] * 5, result_text="r" * 100_000)  # 125k tokens
    assert _results(ace.clear_tool_uses(big))[:2] == [PA, PA]


def test_ace_exclude_tools_still_count_toward_keep():
    msgs = _anth_tools(["web_search", "bash", "bash", "web_search", "bash"])
    out = ace.clear_tool_uses(msgs, input_tokens=200_000, exclude_tools=["web_search"])
    assert _results(out) == ["r" * 100, PA, "r" * 100, "r" * 100, "r" * 100]


def test_ace_clear_tool_inputs():
    msgs = _anth_tools(["bash", "read", "bash", "bash", "bash"])
    out = ace.clear_tool_uses(msgs, input_tokens=200_000, clear_tool_inputs=True)
    assert _inputs(out) == [{}, {}, {"i": 2}, {"i": 3}, {"i": 4}]
    out2 = ace.clear_tool_uses(msgs, input_tokens=200_000, clear_tool_inputs=["read"])
    assert _inputs(out2) == [{"i": 0}, {}, {"i": 2}, {"i": 3}, {"i": 4}]


def test_ace_clear_at_least_gates_the_whole_edit():
    msgs = _anth_tools(["bash"] * 5, result_text="r" * 4000)  # ~1000 tokens each
    assert ace.clear_tool_uses(msgs, input_tokens=200_000, clear_at_least=5000) == msgs
    out = ace.clear_tool_uses(msgs, input_tokens=200_000,
                              clear_at_least={"type": "input_tokens", "value": 1900})
    assert _results(out)[:2] == [PA, PA]


def test_ace_tool_uses_trigger():
    msgs = _anth_tools(["bash"] * 5)
    assert ace.clear_tool_uses(msgs, trigger={"type": "tool_uses", "value": 5}) == msgs
    out = ace.clear_tool_uses(msgs, trigger={"type": "tool_uses", "value": 4}, keep=1)
    assert _results(out) == [PA] * 4 + ["r" * 100]


def _thinking_convo():
    th = lambda s: {"type": "thinking", "thinking": s, "signature": "sig"}
    return [
        {"role": "user", "content": "q1"},
        {"role": "assistant", "content": [th("A1"), {"type": "text", "text": "a1"}]},
        {"role": "user", "content": "q2"},
        {"role": "assistant", "content": [th("B1"), {"type": "tool_use", "id": "t", "name": "x", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "r"}]},
        {"role": "assistant", "content": [th("B2"), {"type": "redacted_thinking", "data": "zz"},
                                          {"type": "text", "text": "b"}]},
        {"role": "user", "content": "q3"},
        {"role": "assistant", "content": [{"type": "text", "text": "no thinking"}]},
    ]


def _kinds(msg):
    return [b["type"] for b in msg["content"]]


def test_ace_clear_thinking_keeps_last_thinking_turn_with_tool_loop():
    msgs = _thinking_convo()
    out = ace.clear_thinking(msgs)  # keep 1 turn with thinking: the q2 tool loop
    assert _kinds(out[1]) == ["text"]
    assert _kinds(out[3]) == ["thinking", "tool_use"]
    assert _kinds(out[5]) == ["thinking", "redacted_thinking", "text"]
    assert out[7] == msgs[7]
    # per-message turns: only message 5 keeps thinking
    out2 = ace.clear_thinking(msgs, group_tool_loops=False)
    assert _kinds(out2[3]) == ["tool_use"] and _kinds(out2[5])[0] == "thinking"
    assert ace.clear_thinking(msgs, keep_turns="all") == msgs
    assert ace.clear_thinking(msgs, keep_turns=2) == msgs
