"""What every integration tells the host, whatever the framework: the per-conversation summary,
the two forms of ``on_compact``, the note to the model, and the span (none without OpenTelemetry).
Each framework's own loop is exercised in its tests/test_integrations_*.py."""

from __future__ import annotations

import functools
import re
import sys

import pytest

from rules_compact import load_rules
from rules_compact.integrations import MODEL_NOTE, Session
from rules_compact.integrations._common import Hook
from rules_compact.integrations.sdk import RequestCompactor
from rules_compact.integrations.tracing import SPAN_NAME, tokens_text

RULES = load_rules("""
version: 1
name: keep-two
defaults: {placeholder: "[Previous: used {tool_name}]"}
rules:
  - {name: keep-newest, match: {age: {unit: tool_results, lt: 2}}, action: keep}
  - {name: clear-old, match: {role: tool}, action: placeholder}
""")

STEPPED = load_rules("""
version: 1
name: stepped
step: {unit: tool_results, every: 4}
defaults: {placeholder: "[Previous: used {tool_name}]"}
rules:
  - {name: keep-newest, match: {age: {unit: tool_results, lt: 2}}, action: keep}
  - {name: clear-old, match: {role: tool}, action: placeholder}
""")


def conversation(rounds: int) -> list[dict]:
    msgs: list[dict] = [{"role": "user", "content": "read every file"}]
    for i in range(rounds):
        msgs.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": f"call_{i}", "type": "function", "function": {"name": "read", "arguments": "{}"}}]})
        msgs.append({"role": "tool", "tool_call_id": f"call_{i}", "content": f"file {i}\n" + "x" * 4000})
    return msgs


def loop(compactor, rounds: int, **where) -> None:
    """An agent loop: the history grows by one tool round per request."""
    history = conversation(rounds)
    for end in range(3, len(history) + 1, 2):
        compactor({"model": "gpt-x", "messages": history[:end]}, **where)


def test_the_summary_says_what_this_conversation_cleared():
    compactor = RequestCompactor(RULES, on_compact=lambda r: None)
    loop(compactor, 10, thread_id="a")
    loop(compactor, 3, thread_id="b")
    a, b = compactor.session("a"), compactor.session("b")
    assert (a.compactions, a.items_cleared, b.compactions, b.items_cleared) == (10, 8, 3, 1)
    assert re.fullmatch(r"cleared 8 items \(\d+(\.\d)?k tokens\) this session; 0 boundary moves", str(a))
    assert str(b).startswith("cleared 1 item (")
    assert str(compactor.session("c")) == "nothing cleared this session; 0 boundary moves"


def test_boundary_moves_are_counted_when_a_stepped_rule_set_reaches_its_next_step():
    moved = []
    compactor = RequestCompactor(STEPPED, on_compact=lambda report, where: moved.append(where.boundary_moved))
    loop(compactor, 10)
    # a boundary every 4 tool results: after the 4th and the 8th
    assert [i + 1 for i, m in enumerate(moved) if m] == [4, 8]
    assert str(compactor.session()).endswith("; 2 boundary moves")


def test_written_back_histories_add_up():
    session = Session(written_back=True)
    hook = Hook(RULES, lambda r: None)
    history = conversation(4)
    for _ in range(2):  # the second time round, nothing more is cleared
        result, _ = hook.run(history, "openai")
        session.add(result.report)
        history = result.messages
    assert (session.compactions, session.items_cleared) == (2, 2)


@pytest.mark.parametrize("tokens, text", [(0, "0"), (999, "999"), (4200, "4.2k"), (140_321, "140k"),
                                          (1_340_000, "1.3M")])
def test_tokens_text(tokens, text):
    assert tokens_text(tokens) == text


def test_on_compact_with_one_argument_or_two():
    one, two, partial, method = [], [], [], []

    class Host:
        def on_compact(self, report, where):
            method.append(where.name)

    RequestCompactor(RULES, on_compact=one.append)({"messages": conversation(3)})
    RequestCompactor(RULES, on_compact=lambda report, where: two.append(where))({"messages": conversation(3)})
    RequestCompactor(RULES, on_compact=functools.partial(lambda tag, report: partial.append(tag), "x"))(
        {"messages": conversation(3)})
    RequestCompactor(RULES, name="host", on_compact=Host().on_compact)({"messages": conversation(3)})
    assert one[0].items_changed == 1 and two[0].session.items_cleared == 1
    assert partial == ["x"] and method == ["host"]


