"""The bad-input catalogue: every case states its exact exit code and error line.

For each case the input files' bytes stay unchanged, no partial or temporary file is left,
and no traceback is printed.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import threading

import pytest

from rules_compact import Compactor, ConfigError, InputError, compact, documents, load_rules, parse_rules
from rules_compact.language import yamlsource
from rules_compact.cli import main

GOOD = json.dumps([{"role": "user", "content": "hi"},
                   {"role": "assistant", "content": None, "tool_calls": [
                       {"id": "c", "type": "function", "function": {"name": "bash", "arguments": "{}"}}]},
                   {"role": "tool", "tool_call_id": "c", "content": "x" * 2000}])
R = "version: 1\nname: r\nrules:\n  - name: a\n    match: {role: tool}\n    action: placeholder\n"

# (id, files to create, argv, exit code, the one line printed)
CASES = [
 ("missing-input", {}, ["apply", "nope.json"],
  2, 'rules-compact: error: nope.json: cannot read: No such file or directory'),
 ("directory-input", {"d/": None}, ["apply", "d"],
  2, 'rules-compact: error: d: is a directory, not a conversation file'),
 ("not-json", {"in.json": "hello"}, ["apply", "in.json"],
  2, 'rules-compact: error: in.json:1:1: invalid JSON: Expecting value'),
 ("truncated-json", {"in.json": GOOD[:40]}, ["apply", "in.json"],
  2, 'rules-compact: error: in.json:1:38: invalid JSON: Unterminated string starting at'),
 ("not-utf8", {"in.json": b'["\xff"]'}, ["apply", "in.json"],
  2, 'rules-compact: error: in.json: not UTF-8 text (bad byte at offset 2)'),
 ("empty-input", {"in.json": ""}, ["apply", "in.json"],
  2, 'rules-compact: error: in.json:1:1: invalid JSON: Expecting value'),
 ("top-level-string", {"in.json": '"text"'}, ["apply", "in.json"],
  2, "rules-compact: error: in.json: expected a list of messages or an object with a 'messages' list, got a string"),
 ("top-level-number", {"in.json": "42"}, ["apply", "in.json"],
  2, "rules-compact: error: in.json: expected a list of messages or an object with a 'messages' list, got a number"),
 ("top-level-null", {"in.json": "null"}, ["apply", "in.json"],
  2, "rules-compact: error: in.json: expected a list of messages or an object with a 'messages' list, got null"),
 ("object-without-messages", {"in.json": '{"model": "x"}'}, ["apply", "in.json"],
  2, "rules-compact: error: in.json: expected a list of messages or an object with a 'messages' list; the object has keys: model"),
 ("messages-not-a-list", {"in.json": '{"messages": "x"}'}, ["apply", "in.json"],
  2, "rules-compact: error: in.json: 'messages' must be a list, got a string"),
 ("list-of-numbers", {"in.json": "[1, 2]"}, ["apply", "in.json"],
  2, "rules-compact: error: in.json: a list whose items are neither messages nor a known log format: item 0 is not a message (an object with a string 'role')"),
 ("list-of-objects-without-role", {"in.json": '[{"a": 1}]'}, ["apply", "in.json"],
  2, "rules-compact: error: in.json: a list whose items are neither messages nor a known log format: item 0 is not a message (an object with a string 'role')"),
 ("role-not-a-string", {"in.json": '[{"role": 5}]'}, ["apply", "in.json"],
  2, "rules-compact: error: in.json: a list whose items are neither messages nor a known log format: item 0 is not a message (an object with a string 'role')"),
 # messages a model API would reject for their shape: a located error, not a silent pass-through
 ("tool-calls-not-a-list", {"in.json": '[{"role": "assistant", "content": "x", "tool_calls": 5}]'}, ["apply", "in.json"],
  2, "rules-compact: error: in.json: message 0: 'tool_calls' is a number, not a list"),
 ("arguments-not-a-string", {"in.json": json.dumps([{"role": "assistant", "content": None, "tool_calls": [
     {"id": "c", "type": "function", "function": {"name": "bash", "arguments": {"command": "ls"}}}]}])},
  ["apply", "in.json"],
  2, "rules-compact: error: in.json: message 0: tool call 0: 'function.arguments' is an object, not a JSON string"),
 # --- issue 29: integer tool-call ids (the APIs take strings) ---
 ("integer-call-id", {"in.json": json.dumps([{"role": "assistant", "content": None, "tool_calls": [
     {"id": 7, "type": "function", "function": {"name": "bash", "arguments": "{}"}}]}])}, ["apply", "in.json"],
  2, "rules-compact: error: in.json: message 0: tool call 0: 'id' is a number, not a string"),
 ("integer-tool-call-id", {"in.json": json.dumps([{"role": "user", "content": "go"}, {"role": "tool", "tool_call_id": 7, "content": "x"}])},
  ["apply", "in.json"],
  2, "rules-compact: error: in.json: message 1: 'tool_call_id' is a number, not a string"),
 ("integer-tool-use-id", {"in.json": json.dumps([{"role": "user", "content": "go"}, {"role": "assistant", "content": [
     {"type": "tool_use", "id": 7, "name": "bash", "input": {}}]}])}, ["stats", "in.json"],
  2, "rules-compact: error: in.json: message 1: content block 0: tool_use 'id' is a number, not a string"),
 ("integer-tool-result-id", {"in.json": json.dumps([{"role": "user", "content": [
     {"type": "tool_result", "tool_use_id": 7, "content": "x"}]}])}, ["explain", "in.json"],
  2, "rules-compact: error: in.json: message 0: content block 0: tool_result 'tool_use_id' is a number, not a string"),
 ("content-an-object", {"in.json": '[{"role": "user", "content": {"text": "hi"}}]'}, ["explain", "in.json"],
  2, "rules-compact: error: in.json: message 0: 'content' is an object, not a string, a list of parts or null"),
 ("unknown-role", {"in.json": '{"messages": [{"role": "user", "content": "hi"}, {"role": "robot", "content": "x"}]}'},
  ["stats", "in.json"],
  2, "rules-compact: error: in.json: message 1: unknown role 'robot'; allowed: system, developer, user, assistant, tool, function"),
 ("anthropic-content-an-object", {"in.json": json.dumps([
     {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": "x"}]},
     {"role": "assistant", "content": {"type": "text", "text": "hi"}}])}, ["apply", "in.json"],
  2, "rules-compact: error: in.json: message 1: 'content' is an object, not a string or a list of blocks"),
 ("unknown-format", {"in.json": GOOD}, ["apply", "in.json", "--format", "gemini"],
  2, "rules-compact apply: error: argument --format: invalid choice: 'gemini' (choose from 'anthropic', 'openai', 'responses') (see --help)"),
 ("explain-not-json", {"in.json": "{"}, ["explain", "in.json"],
  2, 'rules-compact: error: in.json:1:2: invalid JSON: Expecting property name enclosed in double quotes'),
 ("audit-wrong-type", {"in.json": "true"}, ["audit", "in.json"],
  2, "rules-compact: error: in.json: expected a list of messages or an object with a 'messages' list, got a boolean"),
 ("rules-yaml-syntax", {"in.json": GOOD, "r.yaml": "version: 1\nname: [x\n"}, ["apply", "in.json", "-r", "r.yaml"],
  1, "r.yaml:3:1: YAML error: while parsing a flow sequence; expected ',' or ']', but got '<stream end>'"),
 ("rules-tab-indent", {"in.json": GOOD, "r.yaml": "version: 1\nrules:\n\t- name: a\n"}, ["apply", "in.json", "-r", "r.yaml"],
  1, "r.yaml:3:1: YAML error: while scanning for the next token; found character '\\t' that cannot start any token (YAML does not allow tabs for indentation)"),
 ("rules-duplicate-key", {"in.json": GOOD, "r.yaml": "version: 1\nname: a\nname: b\nrules: []\n"}, ["validate", "r.yaml"],
  1, "r.yaml:3:1: duplicate key 'name' (first defined on line 2) (at name)"),
 ("rules-unknown-top-key", {"r.yaml": "version: 1\nname: a\nrulez: []\nrules: []\n"}, ["validate", "r.yaml"],
  1, "r.yaml:3:1: unknown key 'rulez'; allowed: budget, defaults, description, enabled, error_when, extends, name, plugin_tools, remove_rules, rules, step, store, tools, trigger, undeclared, version (at rulez)"),
 ("rules-unknown-matcher", {"r.yaml": R.replace("{role: tool}", "{rol: tool}")}, ["validate", "r.yaml"],
  1, "r.yaml:5:13: unknown key 'rol'; allowed: age, all, any, at_step_boundary, call_in_previous_assistant, compactable, compacted, dangling, declared, has_thinking, has_tool_calls, in_span, in_tail, is_error, not, observation, orphan, role, size, superseded, text, tool, where (at rules[0].match.rol)"),
 ("rules-unknown-action", {"r.yaml": R.replace("action: placeholder", "action: placehold")}, ["validate", "r.yaml"],
  1, "r.yaml:6:13: 'placehold' is not allowed; expected one of: keep, placeholder, truncate, strip-text, clear-inputs, cache-breakpoint (at rules[0].action)"),
 ("rules-wrong-type", {"r.yaml": R.replace("{role: tool}", "{size: {gt: big}}")}, ["validate", "r.yaml"],
  1, "r.yaml:5:24: expected integer, got a string 'big' (at rules[0].match.size.gt)"),
 ("rules-negative-number", {"r.yaml": R.replace("{role: tool}", "{size: {gt: -1}}")}, ["validate", "r.yaml"],
  1, 'r.yaml:5:24: expected a number >= 0, got -1 (at rules[0].match.size.gt)'),
 ("rules-missing-name", {"r.yaml": "version: 1\nrules: []\n"}, ["validate", "r.yaml"],
  1, "r.yaml:1:1: missing required key 'name'"),
 ("rules-version-2", {"r.yaml": "version: 2\nname: a\nrules: []\n"}, ["validate", "r.yaml"],
  1, 'r.yaml:1:10: expected 1, got 2 (at version)'),
 ("rules-bad-role", {"r.yaml": R.replace("{role: tool}", "{role: user}")}, ["validate", "r.yaml"],
  1, "r.yaml:5:19: 'user' is not allowed; expected one of: tool, assistant (at rules[0].match.role)"),
 ("rules-bad-jmespath", {"r.yaml": R.replace("{role: tool}", "{where: 'a b'}")}, ["validate", "r.yaml"],
  1, 'r.yaml:5:20: invalid JMESPath expression \'a b\': Unexpected token: b: Parse error at column 2, token "b" (UNQUOTED_IDENTIFIER) (at rules[0].match.where)'),
 ("rules-bad-regex", {"r.yaml": R.replace("{role: tool}", "{text: {regex: '(x'}}")}, ["validate", "r.yaml"],
  1, "r.yaml:5:27: invalid regex '(x': missing ), unterminated subpattern at position 0 (at rules[0].match.text.regex)"),
 ("rules-backreference", {"r.yaml": R.replace("{role: tool}", "{text: {regex: '(x)\\1'}}")}, ["validate", "r.yaml"],
  1, "r.yaml:5:27: invalid regex '(x)\\1': not supported by RE2, the linear-time engine rules run on: invalid escape sequence: \\1 (no backreferences or lookarounds; \\z ends the text) (at rules[0].match.text.regex)"),
 ("rules-regex-in-double-quotes", {"r.yaml": R.replace("{role: tool}", '{text: {regex: "\\d+ lines"}}')}, ["validate", "r.yaml"],
  1, "r.yaml:5:27: YAML error: while scanning a double-quoted scalar; found unknown escape character 'd'; in double quotes a backslash starts a YAML escape: write a regex in single quotes, where '\\d' stays as it is"),
 ("rules-unknown-template-variable", {"r.yaml": R.replace("action: placeholder", "action: {placeholder: '{tool}'}")}, ["validate", "r.yaml"],
  1, "r.yaml:6:27: unknown template variable {tool} in '{tool}'; allowed: {tool_name}, {tool_call_id}, {chars}, {bytes}, {tokens}, {lines}, {args}, {names}, {saved}, {saved_lines} (at rules[0].action.placeholder)"),
 ("rules-alias-bomb", {"r.yaml": "a: &a [x,x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: [*e,*e,*e,*e,*e,*e,*e,*e,*e,*e]\n"}, ["validate", "r.yaml"],
  1, 'r.yaml:1:1: aliases expand the document by more than 100000 nodes'),
 ("rules-python-object-tag", {"r.yaml": "version: 1\nname: !!python/object/apply:os.system ['true']\nrules: []\n"}, ["validate", "r.yaml"],
  1, "r.yaml:2:7: tag 'tag:yaml.org,2002:python/object/apply:os.system' is not allowed; rule files are plain data (at name)"),
 ("rules-oversized", {"r.yaml": "#" * (1024 * 1024 + 1)}, ["validate", "r.yaml"],
  1, 'r.yaml:1:1: rule file is 1048577 bytes, over the limit of 1048576 (RULES_COMPACT_MAX_RULES_BYTES)'),
 ("rules-empty", {"r.yaml": ""}, ["validate", "r.yaml"],
  1, 'r.yaml:1:1: empty rule file; expected a mapping with version, name and rules'),
 ("rules-json-list", {"r.yaml": "[1, 2]"}, ["validate", "r.yaml"],
  1, 'r.yaml:1:1: a rule file must be a mapping, got a list'),
 ("rules-not-utf8", {"r.yaml": b"name: \xff\n"}, ["validate", "r.yaml"],
  1, 'r.yaml:1:1: not UTF-8 text (bad byte at offset 6)'),
 ("rules-missing-file", {}, ["validate", "nope.yaml"],
  2, 'rules-compact: error: nope.yaml: cannot read rule file: No such file or directory'),
 ("rules-directory", {"d/": None}, ["validate", "d"],
  2, 'rules-compact: error: d: is a directory, not a rule file'),
 ("rules-unknown-preset", {"in.json": GOOD}, ["apply", "in.json", "-r", "preset:nope"],
  2, 'rules-compact: error: preset:nope: no such preset; available: default, default-recoverable, preset:anthropic-clear-thinking, preset:anthropic-clear-tool-uses, preset:count-triggered-prune, preset:default-recoverable, preset:keep-recent-results, preset:langchain-clear-tool-uses, preset:observation-masking, preset:opencode-prune, preset:read-time-spans, preset:strip-tool-turn-reasoning, preset:strip-tool-turn-reasoning-selective'),
 ("rules-extends-missing", {"r.yaml": "version: 1\nname: a\nextends: gone.yaml\n"}, ["validate", "r.yaml"],
  1, "r.yaml:3:10: cannot extend 'gone.yaml': gone.yaml: cannot read rule file: No such file or directory (at extends)"),
 ("rules-error-when-uses-is-error", {"r.yaml": "version: 1\nname: a\nerror_when: {is_error: true}\nrules: []\n"}, ["validate", "r.yaml"],
  1, 'r.yaml:3:13: error_when defines what an error is, so it cannot use is_error (at error_when)'),
 ("output-is-input", {"in.json": GOOD}, ["apply", "in.json", "-o", "in.json"],
  2, 'rules-compact: error: in.json: OUTPUT is the INPUT file; pass --in-place to overwrite it'),
 ("report-is-input", {"in.json": GOOD}, ["apply", "in.json", "--report", "in.json"],
  2, 'rules-compact: error: in.json: REPORT is the INPUT file'),
 ("output-in-missing-dir", {"in.json": GOOD}, ["apply", "in.json", "-o", "missing/out.json"],
  2, 'rules-compact: error: missing/out.json: cannot write: No such file or directory'),
 ("output-is-a-directory", {"in.json": GOOD, "d/": None}, ["apply", "in.json", "-o", "d"],
  2, 'rules-compact: error: d: cannot write: Is a directory'),
 ("in-place-with-output", {"in.json": GOOD}, ["apply", "in.json", "--in-place", "-o", "x.json"],
  2, 'rules-compact: error: --in-place needs a file INPUT and no -o'),
 ("in-place-stdin", {}, ["apply", "-", "--in-place"],
  2, 'rules-compact: error: --in-place needs a file INPUT and no -o'),
 # --- issue 19: values JSON does not allow, and what Python cannot write back ---
 ("integer-of-5000-digits", {"in.json": GOOD.replace('"hi"}', '"hi", "n": ' + "9" * 5000 + "}")}, ["apply", "in.json"],
  2, 'rules-compact: error: in.json:1:41: invalid JSON: an integer of 5000 digits; at most 4300 are allowed'),
 ("nan", {"in.json": GOOD.replace('"hi"}', '"hi", "n": NaN}')}, ["apply", "in.json"],
  2, 'rules-compact: error: in.json:1:41: invalid JSON: NaN is not a JSON value (JSON numbers are finite)'),
 ("infinity", {"in.json": GOOD.replace('"hi"}', '"hi", "n": -Infinity}')}, ["explain", "in.json"],
  2, 'rules-compact: error: in.json:1:41: invalid JSON: -Infinity is not a JSON value (JSON numbers are finite)'),
 ("float-beyond-range", {"in.json": GOOD.replace('"hi"}', '"hi", "n": 1e400}')}, ["apply", "in.json"],
  2, 'rules-compact: error: in.json:1:41: invalid JSON: 1e400 is too large for a 64-bit float (JSON numbers here must be finite)'),
 ("nan-in-jsonl", {"in.jsonl": '{"messages": [{"role": "user", "content": "a"}]}\n{"messages": [{"role": "user", "content": "NaN", "n": NaN}]}\n'}, ["apply", "in.jsonl"],
  2, 'rules-compact: error: in.jsonl:2:55: invalid JSON on this line of a JSONL file (one value per line): NaN is not a JSON value (JSON numbers are finite)'),
 # --- issue 19: rule files that are data but would cost like code ---
 ("where-800-parentheses", {"in.json": GOOD, "r.yaml": R.replace("{role: tool}", "{where: '" + "(" * 800 + "a" + ")" * 800 + "'}")}, ["validate", "r.yaml"],
  1, 'r.yaml:5:20: expected at most 1000 characters, got 1601 (at rules[0].match.where)'),
 ("where-nests-too-deeply", {"r.yaml": R.replace("{role: tool}", "{where: '" + "!" * 600 + "a'}")}, ["validate", "r.yaml"],
  1, 'r.yaml:5:20: JMESPath expression nests deeper than 100 levels (at rules[0].match.where)'),
 ("superseded-key-too-long", {"r.yaml": R.replace("{role: tool}", "{superseded: {key: '" + "a." * 600 + "a'}}")}, ["validate", "r.yaml"],
  1, 'r.yaml:5:31: expected at most 1000 characters, got 1201 (at rules[0].match.superseded.key)'),
 ("template-nested-field", {"in.json": GOOD, "r.yaml": R.replace("action: placeholder", "action: {placeholder: '{tool_name:>{chars}}'}")}, ["apply", "in.json", "-r", "r.yaml"],
  1, "r.yaml:6:27: {tool_name:>{chars}} in '{tool_name:>{chars}}': a format spec cannot hold a {variable} (at rules[0].action.placeholder)"),
 ("template-huge-width", {"in.json": GOOD, "r.yaml": R.replace("action: placeholder", "action: {placeholder: '{tool_name:>100000000}'}")}, ["apply", "in.json", "-r", "r.yaml"],
  1, "r.yaml:6:27: width 100000000 of {tool_name:>100000000} in '{tool_name:>100000000}' is over the limit of 100 (at rules[0].action.placeholder)"),
 ("template-huge-precision", {"r.yaml": R.replace("action: placeholder", "action: {truncate: {marker: '{omitted:.999f}'}}")}, ["validate", "r.yaml"],
  1, "r.yaml:6:33: precision 999 of {omitted:.999f} in '{omitted:.999f}' is over the limit of 100 (at rules[0].action.truncate.marker)"),
 ("template-too-long", {"r.yaml": R.replace("action: placeholder", "action: {placeholder: '" + "x" * 2001 + "'}")}, ["validate", "r.yaml"],
  1, "r.yaml:6:27: expected at most 2000 characters, got 2001 (at rules[0].action.placeholder)"),
 # --- issue 19: what the schema must reject as validate does ---
 ("size-without-bound", {"r.yaml": R.replace("{role: tool}", "{size: {unit: chars}}")}, ["validate", "r.yaml"],
  1, 'r.yaml:5:19: size needs at least one of gt, gte, lt, lte (at rules[0].match.size)'),
 ("age-without-bound", {"r.yaml": R.replace("{role: tool}", "{age: {unit: tool_results}}")}, ["validate", "r.yaml"],
  1, 'r.yaml:5:18: age needs at least one of gt, gte, lt, lte (at rules[0].match.age)'),
 ("among-with-unit-tool-calls", {"r.yaml": R.replace("{role: tool}", "{age: {unit: tool_calls, gt: 1, among: {}}}")}, ["validate", "r.yaml"],
  1, "r.yaml:5:51: 'among' needs unit tool_results, spans, user_turns or tokens, not 'tool_calls' (at rules[0].match.age.among)"),
 # --- issue 29: a cost that overflows a float (the table showed inf and nan, --json died) ---
 ("price-overflows", {"in.json": GOOD}, ["replay", "in.json", "--price", "1e308,1e308", "--json"],
  2, "rules-compact: error: --price '1e308,1e308': expected anthropic, anthropic-1h, openai, openai-legacy or "
     "CACHED,UNCACHED[,LIFETIME] such as 0.1,1.25 or 0.1,1.25,5m, prices from 0 to 1e+06"),
 # --- issue 19: outputs ---
 ("report-is-output", {"in.json": GOOD}, ["apply", "in.json", "-o", "x.json", "--report", "x.json"],
  2, 'rules-compact: error: x.json: REPORT is the OUTPUT file; give them different names'),
 # --- issue 29: no output is one of the command's inputs ---
 ("stats-table-is-input", {"in.json": GOOD}, ["stats", "in.json", "--table", "in.json"],
  2, 'rules-compact: error: in.json: --table is one of the INPUT files'),
 ("replay-table-in-input-folder", {"d/": None, "d/a.json": GOOD}, ["replay", "d", "--table", "d/a.json"],
  2, 'rules-compact: error: d/a.json: --table is one of the INPUT files'),
 ("diff-table-is-input", {"in.json": GOOD}, ["diff", "default", "default", "in.json", "--table", "./in.json"],
  2, 'rules-compact: error: ./in.json: --table is one of the INPUT files'),
 ("output-is-rule-file", {"in.json": GOOD, "r.yaml": R}, ["apply", "in.json", "-r", "r.yaml", "-o", "r.yaml"],
  2, 'rules-compact: error: r.yaml: OUTPUT is a rule file'),
 ("report-is-rule-file", {"in.json": GOOD, "r.yaml": R}, ["apply", "in.json", "-r", "r.yaml", "--report", "r.yaml"],
  2, 'rules-compact: error: r.yaml: REPORT is a rule file'),
 ("output-is-extended-rule-file", {"in.json": GOOD, "base.yaml": R, "r.yaml": "version: 1\nname: c\nextends: base.yaml\n"},
  ["apply", "in.json", "-r", "r.yaml", "-o", "base.yaml"],
  2, 'rules-compact: error: base.yaml: OUTPUT is a rule file'),
 ("table-is-rule-file", {"in.json": GOOD, "r.yaml": R}, ["stats", "in.json", "-r", "r.yaml", "--table", "r.yaml"],
  2, 'rules-compact: error: r.yaml: --table is a rule file'),
 ("table-is-compared-rule-file", {"in.json": GOOD, "r.yaml": R}, ["replay", "in.json", "--compare", "r.yaml", "--table", "r.yaml"],
  2, 'rules-compact: error: r.yaml: --table is a rule file'),
 ("diff-table-is-new-rule-file", {"in.json": GOOD, "r.yaml": R}, ["diff", "default", "r.yaml", "in.json", "--table", "r.yaml"],
  2, 'rules-compact: error: r.yaml: --table is a rule file'),
 ("extends-a-url", {"r.yaml": "version: 1\nname: a\nextends: https://example.com/x\n"}, ["validate", "r.yaml"],
  1, "r.yaml:3:10: cannot extend 'https://example.com/x': URLs are not supported; give a path, 'default' or 'preset:NAME' (at extends)"),
]

LIMIT_MESSAGE = ("rules-compact: error: {var}={value!r}: expected a whole number of bytes from 1 to 1 TiB, optionally "
                 "ending in K, M or G (KiB, MiB, GiB), such as 256M; the default is {default}")
for _var, _argv, _default in [("RULES_COMPACT_MAX_INPUT_BYTES", ["apply", "in.json"], "256M"),
                              ("RULES_COMPACT_MAX_RULES_BYTES", ["validate", "default"], "1M")]:
    for _value in ["abc", "1e6", "", "99999999999999999999999", "0", "-5", "512MB"]:
        CASES.append((f"{_var.lower()}={_value!r}", {"in.json": GOOD, "env": {_var: _value}}, _argv,
                      2, LIMIT_MESSAGE.format(var=_var, value=_value, default=_default)))

def snapshot(folder):
    return {os.path.relpath(os.path.join(root, f), folder): open(os.path.join(root, f), "rb").read()
            for root, _, files in os.walk(folder) for f in files}


@pytest.mark.parametrize("files,argv,code,line", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input(tmp_path, monkeypatch, capsys, files, argv, code, line):
    monkeypatch.chdir(tmp_path)
    for name, value in files.get("env", {}).items():
        monkeypatch.setenv(name, value)
    for name, content in files.items():
        if name == "env":
            continue
        if name.endswith("/"):
            os.mkdir(name[:-1])
        else:
            with open(name, "wb" if isinstance(content, bytes) else "w") as fh:
                fh.write(content)
    before = snapshot(tmp_path)
    try:
        got = main(argv)
    except SystemExit as exc:
        got = exc.code
    out, err = capsys.readouterr()
    printed = (err or out).replace(str(tmp_path) + os.sep, "")
    assert (got, printed.rstrip("\n").split("\n")) == (code, [line])
    assert "Traceback" not in out + err
    assert snapshot(tmp_path) == before  # inputs unchanged, no partial or temporary output


def test_the_catalogue_is_large_enough():
    assert len(CASES) >= 40


# --- issue 19: inputs that are valid but used to fail or come out wrong ------------------------------

def run(argv, tmp_path, monkeypatch, capsys):
    """``main(argv)`` in ``tmp_path``: (exit code, stdout, stderr), stderr with the folder dropped."""
    monkeypatch.chdir(tmp_path)
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err.replace(str(tmp_path) + os.sep, "")


SURROGATES = json.dumps([{"role": "user", "content": "a \ud800 b"},
                         {"role": "assistant", "content": None, "tool_calls": [
                             {"id": "c\udc00", "type": "function", "function": {"name": "ba\ud800sh", "arguments": "{}"}}]},
                         {"role": "tool", "tool_call_id": "c\udc00", "content": "x\ud800" * 2000}])  # ASCII: \ud800 escapes


@pytest.mark.parametrize("argv", [["apply", "in.json"], ["apply", "in.json", "-o", "out.json", "--report", "r.json"],
                                  ["apply", "in.jsonl"], ["explain", "in.json"], ["audit", "in.json"]],
                         ids=["stdout", "files", "jsonl", "explain", "audit"])
def test_lone_surrogate_escapes_are_written_as_escapes(tmp_path, monkeypatch, capsys, argv):
    (tmp_path / "in.json").write_text(SURROGATES, encoding="utf-8")
    (tmp_path / "in.jsonl").write_text(f'{{"messages": {SURROGATES}}}\n{{"messages": {SURROGATES}}}\n', encoding="utf-8")
    code, out, err = run(argv, tmp_path, monkeypatch, capsys)
    assert code == 0, err
    written = out if "-o" not in argv else (tmp_path / "out.json").read_bytes().decode("utf-8")  # strict UTF-8
    out.encode("utf-8")
    if argv[0] == "apply":
        lines = written.splitlines() if argv[1] == "in.jsonl" else [written]
        for text in lines:
            data = json.loads(text)
            messages = data["messages"] if isinstance(data, dict) else data
            assert messages[0]["content"] == "a \ud800 b" and "\\ud800" in text  # as read: an escape
            assert messages[1]["tool_calls"][0]["id"] == "c\udc00"
    else:
        assert "ba\\ud800sh" in out


def test_full_disk_on_stdout(tmp_path):
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    (tmp_path / "in.json").write_text(GOOD, encoding="utf-8")
    for command in (["apply", "in.json"], ["explain", "in.json"]):
        with open("/dev/full", "w") as full:
            done = subprocess.run([sys.executable, "-m", "rules_compact", *command], cwd=tmp_path, stdout=full,
                                  stderr=subprocess.PIPE, text=True)
        assert (done.returncode, done.stderr) == (
            2, "rules-compact: error: cannot write the output: No space left on device\n")
    assert sorted(os.listdir(tmp_path)) == ["in.json"]


def test_output_through_a_symlink_replaces_its_target(tmp_path, monkeypatch, capsys):
    (tmp_path / "in.json").write_text(GOOD, encoding="utf-8")
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "out.json").write_text("old", encoding="utf-8")
    (tmp_path / "link.json").symlink_to("real/out.json")
    code, _, err = run(["apply", "in.json", "-o", "link.json", "--report", "link-report.json"],
                       tmp_path, monkeypatch, capsys)
    assert code == 0, err
    assert os.readlink(tmp_path / "link.json") == "real/out.json"
    assert json.loads((tmp_path / "real" / "out.json").read_text(encoding="utf-8"))[2]["content"] == "x" * 2000
    assert sorted(os.listdir(tmp_path / "real")) == ["out.json"]  # no temp file left beside the target


def test_in_place_through_a_symlink_keeps_the_link(tmp_path, monkeypatch, capsys):
    big = json.loads(GOOD)
    big += [json.loads(GOOD)[1] | {"tool_calls": [{"id": f"c{i}", "type": "function",
                                                   "function": {"name": "bash", "arguments": "{}"}}]}
            for i in range(12)]
    (tmp_path / "conv.json").write_text(json.dumps(big), encoding="utf-8")
    (tmp_path / "link.json").symlink_to("conv.json")
    code, _, err = run(["apply", "link.json", "--in-place"], tmp_path, monkeypatch, capsys)
    assert code == 0, err
    assert (tmp_path / "link.json").is_symlink()
    assert json.loads((tmp_path / "conv.json").read_text(encoding="utf-8")) == json.loads(
        (tmp_path / "link.json").read_text(encoding="utf-8"))
    assert sorted(os.listdir(tmp_path)) == ["conv.json", "link.json"]


def test_output_to_a_pipe_is_written_not_replaced(tmp_path, monkeypatch, capsys):
    (tmp_path / "in.json").write_text(GOOD, encoding="utf-8")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    received = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()), daemon=True)
    reader.start()
    code, _, err = run(["apply", "in.json", "-o", "fifo"], tmp_path, monkeypatch, capsys)
    reader.join(10)
    assert code == 0, err
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert json.loads(received[0]) == json.loads(GOOD)
    assert sorted(os.listdir(tmp_path)) == ["fifo", "in.json"]


@pytest.mark.parametrize("name,minor,code,line", [
    ("null", 3, 0, "rules-compact: 0 items changed; 2,008 -> 2,008 chars; 503 -> 503 estimated tokens (+0.0%); "
                 "no step boundary yet: nothing decided"),
    ("full", 7, 2, "rules-compact: error: full: cannot write: No space left on device")], ids=["null", "full"])
def test_output_to_a_device_is_written_not_replaced(tmp_path, monkeypatch, capsys, name, minor, code, line):
    """As root, ``-o /dev/full`` once replaced the device with a regular file. The devices here
    are made in the test's folder (never /dev's own: a regression would replace them)."""
    (tmp_path / "in.json").write_text(GOOD, encoding="utf-8")
    device = tmp_path / name
    try:
        os.mknod(device, stat.S_IFCHR | 0o666, os.makedev(1, minor))
    except (PermissionError, AttributeError):
        pytest.skip("making a device node needs root")
    got, _, err = run(["apply", "in.json", "-o", name], tmp_path, monkeypatch, capsys)
    assert (got, err.splitlines()) == (code, [line])
    assert stat.S_ISCHR(os.lstat(device).st_mode)
    assert sorted(os.listdir(tmp_path)) == sorted(["in.json", name])


def _conversation(results: int) -> str:
    messages = [{"role": "user", "content": "go"}]
    for i in range(results):
        messages += [{"role": "assistant", "content": None, "tool_calls": [
                         {"id": f"c{i}", "type": "function", "function": {"name": "bash", "arguments": "{}"}}]},
                     {"role": "tool", "tool_call_id": f"c{i}", "content": f"output {i} " * 400}]
    return json.dumps(messages)


def test_sigterm_during_in_place_leaves_no_temp_file(tmp_path, monkeypatch, capsys):
    """SIGTERM arriving while the result is written is handled like Ctrl-C: exit 143, the input
    untouched, no temp file."""
    text = _conversation(30)
    (tmp_path / "conv.json").write_text(text, encoding="utf-8")
    real_replace = os.replace

    def replace_after_sigterm(src, dst):
        os.kill(os.getpid(), signal.SIGTERM)  # the handler runs here, before the rename
        real_replace(src, dst)

    monkeypatch.setattr(documents.os, "replace", replace_after_sigterm)
    handler = signal.getsignal(signal.SIGTERM)
    code, _, _ = run(["apply", "conv.json", "--in-place"], tmp_path, monkeypatch, capsys)
    assert code == 128 + signal.SIGTERM
    assert (tmp_path / "conv.json").read_text(encoding="utf-8") == text
    assert sorted(os.listdir(tmp_path)) == ["conv.json"]
    assert signal.getsignal(signal.SIGTERM) is handler  # main put it back


KILLED_WRITE = """
import os, signal, sys
from rules_compact import documents
os.replace = lambda src, dst: os.kill(os.getpid(), signal.SIGKILL)
documents.write_atomic(sys.argv[1], "partial")
"""


def test_a_killed_runs_temp_file_is_removed_by_the_next_run(tmp_path, monkeypatch, capsys):
    """SIGKILL cannot be handled: the next write of the same file removes the temp file left."""
    text = _conversation(30)
    (tmp_path / "conv.json").write_text(text, encoding="utf-8")
    killed = subprocess.run([sys.executable, "-c", KILLED_WRITE, "conv.json"], cwd=tmp_path)
    assert killed.returncode == -signal.SIGKILL
    left = [n for n in os.listdir(tmp_path) if n != "conv.json"]
    assert len(left) == 1 and left[0].startswith(".conv.json.") and left[0].endswith(".tmp")
    (tmp_path / ".conv.json.1.notours.tmp").write_text("not named as write_atomic names", encoding="utf-8")
    code, _, err = run(["apply", "conv.json", "--in-place"], tmp_path, monkeypatch, capsys)
    assert code == 0, err
    assert sorted(os.listdir(tmp_path)) == [".conv.json.1.notours.tmp", "conv.json"]
    assert (tmp_path / "conv.json").read_text(encoding="utf-8") != text


def test_the_alias_cap_counts_what_aliases_add_not_the_nodes_written(monkeypatch):
    """10,000 rules once failed with 'too many aliases?': the cap counted every node."""
    monkeypatch.setattr(yamlsource, "MAX_ALIAS_NODES", 50)
    many = "".join(f"  - name: r{i}\n    match: {{role: tool, size: {{gt: {i}}}}}\n    action: keep\n"
                   for i in range(40))  # 40 rules: over 200 nodes, no alias
    assert len(load_rules(f"version: 1\nname: many\nrules:\n{many}").rules) == 40
    bomb = "version: 1\nname: b\ndescription: x\nx: &a [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\ny: [*a, *a, *a, *a, *a, *a]\n"
    with pytest.raises(ConfigError) as info:
        load_rules(bomb)
    assert [str(p) for p in info.value.problems] == ["<string>:1:1: aliases expand the document by more than 50 nodes"]


@pytest.mark.parametrize("argv", [["apply", "in.json", "-r", "/dev/zero"], ["validate", "r.yaml"]],
                         ids=["rules", "extends"])
def test_rules_from_dev_zero(tmp_path, argv):
    """``-r /dev/zero`` and ``extends: /dev/zero`` passed the size check (st_size is 0), then read
    until a MemoryError; run with 1 GiB of address space, so that a regression cannot take more."""
    if not os.path.exists("/dev/zero"):
        pytest.skip("no /dev/zero")
    resource = pytest.importorskip("resource")
    (tmp_path / "in.json").write_text(GOOD, encoding="utf-8")
    (tmp_path / "r.yaml").write_text("version: 1\nname: a\nextends: /dev/zero\n", encoding="utf-8")
    before = snapshot(tmp_path)
    done = subprocess.run([sys.executable, "-m", "rules_compact", *argv], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120,
                          preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30)))
    assert (done.returncode, done.stdout + done.stderr) == (  # validate prints problems on stdout
        1, "/dev/zero:1:1: rule file is over the limit of 1048576 bytes (RULES_COMPACT_MAX_RULES_BYTES)\n")
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("source", ["/dev/zero", "-"], ids=["dev-zero", "stdin"])
def test_input_past_the_limit_is_read_at_most_one_byte_past_it(tmp_path, source):
    """A conversation from /dev/zero or an endless pipe stops at the input limit, in 256 MiB of
    address space (a read of limit + 1 bytes at once would not fit twice)."""
    if not os.path.exists("/dev/zero"):
        pytest.skip("no /dev/zero")
    resource = pytest.importorskip("resource")
    env = {**os.environ, "RULES_COMPACT_MAX_INPUT_BYTES": str(64 << 20)}
    with open("/dev/zero", "rb") as zeros:
        done = subprocess.run([sys.executable, "-m", "rules_compact", "stats", source], cwd=tmp_path, env=env,
                              stdin=zeros, capture_output=True, text=True, timeout=120,
                              preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (3 << 28, 3 << 28)))
    name = "/dev/zero" if source != "-" else "-"
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines()[0] == (f"rules-compact: error: {name}: input is over the limit of {64 << 20} "
                                          "bytes (RULES_COMPACT_MAX_INPUT_BYTES)")


def test_a_conversation_file_is_read_in_one_read_of_its_size(tmp_path, monkeypatch):
    """Not one read of the limit (256 MiB), which allocates that much before the file is read."""
    from rules_compact import documents

    sizes = []
    real_open = open

    class Recording:
        def __init__(self, fh):
            self.fh = fh

        def read(self, n=-1):
            sizes.append(n)
            return self.fh.read(n)

        def fileno(self):
            return self.fh.fileno()

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.fh.close()

    (tmp_path / "in.json").write_text(GOOD, encoding="utf-8")
    monkeypatch.setattr(documents, "open", lambda *a, **k: Recording(real_open(*a, **k)), raising=False)
    assert documents.read_conversations_from(str(tmp_path / "in.json"))
    assert sizes == [len(GOOD.encode()) + 1, 16 << 20]  # its size and one byte; then the end of the file


def test_rule_files_are_read_at_most_one_byte_past_the_limit(tmp_path, monkeypatch):
    path = tmp_path / "big.yaml"
    path.write_text("#" * 5000, encoding="utf-8")
    monkeypatch.setenv("RULES_COMPACT_MAX_RULES_BYTES", "1K")
    asked = []
    real_open = open

    class Counting:
        def __init__(self, fh):
            self.fh = fh

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.fh.close()

        def read(self, n=-1):
            asked.append(n)
            return self.fh.read(n)

        def fileno(self):
            return self.fh.fileno()

    monkeypatch.setattr("builtins.open", lambda file, mode="r", *a, **k: Counting(real_open(file, mode, *a, **k))
                        if str(file) == str(path) else real_open(file, mode, *a, **k))
    with pytest.raises(ConfigError) as info:
        load_rules(str(path))
    assert asked == [1025]
    assert str(info.value) == f"{path}:1:1: rule file is 5000 bytes, over the limit of 1024 (RULES_COMPACT_MAX_RULES_BYTES)"


# --- issue 19: the Python API raises only the documented errors ------------------------------------

MESSAGES = json.loads(GOOD)


def _anthropic(tool_input) -> list:
    turn = lambda cid: [{"role": "assistant", "content": [{"type": "tool_use", "id": cid, "name": "Read",
                                                           "input": tool_input}]},
                        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": cid,
                                                      "content": "x" * 3000}]}]
    return [{"role": "user", "content": "hi"}, *turn("t1"), *turn("t2")]


SUPERSEDED = "version: 1\nname: s\nrules:\n  - name: a\n    match: {superseded: {key: '@'}}\n    action: placeholder\n"

API_CASES = [
 ("rules-is-an-int", lambda: compact(MESSAGES, rules=5), InputError,
  "rules must be a RuleSet, a path, 'default', 'preset:NAME', rule-file text or a list of those, or None for the "
  "default; got int 5"),
 ("rules-list-holds-none", lambda: compact(MESSAGES, rules=[None]), InputError,
  "rules[0] must be a RuleSet, a path, 'default', 'preset:NAME' or rule-file text; got None"),
 ("rules-are-bytes", lambda: compact(MESSAGES, rules=b"default"), InputError,
  "rules must be a RuleSet, a path, 'default', 'preset:NAME', rule-file text or a list of those, or None for the "
  "default; got bytes b'default'"),
 ("compactor-rules-is-a-dict", lambda: Compactor({"version": 1}), InputError,
  "rules must be a RuleSet, a path, 'default', 'preset:NAME', rule-file text or a list of those, or None for the "
  "default; got dict {'version': 1}"),
 ("load-rules-none", lambda: load_rules(None), InputError,
  "rules must be a path, 'default', 'preset:NAME' or rule-file text, got None"),
 ("load-rules-nul-in-path", lambda: load_rules("a\0b.yaml"), InputError,
  "a\0b.yaml: cannot read rule file: embedded null byte"),
 ("parse-rules-lone-surrogate", lambda: parse_rules('version: 1\nname: "a\ud800"\nrules: []\n'), ConfigError,
  "<string>:2:9: YAML error: character 0xd800 is not allowed in YAML text"),
 ("parse-rules-bytes", lambda: parse_rules(b"version: 1\n"), InputError,
  "parse_rules takes the rule file's text as a str, got bytes b'version: 1\\n'; decode it, or pass its path to "
  "load_rules"),
 ("set-in-a-tool-input", lambda: compact(_anthropic({"paths": {"a", "b"}})), InputError,
  "message 1: not JSON data: Object of type set is not JSON serializable"),
 ("huge-int-in-a-tool-input", lambda: compact(_anthropic({"n": 10 ** 5000})), InputError,
  "message 1: not JSON data: an integer of more than 4300 digits"),
 ("huge-int-in-a-later-round", lambda: Compactor()(_anthropic({"n": 1})[:3])
  and Compactor()(_anthropic({"n": 1}) + _anthropic({"n": 10 ** 5000})[1:]), InputError,
  "message 5: not JSON data: an integer of more than 4300 digits"),
 ("integer-keys-in-superseded", lambda: compact(_anthropic({1: "a", "b": 2}), parse_rules(SUPERSEDED)), InputError,
  "tool call 't2' (Read): its arguments are not JSON data: a mapping's keys are not all strings"),
]


@pytest.mark.parametrize("call,error,message", [c[1:] for c in API_CASES], ids=[c[0] for c in API_CASES])
def test_api_raises_documented_errors(call, error, message):
    with pytest.raises(error) as info:
        call()
    assert str(info.value) == message


def test_limits_are_read_when_used_and_take_a_suffix(tmp_path, monkeypatch, capsys):
    """``RULES_COMPACT_MAX_INPUT_BYTES=512M rules-compact --version`` once ended in a traceback."""
    monkeypatch.setenv("RULES_COMPACT_MAX_INPUT_BYTES", "512M")
    assert run(["--version"], tmp_path, monkeypatch, capsys)[:2] == (0, "rules-compact 0.1.0\n")
    monkeypatch.setenv("RULES_COMPACT_MAX_INPUT_BYTES", "abc")  # not read: --version needs no input
    assert run(["--version"], tmp_path, monkeypatch, capsys)[0] == 0
    (tmp_path / "in.json").write_text(GOOD, encoding="utf-8")
    monkeypatch.setenv("RULES_COMPACT_MAX_INPUT_BYTES", "2k")
    code, _, err = run(["apply", "in.json"], tmp_path, monkeypatch, capsys)
    assert (code, err) == (2, "rules-compact: error: in.json: input is over the limit of 2048 bytes "
                              "(RULES_COMPACT_MAX_INPUT_BYTES)\n")
    monkeypatch.setenv("RULES_COMPACT_MAX_INPUT_BYTES", " 3K ")
    assert run(["apply", "in.json"], tmp_path, monkeypatch, capsys)[0] == 0


# --- issue 29: outputs that are inputs, closed standard streams, special files, limits on every read ---

def test_an_output_linked_to_an_input_is_refused(tmp_path, monkeypatch, capsys):
    """The same file by another name: a hard link (the same inode), a symlink (the same resolved path)."""
    (tmp_path / "in.json").write_text(GOOD, encoding="utf-8")
    (tmp_path / "r.yaml").write_text(R, encoding="utf-8")
    os.link(tmp_path / "in.json", tmp_path / "hard.json")
    os.link(tmp_path / "r.yaml", tmp_path / "hard.yaml")
    (tmp_path / "soft.json").symlink_to("in.json")
    before = snapshot(tmp_path)
    for argv, line in [
            (["apply", "in.json", "--report", "hard.json"], "hard.json: REPORT is the INPUT file"),
            (["apply", "in.json", "-r", "r.yaml", "-o", "hard.yaml"], "hard.yaml: OUTPUT is a rule file"),
            (["stats", "in.json", "--table", "soft.json"], "soft.json: --table is one of the INPUT files"),
            (["replay", "hard.json", "--table", "in.json", "--jobs", "1"], "in.json: --table is one of the INPUT files")]:
        code, out, err = run(argv, tmp_path, monkeypatch, capsys)
        assert (code, out, err) == (2, "", f"rules-compact: error: {line}\n"), argv
    assert snapshot(tmp_path) == before


PLUGIN = """
from rules_compact.plugins import hookimpl

