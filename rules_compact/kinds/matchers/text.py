"""The ``text`` matcher: tests on the item's text."""

from __future__ import annotations

from typing import Any, Callable

from ..base import History, Matcher, MatcherKind, with_defaults


def compile_text(options, ctx, path):
    fold = str.lower if with_defaults(options, SCHEMA)["ignore_case"] else None
    checks: list[Callable[[str, str], bool]] = []  # (text, text folded)

    def folded(values):
        return [fold(v) for v in values] if fold else list(values)

    if "contains" in options:
        needles = folded(_as_list(options["contains"]))
        checks.append(lambda t, f: any(n in f for n in needles))
    if "startswith" in options:
        prefixes = tuple(folded(_as_list(options["startswith"])))
        checks.append(lambda t, f: f.startswith(prefixes))
    if "endswith" in options:
        suffixes = tuple(folded(_as_list(options["endswith"])))
        checks.append(lambda t, f: f.endswith(suffixes))
    if "regex" in options:
        regex = ctx.regex(options["regex"], f"{path}.regex", ignore_case=fold is not None)
        if regex is not None:
            checks.append(lambda t, f: regex.search(t) is not None)
    if "empty" in options:
        empty = options["empty"]
        checks.append(lambda t, f: (not t.strip()) is empty)

    def select(items, facts):
        out = []
        for i, text in zip(items, facts.texts_of(items)):
            folded = fold(text) if fold else text
            if all(check(text, folded) for check in checks):
                out.append(i)
        return out

    return Matcher(select, KIND, cost=4)


def _as_list(value: Any) -> list:
    return value if isinstance(value, list) else [value]

SCHEMA = {'type': 'object',
 'additionalProperties': False,
 'minProperties': 1,
 'properties': {'contains': {'description': 'Contains this string (or any of these).',
                             'anyOf': [{'type': 'string'},
                                       {'type': 'array', 'items': {'type': 'string'}, 'minItems': 1}]},
                'startswith': {'description': 'Starts with this string (or any of these).',
                               'anyOf': [{'type': 'string'},
                                         {'type': 'array', 'items': {'type': 'string'}, 'minItems': 1}]},
                'endswith': {'description': 'Ends with this string (or any of these).',
                             'anyOf': [{'type': 'string'},
                                       {'type': 'array', 'items': {'type': 'string'}, 'minItems': 1}]},
                'regex': {'type': 'string', 'description': 'A regular expression searched in the text.'},
                'ignore_case': {'default': False,
                                'type': 'boolean',
                                'description': 'Compare case-insensitively.'},
                'empty': {'type': 'boolean', 'description': 'The text is empty or only whitespace.'}}}

KIND = MatcherKind('text', compile_text, "Tests on the item's text (a result's content, an assistant turn's text); all given tests must hold.",
                   SCHEMA, History.ITEM)
