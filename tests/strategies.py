"""Hypothesis strategies: conversations in the three formats, and valid rule files.

* ``openai_conversations()``: OpenAI Chat Completions message lists.
* ``anthropic_conversations()``: Anthropic Messages message lists, with cache breakpoints.
* ``responses_conversations()``: OpenAI Responses API input items.
* ``rule_files(idempotent=True)``: rule files as plain dicts, valid under
  ``schemas/rules.schema.json``; ``to_ruleset(d)`` turns one into a RuleSet the way a
  user's file would be loaded (``parse_rules(yaml.safe_dump(d))``);
  ``settling_rule_files()``: those of the matchers the incremental layer resumes with.

Sizes are kept small (a handful of turns, short texts, a rare 10k+ character
output) so that thousands of examples run in a few minutes.

The hypothesis profiles (``ci``, ``thorough``, ``long``) are registered in conftest.py.
"""

from __future__ import annotations

import atexit
import copy
import itertools
import json
import shutil
import tempfile
from typing import Any

import yaml
from hypothesis import strategies as st

from rules_compact import RuleSet, parse_rules
from rules_compact.kinds.estimators import ESTIMATORS
from rules_compact.resources import bundled_rules

__all__ = [
    "texts", "openai_conversations", "anthropic_conversations", "responses_conversations", "conversations",
    "make_matchers", "matchers", "error_matchers", "actions", "rule_files", "settling_rule_files", "to_ruleset", "TOOL_NAMES",
    "WHERE_EXPRESSIONS", "MATCHER_KINDS", "ACTION_KINDS", "TOP_LEVEL_KEYS",
]


# -- texts -------------------------------------------------------------------

SAMPLE_TEXTS = [
    "", " ", "\n\n", "ok", "done.", "a.py", "Error: file not found",
    "Traceback (most recent call last):\n  File \"x.py\", line 1\nValueError: bad",
    "<returncode>0</returncode>\n<output>\nall good\n</output>",
    "<returncode>1</returncode>\n<output>\nFAILED test_x.py::test_a\n</output>",
    "<returncode>127</returncode>\n<output>\nbash: foo: command not found\n</output>",
    "[Previous: used bash]", "[Previous: used Read]", "[Previous: used unknown]", "[cleared]",
    "[reasoning removed]", "\n[... 12 chars omitted ...]\n", "{not a template}", "{{braces}}",
    "naïve café — ünïcödé", "日本語のテキストです", "🙂🚀 emoji 👩‍💻", "line1\nline2\r\nline3\n",
    "zero\u200bwidth", "rtl \u202etxet", "tab\tand nul \x00 end", "I'll read the file first.",
    "Let me think about this step by step.", "x" * 801,
]
REPEAT_UNITS = ["x", "line of output\n", "ünïcödé ", "日本語", "🙂", "ab\r\n", "    1\u2192def f():\n"]

_short_random = st.text(st.characters(codec="utf-8"), max_size=24)
_medium = st.builds(lambda head, unit, n: head + unit * n,
                    st.sampled_from(SAMPLE_TEXTS[:12]), st.sampled_from(REPEAT_UNITS), st.integers(20, 400))
_huge = st.builds(lambda head, unit, n: head + unit * (10_000 // len(unit) + n),
                  st.sampled_from(SAMPLE_TEXTS[:12]), st.sampled_from(REPEAT_UNITS), st.integers(0, 2000))

#: Any text a message may hold: mostly short, sometimes a few hundred to a few
#: thousand characters, rarely over 10,000; ASCII and non-ASCII.
texts = st.one_of(
    st.sampled_from(SAMPLE_TEXTS), st.sampled_from(SAMPLE_TEXTS), _short_random, _short_random,
    _medium, _medium, _huge,
)
_nonempty_texts = texts.filter(lambda t: t.strip() != "")

TOOL_NAMES = ["bash", "Read", "Edit", "TodoWrite", "Task", "mcp__github__get_issue", "str_replace_editor",
              "ünï_tool", "Bash", ""]
_tool_names = st.sampled_from(TOOL_NAMES)
_cache_control = st.sampled_from([{"type": "ephemeral"}, {"type": "ephemeral", "ttl": "1h"}])
_json_scalars = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.sampled_from(["", "x", "ü", "ls -la"]))
_json_values = st.one_of(_json_scalars, st.lists(_json_scalars, max_size=2),
                         st.dictionaries(st.sampled_from(["raw", "k", "ü"]), _json_scalars, max_size=2))
_extra_fields = st.dictionaries(
    st.sampled_from(["extra", "provider_specific_fields", "x_meta", "timestamp", "id", "cache_marker"]),
    _json_values, max_size=2)
