"""Property tests: the engine's guarantees hold on generated conversations and rule files.

Profiles: ``ci`` (2,000 examples per property, the default here) and ``long``
(100,000).  The hypothesis plugin resolves ``--hypothesis-profile`` before test
modules are imported, so select ``long`` with either of::

    python3 -m pytest tests/test_properties.py -p tests.strategies --hypothesis-profile=long
    HYPOTHESIS_PROFILE=long python3 -m pytest tests/test_properties.py
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

# The profiles, registered before anything else (strategies.py registers the same two,
# so that ``-p tests.strategies`` makes them known to ``--hypothesis-profile``).
settings.register_profile(
    "ci", max_examples=2000, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile("long", parent=settings.get_profile("ci"), max_examples=100_000)
if os.environ.get("HYPOTHESIS_PROFILE"):
    settings.load_profile(os.environ["HYPOTHESIS_PROFILE"])
elif settings.get_current_profile_name() == "default":  # no --hypothesis-profile given
    settings.load_profile("ci")

import yaml  # noqa: E402

from invariants import check_invariants  # noqa: E402
from rules_compact import compact, load_rules  # noqa: E402
from rules_compact.formats import FORMATS  # noqa: E402
from strategies import (  # noqa: E402
    anthropic_conversations, conversations, openai_conversations, rule_files, to_ruleset,
)

DEFAULT = load_rules("default")


def _rule_file_lists():
    """1-2 rule files; half of the draws may use the non-idempotent ``stop_after_cleared_tokens``."""
    return st.booleans().flatmap(lambda idem: st.tuples(
        st.just(idem), st.lists(rule_files(idempotent=idem), min_size=1, max_size=2)))


def _result_contents(messages: list, fmt: str) -> list:
    form = FORMATS[fmt]
    return [(it.index, form.result_content(messages[it.msg_index], it))
            for it in form.scan(messages).items if it.kind == "tool_result"]


def _check_more(messages: list, rulesets: list, fmt: str, result) -> None:
    """Guarantees check_invariants leaves out: untouched results, error results, report totals."""
    passes = result.report.passes
    # a result every pass left alone is unchanged (edits of other items never reach it)
    changed = {d.item for p in passes if p.ran for d in p.decisions if d.changed}
    before = dict(_result_contents(messages, fmt))
    after = dict(_result_contents(result.messages, fmt))
    for index, content in before.items():
        if index not in changed:
            assert after[index] == content, f"result item {index} changed, but no decision says so"
    # an error result is changed only by a rule that asks for is_error: true
    for ruleset, report in zip(rulesets, passes):
        by_name = {r.name: r for r in ruleset.rules}
        for d in report.decisions:
            if d.error and d.changed:
                assert by_name[d.rule].matches_errors, f"error result {d.item} changed by rule {d.rule!r}"
    # the reported total is the estimate of what the last pass returned
    last, ruleset = passes[-1], rulesets[-1]
    if last.ran:
        form = FORMATS[fmt]
        total = sum(ruleset.estimator(piece) for m in result.messages for piece in form.message_pieces(m) if piece)
        assert last.tokens_after == total, "tokens_after is not the estimate of the output"


def _run(messages: list, files: list, idempotent: bool, fmt: str) -> None:
    for data in files:
        note(yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
    rulesets = [to_ruleset(d) for d in files]
    result = check_invariants(messages, rulesets, fmt, idempotent=idempotent)
    _check_more(messages, rulesets, fmt, result)


@given(messages=openai_conversations(), rules=_rule_file_lists())
def test_openai_invariants_hold_for_random_rules(messages, rules):
    idempotent, files = rules
    _run(messages, files, idempotent, "openai")


@given(messages=anthropic_conversations(), rules=_rule_file_lists())
def test_anthropic_invariants_hold_for_random_rules(messages, rules):
    idempotent, files = rules
    _run(messages, files, idempotent, "anthropic")


def _structure(messages: list) -> list:
    """Roles and every id, in order: what a provider checks when pairing calls and results."""
    out = []
    for msg in messages:
        ids = []
        calls = msg.get("tool_calls")
        if isinstance(calls, list):
            ids += [("call", c.get("id")) for c in calls if isinstance(c, dict)]
        content = msg.get("content")
        if isinstance(content, list):
            for block in content:
                if isinstance(block, dict) and block.get("type") == "tool_use":
                    ids.append(("tool_use", block.get("id")))
                elif isinstance(block, dict) and block.get("type") == "tool_result":
                    ids.append(("tool_result", block.get("tool_use_id")))
        out.append((msg.get("role"), msg.get("id"), msg.get("tool_call_id"), tuple(ids)))
    return out


@given(conversation=conversations())
def test_default_rules_keep_count_order_and_ids(conversation):
    fmt, messages = conversation
    result = compact(messages)  # default rules, format detected
    assert len(result.messages) == len(messages)
    assert _structure(result.messages) == _structure(messages)
    check_invariants(messages, DEFAULT, fmt)
