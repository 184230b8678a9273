"""The bundled default rules (rules/default.yaml) meet their targets on real traces.

On each of the six mini-swe-agent trajectories (tests/data/traces/mini-swe-agent/), replayed round
by round with ``rules_compact.replay`` (tokens estimated with chars4, Anthropic prices: cached 0.1,
uncached 1.25), the default must give

* prompt tokens <= 0.50 of no compaction,
* cache-aware cost <= 0.60 of no compaction (the issue-15 targets; bench/replay_table.py --check
  asserts them with the others on the whole corpus),
* a lower cost than every preset in rules/presets/ (asserted here on two traces, a deepseek-chat
  and a deepseek-reasoner one, to keep the suite fast; bench/replay_table.py --traces
  'mini-swe-agent/*' prints it on all six).

And it must be cache-stable: while the boundary stays (it moves once a move has paid for
itself: ``step.pay_back``) the compacted prefix is byte-identical from round to round (so every
round's cached tokens are all of the previous round's prompt), the set of changed items only
grows, and only when the boundary moves. Errors, workflow tools and already
compacted content are kept; the Anthropic cache breakpoint sits on the last item before the
boundary, and OpenAI messages get none. Deterministic: no timings.
"""

from __future__ import annotations

import copy
import json
from dataclasses import replace
from functools import lru_cache
from pathlib import Path

import pytest

from rules_compact import Compactor, compact, load_rules
from rules_compact.language.model import PayBack, Step
from rules_compact.readers import read_conversations
from rules_compact.replay import PRICES, replay, round_starts, step_schedule

TRACES = Path(__file__).parent / "data" / "traces"
MINI_SWE = sorted((TRACES / "mini-swe-agent").glob("*.traj.json"))
IDS = [p.name.removesuffix(".traj.json").split("_")[1] + "-" + p.name.split("__")[-1].removesuffix(".traj.json")
       for p in MINI_SWE]
#: The peers' presets (default-recoverable, the default's variant, clears harder by design: not a peer)
PRESETS = sorted(p.stem for p in (Path(__file__).parent.parent / "rules" / "presets").glob("*.yaml")
                 if p.stem != "default-recoverable")
#: one deepseek-chat trace (assistant text) and one deepseek-reasoner trace (reasoning_content)
PRESET_TRACES = ["deepseek_chat_test_1-100__django__django-13964.traj.json",
                 "deepseek_reasoner_dev__sqlfluff__sqlfluff-1763.traj.json"]
PRICE = PRICES["anthropic"]
TARGET_PROMPT, TARGET_COST = 0.50, 0.60
KEEP_RECENT = 8
WORKFLOW = ["LoadSkill", "Task", "TodoWrite", "TodoRead", "PlanAhead", "AgentTeam", "Ask", "SendMessage",
            "CreateTeammate"]

DEFAULT = load_rules("default")
CONTENT = replace(DEFAULT, step=None)  # the content rules: what decides the prefix before the boundary


@lru_cache(maxsize=None)
def _text(path: Path) -> str:
    return json.dumps(read_conversations(path.read_bytes(), path.name)[0].messages)


def messages(path: Path) -> list:
    return json.loads(_text(path))


@lru_cache(maxsize=None)
def replays(path: Path):
    msgs = messages(path)
    return replay(msgs, None, "openai", PRICE), replay(msgs, [DEFAULT], "openai", PRICE, "default")


def tool_results_before(msgs: list, end: int) -> int:
    return sum(1 for m in msgs[:end] if m.get("role") == "tool")


# --- the policy is what the description says ---------------------------------------------------


def placeholder(tool: str, args: str, lines: int, names: str = "") -> str:
    return f"[Previous: used {tool}: {args}; {lines} lines; names: {names}]"


def test_default_is_stepped_and_marks_the_boundary():
    assert DEFAULT.name == "default"
    assert DEFAULT.step == Step("tool_results", 1, PayBack(12.5, 1.5), growth=0.02)
    names = [r.name for r in DEFAULT.rules]
    assert names[:2] == ["cache-breakpoint-at-step", "cache-breakpoint-at-step-error"]
    assert names.index("keep-errors") < names.index("clear-superseded") < names.index("keep-recent")
    assert names[-1] == "placeholder-old-results"


