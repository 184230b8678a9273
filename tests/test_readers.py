"""Readers for real agent logs (``rules_compact.readers``), checked on the trace copies in tests/data/traces."""

from __future__ import annotations

import copy
import dataclasses
import functools
import json
import random
from collections import Counter

import pytest

from rules_compact import parse_rules
from rules_compact.errors import InputError
from rules_compact.formats import FORMATS
from rules_compact.readers import READERS, SOURCE_FORMATS, Conversation, claude_code_messages, read_conversations
from rules_compact.formats.responses import RESPONSES
from rules_compact.testing import check_invariants

from conftest import ROOT, STEPPED_DEFAULT, TRACES

CC_SESSION = "claude-code/4d5611e5-241a-462a-8d15-5122611a9569.jsonl"
CC_SUBAGENT = "claude-code/agent-a7be2f0.jsonl"
CC_COMPACT_CALL = "claude-code/agent-acompact-e1f845.jsonl"
SWE_FC = "swe-agent/fc_replace_from_source__marshmallow-1867.traj"
SWE_CTF = "swe-agent/i_got_id_demo.traj"
SWE_PYDICOM = "swe-agent/pydicom__pydicom-1458.traj"
MINI = {  # file: (messages, tool results) from SOURCES.md
    "mini-swe-agent/deepseek_reasoner_dev__sqlfluff__sqlfluff-1763.traj.json": (208, 102),
    "mini-swe-agent/deepseek_lite_dev__marshmallow-code__marshmallow-1343.traj.json": (380, 188),
    "mini-swe-agent/deepseek_chat_test_1-100__django__django-13964.traj.json": (333, 164),
}
TAU = "tau-bench/tool-calling-grok-3-0.0_range_0--1_user-grok-3-llm_0921131646.json"
TAU2 = "tau2-bench/2025-08-10T02-44-06_telecom_gpt-4o_user_gpt-4o.json"
OH_GUI = "openhands/basic_gui_mode.json"
OH_EVAL = "openhands/multi_swe_bench_examples_output.jsonl"
OH_LEGACY = "openhands/resolver_mock_output.jsonl"
OH_PAIRS = "openhands/gorilla-output_gpt-4o-2024-05-13_hf.jsonl"
CODEX = "codex/rollout-2025-11-17T15-30-28-019a93b9-f380-7600-98ff-940e6b99603c.jsonl"
CODEX_COMPACTED = "codex/rollout-2026-02-23T12-54-34-019c8a59-e9dd-71f0-9ae3-4079fe9726a9.jsonl"
CODEX_INTERRUPTED = "codex/rollout-2026-02-23T13-19-38-019c8a70-dda7-7f33-98ea-f30553347322.jsonl"
CODEX_CURATED = "codex/agent-sessions-codex-small.jsonl"
CODEX_LEGACY = "codex/legacy-response-records.jsonl"

BLOCK_KEYS = {
    "text": {"type", "text"},
    "thinking": {"type", "thinking", "signature"},
    "tool_use": {"type", "id", "name", "input"},
    "tool_result": {"type", "tool_use_id", "content", "is_error"},
}


@functools.lru_cache(maxsize=None)
def raw(rel: str) -> bytes:
    return (TRACES / rel).read_bytes()


@functools.lru_cache(maxsize=None)
def read(rel: str) -> list[Conversation]:
    return read_conversations(raw(rel), rel)


def one(rel: str) -> Conversation:
    convs = read(rel)
    assert len(convs) == 1
    return convs[0]


def jsonl(rel: str) -> list[dict]:
    return [json.loads(line) for line in raw(rel).decode("utf-8").splitlines() if line.strip()]


# --- checkers -------------------------------------------------------------------------------------


def anthropic_problems(messages: list) -> list[str]:
    """Messages API rules: alternation from user, each tool_use answered once in the next message, ..."""
    problems = []
    for i, m in enumerate(messages):
        if set(m) != {"role", "content"}:
            problems.append(f"message {i}: keys {sorted(m)}")
        if m["role"] != ("user" if i % 2 == 0 else "assistant"):
            problems.append(f"message {i}: role {m['role']}")
        if not m["content"]:
            problems.append(f"message {i}: empty content")
        for b in m["content"]:
            allowed = BLOCK_KEYS.get(b["type"])
            if allowed is None or not set(b) <= allowed:
                problems.append(f"message {i}: block {sorted(b)}")
    for i, m in enumerate(messages):
        if m["role"] == "assistant":
            uses = [b["id"] for b in m["content"] if b["type"] == "tool_use"]
            if uses and i + 1 < len(messages):
                results = [b["tool_use_id"] for b in messages[i + 1]["content"] if b["type"] == "tool_result"]
                problems += [f"message {i}: {u} answered {results.count(u)} times" for u in uses
                             if results.count(u) != 1]
        else:
            results = [b["tool_use_id"] for b in m["content"] if b["type"] == "tool_result"]
            prev = {b["id"] for b in messages[i - 1]["content"] if b["type"] == "tool_use"} if i else set()
            problems += [f"message {i}: {r} answers nothing in message {i - 1}" for r in results if r not in prev]
            kinds = [b["type"] for b in m["content"]]
            if "tool_result" in kinds and kinds != sorted(kinds, key=lambda k: k != "tool_result"):
                problems.append(f"message {i}: tool_result blocks not first")
    return problems