@hookimpl
def rules_compact_tools():
    return [{"name": "probe", "compact": False}]
"""


def test_an_output_that_is_a_plugins_file_is_refused(tmp_path, monkeypatch, capsys):
    import importlib.util

    from rules_compact.plugins import use_plugins

    (tmp_path / "in.json").write_text(GOOD, encoding="utf-8")
    (tmp_path / "probe_plugin.py").write_text(PLUGIN, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("probe_plugin", tmp_path / "probe_plugin.py")
    plugin = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(plugin)
    with use_plugins([plugin]):
        code, _, err = run(["apply", "in.json", "-o", "probe_plugin.py"], tmp_path, monkeypatch, capsys)
    assert (code, err) == (2, "rules-compact: error: probe_plugin.py: OUTPUT is a plugin's file\n")
    assert (tmp_path / "probe_plugin.py").read_text(encoding="utf-8") == PLUGIN


def _closed(fd: int):
    return lambda: os.close(fd)


STREAM_COMMANDS = ["apply", "explain", "stats", "replay", "audit"]


@pytest.mark.parametrize("command", STREAM_COMMANDS)
def test_reading_a_closed_stdin_is_one_line(tmp_path, command):
    """``rules-compact apply - <&-``: Python's stdin is None; it was an AttributeError."""
    done = subprocess.run([sys.executable, "-m", "rules_compact", command, "-"], cwd=tmp_path, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=120, preexec_fn=_closed(0))
    assert (done.returncode, done.stdout, done.stderr) == (2, "", "rules-compact: error: -: cannot read: stdin is closed\n")


