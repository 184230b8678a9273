"""Helpers for plugin authors' tests.

::

    import my_plugin
    from rules_compact.testing import check_plugin, check_tool_specs, run_golden_case

    def test_tool_specs():
        specs = check_tool_specs(my_plugin)          # types, templates, globs, pure summarizers
        assert {s.pattern for s in specs} >= {"bash"}

    def test_plugin():
        check_plugin(my_plugin)                      # every hook, as the registry would load it

    def test_golden():
        run_golden_case("tests/golden/my_plugin.yaml", plugins=[my_plugin])

Each helper raises AssertionError with a message saying what is wrong.  They run with
exactly the given plugins registered (and the built-in one), whatever is installed.
"""

from __future__ import annotations

import copy
import json
import os
import re
from itertools import compress, count
from operator import is_, is_not
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import yaml

from .engine import Result, compact
from .errors import RulesCompactError
from .formats import FORMATS, THINKING_BLOCKS, Format, detect_format
from .formats.openai import REASONING_FIELDS as OPENAI_REASONING_FIELDS
from .formats.responses import TEXT_PARTS
from .formats.responses import check_item_invariants as check_responses_item
from .language.loader import parse_rules
from .store import MemoryStore
from .limits import max_input_bytes, read_at_most
from .language.model import ToolSpec
from .plugins.manager import HOOKS, Registry, tool_spec, use_plugins

__all__ = ["check_tool_specs", "check_plugin", "run_golden_case", "check_invariants", "check_api_validity",
           "ValidityCheck", "sample_calls", "SAMPLE_CONTENTS"]

SAMPLE_CONTENTS = (
    "<returncode>0</returncode>\n<output>\nfile_a\nfile_b\n</output>",  # mini-swe-agent, success
    "<returncode>1</returncode>\n<output>\n</output>",  # mini-swe-agent, failure, no output
    "     1\u2192import os\n     2\u2192print(os.name)\n",  # Claude Code's Read
    "line one\nline two\nline three\n",
    "",
)
SAMPLE_ARGS = {"command": "ls -la", "path": "src/app.py", "file_path": "src/app.py"}


def _fail(message: str) -> None:
    raise AssertionError(message)


def _sample_name(pattern: str) -> str:
    """A tool name a glob matches (``mcp__*`` -> ``mcp__x``)."""
    name = re.sub(r"\[!?([^\]])[^\]]*\]", r"\1", pattern)
    return name.replace("*", "x").replace("?", "x")


def sample_calls(name: str) -> list[dict | None]:
    """Calls of tool ``name`` as summarizers receive them: OpenAI and Anthropic, arguments
    that do not decode, and None."""
    return [
        {"id": "call_1", "type": "function", "function": {"name": name, "arguments": json.dumps(SAMPLE_ARGS)}},
        {"type": "tool_use", "id": "toolu_1", "name": name, "input": dict(SAMPLE_ARGS)},
        {"id": "call_2", "type": "function", "function": {"name": name, "arguments": "{not json"}},
        {"id": "call_3", "type": "function", "function": {"name": name, "arguments": "{}"}},
        None,
    ]


def _check_summarizer(spec: ToolSpec, samples: Iterable[tuple[str, dict | None]]) -> None:
    label = f"summarizer of tool {spec.pattern!r}"
    for content, call in samples:
        given = copy.deepcopy(call)
        try:
            first = spec.summarize(content, given)
        except (Exception, SystemExit) as exc:
            _fail(f"{label} raised {type(exc).__name__}: {exc} on content {content!r} and call {call!r}")
        if not isinstance(first, str):
            _fail(f"{label} returned {type(first).__name__}, not str, on content {content!r} and call {call!r}")
        if given != call:
            _fail(f"{label} is not pure: it changed its call argument {call!r} into {given!r}")
        second = spec.summarize(content, copy.deepcopy(call))
        if second != first:
            _fail(f"{label} is not pure: the same content {content!r} and call {call!r} gave {first!r}, "
                  f"then {second!r}")