_call_inputs = st.one_of(
    st.just({}),
    st.fixed_dictionaries({"command": st.sampled_from(["ls -la", "cat a.py", "pytest -q", "echo ünï"])}),
    st.fixed_dictionaries({"file_path": st.sampled_from(["/a.py", "/ü/b.txt"]),
                           "limit": st.integers(0, 2000)}),
    st.dictionaries(st.sampled_from(["command", "path", "todos", "x"]), _json_values, max_size=3),
)


def _text_part(text: str, marker: dict | None) -> dict:
    part = {"type": "text", "text": text}
    if marker is not None:
        part["cache_control"] = marker
    return part


_text_parts = st.lists(st.builds(_text_part, texts, st.none() | _cache_control), min_size=1, max_size=3)
_IMAGE_URL = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}
_IMAGE_BLOCK = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}
#: OpenAI user content parts: text, sometimes an image.
_user_parts = st.lists(st.one_of(st.builds(_text_part, texts, st.none() | _cache_control), st.just(_IMAGE_URL)),
                       min_size=1, max_size=3)
#: Anthropic tool_result content blocks: text, sometimes an image.
_result_blocks = st.lists(st.one_of(st.builds(_text_part, texts, st.none() | _cache_control),
                                    st.builds(_text_part, texts, st.none() | _cache_control), st.just(_IMAGE_BLOCK)),
                          min_size=1, max_size=3)


def _extras(draw, msg: dict) -> dict:
    if draw(st.integers(0, 4)) == 0:
        msg.update({k: v for k, v in draw(_extra_fields).items() if k not in msg})
    return msg


# -- OpenAI Chat Completions -------------------------------------------------

OPENAI_SEGMENTS = ["user", "user", "assistant", "span", "span", "span", "span", "orphan", "other_role",
                   "empty_user", "observation"]


def _openai_arguments(draw) -> str:
    """A JSON string, or (as models sometimes write) an empty or broken one."""
    kind = draw(st.integers(0, 9))
    if kind == 0:
        return ""
    if kind == 1:
        return "{not json"
    return json.dumps(draw(_call_inputs), ensure_ascii=draw(st.booleans()))


def _openai_call(draw, call_id: str) -> dict:
    fn: dict[str, Any] = {"arguments": _openai_arguments(draw)}
    if draw(st.integers(0, 15)):
        fn["name"] = draw(_tool_names)
    call: dict[str, Any] = {"id": call_id, "type": "function", "function": fn}
    if draw(st.booleans()):
        call["index"] = draw(st.integers(0, 3))
    return call


def _openai_tool_message(draw, call_id: Any) -> dict:
    kind = draw(st.integers(0, 9))
    if kind <= 5:
        content: Any = draw(texts)
    elif kind <= 8:
        content = draw(_text_parts)
    else:
        content = None
    msg: dict[str, Any] = {"role": "tool", "tool_call_id": call_id, "content": content}
    if draw(st.integers(0, 5)) == 0:
        msg["is_error"] = True
    return _extras(draw, msg)


def _openai_assistant_content(draw) -> Any:
    kind = draw(st.integers(0, 6))
    if kind <= 2:
        return draw(texts)
    if kind == 3:
        return None
    if kind == 4:
        return draw(_text_parts)
    if kind == 5:
        return [{"type": "refusal", "refusal": draw(texts)}, *draw(_text_parts)]
    return ""


ANSWERED = {False: [True, True, True, False], True: [True, False]}  # with late results: more calls answered later


def _late_results(draw, unanswered: list, make) -> list:
    """Results of calls that earlier spans left unanswered (taken out of ``unanswered``): a
    result after another call's span."""
    late = []
    while unanswered and draw(st.booleans()):
        late.append(make(draw, unanswered.pop(draw(st.integers(0, len(unanswered) - 1)))))
    return late


def _repeat_calls(draw, calls: list, made: list, what: tuple[str, ...]) -> None:
    """Sometimes give a new call the tool and arguments (the ``what`` keys) of an earlier one
    (``made``, which the new calls join): a call that supersedes an earlier result."""
    for call in calls:
        if made and draw(st.booleans()):
            earlier = made[draw(st.integers(0, len(made) - 1))]
            call.update(copy.deepcopy({k: earlier[k] for k in what if k in earlier}))
    made += calls


