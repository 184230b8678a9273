"""Rule-file errors: every problem located as ``FILE:LINE:COL: message (at path)``.

Each case is a rule file and the exact error lines it must produce.  The file is
written to ``tmp_path/rules.yaml`` and the tmp path is replaced by ``rules.yaml``
before comparing, so FILE is predictable.  LINE:COL were checked by hand against
the text: they point at the offending key (unknown/duplicate keys) or value
(wrong values), or at the mapping that lacks a required key.
"""

from __future__ import annotations

import pytest

from rules_compact import ConfigError, InputError, RuleSet, check_rules, load_rules, parse_rules
from rules_compact.language import loader
from rules_compact.kinds.estimators import ESTIMATORS
from rules_compact.language.schema import rule_schema
from rules_compact.language.templates import RESULT_VARIABLES, SAVED_VARIABLES



def _schema() -> dict:
    """The schema rule files are checked against (plugins may add matchers and actions)."""
    try:
        from rules_compact.language.schema import extended_schema
        from rules_compact.plugins import registry
    except ImportError:  # pragma: no cover - before plugins existed
        return rule_schema()
    return extended_schema(rule_schema(), registry())


def _estimators() -> list[str]:
    try:
        from rules_compact.plugins import registry
    except ImportError:  # pragma: no cover
        return sorted(ESTIMATORS)
    return sorted(registry().estimators)


# "allowed" lists are read from the schema in effect, so that adding a key elsewhere does not
# break every expected line; the lists themselves are checked against the built-ins below.
SCHEMA = _schema()
_ACTION = SCHEMA["$defs"]["action"]["anyOf"]
ALLOWED_TOP = ", ".join(sorted(SCHEMA["properties"]))
ALLOWED_MATCHERS = ", ".join(sorted(SCHEMA["$defs"]["matcher"]["properties"]))
ALLOWED_SIZE = ", ".join(sorted(SCHEMA["$defs"]["matcher"]["properties"]["size"]["properties"]))
ACTION_ENUM = ", ".join(_ACTION[0]["enum"])
ALLOWED_ACTIONS = ", ".join(sorted(_ACTION[1]["properties"]))
ESTIMATOR_NAMES = ", ".join(_estimators())
VARS = ", ".join(f"{{{v}}}" for v in RESULT_VARIABLES)
ACTION_VARS = ", ".join(f"{{{v}}}" for v in RESULT_VARIABLES + SAVED_VARIABLES)  # a placeholder action's own text


def Y(*lines: str) -> str:
    """Rule-file text, one argument per line (so line numbers are easy to count)."""
    return "\n".join(lines) + "\n"


HEAD = ("version: 1", "name: x", "rules:")


def R(*lines: str) -> str:
    """A file whose line 1-3 are HEAD, followed by ``lines`` from line 4 on."""
    return Y(*HEAD, *lines)


BILLION_LAUGHS = Y(
    'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]',
    "b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]",
    "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]",
    "d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]",
    "e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]",
    "f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]",
    "g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]",
    "h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]",
    "i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]",
)

