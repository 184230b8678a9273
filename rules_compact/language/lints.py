"""Lints: rules that are valid but cannot work as written (``rules-compact validate``).

Each lint is one generator ``lint(file) -> Lint...`` in ``LINTS`` with its name; a lint reads
the rule file's own YAML (located with its marks) and the compiled RuleSet (for what a matcher
can match).  A Lint prints in yamllint's form ``FILE:LINE:COL: [warning] message (lint-name)``.
"""

from __future__ import annotations

import difflib
import os
import re
from dataclasses import dataclass
from functools import cached_property
from fnmatch import fnmatchcase
from typing import Any, Callable, Iterator, Sequence

from ..kinds.base import ITEM_KINDS, RESULT, TURN, bounds
from ..plugins.manager import registry
from ..resources import bundled_name, shown_source
from .covering import covers
from .loader import parse_rules, raw_rules, read_source
from .model import GLOB_CHARS, Rule, RuleSet
from ..plugins.manager import registry
from .yamlsource import Marks, entries, join_path, load_yaml, locate

__all__ = ["Lint", "LINTS", "lint_rules", "bounded_matchers", "reads_tool_metadata"]

BOUND_KEYS = ("gt", "gte", "lt", "lte")
KIND_NAMES = {RESULT: "tool results", TURN: "assistant turns"}


@dataclass(frozen=True, order=True)
class Lint:
    """One located warning."""

    file: str
    line: int
    col: int
    message: str
    name: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}: [warning] {self.message} ({self.name})"


@dataclass(frozen=True)
class LintedFile:
    """What a lint reads: the file's own YAML, its marks, the compiled rule set, and the tool
    names known to exist (None: not checked)."""

    file: str
    data: dict
    marks: Marks
    ruleset: RuleSet
    known_tools: frozenset[str] | None
    matches: tuple[Any, ...] = ()  # each rule's match spec as written, in the ruleset's order

    def at(self, path: str, message: str, name: str) -> Lint:
        line, col = locate(self.marks, path)
        return Lint(self.file, line, col, message, name)

    @cached_property
    def reach(self) -> dict[Rule, tuple[tuple[str, ...], tuple[tuple[Rule, str], ...]]]:
        return reachable(self.ruleset, self.matches)

    def own_rules(self) -> Iterator[tuple[str, dict, Rule]]:
        """``(path, raw rule, compiled rule)`` for each rule this file itself defines."""
        compiled = {r.name: r for r in self.ruleset.rules if r.source == self.ruleset.source}
        for i, raw in enumerate(self.data.get("rules") or []):
            rule = compiled.get(raw.get("name"))
            if rule is not None:
                yield f"rules[{i}]", raw, rule


def _actions(raw: dict, path: str) -> list[tuple[str, Any]]:
    """``(path, spec)`` of each action of a raw rule."""
    action = raw.get("action")
    if isinstance(action, list):
        return [(f"{path}.action[{j}]", a) for j, a in enumerate(action)]
    return [(f"{path}.action", action)]


def _action_name(spec: Any) -> str:
    return spec if isinstance(spec, str) else next(iter(spec), "?") if isinstance(spec, dict) else "?"


def keep_with_other_actions(f: LintedFile) -> Iterator[Lint]:
    """``action: [keep, placeholder]``: keep stops the chain alone; next to others it keeps nothing."""
    for path, raw, _ in f.own_rules():
        actions = _actions(raw, path)
        names = [_action_name(a) for _, a in actions]
        if "keep" in names and len(names) > 1:
            others = ", ".join(n for n in names if n != "keep")
            at = actions[names.index("keep")][0]
            yield f.at(at, f"rule {raw['name']!r}: keep next to {others} keeps nothing: {others} still "
                           f"{'applies' if len(names) == 2 else 'apply'}; use keep alone to leave the items "
                           "as they are", "keep-with-other-actions")


def _what(kinds: Sequence[str]) -> str:
    return " and ".join(KIND_NAMES[k] for k in kinds) or "nothing"