@st.composite
def openai_conversations(draw, max_segments: int = 9, late_results: bool = False,
                         repeated_calls: bool = False) -> list:
    """OpenAI messages: system/user/assistant/tool, parallel calls, orphans, dangling calls, the
    developer and function roles, observations in user messages; with ``late_results``, results
    after a later call's span, and with ``repeated_calls``, calls that often repeat an earlier one."""
    ids = itertools.count()
    msgs: list[dict] = []
    unanswered: list[str] = []  # calls of earlier spans that a late result may answer
    made: list[dict] = []  # the calls so far (with repeated_calls)
    if draw(st.booleans()):
        msgs.append({"role": "system", "content": draw(texts)})
    for segment in draw(st.lists(st.sampled_from(OPENAI_SEGMENTS), max_size=max_segments)):
        if segment == "user":
            content = draw(st.one_of(_nonempty_texts, _user_parts))
            msgs.append(_extras(draw, {"role": "user", "content": content}))
        elif segment == "observation":  # a text-action agent's output, marked by its reader
            marker = draw(st.one_of(st.just(True), _tool_names))
            msgs.append({"role": "user", "observation": marker, "content": draw(st.one_of(texts, _user_parts))})
        elif segment == "empty_user":
            msgs.append({"role": "user", "content": draw(st.sampled_from(["", None, [], "   "]))})
        elif segment == "assistant":
            msg = {"role": "assistant", "content": _openai_assistant_content(draw)}
            if draw(st.integers(0, 3)) == 0:
                msg["reasoning_content"] = draw(texts)
            msgs.append(_extras(draw, msg))
        elif segment == "span":
            k = draw(st.integers(1, 4))
            calls = [_openai_call(draw, f"call_{next(ids)}") for _ in range(k)]
            if repeated_calls:
                _repeat_calls(draw, calls, made, ("function",))
            msg = {"role": "assistant", "content": _openai_assistant_content(draw), "tool_calls": calls}
            if draw(st.integers(0, 2)) == 0:
                msg[draw(st.sampled_from(["reasoning_content", "reasoning"]))] = draw(texts)
            if draw(st.integers(0, 3)) == 0:
                msg["function_call"] = None
            msgs.append(_extras(draw, msg))
            answered = draw(st.lists(st.sampled_from(ANSWERED[late_results]), min_size=k, max_size=k))
            for j in draw(st.permutations(range(k))):
                if answered[j]:
                    msgs.append(_openai_tool_message(draw, calls[j]["id"]))
            if late_results:
                msgs += _late_results(draw, unanswered, _openai_tool_message)
                unanswered += [call["id"] for call, done in zip(calls, answered) if not done]
        elif segment == "orphan":
            if late_results and unanswered and draw(st.booleans()):  # a late result outside any span
                msgs += _late_results(draw, unanswered, _openai_tool_message)
                continue
            call_id = draw(st.sampled_from([f"orphan_{next(ids)}", None, "7"]))  # an id must be a string
            msgs.append(_openai_tool_message(draw, call_id))
        else:  # other_role
            role = draw(st.sampled_from(["developer", "function"]))
            msgs.append(_extras(draw, {"role": role, "content": draw(texts)}))
    return msgs


# -- Anthropic Messages ------------------------------------------------------

def _thinking_block(draw) -> dict:
    if draw(st.integers(0, 3)) == 0:
        return {"type": "redacted_thinking", "data": draw(st.sampled_from(["EmwKAhgB", "ZXJyb3I=", ""]))}
    return {"type": "thinking", "thinking": draw(texts),
            "signature": draw(st.sampled_from(["sig_abc123", "[REDACTED_SIGNATURE]", "ÉpQ=="]))}


def _anthropic_result_content(draw) -> tuple[bool, Any]:
    kind = draw(st.integers(0, 9))
    if kind <= 5:
        return True, draw(texts)
    if kind <= 8:
        return True, draw(_result_blocks)
    return False, None  # no content key at all


def _tool_result_block(draw, call_id: Any) -> dict:
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": call_id}
    has_content, content = _anthropic_result_content(draw)
    if has_content:
        block["content"] = content
    if draw(st.integers(0, 5)) == 0:
        block["is_error"] = True
    if draw(st.integers(0, 5)) == 0:
        block["cache_control"] = draw(_cache_control)
    return block