FAILURE_WORDS = re.compile(r"\b(error|errors|fail\w*|broken|unavailable|denied|invalid|missing|lost|"
                           r"corrupt\w*|timed? ?out|crash\w*|not (found|work\w*))\b", re.I)


def test_the_note_never_reads_like_a_tool_failure():
    """The note says that results were cleared on purpose, that the tools work, and how to get a
    result again; nothing in it reads like a failure (ldayton/Parable#271: an agent took
    placeholders for a broken shell)."""
    assert not FAILURE_WORDS.search(MODEL_NOTE), FAILURE_WORDS.search(MODEL_NOTE)
    assert "placeholder" in MODEL_NOTE and "cleared" in MODEL_NOTE
    assert "tools still work" in MODEL_NOTE and "call a tool again" in MODEL_NOTE
    assert len(MODEL_NOTE) < 250 and MODEL_NOTE.count(".") == 2  # short: two sentences
    assert FAILURE_WORDS.search("the tool failed") and FAILURE_WORDS.search("shell not working")


def test_a_note_of_ones_own_and_none_by_default():
    request = {"messages": [{"role": "system", "content": "Be brief."}, *conversation(3)[1:]]}
    own = RequestCompactor(RULES, note="Older results were cleared; read the file again if needed.")(request)
    assert own["messages"][0]["content"] == "Be brief.\n\nOlder results were cleared; read the file again if needed."
    assert RequestCompactor(RULES)(request)["messages"][0] == request["messages"][0]


def test_no_span_and_no_error_without_opentelemetry(monkeypatch):
    for name in [m for m in sys.modules if m == "opentelemetry" or m.startswith("opentelemetry.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "opentelemetry", None)  # import opentelemetry -> ImportError
    reports = []
    RequestCompactor(RULES, on_compact=reports.append)({"messages": conversation(3)})
    assert reports[0].items_changed == 1


def test_a_span_per_compaction_with_the_global_tracer(otel_spans):
    loop(RequestCompactor(STEPPED, on_compact=lambda r: None), 5, thread_id="t")
    spans = [s for s in otel_spans.get_finished_spans() if s.name == SPAN_NAME]
    assert [s.attributes["rules_compact.boundary_moved"] for s in spans] == [False, False, False, True, False]
    assert all(s.attributes["gen_ai.conversation.id"] == "t" for s in spans)
    assert spans[-1].attributes["rules_compact.session"] == "cleared 2 items (2.0k tokens) this session; 1 boundary move"


@pytest.mark.parametrize("rules", [RULES, STEPPED, "default"], ids=["plain", "stepped", "default"])
def test_changed_by_rule_agrees_with_the_decisions(rules):
    """The span's per-rule counts (read from what was decided) are the report's decisions'."""
    from rules_compact import Compactor

    compactor, history = Compactor(rules), conversation(12)
    for end in range(3, len(history) + 1, 2):
        for p in compactor(history[:end], format="openai").report.passes:
            counted: dict[str, int] = {}
            for d in p.decisions:
                if d.changed and d.rule:
                    counted[d.rule] = counted.get(d.rule, 0) + 1
            assert p.changed_by_rule() == counted


def test_the_documented_note_is_the_note():
    from pathlib import Path

    doc = (Path(__file__).parent.parent / "docs" / "integrations.md").read_text(encoding="utf-8")
    quoted = re.search(r"\n((?:> .*\n)+)", doc).group(1)
    assert " ".join(line[2:].strip() for line in quoted.splitlines()) == MODEL_NOTE


def test_only_the_latest_conversation_is_held():
    """A server's many threads: each session keeps its numbers, only the latest one its report
    (and with it that conversation's messages)."""
    compactor = RequestCompactor(RULES, on_compact=lambda r: None)
    loop(compactor, 6, thread_id="a")
    kept = str(compactor.session("a"))
    loop(compactor, 3, thread_id="b")
    assert compactor.session("a")._latest is None and compactor.session("b")._latest is not None
    assert str(compactor.session("a")) == kept and kept.startswith("cleared 4 items (")
