"""``explain``: which rule decided each item, and what its actions did."""

from __future__ import annotations

import os

from ..engine import compact
from ..engine.report import PassReport
from .apply import summary
from .inputs import add_rules_options, read, rulesets
from .output import OK, table

__all__ = ["register", "explain_pass"]

COLUMNS = ("#", "msg", "role", "tool", "chars", "age", "rule", "action", "saved", "note")


def register(add) -> None:
    p = add("explain", help="show which rule decided each item")
    p.add_argument("input", metavar="INPUT")
    add_rules_options(p)
    p.set_defaults(func=cmd_explain)


def _rule_label(d, p: PassReport) -> str:
    """The deciding rule, with the file it came from when ``extends`` brought it in."""
    if d.rule is None:
        return "-"
    return d.rule if d.source == p.source else f"{d.rule} ({os.path.basename(d.source)})"


def explain_pass(p: PassReport) -> list[str]:
    lines = [f"pass: {p.ruleset} ({p.source}): {p.reason}"]
    if not p.ran:
        return lines
    rows = [COLUMNS] + [
        (str(d.item), str(d.message), d.role + ("!" if d.error else ""), d.tool or "-", str(d.chars), str(d.age),
         _rule_label(d, p), d.action if d.changed or d.action in ("keep", "none") else f"({d.action})",
         str(d.saved), d.note or "")
        for d in p.decisions
    ]
    lines.append(table(rows, right={0, 1, 4, 5, 8}))
    lines.append(f"changed {p.changed} of {len(p.decisions)} items; estimated tokens {p.tokens_before:,} -> "
                 f"{p.tokens_after:,} (saved {p.tokens_before - p.tokens_after:,})"
                 + (f"; minimum gate {p.gate}" if p.gate else ""))
    for rule, saved in sorted(p.saved_by_rule().items(), key=lambda kv: -kv[1]):
        lines.append(f"  saved by {rule}: {saved:,}")
    if p.orphans:
        lines.append("orphan results (no matching call): " + ", ".join(f"#{i}" for i in p.orphans))
    if p.dangling:
        lines.append("dangling calls (no result): " + ", ".join(p.dangling))
    return lines


def cmd_explain(args) -> int:
    sets = rulesets(args)
    out: list[str] = []
    for conv, fmt in read(args.input, args.format):
        result = compact(conv.messages, sets, format=fmt)
        origin = f" (read from the {conv.source_format} log)" if conv.source_format != "messages" else ""
        out += ([""] if out else []) + [
            f"{conv.name}: {len(conv.messages)} messages, format {result.report.format}{origin}"]
        out += [f"note: {n}" for n in conv.notes]
        for p in result.report.passes:
            out += [""] + explain_pass(p)
        out += ["", f"total: {summary(result.report)}"]
        if result.over_budget:
            out.append("over budget: yes")
    print("\n".join(out))
    return OK