@st.composite
def anthropic_conversations(draw, max_turns: int = 7, late_results: bool = False,
                            repeated_calls: bool = False) -> list:
    """Anthropic messages: alternating user/assistant, thinking, parallel tool_use, orphans,
    dangling; with ``late_results``, results after a later call's span, and with
    ``repeated_calls``, calls that often repeat an earlier one."""
    ids = itertools.count()
    unanswered: list[str] = []  # calls of earlier turns that a late result may answer
    made: list[dict] = []  # the calls so far (with repeated_calls)
    first = draw(st.one_of(_nonempty_texts, _text_parts, st.sampled_from(["", []])))
    msgs: list[dict] = [{"role": "user", "content": first}]
    turns = draw(st.integers(0, max_turns))
    for turn in range(turns):
        blocks: list[Any] = []
        if draw(st.integers(0, 2)) == 0:
            blocks.extend(_thinking_block(draw) for _ in range(draw(st.integers(1, 2))))
        if draw(st.booleans()):
            blocks.append(_text_part(draw(texts), draw(st.none() | st.none() | st.none() | _cache_control)))
        k = draw(st.sampled_from([0, 1, 1, 1, 2, 3, 4]))
        calls = [{"type": "tool_use", "id": f"toolu_{next(ids)}", "name": draw(_tool_names),
                  "input": draw(_call_inputs)} for _ in range(k)]
        if repeated_calls:
            _repeat_calls(draw, calls, made, ("name", "input"))
        if calls and draw(st.integers(0, 7)) == 0:  # a server tool's call and result, in the turn
            server = f"srvtoolu_{next(ids)}"
            blocks += [{"type": "server_tool_use", "id": server, "name": "web_search", "input": {"query": "x"}},
                       {"type": "web_search_tool_result", "tool_use_id": server, "content": []}]
        blocks.extend(calls)
        if draw(st.integers(0, 5)) == 0:  # text, interleaved thinking or an image anywhere
            extra = draw(st.sampled_from(["thinking", "text", "text", "image"]))
            block = (_thinking_block(draw) if extra == "thinking" else _IMAGE_BLOCK if extra == "image"
                     else _text_part(draw(texts), None))
            blocks.insert(draw(st.integers(0, len(blocks))), block)
        content: Any = blocks
        if not calls and draw(st.integers(0, 3)) == 0:
            content = draw(st.one_of(texts, st.just([])))
        assistant = {"role": "assistant", "content": content}
        if draw(st.integers(0, 6)) == 0:
            assistant.update({k: v for k, v in draw(_extra_fields).items() if k != "content"})
        msgs.append(assistant)
        last = turn == turns - 1
        if last and not calls and draw(st.booleans()):
            break  # end on the assistant's final answer
        if last and calls and draw(st.integers(0, 3)) == 0:
            break  # every call of the last turn dangles
        user: list[dict] = []
        answered = draw(st.lists(st.sampled_from(ANSWERED[late_results]), min_size=k, max_size=k))
        for j in draw(st.permutations(range(k))):
            if answered[j]:
                user.append(_tool_result_block(draw, calls[j]["id"]))
        if late_results:
            for block in _late_results(draw, unanswered, _tool_result_block):
                user.insert(draw(st.integers(0, len(user))), block)
            unanswered += [call["id"] for call, done in zip(calls, answered) if not done]
        if draw(st.integers(0, 6)) == 0:
            user.insert(draw(st.integers(0, len(user))),
                        _tool_result_block(draw, draw(st.sampled_from([f"toolu_orphan_{next(ids)}", None]))))
        if not user or draw(st.integers(0, 3)) == 0:
            user.append(_text_part(draw(texts), draw(st.none() | _cache_control)))
        user_content: Any = user
        if not any(b["type"] == "tool_result" for b in user) and draw(st.integers(0, 2)) == 0:
            user_content = draw(st.one_of(texts, st.just([])))
        msgs.append({"role": "user", "content": user_content})
    return msgs


# -- OpenAI Responses --------------------------------------------------------

def _responses_text(draw, kind: str) -> Any:
    if draw(st.integers(0, 3)) == 0:
        return draw(_nonempty_texts)
    return [{"type": kind, "text": draw(texts)} for _ in range(draw(st.integers(1, 2)))]


def _responses_output(draw) -> Any:
    return draw(texts) if draw(st.integers(0, 3)) else [{"type": "input_text", "text": draw(texts)}]