CASES = [
    # --- YAML syntax ------------------------------------------------------------------------
    pytest.param(
        Y("version: 1", "name: x: y", "rules: []"),
        ["rules.yaml:2:8: YAML error: mapping values are not allowed here"],
        id="yaml-syntax-mapping-values"),
    pytest.param(
        R("  - name: a", "     match: {}", "    action: keep"),
        ["rules.yaml:5:11: YAML error: mapping values are not allowed here"],
        id="yaml-syntax-bad-indentation"),
    pytest.param(
        R("\t- name: a", "\t  match: {}", "\t  action: keep"),
        ["rules.yaml:4:1: YAML error: while scanning for the next token; found character '\\t' that cannot "
         "start any token (YAML does not allow tabs for indentation)"],
        id="tab-indentation"),
    # --- duplicate keys -------------------------------------------------------------------------
    pytest.param(
        Y("version: 1", "name: x", "version: 1", "rules: []"),
        ["rules.yaml:3:1: duplicate key 'version' (first defined on line 1) (at version)"],
        id="duplicate-key-top-level"),
    pytest.param(
        R("  - name: a", "    match: {role: tool, role: assistant}", "    action: keep"),
        ["rules.yaml:5:25: duplicate key 'role' (first defined on line 5) (at rules[0].match.role)"],
        id="duplicate-key-nested-flow"),
    pytest.param(
        R("  - name: a",
          "    match:",
          "      role: tool",
          "      size: {gt: 1}",
          "      role: assistant",
          "    action: keep"),
        ["rules.yaml:8:7: duplicate key 'role' (first defined on line 6) (at rules[0].match.role)"],
        id="duplicate-key-nested-block"),
    pytest.param(
        R("  - name: a", "    name: b", "    match: {}", "    action: keep"),
        ["rules.yaml:5:5: duplicate key 'name' (first defined on line 4) (at rules[0].name)"],
        id="duplicate-key-in-rule"),
    pytest.param(
        Y("version: 1",
          "name: x",
          "defaults:",
          "  estimator: chars4",
          "  estimator: bytes4",
          "rules: []",
          "name: y"),
        ["rules.yaml:5:3: duplicate key 'estimator' (first defined on line 4) (at defaults.estimator)",
         "rules.yaml:7:1: duplicate key 'name' (first defined on line 2) (at name)"],
        id="duplicate-keys-all-reported"),
    # --- unknown keys ---------------------------------------------------------------------------
    pytest.param(
        Y("version: 1", "name: x", "rules: []", "colour: red"),
        [f"rules.yaml:4:1: unknown key 'colour'; allowed: {ALLOWED_TOP} (at colour)"],
        id="unknown-top-level-key"),
    pytest.param(
        R("  - name: a", "    match: {colour: red}", "    action: keep"),
        [f"rules.yaml:5:13: unknown key 'colour'; allowed: {ALLOWED_MATCHERS} (at rules[0].match.colour)"],
        id="unknown-matcher-key"),
    pytest.param(
        R("  - name: a", "    match:", "      not: {colour: red}", "    action: keep"),
        [f"rules.yaml:6:13: unknown key 'colour'; allowed: {ALLOWED_MATCHERS} (at rules[0].match.not.colour)"],
        id="unknown-matcher-key-inside-not"),
    pytest.param(
        R("  - name: a", "    matches: {role: tool}", "    action: keep"),
        ["rules.yaml:4:5: missing required key 'match' (at rules[0])",
         "rules.yaml:5:5: unknown key 'matches'; allowed: action, after, before, description, match, name (at rules[0].matches)"],
        id="unknown-rule-key"),
    pytest.param(
        R("  - name: a", "    match: {size: {gt: 1, max: 3}}", "    action: keep"),
        [f"rules.yaml:5:27: unknown key 'max'; allowed: {ALLOWED_SIZE} (at rules[0].match.size.max)"],
        id="unknown-size-option"),
    # --- actions --------------------------------------------------------------------------------
    pytest.param(
        R("  - name: a", "    match: {role: tool}", "    action: delete"),
        [f"rules.yaml:6:13: 'delete' is not allowed; expected one of: {ACTION_ENUM} (at rules[0].action)"],
        id="unknown-action-name"),
    pytest.param(
        R("  - name: a", "    match: {role: tool}", "    action: {shred: {}}"),
        [f"rules.yaml:6:14: unknown key 'shred'; allowed: {ALLOWED_ACTIONS} (at rules[0].action.shred)"],
        id="unknown-action-name-mapping"),
    pytest.param(
        R("  - name: a", "    match: {role: tool}", '    action: {placeholder: "x", truncate: {head: 1}}'),
        ["rules.yaml:6:13: expected at most 1 key(s) here, got 2: placeholder, truncate (at rules[0].action)"],
        id="action-mapping-with-two-keys"),
    # --- wrong types and negative numbers ---------------------------------------------------------
    pytest.param(
        Y("version: 1", "name: x", "defaults:", '  over_budget_tokens: "100"', "rules: []"),
        ["rules.yaml:4:23: expected integer, got a string '100' (at defaults.over_budget_tokens)"],
        id="string-where-int-expected"),
    pytest.param(
        R("  - name: a", '    match: {size: {gt: "5"}}', "    action: keep"),
        ["rules.yaml:5:24: expected integer, got a string '5' (at rules[0].match.size.gt)"],
        id="string-where-int-expected-in-matcher"),
    pytest.param(
        R("  - name: a", "    match: {role: tool}", "    action:", '      truncate: {head: "ten"}'),
        ["rules.yaml:7:24: expected integer, got a string 'ten' (at rules[0].action.truncate.head)"],
        id="string-where-int-expected-in-action"),
    pytest.param(
        Y("version: 1", "name: 7", "rules: []"),
        ["rules.yaml:2:7: expected string, got a number 7 (at name)"],
        id="number-where-string-expected"),
    pytest.param(
        Y("version: 1", "name: x", 'enabled: "yes"', "rules: []"),
        ["rules.yaml:3:10: expected boolean, got a string 'yes' (at enabled)"],
        id="string-where-boolean-expected"),
    pytest.param(
        Y("version: 1", "name: x", "rules: {}"),
        ["rules.yaml:3:8: expected array, got a mapping {} (at rules)"],
        id="mapping-where-list-expected"),
    pytest.param(
        R("  - name: a", "    match: {size: {gt: -5}}", "    action: keep"),
        ["rules.yaml:5:24: expected a number >= 0, got -5 (at rules[0].match.size.gt)"],
        id="negative-size-bound"),
    pytest.param(
        Y("version: 1", "name: x", "defaults:", "  over_budget_tokens: -1", "rules: []"),
        ["rules.yaml:4:23: expected a number >= 0, got -1 (at defaults.over_budget_tokens)"],
        id="negative-over-budget-tokens"),
    pytest.param(
        R("  - name: a", "    match: {role: tool}", "    action: [placeholder, {truncate: {head: -1}}]"),
        ["rules.yaml:6:45: expected a number >= 0, got -1 (at rules[0].action[1].truncate.head)"],
        id="negative-number-in-action-list"),
    pytest.param(
        Y("version: 1", 'name: ""', "rules: []"),
        ["rules.yaml:2:7: expected a non-empty string (at name)"],
        id="empty-name"),
    # --- missing required keys ------------------------------------------------------------------
    pytest.param(
        Y("version: 1", "name: x"),
        ["rules.yaml:1:1: missing required key 'rules'"],
        id="missing-rules"),
    pytest.param(
        Y("version: 1", "rules: []"),
        ["rules.yaml:1:1: missing required key 'name'"],
        id="missing-name"),
    pytest.param(
        Y("version: 1"),
        ["rules.yaml:1:1: missing required key 'name'",
         "rules.yaml:1:1: missing required key 'rules'"],
        id="missing-name-and-rules-both-reported"),
    pytest.param(
        R("  - match: {role: tool}", "    action: keep"),
        ["rules.yaml:4:5: missing required key 'name' (at rules[0])"],
        id="missing-rule-name"),
    pytest.param(
        R("  - name: a", "    action: keep"),
        ["rules.yaml:4:5: missing required key 'match' (at rules[0])"],
        id="missing-match"),
    pytest.param(
        R("  - name: a", "    match: {role: tool}"),
        ["rules.yaml:4:5: missing required key 'action' (at rules[0])"],
        id="missing-action"),
    pytest.param(
        R("  - name: a"),
        ["rules.yaml:4:5: missing required key 'action' (at rules[0])",
         "rules.yaml:4:5: missing required key 'match' (at rules[0])"],
        id="missing-match-and-action-both-reported"),
    pytest.param(
        Y("version: 1", "name: x", "tools:", '  Read: {placeholder: "x"}', "rules: []"),
        ["rules.yaml:4:9: missing required key 'compact' (at tools.Read)"],
        id="missing-tool-compact"),
    # --- version and enums ----------------------------------------------------------------------
    pytest.param(
        Y("version: 2", "name: x", "rules: []"),
        ["rules.yaml:1:10: expected 1, got 2 (at version)"],
        id="version-not-1"),
    pytest.param(
        Y('version: "1"', "name: x", "rules: []"),
        ["rules.yaml:1:10: expected 1, got '1' (at version)"],
        id="version-string"),
    pytest.param(
        R("  - name: a", "    match: {role: user}", "    action: keep"),
        ["rules.yaml:5:19: 'user' is not allowed; expected one of: tool, assistant (at rules[0].match.role)"],
        id="bad-enum-role"),
    pytest.param(
        R("  - name: a", "    match: {role: [tool, user]}", "    action: keep"),
        ["rules.yaml:5:26: 'user' is not allowed; expected one of: tool, assistant (at rules[0].match.role[1])"],
        id="bad-enum-role-in-list"),
    pytest.param(
        R("  - name: a", "    match: {age: {unit: days, gt: 3}}", "    action: keep"),
        ["rules.yaml:5:25: 'days' is not allowed; expected one of: tool_results, tool_calls, spans, messages, user_turns, "
         "tokens (at rules[0].match.age.unit)"],
        id="bad-enum-age-unit"),
    pytest.param(
        R("  - name: a", "    match: {age: {gt: 3}}", "    action: keep"),
        ["rules.yaml:5:18: missing required key 'unit' (at rules[0].match.age)"],
        id="age-without-unit"),
    pytest.param(
        Y("version: 1", "name: x", "undeclared: maybe", "rules: []"),
        ["rules.yaml:3:13: 'maybe' is not allowed; expected one of: compact, keep (at undeclared)"],
        id="bad-enum-undeclared"),
    pytest.param(
        Y("version: 1", "name: x", "trigger: {tokens_over: 100, tool_results_over: 3}", "rules: []"),
        ["rules.yaml:3:10: expected at most 1 key(s) here, got 2: tokens_over, tool_results_over (at trigger)"],
        id="trigger-with-two-conditions"),
    # --- bounds ---------------------------------------------------------------------------------
    pytest.param(
        R("  - name: a", "    match: {size: {unit: chars}}", "    action: keep"),
        ["rules.yaml:5:19: size needs at least one of gt, gte, lt, lte (at rules[0].match.size)"],
        id="size-without-bounds"),
    pytest.param(
        R("  - name: a", "    match:", "      all:", "        - {role: tool}", "        - {size: {}}",
          "    action: keep"),
        ["rules.yaml:8:18: size needs at least one of gt, gte, lt, lte (at rules[0].match.all[1].size)"],
        id="size-without-bounds-inside-all"),
    pytest.param(
        R("  - name: a", "    match: {age: {unit: messages}}", "    action: keep"),
        ["rules.yaml:5:18: age needs at least one of gt, gte, lt, lte (at rules[0].match.age)"],
        id="age-without-bounds"),
    pytest.param(
        R("  - name: a", "    match: {text: {}}", "    action: keep"),
        ["rules.yaml:5:19: expected at least one key here (at rules[0].match.text)"],
        id="text-without-tests"),
    pytest.param(
        R("  - name: a", "    match: {role: user}", "    action: keep",
          "  - name: a", "    match: {text: {regex: '(\\d+'}}", "    action: keep"),
        ["rules.yaml:5:19: 'user' is not allowed; expected one of: tool, assistant (at rules[0].match.role)",
         "rules.yaml:7:11: duplicate rule name 'a' (at rules[1].name)",
         "rules.yaml:8:27: invalid regex '(\\d+': missing ), unterminated subpattern at position 0 "
         "(at rules[1].match.text.regex)"],
        id="schema-error-with-duplicate-name-and-bad-regex"),
    # --- regexes, JMESPath, templates, estimator --------------------------------------------------
    pytest.param(
        R("  - name: a", '    match: {text: {regex: "foo("}}', "    action: keep"),
        ["rules.yaml:5:27: invalid regex 'foo(': missing ), unterminated subpattern at position 3 "
         "(at rules[0].match.text.regex)"],
        id="bad-regex-text"),
    pytest.param(
        R("  - name: a", "    match: {role: assistant}", "    action:", "      strip-text:",
          '        keep_patterns: ["ok", "[unclosed"]'),
        ["rules.yaml:8:31: invalid regex '[unclosed': unterminated character set at position 0 "
         "(at rules[0].action.strip-text.keep_patterns[1])"],
        id="bad-regex-keep-patterns"),
    pytest.param(
        Y("version: 1", "name: x", 'error_when: {text: {regex: "*oops"}}', "rules: []"),
        ["rules.yaml:3:28: invalid regex '*oops': nothing to repeat at position 0 (at error_when.text.regex)"],
        id="bad-regex-error-when"),
    pytest.param(
        R("  - name: a", '    match: {where: "foo bar"}', "    action: keep"),
        ["rules.yaml:5:20: invalid JMESPath expression 'foo bar': Unexpected token: bar: Parse error at "
         'column 4, token "bar" (UNQUOTED_IDENTIFIER) (at rules[0].match.where)'],
        id="bad-jmespath-where"),
    pytest.param(
        R("  - name: a", '    match: {role: tool}', '    action: {placeholder: "[{tool} cleared]"}'),
        [f"rules.yaml:6:27: unknown template variable {{tool}} in '[{{tool}} cleared]'; allowed: {ACTION_VARS} "
         "(at rules[0].action.placeholder)"],
        id="unknown-variable-placeholder"),
    pytest.param(
        Y("version: 1", "name: x", "defaults:", '  placeholder: "[{name}]"', "rules: []"),
        [f"rules.yaml:4:16: unknown template variable {{name}} in '[{{name}}]'; allowed: {VARS} "
         "(at defaults.placeholder)"],
        id="unknown-variable-defaults-placeholder"),
    pytest.param(
        R("  - name: a", "    match: {role: tool}", "    action:",
          '      truncate: {head: 10, marker: "... {omitted} of {total} ..."}'),
        [f"rules.yaml:7:36: unknown template variable {{total}} in '... {{omitted}} of {{total}} ...'; "
         f"allowed: {VARS}, {{omitted}}, {{saved}}, {{saved_lines}} (at rules[0].action.truncate.marker)"],
        id="unknown-variable-truncate-marker"),
    pytest.param(
        Y("version: 1", "name: x", "tools:", '  Read: {compact: false, placeholder: "{bad}"}', "rules: []"),
        [f"rules.yaml:4:39: unknown template variable {{bad}} in '{{bad}}'; allowed: {VARS} "
         "(at tools.Read.placeholder)"],
        id="unknown-variable-tool-placeholder"),
    pytest.param(
        R("  - name: a", "    match: {role: tool}", '    action: {placeholder: "[used {tool_name]"}'),
        ["rules.yaml:6:27: malformed template '[used {tool_name]': expected '}' before end of string; "
         "write literal braces as {{ and }} (at rules[0].action.placeholder)"],
        id="malformed-template-unclosed-brace"),
    pytest.param(
        R("  - name: a", "    match: {role: tool}", '    action: {placeholder: {text: "used {tool_name} }"}}'),
        ["rules.yaml:6:34: malformed template 'used {tool_name} }': Single '}' encountered in format string; "
         "write literal braces as {{ and }} (at rules[0].action.placeholder.text)"],
        id="malformed-template-single-close-brace"),
    pytest.param(
        R("  - name: a", "    match: {role: tool}", '    action: {placeholder: "{tool_name!r}"}'),
        ["rules.yaml:6:27: conversion !r is not supported in '{tool_name!r}' (at rules[0].action.placeholder)"],
        id="template-conversion"),
    pytest.param(
        R("  - name: a", "    match: {role: tool}", '    action: {placeholder: "[{chars:c}]"}'),
        ["rules.yaml:6:27: format type 'c' of {chars:c} in '[{chars:c}]' is not supported "
         "(at rules[0].action.placeholder)"],
        id="template-format-type-c"),
    pytest.param(
        Y("version: 1", "name: x", "defaults:", "  estimator: tiktoken", "rules: []"),
        [f"rules.yaml:4:14: 'tiktoken' is not allowed; expected one of: {ESTIMATOR_NAMES} (at defaults.estimator)"],
        id="unknown-estimator"),
    # --- semantic checks ------------------------------------------------------------------------
    pytest.param(
        R("  - name: a", "    match: {role: tool}", "    action: keep",
          "  - name: b", "    match: {role: assistant}", "    action: keep",
          "  - name: a", "    match: {}", "    action: keep"),
        ["rules.yaml:10:11: duplicate rule name 'a' (at rules[2].name)"],
        id="duplicate-rule-names"),
    pytest.param(
        R("  - name: a", "    match:", "      age: {unit: messages, gt: 2, among: {tool: Read}}",
          "    action: placeholder"),
        ["rules.yaml:6:43: 'among' needs unit tool_results, spans, user_turns or tokens, "
         "not 'messages' (at rules[0].match.age.among)"],
        id="among-with-unit-messages"),
    # --- NaN and infinity: no number of the rule language may be one (NaN passes min/max checks) -----
    pytest.param(
        Y("version: 1", "name: x", "step: {unit: tool_results, every: 1, growth: .nan}", "rules: []"),
        ["rules.yaml:3:46: expected a finite number, got .nan (at step.growth)"],
        id="nan-step-growth"),
    pytest.param(
        Y("version: 1", "name: x", "step:", "  unit: tool_results", "  every: 1",
          "  pay_back: {price_ratio: .NaN, factor: -.inf}", "rules: []"),
        ["rules.yaml:6:27: expected a finite number, got .NaN (at step.pay_back.price_ratio)",
         "rules.yaml:6:41: expected a finite number, got -.inf (at step.pay_back.factor)"],
        id="nan-and-inf-pay-back"),
    pytest.param(
        R("  - name: a", "    match: {size: {gt: .inf}}", "    action: placeholder"),
        ["rules.yaml:5:24: expected a finite number, got .inf (at rules[0].match.size.gt)"],
        id="inf-matcher-bound"),
    # --- unsafe YAML, aliases, document shape -------------------------------------------------------
    pytest.param(
        Y("version: 1", "name: x", "rules: !!python/object:os.system {}"),
        ["rules.yaml:3:8: tag 'tag:yaml.org,2002:python/object:os.system' is not allowed; "
         "rule files are plain data (at rules)"],
        id="python-object-tag"),
    pytest.param(
        Y("version: 1", "name: x", 'rules: !!python/object/apply:os.system ["echo pwned"]'),
        ["rules.yaml:3:8: tag 'tag:yaml.org,2002:python/object/apply:os.system' is not allowed; "
         "rule files are plain data (at rules)"],
        id="python-object-apply-tag"),
    pytest.param(
        Y("version: 1", 'name: !!python/name:os.system ""', "rules: []"),
        ["rules.yaml:2:7: tag 'tag:yaml.org,2002:python/name:os.system' is not allowed; "
         "rule files are plain data (at name)"],
        id="python-name-tag-on-scalar"),
    pytest.param(
        BILLION_LAUGHS,
        ["rules.yaml:1:1: aliases expand the document by more than 100000 nodes"],
        id="billion-laughs"),
    pytest.param(
        "",
        ["rules.yaml:1:1: empty rule file; expected a mapping with version, name and rules"],
        id="empty-file"),
    pytest.param(
        Y("# nothing but a comment"),
        ["rules.yaml:1:1: empty rule file; expected a mapping with version, name and rules"],
        id="comment-only-file"),
    pytest.param(
        '[{"version": 1, "name": "x", "rules": []}]\n',
        ["rules.yaml:1:1: a rule file must be a mapping, got a list"],
        id="json-list"),
    pytest.param(
        Y("just some words"),
        ["rules.yaml:1:1: a rule file must be a mapping, got a string"],
        id="scalar-document"),
    # --- several problems at once, sorted by position ----------------------------------------------
    pytest.param(
        Y("version: 3",                          # 1
          "name: x",                             # 2
          "undeclared: maybe",                   # 3
          "rules:",                              # 4
          "  - name: a",                         # 5
          "    match: {role: user}",             # 6
          "    action: keep",                    # 7
          "  - name: b",                         # 8
          "    match: {age: {unit: days}}",      # 9
          "    action: shred",                   # 10
          "  - name: c",                         # 11
          "    matches: {}",                     # 12
          "    action: keep"),                   # 13
        ["rules.yaml:1:10: expected 1, got 3 (at version)",
         "rules.yaml:3:13: 'maybe' is not allowed; expected one of: compact, keep (at undeclared)",
         "rules.yaml:6:19: 'user' is not allowed; expected one of: tool, assistant (at rules[0].match.role)",
         "rules.yaml:9:18: age needs at least one of gt, gte, lt, lte (at rules[1].match.age)",
         "rules.yaml:9:25: 'days' is not allowed; expected one of: tool_results, tool_calls, spans, messages, user_turns, "
         "tokens (at rules[1].match.age.unit)",
         f"rules.yaml:10:13: 'shred' is not allowed; expected one of: {ACTION_ENUM} (at rules[1].action)",
         "rules.yaml:11:5: missing required key 'match' (at rules[2])",
         "rules.yaml:12:5: unknown key 'matches'; allowed: action, after, before, description, match, name (at rules[2].matches)"],
        id="several-schema-problems"),
    pytest.param(
        R("  - name: a",                                     # 4
          '    match: {text: {regex: "("}}',                 # 5
          "    action: keep",                                # 6
          "  - name: a",                                     # 7
          '    match: {where: "foo bar"}',                   # 8
          '    action: {placeholder: "{nope}"}',             # 9
          "  - name: c",                                     # 10
          "    match: {size: {gt: 1}}",                      # 11
          "    action: {truncate: {marker: '{tool_name:>200}'}}"),  # 12
        ["rules.yaml:5:27: invalid regex '(': missing ), unterminated subpattern at position 0 "
         "(at rules[0].match.text.regex)",
         "rules.yaml:7:11: duplicate rule name 'a' (at rules[1].name)",
         "rules.yaml:8:20: invalid JMESPath expression 'foo bar': Unexpected token: bar: Parse error at "
         'column 4, token "bar" (UNQUOTED_IDENTIFIER) (at rules[1].match.where)',
         f"rules.yaml:9:27: unknown template variable {{nope}} in '{{nope}}'; allowed: {ACTION_VARS} "
         "(at rules[1].action.placeholder)",
         "rules.yaml:12:33: width 200 of {tool_name:>200} in '{tool_name:>200}' is over the limit of 100 "
         "(at rules[2].action.truncate.marker)"],
        id="several-compile-problems"),
    pytest.param(
        Y("version: 1",
          "name: x",
          "name: y",
          "rules: !!python/object:os.system {}",
          "defaults: {estimator: a, estimator: b}"),
        ["rules.yaml:3:1: duplicate key 'name' (first defined on line 2) (at name)",
         "rules.yaml:4:8: tag 'tag:yaml.org,2002:python/object:os.system' is not allowed; "
         "rule files are plain data (at rules)",
         "rules.yaml:5:26: duplicate key 'estimator' (first defined on line 5) (at defaults.estimator)"],
        id="several-yaml-problems"),
]


