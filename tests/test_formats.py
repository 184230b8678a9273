"""Formats: a format's own scan (an optimisation) gives exactly what the generic scan gives."""

from __future__ import annotations

import pytest
from hypothesis import given

from conftest import TRACES, property_settings
from rules_compact.formats import FORMATS, Format
from rules_compact.readers import read_conversations
from strategies import openai_conversations


def _plain(value):
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _same_scans(fmt, messages) -> None:
    fast, generic = fmt.scan(messages), Format.scan(fmt, messages)
    for column in generic.COLUMNS:
        assert _plain(getattr(fast, column)) == _plain(getattr(generic, column)), column
    assert [fast.span_start(i) for i in range(len(fast))] == [generic.span_start(i) for i in range(len(generic))]
    lazy = fmt.scan(messages)  # read in another order: one column before the others it shares work with
    assert _plain(lazy.span_starts) == _plain(generic.span_starts) and _plain(lazy.call_at) == _plain(generic.call_at)


def _openai_traces():
    for path in sorted(TRACES.rglob("*.json*")):
        try:
            conversations = read_conversations(path.read_bytes(), path.name)
        except Exception:  # not a conversation file (SOURCES, rule files)
            continue
        for conv in conversations[:20]:
            if conv.format == "openai":
                yield pytest.param(conv.messages, id=conv.name)


@pytest.mark.parametrize("messages", list(_openai_traces()))
def test_the_openai_scan_equals_the_generic_one_on_real_traces(messages):
    _same_scans(FORMATS["openai"], messages)


@property_settings()
@given(messages=openai_conversations())
def test_the_openai_scan_equals_the_generic_one(messages):
    _same_scans(FORMATS["openai"], messages)