def check_tool_specs(plugin_or_specs: Any, samples: Iterable[tuple[str, dict | None]] | None = None
                     ) -> list[ToolSpec]:
    """Check what a plugin's ``rules_compact_tools()`` returns, or a list of specs, as the
    registry would; return them as normalized ToolSpecs.

    Checked: each spec is a ToolSpec or a dict with a string ``name`` (an exact name or a
    glob) and a bool ``compact``; a ``placeholder`` template compiles; a pattern is not
    declared twice with different metadata; ``summarize`` is callable, returns a str and is
    pure: called twice on each sample ``(content, call)`` it returns the same string and
    leaves ``call`` unchanged.  ``samples`` defaults to :data:`SAMPLE_CONTENTS` times
    :func:`sample_calls`, so a summarizer must cope with any text and any call, or None.
    """
    if isinstance(plugin_or_specs, (list, tuple)):
        raw, source = list(plugin_or_specs), "<specs>"
    else:
        source = getattr(plugin_or_specs, "__name__", None) or type(plugin_or_specs).__name__
        hook = getattr(plugin_or_specs, "rules_compact_tools", None)
        if hook is None:
            _fail(f"{source} has no rules_compact_tools hook")
        if getattr(hook, "rules_compact_impl", None) is None:
            _fail(f"{source}.rules_compact_tools is not marked with @rules_compact.hookimpl")
        raw = hook()
        if raw is None:
            return []
        if not isinstance(raw, (list, tuple)):
            _fail(f"{source}.rules_compact_tools() must return a list, got {type(raw).__name__}")
    specs: dict[str, ToolSpec] = {}
    for entry in raw:
        try:
            spec = tool_spec(entry, source)
        except RulesCompactError as exc:
            _fail(str(exc))
        other = specs.get(spec.pattern)
        if other is not None and (other.compact, other.placeholder and other.placeholder.text, other.summarize) != \
                (spec.compact, spec.placeholder and spec.placeholder.text, spec.summarize):
            _fail(f"{source}: tool {spec.pattern!r} is declared twice with different metadata")
        specs.setdefault(spec.pattern, spec)
    for spec in specs.values():
        if spec.summarize is not None:
            pairs = list(samples) if samples is not None else [
                (content, call) for call in sample_calls(_sample_name(spec.pattern)) for content in SAMPLE_CONTENTS]
            _check_summarizer(spec, pairs)
    return list(specs.values())


def check_plugin(plugin: Any, require_schemas: bool = True) -> Registry:
    """Register ``plugin`` alone (with the built-ins) as the registry would, calling every
    hook and validating the results; also :func:`check_tool_specs`.  With
    ``require_schemas``, every matcher and action kind it adds must give the JSON Schema of
    its options (without one, ``validate`` cannot catch a typo in them).  Returns the
    registry."""
    name = getattr(plugin, "__name__", None) or type(plugin).__name__
    if not any(callable(getattr(plugin, hook, None)) for hook in HOOKS):
        _fail(f"{name} implements none of the hooks {', '.join(HOOKS)}")
    try:
        with use_plugins([plugin]) as reg:
            pass
    except RulesCompactError as exc:
        _fail(str(exc))
    if callable(getattr(plugin, "rules_compact_tools", None)):
        check_tool_specs(plugin)
    if require_schemas:
        for label, kinds in (("matcher", reg.matchers), ("action", reg.actions)):
            for kind_name, kind in kinds.items():
                if reg.owners.get((label, kind_name)) == name and kind.schema is None:
                    _fail(f"{name}: {label} {kind_name!r} has no schema for its options")
    return reg


# -- golden cases --------------------------------------------------------------------

def _load(case: str | os.PathLike | Mapping) -> tuple[Mapping, str]:
    if isinstance(case, Mapping):
        return case, "<case>"
    path = Path(case)
    limit = max_input_bytes()
    with open(path, "rb") as fh:
        data = read_at_most(fh, limit + 1)
    if len(data) > limit:
        _fail(f"{path}: golden case is over the limit of {limit} bytes (RULES_COMPACT_MAX_INPUT_BYTES)")
    return yaml.safe_load(data.decode("utf-8")), path.name


def _first_difference(got: list, expected: list) -> str:
    if len(got) != len(expected):
        return f"{len(got)} messages, expected {len(expected)}"
    for i, (a, b) in enumerate(zip(got, expected)):
        if a != b:
            return (f"message {i} differs:\n  got:      {json.dumps(a, ensure_ascii=False)}\n"
                    f"  expected: {json.dumps(b, ensure_ascii=False)}")
    return "messages differ"  # pragma: no cover