def openai_pairing(messages: list) -> tuple[list, list, list]:
    """(dangling call ids, orphan result ids, duplicated ids): results must directly follow their call."""
    dangling, orphans, dups = [], [], []
    i = 0
    while i < len(messages):
        m = messages[i]
        if m["role"] == "tool":
            orphans.append(m.get("tool_call_id"))
        elif m["role"] == "assistant" and m.get("tool_calls"):
            ids = [c["id"] for c in m["tool_calls"]]
            got = []
            while i + 1 < len(messages) and messages[i + 1]["role"] == "tool":
                i += 1
                got.append(messages[i].get("tool_call_id"))
            dangling += [c for c in ids if c not in got]
            orphans += [r for r in got if r not in ids]
            dups += [c for c in ids if got.count(c) > 1]
        i += 1
    return dangling, orphans, dups


def results(conv: Conversation) -> list:
    return [it for it in FORMATS[conv.format].items(conv.messages) if it.kind == "tool_result"]


# --- Claude Code ----------------------------------------------------------------------------------


def test_claude_code_session_starts_at_the_compact_summary():
    conv = one(CC_SESSION)
    assert (conv.source_format, conv.format) == ("claude-code", "anthropic")
    first = conv.messages[0]
    assert first["role"] == "user"
    assert first["content"][0]["text"].startswith("This session is being continued from a previous conversation")
    assert any("compact_boundary on line 754" in n for n in conv.notes)
    lines = jsonl(CC_SESSION)
    boundary = max(i for i, d in enumerate(lines) if d.get("subtype") == "compact_boundary")
    assert boundary == 753 and lines[boundary + 1].get("isCompactSummary") is True
    # Nothing from before the boundary: every tool_use id comes from a line after it.
    before = {b["id"] for d in lines[:boundary] if d.get("type") == "assistant"
              for b in d["message"]["content"] if b["type"] == "tool_use"}
    uses = [b["id"] for m in conv.messages for b in m["content"] if b["type"] == "tool_use"]
    assert not before & set(uses)


def test_claude_code_session_merges_split_responses():
    conv = one(CC_SESSION)
    lines = jsonl(CC_SESSION)[754:]
    assistant_lines = [d for d in lines if d.get("type") == "assistant"]
    response_ids = {d["message"]["id"] for d in assistant_lines}
    assert (len(assistant_lines), len(response_ids)) == (134, 78)
    assert sum(m["role"] == "assistant" for m in conv.messages) == 78
    assert len(conv.messages) == 156
    assert anthropic_problems(conv.messages) == []
    found = results(conv)
    assert len(found) == 81 and not any(r.orphan for r in found)
    assert sum(r.is_error for r in found) == 5
    # toolUseResult copies and line metadata are gone.
    assert "toolUseResult" not in json.dumps(conv.messages)
    assert "caller" not in {k for m in conv.messages for b in m["content"] for k in b}


def test_claude_code_whole_session_matches_the_corpus_stats():
    """Without the boundary: 254 assistant lines = 139 responses, 150 tool results (SOURCES.md)."""
    lines = [(n, d) for n, d in enumerate(jsonl(CC_SESSION), 1) if d.get("subtype") != "compact_boundary"]
    assert sum(d.get("type") == "assistant" for _, d in lines) == 254
    assert sum(d.get("type") == "progress" for _, d in lines) == 1083
    messages, notes = claude_code_messages(lines)
    assert sum(m["role"] == "assistant" for m in messages) == 139
    assert anthropic_problems(messages) == []
    conv = Conversation("x", "anthropic", messages, "claude-code")
    assert len(results(conv)) == 150
    assert sum(r.is_error for r in results(conv)) == 5
    parallel = [m for m in messages if sum(b["type"] == "tool_use" for b in m["content"]) > 1]
    assert len(parallel) == 11
    assert any("regrouped" in n for n in notes)


def test_claude_code_subagent_file_is_kept_and_regrouped():
    conv = one(CC_SUBAGENT)
    assert any("subagent" in n for n in conv.notes)
    # Same as the file derived by make_anthropic.py (see SOURCES.md).
    derived = json.loads((TRACES / "claude-code/agent-a7be2f0.messages.json").read_text(encoding="utf-8"))
    assert conv.messages == derived
    assert len(conv.messages) == 26 and anthropic_problems(conv.messages) == []
    # The interleaved response msg_014PMc3i...: its three tool_use blocks are one message.
    calls = [[b["id"][:13] for b in m["content"] if b["type"] == "tool_use"] for m in conv.messages]
    assert ["toolu_013zUH5", "toolu_01BDRAS", "toolu_011D3Lw"] in calls
    ids = {json.loads(line)["message"]["id"] for line in raw(CC_SUBAGENT).decode().splitlines()
           if json.loads(line).get("type") == "assistant"}
    assert sum(m["role"] == "assistant" for m in conv.messages) == len(ids) == 13


def test_claude_code_compaction_call_merges_user_lines():
    conv = one(CC_COMPACT_CALL)
    assert [m["role"] for m in conv.messages] == ["user", "assistant"]
    assert len(conv.messages[0]["content"]) == 4  # four user lines, one message
    assert conv.messages[0]["content"][-1]["text"].startswith("Your task is to create a detailed summary")


def _cc(uuid, parent, kind, content, **extra):
    line = {"type": kind, "uuid": uuid, "parentUuid": parent, "sessionId": "s", "isSidechain": False,
            "message": {"role": kind, "content": content}}
    line.update(extra)
    return line


def _cc_raw(lines) -> bytes:
    return "\n".join(json.dumps(d) for d in lines).encode()


def _texts(conv):
    return [b.get("text") for m in conv.messages for b in m["content"] if b["type"] == "text"]


