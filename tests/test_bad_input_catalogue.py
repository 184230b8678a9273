"""The bad-input catalogue: every case states its exact exit code and error line.

For each case the input files' bytes stay unchanged, no partial or temporary file is left,
and no traceback is printed.
"""

from __future__ import annotations

import json
import os

import pytest

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
  1, "r.yaml:3:1: unknown key 'rulez'; allowed: budget, defaults, description, enabled, error_when, extends, name, remove_rules, rules, step, tools, trigger, undeclared, version (at rulez)"),
 ("rules-unknown-matcher", {"r.yaml": R.replace("{role: tool}", "{rol: tool}")}, ["validate", "r.yaml"],
  1, "r.yaml:5:13: unknown key 'rol'; allowed: age, all, any, at_step_boundary, call_in_previous_assistant, compactable, compacted, dangling, has_thinking, has_tool_calls, in_span, in_tail, is_error, not, orphan, role, size, superseded, text, tool, where (at rules[0].match.rol)"),
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
  1, "r.yaml:5:27: invalid regex '(x)\\\\1': not supported by RE2, the linear-time engine rules run on: invalid escape sequence: \\1 (no backreferences or lookarounds; \\z ends the text) (at rules[0].match.text.regex)"),
 ("rules-unknown-template-variable", {"r.yaml": R.replace("action: placeholder", "action: {placeholder: '{tool}'}")}, ["validate", "r.yaml"],
  1, "r.yaml:6:27: unknown template variable {tool} in '{tool}'; allowed: {tool_name}, {tool_call_id}, {chars}, {bytes}, {tokens}, {lines} (at rules[0].action.placeholder)"),
 ("rules-alias-bomb", {"r.yaml": "a: &a [x,x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: [*e,*e,*e,*e,*e,*e,*e,*e,*e,*e]\n"}, ["validate", "r.yaml"],
  1, 'r.yaml:1:1: the document expands to more than 100000 nodes (too many aliases?)'),
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
  2, 'rules-compact: error: preset:nope: no such preset; available: default, preset:anthropic-clear-thinking, preset:anthropic-clear-tool-uses, preset:count-triggered-prune, preset:keep-recent-results, preset:langchain-clear-tool-uses, preset:observation-masking, preset:opencode-prune, preset:read-time-spans, preset:strip-tool-turn-reasoning, preset:strip-tool-turn-reasoning-selective'),
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
]

def snapshot(folder):
    return {os.path.relpath(os.path.join(root, f), folder): open(os.path.join(root, f), "rb").read()
            for root, _, files in os.walk(folder) for f in files}


@pytest.mark.parametrize("files,argv,code,line", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input(tmp_path, monkeypatch, capsys, files, argv, code, line):
    monkeypatch.chdir(tmp_path)
    for name, content in files.items():
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