@pytest.mark.parametrize("command", STREAM_COMMANDS)
def test_writing_to_a_closed_stdout_is_one_line(tmp_path, command):
    """``rules-compact stats in.json >&-``: Python's stdout is None; it was an AttributeError."""
    (tmp_path / "in.json").write_text(GOOD, encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "rules_compact", command, "in.json"], cwd=tmp_path,
                          stderr=subprocess.PIPE, text=True, timeout=120, preexec_fn=_closed(1))
    assert (done.returncode, done.stderr) == (2, "rules-compact: error: cannot write the output: stdout is closed\n")
    assert sorted(os.listdir(tmp_path)) == ["in.json"]


def test_a_command_that_needs_no_stdout_runs_with_it_closed(tmp_path):
    (tmp_path / "in.json").write_text(GOOD, encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "rules_compact", "apply", "in.json", "-o", "out.json"], cwd=tmp_path,
                          stderr=subprocess.PIPE, text=True, timeout=120, preexec_fn=_closed(1))
    assert done.returncode == 0, done.stderr
    assert json.loads((tmp_path / "out.json").read_text(encoding="utf-8")) == json.loads(GOOD)


def test_in_place_on_a_fifo_is_refused(tmp_path):
    """It read the FIFO, then blocked forever writing back to it (a subprocess, so that a
    regression fails on the timeout instead of hanging)."""
    os.mkfifo(tmp_path / "fifo.json")
    done = subprocess.run([sys.executable, "-m", "rules_compact", "apply", "fifo.json", "--in-place"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout, done.stderr) == (
        2, "", "rules-compact: error: fifo.json: is a FIFO, not a regular file; --in-place rewrites only a regular file\n")


def test_known_tools_from_dev_zero(tmp_path):
    """``validate --known-tools /dev/zero`` read 3.9 GB, then died of a MemoryError; run with
    1 GiB of address space, so that a regression cannot take more."""
    if not os.path.exists("/dev/zero"):
        pytest.skip("no /dev/zero")
    resource = pytest.importorskip("resource")
    done = subprocess.run([sys.executable, "-m", "rules_compact", "validate", "default", "--known-tools", "/dev/zero"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30)))
    assert (done.returncode, done.stdout, done.stderr) == (
        2, "", "rules-compact: error: /dev/zero: the known tools are over the limit of 1048576 bytes "
               "(RULES_COMPACT_MAX_RULES_BYTES)\n")


