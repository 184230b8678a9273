"""The ``compacted`` matcher: the content already is a placeholder or marker of this rule set."""

from __future__ import annotations

from ..base import History, Matcher, MatcherKind


def compile_compacted(value, ctx, path):
    def select(items, facts):
        tests = facts.ruleset.compacted_patterns
        is_turn, texts, fmt, messages, msg = facts.scan.is_turn, facts.texts, facts.fmt, facts.messages, facts.scan.msg
        out = []
        for i in items:
            if is_turn[i]:
                hit = any(test(t) for t in fmt.text_blocks(messages[msg[i]]) for test in tests)
            else:
                text = texts[i]
                hit = any(test(text) for test in tests)
            if hit is value:
                out.append(i)
        return out

    return Matcher(select, KIND, cost=5)

SCHEMA = {'type': 'boolean'}

KIND = MatcherKind('compacted', compile_compacted, "The content already is one of this rule file's placeholders or markers, its variables matching anything.",
                   SCHEMA, History.ITEM)
