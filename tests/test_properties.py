"""Property tests: the engine's guarantees hold on generated conversations and rule files.

Profiles (conftest.py): ``ci`` (150 examples per property) with the README's test command,
``thorough`` (2,000) in .ci/run after it, ``long`` (100,000) before a release::

    python3 -m pytest tests/test_properties.py --hypothesis-profile=long
"""

from __future__ import annotations


from hypothesis import given, note
from hypothesis import strategies as st

from conftest import property_settings

PROFILE = property_settings()

import yaml  # noqa: E402

from rules_compact.testing import check_invariants  # noqa: E402
from rules_compact import compact, load_rules  # noqa: E402
from rules_compact.formats import FORMATS  # noqa: E402
from rules_compact.engine.facts import Facts as View  # noqa: E402
from rules_compact.language.schema import rule_schema  # noqa: E402
from rules_compact.resources import bundled_rules  # noqa: E402
from strategies import (  # noqa: E402
    ACTION_KINDS, MATCHER_KINDS, TOP_LEVEL_KEYS, anthropic_conversations, conversations, openai_conversations,
    responses_conversations, rule_files, to_ruleset,
)

DEFAULT = load_rules("default")


def test_strategies_cover_the_whole_rule_language():
    """A kind the schema gains must be added to strategies.py, or the properties never try it."""
    schema = rule_schema()
    assert sorted(MATCHER_KINDS) == sorted(schema["$defs"]["matcher"]["properties"])
    assert sorted(ACTION_KINDS) == sorted(schema["$defs"]["action"]["anyOf"][0]["enum"])
    assert sorted(TOP_LEVEL_KEYS) == sorted(schema["properties"])


def _rule_file_lists():
    """1-2 rule files; half of the draws may use the non-idempotent ``stop_after_cleared_tokens``."""
    return st.booleans().flatmap(lambda idem: st.tuples(
        st.just(idem), st.lists(rule_files(idempotent=idem), min_size=1, max_size=2)))


def _result_contents(messages: list, fmt: str) -> list:
    form = FORMATS[fmt]
    return [(it.index, form.result_content(messages[it.msg_index], it.block_index))
            for it in form.items(messages) if it.kind == "tool_result"]


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
        total = View(result.messages, FORMATS[fmt], ruleset).total_tokens
        assert last.tokens_after == total, "tokens_after is not the estimate of the output"


KEEP_COMPACTED = {"name": "keep-compacted", "match": {"compacted": True}, "action": "keep"}


def _size_dependent(node) -> bool:
    """Whether decisions read sizes or text that compaction changes: ages in tokens, ``among``
    on sizes or text, steps in tokens (the documented limits of idempotence)."""
    if isinstance(node, list):
        return any(_size_dependent(n) for n in node)
    if not isinstance(node, dict):
        return False
    age, step = node.get("age"), node.get("step")
    if isinstance(age, dict) and (age.get("unit") == "tokens" or _mentions_content(age.get("among"))):
        return True
    if isinstance(step, dict) and step.get("unit") == "tokens":
        return True
    return any(_size_dependent(v) for v in node.values())


def _mentions_content(node) -> bool:
    if isinstance(node, dict):
        return bool({"size", "text", "where", "compacted"} & set(node)) or any(
            _mentions_content(v) for v in node.values())
    if isinstance(node, list):
        return any(_mentions_content(n) for n in node)
    return False


DEFAULT_RULES = yaml.safe_load(bundled_rules("default").read_text(encoding="utf-8"))["rules"]


def _reads_what_actions_change(data: dict) -> bool:
    """Whether a rule reads what an action changes and nothing recognises afterwards (the
    documented exceptions to idempotence): an assistant turn's size, text or thinking after a
    strip-text without a marker; a call's arguments after clear-inputs."""
    rules = (data.get("rules") or []) + (DEFAULT_RULES if data.get("extends") == "default" else [])
    actions = [a for r in rules for a in (r["action"] if isinstance(r["action"], list) else [r["action"]])]
    names = {a if isinstance(a, str) else next(iter(a)) for a in actions}
    unmarked = any(a == "strip-text" or (isinstance(a, dict) and "strip-text" in a
                                         and not str((a["strip-text"] or {}).get("marker") or "").strip())
                   for a in actions)  # no marker, or a blank one: removed without a trace
    matches = [r["match"] for r in rules] + [data.get("error_when") or {}]
    return ((unmarked and _mentions_any(matches, {"size", "text", "where", "has_thinking"}))
            or ("clear-inputs" in names and _mentions_any(matches, {"superseded", "where"})))


def _mentions_any(node, keys: set) -> bool:
    if isinstance(node, dict):
        return bool(keys & set(node)) or any(_mentions_any(v, keys) for v in node.values())
    if isinstance(node, list):
        return any(_mentions_any(n, keys) for n in node)
    return False


def _run(messages: list, files: list, idempotent: bool, fmt: str, outside: int = 0) -> None:
    # Idempotence is promised for a single file that keeps compacted items first and whose
    # decisions do not read what compaction changes; check it there, everything else always.
    if (idempotent and len(files) == 1 and not _size_dependent(files[0]) and files[0].get("rules")
            and not _reads_what_actions_change(files[0])):
        files = [{**files[0], "rules": [KEEP_COMPACTED] + [r for r in files[0]["rules"]
                                                            if r["name"] != "keep-compacted"]}]
        files[0].pop("remove_rules", None)
    else:
        idempotent = False
    for data in files:
        note(yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
    rulesets = [to_ruleset(d) for d in files]
    note(f"breakpoints outside the messages: {outside}")
    result = check_invariants(messages, rulesets, fmt, idempotent=idempotent, breakpoints_outside=outside)
    _check_more(messages, rulesets, fmt, result)


@PROFILE
@given(messages=openai_conversations(), rules=_rule_file_lists())
def test_openai_invariants_hold_for_random_rules(messages, rules):
    idempotent, files = rules
    _run(messages, files, idempotent, "openai")


@PROFILE
@given(messages=anthropic_conversations(), rules=_rule_file_lists(), outside=st.integers(0, 4))
def test_anthropic_invariants_hold_for_random_rules(messages, rules, outside):
    """With cache breakpoints in the messages and outside them (system, tools): the request
    never goes over Anthropic's 4 (check_invariants runs check_api_validity)."""
    idempotent, files = rules
    _run(messages, files, idempotent, "anthropic", outside)


@PROFILE
@given(messages=responses_conversations(), rules=_rule_file_lists())
def test_responses_invariants_hold_for_random_rules(messages, rules):
    idempotent, files = rules
    _run(messages, files, idempotent, "responses")


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


@PROFILE
@given(conversation=conversations())
def test_default_rules_keep_count_order_and_ids(conversation):
    fmt, messages = conversation
    # default rules, format detected (but for Responses items whose only typed item is a hosted
    # call such as web_search_call, which detect_format does not know)
    result = compact(messages, format=fmt if fmt == "responses" else None)
    assert len(result.messages) == len(messages)
    assert _structure(result.messages) == _structure(messages)
    check_invariants(messages, DEFAULT, fmt)