def _errors(tmp_path, text: str) -> list[str]:
    path = tmp_path / "rules.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_rules(str(path))
    return [str(p).replace(str(path), "rules.yaml") for p in info.value.problems]


@pytest.mark.parametrize("text,expected", CASES)
def test_rule_file_errors(tmp_path, text, expected):
    assert _errors(tmp_path, text) == expected


@pytest.mark.parametrize("text,expected", CASES)
def test_error_text_matches_problems(tmp_path, text, expected):
    """``str(ConfigError)`` is exactly the lines; check_rules returns the same problems."""
    path = tmp_path / "rules.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_rules(path)
    err = info.value
    assert err.exit_code == 1
    assert str(err) == "\n".join(str(p) for p in err.problems)
    assert err.problems == sorted(err.problems, key=lambda p: (p.line, p.col))
    for problem in err.problems:
        assert problem.file == str(path)
        assert problem.line >= 1 and problem.col >= 1
    assert check_rules(str(path)) == err.problems


def test_at_least_thirty_cases():
    assert len(CASES) >= 30


def test_allowed_lists_include_the_builtins():
    """The lists used in expected lines hold at least the documented built-in names."""
    for name in ("version", "name", "rules", "defaults", "trigger", "budget", "tools", "undeclared"):
        assert name in ALLOWED_TOP.split(", ")
    for name in ("role", "tool", "size", "age", "text", "where", "all", "any", "not", "is_error"):
        assert name in ALLOWED_MATCHERS.split(", ")
    assert ACTION_ENUM.split(", ")[:5] == ["keep", "placeholder", "truncate", "strip-text", "clear-inputs"]
    assert ALLOWED_SIZE == "gt, gte, lt, lte, unit"
    assert {"bytes4", "chars4", "chars4_ceil"} <= set(ESTIMATOR_NAMES.split(", "))
    assert VARS.startswith("{tool_name}, {tool_call_id}, {chars}, {bytes}, {tokens}, {lines}")