def _with_defaults(rules: Any, defaults: Mapping | None) -> Any:
    """A case's rule file with the golden file's ``rule_defaults`` under its own ``defaults``."""
    if not defaults or not isinstance(rules, dict):
        return rules
    return {**rules, "defaults": {**defaults, **(rules.get("defaults") or {})}}


def run_golden_case(case: str | os.PathLike | Mapping, plugins: Sequence[Any] = (), name: str | None = None
                    ) -> dict[str, Result]:
    """Run golden cases with ``plugins`` registered; return each case's Result by name.

    ``case`` is a YAML file, or its content as a dict, in the shape of rules-compact's own
    tests/golden/*.yaml: top-level ``format``, ``messages`` and ``rules`` are defaults for
    each entry of ``cases``, ``rule_defaults`` goes under every case's rule-file ``defaults``
    (its own win), and a case has ``name``, ``rules`` (one rule file as a mapping,
    or a list of them for successive passes), ``messages``, ``expected`` (the output
    messages) and optionally ``format``, ``decisions`` (the rule that decided each item in
    the last pass, null for none), ``notes`` (each item's decision note in the last pass),
    ``over_budget``, ``idempotent`` (default true) and ``store: memory`` (what ``save: true``
    saves goes to a fresh :class:`~rules_compact.store.MemoryStore`, so placeholders name ids,
    not paths; also top-level).  A mapping without ``cases`` is one case.  ``name`` runs only
    that case.

    For each case the engine's invariants are asserted too (:func:`check_invariants`).
    """
    doc, file = _load(case)
    cases = doc["cases"] if "cases" in doc else [doc]
    if name is not None:
        cases = [c for c in cases if c.get("name") == name]
        if not cases:
            _fail(f"{file}: no case named {name!r}")
    results = {}
    with use_plugins(plugins):
        for c in cases:
            label = f"{file}::{c.get('name', '?')}"
            rules = c.get("rules", doc.get("rules"))
            passes = [_with_defaults(r, doc.get("rule_defaults")) for r in (rules if isinstance(rules, list) else [rules])]
            store = c.get("store", doc.get("store"))
            if store not in (None, "memory"):
                _fail(f"{label}: store must be 'memory', got {store!r}")
            store = MemoryStore() if store == "memory" else None
            try:
                rulesets = [parse_rules(yaml.safe_dump(r, sort_keys=False, allow_unicode=True), label, store=store)
                            for r in passes]
            except RulesCompactError as exc:
                _fail(f"{label}: rules do not load:\n{exc}")
            messages = c.get("messages", doc.get("messages"))
            try:
                result = check_invariants(messages, rulesets, c.get("format", doc.get("format")),
                                          idempotent=c.get("idempotent", True))
            except AssertionError as exc:
                _fail(f"{label}: {exc}")
            if result.messages != c["expected"]:
                _fail(f"{label}: {_first_difference(result.messages, c['expected'])}")
            last = result.report.passes[-1].decisions if result.report.passes else ()
            if "decisions" in c:
                decided = [d.rule for d in last]
                if decided != c["decisions"]:
                    _fail(f"{label}: decisions {decided}, expected {c['decisions']}")
            if "notes" in c:
                notes = [d.note for d in last]
                if notes != c["notes"]:
                    _fail(f"{label}: notes {notes}, expected {c['notes']}")
            if "over_budget" in c and result.over_budget is not c["over_budget"]:
                _fail(f"{label}: over_budget is {result.over_budget}, expected {c['over_budget']}")
            results[c.get("name", "?")] = result
    return results


# -- the engine's invariants ---------------------------------------------------------

OPENAI_EDITABLE = {"content", "reasoning_content", "reasoning", "tool_calls"}


def _blocks(msg):
    content = msg.get("content") if isinstance(msg, dict) else None
    return content if isinstance(content, list) else []


def _calls(msg):
    calls = msg.get("tool_calls") if isinstance(msg, dict) else None
    return calls if isinstance(calls, list) else []


def _without(d, keys):
    return {k: v for k, v in d.items() if k not in keys} if isinstance(d, dict) else d