@st.composite
def responses_conversations(draw, max_turns: int = 7) -> list:
    """Responses input items: user and developer messages (short and typed forms), model
    responses (reasoning with encrypted content, an assistant message, function and custom tool
    calls, hosted calls), their outputs (some missing, some orphan)."""
    ids = itertools.count()
    items: list[dict] = []
    if draw(st.booleans()):
        items.append({"role": draw(st.sampled_from(["system", "developer"])), "content": draw(texts)})
    items.append({"role": "user", "content": _responses_text(draw, "input_text")})
    for _ in range(draw(st.integers(0, max_turns))):
        if draw(st.integers(0, 4)) == 0:
            user = {"role": "user", "content": _responses_text(draw, "input_text")}
            items.append({"type": "message", **user} if draw(st.booleans()) else user)
            continue
        if draw(st.integers(0, 2)) == 0:
            n = next(ids)
            items.append({"type": "reasoning", "id": f"rs_{n}", "summary": [
                {"type": "summary_text", "text": draw(texts)}] if draw(st.booleans()) else [],
                "encrypted_content": draw(st.sampled_from(["gAAAA-enc", "", "ÉpQ=="]))})
        if draw(st.integers(0, 2)):
            n = next(ids)
            items.append({"type": "message", "role": "assistant", "id": f"msg_{n}", "status": "completed",
                          "content": [{"type": "output_text", "text": draw(texts), "annotations": []}
                                      for _ in range(draw(st.integers(1, 2)))]})
        calls = []
        for _ in range(draw(st.sampled_from([0, 1, 1, 1, 2, 3]))):
            n = next(ids)
            if draw(st.integers(0, 4)) == 0:
                calls.append({"type": "custom_tool_call", "id": f"ctc_{n}", "call_id": f"call_{n}",
                              "name": "apply_patch", "input": draw(texts)})
            else:
                calls.append({"type": "function_call", "id": f"fc_{n}", "call_id": f"call_{n}",
                              "name": draw(_tool_names), "arguments": _openai_arguments(draw)})
        items += calls
        if draw(st.integers(0, 6)) == 0:
            items.append({"type": "web_search_call", "id": f"ws_{next(ids)}", "status": "completed"})
        for call in draw(st.permutations(calls)):
            if draw(st.integers(0, 4)):
                kind = "custom_tool_call_output" if call["type"] == "custom_tool_call" else "function_call_output"
                items.append({"type": kind, "call_id": call["call_id"], "output": _responses_output(draw)})
        if draw(st.integers(0, 8)) == 0:
            items.append({"type": "function_call_output", "call_id": f"orphan_{next(ids)}",
                          "output": _responses_output(draw)})
    return items


def conversations(late_results: bool = False) -> st.SearchStrategy[tuple[str, list]]:
    """``(format name, messages)`` in any of the three formats (``late_results``: in OpenAI and
    Anthropic, results after a later call's span too)."""
    return st.one_of(st.tuples(st.just("openai"), openai_conversations(late_results=late_results)),
                     st.tuples(st.just("anthropic"), anthropic_conversations(late_results=late_results)),
                     st.tuples(st.just("responses"), responses_conversations()))


# -- rule files ----------------------------------------------------------------

TOOL_PATTERNS = ["bash", "Read", "Todo*", "mcp__*", "*", "B?sh", "[RE]*", "nonexistent", "ünï_tool", ""]
WHERE_EXPRESSIONS = [
    "item.chars > `100`",
    "item.kind == 'tool_result'",
    "item.tool_name == 'bash'",
    "contains(item.tool_names, 'bash')",
    "starts_with(item.text, '<returncode>')",
    "length(item.text) > `50`",
    "item.tokens >= `10`",
    "item.orphan",
    "item.is_error",
    "args.command",
    "args.command == 'ls -la'",
    "call.function.name == 'bash' || call.name == 'bash'",
    "message.role == 'tool'",
    "message.is_error == `true`",
    "!item.orphan && item.index > `2`",
]
THRESHOLDS = [0, 1, 2, 3, 5, 10, 20, 50, 100, 200, 800, 1000, 2500, 10_000, 20_000]
SMALL_THRESHOLDS = [0, 1, 2, 3, 4, 5, 10, 20, 100, 1000]
TEMPLATES = [
    "[Previous: used {tool_name}]",
    "[cleared {tool_name}: {chars} chars]",
    "[{tool_call_id}] {bytes}B {tokens}t {lines}L",
    "[{chars:,} chars from {tool_name:.4}]",
    "[{tool_name:>10}] {chars}",
    "[compacted]",
    "{tool_name}",
    "{{literal}} {lines} lines",
    "ünïcödé {chars}",
    "",
    "[Previous: used {tool_name}] (output was {tokens} tokens, {bytes} bytes)",
]
TRUNCATE_MARKERS = ["\n[... {omitted} chars omitted ...]\n", "…", "", "[{omitted} of {chars} cut from {tool_name}]",
                    " <{omitted}> ", "\n... {lines} lines, {bytes} bytes, {tokens} tokens; id {tool_call_id}\n"]
STRIP_MARKERS = ["[reasoning removed]", "[text removed]", "", " ", "…"]
KEEP_PATTERNS = ["TODO", "^I'll", "(?i)error", "\\d+"]
REGEXES = ["^<returncode>[^0]", "(?i)error", "\\bFAILED\\b", "^$", "[ü日]", ".*", "\\d+ chars\\z"]
ESTIMATOR_NAMES = sorted(ESTIMATORS)
AGE_UNITS = ["tool_results", "tool_calls", "spans", "messages", "user_turns", "tokens"]
AMONG_UNITS = ("tool_results", "spans", "tokens", "user_turns")