def test_text_source_is_named_string():
    text = Y("version: 1", "name: x", "rules: []", "colour: red")
    with pytest.raises(ConfigError) as info:
        load_rules(text)
    assert [str(p) for p in info.value.problems] == [
        f"<string>:4:1: unknown key 'colour'; allowed: {ALLOWED_TOP} (at colour)"]
    with pytest.raises(ConfigError) as info:
        parse_rules(text, "mine.yaml")
    assert [str(p) for p in info.value.problems] == [
        f"mine.yaml:4:1: unknown key 'colour'; allowed: {ALLOWED_TOP} (at colour)"]


def test_not_utf8_rule_file(tmp_path):
    path = tmp_path / "rules.yaml"
    path.write_bytes(b"version: 1\nname: caf\xe9\nrules: []\n")
    with pytest.raises(ConfigError) as info:
        load_rules(str(path))
    assert [str(p).replace(str(path), "rules.yaml") for p in info.value.problems] == [
        "rules.yaml:1:1: not UTF-8 text (bad byte at offset 20)"]


def test_rule_file_over_size_limit(tmp_path, monkeypatch):
    monkeypatch.setenv("RULES_COMPACT_MAX_RULES_BYTES", "50")
    text = R("  - name: a", "    match: {role: tool}", "    action: keep")
    path = tmp_path / "rules.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_rules(str(path))
    assert [str(p).replace(str(path), "rules.yaml") for p in info.value.problems] == [
        f"rules.yaml:1:1: rule file is {len(text)} bytes, over the limit of 50 (RULES_COMPACT_MAX_RULES_BYTES)"]