# --- the targets ----------------------------------------------------------------------------------


@pytest.mark.parametrize("path", MINI_SWE, ids=IDS)
def test_prompt_and_cost_targets(path):
    none, default = replays(path)
    assert none.rounds == default.rounds > 100
    prompt, cost = default.total_prompt / none.total_prompt, default.cost / none.cost
    assert prompt <= TARGET_PROMPT, f"prompt tokens {prompt:.3f} of no compaction"
    assert cost <= TARGET_COST, f"cost {cost:.3f} of no compaction"


@pytest.mark.parametrize("name", PRESET_TRACES, ids=["chat-django-13964", "reasoner-sqlfluff-1763"])
def test_cheaper_than_every_preset(name):
    path = TRACES / "mini-swe-agent" / name
    none, default = replays(path)
    msgs = messages(path)
    assert len(PRESETS) >= 10
    for preset in PRESETS:
        r = replay(msgs, [load_rules(f"preset:{preset}")], "openai", PRICE, preset)
        assert default.cost < r.cost, f"{preset}: {r.cost / none.cost:.3f} <= default {default.cost / none.cost:.3f}"


# --- cache stability ----------------------------------------------------------------------------


@pytest.mark.parametrize("path", MINI_SWE, ids=IDS)
def test_the_cache_hits_the_whole_previous_prompt_while_the_boundary_stays(path):
    """While the boundary stays, a round's cached tokens are all of the previous round's prompt
    tokens; the cache misses only in rounds where the boundary moved, and it moves rarely."""
    _, default = replays(path)
    msgs = messages(path)
    boundaries = step_schedule(msgs, DEFAULT, "openai")
    moves = 0
    for k in range(1, default.rounds):
        if boundaries[k] == boundaries[k - 1]:
            assert default.cached_tokens[k] == default.prompt_tokens[k - 1], f"round {k}"
        else:
            moves += 1
    assert 3 <= moves <= default.rounds // 4


def test_decided_prefix_is_byte_identical_within_a_step():
    """Round by round on a real trace: the messages up to the boundary are byte-identical while the
    boundary stays, everything after it is the raw history, and the changed set only grows."""
    msgs = messages(MINI_SWE[-1])
    previous_text, previous_changed, previous_boundary = None, set(), -1
    boundaries = 0
    compactor = Compactor(DEFAULT, format="openai")  # what compact() gives (test_compactor.py), faster
    for end in round_starts(msgs):
        out = compactor(msgs[:end])
        decisions = out.report.passes[0].decisions
        boundary = max((d.message for d in decisions if d.note != "after the step boundary: left as it is"),
                       default=-1) + 1
        assert out.messages[boundary:] == msgs[boundary:end]
        text = json.dumps(out.messages[:boundary], sort_keys=True)
        changed = {d.item for d in decisions if d.changed}
        if boundary == previous_boundary:
            assert text == previous_text
            assert changed == previous_changed
        else:
            assert boundary > previous_boundary
            assert changed >= previous_changed  # cleared items stay cleared
            boundaries += 1
        previous_text, previous_changed, previous_boundary = text, changed, boundary
    assert boundaries >= 5


def test_new_changes_at_a_boundary_are_near_its_end():
    """What first changes when the boundary moves lies among the results it passed, the 8 kept
    before them and the 30 whose turns keep their notes: the cache is rewritten only from there on
    (a repeated call's stale result excepted)."""
    msgs = messages(MINI_SWE[-2])
    previous, previous_boundary = None, 0
    compactor = Compactor(DEFAULT, format="openai")
    for end, boundary in zip(round_starts(msgs), step_schedule(msgs, DEFAULT, "openai")):
        out = compactor(msgs[:end])
        if previous is not None and boundary > previous_boundary:
            first = next((i for i, (a, b) in enumerate(zip(out.messages, previous)) if a != b), None)
            passed = tool_results_before(msgs, boundary) - tool_results_before(msgs, previous_boundary)
            decisions = {d.message: d for d in out.report.passes[0].decisions}
            if first is not None and decisions[first].rule != "clear-superseded":
                assert tool_results_before(msgs, boundary) - tool_results_before(msgs, first) <= passed + 30
        previous, previous_boundary = out.messages, boundary


