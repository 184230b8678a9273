"""Turn validated rule-file data into a frozen RuleSet, collecting located problems."""

from __future__ import annotations

from typing import Any, Callable

import jmespath
import jmespath.exceptions
from jmespath.visitor import TreeInterpreter

from ..errors import Problem
from ..kinds.base import ITEM_KINDS, Action, ActionKind, All, Matcher, MatcherKind, everything, predicate_matcher
from ..kinds.estimators import DEFAULT_ESTIMATOR, ESTIMATORS, Estimator, as_estimator
from ..limits import MAX_JMESPATH_CHARS, MAX_JMESPATH_DEPTH
from ..resources import bundled_name
from .model import Budget, PayBack, Rule, RuleSet, Step, ToolSpec, ToolTable, Trigger
from .regexes import RegexError, compile_regex, quoted
from .templates import RESULT_VARIABLES, Template, TemplateError
from .yamlsource import Marks, join_path, locate

__all__ = ["CompileContext", "compile_ruleset", "DEFAULT_PLACEHOLDER"]

DEFAULT_PLACEHOLDER = "[Previous: used {tool_name}]"



class Expression:
    """A compiled JMESPath expression.  Its searches share one interpreter: ``jmespath``'s own
    ``search`` makes one each time, a reference cycle (its method cache holds its bound
    methods) that only the cyclic collector frees, and a pass pauses it (a ``where`` over
    100,000 items left 2.8 times a 43 MB file's size of garbage)."""

    __slots__ = ("expression", "parsed")
    _interpreter = TreeInterpreter()

    def __init__(self, expression: str, parsed: dict):
        self.expression, self.parsed = expression, parsed

    def search(self, value: Any) -> Any:
        return self._interpreter.visit(self.parsed, value)

class CompileContext:
    """What matcher and action compilers use: sub-compilation, checks, located problems."""

    def __init__(self, file: str, marks: Marks, matchers: dict[str, MatcherKind],
                 actions: dict[str, ActionKind], estimators: dict[str, Estimator]):
        self.file = file
        self.marks = marks
        self.matchers = matchers
        self.actions = actions
        self.estimators = estimators
        self.problems: list[Problem] = []
        self.patterns: list[Callable[[str], bool]] = []  # what ``compacted`` recognises
        self.rule: str | None = None  # the rule being compiled (None: error_when), for plugins' failures
        self.store = None  # where actions with save: true save what they clear (None: no store configured)

    def locate(self, path: str) -> tuple[int, int]:
        return locate(self.marks, path)

    def problem(self, path: str, message: str) -> None:
        line, col = self.locate(path)
        self.problems.append(Problem(self.file, line, col, message, path))

    def matcher(self, spec: dict, path: str) -> Matcher:
        """A matcher spec compiled: every kind it names must hold."""
        parts = []
        for key, options in (spec or {}).items():
            kind = self.matchers.get(key)
            if kind is None:  # only reachable when a plugin kind vanished after validation
                self.problem(join_path(path, key), f"unknown matcher {key!r}; allowed: {', '.join(sorted(self.matchers))}")
                continue
            compiled = kind.compile(options, self, join_path(path, key))
            parts.append(compiled if isinstance(compiled, Matcher) else predicate_matcher(compiled, kind))
        return everything if not parts else parts[0] if len(parts) == 1 else All(parts)

    def action(self, spec: Any, path: str) -> Action:
        name, options = (spec, None) if isinstance(spec, str) else next(iter(spec.items()))
        kind = self.actions[name]
        action = kind.compile(options, self, path if isinstance(spec, str) else join_path(path, name))
        return action if action.kind is not None else _with_kind(action, kind)

    def regex(self, pattern: str, path: str, ignore_case: bool = False):
        """An RE2 pattern (linear time), or None after reporting why it is invalid."""
        try:
            return compile_regex(pattern, ignore_case)
        except RegexError as exc:
            self.problem(path, f"invalid regex {quoted(pattern)}: {exc}")
            return None

    def jmespath(self, expression: str, path: str):
        """A compiled JMESPath expression of bounded size and depth, or None after reporting why not."""
        if len(expression) > MAX_JMESPATH_CHARS:
            self.problem(path, f"JMESPath expression of {len(expression)} characters; at most "
                         f"{MAX_JMESPATH_CHARS} are allowed")
            return None
        try:
            compiled = jmespath.compile(expression)
        except jmespath.exceptions.JMESPathError as exc:
            reason = str(exc).splitlines()[0].removesuffix(", for expression:").rstrip(":")
            self.problem(path, f"invalid JMESPath expression {expression!r}: {reason}")
            return None
        except RecursionError:
            compiled = None
        if compiled is None or _depth(compiled.parsed) > MAX_JMESPATH_DEPTH:
            self.problem(path, f"JMESPath expression nests deeper than {MAX_JMESPATH_DEPTH} levels")
            return None
        return Expression(compiled.expression, compiled.parsed)

    def template(self, text: str, path: str, extra: tuple[str, ...] = ()) -> Template | None:
        try:
            template = Template.compile(text, RESULT_VARIABLES + extra)
        except TemplateError as exc:
            self.problem(path, str(exc))
            return None
        self.patterns.append(template.matches_any)
        return template

    def recognise(self, test: Callable[[str], bool]) -> None:
        """Register a test for an action's output so that ``compacted`` recognises it."""
        self.patterns.append(test)


