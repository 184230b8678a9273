"""The ``compacted`` matcher: the content already is a placeholder or marker of this rule set."""

from __future__ import annotations

from ..base import History, Matcher, MatcherKind


def compile_compacted(value, ctx, path):
    def select(items, facts):
        tests = facts.ruleset.compacted_patterns
        is_turn, blocks_of, messages, msg = facts.scan.is_turn, facts.fmt.text_blocks, facts.messages, facts.scan.msg
        out = []
        for i, text in zip(items, facts.texts_of(items)):
            hit = False
            for block in (blocks_of(messages[msg[i]]) if is_turn[i] else (text,)):
                for test in tests:
                    if test(block):
                        hit = True
                        break
                if hit:
                    break
            if hit is value:
                out.append(i)
        return out

    return Matcher(select, KIND, cost=5)

SCHEMA = {'type': 'boolean'}

KIND = MatcherKind('compacted', compile_compacted, "The content already is one of this rule file's placeholders or markers ('[text removed]' for a strip-text without one), its variables matching anything.",
                   SCHEMA, History.ITEM)
