"""Reference: Anthropic API context editing, client-side re-implementation.

Follows
-------
* Anthropic docs page "Context editing"
  (``https://platform.claude.com/docs/en/build-with-claude/context-editing``,
  also ``docs.claude.com/en/docs/build-with-claude/context-editing``), read
  in a stored markdown copy of the page.  Relevant statements:

  - ``clear_tool_uses_20250919``: "clears tool results when conversation
    context grows beyond your configured threshold ... the API automatically
    clears the oldest tool results in chronological order. Each cleared
    result is replaced with placeholder text so Claude knows it was removed.
    By default, only tool results are cleared. You can optionally clear both
    tool results and tool calls (the tool use parameters) by setting
    ``clear_tool_inputs`` to true."
  - Options table: ``trigger`` default 100,000 input tokens ("Once the prompt
    exceeds this threshold, clearing will begin", unit ``input_tokens`` or
    ``tool_uses``); ``keep`` default 3 tool uses ("how many recent tool
    use/result pairs to keep after clearing occurs. The API removes the
    oldest tool interactions first"); ``clear_at_least`` default none ("If
    the API can't clear at least the specified amount, the strategy will not
    be applied"); ``exclude_tools`` ("tool names whose tool uses and results
    should never be cleared"); ``clear_tool_inputs`` default false.
  - ``clear_thinking_20251015``: ``keep`` default
    ``{type: "thinking_turns", value: 1}`` ("how many recent assistant turns
    with thinking blocks to preserve", N > 0, or ``"all"``); "An assistant
    conversation turn may include multiple content blocks (e.g. when using
    tools) and multiple thinking blocks (e.g. with interleaved thinking)."
    When both strategies are used, ``clear_thinking`` must be listed first.
* The Anthropic SDK type docs (``BetaClearToolUses20250919Edit``): 
  ``clear_tool_inputs`` is "Whether to clear all tool inputs (bool) or
  specific tool inputs to clear (list)".
* LangChain's ``ClearToolUsesEdit`` (``langchain-ai/langchain``,
  ``libs/langchain_v1/langchain/agents/middleware/context_editing.py``), which
  says it "mirrors Anthropic's context editing", was read for comparison only.

The placeholder text
--------------------
The docs do NOT state the placeholder text the API inserts.  ``PLACEHOLDER``
is therefore our choice: ``"[cleared]"``, LangChain's
``DEFAULT_TOOL_PLACEHOLDER`` for its Anthropic-mirroring middleware.  Pass
``placeholder=`` to change it.

Open choices in ``clear_tool_uses`` (docs are silent)
-----------------------------------------------------
1. Token count: ``input_tokens`` if given (the real API counts the whole
   prompt -- system, tools, messages -- server-side, with its tokenizer);
   otherwise ``estimate_tokens(messages, estimator)``, a documented parameter.
   Both estimators measure the same pieces in JavaScript lengths (UTF-16
   code units): string content, text, thinking, redacted_thinking ``data``,
   tool_use name and (a separate piece) compact JSON input, tool_result text.
   ``"utf16_4"`` (the default, the estimator the preset
   ``anthropic-clear-tool-uses`` names) rounds each piece half up
   (``Math.round(length / 4)``) and sums; ``"js_total"`` sums the lengths
   and rounds total/4 once.  Neither is the API's count; the default is the
   one the rule language names, so the preset can be compared exactly.
2. Trigger is strict (``> value``) for ``input_tokens`` ("exceeds") and for
   ``tool_uses`` (number of ``tool_use`` blocks ``> value``).  ``trigger`` may
   be an int (input tokens) or ``{"type": ..., "value": ...}``.
3. "Tool uses" are client ``tool_use`` blocks in assistant messages, in
   message/block order, paired with the ``tool_result`` block (in a later user
   message) that has the same ``tool_use_id``.  Server tools
   (``server_tool_use`` / ``*_tool_result``) are neither counted nor cleared.
4. ``keep`` counts ALL tool uses, including excluded tools and already
   cleared ones: the last ``keep`` tool uses are never touched; every older,
   non-excluded tool use is cleared (not just "enough" of them).  (LangChain
   does the same keep-slice before exclusion.)
5. Clearing a result replaces the ``tool_result`` block's ``content`` with the
   placeholder string; ``tool_use_id``, ``is_error``, ``cache_control`` and
   other fields stay.  A tool use without a matching result is skipped.
6. ``clear_tool_inputs=True`` (or a list containing the tool's name) sets
   the cleared tool use's ``input`` to ``{}`` (LangChain sets ``args={}``).
7. ``clear_at_least`` (int or ``{"type": "input_tokens", "value": n}``):
   cleared amount = ``estimate_tokens(before) - estimate_tokens(after)`` (net
   of the placeholder); if it is below the value, nothing is changed.
8. Results already equal to the placeholder are left as they are.

Open choices in ``clear_thinking``
----------------------------------
1. An "assistant turn" = a maximal run of assistant messages not interrupted
   by a user message that carries anything other than ``tool_result`` blocks
   (i.e. a tool-use loop is one turn; a real user message starts a new turn).
   ``group_tool_loops=False`` makes every assistant message its own turn.
2. Only turns that contain at least one ``thinking`` / ``redacted_thinking``
   block count; the last ``keep_turns`` such turns keep theirs, all thinking
   and redacted_thinking blocks of older turns are removed.  ``"all"``
   changes nothing.
3. No token trigger (the docs give none).  Messages are never dropped, even if
   their content list becomes empty.
"""

