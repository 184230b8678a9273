"""``ValidityCheck``, the proxy's check of each round's compacted request, gives the verdicts of
``check_api_validity`` on the whole request, round after round: on what the Compactor makes of
generated conversations, and on that output broken the ways a faulty rule could break it
(breakpoints added or lost, blank or emptied messages, blocks reordered, reasoning edited),
with broken messages carried from round to round as a Compactor carries its outputs."""

from __future__ import annotations

import copy

from hypothesis import event, given
from hypothesis import strategies as st

from conftest import STEPPED_DEFAULT, property_settings
from rules_compact import Compactor, load_rules
from rules_compact.serve.sessions import _without_breakpoints as _unmarked  # the proxy's own
from rules_compact.testing import ValidityCheck, check_api_validity
from strategies import anthropic_conversations, conversations, rule_files, to_ruleset

PROFILE = property_settings()
STEPPED = load_rules(STEPPED_DEFAULT)
BP = {"type": "ephemeral"}
BREAKS = ("mark", "unmark", "blank", "empty", "reverse", "drop_first", "drop_calls", "text_first", "rethink",
          "extra_key", "original", "copy_of_original")


def verdict(check, before: list, after: list, fmt: str, outside: int) -> tuple[str, str] | None:
    try:
        check(before, after, fmt, outside)
    except Exception as exc:  # noqa: BLE001 - the two must fail alike, whatever they raise
        return type(exc).__name__, str(exc)
    return None


def broken(msg, original, how: str):
    """A new message: ``msg`` broken as ``how`` says (``original``: the message before compaction)."""
    if how == "original":
        return original
    if how == "copy_of_original":
        return copy.deepcopy(original)
    if not isinstance(msg, dict):
        return copy.deepcopy(msg)
    out = copy.deepcopy(msg)
    content = out.get("content")
    if how == "mark":
        if isinstance(content, str):
            out["content"] = [{"type": "text", "text": content, "cache_control": BP}]
        elif isinstance(content, list) and content and isinstance(content[-1], dict):
            content[-1]["cache_control"] = BP
        else:
            out["content"] = [{"type": "text", "text": "x", "cache_control": BP}]
    elif how == "unmark":
        out = _unmarked(out)
    elif how == "blank":
        if isinstance(content, list):
            content.append({"type": "output_text" if "type" in out else "text", "text": " "})
        else:
            out["content"] = ""
    elif how == "empty":
        out["content"] = [] if isinstance(content, list) else ""
        out.pop("tool_calls", None)
    elif how == "reverse" and isinstance(content, list):
        content.reverse()
    elif how == "drop_first" and isinstance(content, list):
        del content[:1]
    elif how == "drop_calls" and isinstance(content, list):
        out["content"] = [b for b in content if not (isinstance(b, dict) and b.get("type") == "tool_use")] or \
            [{"type": "text", "text": "no call"}]
    elif how == "text_first" and isinstance(content, list):
        content.insert(0, {"type": "text", "text": "first"})
    elif how == "rethink":
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict) and block.get("type") in ("thinking", "redacted_thinking", "reasoning"):
                block["thinking" if "thinking" in block else "data"] = "thought again"
        for field in ("reasoning_content", "reasoning"):
            if field in out:
                out[field] = "thought again"
    elif how == "extra_key":
        out["summary" if out.get("type") == "reasoning" else "extra"] = [{"type": "summary_text", "text": "x"}]
    return out


@PROFILE
@given(conversation=st.one_of(conversations(), st.tuples(st.just("anthropic"), anthropic_conversations())), rules=st.one_of(st.just(STEPPED), rule_files().map(to_ruleset)),
       data=st.data())
