"""The replay's measures on hand-made conversations whose answers are computed by hand.

Reference recall (rules_compact.recall), price profiles and the cache lifetime
(rules_compact.replay), the per-message timestamps the readers give the lifetime model, and the
step schedules with their clairvoyant bound (replay.StepSchedules). Tokens are chars4:
(characters + 2) // 4 per text piece, so the contents below are multiples of 4 characters long.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from rules_compact import load_rules
from rules_compact.errors import InputError
from rules_compact.formats import FORMATS
from rules_compact.readers import read_conversations
from rules_compact.recall import References
from rules_compact.store import FolderStore, MemoryStore, content_id
from rules_compact.replay import (PRICES, Price, Replay, StepSchedules, cold_rounds, parse_price, replay,
                                  round_starts, step_schedule)

ANTHROPIC = PRICES["anthropic"]
ASTROID = (Path(__file__).parent / "data" / "traces" / "mini-swe-agent"
           / "deepseek_chat_dev_rerun__pylint-dev__astroid-1333.traj.json")


def call(call_id: str, name: str = "read", arguments: str = "{}", content: str | None = None, **extra) -> dict:
    return {"role": "assistant", "content": content,
            "tool_calls": [{"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}],
            **extra}


def result(call_id: str, content: str, **extra) -> dict:
    return {"role": "tool", "tool_call_id": call_id, "content": content, **extra}


def rules(text: str):
    return load_rules("version: 1\nname: test\n" + text)


CLEAR_ALL = rules("rules:\n  - {name: clear, match: {role: tool}, action: {placeholder: '[x]'}}\n")
KEEP_ALL = rules("rules:\n  - {name: keep, match: {role: tool}, action: keep}\n")


# --- reference recall -------------------------------------------------------------------------

#: round 0 (before message 1) has no earlier result; round 1's response (message 3) names
#: compute_total and 12345 (both in the result), src/pkg/module_a.py (in no result) and, in its
#: reasoning only, hidden_reasoning_name (in the result too: not counted).
RECALL_CONV = [
    {"role": "user", "content": "Fix the total in src/pkg/module_a.py please."},
    call("c1", arguments=json.dumps({"path": "src/pkg/module_a.py"})),
    result("c1", "def compute_total():\n    return 12345  # hidden_reasoning_name\n"),
    call("c2", "edit", json.dumps({"path": "src/pkg/module_a.py", "old": "return 12345"}),
         content="compute_total returns a constant.", reasoning_content="hidden_reasoning_name is odd"),
    result("c2", "ok"),
    {"role": "assistant", "content": "Done."},
]


def test_references_are_response_strings_found_in_earlier_results():
    refs = References(RECALL_CONV, FORMATS["openai"], round_starts(RECALL_CONV))
    assert [refs.strings(k) for k in range(3)] == [[], ["12345", "compute_total"], []]


def test_recall_counts_what_the_compacted_prompt_still_shows():
    none = replay(RECALL_CONV, None, "openai", ANTHROPIC)
    assert none.referenced == (0, 2, 0) and none.kept == (0, 2, 0) and none.recall == 1.0
    assert replay(RECALL_CONV, [KEEP_ALL], "openai", ANTHROPIC).recall == 1.0  # clears nothing
    cleared = replay(RECALL_CONV, [CLEAR_ALL], "openai", ANTHROPIC)
    assert cleared.kept == (0, 0, 0) and cleared.recall == 0.0


def test_a_string_the_prompt_shows_elsewhere_is_kept():
    conv = [dict(RECALL_CONV[0], content="Fix compute_total in src/pkg/module_a.py please.")] + RECALL_CONV[1:]
    r = replay(conv, [CLEAR_ALL], "openai", ANTHROPIC)
    assert r.kept == (0, 1, 0) and r.recall == 0.5  # compute_total is in the task; 12345 was only in the result


def test_strings_in_reasoning_are_neither_references_nor_kept():
    conv = [RECALL_CONV[0], call("c1", content="x"), result("c1", "value 98765 and 4242"),
            call("c2", content="x", reasoning_content="saw 98765"),  # reasoning only: no reference
            result("c2", "ok"),
            {"role": "assistant", "content": "4242 it is"}]
    assert References(conv, FORMATS["openai"], round_starts(conv)).strings(2) == ["4242"]
    hidden = [conv[0], call("c1", content="x", reasoning_content="4242"), result("c1", "value 98765 and 4242"),
              conv[3], conv[4], conv[5]]
    r = replay(hidden, [CLEAR_ALL], "openai", ANTHROPIC)  # the prompt shows 4242 in reasoning only
    assert r.referenced == (0, 0, 1) and r.kept == (0, 0, 0)


def test_occurs_means_occurs_as_a_substring():
    conv = [{"role": "user", "content": "go"}, call("c1"),
            result("c1", "/work/src/pkg/module_a.py:12: error in compute_totals"),
            {"role": "assistant", "content": "See src/pkg/module_a.py and compute_total here. Or compute_totals."}]
    refs = References(conv, FORMATS["openai"], round_starts(conv))
    # the regex takes the final "." of "compute_totals." too: that string is in no result
    assert refs.strings(1) == ["compute_total", "src/pkg/module_a.py"]


def test_anthropic_recall_reads_tool_use_inputs_not_thinking():
    conv = [{"role": "user", "content": [{"type": "text", "text": "go"}]},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Grep", "input": {"q": "x"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                          "content": "found lib/widgets.py line 8080 and lib/gadgets.py"}]},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "lib/gadgets.py", "signature": "s"},
                {"type": "tool_use", "id": "t2", "name": "Read", "input": {"file_path": "lib/widgets.py",
                                                                            "offset": 8080}}]}]
    refs = References(conv, FORMATS["anthropic"], round_starts(conv))
    assert refs.strings(1) == ["8080", "lib/widgets.py"]
    r = replay(conv, [CLEAR_ALL], "anthropic", ANTHROPIC)
    assert r.referenced == (0, 2) and r.kept == (0, 0)


# --- recoverable recall -----------------------------------------------------------------------

def saving(folder) -> object:
    """Every result cleared to a placeholder that saves it into ``folder``."""
    return load_rules("version: 1\nname: save\nrules:\n  - {name: clear, match: {role: tool}, "
                      "action: {placeholder: {save: true, allow_larger: true}}}\n", store=FolderStore(folder))


def test_recoverable_recall_counts_references_in_a_result_the_placeholder_names(tmp_path):
    r = replay(RECALL_CONV, [saving(tmp_path)], "openai", ANTHROPIC)
    assert r.kept == (0, 0, 0) and r.recall == 0.0  # the placeholders show neither string
    assert r.recoverable == (0, 2, 0) and r.recoverable_recall == 1.0  # both are in the saved result c1


def test_recoverable_recall_equals_recall_for_rules_that_save_nothing():
    for rule_set in (None, [KEEP_ALL], [CLEAR_ALL]):
        r = replay(RECALL_CONV, rule_set, "openai", ANTHROPIC)
        assert r.recoverable == r.kept and r.recoverable_recall == r.recall


def test_only_a_result_a_placeholder_names_is_recoverable():
    # the last round's references: 12345 (c1's result, cleared unsaved) and 67890 (c2's, cleared and saved)
    conv = [{"role": "user", "content": "go"}, call("c1"), result("c1", "value 12345 " * 30),
            call("c2", "grep"), result("c2", "value 67890 " * 30),
            {"role": "assistant", "content": "12345 and 67890 and 55555"}]
    some = load_rules("version: 1\nname: save\nrules:\n"
                      "  - {name: clear-grep, match: {tool: grep}, action: {placeholder: {save: true}}}\n"
                      "  - {name: clear, match: {role: tool}, action: {placeholder: '[x]'}}\n", store=MemoryStore())
    r = replay(conv, [some], "openai", ANTHROPIC)
    assert r.referenced[-1] == 2 and r.kept[-1] == 0 and r.recoverable[-1] == 1
    named = [dict(conv[0], content="see " + content_id("value 12345 " * 29))] + conv[1:]
    r = replay(named, [CLEAR_ALL], "openai", ANTHROPIC)  # an id that is no result's content names nothing
    assert r.recoverable == r.kept == (0, 0, 0)


def test_recall_without_references_is_one():
    conv = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello there friend"}]
    assert replay(conv, [CLEAR_ALL], "openai", ANTHROPIC).recall == 1.0


# --- prices -----------------------------------------------------------------------------------


#: Each profile's numbers and what its cited source says (the README's "Price profiles" table):
#: (name, cached, uncached, lifetime seconds, source page, the words on it the numbers rest on).
ANTHROPIC_PAGE = "https://platform.claude.com/docs/en/build-with-claude/prompt-caching"
OPENAI_PAGE = "https://developers.openai.com/api/docs/guides/prompt-caching"
PROFILES = [
    ("anthropic", 0.1, 1.25, 300.0, ANTHROPIC_PAGE, ("0.1x", "5-minute cache writes 1.25x")),
    ("anthropic-1h", 0.1, 2.0, 3600.0, ANTHROPIC_PAGE, ("0.1x", "1-hour cache writes (ttl 1h) 2x")),
    ("openai", 0.1, 1.25, 1800.0, OPENAI_PAGE, ("GPT-5.6 and later", "cache writes 1.25x", "0.1x", "ttl 30m")),
    ("openai-legacy", 0.1, 1.0, 300.0, OPENAI_PAGE, ("before GPT-5.6", "0.1x", "writes free", "5 to 10 minutes")),
]


@pytest.mark.parametrize("name, cached, uncached, lifetime, page, words", PROFILES, ids=[p[0] for p in PROFILES])
def test_price_profiles_match_their_sources(name, cached, uncached, lifetime, page, words):
    price = PRICES[name]
    assert (price.name, price.cached, price.uncached, price.lifetime) == (name, cached, uncached, lifetime)
    assert price.source.startswith(page + ": ")
    for said in words:
        assert said in price.source
    assert parse_price(name) is price
    readme = (Path(__file__).parent.parent / "README.md").read_text(encoding="utf-8")
    row = next(line for line in readme.splitlines() if line.startswith(f"| `{name}` |"))
    cells = row.split(" | ")[1:4]
    assert [float(cells[0]), float(cells[1]), cells[2]] == [cached, uncached, _duration(lifetime)]


def _duration(seconds: float) -> str:
    return f"{seconds / 3600:g} hour" if seconds >= 3600 else f"{seconds / 60:g} minutes"


def test_every_profile_is_in_the_table():
    assert sorted(PRICES) == sorted(p[0] for p in PROFILES)


@pytest.mark.parametrize("text, lifetime", [("0.1,1.25", None), ("0.1,1.25,90", 90.0), ("0.1,1.25,90s", 90.0),
                                            ("0.1,1.25,5m", 300.0), ("0.1, 2, 1h", 3600.0), ("0,1,0.5h", 1800.0)])
def test_custom_prices(text, lifetime):
    price = parse_price(text)
    assert price.name == text and price.lifetime == lifetime
    assert (price.cached, price.uncached) == tuple(float(p) for p in text.split(",")[:2])


@pytest.mark.parametrize("text", ["", "cheap", "0.1", "0.1,1.25,3,4", "0.1,1.25,5d", "0.1,1.25,0s", "0.1,-1",
                                  "inf,1", "0.1,1.25,m", "nan,1", "1e308,1e308", "0.1,1000001",
                                  "0.1,1.25," + "9" * 400])
def test_bad_prices(text):
    with pytest.raises(InputError, match="CACHED,UNCACHED"):
        parse_price(text)


#: 100-token user message, then a call (2 tokens: "read" and "{}") and its result, three times:
#: a 1,000-token result, then two 10-token ones, then a final answer of 1 token.
DP_CONV = [
    {"role": "user", "content": "u" * 400},
    call("c1"), result("c1", "b" * 4000),
    call("c2"), result("c2", "s" * 40),
    call("c3"), result("c3", "t" * 40),
    {"role": "assistant", "content": "done"},
]


def test_replay_tokens_and_cost_by_hand():
    r = replay(DP_CONV, None, "openai", ANTHROPIC)
    assert r.prompt_tokens == (100, 1102, 1114, 1126)
    assert r.cached_tokens == (0, 100, 1102, 1114)
    assert r.cost == pytest.approx(0.1 * 2316 + 1.25 * (3442 - 2316))
    assert replay(DP_CONV, None, "openai", PRICES["openai-legacy"]).cost == pytest.approx(0.1 * 2316 + 1.0 * 1126)


# --- cache lifetime ---------------------------------------------------------------------------


def test_cold_rounds():
    times = [0.0, 10.0, None, 100.0, 350.0, 500.0, 900.0, None]
    starts = [1, 3, 5, 6, 7]  # round times 10, 100, 500, 900, None
    assert cold_rounds(times, starts, 300) == (False, False, True, True, False)
    assert cold_rounds(times, starts, 400) == (False, False, False, False, False)
    assert cold_rounds(times, starts, None) == (False,) * 5
    assert cold_rounds(None, starts, 300) == (False,) * 5


def test_expired_rounds_read_nothing_from_cache():
    r = replay(DP_CONV, None, "openai", ANTHROPIC)
    cold = r.expire((False, False, True, False))
    assert cold.cached_tokens == (0, 100, 0, 1114) and cold.prompt_tokens == r.prompt_tokens
    assert cold.cost - r.cost == pytest.approx(1102 * (1.25 - 0.1))


def _jsonl(*lines: dict) -> bytes:
    return "".join(json.dumps(line) + "\n" for line in lines).encode()


def test_claude_code_timestamps_are_those_of_each_message_first_line():
    def line(n: int, kind: str, content, when: str, mid: str | None = None) -> dict:
        message = {"role": kind, "content": content, **({"id": mid} if mid else {})}
        return {"type": kind, "uuid": f"u{n}", "parentUuid": f"u{n - 1}" if n else None, "sessionId": "s",
                "timestamp": when, "message": message}

    raw = _jsonl(line(0, "user", "hi", "2026-02-11T22:00:00.000Z"),
                 line(1, "assistant", [{"type": "text", "text": "a"}], "2026-02-11T22:00:05.000Z", "m1"),
                 line(2, "assistant", [{"type": "tool_use", "id": "t", "name": "Bash", "input": {}}],
                      "2026-02-11T22:00:06.500Z", "m1"),
                 line(3, "user", [{"type": "tool_result", "tool_use_id": "t", "content": "ok"}],
                      "2026-02-11T22:10:00.000Z"),
                 {"type": "progress", "uuid": "p", "parentUuid": "u3", "sessionId": "s",
                  "timestamp": "2026-02-11T23:00:00.000Z"},
                 line(4, "assistant", [{"type": "text", "text": "b"}], "2026-02-11T22:10:01.000Z", "m2"))
    (conv,) = read_conversations(raw, "cc.jsonl")
    start = 1770847200.0  # 2026-02-11T22:00:00Z
    assert len(conv.messages) == 4
    assert conv.timestamps == (start, start + 5, start + 600, start + 601)
    assert cold_rounds(conv.timestamps, round_starts(conv.messages), 300) == (False, True)


def test_tau2_timestamps_of_the_messages_the_agent_saw():
    sim = {"id": "s1", "messages": [
        {"role": "user", "content": "hi", "timestamp": "2025-08-10T02:44:06"},
        {"role": "user", "content": None, "tool_calls": [{"id": "u1", "name": "check", "arguments": {}}],
         "timestamp": "2025-08-10T02:44:07"},
        {"role": "tool", "id": "u1", "requestor": "user", "content": "ok", "timestamp": "2025-08-10T02:44:08"},
        {"role": "assistant", "content": "hello", "timestamp": "2025-08-10T02:44:16.5"}]}
    (conv,) = read_conversations(json.dumps({"simulations": [sim]}).encode(), "tau2.json")
    assert [m["content"] for m in conv.messages] == ["hi", "hello"]
    assert conv.timestamps[1] - conv.timestamps[0] == pytest.approx(10.5)


def test_openhands_timestamps_an_assistant_message_at_its_action():
    def metadata(call_id: str) -> dict:
        return {"tool_call_id": call_id, "function_name": "execute_bash",
                "model_response": {"id": "r1", "choices": [{"message": {"content": "", "tool_calls": [
                    {"id": call_id, "function": {"name": "execute_bash", "arguments": "{}"}}]}}]}}

    events = [
        {"id": 1, "timestamp": "2025-01-20T20:00:00", "source": "user", "action": "message",
         "args": {"content": "task"}},
        {"id": 2, "timestamp": "2025-01-20T20:00:30", "source": "agent", "action": "run",
         "args": {"command": "ls"}, "tool_call_metadata": metadata("t1")},
        {"id": 3, "timestamp": "2025-01-20T20:09:00", "source": "agent", "observation": "run", "cause": 2,
         "content": "files", "tool_call_metadata": metadata("t1")},
        {"id": 4, "timestamp": "2025-01-20T20:09:10", "source": "agent", "action": "message",
         "args": {"content": "done"}}]
    (conv,) = read_conversations(json.dumps(events).encode(), "oh.json")
    assert [m["role"] for m in conv.messages] == ["user", "assistant", "tool", "assistant"]
    start = conv.timestamps[0]
    assert [t - start for t in conv.timestamps] == [0, 30, 540, 550]


def test_logs_without_timestamps_have_none():
    (conv,) = read_conversations(json.dumps({"messages": DP_CONV}).encode(), "plain.json")
    assert conv.timestamps is None


# --- step schedules and the clairvoyant bound ----------------------------------------------------

#: clears a result over 100 characters once a newer result exists, with a step of 2 results
CLEAR_BIG = rules("step: {unit: tool_results, every: 2}\nrules:\n"
                  "  - {name: clear, match: {role: tool, age: {unit: tool_results, gte: 1}, "
                  "size: {unit: chars, gt: 100}}, action: {placeholder: '[x]'}}\n")


def test_candidates_and_the_engine_own_schedule():
    s = StepSchedules(DP_CONV, CLEAR_BIG, "openai")
    assert s.candidates == [0, 1, 3, 5, 7]
    # rounds see 0, 1, 2 and 3 results: the boundary moves after the 2nd (message 4) at round 2
    assert step_schedule(DP_CONV, CLEAR_BIG, "openai") == (0, 0, 5, 5)
    assert step_schedule(DP_CONV, s.content, "openai") == (1, 3, 5, 7)  # without a step: the whole prompt


def test_schedule_costs_by_hand():
    s = StepSchedules(DP_CONV, CLEAR_BIG, "openai")
    # never clearing: the replay without compaction
    assert s.replay((0, 0, 0, 0), ANTHROPIC).cost == pytest.approx(replay(DP_CONV, None, "openai", ANTHROPIC).cost)
    # clearing the big result at round 2 (boundary 5): 115 tokens, 102 of them cached (m0, m1); then 127, 115
    early = s.replay((0, 0, 5, 5), ANTHROPIC)
    assert early.prompt_tokens == (100, 1102, 115, 127) and early.cached_tokens == (0, 100, 102, 115)
    assert early.cost == pytest.approx(125 + 1262.5 + 26.45 + 26.5)
    # clearing it at round 3 only: round 2 is raw (125.2), round 3 rewrites 25 tokens after m0, m1
    late = s.replay((0, 0, 3, 7), ANTHROPIC)
    assert late.prompt_tokens == (100, 1102, 1114, 127) and late.cached_tokens == (0, 100, 1102, 102)
    assert late.cost == pytest.approx(125 + 1262.5 + 125.2 + 41.45)


def test_the_cheapest_schedule_by_hand():
    s = StepSchedules(DP_CONV, CLEAR_BIG, "openai")
    assert s.cheapest(ANTHROPIC) == (0, 0, 5, 5)  # ties go to the earliest boundary
    assert s.replay(s.cheapest(ANTHROPIC), ANTHROPIC).cost == pytest.approx(1440.45)
    # with round 2 cold, it reads nothing from cache whatever the boundary: clearing there is best too
    cold = (False, False, True, False)
    assert s.cheapest(ANTHROPIC, cold) == (0, 0, 5, 5)
    assert s.replay((0, 0, 5, 5), ANTHROPIC).expire(cold).cost == pytest.approx(125 + 1262.5 + 115 * 1.25 + 26.5)


def test_schedules_must_be_candidates_in_order():
    s = StepSchedules(DP_CONV, CLEAR_BIG, "openai")
    for bad in [(0, 0, 5), (0, 2, 3, 3), (0, 3, 0, 3), (0, 5, 5, 5)]:
        with pytest.raises(ValueError):
            s.replay(bad, ANTHROPIC)


def brute_force(s: StepSchedules, price: Price) -> float:
    """The cheapest cost over every schedule, enumerated."""
    best, count = float("inf"), 0
    refs = References(s.messages, FORMATS[s.fmt], s.starts)
    options = [[b for b in s.candidates if b <= end] for end in s.starts]
    for schedule in itertools.product(*options):
        if all(a <= b for a, b in zip(schedule, schedule[1:])):
            best = min(best, s.replay(schedule, price, references=refs).cost)
            count += 1
    assert count > 500
    return best


#: six rounds, results of varied sizes, one parallel pair, a user turn: 9 candidate boundaries
MIXED_CONV = [
    {"role": "system", "content": "s" * 200},
    {"role": "user", "content": "u" * 80},
    call("c1"), result("c1", "a" * 2000),
    call("c2"), result("c2", "b" * 120),
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c3", "type": "function", "function": {"name": "read", "arguments": "{}"}},
        {"id": "c4", "type": "function", "function": {"name": "grep", "arguments": "{}"}}]},
    result("c3", "c" * 3000), result("c4", "d" * 400),
    call("c5"), result("c5", "e" * 800),
    {"role": "user", "content": "more"},
    call("c6"), result("c6", "f" * 1200),
    {"role": "assistant", "content": "done"},
]


@pytest.mark.parametrize("price", [PRICES["anthropic"], PRICES["openai"], PRICES["openai-legacy"],
                                   Price("flat", 1.0, 1.0)],
                         ids=lambda p: p.name)
def test_the_programme_finds_the_enumerated_minimum(price):
    s = StepSchedules(MIXED_CONV, CLEAR_BIG, "openai")
    assert s.candidates == [0, 2, 4, 6, 8, 9, 11, 12, 14]
    best = s.cheapest(price)
    assert s.replay(best, price).cost == pytest.approx(brute_force(s, price))
    if price.cached == price.uncached:  # no cache to protect: clearing as soon as possible is best
        assert s.replay(best, price).total_prompt == s.replay(tuple(s.starts), price).total_prompt


#: clears results over 100 characters once 3 newer results exist, with a step of 2 results
CLEAR_OLD = rules("step: {unit: tool_results, every: 2}\nrules:\n"
                  "  - {name: clear, match: {role: tool, age: {unit: tool_results, gte: 3}, "
                  "size: {unit: chars, gt: 100}}, action: {placeholder: '[x]'}}\n")
#: a 500-token result, then six of 100 tokens: clearing one rewrites the three newer ones kept
BATCH_CONV = [{"role": "system", "content": "s" * 400}, {"role": "user", "content": "u" * 80}]
for _i, _size in enumerate((2000, 400, 400, 400, 400, 400, 400)):
    BATCH_CONV += [call(f"c{_i}"), result(f"c{_i}", "r" * _size)]
BATCH_CONV.append({"role": "assistant", "content": "done"})


def test_the_cheapest_schedule_clears_only_what_pays_for_its_rewrite():
    s = StepSchedules(BATCH_CONV, CLEAR_OLD, "openai")
    openai, anthropic = PRICES["openai-legacy"], PRICES["anthropic"]
    # older OpenAI prices (free writes): clear the big first result as soon as it is old enough (boundary 10), then never
    # again: clearing a 100-token result rewrites the three newer ones (300 tokens at 1.0) to save
    # 99 cached tokens (at 0.1) in each of the few rounds left
    assert s.cheapest(openai) == (0, 0, 0, 0, 10, 10, 10, 10)
    best = s.replay(s.cheapest(openai), openai).cost
    assert best == pytest.approx(brute_force(s, openai))
    assert best < s.replay((0,) * 8, openai).cost - 10 and best < s.replay(tuple(s.starts), openai).cost - 10
    # Anthropic's 1.25 for a cache write: no clearing pays for itself
    assert s.cheapest(anthropic) == (0,) * 8


def test_the_engine_schedule_replays_like_the_engine_and_the_bound_is_below_it():
    messages = json.loads(ASTROID.read_text(encoding="utf-8"))["messages"][:121]
    default = load_rules("default")
    engine = replay(messages, [default], "openai", ANTHROPIC, "default")
    s = StepSchedules(messages, default, "openai")
    own = s.replay(step_schedule(messages, default, "openai"), ANTHROPIC)
    assert (own.prompt_tokens, own.cached_tokens, own.referenced, own.kept) == (
        engine.prompt_tokens, engine.cached_tokens, engine.referenced, engine.kept)
    bound = s.replay(s.cheapest(ANTHROPIC), ANTHROPIC)
    assert bound.cost < engine.cost
    # the content rules alone, their boundary at every prompt end, replay like the rule file without its step
    whole = s.replay(tuple(s.starts), ANTHROPIC)
    assert whole.prompt_tokens == replay(messages, [s.content], "openai", ANTHROPIC).prompt_tokens


def test_replay_keeps_its_fields():
    r = Replay("x", (10, 20), (0, 10), ANTHROPIC)
    assert r.recall == 1.0 and r.rounds == 2 and r.cost == pytest.approx(0.1 * 10 + 1.25 * 20)