def _check_openai_message(before: dict, after: dict, i: int) -> None:
    assert _without(before, OPENAI_EDITABLE) == _without(after, OPENAI_EDITABLE), f"message {i}: fixed keys changed"
    assert len(_calls(before)) == len(_calls(after)), f"message {i}: tool calls added or removed"
    for cb, ca in zip(_calls(before), _calls(after)):
        if isinstance(cb, dict):
            assert _without(cb, {"function"}) == _without(ca, {"function"}), f"message {i}: a tool call changed"
            fb, fa = cb.get("function"), ca.get("function")
            assert _without(fb, {"arguments"}) == _without(fa, {"arguments"}), f"message {i}: a call's name changed"
        else:
            assert cb == ca, f"message {i}: a tool call changed"
    if before.get("role") != "assistant":
        for key in ("reasoning_content", "reasoning", "tool_calls"):
            assert before.get(key) == after.get(key), f"message {i}: {key} changed on a non-assistant message"


def _check_anthropic_message(before: dict, after: dict, latest: bool, i: int) -> None:
    assert _without(before, {"content"}) == _without(after, {"content"}), f"message {i}: fixed keys changed"
    b_blocks, a_blocks = _blocks(before), _blocks(after)

    def structural(blocks, kind):
        return [b for b in blocks if isinstance(b, dict) and b.get("type") == kind]

    for kind, editable in (("tool_use", {"input", "cache_control"}), ("tool_result", {"content", "cache_control"})):
        bs, as_ = structural(b_blocks, kind), structural(a_blocks, kind)
        assert len(bs) == len(as_), f"message {i}: {kind} blocks added or removed"
        for b, a in zip(bs, as_):
            assert _without(b, editable) == _without(a, editable), f"message {i}: a {kind} block's ids changed"
            if "cache_control" in b:  # a breakpoint may be added, never lost
                assert a.get("cache_control") == b["cache_control"], f"message {i}: a cache_control was lost"
    for kind in ("thinking", "redacted_thinking"):
        kept = structural(a_blocks, kind)
        assert all(k in structural(b_blocks, kind) for k in kept), f"message {i}: a {kind} block was edited"
        if latest:
            assert structural(b_blocks, kind) == kept, f"message {i}: the latest assistant turn's thinking changed"
    if latest:
        def order(blocks):
            return [b.get("type") for b in blocks
                    if isinstance(b, dict) and b.get("type") in ("thinking", "redacted_thinking")]
        assert order(b_blocks) == order(a_blocks), f"message {i}: thinking order changed"
        if b_blocks and isinstance(b_blocks[0], dict) and b_blocks[0].get("type") in ("thinking", "redacted_thinking"):
            assert a_blocks[0] == b_blocks[0], f"message {i}: the leading thinking block changed"
    assert not (isinstance(before.get("content"), list) and before["content"] and after.get("content") == []), \
        f"message {i}: content emptied"


def check_invariants(messages: list, rules: Any, fmt: str | None = None, idempotent: bool = True,
                     breakpoints_outside: int = 0) -> Result:
    """Run ``compact`` and assert every guarantee of the engine: the input is not mutated;
    roles, ids, tool calls and the item structure stay; the latest assistant turn keeps its
    thinking; only rules that name ``is_error: true`` change error results; the output is as
    valid for the model API as the input (:func:`check_api_validity`, with
    ``breakpoints_outside``); the result is deterministic and (when every pass is idempotent
    and ``idempotent``) compacting it again changes nothing.  Returns the Result."""
    snapshot = copy.deepcopy(messages)
    result = compact(messages, rules, format=fmt, breakpoints_outside=breakpoints_outside)
    assert messages == snapshot, "input mutated"
    out = result.messages
    assert out is not messages, "the result is the input list"
    assert len(out) == len(messages), "messages added or removed"
    name = fmt or detect_format(messages)
    form = FORMATS[name]
    last_assistant = form.scan(messages).last_assistant
    for i, (before, after) in enumerate(zip(messages, out)):
        if not isinstance(before, dict):
            assert before == after, f"message {i} changed"
            continue
        assert before.get("role") == after.get("role"), f"role changed at {i}"
        if name == "openai":
            _check_openai_message(before, after, i)
        elif name == "responses":
            check_responses_item(before, after, i)
        else:
            _check_anthropic_message(before, after, i == last_assistant, i)
    before_items = form.items(messages)
    after_items = form.items(out)

    def shape(items):
        return [(it.kind, it.msg_index, it.block_index, it.tool_call_id, it.call_ids) for it in items]

    assert shape(before_items) == shape(after_items), "item structure changed"
    for p in result.report.passes:
        if p.ran:
            assert len(p.decisions) == len(before_items), "a decision per item"
            for d in p.decisions:
                assert not (d.error and d.changed and d.rule is None), "an error result changed without a rule"
    check_api_validity(messages, out, form, breakpoints_outside)
    again = compact(messages, rules, format=fmt, breakpoints_outside=breakpoints_outside)
    assert again.messages == out, "not deterministic"
    if idempotent and all(p.idempotent for p in result.report.passes):
        assert compact(out, rules, format=fmt, breakpoints_outside=breakpoints_outside).messages == out, \
            "not idempotent: compacting the output changed it"
    return result


