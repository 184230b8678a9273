"""Reference: LangChain's ``ClearToolUsesEdit``, the real one, on OpenAI-format messages.

Not a re-implementation: this module converts OpenAI Chat Completions dicts to ``langchain_core``
messages, runs the installed ``langchain`` package's
``langchain.agents.middleware.context_editing.ClearToolUsesEdit`` (``langchain>=1.0``, in the test
extra) with the middleware's default token counter
``langchain_core.messages.utils.count_tokens_approximately``, and converts the result back.

``ContextEditingMiddleware.wrap_model_call`` does exactly this with its defaults: it deep-copies
the request's messages and calls ``edit.apply(messages, count_tokens=count_tokens_approximately)``
for its single default edit ``ClearToolUsesEdit()``.  The system prompt is not part of
``request.messages`` there; here a ``system`` message in the list is converted and counted like
any other message, as the preset counts it.

Conversion (OpenAI dict -> langchain_core)
------------------------------------------
* ``user`` -> ``HumanMessage``; ``system`` -> ``SystemMessage``; any other unknown role (e.g.
  mini-swe-agent's final ``exit``) -> ``ChatMessage(role=...)``.
* ``assistant`` -> ``AIMessage`` with ``tool_calls=[{"name", "args", "id", "type": "tool_call"}]``,
  ``args`` decoded from the call's JSON ``arguments`` (as LangChain's own OpenAI converter does;
  undecodable arguments are not supported here).
* ``tool`` -> ``ToolMessage`` with ``tool_call_id`` (``""`` when missing: ToolMessage requires
  one) and ``status="error"`` for ``is_error: true``.
* Content ``None`` -> ``""``; a list of parts stays a list.  A message's ``name`` is passed on.

Back: a message the edit did not replace is returned as the original dict (the same object).
A replaced ``ToolMessage`` becomes the original dict with the new ``content``; a replaced
``AIMessage`` (only with ``clear_tool_inputs``) the original dict with each call's arguments
re-encoded as JSON.
"""

from __future__ import annotations

import json

from langchain.agents.middleware.context_editing import ClearToolUsesEdit
from langchain_core.messages import AIMessage, ChatMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.messages.utils import count_tokens_approximately

__all__ = ["to_langchain", "from_langchain", "clear_tool_uses", "count_tokens", "ClearToolUsesEdit"]


def _content(msg: dict):
    content = msg.get("content")
    return "" if content is None else content


def _name(msg: dict) -> dict:
    return {"name": msg["name"]} if isinstance(msg.get("name"), str) else {}


def to_langchain(msg: dict):
    role = msg.get("role")
    if role == "user":
        return HumanMessage(content=_content(msg), **_name(msg))
    if role == "system":
        return SystemMessage(content=_content(msg), **_name(msg))
    if role == "assistant":
        calls = [{"name": c["function"]["name"], "args": json.loads(c["function"].get("arguments") or "{}"),
                  "id": c.get("id"), "type": "tool_call"} for c in msg.get("tool_calls") or []]
        return AIMessage(content=_content(msg), tool_calls=calls, **_name(msg))
    if role == "tool":
        return ToolMessage(content=_content(msg), tool_call_id=msg.get("tool_call_id") or "",
                           status="error" if msg.get("is_error") is True else "success", **_name(msg))
    return ChatMessage(role=role, content=_content(msg), **_name(msg))


def from_langchain(edited: list, converted: list, originals: list[dict]) -> list[dict]:
    """The OpenAI dicts after the edit: ``converted`` is what the edit was given (before it ran,
    a copy of the list), ``edited`` the list it left."""
    out = []
    for new, old, orig in zip(edited, converted, originals, strict=True):
        if new is old:
            out.append(orig)
        elif isinstance(new, ToolMessage):
            out.append({**orig, "content": new.content})
        elif isinstance(new, AIMessage):
            args = {c["id"]: c["args"] for c in new.tool_calls}
            out.append({**orig, "tool_calls": [
                {**c, "function": {**c["function"], "arguments": json.dumps(args[c["id"]])}}
                if args.get(c["id"]) != json.loads(c["function"].get("arguments") or "{}") else c
                for c in orig["tool_calls"]]})
        else:  # ClearToolUsesEdit replaces only tool and AI messages
            raise AssertionError(f"unexpected replacement {new!r}")
    return out


def count_tokens(messages: list[dict]) -> int:
    """count_tokens_approximately over the converted messages (the middleware's default)."""
    return count_tokens_approximately([to_langchain(m) for m in messages])


def clear_tool_uses(messages: list[dict], edit: ClearToolUsesEdit | None = None) -> list[dict]:
    """Run the real ``ClearToolUsesEdit`` (defaults unless ``edit`` is given) as the middleware does."""
    converted = [to_langchain(m) for m in messages]
    edited = list(converted)
    (edit or ClearToolUsesEdit()).apply(edited, count_tokens=count_tokens_approximately)
    return from_langchain(edited, converted, messages)