def _depth(node: dict) -> int:
    """How deeply a parsed JMESPath expression nests."""
    deepest, level = 0, [(node, 1)]
    while level:
        node, depth = level.pop()
        deepest = max(deepest, depth)
        level += [(child, depth + 1) for child in node.get("children", ()) if isinstance(child, dict)]
    return deepest


def _mentions(spec: Any, key: str) -> bool:
    """Whether a matcher spec uses ``key`` anywhere, sub-matchers included."""
    if isinstance(spec, dict):
        return key in spec or any(_mentions(v, key) for v in spec.values())
    if isinstance(spec, list):
        return any(_mentions(v, key) for v in spec)
    return False


def _matches_errors(spec: Any) -> bool:
    """Whether a matcher spec asks for ``is_error: true`` outside any ``not``."""
    if not isinstance(spec, dict):
        return False
    if spec.get("is_error") is True:
        return True
    return any(_matches_errors(s) for key in ("all", "any") for s in spec.get(key) or [])


def compile_ruleset(data: dict, ctx: CompileContext, source: str, plugin_tools: list[ToolSpec] = (),
                    entries: list[tuple[dict, CompileContext, str]] | None = None) -> RuleSet:
    """Compile validated data; problems go to each context's ``problems``.

    ``entries`` are the rules as ``(raw rule, context of its file, path)``; by default
    the rules of ``data`` itself."""
    defaults = data.get("defaults", {})
    placeholder = ctx.template(defaults.get("placeholder", DEFAULT_PLACEHOLDER), "defaults.placeholder")
    estimator_name = defaults.get("estimator", DEFAULT_ESTIMATOR)
    if estimator_name not in ctx.estimators:
        ctx.problem("defaults.estimator", f"unknown estimator {estimator_name!r}; allowed: "
                    + ", ".join(sorted(ctx.estimators)))
    elif (why := ctx.estimators[estimator_name].missing()) is not None:
        ctx.problem("defaults.estimator", f"estimator {estimator_name!r} {why}")
    error_when = ctx.matcher(data["error_when"], "error_when") if "error_when" in data else None
    if "error_when" in data and _mentions(data["error_when"], "is_error"):
        ctx.problem("error_when", "error_when defines what an error is, so it cannot use is_error")
    specs = []
    for name, meta in data.get("tools", {}).items():
        path = join_path("tools", name)
        tool_placeholder = ctx.template(meta["placeholder"], f"{path}.placeholder") if "placeholder" in meta else None
        specs.append(ToolSpec(str(name), meta["compact"], tool_placeholder, source))
    if data.get("plugin_tools", "use") == "use":
        specs += plugin_tools
        ctx.patterns += [s.placeholder.matches_any for s in plugin_tools if s.placeholder is not None]
    if entries is None:
        entries = [(raw, ctx, f"rules[{i}]") for i, raw in enumerate(data.get("rules", []))]
    rules = []
    for raw, rule_ctx, path in entries:
        rule_ctx.rule = raw["name"]
        matcher = rule_ctx.matcher(raw["match"], f"{path}.match")
        action_specs = raw["action"] if isinstance(raw["action"], list) else [raw["action"]]
        paths = [f"{path}.action[{j}]" for j in range(len(action_specs))] if isinstance(raw["action"], list) \
            else [f"{path}.action"]
        actions = tuple(rule_ctx.action(a, p) for a, p in zip(action_specs, paths))
        rule_ctx.rule = None
        rules.append(Rule(raw["name"], matcher, actions, rule_ctx.file, _matches_errors(raw["match"]),
                          rule_ctx.locate(path)[0]))
    patterns = list(ctx.patterns)
    for _, rule_ctx, _ in entries:
        if rule_ctx is not ctx:
            patterns += [p for p in rule_ctx.patterns if p not in patterns]
    trigger = data.get("trigger", {})
    budget = data.get("budget", {})
    return RuleSet(
        name=data["name"], version=data["version"], description=data.get("description", ""),
        enabled=data.get("enabled", True),
        trigger=Trigger(trigger.get("tokens_over"), trigger.get("tool_results_over")),
        step=_step(data["step"]) if "step" in data else None,
        budget=Budget(budget.get("min_cleared_tokens"), budget.get("stop_at_tokens"),
                      budget.get("stop_after_cleared_tokens"), budget.get("min_cleared_counts", "saved")),
        estimator_name=estimator_name,
        estimator=as_estimator(estimator_name, ctx.estimators.get(estimator_name, ESTIMATORS[DEFAULT_ESTIMATOR])),
        placeholder=placeholder or Template.compile(DEFAULT_PLACEHOLDER, RESULT_VARIABLES),
        over_budget_tokens=defaults.get("over_budget_tokens"),
        placeholder_allow_larger=defaults.get("placeholder_allow_larger", False),
        tools=ToolTable.of(specs, data.get("undeclared", "compact")),
        error_when=error_when, rules=tuple(rules),
        compacted_patterns=tuple(patterns), source=source, chains=_chains(rules), store=ctx.store,
    )