def action_never_applies(f: LintedFile) -> Iterator[Lint]:
    """An action that changes only items of a kind the rule cannot match (strip-text on role: tool)."""
    for path, raw, rule in f.own_rules():
        reached, blockers = f.reach.get(rule, ((), ()))
        if not reached:
            continue  # unreachable-rule says it
        for (at, _), action in zip(_actions(raw, path), rule.actions):
            changes = action.kind.items if action.kind is not None else ITEM_KINDS
            if not set(changes) & set(reached):
                why = f": {_taken(f, blockers)}" if blockers else ""
                yield f.at(at, f"rule {raw['name']!r}: {action.name} changes only {_what(changes)}, but the rule "
                               f"reaches only {_what(reached)}{why}", "action-never-applies")


def matcher_entries(spec: Any, path: str) -> Iterator[tuple[str, str, Any]]:
    """``(path, key, value)`` of every mapping entry at any depth of a matcher spec, outer first."""
    return entries(spec, path)


def bounded_matchers(spec: Any, path: str) -> Iterator[tuple[str, str, dict]]:
    """``(path, kind, options)`` of every matcher inside ``spec`` whose options hold bounds."""
    for sub, key, value in matcher_entries(spec, path):
        if isinstance(value, dict) and any(k in value for k in BOUND_KEYS):
            yield sub, key, value


def empty_range(f: LintedFile) -> Iterator[Lint]:
    """``size: {gt: 1000, lt: 100}`` or ``age: {lt: 0}``: bounds that no number the matcher
    measures meets."""
    for path, raw, _ in f.own_rules():
        for at, kind, options in bounded_matchers(raw.get("match"), f"{path}.match"):
            low, high = bounds(options)
            least = _least_measured(kind)
            if low > high or high < least:
                given = ", ".join(f"{k}: {options[k]}" for k in BOUND_KEYS if k in options)
                whole = "whole number" if low > high else f"whole number of {least} or more"
                yield f.at(at, f"rule {raw['name']!r}: {kind} {{{given}}} matches nothing: no {whole} "
                               "meets every bound", "empty-range")


def _least_measured(kind: str) -> float:
    """The least value a bounded matcher measures: its bounds' schema ``minimum`` (sizes and
    ages count from 0), else none."""
    schema = getattr(registry().matchers.get(kind), "schema", None) or {}
    minimums = [(schema.get("properties") or {}).get(k, {}).get("minimum") for k in BOUND_KEYS]
    return min((m for m in minimums if isinstance(m, (int, float))), default=float("-inf"))


def _unclosed_bracket(pattern: str) -> bool:
    """Whether a ``[`` opens a set that no ``]`` closes (fnmatch then reads it as a plain ``[``)."""
    i = 0
    while i < len(pattern):
        if pattern[i] == "[":
            j = i + 1
            if j < len(pattern) and pattern[j] == "!":
                j += 1
            if j < len(pattern) and pattern[j] == "]":
                j += 1
            close = pattern.find("]", j)
            if close < 0:
                return True
            i = close
        i += 1
    return False


def _tool_names(f: LintedFile) -> Iterator[tuple[str, str, str]]:
    """``(path, name or glob, where)`` of every tool the file names: ``tools:`` keys and ``tool:`` matchers."""
    for name in f.data.get("tools") or {}:
        yield join_path("tools", name), str(name), "tools:"

    def walk(spec: Any, path: str) -> Iterator[tuple[str, str, str]]:
        for sub, key, value in matcher_entries(spec, path):
            if key == "tool" and isinstance(value, (str, list)):
                for i, pattern in enumerate([value] if isinstance(value, str) else value):
                    if isinstance(pattern, str):
                        yield (sub if isinstance(value, str) else join_path(sub, i)), pattern, "tool:"

    for path, raw, _ in f.own_rules():
        yield from walk(raw.get("match"), f"{path}.match")
    if "error_when" in f.data:
        yield from walk(f.data["error_when"], "error_when")


def glob_unclosed_bracket(f: LintedFile) -> Iterator[Lint]:
    """``"Read["``, ``"mcp__[*"``: a ``[`` that no ``]`` closes is a plain character, not a set."""
    for path, pattern, where in _tool_names(f):
        if _unclosed_bracket(pattern):
            literal = pattern.replace("[", "[[]")
            yield f.at(path, f"{where} {pattern!r}: no ']' closes its '[', so it matches a literal '[' "
                             f"({literal!r} says so); close the set (e.g. 'Read[12]'), or drop the '['",
                       "glob-unclosed-bracket")


