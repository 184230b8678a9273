"""The ``size`` matcher: size of the item's text in chars, bytes or estimated tokens."""

from __future__ import annotations

import sys

from ..base import History, Matcher, MatcherKind, bounds, with_defaults
from ..estimators import utf8_len, utf16_len

UNITS = ("chars", "bytes", "utf16", "tokens")


def compile_size(options, ctx, path):
    low, high = bounds(options)
    low, high = max(low, 0), min(high, sys.maxsize)  # sizes are counts: int bounds compare faster than inf
    unit = with_defaults(options, SCHEMA)["unit"]
    if unit == "chars":
        def select(items, facts):
            return [i for i, text in zip(items, facts.texts_of(items)) if low <= len(text) <= high]
    elif unit == "bytes":
        def select(items, facts):  # n characters are n to 4n UTF-8 bytes: encode only when that matters
            return [i for i, text in zip(items, facts.texts_of(items))
                    if (low <= (n := len(text)) and 4 * n <= high)
                    or (4 * n >= low and n <= high and low <= utf8_len(text) <= high)]
    elif unit == "utf16":
        def select(items, facts):
            return [i for i, text in zip(items, facts.texts_of(items)) if low <= utf16_len(text) <= high]
    else:
        def select(items, facts):
            estimate = facts.estimate
            return [i for i, text in zip(items, facts.texts_of(items)) if low <= (estimate(text) if text else 0) <= high]
    return Matcher(select, KIND, cost=3)

SCHEMA = {'type': 'object',
 'additionalProperties': False,
 'properties': {'unit': {'default': 'chars',
                         'enum': ['chars', 'bytes', 'utf16', 'tokens'],
                         'description': "chars (default), UTF-8 bytes, UTF-16 code units (JavaScript's "
                                        'length), or estimated tokens.'},
                'gt': {'type': 'integer', 'minimum': 0, 'description': 'Greater than this.'},
                'gte': {'type': 'integer', 'minimum': 0, 'description': 'Greater than or equal to this.'},
                'lt': {'type': 'integer', 'minimum': 0, 'description': 'Less than this.'},
                'lte': {'type': 'integer', 'minimum': 0, 'description': 'Less than or equal to this.'}},
 'anyOf': [{'required': ['gt']}, {'required': ['gte']}, {'required': ['lt']}, {'required': ['lte']}]}

KIND = MatcherKind('size', compile_size, "Size of the item's text, compared with gt/gte/lt/lte.",
                   SCHEMA, History.ITEM)
