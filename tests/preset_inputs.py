"""Inputs for tests/test_presets.py: the real traces, scaled-up traces, and hypothesis strategies.

Everything here builds plain message lists (OpenAI Chat Completions or Anthropic Messages); nothing
imports rules_compact.  The strategies are deliberately shaped: each knob that would produce a
*documented* deviation between a preset and its reference (list contents, astral-plane characters,
results placed away from their call, ...) is off by default and named, so a test either excludes
the deviation on purpose or exercises it on purpose.
"""

from __future__ import annotations

import copy
import json
import random
from functools import lru_cache
from pathlib import Path

from hypothesis import strategies as st

TRACES = Path(__file__).parent / "data" / "traces"
MINI_SWE = sorted((TRACES / "mini-swe-agent").glob("*.traj.json"))


def _trace_names(paths) -> dict:
    """Short unique names: the issue ("django-13964"), with the run's model when two runs share it."""
    issues = [p.name.removesuffix(".traj.json").split("__")[-1] for p in paths]
    return {(issue if issues.count(issue) == 1 else f"{issue}-{p.name.split('__')[0].split('_')[1]}"): p
            for issue, p in zip(issues, paths)}


MINI_SWE_TRACES = _trace_names(MINI_SWE)  # name -> path
CLAUDE_CODE = TRACES / "claude-code" / "agent-a7be2f0.messages.json"


# ---------------------------------------------------------------------------
# real traces
# ---------------------------------------------------------------------------

@lru_cache(maxsize=None)
def _read(path: Path):
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def load_openai_trace(path: Path) -> list:
    """The trace's messages as the mini-swe-agent reader gives them, without the closing ``exit``
    message no model saw (a fresh list; the message dicts are shared: do not mutate them)."""
    return [m for m in _read(path)["messages"] if m.get("role") != "exit"]


def load_anthropic_trace() -> list:
    return list(_read(CLAUDE_CODE))


def _suffix_ids_openai(messages: list, suffix: str) -> list:
    """Copies of the messages whose ids change (other messages and fields are shared)."""
    out = []
    for m in messages:
        if m.get("tool_calls"):
            m = {**m, "tool_calls": [{**c, "id": f"{c['id']}{suffix}"} for c in m["tool_calls"]]}
        if isinstance(m.get("tool_call_id"), str):
            m = {**m, "tool_call_id": f"{m['tool_call_id']}{suffix}"}
        out.append(m)
    return out


def _suffix_ids_anthropic(messages: list, suffix: str) -> list:
    out = copy.deepcopy(messages)
    for m in out:
        if isinstance(m.get("content"), list):
            for b in m["content"]:
                if b.get("type") == "tool_use":
                    b["id"] = f"{b['id']}{suffix}"
                elif b.get("type") == "tool_result":
                    b["tool_use_id"] = f"{b['tool_use_id']}{suffix}"
    return out


def scaled_openai_trace(messages: list, copies: int = 1, user_every: int | None = None,
                        user_text: str = "Please continue.") -> list:
    """The trace repeated ``copies`` times (ids made unique), with a user turn inserted after
    every ``user_every``-th tool result (never between an assistant message and its results)."""
    out: list = []
    for k in range(copies):
        out += _suffix_ids_openai(messages, f"~{k}") if k else list(messages)
    if not user_every:
        return out
    result, seen = [], 0
    for i, m in enumerate(out):
        result.append(m)
        if m.get("role") == "tool":
            seen += 1
            nxt = out[i + 1] if i + 1 < len(out) else None
            if seen % user_every == 0 and (nxt is None or nxt.get("role") != "tool"):
                result.append({"role": "user", "content": user_text})
    return result


def scaled_anthropic_trace(messages: list, copies: int, thinking: str | None = None,
                           thinking_on_final: bool = False) -> list:
    """The trace repeated ``copies`` times (ids made unique).  With ``thinking``, a thinking block
    is put first in every assistant message that calls tools (and, with ``thinking_on_final``, in
    every other assistant message too)."""
    out: list = []
    for k in range(copies):
        out += _suffix_ids_anthropic(messages, f"~{k}") if k else copy.deepcopy(messages)
    if thinking is not None:
        for n, m in enumerate(out):
            if m.get("role") != "assistant" or not isinstance(m.get("content"), list):
                continue
            calls = any(b.get("type") == "tool_use" for b in m["content"])
            if calls or thinking_on_final:
                m["content"] = [{"type": "thinking", "thinking": f"{thinking} #{n}", "signature": f"sig{n}"}] \
                    + m["content"]
    return out


