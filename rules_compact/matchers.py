"""Matcher kinds: each compiles its options once into a small pure predicate.

A matcher spec is a mapping; every key names a matcher kind and all of them must
hold.  ``all``, ``any`` and ``not`` combine specs.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING, Any, Callable

import jmespath.exceptions

from .estimators import utf8_len, utf16_len
from .formats import Item

if TYPE_CHECKING:
    from .compiler import CompileContext
    from .view import Predicate, View

__all__ = ["MatcherKind", "BUILTIN_MATCHERS", "compare"]


@dataclass(frozen=True)
class MatcherKind:
    """A named matcher: ``compile(options, ctx, path) -> predicate``; ``schema`` for plugins."""

    name: str
    compile: Callable[[Any, "CompileContext", str], "Predicate"]
    description: str
    schema: dict | None = None


COMPARATORS = {"gt": operator.gt, "gte": operator.ge, "lt": operator.lt, "lte": operator.le}


def compare(options: dict) -> Callable[[int], bool]:
    """One function for every ``gt``/``gte``/``lt``/``lte`` bound in ``options``."""
    bounds = [(COMPARATORS[k], v) for k, v in options.items() if k in COMPARATORS]
    return lambda value: all(op(value, bound) for op, bound in bounds)


def _all(specs, ctx, path):
    preds = [ctx.matcher(s, f"{path}[{i}]") for i, s in enumerate(specs)]
    return lambda item, view: all(p(item, view) for p in preds)


def _any(specs, ctx, path):
    preds = [ctx.matcher(s, f"{path}[{i}]") for i, s in enumerate(specs)]
    return lambda item, view: any(p(item, view) for p in preds)


def _not(spec, ctx, path):
    pred = ctx.matcher(spec, path)
    return lambda item, view: not pred(item, view)


def _role(value, ctx, path):
    roles = frozenset([value] if isinstance(value, str) else value)
    return lambda item, view: item.role in roles


def _tool(value, ctx, path):
    patterns = tuple([value] if isinstance(value, str) else value)
    seen: dict[str, bool] = {}  # tool names are few: match each once

    def hit(name: str | None) -> bool:
        if name is None:
            return False
        found = seen.get(name)
        if found is None:
            found = any(fnmatchcase(name, p) for p in patterns)
            if len(seen) < 4096:
                seen[name] = found
        return found

    def tool(item: Item, view: View) -> bool:
        if item.kind == "assistant":
            return any(hit(n) for n in item.call_names)
        return hit(item.tool_name)

    return tool


def _compactable(value, ctx, path):
    def compactable(item: Item, view: View) -> bool:
        names = item.call_names if item.kind == "assistant" else (item.tool_name,)
        return any(view.ruleset.tools.compactable(n) for n in names) is value

    return compactable


SIZE_UNITS = {
    "chars": lambda item, view: len(item.text),
    "bytes": lambda item, view: utf8_len(item.text),
    "utf16": lambda item, view: utf16_len(item.text),
    "tokens": lambda item, view: view.estimate(item.text) if item.text else 0,
}


def _size(options, ctx, path):
    measure = SIZE_UNITS[options.get("unit", "chars")]
    check = compare(options)
    return lambda item, view: check(measure(item, view))


def _age(options, ctx, path):
    unit = options["unit"]
    among = ctx.matcher(options["among"], f"{path}.among") if "among" in options else None  # units: the schema
    include_self = options.get("include_self", False)
    check = compare(options)
    key = (unit, among, include_self)
    ctx.ages[key] = max(saturation(options), ctx.ages.get(key, 0))
    if among is not None:
        ctx.static_specs.append(options["among"])
    return lambda item, view: check(view.age(item, *key))


def saturation(options: dict) -> int:
    """The least value from which every bound in ``options`` compares the same forever."""
    return max(((b + 1 if k in ("gt", "lte") else b) for k, b in options.items() if k in COMPARATORS), default=0)


def _in_tail(value, ctx, path):
    return lambda item, view: view.in_tail(item) is value


def _is_error(value, ctx, path):
    return lambda item, view: view.is_error(item) is value


def _has_tool_calls(value, ctx, path):
    return lambda item, view: bool(item.call_ids) is value


def _orphan(value, ctx, path):
    return lambda item, view: item.orphan is value


def _dangling(value, ctx, path):
    return lambda item, view: item.dangling is value


def _superseded(value, ctx, path):
    key = ctx.jmespath(value["key"], f"{path}.key") if isinstance(value, dict) and "key" in value else None
    wanted = value if isinstance(value, bool) else True
    ctx.superseded_keys.append(key)

    def superseded(item: Item, view: View) -> bool:
        return (item.index in view.superseded(key)) is wanted

    return superseded


def _at_step_boundary(value, ctx, path):
    def last(item: Item, view: View) -> bool:
        return (bool(view.items) and item.index == view.items[-1].index) is value

    return last


def _in_span(value, ctx, path):
    return lambda item, view: (item.span is not None) is value


def _has_thinking(value, ctx, path):
    return lambda item, view: item.has_thinking is value


def _call_in_previous_assistant(value, ctx, path):
    def adjacent(item: Item, view: View) -> bool:
        return (item.call_msg_index is not None and item.call_msg_index == item.prev_assistant) is value

    return adjacent


def _compacted(value, ctx, path):
    def compacted(item: Item, view: View) -> bool:
        patterns = view.ruleset.compacted_patterns
        if item.kind == "assistant":
            texts = view.fmt.text_blocks(view.messages[item.msg_index])
            hit = any(test(t) for t in texts for test in patterns)
        else:
            hit = any(test(item.text) for test in patterns)
        return hit is value

    return compacted


def _text(options, ctx, path):
    flags = "i" if options.get("ignore_case") else ""
    checks: list[Callable[[str], bool]] = []
    fold = str.lower if flags else (lambda s: s)
    if "contains" in options:
        needles = [fold(n) for n in _as_list(options["contains"])]
        checks.append(lambda t: any(n in fold(t) for n in needles))
    if "startswith" in options:
        prefixes = tuple(fold(n) for n in _as_list(options["startswith"]))
        checks.append(lambda t: fold(t).startswith(prefixes))
    if "endswith" in options:
        suffixes = tuple(fold(n) for n in _as_list(options["endswith"]))
        checks.append(lambda t: fold(t).endswith(suffixes))
    if "regex" in options:
        regex = ctx.regex(options["regex"], f"{path}.regex", ignore_case=bool(flags))
        if regex is not None:
            checks.append(lambda t: regex.search(t) is not None)
    if "empty" in options:
        empty = options["empty"]
        checks.append(lambda t: (not t.strip()) is empty)
    return lambda item, view: all(c(item.text) for c in checks)


def _as_list(value: Any) -> list:
    return value if isinstance(value, list) else [value]


def _where(expression, ctx, path):
    compiled = ctx.jmespath(expression, path)
    if compiled is None:
        return lambda item, view: False

    def where(item: Item, view: View) -> bool:
        try:
            return bool(compiled.search(view.jmespath_root(item)))
        except jmespath.exceptions.JMESPathError:  # e.g. a function given null: no match
            return False

    return where


BUILTIN_MATCHERS: dict[str, MatcherKind] = {
    k.name: k
    for k in [
        MatcherKind("all", _all, "Every listed matcher holds."),
        MatcherKind("any", _any, "At least one listed matcher holds."),
        MatcherKind("not", _not, "The matcher does not hold."),
        MatcherKind("role", _role, "The item's role: tool (a tool result) or assistant (an assistant turn)."),
        MatcherKind("tool", _tool, "Tool name: exact, glob or a list; an assistant turn matches if any call does."),
        MatcherKind("compactable", _compactable, "The tool's declared compact metadata."),
        MatcherKind("size", _size, "Size of the item's text in chars, bytes or estimated tokens."),
        MatcherKind("age", _age, "How many units are newer than the item."),
        MatcherKind("in_tail", _in_tail, "The item is at or after the last user turn."),
        MatcherKind("is_error", _is_error, "The result is an error (flag or error_when)."),
        MatcherKind("has_tool_calls", _has_tool_calls, "The assistant turn calls tools."),
        MatcherKind("orphan", _orphan, "The result answers no known call."),
        MatcherKind("dangling", _dangling, "The assistant turn has a call with no result."),
        MatcherKind("has_thinking", _has_thinking, "The assistant turn holds thinking or reasoning."),
        MatcherKind("in_span", _in_span,
                    "The item is in a span: an assistant turn with tool calls, or one of the results right after it."),
        MatcherKind("superseded", _superseded,
                    "A later call of the same tool repeats the result's arguments (or one value in them)."),
        MatcherKind("at_step_boundary", _at_step_boundary,
                    "The item is the last one the rules decide on (the last before the step boundary)."),
        MatcherKind("call_in_previous_assistant", _call_in_previous_assistant,
                    "The result's call is in the nearest assistant message before it."),
        MatcherKind("compacted", _compacted, "The content already is a placeholder or marker of this rule set."),
        MatcherKind("text", _text, "Tests on the item's text."),
        MatcherKind("where", _where, "A JMESPath expression over {item, message, call, args}."),
    ]
}