def test_claude_code_skips_sidechains_progress_and_other_lines():
    use = {"type": "tool_use", "id": "t1", "name": "Task", "input": {"prompt": "look"}}
    lines = [
        {"type": "file-history-snapshot", "messageId": "m0", "snapshot": {}},
        _cc("u1", None, "user", "hi"),
        _cc("a1", "u1", "assistant", [use], **{"message": {"role": "assistant", "id": "r1", "content": [use]}}),
        _cc("p1", "a1", "progress", None, data={"type": "agent_progress"}),
        _cc("s1", None, "user", "subagent prompt", isSidechain=True),
        _cc("s2", "s1", "assistant", [{"type": "text", "text": "subagent answer"}], isSidechain=True),
        {"type": "queue-operation", "operation": "enqueue", "sessionId": "s"},
        _cc("u2", "a1", "user", [{"type": "tool_result", "tool_use_id": "t1", "content": "done"}],
            toolUseResult={"stdout": "done"}),
        {"type": "system", "subtype": "turn_duration", "uuid": "y1", "parentUuid": "u2", "sessionId": "s"},
        _cc("a2", "u2", "assistant", [{"type": "text", "text": "all good"}]),
    ]
    conv = one_raw(_cc_raw(lines))
    assert conv.source_format == "claude-code"
    assert [m["role"] for m in conv.messages] == ["user", "assistant", "user", "assistant"]
    assert _texts(conv) == ["hi", "all good"]
    assert any("2 sidechain" in n for n in conv.notes)
    assert anthropic_problems(conv.messages) == []


def test_claude_code_follows_the_main_chain_after_a_rewind():
    lines = [
        _cc("u1", None, "user", "first prompt"),
        _cc("a1", "u1", "assistant", [{"type": "text", "text": "answer 1"}]),
        _cc("u2", "a1", "user", "abandoned prompt"),
        _cc("a2", "u2", "assistant", [{"type": "text", "text": "abandoned answer"}]),
        _cc("u3", "a1", "user", "edited prompt"),
        _cc("a3", "u3", "assistant", [{"type": "text", "text": "answer 3"}]),
    ]
    conv = one_raw(_cc_raw(lines))
    assert _texts(conv) == ["first prompt", "answer 1", "edited prompt", "answer 3"]
    assert any("abandoned branches" in n for n in conv.notes)


def test_claude_code_uses_the_last_compact_boundary():
    lines = [
        _cc("u1", None, "user", "old prompt"),
        _cc("a1", "u1", "assistant", [{"type": "text", "text": "old answer"}]),
        {"type": "system", "subtype": "compact_boundary", "uuid": "b1", "parentUuid": None,
         "logicalParentUuid": "a1", "sessionId": "s", "isSidechain": False},
        _cc("u2", "b1", "user", "summary one", isCompactSummary=True),
        _cc("a2", "u2", "assistant", [{"type": "text", "text": "middle answer"}]),
        {"type": "system", "subtype": "compact_boundary", "uuid": "b2", "parentUuid": None,
         "logicalParentUuid": "a2", "sessionId": "s", "isSidechain": False},
        _cc("u3", "b2", "user", "summary two", isCompactSummary=True),
        _cc("a3", "u3", "assistant", [{"type": "text", "text": "new answer"}]),
    ]
    conv = one_raw(_cc_raw(lines))
    assert _texts(conv) == ["summary two", "new answer"]


def one_raw(data: bytes, name: str = "in.jsonl") -> Conversation:
    convs = read_conversations(data, name)
    assert len(convs) == 1
    return convs[0]


# --- SWE-agent ------------------------------------------------------------------------------------


def test_swe_agent_function_calling_history():
    conv = one(SWE_FC)
    assert (conv.source_format, conv.format) == ("swe-agent", "openai")
    history = json.loads(raw(SWE_FC))["history"]
    assert len(conv.messages) == len(history) == 28
    assert [m["role"] for m in conv.messages] == [h["role"] for h in history]
    assert [m["content"] for m in conv.messages] == [h["content"] for h in history]
    assert {k for m in conv.messages for k in m} == {"role", "content", "tool_calls", "tool_call_id"}
    tools = [m for m in conv.messages if m["role"] == "tool"]
    assert len(tools) == 13
    assert [m["tool_call_id"] for m in tools] == [h["tool_call_ids"][0] for h in history if h["role"] == "tool"]
    assert tools[-1]["tool_call_id"] == "call_submit"
    assert openai_pairing(conv.messages) == ([], [], [])


@pytest.mark.parametrize("rel,count,users", [(SWE_CTF, 43, 21), (SWE_PYDICOM, 26, 13)])
def test_swe_agent_legacy_text_actions_keep_user_observations(rel, count, users):
    conv = one(rel)
    assert conv.source_format == "swe-agent"
    assert len(conv.messages) == count
    assert Counter(m["role"] for m in conv.messages)["user"] == users
    assert all(set(m) <= {"role", "content", "observation"} for m in conv.messages)
    observed = [m for m in conv.messages if "observation" in m]
    assert len(observed) == users - (2 if rel == SWE_PYDICOM else 1)  # not the task (nor the demonstration)
    assert all(m["role"] == "user" for m in observed)


# --- mini-swe-agent -------------------------------------------------------------------------------