from __future__ import annotations

import copy
import json
import math

PLACEHOLDER = "[cleared]"
DEFAULT_TRIGGER_INPUT_TOKENS = 100_000
DEFAULT_KEEP_TOOL_USES = 3
DEFAULT_KEEP_THINKING_TURNS = 1
CHARS_PER_TOKEN = 4
THINKING_TYPES = ("thinking", "redacted_thinking")


# --------------------------------------------------------------------------
# token estimate
# --------------------------------------------------------------------------

def _js_len(s: str) -> int:
    return len(s.encode("utf-16-le", "surrogatepass")) // 2


def _json_stringify(value) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _block_list_text(content) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            b.get("text", "") or ""
            for b in content
            if isinstance(b, dict) and b.get("type") == "text"
        )
    return ""


def pieces(messages: list[dict]) -> list[str]:
    """Every string the estimate measures, one piece each."""
    out: list[str] = []
    for msg in messages:
        content = msg.get("content")
        if isinstance(content, str):
            out.append(content)
            continue
        if not isinstance(content, list):
            continue
        for b in content:
            if not isinstance(b, dict):
                continue
            t = b.get("type")
            if t == "text":
                out.append(b.get("text") or "")
            elif t == "thinking":
                out.append(b.get("thinking") or "")
            elif t == "redacted_thinking":
                out.append(b.get("data") or "")
            elif t == "tool_use":
                out.append(b.get("name") or "")
                out.append(_json_stringify(b.get("input", {})))
            elif t == "tool_result":
                out.append(_block_list_text(b.get("content")))
    return out


def count_chars(messages: list[dict]) -> int:
    return sum(_js_len(p) for p in pieces(messages))


ESTIMATORS = ("utf16_4", "js_total")
DEFAULT_ESTIMATOR = "utf16_4"


def _round_half_up(x: float) -> int:
    return math.floor(x + 0.5)


def estimate_tokens(messages: list[dict], estimator: str = DEFAULT_ESTIMATOR) -> int:
    if estimator == "utf16_4":
        return sum(_round_half_up(_js_len(p) / CHARS_PER_TOKEN) for p in pieces(messages))
    if estimator == "js_total":
        return _round_half_up(count_chars(messages) / CHARS_PER_TOKEN)
    raise ValueError(f"unknown estimator {estimator!r}; allowed: {', '.join(ESTIMATORS)}")


# --------------------------------------------------------------------------
# clear_tool_uses_20250919
# --------------------------------------------------------------------------

def _value(spec, default_type: str):
    """Normalise ``int`` or ``{"type", "value"}`` into ``(type, value)``."""
    if spec is None:
        return None
    if isinstance(spec, dict):
        return spec.get("type", default_type), spec["value"]
    return default_type, spec


def _tool_uses(messages: list[dict]):
    uses = []  # (msg_idx, block_idx, id, name)
    for i, msg in enumerate(messages):
        if msg.get("role") != "assistant" or not isinstance(msg.get("content"), list):
            continue
        for j, b in enumerate(msg["content"]):
            if isinstance(b, dict) and b.get("type") == "tool_use":
                uses.append((i, j, b.get("id"), b.get("name") or ""))
    return uses


def _find_result(messages: list[dict], after: int, tool_use_id):
    for i in range(after + 1, len(messages)):
        msg = messages[i]
        if msg.get("role") != "user" or not isinstance(msg.get("content"), list):
            continue
        for j, b in enumerate(msg["content"]):
            if (
                isinstance(b, dict)
                and b.get("type") == "tool_result"
                and b.get("tool_use_id") == tool_use_id
            ):
                return i, j
    return None


