"""``tools``, ``audit``, ``schema``: what the rules know about tools, and the rule-file schema."""

from __future__ import annotations

import json

from ..formats import FORMATS
from ..language.schema import extended_schema, rule_schema
from ..plugins.manager import registry
from .inputs import add_rules_options, plugin_failures, read, rulesets
from .output import OK, print_json_line, table

__all__ = ["register"]


def register(add) -> None:
    p = add("tools", help="list every known tool, its metadata and who declared it")
    add_rules_options(p)
    p.add_argument("--json", action="store_true", help="one JSON object per tool (JSON Lines; docs/json.md)")
    p.set_defaults(func=cmd_tools)

    p = add("audit", help="the tools seen in a conversation, largest undeclared first")
    p.add_argument("input", metavar="INPUT", help="a conversation file; - for stdin")
    add_rules_options(p)
    p.add_argument("--json", action="store_true", help="one JSON object per tool (JSON Lines; docs/json.md)")
    p.set_defaults(func=cmd_audit)

    p = add("schema", help="print the rule-file JSON Schema, extended by plugins")
    p.set_defaults(func=cmd_schema)


def cmd_schema(args) -> int:
    plugin_failures(args)
    print(json.dumps(extended_schema(rule_schema(), registry()), indent=2))
    return OK


def _declared(ruleset, name: str | None) -> str:
    spec = ruleset.tools.lookup(name)
    if spec is None:
        return f"undeclared ({ruleset.tools.undeclared})"
    return f"compact: {str(spec.compact).lower()} ({spec.source})"


def cmd_tools(args) -> int:
    ruleset = rulesets(args)[-1]
    tools = ruleset.tools
    specs = sorted(list(tools.exact.values()) + list(tools.globs), key=lambda s: (s.is_glob, s.pattern))
    if args.json:
        for s in specs:
            print_json_line({"tool": s.pattern, "glob": s.is_glob, "compact": s.compact,
                             "placeholder": s.placeholder.text if s.placeholder else None,
                             "summarizer": s.summarize is not None, "declared_by": s.source})
        return OK
    rows = [("tool", "compact", "placeholder", "summarizer", "declared by")] + [
        (s.pattern, str(s.compact).lower(), s.placeholder.text if s.placeholder else "-",
         "yes" if s.summarize else "-", s.source) for s in specs]
    print(table(rows) if specs else "no tools declared")
    print(f"undeclared tools: {tools.undeclared}")
    return OK


def cmd_audit(args) -> int:
    ruleset = rulesets(args)[-1]
    items = [item for conv, fmt in read(args.input, args.format) for item in FORMATS[fmt].items(conv.messages)]
    stats: dict[str, list[int]] = {}
    for item in items:
        names = item.call_names if item.kind == "assistant" else (item.tool_name or "(orphan)",)
        for name in names:
            row = stats.setdefault(name, [0, 0, 0, 0])
            if item.kind == "assistant":
                row[0] += 1
            else:
                row[1] += 1
                row[2] += len(item.text)
                row[3] = max(row[3], len(item.text))
    order = sorted(stats.items(), key=lambda kv: (ruleset.tools.lookup(kv[0]) is not None, -kv[1][2], kv[0]))
    if args.json:
        for name, (calls, results, total, largest) in order:
            spec = ruleset.tools.lookup(name)
            print_json_line({"tool": name, "calls": calls, "results": results, "total_chars": total,
                             "largest": largest, "declared": spec is not None,
                             "compact": ruleset.tools.compactable(name),
                             "declared_by": spec.source if spec else None})
        return OK
    rows = [("tool", "calls", "results", "total chars", "largest", "declared")] + [
        (name, f"{c:,}", f"{r:,}", f"{t:,}", f"{m:,}", _declared(ruleset, name)) for name, (c, r, t, m) in order]
    print(table(rows, right={1, 2, 3, 4}))
    return OK