# ---------------------------------------------------------------------------
# text
# ---------------------------------------------------------------------------

# Texts come from fixed pools built from one alphabet (fast to draw).  Characters whose handling differs between Python and the
# originals are left out unless asked for: surrogates (the engine cannot UTF-8 encode them),
# U+001C..U+001F (whitespace for Python's strip(), not for Go's TrimSpace), and astral-plane
# characters (2 UTF-16 units in JavaScript) unless ``astral=True``.
ALPHABET = list("abcXYZ 019_-.:/{}[]\"'\n\t\r") + [
    "\x0b", "\x0c", "\x85", "\xa0", "\u2028", "\u3000",  # more line breaks and spaces
    "é", "ß", "Ω", "ж", "中", "文", "\u200b", "\ufeff", "\u0301",  # 2- and 3-byte UTF-8
]
ASTRAL = ["😀", "𝔘", "🜁"]  # 4-byte UTF-8, 2 UTF-16 units


def _pool(alphabet: list[str], seed: int) -> list[str]:
    """Fixed texts from the alphabet: one draw picks a whole text, which keeps generation fast."""
    rng = random.Random(seed)
    texts = ["", " ", "a", "ok", "hello world", "Error: boom", "I will retry", "line1\nline2\n", "a\r\nb\rc"]
    texts += ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 20))) for _ in range(60)]
    return texts


TEXTS = _pool(ALPHABET, 0)
TEXTS_ASTRAL = TEXTS + _pool(ALPHABET + ASTRAL * 4, 1)


def small_text(astral: bool = False, max_size: int = 20):
    """A short text (at most ``max_size`` characters) from the fixed pools."""
    return st.sampled_from([t for t in (TEXTS_ASTRAL if astral else TEXTS) if len(t) <= max_size])


def words(astral: bool = False, default: str = "go on"):
    """Text with something other than whitespace in it (a user turn for every reading)."""
    return small_text(astral).map(lambda t: t if t.strip() else default)


def boundary_texts(astral: bool = False) -> list[str]:
    """Texts exactly at, just under and just over the presets' thresholds, in chars and bytes."""
    texts = []
    for n in (199, 200, 201, 499, 500, 501, 799, 800, 801):
        texts.append("a" * n)
    texts += [
        "é" * 100, "é" * 100 + "a",            # 200 / 201 bytes, 100 / 101 chars
        "é" * 400, "é" * 400 + "a",            # 800 / 801 bytes, 400 / 401 chars
        "中" * 266 + "ab", "中" * 267,          # 800 / 801 bytes
        "é" * 500, "é" * 501,                  # 500 / 501 chars, 1000+ bytes
        "line\n" * 40, "l1\r\nl2\rl3\x0bl4\u2028l5\n",  # line counting
        "Error: exit 1\n" + "z" * 900,
    ]
    if astral:
        texts += ["😀" * 200, "😀" * 200 + "a", "😀" * 250, "😀" * 249 + "a", "😀" * 251]
    return texts


PLACEHOLDER_TEXTS = [
    "[Previous: used bash]",
    "[older tool output trimmed to fit budget]",
    "[Old tool result content cleared]",
    "  [Old tool result content cleared]\n",
    "[cleared]",
]


@st.composite
def result_text(draw, *, astral: bool = False, big_sizes=(), big_weight: int = 2, placeholders: bool = True):
    """A tool result's text: empty, blank, small, multi-line, at a threshold, big, or a placeholder."""
    kinds = ["empty", "blank", "small", "multiline", "boundary", "boundary"]
    if big_sizes:
        kinds += ["big"] * big_weight
    if placeholders:
        kinds.append("placeholder")
    kind = draw(st.sampled_from(kinds))
    if kind == "empty":
        return ""
    if kind == "blank":
        return draw(st.sampled_from([" ", "\n", " \t\n "]))
    if kind == "small":
        return draw(small_text(astral))
    if kind == "multiline":
        return "\n".join(draw(st.lists(small_text(astral, 12), max_size=6)))
    if kind == "boundary":
        return draw(st.sampled_from(boundary_texts(astral)))
    if kind == "placeholder":
        return draw(st.sampled_from(PLACEHOLDER_TEXTS))
    head = draw(small_text(astral, 10))
    return head + "x" * draw(st.sampled_from(list(big_sizes))) + "\n" + head


