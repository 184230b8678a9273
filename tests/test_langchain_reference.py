"""The langchain-clear-tool-uses preset against the real thing.

The reference is the installed ``langchain`` package (test extra, ``langchain>=1.0``):
``ClearToolUsesEdit()`` with its defaults, applied as ``ContextEditingMiddleware()`` applies it,
with the middleware's default counter ``count_tokens_approximately``, on our OpenAI-format messages
converted to ``langchain_core`` messages and back (tests/reference/langchain_context_editing.py).
``compact(msgs, load_rules("preset:langchain-clear-tool-uses")).messages`` must equal it on the real
traces (scaled to trigger) and on generated conversations, and the preset's ``langchain_approx``
estimator must equal the real ``count_tokens_approximately`` on the same messages.
"""

from __future__ import annotations

import json

import pytest

pytest.importorskip("langchain.agents.middleware.context_editing", reason="langchain is in the test extra")

from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402
from langchain.agents.middleware.context_editing import (  # noqa: E402
    ClearToolUsesEdit,
    ContextEditingMiddleware,
)
from langchain.agents.middleware.types import ModelRequest  # noqa: E402
from langchain_core.messages.utils import count_tokens_approximately  # noqa: E402

import preset_inputs as pi  # noqa: E402
from rules_compact.testing import check_invariants  # noqa: E402
from reference import langchain_context_editing as lce  # noqa: E402
from rules_compact import compact, load_rules  # noqa: E402

PRESET = load_rules("preset:langchain-clear-tool-uses")
EXAMPLES = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def engine_tokens(msgs: list) -> int:
    return compact(msgs, PRESET, format="openai").report.passes[0].tokens_before


def same_as_langchain(msgs: list) -> list:
    out = check_invariants(msgs, PRESET, "openai").messages
    assert out == lce.clear_tool_uses(msgs)
    return out


# ---------------------------------------------------------------------------
# the reference is the real class, with the defaults the preset states
# ---------------------------------------------------------------------------

def test_preset_parameters_are_the_real_defaults():
    edit = ClearToolUsesEdit()
    assert (edit.trigger, edit.keep, edit.clear_at_least, edit.clear_tool_inputs, tuple(edit.exclude_tools)) \
        == (100_000, 3, 0, False, ())
    assert PRESET.trigger.tokens_over == edit.trigger
    assert PRESET.placeholder.render({}) == edit.placeholder == "[cleared]"
    assert PRESET.estimator.name == "langchain_approx"
    middleware = ContextEditingMiddleware()
    assert middleware.edits == [edit] and middleware.token_count_method == "approximate"


def test_middleware_applies_the_edit_as_the_reference_does():
    """ContextEditingMiddleware().wrap_model_call hands the model the same messages as
    lce.clear_tool_uses (which calls ClearToolUsesEdit().apply directly)."""
    msgs = OPENAI_TRACES["django-13964x3"]()
    seen = []
    ContextEditingMiddleware().wrap_model_call(
        ModelRequest(model=None, messages=[lce.to_langchain(m) for m in msgs]),
        lambda request: seen.append(request.messages))
    expected = lce.clear_tool_uses(msgs)
    assert expected != msgs
    assert [m.content for m in seen[0]] == [lce.to_langchain(m).content for m in expected]


def test_conversion_round_trip_is_lossless():
    msgs = OPENAI_TRACES["django-13964x2+turns"]()
    converted = [lce.to_langchain(m) for m in msgs]
    assert lce.from_langchain(list(converted), converted, msgs) == msgs


# ---------------------------------------------------------------------------
# real traces, scaled to trigger
# ---------------------------------------------------------------------------

def _openai_traces():
    for short, path in pi.MINI_SWE_TRACES.items():
        yield short, lambda p=path: pi.load_openai_trace(p)
        yield f"{short}x2+turns", lambda p=path: pi.scaled_openai_trace(pi.load_openai_trace(p), 2, user_every=10)
        # over 100,000 tokens for every trace
        yield f"{short}x3", lambda p=path: pi.scaled_openai_trace(pi.load_openai_trace(p), 3)
        yield f"{short}x4+turns", lambda p=path: pi.scaled_openai_trace(pi.load_openai_trace(p), 4, user_every=7)


OPENAI_TRACES = dict(_openai_traces())


@pytest.mark.parametrize("trace", sorted(OPENAI_TRACES))
def test_preset_equals_langchain_on_trace(trace):
    msgs = OPENAI_TRACES[trace]()
    assert engine_tokens(msgs) == lce.count_tokens(msgs)
    same_as_langchain(msgs)


def test_traces_trigger_langchain():
    triggered = [t for t, load in OPENAI_TRACES.items() if lce.clear_tool_uses(msgs := load()) != msgs]
    assert "django-13964x3" in triggered and len(triggered) >= len(pi.MINI_SWE), triggered