REGEX_SIGNS = re.compile(r"\.[*+?]|[|\\()+^$]|\{\d")  # what tool names never hold but regexes do


def glob_looks_like_regex(f: LintedFile) -> Iterator[Lint]:
    """``"get_.*"``, ``"Read|Grep"``: tool patterns are globs, where ``.`` and ``|`` are plain characters."""
    for path, pattern, where in _tool_names(f):
        if REGEX_SIGNS.search(pattern) and not (f.known_tools and pattern in f.known_tools):
            yield f.at(path, f"{where} {pattern!r} looks like a regex, but tool patterns are globs ('.', '|', "
                             f"'+' and '\\' are plain characters there); {_as_glob(pattern)}",
                       "glob-looks-like-regex")


def _as_glob(pattern: str) -> str:
    """What to write instead: the glob, or a list for alternatives."""
    def glob(part: str) -> str:
        return re.sub(r"\.\*|\.\+", "*", part.strip("^$")).replace("\\", "")

    parts = [glob(p) for p in pattern.strip("()").split("|")]
    if len(parts) > 1:
        return f"list the names instead: [{', '.join(parts)}]"
    return f"write {parts[0]!r}"


def unreachable_rule(f: LintedFile) -> Iterator[Lint]:
    """A rule no item reaches: it matches no kind of item, or earlier rules take every item it
    could match (a catch-all; error results only go to rules that match ``is_error: true``)."""
    reach = f.reach
    for path, raw, rule in f.own_rules():
        kinds, blockers = reach.get(rule, ((), ()))
        if kinds:
            continue
        if not blockers:
            yield f.at(path, f"rule {raw['name']!r} matches no item: no tool result or assistant turn meets "
                             "all of its conditions", "unreachable-rule")
        else:
            yield f.at(path, f"rule {raw['name']!r} is unreachable: {_taken(f, blockers)}; move it before "
                             f"{blockers[0][0].name!r} or narrow that rule", "unreachable-rule")


def _taken(f: LintedFile, blockers: Sequence[tuple[Rule, str]]) -> str:
    """``'everything' (line 15) takes every tool result first``; ``'old' (line 4) takes every tool
    result this rule matches first, and leaves them unchanged (strip-text changes only assistant
    turns)``."""
    def where(rule: Rule) -> str:
        if rule.source == f.ruleset.source:
            return f"line {rule.line}"
        beside = os.path.relpath(rule.source, os.path.dirname(os.path.abspath(f.ruleset.source)))
        bundled = bundled_name(rule.source)
        return f"{bundled or (shown_source(rule.source) if beside.startswith('..') else beside)}:{rule.line}"

    def takes(rule: Rule, kinds: list[str]) -> str:
        every = all(dict(f.ruleset.chains[k]).get(rule) is True for k in kinds)
        what = " and ".join(KIND_NAMES[k][:-1] for k in kinds)
        text = f"{rule.name!r} ({where(rule)}) takes every {what}{'' if every else ' this rule matches'} first"
        if rule.keeps or set(_changed(rule)) & set(kinds):
            return text
        return f"{text}, and leaves them unchanged ({rule.action_names} changes only {_what(_changed(rule))})"

    by_rule: dict[Rule, list[str]] = {}
    for rule, kind in blockers:
        by_rule.setdefault(rule, []).append(kind)
    return " and ".join(takes(rule, kinds) for rule, kinds in by_rule.items())


def _changed(rule: Rule) -> tuple[str, ...]:
    """The item kinds some action of ``rule`` changes."""
    return tuple(k for k in ITEM_KINDS if any(a.kind is None or k in a.kind.items for a in rule.actions))


