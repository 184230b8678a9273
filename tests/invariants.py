"""The engine's guarantees, checked on any (input, output) pair."""

from __future__ import annotations

import copy

from rules_compact import compact
from rules_compact.formats import FORMATS, detect_format

OPENAI_EDITABLE = {"content", "reasoning_content", "reasoning", "tool_calls"}


def _blocks(msg):
    content = msg.get("content") if isinstance(msg, dict) else None
    return content if isinstance(content, list) else []


def _calls(msg):
    calls = msg.get("tool_calls") if isinstance(msg, dict) else None
    return calls if isinstance(calls, list) else []


def _without(d, keys):
    return {k: v for k, v in d.items() if k not in keys} if isinstance(d, dict) else d


def check_openai_message(before: dict, after: dict) -> None:
    assert _without(before, OPENAI_EDITABLE) == _without(after, OPENAI_EDITABLE)
    assert len(_calls(before)) == len(_calls(after))
    for cb, ca in zip(_calls(before), _calls(after)):
        if isinstance(cb, dict):
            assert _without(cb, {"function"}) == _without(ca, {"function"})
            fb, fa = cb.get("function"), ca.get("function")
            assert _without(fb, {"arguments"}) == _without(fa, {"arguments"})
        else:
            assert cb == ca
    if before.get("role") != "assistant":
        for key in ("reasoning_content", "reasoning", "tool_calls"):
            assert before.get(key) == after.get(key)


def check_anthropic_message(before: dict, after: dict, latest: bool) -> None:
    assert _without(before, {"content"}) == _without(after, {"content"})
    b_blocks, a_blocks = _blocks(before), _blocks(after)
    def structural(blocks, kind):
        return [b for b in blocks if isinstance(b, dict) and b.get("type") == kind]
    for kind, editable in (("tool_use", {"input"}), ("tool_result", {"content"})):
        bs, as_ = structural(b_blocks, kind), structural(a_blocks, kind)
        assert len(bs) == len(as_), kind
        for b, a in zip(bs, as_):
            assert _without(b, editable) == _without(a, editable)
    for kind in ("thinking", "redacted_thinking"):
        kept = structural(a_blocks, kind)
        assert all(k in structural(b_blocks, kind) for k in kept)
        if latest:
            assert structural(b_blocks, kind) == kept, "latest assistant thinking changed"
    if latest:
        order = lambda bl: [b.get("type") for b in bl if isinstance(b, dict) and b.get("type") in ("thinking", "redacted_thinking")]
        assert order(b_blocks) == order(a_blocks)
        if b_blocks and isinstance(b_blocks[0], dict) and b_blocks[0].get("type") in ("thinking", "redacted_thinking"):
            assert a_blocks[0] == b_blocks[0]
    assert not (isinstance(before.get("content"), list) and after.get("content") == [])


def check_invariants(messages: list, rules, fmt: str | None = None, idempotent: bool = True):
    """Run ``compact`` and assert every guarantee; return the result."""
    snapshot = copy.deepcopy(messages)
    result = compact(messages, rules, format=fmt)
    assert messages == snapshot, "input mutated"
    out = result.messages
    assert out is not messages
    assert len(out) == len(messages)
    name = fmt or detect_format(messages)
    form = FORMATS[name]
    last_assistant = form.scan(messages).last_assistant
    for i, (before, after) in enumerate(zip(messages, out)):
        if not isinstance(before, dict):
            assert before == after
            continue
        assert before.get("role") == after.get("role"), f"role changed at {i}"
        if name == "openai":
            check_openai_message(before, after)
        else:
            check_anthropic_message(before, after, latest=i == last_assistant)
    before_items = form.scan(messages).items
    after_items = form.scan(out).items
    assert [(it.kind, it.msg_index, it.block_index, it.tool_call_id, it.call_ids) for it in before_items] == \
        [(it.kind, it.msg_index, it.block_index, it.tool_call_id, it.call_ids) for it in after_items]
    decisions = [d for p in result.report.passes if p.ran for d in p.decisions]
    for p in result.report.passes:
        if p.ran:
            assert len(p.decisions) == len(before_items)
    # error results change only when the deciding rule names is_error explicitly
    for d in decisions:
        if d.error and d.changed:
            assert d.rule is not None
    assert compact(messages, rules, format=fmt).messages == out, "not deterministic"
    if idempotent and all(p.idempotent for p in result.report.passes):
        again = compact(out, rules, format=fmt).messages
        assert again == out, "not idempotent"
    return result
