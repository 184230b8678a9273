"""``step.pay_back``: the boundary moves to the latest step boundary only once the move has paid
for itself (docs/rules.md, "Moves that pay for themselves"), a pure function of the history."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rules_compact import Compactor, compact, load_rules
from rules_compact.readers import read_conversations
from rules_compact.replay import round_starts, step_schedule

TRACE = Path(__file__).parent / "data" / "traces" / "mini-swe-agent" / \
    "deepseek_reasoner_dev__sqlfluff__sqlfluff-1763.traj.json"
RULES = """\
version: 1
name: paid
step: {{unit: tool_results, every: 1{pay_back}}}
rules:
  - {{name: keep-recent, match: {{age: {{unit: tool_results, lt: 3}}}}, action: keep}}
  - {{name: clear, match: {{role: tool, size: {{unit: chars, gt: 200}}}}, action: {{placeholder: "[x]"}}}}
"""


def rules(pay_back: str = ""):
    return load_rules(RULES.format(pay_back=f", pay_back: {pay_back}" if pay_back else ""))


@pytest.fixture(scope="module")
def history() -> list:
    return json.loads(json.dumps(read_conversations(TRACE.read_bytes(), TRACE.name)[0].messages[:120]))


def test_a_move_that_costs_nothing_extra_is_made_at_once(history):
    """With cached and uncached tokens priced almost alike a move costs nothing extra: every
    move that saves something is made, so each round's prompt is the one without pay_back (the
    boundary stays behind only where moving would save nothing)."""
    cheap, plain = rules("{price_ratio: 1.000001}"), rules()
    fast, slow = Compactor(cheap, format="openai"), Compactor(plain, format="openai")
    for end in round_starts(history):
        assert fast(history[:end]).messages == slow(history[:end]).messages
    boundaries = step_schedule(history, cheap, "openai")
    assert boundaries[-1] == step_schedule(history, plain, "openai")[-1] > 0


def test_moves_wait_for_the_rent(history):
    """At Anthropic's price ratio the boundary moves less often, and later with a higher factor;
    a boundary never moves back."""
    plain = step_schedule(history, rules(), "openai")
    paid = step_schedule(history, rules("{price_ratio: 12.5}"), "openai")
    patient = step_schedule(history, rules("{price_ratio: 12.5, factor: 3}"), "openai")
    moves = [sum(a != b for a, b in zip(s, s[1:])) for s in (plain, paid, patient)]
    assert moves[0] > moves[1] > moves[2] > 0
    for schedule in (paid, patient):
        assert all(a <= b for a, b in zip(schedule, schedule[1:]))
        assert all(b <= p for b, p in zip(schedule, plain))


def test_a_move_that_never_pays_back_is_never_made(history):
    short = history[:12]
    out = compact(short, rules("{price_ratio: 12.5, factor: 1000}"))
    assert out.messages == short
    assert "moved once paid back: no step boundary yet" in out.report.passes[0].reason


def test_the_compactor_resumes_the_walk_and_gives_what_compact_gives(history):
    ruleset = rules("{price_ratio: 12.5}")
    compactor = Compactor(ruleset, format="openai")
    schedule = step_schedule(history, ruleset, "openai")
    for k, end in enumerate(round_starts(history)):
        out = compactor(history[:end])
        if k % 7 == 0 or schedule[k] != schedule[k - 1]:
            assert out.messages == compact(history[:end], ruleset, format="openai").messages, f"round {k}"
        assert f"decide messages 0-{schedule[k] - 1}" in out.report.passes[0].reason or not schedule[k]


def test_a_resumed_walk_is_the_walk_afresh_at_every_length(history):
    """Cut anywhere (a round's end, or after a user or tool message: the previous history's end
    is then no round), the Compactor's resumed walk has the rounds, boundaries and rents of a
    walk from the start, and the same output as ``compact``."""
    from rules_compact.engine.interpreter import Input, pay_back_walk
    from rules_compact.formats import FORMATS
    ruleset = rules("{price_ratio: 12.5}")
    compactor = Compactor(ruleset, format="openai")
    for end in range(1, len(history) + 1):
        out = compactor(history[:end])
        resumed = compactor._memos[0].walk
        fresh = pay_back_walk(ruleset, Input(history[:end], FORMATS["openai"], ruleset))
        assert (resumed.ends, resumed.boundaries, resumed.rents) == (fresh.ends, fresh.boundaries, fresh.rents), end
        assert resumed.decided == fresh.decided, end
        assert out.messages == compact(history[:end], ruleset, format="openai").messages, end


@pytest.mark.parametrize("name", ["paid", "default"])
def test_idempotent_on_a_real_trace(history, name):
    """Not guaranteed (the walk measures the history it is given: report.idempotent is false),
    but what these rule files do on this trace."""
    ruleset = rules("{price_ratio: 12.5}") if name == "paid" else load_rules("default")
    once = compact(history, ruleset, format="openai")
    assert once.messages != history and not once.report.passes[0].idempotent
    assert compact(once.messages, ruleset, format="openai").messages == once.messages


def test_the_options_are_validated():
    from rules_compact import ConfigError
    for bad in ("{factor: 2}", "{price_ratio: 1}", "{price_ratio: 12.5, factor: 0}", "{price_ratio: 12.5, x: 1}"):
        with pytest.raises(ConfigError):
            rules(bad)


def test_growth_spaces_the_boundaries_by_a_share_of_the_history():
    """growth: 0.5: the gap after a boundary is every (1) result, or half the results before it
    if more: boundaries after the 1st, 2nd, 3rd, 4th, 6th, 9th, 13th, 19th... result."""
    from rules_compact.engine.stepping import step_boundary
    from rules_compact.language.model import Step
    results = [1] * 25  # one tool result a message
    grown, even = Step("tool_results", 1, growth=0.5), Step("tool_results", 1)
    got = [step_boundary(grown, lambda: results, list, count) for count in range(26)]
    assert sorted(set(got)) == [0, 1, 2, 3, 4, 6, 9, 13, 19]
    assert all(g <= step_boundary(even, lambda: results, list, n) == n for n, g in enumerate(got))
    assert step_boundary(Step("messages", 10, growth=0.5), list, list, 39) == 30  # 10, 20, 30, 45
    assert step_boundary(Step("messages", 10, growth=0.5), list, list, 45) == 45


def test_incremental_prefixes_give_what_fresh_passes_give(history):
    """The incremental layer compacts the walk's prefixes with a Compactor; switched off, each
    prefix gets a pass of its own: the same boundaries and the same messages."""
    from rules_compact.engine.interpreter import fresh_prefixes, use_prefix_compaction
    ruleset = rules("{price_ratio: 12.5}")
    incremental = step_schedule(history, ruleset, "openai"), compact(history, ruleset, format="openai").messages
    previous = use_prefix_compaction(fresh_prefixes)
    try:
        fresh = step_schedule(history, ruleset, "openai"), compact(history, ruleset, format="openai").messages
    finally:
        use_prefix_compaction(previous)
    assert previous is not fresh_prefixes
    assert fresh == incremental and len(set(fresh[0])) == 3  # moved twice


def test_the_default_walks_a_long_history_and_its_compactor_agrees_every_round(history):
    """The bundled default (pay-back steps): a Compactor called every round, as an agent loop
    does, gives what compact() gives, while the boundary moves several times."""
    ruleset = load_rules("default")
    compactor = Compactor(ruleset, format="openai")
    schedule = step_schedule(history, ruleset, "openai")
    assert len(set(schedule)) > 3
    for k, end in enumerate(round_starts(history)):
        out = compactor(history[:end])
        if k % 5 == 0 or schedule[k] != schedule[k - 1]:
            assert out.messages == compact(history[:end], ruleset, format="openai").messages, f"round {k}"


def test_an_edit_in_place_after_the_boundary_is_noticed(history):
    """verify=True notices an edit made in place to any message the walk read, the newest too
    (the walk's prefix compactions read them all)."""
    ruleset = rules("{price_ratio: 12.5}")
    messages = json.loads(json.dumps(history))
    compactor = Compactor(ruleset, format="openai")
    ends = round_starts(messages)
    for end in ends[:-1]:
        compactor(messages[:end])
    last = ends[-2] - 1  # the newest message of the previous call: a tool result
    assert messages[last]["role"] == "tool"
    messages[last]["content"] = "x" * 5000
    history_now = messages[:ends[-1]]
    assert compactor(history_now).messages == compact(history_now, ruleset, format="openai").messages