def test_missing_rule_file_is_input_error(tmp_path):
    path = tmp_path / "nope.yaml"
    with pytest.raises(InputError) as info:
        load_rules(str(path))
    assert info.value.exit_code == 2
    assert str(info.value) == f"{path}: cannot read rule file: No such file or directory"


def test_directory_rule_file_is_input_error(tmp_path):
    with pytest.raises(InputError) as info:
        load_rules(str(tmp_path))
    assert str(info.value) == f"{tmp_path}: is a directory, not a rule file"


@pytest.mark.parametrize("action", ["keep", "placeholder", "truncate", "strip-text", "clear-inputs"])
def test_bare_action_names_never_crash(tmp_path, action):
    """The schema allows every action as a bare name; loading must give a RuleSet or a
    located ConfigError, never another exception (``truncate`` with no options crashed)."""
    path = tmp_path / "rules.yaml"
    path.write_text(R("  - name: a", "    match: {role: tool}", f"    action: {action}"), encoding="utf-8")
    try:
        ruleset = load_rules(str(path))
    except ConfigError as exc:
        assert all(p.path.startswith("rules[0].action") for p in exc.problems)
    else:
        assert isinstance(ruleset, RuleSet)


def test_valid_file_with_every_section_loads(tmp_path):
    """A control case: the same kinds of values as above, but valid, load without problems."""
    text = Y(
        "version: 1",
        "name: full",
        "description: everything",
        "enabled: true",
        "trigger: {tokens_over: 100}",
        "budget: {min_cleared_tokens: 10, stop_at_tokens: 50}",
        "defaults:",
        '  placeholder: "[{tool_name}: {chars} chars]"',
        "  estimator: bytes4",
        "  over_budget_tokens: 1000",
        "error_when: {text: {regex: '^Error', ignore_case: true}}",
        "undeclared: keep",
        "tools:",
        '  "Todo*": {compact: false}',
        '  Read: {compact: true, placeholder: "[read {lines} lines]"}',
        "rules:",
        "  - name: keep-recent",
        "    match: {age: {unit: spans, lt: 3, among: {tool: Read}}}",
        "    action: keep",
        "  - name: strip",
        "    match: {all: [{role: assistant}, {has_tool_calls: true}]}",
        "    action:",
        "      strip-text: {keep_patterns: ['^Plan:'], keep_max_chars: 80, marker: '[thinking removed]'}",
        "  - name: big",
        "    match: {size: {unit: tokens, gt: 500}, where: \"args.path != null\"}",
        "    action:",
        "      - truncate: {head: 100, tail: 100, marker: '[{omitted} omitted]'}",
        "      - clear-inputs",
        "  - name: rest",
        "    match: {role: tool}",
        "    action: {placeholder: {text: '[{tool_name}]'}}",
    )
    path = tmp_path / "rules.yaml"
    path.write_text(text, encoding="utf-8")
    ruleset = load_rules(str(path))
    assert ruleset.name == "full"
    assert [r.name for r in ruleset.rules] == ["keep-recent", "strip", "big", "rest"]
    assert check_rules(str(path)) == []


def test_deeply_nested_yaml_is_a_located_error(tmp_path):
    """Nesting deeper than the recursion limit is reported as a problem, not a RecursionError."""
    path = tmp_path / "rules.yaml"
    path.write_text("version: 1\nname: x\nrules: " + "[" * 5000 + "]" * 5000 + "\n", encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_rules(str(path))
    assert info.value.problems
    assert all(p.file == str(path) and p.line >= 1 and p.col >= 1 for p in info.value.problems)


def test_rule_names_that_are_no_strings_are_schema_errors_not_a_crash():
    text = "version: 1\nname: g\nrules:\n  - {name: {}, match: {}, action: keep}\n  - {name: {}, match: {}, action: keep}\n"
    with pytest.raises(ConfigError) as info:
        parse_rules(text, "x.yaml")
    assert [str(p) for p in info.value.problems] == [
        "x.yaml:4:12: expected string, got a mapping {} (at rules[0].name)",
        "x.yaml:5:12: expected string, got a mapping {} (at rules[1].name)"]