# ---------------------------------------------------------------------------
# OpenAI Chat Completions conversations
# ---------------------------------------------------------------------------

TOOL_NAMES = [
    # seed 000's exempt patterns and near misses
    "LoadSkill", "Task", "TaskCreate", "TodoWrite", "TodoRead", "EnterPlanMode", "PlanAhead",
    "Agent", "AgentFoo", "Ask", "Askew", "SendMessage", "CreateTeammate",
    # seed 004's whitelist and others
    "bash", "webfetch", "filesystem_read_file", "filesystem_grep", "filesystem_edit", "filesystem_write_file",
    "filesystem_glob", "Read", "Grep", "skill", "mcp__x__y",
]
# mostly neo-code's whitelisted tools, so that spans with clearable results are common
SPAN_TOOL_NAMES = ["bash", "bash", "webfetch", "filesystem_read_file", "filesystem_grep", "filesystem_glob",
                   "filesystem_edit", "filesystem_write_file", "Read", "Grep", "skill"]


@st.composite
def openai_conversation(draw, *, astral: bool = False, big_sizes=(), big_weight: int = 2, min_steps: int = 0,
                        max_steps: int = 18, names=TOOL_NAMES, list_content: bool = False, blank_user: bool = True,
                        tags: bool = False, shuffle_results: bool = True,
                        end_user: int = 1):
    """An OpenAI conversation: parallel calls, errors (is_error: true), orphans (unknown or missing
    tool_call_id), dangling calls, empty/blank/boundary/big results, non-ASCII text, reasoning."""
    ids = iter(range(10_000))
    msgs: list = []
    if draw(st.booleans()):
        msgs.append({"role": "system", "content": "You are a helpful agent."})
    msgs.append({"role": "user", "content": draw(words(astral, "Fix the bug."))})
    text = result_text(astral=astral, big_sizes=big_sizes, big_weight=big_weight)
    for _ in range(draw(st.integers(min_steps, max_steps))):
        step = draw(st.sampled_from(["calls", "calls", "calls", "calls", "user", "assistant"]))
        if step == "user":
            choices = [draw(words(astral)), ""]
            if blank_user:
                choices.append("  \n")
            msgs.append({"role": "user", "content": draw(st.sampled_from(choices))})
            continue
        if step == "assistant":
            msgs.append({"role": "assistant", "content": draw(small_text(astral)) or "Done."})
            continue
        n_calls = draw(st.sampled_from([1, 1, 1, 2, 3]))
        calls = []
        for _ in range(n_calls):
            cid = f"call_{next(ids)}"
            args = json.dumps({"cmd": draw(small_text(astral, 12))}, ensure_ascii=False)
            calls.append({"id": cid, "type": "function",
                          "function": {"name": draw(st.sampled_from(names)), "arguments": args}})
        assistant = {"role": "assistant", "content": draw(st.sampled_from([None, "", "Let me look."])),
                     "tool_calls": calls}
        if draw(st.integers(0, 4)) == 0:
            assistant["reasoning_content"] = draw(small_text(astral)) or "thinking"
        msgs.append(assistant)
        answered = [c for c in calls if draw(st.integers(0, 9)) > 0]  # ~10% dangling
        if shuffle_results and len(answered) > 1 and draw(st.booleans()):
            answered = draw(st.permutations(answered))
        for c in answered:
            content = draw(text)
            if list_content and draw(st.integers(0, 3)) == 0:
                content = [{"type": "text", "text": content}, {"type": "text", "text": draw(small_text(astral))}]
            result = {"role": "tool", "tool_call_id": c["id"], "content": content}
            if draw(st.integers(0, 5)) == 0:
                result["is_error"] = True
            if tags and draw(st.integers(0, 5)) == 0:
                result["tags"] = draw(st.sampled_from([["keep_output"], ["remove_output"],
                                                        ["keep_output", "remove_output"], []]))
            msgs.append(result)
        if draw(st.integers(0, 9)) == 0:  # an orphan: unknown id, or none at all
            orphan = {"role": "tool", "content": draw(text)}
            if draw(st.booleans()):
                orphan["tool_call_id"] = f"ghost_{next(ids)}"
            if draw(st.integers(0, 3)) == 0:
                orphan["is_error"] = True
            msgs.append(orphan)
    for _ in range(draw(st.integers(0, end_user))):  # the request often ends with user turns
        msgs.append({"role": "user", "content": draw(words(astral))})
    return msgs