def clear_tool_uses(
    messages: list[dict],
    trigger=DEFAULT_TRIGGER_INPUT_TOKENS,
    keep=DEFAULT_KEEP_TOOL_USES,
    clear_at_least=None,
    exclude_tools=(),
    clear_tool_inputs=False,
    input_tokens=None,
    *,
    placeholder: str = PLACEHOLDER,
    estimator: str = DEFAULT_ESTIMATOR,
) -> list[dict]:
    out = copy.deepcopy(messages)
    uses = _tool_uses(out)

    trig_type, trig_value = _value(trigger, "input_tokens")
    if trig_type == "input_tokens":
        tokens = input_tokens if input_tokens is not None else estimate_tokens(out, estimator)
        if not tokens > trig_value:
            return out
    elif trig_type == "tool_uses":
        if not len(uses) > trig_value:
            return out
    else:
        raise ValueError(f"unsupported trigger type {trig_type!r}")

    keep_type, keep_value = _value(keep, "tool_uses")
    if keep_type != "tool_uses":
        raise ValueError(f"unsupported keep type {keep_type!r}")
    candidates = uses[: max(0, len(uses) - keep_value)]

    excluded = set(exclude_tools or ())
    if isinstance(clear_tool_inputs, (list, tuple, set, frozenset)):
        inputs_for = set(clear_tool_inputs)
        clear_inputs_all = False
    else:
        inputs_for = set()
        clear_inputs_all = bool(clear_tool_inputs)

    before = estimate_tokens(out, estimator)
    for msg_idx, block_idx, use_id, name in candidates:
        if name in excluded:
            continue
        found = _find_result(out, msg_idx, use_id)
        if found is None:
            continue
        ri, rj = found
        result = out[ri]["content"][rj]
        if result.get("content") != placeholder:
            result["content"] = placeholder
        if clear_inputs_all or name in inputs_for:
            out[msg_idx]["content"][block_idx]["input"] = {}

    if clear_at_least is not None:
        cal_type, cal_value = _value(clear_at_least, "input_tokens")
        if cal_type != "input_tokens":
            raise ValueError(f"unsupported clear_at_least type {cal_type!r}")
        if before - estimate_tokens(out, estimator) < cal_value:
            return copy.deepcopy(messages)
    return out


# --------------------------------------------------------------------------
# clear_thinking_20251015
# --------------------------------------------------------------------------

def _is_tool_result_only(msg: dict) -> bool:
    content = msg.get("content")
    return (
        isinstance(content, list)
        and len(content) > 0
        and all(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)
    )


def assistant_turns(messages: list[dict], *, group_tool_loops: bool = True) -> list[list[int]]:
    """Indices of assistant messages, grouped into turns."""
    turns: list[list[int]] = []
    current: list[int] | None = None
    for i, msg in enumerate(messages):
        role = msg.get("role")
        if role == "assistant":
            if current is None or not group_tool_loops:
                current = []
                turns.append(current)
            current.append(i)
        elif role == "user" and not _is_tool_result_only(msg):
            current = None
        # system / other roles and tool-result-only user messages keep the turn open
    return turns


def _has_thinking(msg: dict) -> bool:
    content = msg.get("content")
    return isinstance(content, list) and any(
        isinstance(b, dict) and b.get("type") in THINKING_TYPES for b in content
    )


def clear_thinking(
    messages: list[dict],
    keep_turns=DEFAULT_KEEP_THINKING_TURNS,
    *,
    group_tool_loops: bool = True,
) -> list[dict]:
    out = copy.deepcopy(messages)
    if isinstance(keep_turns, dict):
        keep_turns = keep_turns["value"]
    if keep_turns == "all":
        return out
    if not isinstance(keep_turns, int) or keep_turns <= 0:
        raise ValueError("keep_turns must be a positive int or 'all'")
    turns = assistant_turns(out, group_tool_loops=group_tool_loops)
    thinking_turns = [t for t in turns if any(_has_thinking(out[i]) for i in t)]
    for turn in thinking_turns[: max(0, len(thinking_turns) - keep_turns)]:
        for i in turn:
            content = out[i].get("content")
            if isinstance(content, list):
                out[i]["content"] = [
                    b for b in content
                    if not (isinstance(b, dict) and b.get("type") in THINKING_TYPES)
                ]
    return out


def apply(messages: list[dict], *, estimator: str = DEFAULT_ESTIMATOR) -> list[dict]:
    """Both strategies with default settings, thinking first (as the docs require)."""
    return clear_tool_uses(clear_thinking(messages), estimator=estimator)
