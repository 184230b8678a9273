"""Text-action agents' observations in user messages (issue 28, section 2): the SWE-agent and
mini-swe-agent readers mark them (``"observation"``: the command's name, or true), the rules
decide on them as on tool results (``role: tool``; ``observation: true`` tells them apart), and
``preset:observation-masking`` reproduces SWE-agent's ``LastNObservations`` on SWE-agent's own
text trajectories."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rules_compact import compact, load_rules, parse_rules
from rules_compact.formats import FORMATS
from rules_compact.readers import read_conversations
from rules_compact.readers.swe_agent import swe_agent_messages
from rules_compact.testing import check_invariants

from reference import swe_agent_last_n as swe

TRACES = Path(__file__).parent / "data" / "traces"
SWE_AGENT = sorted((TRACES / "swe-agent").glob("*.traj"))
TEXT_ACTION = [p for p in SWE_AGENT if not p.name.startswith("fc_")]
MINI = TRACES / "mini-swe-agent" / "deepseek_lite_dev__marshmallow-code__marshmallow-1343.traj.json"


def conversation(path: Path):
    (conv,) = read_conversations(path.read_bytes(), str(path))
    return conv


@pytest.mark.parametrize("path", SWE_AGENT, ids=lambda p: p.stem)
def test_observation_masking_is_last_n_observations_on_swe_agents_own_trajectories(path):
    history = json.loads(path.read_text(encoding="utf-8"))["history"]
    expected, _ = swe_agent_messages(swe.apply_history(history))
    conv = conversation(path)
    result = compact(conv.messages, load_rules("preset:observation-masking"), format=conv.format)
    assert result.messages == expected
    masked = sum(1 for m in result.messages if str(m.get("content")).startswith("Old environment output: ("))
    assert masked > 0


@pytest.mark.parametrize("path", TEXT_ACTION, ids=lambda p: p.stem)
def test_the_swe_agent_reader_marks_text_observations_with_their_command(path):
    conv = conversation(path)
    marked = [m for m in conv.messages if "observation" in m]
    assert marked and all(m["role"] == "user" for m in marked)
    first_user = next(m for m in conv.messages if m["role"] == "user" and "observation" not in m)
    assert conv.messages.index(first_user) < conv.messages.index(marked[0])  # the task is no observation
    items = FORMATS["openai"].items(conv.messages)
    observed = [i for i in items if i.observation]
    assert len(observed) == len(marked) and not any(i.orphan for i in observed)
    assert {i.tool_name for i in observed} <= {m["observation"] for m in marked}
    assert any(note.startswith("text-action trajectory: ") for note in conv.notes)


def text_mode(data: dict) -> dict:
    """A tool-calling mini-swe-agent trajectory as its text mode writes it: the command in a bash
    block of the assistant's text, the output in a user message."""
    messages = []
    for msg in data["messages"]:
        if msg["role"] == "assistant" and msg.get("tool_calls"):
            command = json.loads(msg["tool_calls"][0]["function"]["arguments"])["command"]
            messages.append({"role": "assistant", "content": f"{msg['content'] or ''}\n\n```bash\n{command}\n```"})
        elif msg["role"] == "tool":
            messages.append({"role": "user", "content": msg["content"]})
        else:
            messages.append({k: v for k, v in msg.items() if k in ("role", "content")})
    return {**data, "trajectory_format": "mini-swe-agent-1", "messages": messages}


def test_the_mini_swe_agent_reader_marks_text_mode_observations(tmp_path):
    path = tmp_path / "text.traj.json"
    path.write_text(json.dumps(text_mode(json.loads(MINI.read_text(encoding="utf-8")))), encoding="utf-8")
    conv = conversation(path)
    marked = [m for m in conv.messages if m.get("observation") == "bash"]
    users = [m for m in conv.messages if m["role"] == "user"]
    assert len(marked) == len(users) - 1 > 100  # all but the task
    result = compact(conv.messages, load_rules("preset:observation-masking"), format=conv.format)
    masked = [m for m in result.messages if m["role"] == "user"
              and m["content"].startswith("Old environment output: (")]
    assert len(masked) == len(marked) - 10
    assert [m for m in result.messages if m["role"] == "user"][-10:] == users[-10:]


def test_the_tool_calling_mini_swe_agent_trajectories_mark_nothing():
    assert not any("observation" in m for m in conversation(MINI).messages)


OBSERVED = [
    {"role": "system", "content": "You are an agent."},
    {"role": "user", "content": "Fix the bug."},
    {"role": "assistant", "content": "Look first.\n```\nls\n```"},
    {"role": "user", "observation": "ls", "content": "a.py\nb.py\nc.py\nd.py\ne.py"},
    {"role": "assistant", "content": "Read it.\n```\ncat a.py\n```"},
    {"role": "user", "observation": True, "content": "print('a')\nprint('b')"},
    {"role": "assistant", "content": "Done."},
]


def test_observations_are_cleared_as_results_and_the_matcher_tells_them_apart():
    rules = parse_rules("version: 1\nname: t\nrules:\n"
                        "  - {name: named, match: {observation: true, tool: ls}, action: placeholder}\n"
                        "  - {name: other, match: {role: tool, observation: true}, action: {placeholder: '[{tool_name}]'}}\n")
    result = check_invariants(OBSERVED, [rules], "openai")
    assert result.messages[3] == {"role": "user", "observation": "ls", "content": "[Previous: used ls]"}
    assert result.messages[5] == {"role": "user", "observation": True, "content": "[unknown]"}
    assert result.messages[1] == OBSERVED[1]  # the task is no observation
    decided = [(d.role, d.rule) for d in result.report.passes[-1].decisions]
    assert decided == [("assistant", None), ("tool", "named"), ("assistant", None), ("tool", "other"),
                       ("assistant", None)]


def test_an_observation_is_no_user_turn():
    """The tail (from the last user turn) starts at the task, not at the latest observation."""
    assert FORMATS["openai"].scan(OBSERVED).user_turns == [1]
    rules = parse_rules("version: 1\nname: t\nrules:\n"
                        "  - {name: tail, match: {in_tail: true}, action: keep}\n"
                        "  - {name: clear, match: {role: tool}, action: placeholder}\n")
    decided = [d.rule for d in compact(OBSERVED, rules, format="openai").report.passes[-1].decisions]
    assert decided == ["tail"] * 5


@pytest.mark.parametrize("path", TEXT_ACTION, ids=lambda p: p.stem)
def test_the_openai_scan_of_observations_equals_the_generic_one(path):
    from test_formats import _same_scans
    _same_scans(FORMATS["openai"], conversation(path).messages)