def test_a_golden_case_past_the_input_limit_is_refused(tmp_path, monkeypatch):
    from rules_compact.testing import run_golden_case

    case = tmp_path / "case.yaml"
    case.write_text("format: openai\nmessages: []\n" + "#" * 3000 + "\n", encoding="utf-8")
    monkeypatch.setenv("RULES_COMPACT_MAX_INPUT_BYTES", "2K")
    with pytest.raises(AssertionError) as info:
        run_golden_case(case)
    assert str(info.value) == f"{case}: golden case is over the limit of 2048 bytes (RULES_COMPACT_MAX_INPUT_BYTES)"


# --- issue 29: tool arguments as deep as the reader reads (walks over values are loops) --------------

CLEAR_INPUTS = ("version: 1\nname: ci\nrules:\n  - name: clear\n    match: {role: tool, age: {unit: tool_results, gte: 1}}\n"
                "    action: [{clear-inputs: {longer_than: 200}}, placeholder]\n")


def nested_text(depth: int, leaf: str) -> str:
    """JSON text of ``leaf`` nested ``depth`` levels deep (json.dumps would recurse)."""
    return '{"a": ' * depth + json.dumps(leaf) + "}" * depth


def deep_session(fmt: str, depth: int, calls: int = 30) -> str:
    """``calls`` Write calls whose arguments nest ``depth`` levels around a 300-character string."""
    msgs: list = [{"role": "user", "content": "go"}]
    for i in range(calls):
        if fmt == "anthropic":
            msgs += [{"role": "assistant", "content": [{"type": "tool_use", "id": f"t{i}", "name": "Write", "input": "@"}]},
                     {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{i}", "content": "ok " * 2000}]}]
        else:
            msgs += [{"role": "assistant", "content": None, "tool_calls": [
                         {"id": f"t{i}", "type": "function", "function": {"name": "Write", "arguments": "@"}}]},
                     {"role": "tool", "tool_call_id": f"t{i}", "content": "ok " * 2000}]
    msgs.append({"role": "assistant", "content": "done"})
    parts = json.dumps(msgs).split('"@"')
    args = [nested_text(depth, f"{i}" + "x" * 300) for i in range(calls)]
    if fmt == "openai":
        args = [json.dumps(a) for a in args]
    return "".join(p + (args[i] if i < calls else "") for i, p in enumerate(parts))


def _apply(tmp_path, capsys, text: str, *argv: str) -> tuple[int, str, str]:
    (tmp_path / "in.json").write_text(text)
    code = main(["apply", str(tmp_path / "in.json"), "-o", str(tmp_path / "out.json"), *argv])
    out, err = capsys.readouterr()
    return code, err, (tmp_path / "out.json").read_text() if code == 0 else ""


@pytest.mark.parametrize("fmt", ["anthropic", "openai"])
def test_arguments_500_deep_are_cleared_by_the_default(tmp_path, capsys, fmt):
    """clear-inputs (shorten_values) walked two frames a level, recall one: RecursionError at 500."""
    code, err, out = _apply(tmp_path, capsys, deep_session(fmt, 500))
    assert (code, "Traceback" in err) == (0, False)
    assert out.count("lines cleared") >= 15
    assert main(["replay", str(tmp_path / "in.json")]) == 0  # and reference recall reads the values in a loop


@pytest.mark.parametrize("fmt", ["anthropic", "openai"])
def test_arguments_as_deep_as_the_reader_reads_are_compacted(tmp_path, capsys, fmt):
    """The deepest input the reader accepts (found by bisection) is compacted: no RecursionError
    anywhere after it, only the reader's own clean refusal one level deeper."""
    (tmp_path / "ci.yaml").write_text(CLEAR_INPUTS)
    low, high = 100, 1100  # accepted, refused
    while high - low > 1:
        mid = (low + high) // 2
        code, err, _ = _apply(tmp_path, capsys, deep_session("anthropic", mid, calls=3), "-r", str(tmp_path / "ci.yaml"))
        assert code in (0, 2) and "Traceback" not in err
        low, high = (mid, high) if code == 0 else (low, mid)
    assert "JSON nests too deeply" in err or code == 0
    code, err, out = _apply(tmp_path, capsys, deep_session(fmt, low), "-r", str(tmp_path / "ci.yaml"))
    assert (code, "Traceback" in err) == (0, False)
    assert out.count("lines cleared") == 29


def test_arguments_text_deeper_than_python_parses_is_left_as_it_is(tmp_path, capsys):
    """An OpenAI ``arguments`` string can nest any depth: too deep to parse, it is not JSON data
    to shorten, and is left as it is."""
    (tmp_path / "ci.yaml").write_text(CLEAR_INPUTS)
    code, err, out = _apply(tmp_path, capsys, deep_session("openai", 5000, calls=3), "-r", str(tmp_path / "ci.yaml"))
    assert (code, "Traceback" in err) == (0, False)
    assert json.loads(out)[1]["tool_calls"][0]["function"]["arguments"].startswith('{"a": {"a": ')