def test_the_incremental_check_gives_the_full_checks_verdicts(conversation, rules, data):
    fmt, messages = conversation
    if not messages:
        return
    compactor, check = Compactor(rules, format=fmt), ValidityCheck()
    ends = sorted(set(data.draw(st.lists(st.integers(1, len(messages)), min_size=1, max_size=6), label="ends")))
    kept: dict[tuple[int, int], object] = {}  # a message broken once stays broken while its output stays
    for end in ends:
        before = messages[:end]
        recopied = data.draw(st.sets(st.integers(0, end - 1), max_size=2), label="re-sent as copies")
        before = [copy.deepcopy(m) if i in recopied else m for i, m in enumerate(before)]
        if fmt == "anthropic" and data.draw(st.booleans(), label="the client moves its breakpoint"):
            before = [_unmarked(m) for m in before[:-1]] + [broken(before[-1], before[-1], "mark")]
        after = list(compactor(before).messages)
        changed = [i for i, (b, a) in enumerate(zip(before, after)) if a is not b]
        turns = [i for i, m in enumerate(before) if isinstance(m, dict) and m.get("role") == "assistant"]
        reasoning = [i for i, m in enumerate(before) if isinstance(m, dict) and m.get("type") == "reasoning"]
        special = sorted({*changed, *(i - 1 for i in changed if i), *turns[-1:], *reasoning})
        where = st.one_of(st.integers(0, end - 1), *([st.sampled_from(special)] * 2 if special else []))
        for i, how in data.draw(st.lists(st.tuples(where, st.sampled_from(BREAKS)), max_size=3), label="breaks"):
            key = (i, id(after[i]))
            if key not in kept:
                kept[key] = (after[i], broken(after[i], before[i], how))
            after[i] = kept[key][1]
        outside = data.draw(st.integers(0, 4), label="breakpoints outside") if fmt == "anthropic" else 0
        full = verdict(check_api_validity, before, after, fmt, outside)
        assert verdict(check, before, after, fmt, outside) == full
        event(full[1].split(":")[-1] if full else "accepted")


HISTORY = [{"role": "user", "content": "go"},
           {"role": "assistant", "content": [{"type": "thinking", "thinking": "hm", "signature": "s"},
                                             {"type": "tool_use", "id": "t1", "name": "bash", "input": {}}]},
           {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "x" * 300}]},
           {"role": "assistant", "content": [{"type": "thinking", "thinking": "so", "signature": "s"},
                                             {"type": "text", "text": "done"}]}]
CLEARED = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "[cleared]"}]}


def both(check: ValidityCheck, after: list, outside: int = 0):
    """The verdicts of the full check and of ``check`` (which remembers the calls before)."""
    return verdict(check_api_validity, HISTORY, after, "anthropic", outside), \
        verdict(check, HISTORY, after, "anthropic", outside)


def test_a_pair_that_passed_is_not_read_again_but_a_new_one_is():
    """What makes it incremental: a changed message that passed, with the same message before
    it, is accepted without being read, so a Compactor's shared output costs nothing the next
    round; a new object is read."""
    check, reads = ValidityCheck(), []

    class Watched(dict):
        def get(self, *args):
            reads.append(args[0])
            return super().get(*args)

    watched = Watched(CLEARED)
    check(HISTORY, HISTORY[:2] + [watched, HISTORY[3]], "anthropic")
    assert reads
    reads.clear()
    check(HISTORY, HISTORY[:2] + [watched, HISTORY[3]], "anthropic")
    assert not reads


def test_what_passed_is_looked_at_again_when_its_neighbour_or_the_latest_turn_changes():
    """A cleared result that passed, whose call is then lost from the message before it; the
    latest turn's thinking edited; a breakpoint added to a message that passed before: each is
    rejected as the full check rejects it."""
    check = ValidityCheck()
    assert both(check, HISTORY[:2] + [CLEARED, HISTORY[3]]) == (None, None)
    no_call = {"role": "assistant", "content": [{"type": "thinking", "thinking": "hm", "signature": "s"},
                                                {"type": "text", "text": "no call"}]}
    expected = ("AssertionError", "message 2: its tool_result blocks are no longer first")
    assert both(check, [HISTORY[0], no_call, CLEARED, HISTORY[3]]) == (expected, expected)
    rethought = {"role": "assistant", "content": [{"type": "text", "text": "done"}]}
    expected = ("AssertionError", "message 3: the latest assistant turn's thinking changed")
    assert both(check, HISTORY[:2] + [CLEARED, rethought]) == (expected, expected)
    assert both(check, HISTORY[:2] + [CLEARED, HISTORY[3]], outside=4) == (None, None)
    marked = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "[cleared]",
                                           "cache_control": BP}]}
    expected = ("AssertionError", "5 cache breakpoints in the request (at most 4; 4 before)")
    assert both(check, HISTORY[:2] + [marked, HISTORY[3]], outside=4) == (expected, expected)