# --- what is kept -------------------------------------------------------------------------------


def test_errors_workflow_tools_and_compacted_content_are_kept():
    msgs = messages(MINI_SWE[0])
    results = [i for i, m in enumerate(msgs) if m.get("role") == "tool"]
    big = [i for i in results[:-40] if len(msgs[i]["content"]) > 800]
    errors, workflow, compacted = big[0:6], big[6:6 + len(WORKFLOW)], big[-3:]
    calls = {c["id"]: c for m in msgs if m.get("role") == "assistant" for c in m.get("tool_calls") or []}
    for i in errors:
        msgs[i]["is_error"] = True
    for i, name in zip(workflow, WORKFLOW):
        calls[msgs[i]["tool_call_id"]]["function"]["name"] = name
    for i in compacted:
        msgs[i]["content"] = placeholder("bash", "ls", 3)
    original = copy.deepcopy(msgs)
    out = compact(msgs, DEFAULT, format="openai")
    assert msgs == original
    for i in errors + workflow + compacted:
        assert out.messages[i] is msgs[i]
    decisions = {d.message: d for d in out.report.passes[0].decisions if d.role == "tool"}
    assert {decisions[i].rule for i in errors} == {"keep-errors"}
    assert {decisions[i].rule for i in workflow} == {"keep-workflow-tools"}
    assert {decisions[i].rule for i in compacted} == {"keep-compacted"}
    # the other old, large results are cleared
    cleared = [i for i in big if i not in errors + workflow + compacted]
    assert cleared and all(out.messages[i]["content"].startswith("[Previous: used bash: ") for i in cleared)


USER_ANSWERS = TRACES / "claude-code" / "4d5611e5-241a-462a-8d15-5122611a9569.jsonl"


def test_what_the_user_said_is_kept():
    """A Claude Code session where the agent asked the user (AskUserQuestion): the answer, 25
    results back, stays whole; so do the results of the other tools that return user input
    (Ask*, ask_*, ExitPlanMode's plan approval), while their calls' turns are stripped as usual
    (the content rules, as they decide the prefix before the boundary)."""
    msgs = read_conversations(USER_ANSWERS.read_bytes(), USER_ANSWERS.name)[0].messages
    out = compact(msgs, CONTENT)
    asked = [d for d in out.report.passes[0].decisions if d.tool == "AskUserQuestion"]
    assert [(d.role, d.rule, d.changed, d.age) for d in asked] == [
        ("assistant", "strip-old-reasoning", True, 26), ("tool", "keep-user-input", False, 25)]
    assert out.messages[asked[1].message] is msgs[asked[1].message]
    assert '"main was clean; fix the issues"' in out.messages[asked[1].message]["content"][0]["content"]
    for name in ("AskUserQuestion", "Ask", "ask_followup_question", "ExitPlanMode"):
        spans = [m for i in range(12) for m in (
            {"role": "assistant", "content": [{"type": "tool_use", "id": f"t{i}", "name": name if i == 0 else "Bash",
                                               "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{i}", "content": "said " * 100}]})]
        kept = compact([{"role": "user", "content": "go"}, *spans], CONTENT).messages
        assert kept[2]["content"][0]["content"] == "said " * 100, name
        assert kept[4]["content"][0]["content"] == placeholder("Bash", "", 1)