def reachable(ruleset: RuleSet, matches: Sequence[Any] = ()) -> dict[Rule, tuple[tuple[str, ...], tuple[tuple[Rule, str], ...]]]:
    """Per rule: the item kinds some item of which it can decide, and ``(rule, kind)`` for the
    earlier rule that takes, of each other kind, every item it could match: one whose matcher
    holds for every such item, or whose match ``matches`` (the specs as written) covers its
    own.  Error results go only to rules that match ``is_error: true``."""
    spec = dict(zip(ruleset.rules, matches))
    schemas = {name: kind.schema for name, kind in registry().matchers.items()}
    out: dict[Rule, tuple[list[str], list[tuple[Rule, str]]]] = {}
    for kind in ITEM_KINDS:
        earlier: list[tuple[Rule, Any]] = []
        for rule, matcher in ruleset.chains[kind]:
            kinds, blockers = out.setdefault(rule, ([], []))
            blocker = next((first for first, first_matcher in earlier
                            if (first.matches_errors or not rule.matches_errors or kind != RESULT)
                            and (first_matcher is True or (first in spec and rule in spec
                                                          and covers(spec[first], spec[rule], kind, schemas)))),
                           None)
            if blocker is None:
                kinds.append(kind)
            elif (blocker, kind) not in blockers:
                blockers.append((blocker, kind))
            earlier.append((rule, matcher))
    return {rule: (tuple(k), tuple(b)) for rule, (k, b) in out.items()}


def unknown_tool(f: LintedFile) -> Iterator[Lint]:
    """A tool name (or glob) that no known tool has: only with ``--strict`` or ``--known-tools``.
    A known glob (a plugin's ``mcp__*``) makes every name it matches known."""
    if f.known_tools is None:
        return
    names = sorted(t for t in f.known_tools if not any(c in GLOB_CHARS for c in t))
    globs = [t for t in f.known_tools if any(c in GLOB_CHARS for c in t)]
    for path, pattern, where in _tool_names(f):
        if pattern in f.known_tools:
            continue
        if any(c in GLOB_CHARS for c in pattern):
            if not any(fnmatchcase(name, pattern) for name in names):
                yield f.at(path, f"{where} {pattern!r} matches no known tool", "unknown-tool")
        elif not any(fnmatchcase(pattern, glob) for glob in globs):
            yield f.at(path, f"{where} {pattern!r} is no known tool{_near(pattern, names)}", "unknown-tool")


def _near(name: str, known: Sequence[str]) -> str:
    close = difflib.get_close_matches(name, known, n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


#: The matcher kinds that read a tool's declared metadata.
TOOL_METADATA_KINDS = frozenset({"compactable", "declared"})


def reads_tool_metadata(ruleset: RuleSet) -> bool:
    """Whether a rule (or ``error_when``) of the compiled file reads a tool's declared metadata."""
    matchers = [rule.matcher for rule in ruleset.rules] + [m for m in (ruleset.error_when,) if m is not None]
    return any(node.kind is not None and node.kind.name in TOOL_METADATA_KINDS
               for matcher in matchers for node in matcher.nodes())


def unread_tool_metadata(f: LintedFile) -> Iterator[Lint]:
    """``tools: {X: {compact: false}}`` in a file where no rule matches on compactable: it decides nothing."""
    tools = f.data.get("tools")
    if not isinstance(tools, dict) or reads_tool_metadata(f.ruleset):
        return
    for name, meta in tools.items():
        if isinstance(meta, dict) and "placeholder" not in meta:
            yield f.at(join_path("tools", name), f"tools: {name} is declared but no rule matches on compactable "
                                                   "(or declared), so its compact metadata decides nothing",
                       "unread-tool-metadata")


LINTS: dict[str, Callable[[LintedFile], Iterator[Lint]]] = {
    "keep-with-other-actions": keep_with_other_actions,
    "action-never-applies": action_never_applies,
    "empty-range": empty_range,
    "glob-unclosed-bracket": glob_unclosed_bracket,
    "glob-looks-like-regex": glob_looks_like_regex,
    "unreachable-rule": unreachable_rule,
    "unknown-tool": unknown_tool,
    "unread-tool-metadata": unread_tool_metadata,
}


def lint_rules(source: str | os.PathLike, known_tools: Sequence[str] | None = None) -> list[Lint]:
    """The lints of a valid rule file (a path, ``default``, ``preset:NAME`` or text), sorted;
    ConfigError when it is invalid.  ``known_tools``: the tool names that exist (the
    ``unknown-tool`` lint runs only with them)."""
    text, file = read_source(source)
    ruleset = parse_rules(text, file)
    data, marks, _, _ = load_yaml(text, file)
    linted = LintedFile(file, data, marks, ruleset, None if known_tools is None else frozenset(known_tools),
                        tuple(raw["match"] for raw in raw_rules(text, file)))
    return sorted(lint for check in LINTS.values() for lint in check(linted))