def _step(data: dict) -> Step:
    pay_back = data.get("pay_back")
    return Step(data["unit"], data["every"],
                PayBack(float(pay_back["price_ratio"]), float(pay_back.get("factor", 1))) if pay_back else None,
                float(data.get("growth", 0)))


def _chains(rules: list[Rule]) -> dict[str, tuple[tuple[Rule, Matcher | bool], ...]]:
    """Per item kind, the rules that can match such an item, their matchers specialised."""
    chains = {}
    for item_kind in ITEM_KINDS:
        chain = []
        for rule in rules:
            matcher = rule.matcher.specialize(item_kind)
            if matcher is not False:
                chain.append((rule, matcher))
        chains[item_kind] = tuple(chain)
    return chains


def _with_kind(action: Action, kind: ActionKind) -> Action:
    return Action(action.name, action.apply, action.templates, action.run, kind, action.run_many)


def registry_context(file: str, marks: Marks, reg) -> CompileContext:
    """A context with every matcher, action and estimator the plugin registry knows."""
    return CompileContext(file, marks, reg.matchers, reg.actions, reg.estimators)


def settle_conflicts(ctx: CompileContext, data: dict, conflicts) -> None:
    """Plugins that disagree about a tool are an error unless the rule file decides."""
    declared = data.get("tools", {})
    if data.get("plugin_tools", "use") == "ignore":
        return
    bundled = bundled_name(ctx.file) if ctx.file != "<string>" else None
    settle = ("settle it in this file's tools: section" if bundled is None else
              f"settle it in the tools: section of a rule file of your own with extends: {bundled}")
    for first, second in conflicts:
        if first.pattern not in declared:
            ctx.problem("tools" if "tools" in data else "", (
                f"tool {first.pattern!r} is declared differently by plugin {first.source} "
                f"({_metadata(first)}) and plugin {second.source} ({_metadata(second)}); {settle}"))


def _metadata(spec: ToolSpec) -> str:
    parts = [f"compact: {str(spec.compact).lower()}"]
    if spec.placeholder is not None:
        parts.append(f"placeholder: {spec.placeholder.text!r}")
    if spec.summarize is not None:
        parts.append(f"summarizer: {getattr(spec.summarize, '__module__', '?')}."
                     f"{getattr(spec.summarize, '__qualname__', '?')}")
    return ", ".join(parts)