def _bounds(values: list[int]) -> st.SearchStrategy[dict]:
    return st.dictionaries(st.sampled_from(["gt", "gte", "lt", "lte"]), st.sampled_from(values),
                           min_size=1, max_size=2)


def _one_or_list(values: list) -> st.SearchStrategy:
    return st.one_of(st.sampled_from(values), st.lists(st.sampled_from(values), min_size=1, max_size=3))


def _merge(*dicts: dict) -> dict:
    out: dict = {}
    for d in dicts:
        out.update(d)
    return out


_booleans = st.booleans()
_text_options = st.fixed_dictionaries({}, optional={
    "contains": _one_or_list(["error", "Error", "ü", "<returncode>1", "Previous", ""]),
    "startswith": _one_or_list(["<returncode>0", "<returncode>", "[", "Traceback"]),
    "endswith": _one_or_list(["</output>", "]", "\n"]),
    "regex": st.sampled_from(REGEXES),
    "ignore_case": _booleans,
    "empty": _booleans,
}).filter(bool)
_size_options = st.builds(_merge, st.fixed_dictionaries(
    {}, optional={"unit": st.sampled_from(["chars", "bytes", "utf16", "tokens"])}), _bounds(THRESHOLDS))

#: Matcher kinds whose options hold no nested matcher.
LEAF_MATCHERS: dict[str, st.SearchStrategy] = {
    "role": st.one_of(st.sampled_from(["tool", "assistant"]),
                      st.lists(st.sampled_from(["tool", "assistant"]), min_size=1, max_size=2)),
    "tool": _one_or_list(TOOL_PATTERNS),
    "compactable": _booleans,
    "declared": _booleans,
    "size": _size_options,
    "in_tail": _booleans,
    "is_error": _booleans,
    "has_tool_calls": _booleans,
    "has_thinking": _booleans,
    "call_in_previous_assistant": _booleans,
    "orphan": _booleans,
    "observation": _booleans,
    "dangling": _booleans,
    "compacted": _booleans,
    "text": _text_options,
    "where": st.sampled_from(WHERE_EXPRESSIONS),
    "superseded": st.one_of(_booleans, st.builds(lambda k: {"key": k},
                                                 st.sampled_from(["command", "file_path", "path", "todos[0]"]))),
    "at_step_boundary": _booleans,
    "in_span": _booleans,
}


def _leaf_dicts(kinds: dict[str, st.SearchStrategy]) -> st.SearchStrategy[dict]:
    names = sorted(kinds)
    return st.lists(st.sampled_from(names), unique=True, max_size=3).flatmap(
        lambda chosen: st.fixed_dictionaries({k: kinds[k] for k in chosen}))


def _combine(children: st.SearchStrategy[dict]) -> st.SearchStrategy[dict]:
    return st.one_of(
        st.builds(lambda cs: {"all": cs}, st.lists(children, min_size=1, max_size=3)),
        st.builds(lambda cs: {"any": cs}, st.lists(children, min_size=1, max_size=3)),
        st.builds(lambda c: {"not": c}, children),
        st.builds(lambda a, b: {**b, **a}, children, children),
    )


def make_matchers(exclude: tuple[str, ...] = ()) -> st.SearchStrategy[dict]:
    """Valid matcher specs of every kind, nested with all/any/not (``age`` with ``among``);
    ``exclude`` leaves kinds out everywhere, ``among`` included (error_when may not use is_error)."""
    leaves = {k: v for k, v in LEAF_MATCHERS.items() if k not in exclude}
    simple = st.recursive(_leaf_dicts(leaves), _combine, max_leaves=3)

    @st.composite
    def age_options(draw) -> dict:
        unit = draw(st.sampled_from(AGE_UNITS))
        options = {"unit": unit, **draw(_bounds(THRESHOLDS if unit == "tokens" else SMALL_THRESHOLDS))}
        if draw(st.booleans()):
            options["include_self"] = draw(_booleans)
        if unit in AMONG_UNITS and draw(st.integers(0, 2)) == 0:
            options["among"] = draw(simple)
        return options

    return st.recursive(_leaf_dicts({**leaves, "age": age_options()}), _combine, max_leaves=4)


#: Any valid matcher spec.
matchers = make_matchers()
#: What ``error_when`` accepts: every kind but is_error.
error_matchers = make_matchers(exclude=("is_error",))

