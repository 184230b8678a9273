"""The ``age`` matcher: how many units are newer than the item."""

from __future__ import annotations

from bisect import bisect_left, bisect_right

from ..ages import AGE_UNITS
from ..base import History, Matcher, MatcherKind, bounds, with_defaults


BISECT_FROM = 64  # items from which bisection beats reading the age column (computed once per pass)


def compile_age(options, ctx, path):
    unit = options["unit"]
    among = ctx.matcher(options["among"], f"{path}.among") if "among" in options else None
    include_self = with_defaults(options, SCHEMA)["include_self"]
    low, high = bounds(options)
    at = AGE_UNITS[unit].at if among is None else None

    def select(items, facts):
        # ages never grow along the items: keep the run inside the bounds
        if at is not None and facts.fast and len(items) > BISECT_FROM:
            age = at(facts, include_self)
            start = bisect_left(items, -high, key=lambda i: -age(i))
            end = bisect_right(items, -low, lo=start, key=lambda i: -age(i))
            return items[start:end]
        ages = facts.ages(unit, among, include_self)
        return [i for i in items if low <= ages[i] <= high]

    return Matcher(select, KIND, cost=1, data=Age(unit, among, include_self, saturation(options)))


class Age:
    """What the incremental layer needs of an age matcher: its key, and from which age on
    every bound compares the same forever."""

    __slots__ = ("key", "among", "saturation")

    def __init__(self, unit, among, include_self, saturation):
        self.key = (unit, among, include_self)
        self.among = among
        self.saturation = saturation


def saturation(options: dict) -> int:
    """The least value from which every bound in ``options`` compares the same forever."""
    return max(((b + 1 if k in ("gt", "lte") else b) for k, b in options.items()
                if k in ("gt", "gte", "lt", "lte")), default=0)

SCHEMA = {'type': 'object',
 'additionalProperties': False,
 'required': ['unit'],
 'properties': {'unit': {'enum': list(AGE_UNITS),
                         'description': 'tool_results, tool_calls (in call order, dangling calls included), '
                                        'spans (an assistant message with tool calls plus its results), '
                                        'messages, user_turns, or estimated tokens.'},
                'among': {'$ref': '#/$defs/matcher',
                          'description': 'Count only what matches this: items (tool_results, tokens), spans '
                                         'with a matching item (spans), or user turns with a matching item '
                                         '(user_turns).'},
                'include_self': {'default': False,
                                 'type': 'boolean',
                                 'description': 'Count the item itself too (when it is counted).'},
                'gt': {'type': 'integer', 'minimum': 0, 'description': 'Greater than this.'},
                'gte': {'type': 'integer', 'minimum': 0, 'description': 'Greater than or equal to this.'},
                'lt': {'type': 'integer', 'minimum': 0, 'description': 'Less than this.'},
                'lte': {'type': 'integer', 'minimum': 0, 'description': 'Less than or equal to this.'}},
 'anyOf': [{'required': ['gt']}, {'required': ['gte']}, {'required': ['lt']}, {'required': ['lte']}],
 'dependentSchemas': {'among': {'properties': {'unit': {'enum': [name for name, unit in AGE_UNITS.items() if unit.among],
                                                        'description': 'With among, the unit counts tool '
                                                                       'results, spans, tokens or user '
                                                                       'turns.'}}}}}

KIND = MatcherKind('age', compile_age, 'How many units are newer than the item, counted from the newest (the newest item has age 0), compared with gt/gte/lt/lte.',
                   SCHEMA, History.AGE)