@pytest.mark.parametrize("rel", sorted(MINI))
def test_mini_swe_agent_messages_pass_through(rel):
    conv = one(rel)
    assert (conv.source_format, conv.format) == ("mini-swe-agent", "openai")
    logged = json.loads(raw(rel))["messages"]
    assert logged[-1]["role"] == "exit"  # mini-swe-agent's closing record, which no model saw
    assert conv.messages == logged[:-1]  # nothing else dropped, extra keys kept
    assert conv.notes == ("left out the closing exit message (no model saw it)",)
    count, n_results = MINI[rel]
    assert len(conv.messages) == count - 1
    assert len(results(conv)) == n_results
    dangling, orphans, dups = openai_pairing(conv.messages)
    assert len(dangling) == 1 and not orphans and not dups  # the final submit call (see SOURCES.md)
    last_call = [m for m in conv.messages if m.get("tool_calls")][-1]
    assert dangling == [last_call["tool_calls"][0]["id"]]


# --- tau-bench ------------------------------------------------------------------------------------


def test_tau_bench_one_conversation_per_trajectory():
    convs = read(TAU)
    data = json.loads(raw(TAU))
    assert len(convs) == len(data) == 115
    assert [c.name for c in convs[:2]] == [f"{TAU}#1", f"{TAU}#2"]
    assert all(c.source_format == "tau-bench" and c.format == "openai" for c in convs)
    assert [c.messages for c in convs] == [r["traj"] for r in data]
    assert convs[0].notes == ("task 0, trial 0",)
    assert sum(len(c.messages) for c in convs) == 3804
    sizes = sorted(len(c.messages) for c in convs)
    assert (sizes[0], sizes[len(sizes) // 2], sizes[-1]) == (12, 32, 58)
    tool_results = [r for c in convs for r in results(c)]
    assert len(tool_results) == 932 and not any(r.orphan for r in tool_results)
    assert sum(r.text.startswith("Error:") for r in tool_results) == 159
    assert sum(r.text.startswith("Error: 503") for r in tool_results) == 123
    for c in convs:
        assert c.messages[0]["role"] == "system"
        assert openai_pairing(c.messages) == ([], [], [])


# --- tau2 -----------------------------------------------------------------------------------------


def test_tau2_one_agent_view_per_simulation():
    convs = read(TAU2)
    sims = json.loads(raw(TAU2))["simulations"]
    assert len(convs) == len(sims) == 20
    assert all(c.source_format == "tau2" and c.format == "openai" for c in convs)
    assert sum(len(s["messages"]) for s in sims) == 715
    # The agent never saw the user simulator's 104 tool-call messages and 125 results.
    user_calls = sum(1 for s in sims for m in s["messages"] if m["role"] == "user" and m.get("tool_calls"))
    user_results = sum(1 for s in sims for m in s["messages"] if m.get("requestor") == "user")
    assert (user_calls, user_results) == (104, 125)
    assert sum(len(c.messages) for c in convs) == 715 - 104 - 125 == 486
    assert sum(len(results(c)) for c in convs) == 90
    assert sum(r.is_error for c in convs for r in results(c)) == 1
    assert {k for c in convs for m in c.messages for k in m} <= {"role", "content", "tool_calls", "tool_call_id",
                                                                "is_error"}
    assert not any(m.get("tool_calls") for c in convs for m in c.messages if m["role"] == "user")
    parallel = sum(1 for c in convs for m in c.messages if len(m.get("tool_calls") or []) > 1)
    assert parallel == 12
    for c, sim in zip(convs, sims):
        assert openai_pairing(c.messages) == ([], [], [])
        originals = {tc["id"]: tc for m in sim["messages"] for tc in m.get("tool_calls") or []}
        for m in c.messages:
            for call in m.get("tool_calls") or []:
                assert call["type"] == "function"
                assert json.loads(call["function"]["arguments"]) == originals[call["id"]]["arguments"]


# --- OpenHands ------------------------------------------------------------------------------------


def test_openhands_event_list_pairs_actions_and_observations():
    conv = one(OH_GUI)
    assert (conv.source_format, conv.format) == ("openhands", "openai")
    assert [m["role"] for m in conv.messages] == ["user"] + ["assistant", "tool"] * 4 + ["assistant"]
    assert conv.messages[0]["content"].startswith("I want to create a VueJS app")
    assert openai_pairing(conv.messages) == ([], [], [])
    events = json.loads(raw(OH_GUI))
    ids = [e["tool_call_metadata"]["tool_call_id"] for e in events if e.get("action") and e.get("tool_call_metadata")]
    assert [m["tool_call_id"] for m in conv.messages if m["role"] == "tool"] == ids
    assert conv.messages[-1]["content"].startswith("I've created a complete Vue.js todo application")


def test_openhands_eval_output_one_conversation_per_line():
    convs = read(OH_EVAL)
    assert [c.name for c in convs] == [f"{OH_EVAL}#{i}" for i in (1, 2, 3)]
    assert [len(results(c)) for c in convs] == [22, 32, 49]  # 103 observations (SOURCES.md)
    for c in convs:
        assert [m["role"] for m in c.messages[:2]] == ["system", "user"]
        assert openai_pairing(c.messages) == ([], [], [])
    errors = [m["content"] for c in convs for m in c.messages if m["role"] == "user"
              and m["content"].endswith("[Error occurred in processing last action]")]
    assert len(errors) == 2  # invalid tool arguments: no action was recorded, OpenHands says so as the user
    assert convs[0].messages[-1]["role"] == "assistant" and "tool_calls" not in convs[0].messages[-1]  # finish
    assert convs[2].messages[-1]["role"] == "tool"  # stopped at the iteration limit


def test_openhands_legacy_events_are_paired_by_position():
    convs = read(OH_LEGACY)
    assert len(convs) == 2
    assert [len(results(c)) for c in convs] == [3, 21]  # 24 observations (SOURCES.md)
    for c in convs:
        assert c.messages[0]["role"] == "user"
        assert openai_pairing(c.messages) == ([], [], [])
        assert all(m["tool_call_id"].startswith("openhands-event-") for m in c.messages if m["role"] == "tool")
        assert c.messages[-1]["role"] == "assistant" and not c.messages[-1].get("tool_calls")
        assert any("positionally" in n for n in c.notes)
    first_call = convs[0].messages[1]["tool_calls"][0]
    assert first_call["function"] == {"name": "run", "arguments": json.dumps({"command": "touch LICENSE"})}


def test_openhands_parallel_calls_wait_for_every_observation():
    def response(*ids):
        return {"id": "resp", "choices": [{"message": {"role": "assistant", "content": "two at once", "tool_calls": [
            {"id": i, "type": "function", "function": {"name": "execute_bash", "arguments": "{}"}} for i in ids]}}]}

    def tcm(i):
        return {"tool_call_id": i, "function_name": "execute_bash", "model_response": response("c1", "c2")}

    events = [
        {"id": 0, "source": "user", "action": "message", "args": {"content": "go"}},
        {"id": 1, "source": "agent", "action": "run", "args": {"command": "a"}, "tool_call_metadata": tcm("c1")},
        {"id": 2, "source": "agent", "observation": "run", "cause": 1, "content": "A", "tool_call_metadata": tcm("c1")},
        {"id": 3, "source": "agent", "action": "run", "args": {"command": "b"}, "tool_call_metadata": tcm("c2")},
        {"id": 4, "source": "agent", "observation": "error", "cause": 3, "content": "B failed"},
        {"id": 5, "source": "agent", "action": "run", "args": {"command": "c"},
         "tool_call_metadata": {"tool_call_id": "c3", "function_name": "execute_bash"}},
    ]
    conv = one_raw(json.dumps(events).encode(), "events.json")
    assert [m["role"] for m in conv.messages] == ["user", "assistant", "tool", "tool", "assistant"]
    assert [c["id"] for c in conv.messages[1]["tool_calls"]] == ["c1", "c2"]
    assert conv.messages[3] == {"role": "tool", "tool_call_id": "c2", "content": "B failed", "is_error": True}
    assert openai_pairing(conv.messages) == (["c3"], [], [])
    assert any("dangling" in n for n in conv.notes)


def test_opendevin_pairs_become_the_messages_of_each_action_and_observation():
    convs = read(OH_PAIRS)
    lines = jsonl(OH_PAIRS)
    assert len(convs) == len(lines) == 100
    for conv, line in zip(convs, lines):
        assert (conv.source_format, conv.format) == ("openhands", "openai")
        # each run: the task, the agent's answer, the harness's "run exit" prompt; then finish (no message)
        assert [m["role"] for m in conv.messages] == ["user", "assistant", "user"]
        actions = [pair[0] for pair in line["history"]]
        assert [m["content"] for m in conv.messages] == [a["args"]["content"] for a in actions[:3]]
        assert actions[3]["action"] == "finish" and all(p[1]["observation"] == "null" for p in line["history"])
        assert conv.notes[0] == "OpenDevin output: 4 [action, observation] pairs"


def test_opendevin_pairs_pair_an_action_with_its_observation():
    run = {"id": 3, "source": "agent", "action": "run", "args": {"command": "ls", "thought": "look"}}
    output = {"observation": "run", "content": "a.py", "extras": {"exit_code": 0}}
    task = {"id": 0, "source": "user", "action": "message", "args": {"content": "fix it"}}
    line = {"instance_id": "x", "messages": ["fix it", "look"],  # a variant's extra keys
            "history": [[task, {"observation": "null", "content": ""}], [run, output]]}
    conv = one_raw(json.dumps(line).encode(), "output.jsonl")
    call = {"id": "openhands-event-3", "type": "function",
            "function": {"name": "run", "arguments": json.dumps({"command": "ls"})}}
    assert conv.messages == [{"role": "user", "content": "fix it"},
                             {"role": "assistant", "content": "look", "tool_calls": [call]},
                             {"role": "tool", "tool_call_id": "openhands-event-3", "content": "a.py"}]
    assert any("positionally" in n for n in conv.notes)


# --- OpenAI Codex CLI rollouts --------------------------------------------------------------------


def payloads(rel: str, start: int = 0) -> list[dict]:
    """The ``response_item`` payloads of a rollout, from line ``start`` (1-based) on."""
    return [d["payload"] for n, d in enumerate(jsonl(rel), 1) if n >= start and d["type"] == "response_item"]


def test_codex_rollout_is_its_response_items():
    conv = one(CODEX)
    assert (conv.source_format, conv.format) == ("codex", "responses")
    sent = [p for p in payloads(CODEX) if p["type"] != "ghost_snapshot"]
    assert conv.messages == sent and len(sent) == 118  # 2 user messages, 38 reasoning, 39 calls, 39 outputs
    reasoning = [m for m in conv.messages if m["type"] == "reasoning"]
    assert len(reasoning) == 38 and all(m["encrypted_content"].startswith("gAAAA") for m in reasoning)
    assert any("1 ghost_snapshot items" in n for n in conv.notes)
    assert any("119 event_msg, 40 turn_context, 1 session_meta lines" in n for n in conv.notes)
    items = RESPONSES.items(conv.messages)
    assert len([it for it in items if it.kind == "tool_result"]) == 39
    assert not any(it.orphan or it.dangling for it in items)


def test_codex_reasoning_is_never_altered():
    conv = one(CODEX)
    result = check_invariants(conv.messages, STEPPED_DEFAULT, "responses", idempotent=False)  # the default's rules
    assert result.report.tokens_after < result.report.tokens_before
    before = [m for m in conv.messages if m["type"] == "reasoning"]
    after = [m for m in result.messages if m["type"] == "reasoning"]
    assert after == before


def test_codex_starts_at_the_last_compacted_line():
    conv = one(CODEX_COMPACTED)
    lines = jsonl(CODEX_COMPACTED)
    compacted = [n for n, d in enumerate(lines, 1) if d["type"] == "compacted"]
    assert compacted == [1788]
    replacement = lines[1787]["payload"]["replacement_history"]
    assert replacement[-1]["type"] == "compaction"  # Codex's encrypted summary, sent as it is
    assert conv.messages == replacement + payloads(CODEX_COMPACTED, 1789)
    assert conv.notes[0] == ("started at the compacted line 1788: Codex replaced the history with its "
                             "replacement_history (40 items)")
    kinds = Counter(m["type"] for m in conv.messages)
    assert kinds["custom_tool_call"] == kinds["custom_tool_call_output"] == 21
    assert not any(it.orphan or it.dangling for it in RESPONSES.items(conv.messages))


def test_codex_curated_rollout_with_every_line_type():
    conv = one(CODEX_CURATED)
    lines = jsonl(CODEX_CURATED)
    last = max(n for n, d in enumerate(lines, 1) if d["type"] == "compacted")
    replacement = lines[last - 1]["payload"]["replacement_history"]
    sent = replacement + [d["payload"] for d in lines[last:] if d["type"] == "response_item"]
    # the fixture trimmed a call's arguments to null, which the API never takes: read as "{}", with a note
    trimmed = [i for i, it in enumerate(sent) if it.get("type") == "function_call" and it["arguments"] is None]
    assert len(trimmed) == 1 and conv.messages[trimmed[0]]["arguments"] == "{}"
    assert conv.messages == [{**it, "arguments": "{}"} if i in trimmed else it for i, it in enumerate(sent)]
    assert any("null arguments of 1 function_call items" in n for n in conv.notes)
    assert any("5 world_state" in n and "1 inter_agent_communication_metadata" in n for n in conv.notes)
    # without its compacted lines, the file's other items show: custom and tool-search calls kept,
    # the ghost snapshot left out
    rest = "\n".join(json.dumps(d) for d in lines if d["type"] != "compacted").encode()
    whole = one_raw(rest, "rest.jsonl")
    kinds = Counter(m["type"] for m in whole.messages)
    assert (kinds["custom_tool_call"], kinds["custom_tool_call_output"], kinds["tool_search_call"]) == (2, 3, 2)
    assert "ghost_snapshot" not in kinds and any("1 ghost_snapshot items" in n for n in whole.notes)
    assert any("tool_search_call" in n and "pass through the rules untouched" in n for n in whole.notes)


def test_codex_interrupted_session_keeps_its_dangling_call():
    conv = one(CODEX_INTERRUPTED)
    assert conv.messages[-1]["type"] == "function_call"
    assert [it.dangling for it in RESPONSES.items(conv.messages) if it.kind == "assistant"][-1]
    assert any("1 calls without an output" in n for n in conv.notes)


def test_codex_legacy_rollout():
    conv = one(CODEX_LEGACY)
    lines = jsonl(CODEX_LEGACY)
    assert (conv.source_format, conv.format) == ("codex", "responses")
    assert conv.messages == [d for d in lines[1:] if "record_type" not in d]
    assert [m["type"] for m in conv.messages] == ["message", "reasoning", "function_call", "function_call_output",
                                                  "function_call", "function_call_output", "message"]
    assert conv.notes[0] == "legacy rollout: a meta line, then one item per line"
    assert any("3 record_type state, 1 meta lines" in n for n in conv.notes)


def _codex_line(kind: str, payload: dict) -> str:
    return json.dumps({"timestamp": "2025-10-01T00:00:00Z", "type": kind, "payload": payload})


def _msg(role: str, text: str) -> dict:
    part = "output_text" if role == "assistant" else "input_text"
    return {"type": "message", "role": role, "content": [{"type": part, "text": text}]}


def test_codex_compacted_with_only_a_summary_is_rebuilt_as_codex_does():
    items = [_msg("developer", "be careful"), _msg("user", "<environment_context>cwd=/r</environment_context>"),
             _msg("user", "fix the bug"), _msg("assistant", "on it"),
             {"type": "function_call", "call_id": "c1", "name": "shell", "arguments": "{}"},
             {"type": "function_call_output", "call_id": "c1", "output": "x" * 1000}, _msg("user", "and the tests")]
    lines = [_codex_line("session_meta", {"id": "s"})] + [_codex_line("response_item", it) for it in items]
    lines += [_codex_line("compacted", {"message": "SUMMARY: bug fixed, tests left"}),
              _codex_line("response_item", _msg("user", "go on")),
              _codex_line("compacted", {"message": "SUMMARY 2"})]
    conv = one_raw("\n".join(lines).encode(), "rollout.jsonl")
    user = lambda text: {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}  # noqa: E731
    # the initial context recorded before, the user's own messages (the first summary left out), the summary
    assert conv.messages == items[:2] + [user("fix the bug"), user("and the tests"), user("go on"), user("SUMMARY 2")]
    assert conv.notes[0].startswith("started at the compacted line 11: rebuilt what Codex sends after it")


def test_codex_thread_rolled_back_drops_the_last_turns():
    lines = [_codex_line("response_item", it) for it in
             (_msg("user", "one"), _msg("assistant", "1"), _msg("user", "two"), _msg("assistant", "2"))]
    lines.append(_codex_line("event_msg", {"type": "thread_rolled_back", "num_turns": 1}))
    lines.append(_codex_line("response_item", _msg("user", "three")))
    conv = one_raw("\n".join(lines).encode(), "rollout.jsonl")
    assert [m["content"][0]["text"] for m in conv.messages] == ["one", "1", "three"]


def test_codex_local_shell_call_is_a_call_answered_by_its_output():
    action = {"type": "exec", "command": ["bash", "-lc", "cat big.log"], "timeout_ms": 10000,
              "working_directory": None, "env": None, "user": None}
    items = [_msg("user", "read the log"),
             {"type": "local_shell_call", "id": "lsh_1", "call_id": "call_1", "status": "completed", "action": action},
             {"type": "function_call_output", "call_id": "call_1", "output": "log line\n" * 2000},
             {"type": "local_shell_call", "id": "lsh_2", "call_id": "call_2", "status": "completed", "action": action},
             {"type": "local_shell_call_output", "id": "call_2", "output": "again\n" * 2000}]
    items += [_msg("user", f"more {i}") if i % 2 else _msg("assistant", f"ok {i}") for i in range(30)]
    conv = one_raw("\n".join(_codex_line("response_item", it) for it in items).encode(), "rollout.jsonl")
    results = [it for it in RESPONSES.items(conv.messages) if it.kind == "tool_result"]
    assert [(it.tool_name, it.tool_call_id, it.orphan) for it in results] == [("local_shell", "call_1", False),
                                                                               ("local_shell", "call_2", False)]
    rules = parse_rules("version: 1\nname: clear\nrules:\n  - {name: c, match: {role: tool}, "
                        "action: {clear-inputs: {}}}\n", "clear")
    out = check_invariants(conv.messages, [rules], "responses").messages
    assert out[1]["action"] == action and out[3]["action"] == action  # a shell call's action is never blanked


# --- plain messages and detection -----------------------------------------------------------------


def test_responses_items_and_bodies_are_read_as_they_are():
    items = one(CODEX).messages
    conv = one_raw(json.dumps(items).encode(), "r.json")
    assert (conv.source_format, conv.format, conv.messages) == ("messages", "responses", items)
    assert conv.with_messages(items[:1]) == items[:1]
    body = {"model": "gpt-5-codex", "instructions": "be brief", "input": items, "store": False}
    conv = one_raw(json.dumps(body).encode(), "body.json")
    assert (conv.source_format, conv.format, conv.messages) == ("messages", "responses", items)
    assert conv.with_messages(items[:1]) == {**body, "input": items[:1]}
    conv = one_raw("\n".join(json.dumps(it) for it in items).encode(), "r.jsonl")
    assert (conv.format, conv.messages, conv.one_per_line) == ("responses", items, True)


def test_every_reader_is_in_one_table():
    assert set(SOURCE_FORMATS) == {"messages", "claude-code", "codex", "swe-agent", "mini-swe-agent", "tau-bench",
                                   "tau2", "openhands"}
    assert {r.kind for r in READERS} == {"lines", "object", "list"}




@pytest.mark.parametrize("rel,fmt", [("coding-session.json", "openai"), ("anthropic-session.json", "anthropic")])
def test_plain_request_bodies_stay_as_they_are(rel, fmt):
    data = (ROOT / "examples" / rel).read_bytes()
    conv = one_raw(data, rel)
    assert (conv.source_format, conv.format, conv.name) == ("messages", fmt, rel)
    body = json.loads(data)
    assert conv.messages == body["messages"]
    assert conv.with_messages([]) == {**body, "messages": []}


def test_plain_lists_and_jsonl():
    msgs = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    conv = one_raw(json.dumps(msgs).encode(), "m.json")
    assert conv.messages == msgs and conv.with_messages(msgs[:1]) == msgs[:1]
    assert one_raw(b"[]", "e.json").messages == []
    conv = one_raw("\n".join(json.dumps(m) for m in msgs).encode())
    assert conv.messages == msgs
    bodies = "\n".join(json.dumps({"messages": msgs[: i + 1], "id": i}) for i in range(3)) + "\n"
    convs = read_conversations(bodies.encode(), "ft.jsonl")
    assert [c.name for c in convs] == ["ft.jsonl#1", "ft.jsonl#2", "ft.jsonl#3"]
    assert convs[2].with_messages([]) == {"messages": [], "id": 2}
    assert one(SWE_FC).with_messages(msgs) == msgs  # a converted log is written as a message list


def test_a_jsonl_line_breaks_only_at_newlines():
    # Node's JSON.stringify (Claude Code, Codex) writes U+2028, U+2029 and U+0085 raw in strings:
    # they are no line breaks of a JSONL file, where str.splitlines would break there
    msgs = [{"role": "user", "content": "a\u2028b\u2029c\x85d\x0be"}, {"role": "assistant", "content": "ok"}]
    text = "\r\n".join(json.dumps(m, ensure_ascii=False) for m in msgs) + "\n"
    assert one_raw(text.encode(), "m.jsonl").messages == msgs


def test_conversation_is_frozen():
    conv = one_raw(b'[{"role": "user", "content": "hi"}]')
    with pytest.raises(dataclasses.FrozenInstanceError):
        conv.name = "other"  # type: ignore[misc]


# --- bad input ------------------------------------------------------------------------------------

BAD = [
    (b"hello", "in.json:1:1: invalid JSON"),
    (b"", "invalid JSON"),
    (b'[{"role": "user", "content": "hi"}]\n[{"role": "user"}]\n{"broken', "in.json:3:"),
    (b"\xff\xfe", "not UTF-8"),
    (b"42", "in.json: expected a list of messages or an object with a 'messages' list, got a number"),
    (b'{"foo": 1}', "in.json: expected a list of messages or an object with a 'messages' list; "
                    "the object has keys: foo"),
    (b'{"messages": "hi"}', "in.json: 'messages' must be a list, got a string"),
    (b"[1, 2]", "in.json: a list whose items are neither messages nor a known log format: item 0 is not a message "
                "(an object with a string 'role')"),
    (b'[{"role": "user"}, {"content": "x"}]', "item 1 is not a message"),
    (b'{"messages": [{"role": 5}]}', "in.json: message 0 is not a message (an object with a string 'role'); "
                                    "not a known conversation format"),
    (b'{"trajectory": [], "history": 3}', "'history' is a number"),
    (b'{"trajectory": [], "history": [{"role": "tool", "tool_calls": 5}, 7]}', "history entry 1"),
    (b'{"trajectory_format": "mini-swe-agent-1.1", "messages": {}}', "'messages' is an empty object"),
    (b'[{"task_id": 1, "traj": [{"role": "user"}, 3]}]', "tau-bench result 0"),
    (b'{"simulations": 5}', "'simulations' is a number"),
    (b'{"simulations": [{"messages": [{"role": "tool", "content": "x"}]}]}', "a tool message without"),
    (b'{"simulations": [{"messages": [{"role": "assistant", "tool_calls": [{"id": 1}]}]}]}', "tool call"),
    (b'{"type": "user", "uuid": "u", "message": {"content": 5}}', "in.json:1: message content is a number"),
    (b'{"type": "assistant", "uuid": "u"}\n{"type": "user", "uuid": "v", "message": {}}',
     "in.json:1: a 'assistant' line without a 'message' object"),
    (b'{"history": [{"action": "message"}, 5]}', "expected a list of messages"),
    (b'{"input": "hi"}', "in.json: 'input' must be a list of Responses items, got a string"),
    (b'{"input": [{"type": "message", "role": "user", "content": "hi"}, 3]}', "'input' item 1 is not a Responses item"),
    (b'[{"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"}, 3]',
     "in.json: a list of Responses items whose item 1 is not a Responses item"),
    (b'{"type": "session_meta", "payload": {}}\n{"type": "response_item", "payload": 5}',
     "in.json:2: a response_item payload is a number, not a Responses item"),
    (b'{"type": "compacted", "payload": {"message": 5}}', "in.json:1: a compacted line with neither"),
    (b'{"history": [[{"action": "run"}, {"observation": "run"}], [{"action": "run"}]]}',
     "in.json: OpenDevin history pair 1 is not [action, observation]"),
]


@pytest.mark.parametrize("data,fragment", BAD)
def test_bad_input_is_one_clear_line(data, fragment):
    with pytest.raises(InputError) as info:
        read_conversations(data, "in.json")
    message = str(info.value)
    assert message.startswith("in.json") and "\n" not in message
    assert fragment in message


SAMPLES = [CC_SUBAGENT, SWE_FC, OH_GUI, OH_LEGACY, OH_PAIRS, CODEX, CODEX_CURATED, CODEX_LEGACY]
JUNK = [None, 0, -1, 1.5, True, "", "x", [], {}, [None], {"type": "tool_use"}, {"role": "tool"}]


def _mutate(value, rng: random.Random):
    """Replace one randomly chosen value inside ``value`` (or a key's presence) with junk."""
    if isinstance(value, dict) and value and rng.random() < 0.8:
        key = rng.choice(list(value))
        if rng.random() < 0.15:
            del value[key]
        else:
            value[key] = _mutate(value[key], rng)
        return value
    if isinstance(value, list) and value and rng.random() < 0.8:
        i = rng.randrange(len(value))
        value[i] = _mutate(value[i], rng)
        return value
    return copy.deepcopy(rng.choice(JUNK))


@pytest.mark.parametrize("rel", SAMPLES)
def test_odd_input_never_crashes(rel):
    """Random damage to real logs gives conversations or one InputError line, never another exception."""
    rng = random.Random(rel)
    text = raw(rel).decode("utf-8")
    is_jsonl = rel.endswith(".jsonl")
    base = [json.loads(line) for line in text.splitlines()][:40] if is_jsonl else json.loads(text)
    for _ in range(150):
        data = copy.deepcopy(base)
        for _ in range(rng.randint(1, 4)):
            data = _mutate(data, rng)
        out = ("\n".join(json.dumps(d) for d in data) if is_jsonl and isinstance(data, list) else json.dumps(data))
        try:
            convs = read_conversations(out.encode(), "in.json")
        except InputError as exc:
            assert str(exc).startswith("in.json") and "\n" not in str(exc)
            continue
        for conv in convs:
            assert conv.format in FORMATS and isinstance(conv.messages, list)
            FORMATS[conv.format].scan(conv.messages)


# --- every trace is valid input ---------------------------------------------------------------------

TRACE_FILES = sorted(p for p in TRACES.rglob("*")
                     if p.suffix in (".json", ".jsonl", ".traj"))


@pytest.mark.parametrize("path", TRACE_FILES, ids=lambda p: p.name)
def test_every_trace_goes_through_stats(path, capsys):
    """The messages a reader gives are ones a model API accepts (rules-compact checks each
    message's shape and stops at a bad one)."""
    from rules_compact.cli import main

    assert main(["stats", str(path)]) == 0, capsys.readouterr().err