_placeholder_actions = st.one_of(
    st.just("placeholder"), st.just({"placeholder": None}), st.just({"placeholder": {}}),
    st.builds(lambda t: {"placeholder": t}, st.sampled_from(TEMPLATES)),
    st.builds(lambda o: {"placeholder": o}, st.fixed_dictionaries({}, optional={
        "text": st.sampled_from(TEMPLATES),
        "summary": _booleans,
        "summary_text": st.sampled_from(["[Previous: used {tool_name}: {summary}]", "{summary} ({chars} chars)"]),
        "as_string": _booleans,
    })),
)
#: Where generated rule files that save what they clear save it (removed when the tests end).
STORE_FOLDER = tempfile.mkdtemp(prefix="rules-compact-test-store-")
atexit.register(shutil.rmtree, STORE_FOLDER, True)
_saving_actions = st.builds(lambda o: {"placeholder": {"save": True, **o}}, st.fixed_dictionaries({}, optional={
    "text": st.just("[{tool_name} cleared: read {saved} ({saved_lines} lines)]"),
    "as_string": _booleans,
}))
_placeholder_actions = st.one_of(_placeholder_actions, _saving_actions)
_truncate_actions = st.one_of(
    st.just("truncate"),
    st.builds(lambda o: {"truncate": o}, st.fixed_dictionaries({}, optional={
        "head": st.sampled_from([0, 1, 5, 20, 200, 1000]),
        "tail": st.sampled_from([0, 1, 5, 20, 200, 1000]),
        "marker": st.sampled_from(TRUNCATE_MARKERS),
        "as_string": _booleans,
    })),
)
_truncate_actions = st.one_of(_truncate_actions, st.builds(
    lambda head, tail: {"truncate": {"head": head, "tail": tail, "save": True}},
    st.sampled_from([0, 5, 200]), st.sampled_from([0, 5, 200])))
_strip_actions = st.one_of(
    st.just("strip-text"), st.just({"strip-text": None}),
    st.builds(lambda o: {"strip-text": o}, st.fixed_dictionaries({}, optional={
        "keep_patterns": st.lists(st.sampled_from(KEEP_PATTERNS), max_size=2),
        "keep_max_chars": st.sampled_from([0, 10, 40, 800]),
        "marker": st.sampled_from(STRIP_MARKERS),
        "text_first": _booleans,
        "keep_thinking": _booleans,
        "keep_text": _booleans,
        "tool_turns_only": _booleans,
        "drop_other_blocks": _booleans,
        "length": st.sampled_from(["chars", "utf16"]),
    })),
)
_clear_actions = st.sampled_from(["clear-inputs", {"clear-inputs": None}, {"clear-inputs": {}}])
_keep_actions = st.sampled_from(["keep", {"keep": None}, {"keep": {}}])
_cache_actions = st.sampled_from(["cache-breakpoint", {"cache-breakpoint": None}, {"cache-breakpoint": {}},
                                  {"cache-breakpoint": {"ttl": "5m"}}, {"cache-breakpoint": {"ttl": "1h"}}])

#: Every action kind the strategies write (a test compares these lists with the schema).
ACTION_KINDS = ["keep", "placeholder", "truncate", "strip-text", "clear-inputs", "cache-breakpoint"]
#: Every matcher kind the strategies write.
MATCHER_KINDS = [*LEAF_MATCHERS, "age", "all", "any", "not"]

#: One action, in every spelling the schema allows.
actions = st.one_of(_keep_actions, _placeholder_actions, _truncate_actions, _strip_actions, _clear_actions,
                    _cache_actions)
_rule_actions = st.one_of(actions, st.lists(actions, min_size=1, max_size=3))


@st.composite
def _rule(draw, name: str, anchors: list[str] = ()) -> dict:
    rule = {"name": name, "match": draw(matchers), "action": draw(_rule_actions)}
    if draw(st.integers(0, 4)) == 0:
        rule["description"] = draw(st.sampled_from(["", "why ü"]))
    if anchors and draw(st.integers(0, 2)) == 0:
        rule[draw(st.sampled_from(["before", "after"]))] = draw(st.sampled_from(anchors))
    return rule


DEFAULT_RULE_NAMES = [r["name"] for r in yaml.safe_load(
    bundled_rules("default").read_text(encoding="utf-8"))["rules"]]

_triggers = st.one_of(
    st.just({}), st.just({"always": True}),
    st.builds(lambda v: {"tokens_over": v}, st.sampled_from([0, 10, 100, 1000, 5000, 100_000])),
    st.builds(lambda v: {"tool_results_over": v}, st.sampled_from([0, 1, 2, 5, 10])),
)
_token_amounts = st.sampled_from([0, 1, 10, 100, 500, 1000, 3000, 10_000, 100_000])
_defaults = st.fixed_dictionaries({}, optional={
    "placeholder": st.sampled_from(TEMPLATES),
    "estimator": st.sampled_from(ESTIMATOR_NAMES),
    "over_budget_tokens": _token_amounts,
})
_tools_sections = st.dictionaries(
    st.sampled_from(["bash", "Read", "Todo*", "mcp__*", "*", "Edit", "ünï_tool"]),
    st.fixed_dictionaries({"compact": _booleans}, optional={"placeholder": st.sampled_from(TEMPLATES)}),
    max_size=3)