# -- what a model API accepts ----------------------------------------------------------

def check_api_validity(before: list, after: list, fmt: str | Format | None = None,
                       breakpoints_outside: int = 0) -> None:
    """Assert that ``after`` (the compacted ``before``) is a request the model API accepts
    wherever ``before`` is one:

    * cache breakpoints: the request holds at most the format's limit (Anthropic: 4; OpenAI's
      prompt_cache_breakpoint: 3), counting
      ``breakpoints_outside`` (those in the system prompt and tools), unless ``before`` already
      held more; a message that had a breakpoint still has one;
    * no empty text block, and no message left without content, that ``before`` did not have;
    * Anthropic: every user message whose tool_result blocks came first, right after the
      assistant message holding their tool_use blocks, still has them so;
    * the latest assistant turn's thinking (thinking and redacted_thinking blocks, reasoning
      fields and blocks, Responses reasoning items) is unmodified and in its place.
    """
    form = fmt if isinstance(fmt, Format) else FORMATS[fmt or detect_format(before)]
    assert len(before) == len(after), "messages added or removed"
    limit = _breakpoint_limit(form)
    if limit:
        held = [breakpoints_outside + sum(map(form.breakpoints, msgs)) for msgs in (before, after)]
        assert held[1] <= max(limit, held[0]), \
            f"{held[1]} cache breakpoints in the request (at most {limit}; {held[0]} before)"
    latest = form.scan(before).last_assistant
    for i, (b, a) in enumerate(zip(before, after)):
        if a is not b and isinstance(b, dict):
            _check_pair(form, before, after, i)
    if latest is not None and form.name != "responses":  # Responses: reasoning items are never altered
        _check_thinking(form, before, after, latest)
    for i, (b, a) in enumerate(zip(before, after)):
        _check_reasoning(b, a, i)


def _breakpoint_limit(form: Format) -> int:
    """The cache breakpoints a request may hold (Anthropic's cache_control, OpenAI's
    prompt_cache_breakpoint), 0 for a format without them."""
    return max(form.max_breakpoints, form.openai_max_breakpoints)


def _check_pair(form: Format, before: list, after: list, i: int) -> None:
    """What ``check_api_validity`` asserts of a changed message ``i`` (it reads messages ``i - 1``
    and ``i`` of each list)."""
    b, a = before[i], after[i]
    if _breakpoint_limit(form) and form.breakpoints(b):
        assert form.breakpoints(a), f"message {i}: its cache breakpoint was lost"
    blank = _blank_texts(form.name, b)
    assert all(t in blank for t in _blank_texts(form.name, a)), f"message {i}: an empty text block was written"
    if b.get("role") == "assistant" or form.name == "anthropic":
        assert not (_emptied(form, a) and not _emptied(form, b)), f"message {i}: left without content"
    if form.name == "anthropic" and b.get("role") == "user" and _results_placed(before, i):
        assert _results_placed(after, i), f"message {i}: its tool_result blocks are no longer first"


def _check_thinking(form: Format, before: list, after: list, latest: int) -> None:
    kept, was = _thinking(form.name, after[latest]), _thinking(form.name, before[latest])
    assert kept[:-1] == was[:-1] and kept[-1] >= was[-1], \
        f"message {latest}: the latest assistant turn's thinking changed"


def _check_reasoning(b: Any, a: Any, i: int) -> None:
    if isinstance(b, dict) and b.get("type") == "reasoning":
        assert a == b, f"item {i}: a reasoning item changed"