# ---------------------------------------------------------------------------
# Anthropic Messages conversations
# ---------------------------------------------------------------------------

def _thinking_block(draw, astral):
    if draw(st.integers(0, 4)) == 0:
        return {"type": "redacted_thinking", "data": "ENCRYPTED" + draw(small_text(False, 8))}
    return {"type": "thinking", "thinking": draw(small_text(astral)) or "Hmm.", "signature": "sig"}


def _assistant_text(draw, astral, big_sizes):
    kind = draw(st.sampled_from(["small", "small", "boundary", "important", "big"] if big_sizes
                                else ["small", "small", "boundary", "important"]))
    if kind == "small":
        return draw(small_text(astral))
    if kind == "boundary":
        return draw(st.sampled_from(boundary_texts(astral)))
    if kind == "important":
        word = draw(st.sampled_from(["Error", "Failed", "I will", "I need to", "error", "i will"]))
        return word + " " + "w" * draw(st.sampled_from([10, 495, 600]))
    return "v" * draw(st.sampled_from(list(big_sizes)))


@st.composite
def anthropic_conversation(draw, *, astral: bool = False, big_sizes=(), max_steps: int = 16,
                           names=TOOL_NAMES, list_content: bool = False, interleave: bool = True,
                           thinking_on_final: bool = True, blank_user: bool = True,
                           shuffle_results: bool = True, dangling: bool = True, end_user: int = 1):
    """An Anthropic conversation: thinking / redacted thinking, text and parallel tool_use blocks
    (in canonical or interleaved order), tool_result blocks with is_error, orphans, dangling calls,
    user turns in string or block form, text-only assistant answers."""
    ids = iter(range(10_000))
    msgs: list = [{"role": "user", "content": draw(words(astral, "Fix the bug."))}]
    text = result_text(astral=astral, big_sizes=big_sizes)
    for _ in range(draw(st.integers(0, max_steps))):
        step = draw(st.sampled_from(["tools", "tools", "tools", "tools", "user", "answer"]))
        if step == "user":
            choices = [draw(words(astral))]
            if blank_user:
                choices.append("   ")
            said = draw(st.sampled_from(choices))
            msgs.append({"role": "user", "content": draw(st.sampled_from(
                [said, [{"type": "text", "text": said}]]))})
            continue
        if step == "answer":
            blocks = [{"type": "text", "text": draw(small_text(astral)) or "Done."}]
            if thinking_on_final and draw(st.booleans()):
                blocks.insert(0, _thinking_block(draw, astral))
            msgs.append({"role": "assistant", "content": blocks})
            continue
        thinking = [_thinking_block(draw, astral) for _ in range(draw(st.sampled_from([0, 1, 1, 2])))]
        texts = [{"type": "text", "text": _assistant_text(draw, astral, big_sizes)}
                 for _ in range(draw(st.sampled_from([0, 1, 1, 2])))]
        uses = [{"type": "tool_use", "id": f"toolu_{next(ids)}", "name": draw(st.sampled_from(names)),
                 "input": {"cmd": draw(small_text(astral, 12))}}
                for _ in range(draw(st.sampled_from([1, 1, 1, 2, 3])))]
        blocks = thinking + texts + uses
        if interleave and draw(st.integers(0, 3)) == 0:
            blocks = thinking + list(draw(st.permutations(texts + uses)))
        msgs.append({"role": "assistant", "content": blocks})
        answered = [u for u in uses if not dangling or draw(st.integers(0, 19)) > 0]  # ~5% dangling
        if shuffle_results and len(answered) > 1 and draw(st.integers(0, 3)) == 0:
            answered = draw(st.permutations(answered))
        results = []
        for u in answered:
            content = draw(text)
            if list_content and draw(st.integers(0, 3)) == 0:
                content = [{"type": "text", "text": content}]
            block = {"type": "tool_result", "tool_use_id": u["id"], "content": content}
            if draw(st.integers(0, 5)) == 0:
                block["is_error"] = True
            results.append(block)
        if draw(st.integers(0, 9)) == 0:
            results.append({"type": "tool_result", "tool_use_id": f"ghost_{next(ids)}", "content": draw(text)})
        if results:
            msgs.append({"role": "user", "content": results})
    for _ in range(draw(st.integers(0, end_user))):
        msgs.append({"role": "user", "content": draw(words(astral))})
    return msgs