@pytest.mark.parametrize("trace", ["django-13964x3", "marshmallow-1343x4+turns", "sqlfluff-1763x2+turns"])
def test_estimator_equals_count_tokens_approximately_per_message(trace):
    for m in OPENAI_TRACES[trace]():
        assert engine_tokens([m]) == count_tokens_approximately([lce.to_langchain(m)]), m


def _pairs(n, content, first=None):
    msgs = [{"role": "user", "content": "go"}]
    for i in range(n):
        msgs += [{"role": "assistant", "content": None, "tool_calls": [{"id": f"c{i}", "type": "function",
                  "function": {"name": "bash", "arguments": json.dumps({"cmd": f"step {i}"})}}]},
                 {"role": "tool", "tool_call_id": f"c{i}", "content": first if i == 0 and first else content}]
    return msgs


def test_token_counter_counts_roles_ids_and_tool_calls(tmp_path):
    """count_tokens_approximately counts more than the visible text: chars4 would not trigger here."""
    msgs = _pairs(40, "y" * 9_900)
    chars4 = tmp_path / "chars4.yaml"
    chars4.write_text("version: 1\nname: lc-chars4\nextends: preset:langchain-clear-tool-uses\n"
                      "defaults: {estimator: chars4}\n")
    assert compact(msgs, chars4).report.passes[0].tokens_before <= 100_000
    assert 100_000 < lce.count_tokens(msgs) == engine_tokens(msgs)
    assert same_as_langchain(msgs) != msgs


# ---------------------------------------------------------------------------
# generated conversations
# ---------------------------------------------------------------------------

@st.composite
def named(draw, conversation):
    """Some messages carry a ``name`` (OpenAI allows one on any message; both counters count it)."""
    msgs = draw(conversation)
    return [{**m, "name": draw(st.sampled_from(["bob", "tool_runner", "😀x"]))}
            if m.get("role") in ("user", "assistant", "tool", "system") and draw(st.integers(0, 5)) == 0 else m
            for m in msgs]


@EXAMPLES
@given(named(pi.openai_conversation(astral=True, big_sizes=(50_000, 150_000, 300_000), max_steps=30)))
def test_preset_equals_langchain_generated(msgs):
    assert engine_tokens(msgs) == lce.count_tokens(msgs)
    same_as_langchain(msgs)


@EXAMPLES
@given(named(pi.openai_conversation(astral=True, max_steps=12)))
def test_estimator_equals_count_tokens_approximately_generated(msgs):
    assert engine_tokens(msgs) == count_tokens_approximately([lce.to_langchain(m) for m in msgs])


def test_results_away_from_their_call_generated_shape():
    """A result after another AI message than its call's, and after an AI message without calls."""
    msgs = _pairs(6, "y" * 100_000)
    msgs.insert(4, msgs.pop(2))  # c0's result after c1's AI message
    msgs.insert(6, {"role": "assistant", "content": "thinking aloud"})  # c2's result after a call-less AI message
    msgs.append({"role": "user", "content": "next"})
    out = same_as_langchain(msgs)
    assert out[4] == msgs[4] and out[7] == msgs[7] and out != msgs


# ---------------------------------------------------------------------------
# documented deviations (xfail, strict)
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("content", [
    [{"type": "text", "text": "a" * 400}, {"type": "text", "text": "b" * 400}],
    [{"type": "image_url", "image_url": {"url": "data:image/png;base64," + "A" * 4000}}],
])
def test_estimator_on_list_content(content):
    msgs = [{"role": "user", "content": content}]
    assert engine_tokens(msgs) == lce.count_tokens(msgs)


# ---------------------------------------------------------------------------
# load_rules("preset:...", keep=..., exclude_tools=...), as ClearToolUsesEdit(keep=..., exclude_tools=...)
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("keep,exclude", [(5, ()), (1, ("bash",)), (0, ())])
def test_preset_with_parameters_equals_the_edit_with_them(keep, exclude):
    msgs = OPENAI_TRACES["django-13964x3"]()
    rules = load_rules("preset:langchain-clear-tool-uses", keep=keep, **({"exclude_tools": list(exclude)} if exclude else {}))
    out = check_invariants(msgs, rules, "openai").messages
    assert out == lce.clear_tool_uses(msgs, ClearToolUsesEdit(keep=keep, exclude_tools=exclude))
    assert out != same_as_langchain(msgs)  # the parameters changed something


def test_preset_parameters_are_validated_like_a_file():
    from rules_compact import ConfigError

    for bad, message in ((dict(keep=-1), "keep must be a whole number, 0 or more, got -1"),
                         (dict(exclude_tools="bash"), "exclude_tools must be a non-empty list of tool names or "
                                                      "globs, got 'bash'")):
        with pytest.raises(ConfigError) as err:
            load_rules("preset:langchain-clear-tool-uses", **bad)
        assert str(err.value).startswith(f"preset:langchain-clear-tool-uses ({', '.join(f'{k}={v!r}' for k, v in bad.items())})")
        assert str(err.value).endswith(message)
    with pytest.raises(ConfigError, match="'default' has several"):
        load_rules("default", keep=3)