class ValidityCheck:
    """``check_api_validity`` for the successive requests of one conversation, with its very
    verdicts and messages, looking again only at what changed since the previous call: a
    changed message whose pair (and the pair before it) passed then passes without being read,
    and only the messages not in the previous ``before`` have their breakpoints counted.  The
    messages must not be edited in place between calls (a proxy parses each request anew; a
    Compactor's outputs are read-only)."""

    def __init__(self) -> None:
        self._form: Format | None = None
        self._before: list = []  # the previous call's before
        self._counts: list[int] = []  # its messages' breakpoints
        self._passed: dict[tuple, tuple] = {}  # the previous call's changed pairs, all of which passed

    def __call__(self, before: list, after: list, fmt: str | Format | None = None,
                 breakpoints_outside: int = 0) -> None:
        form = fmt if isinstance(fmt, Format) else FORMATS[fmt or detect_format(before)]
        if form is not self._form:
            self._form, self._before, self._counts, self._passed = form, [], [], {}
        assert len(before) == len(after), "messages added or removed"
        limit = _breakpoint_limit(form)
        passed, seen, fresh, deltas = self._passed, {}, [], []
        for i in compress(count(), map(is_not, before, after)):
            pair = (before[i], after[i], before[i - 1] if i else None, after[i - 1] if i else None)
            key = tuple(map(id, pair))
            found = passed.get(key)
            if found is None or not all(map(is_, found[0], pair)):
                found = (pair, form.breakpoints(pair[1]) - form.breakpoints(pair[0]) if limit else 0)
                fresh.append(i)
            seen[key] = found
            deltas.append(found[1])
        if limit:
            held = breakpoints_outside + sum(self._counted(before, form))
            now = held + sum(deltas)
            assert now <= max(limit, held), f"{now} cache breakpoints in the request (at most {limit}; {held} before)"
        for i in fresh:
            if isinstance(before[i], dict):
                _check_pair(form, before, after, i)
        if form.name != "responses":  # Responses: reasoning items are never altered
            latest = next((i for i in range(len(before) - 1, -1, -1)
                           if isinstance(before[i], dict) and before[i].get("role") == "assistant"), None)
            if latest is not None and after[latest] is not before[latest]:
                _check_thinking(form, before, after, latest)
        for i in fresh:
            _check_reasoning(before[i], after[i], i)
        self._passed = seen

    def _counted(self, before: list, form: Format) -> list[int]:
        """The breakpoints of each message of ``before``, counting only those not in the previous call's."""
        previous = self._before
        same = next(compress(count(), map(is_not, previous, before)), min(len(previous), len(before)))
        counts = self._counts[:same] + [form.breakpoints(m) for m in before[same:]]
        self._before, self._counts = before, counts
        return counts


def _emptied(form: Format, msg: dict) -> bool:
    return form.is_empty(msg) if msg.get("role") == "assistant" else not msg.get("content")


def _blank_texts(fmt: str, msg: dict) -> list:
    """The text blocks and parts of a message, and of its results' content, that hold no text."""
    kinds = TEXT_PARTS if fmt == "responses" else {"text"}
    lists = [msg.get("content"), msg.get("output")]
    lists += [b.get("content") for b in _blocks(msg) if isinstance(b, dict) and b.get("type") == "tool_result"]
    return [p for blocks in lists if isinstance(blocks, list) for p in blocks
            if isinstance(p, dict) and p.get("type") in kinds and not str(p.get("text") or "").strip()]


def _results_placed(messages: list, i: int) -> bool:
    """Whether message ``i``'s tool_result blocks come first, each answering a tool_use block of
    the message right before it."""
    blocks = _blocks(messages[i])
    kinds = [b.get("type") if isinstance(b, dict) else None for b in blocks]
    ids = [b.get("tool_use_id") for b in blocks if isinstance(b, dict) and b.get("type") == "tool_result"]
    if not ids:
        return True
    calls = {b.get("id") for b in _blocks(messages[i - 1]) if isinstance(b, dict) and b.get("type") == "tool_use"} \
        if i and isinstance(messages[i - 1], dict) and messages[i - 1].get("role") == "assistant" else set()
    return kinds[:len(ids)] == ["tool_result"] * len(ids) and set(ids) <= calls


def _thinking(fmt: str, msg: Any) -> list:
    """A message's thinking, in order (blocks, then reasoning fields), and whether a thinking
    block leads its content (the API requires the latest turn's to stay first)."""
    blocks = _blocks(msg)
    thinking = [b for b in blocks if isinstance(b, dict) and b.get("type") in THINKING_BLOCKS]
    fields = [msg.get(f) for f in OPENAI_REASONING_FIELDS] if fmt == "openai" and isinstance(msg, dict) else []
    return thinking + fields + [bool(blocks) and blocks[0] in thinking]