def test_recent_small_and_short_notes_are_kept_and_reasoning_goes():
    msgs = messages(MINI_SWE[-1])  # deepseek-reasoner: reasoning_content on every turn
    out = compact(msgs, DEFAULT, format="openai")
    decisions = out.report.passes[0].decisions
    decided = [d for d in decisions if d.note != "after the step boundary: left as it is"]
    for d in decided:
        m_in, m_out = msgs[d.message], out.messages[d.message]
        if d.role == "tool" and d.age < KEEP_RECENT:
            assert m_out is m_in and d.rule in ("keep-recent", "cache-breakpoint-at-step")
        elif d.role == "tool" and len(m_in["content"]) <= 200:
            assert m_out["content"] == m_in["content"]
        elif d.role == "assistant" and d.rule in ("strip-old-text", "strip-old-reasoning") and d.message != len(msgs) - 1:
            assert "reasoning_content" not in m_out
            assert m_out["tool_calls"] == m_in["tool_calls"] or d.age >= KEEP_RECENT  # long inputs may go
            text = m_in.get("content") or ""
            if d.rule == "strip-old-text":
                assert d.age >= 30 and (m_out.get("content") or "") == (text if len(text) <= 200 else "")
            else:
                assert d.age < 30 and (m_out.get("content") or "") == text
    for rule in ("strip-old-text", "strip-old-reasoning"):
        assert sum(1 for d in decided if d.rule == rule and d.changed) > 20


def test_superseded_large_results_are_cleared_even_when_recent():
    msgs = [{"role": "user", "content": "fix it"}]
    for n in range(10):
        command = "pytest" if n in (6, 8) else f"cat f{n}.py"
        msgs += [{"role": "assistant", "content": "", "tool_calls": [
                     {"id": f"c{n}", "type": "function",
                      "function": {"name": "bash", "arguments": json.dumps({"command": command})}}]},
                 {"role": "tool", "tool_call_id": f"c{n}", "content": f"output {n} " * 50}]
    out = compact(msgs, CONTENT, format="openai")
    rules = {d.tool_call_id: d.rule for d in out.report.passes[0].decisions if d.role == "tool"}
    cleared = [m["content"].startswith("[Previous: used bash: ") for m in out.messages if m.get("role") == "tool"]
    # c0-c1 are older than the 8 newest; c6 is among them but c8 repeats its call
    assert cleared == [True] * 2 + [False] * 4 + [True, False, False, False]
    assert out.messages[2]["content"] == placeholder("bash", "cat f0.py", 1)
    assert rules["c6"] == "clear-superseded" and rules["c8"] == "keep-recent"


# --- the cache breakpoint -----------------------------------------------------------------------


def cache_controls(value, path=()):
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "cache_control":
                yield path
            yield from cache_controls(item, path + (key,))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from cache_controls(item, path + (i,))


def test_anthropic_breakpoint_on_the_last_item_before_the_boundary():
    msgs = read_conversations(USER_ANSWERS.read_bytes(), USER_ANSWERS.name)[0].messages
    assert not list(cache_controls(msgs))
    out = compact(msgs, DEFAULT, format="anthropic")
    decisions = out.report.passes[0].decisions
    decided = [d for d in decisions if d.note != "after the step boundary: left as it is"]
    last = decided[-1]
    assert last.rule == "cache-breakpoint-at-step" and last.changed
    tools = [d for d in decided if d.role == "tool"]  # the boundary message may hold several results
    assert len(tools) > KEEP_RECENT and last.message == max(d.message for d in tools)
    marks = list(cache_controls(out.messages))
    assert marks == [(last.message, "content", last_block(out.messages[last.message]))]
    block = out.messages[last.message]["content"][marks[0][2]]
    assert block["type"] == "tool_result" and block["cache_control"] == {"type": "ephemeral"}


def last_block(message: dict) -> int:
    return max(i for i, b in enumerate(message["content"]) if b.get("type") == "tool_result")


@pytest.mark.parametrize("path", MINI_SWE[:2], ids=IDS[:2])
def test_openai_gets_no_breakpoint(path):
    out = compact(messages(path), DEFAULT, format="openai")
    assert not list(cache_controls(out.messages))
    notes = [d.note for d in out.report.passes[0].decisions if d.rule == "cache-breakpoint-at-step"]
    assert notes == ["cache-breakpoint needs Anthropic cache_control, which these openai messages do not carry"]


def test_idempotent_on_every_trace():
    for path in MINI_SWE:
        once = compact(messages(path), DEFAULT, format="openai").messages
        assert compact(once, DEFAULT, format="openai").messages == once