#: Every top-level key the strategies write.
TOP_LEVEL_KEYS = ["version", "name", "description", "enabled", "extends", "remove_rules", "trigger", "step", "budget",
                  "defaults", "store", "error_when", "undeclared", "plugin_tools", "tools", "rules"]


@st.composite
def rule_files(draw, idempotent: bool = True, max_rules: int = 4) -> dict:
    """A random valid rule file as a dict; ``stop_after_cleared_tokens`` only if not ``idempotent``.

    One in six extends the bundled default rules (removing, replacing and inserting rules)."""
    budget_keys = {"min_cleared_tokens": _token_amounts, "stop_at_tokens": _token_amounts,
                   "min_cleared_counts": st.sampled_from(["saved", "removed"])}
    if not idempotent:
        budget_keys["stop_after_cleared_tokens"] = _token_amounts
    optional = {
        "description": st.sampled_from(["", "generated ü"]),
        "enabled": st.sampled_from([True, True, True, False]),
        "trigger": _triggers,
        "budget": st.fixed_dictionaries({}, optional=budget_keys),
        "defaults": _defaults,
        "error_when": error_matchers,
        "undeclared": st.sampled_from(["compact", "keep"]),
        "plugin_tools": st.sampled_from(["use", "ignore"]),
        "tools": _tools_sections,
        "step": st.fixed_dictionaries({"unit": st.sampled_from(["tool_results", "tokens", "messages"]),
                                       "every": st.sampled_from([1, 2, 3, 5, 100, 2000])},
                                      optional={"growth": st.sampled_from([0, 0.02, 0.5]),
                                                "pay_back": st.fixed_dictionaries(
                                                    {"price_ratio": st.sampled_from([1.5, 10, 12.5])},
                                                    optional={"factor": st.sampled_from([0.5, 1, 1.5])})}),
    }
    assert set(optional) | {"version", "name", "rules", "extends", "remove_rules", "store"} == set(TOP_LEVEL_KEYS)
    data: dict[str, Any] = {"version": 1, "name": draw(st.sampled_from(["gen", "gen-ü", "second"]))}
    data.update(draw(st.fixed_dictionaries({}, optional=optional)))
    data = _with_store(data)
    count = draw(st.integers(0, max_rules))
    if draw(st.integers(0, 5)):
        data["rules"] = [draw(_rule(f"r{i}")) for i in range(count)]
        return _with_store(data)
    data["extends"] = "default"
    removed = draw(st.lists(st.sampled_from(DEFAULT_RULE_NAMES), unique=True, max_size=2))
    if removed:
        data["remove_rules"] = removed
    inherited = [n for n in DEFAULT_RULE_NAMES if n not in removed]
    names = draw(st.lists(st.sampled_from([f"r{i}" for i in range(max_rules)] + inherited),
                          unique=True, max_size=count))
    if names or draw(st.booleans()):
        data["rules"] = [draw(_rule(n, [a for a in inherited if a != n])) for n in names]
    return _with_store(data)


def _with_store(data: dict) -> dict:
    """A rule file with a store: when an action saves what it clears."""
    if '"save": true' in json.dumps(data.get("rules", [])):
        data["store"] = {"folder": STORE_FOLDER}
    return data


_superseded = st.builds(lambda s: {"superseded": s}, LEAF_MATCHERS["superseded"])
_aged = st.builds(lambda unit, bounds: {"role": "tool", "age": {"unit": unit, **bounds}},
                  st.sampled_from(AGE_UNITS), _bounds([0, 1, 2, 3, 5]))
_settling_matchers = st.one_of(_superseded, _superseded, _aged, _aged, st.builds(lambda t: {"in_tail": t}, _booleans))


@st.composite
def settling_rule_files(draw, max_rules: int = 3) -> dict:
    """A rule file of the matchers whose answers settle as the history grows (``superseded``,
    ages, ``in_tail``) with keep and placeholder: the rule files a Compactor resumes with."""
    count = draw(st.integers(2, max_rules))
    return _with_store({"version": 1, "name": "settling", "rules": [
        {"name": f"r{i}", "match": draw(_settling_matchers),
         "action": draw(st.sampled_from(["keep", "placeholder", {"placeholder": {"save": True}}]))}
        for i in range(count)]})


def to_ruleset(data: dict, file: str = "<generated>") -> RuleSet:
    """Load a rule-file dict the way a user's YAML file is loaded."""
    return parse_rules(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), file)
