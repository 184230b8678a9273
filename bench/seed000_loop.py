"""Seed 000's micro_compact written by hand: the speed baseline for bench/speed.py.

The algorithm of the keep-recent-results preset (seed 000, LingoJack/j ``micro_compact``, as the
seed text states it): over all tool results, the 10 most recent are kept; an older result whose
content is longer than 800 UTF-8 bytes becomes the plain string "[Previous: used {tool_name}]"
("unknown" when no call has its id), unless the tool matches one of LoadSkill, Task, Todo*, Plan*,
Agent*, Ask, SendMessage, CreateTeammate. OpenAI Chat Completions messages.

Copy-on-write, as the engine: the input is never mutated, the output is a new list, a changed
message is a new dict and every other message is shared. No rule file, no report, no generality:
the fastest plain-Python loop for this one policy, to see what the engine's generality costs.
"""

from __future__ import annotations

from fnmatch import fnmatchcase

KEEP_RECENT = 10
THRESHOLD_BYTES = 800
EXEMPT = ("LoadSkill", "Task", "Todo*", "Plan*", "Agent*", "Ask", "SendMessage", "CreateTeammate")
PLACEHOLDER = "[Previous: used {tool_name}]"


def _text(content) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text") or "" for p in content if isinstance(p, dict) and p.get("type") == "text")
    return ""


def _exempt(name: str, memo: dict) -> bool:
    hit = memo.get(name)
    if hit is None:
        hit = memo[name] = any(fnmatchcase(name, p) for p in EXEMPT)
    return hit


def micro_compact(messages: list) -> list:
    """The compacted copy of ``messages`` (a new list; unchanged messages shared)."""
    out = list(messages)
    tools = [i for i, m in enumerate(messages) if m.get("role") == "tool"]
    if len(tools) <= KEEP_RECENT:
        return out
    names: dict[str, str] = {}
    for m in messages:
        if m.get("role") == "assistant":
            for call in m.get("tool_calls") or ():
                cid = call.get("id")
                if cid is not None and cid not in names:
                    names[cid] = (call.get("function") or {}).get("name") or ""
    memo: dict[str, bool] = {}
    for i in tools[:len(tools) - KEEP_RECENT]:
        m = messages[i]
        text = _text(m.get("content"))
        # UTF-8 length > 800 without encoding when it cannot matter: a str of n code points
        # has between n and 4n UTF-8 bytes.
        if len(text) * 4 <= THRESHOLD_BYTES or (len(text) <= THRESHOLD_BYTES
                                                 and len(text.encode("utf-8", "surrogatepass")) <= THRESHOLD_BYTES):
            continue
        name = names.get(m.get("tool_call_id") or "", "unknown")
        if name != "unknown" and _exempt(name, memo):
            continue
        out[i] = {**m, "content": PLACEHOLDER.format(tool_name=name)}
    return out
