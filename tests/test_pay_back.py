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


def test_idempotent_on_a_real_trace(history):
    ruleset = rules("{price_ratio: 12.5}")
    once = compact(history, ruleset, format="openai").messages
    assert once != history
    assert compact(once, ruleset, format="openai").messages == once


def test_the_options_are_validated():
    from rules_compact import ConfigError
    for bad in ("{factor: 2}", "{price_ratio: 1}", "{price_ratio: 12.5, factor: 0}", "{price_ratio: 12.5, x: 1}"):
        with pytest.raises(ConfigError):
            rules(bad)
