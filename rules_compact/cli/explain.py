"""``explain``: which rule decided each item, and what its actions did."""

from __future__ import annotations

import sys

from ..documents import dump_json_line
from ..engine import compact
from ..engine.report import Decision, PassReport
from ..errors import InputError
from ..formats import FORMATS
from .apply import summary
from ..kinds.matchers.where import where_failures
from .inputs import INPUTS_HELP, Corpus, add_rules_options, read, rulesets, unreadable
from ..resources import shown_source
from .output import table, warn, wrap

__all__ = ["register", "explain_pass"]

LEGEND = "(action): the rule matched, but its action changed nothing (the note says why when it can)"


def register(add) -> None:
    p = add("explain", help="show which rule decided each item")
    p.add_argument("inputs", nargs="+", metavar="INPUT", help=INPUTS_HELP)
    add_rules_options(p)
    p.add_argument("--changed", action="store_true", help="only the items whose content changes")
    p.add_argument("--rule", metavar="NAME", help="only the items this rule decided")
    p.add_argument("--role", choices=["tool", "assistant"], help="only tool results, or only assistant turns")
    p.add_argument("--show-text", action="store_true",
                   help="after each table, the text the model gets for each changed item shown")
    p.add_argument("--json", action="store_true",
                   help="one JSON object per item (JSON Lines): the report's fields, with conversation and ruleset")
    p.set_defaults(func=cmd_explain)


def _shown(args):
    """Whether a decision passes the command's filters."""
    def shown(d: Decision) -> bool:
        return ((not args.changed or d.changed) and (args.rule is None or d.rule == args.rule)
                and (args.role is None or d.role == args.role))
    return shown


def _rule_label(d: Decision, p: PassReport) -> str:
    """The deciding rule, with the file it came from when ``extends`` brought it in."""
    if d.rule is None:
        return "-"
    return d.rule if d.source == p.source else f"{d.rule} ({shown_source(d.source)})"


def _action(d: Decision) -> str:
    return d.action if d.changed or d.action in ("keep", "none") else f"({d.action})"


def _note(d: Decision) -> str:
    """The decision's note, and for a turn the actions changed, which part they stripped."""
    parts = [d.note] if d.note else []
    if d.changed and d.role == "assistant":
        text, text_after = d.chars - d.reasoning, d.chars_after - d.reasoning_after
        stripped = [f"{what} {a:,} -> {b:,}" for what, a, b in
                    (("reasoning", d.reasoning, d.reasoning_after), ("text", text, text_after)) if a != b]
        if stripped:
            parts.append("stripped: " + ", ".join(stripped) + " chars")
    return "; ".join(parts)


def explain_pass(p: PassReport, shown=lambda d: True, empty: str = "no item matches") -> tuple[list[str], bool]:
    """The lines for one pass, and whether a row shows an action that changed nothing;
    ``empty``: what to say when no row is shown."""
    lines = [wrap(f"pass: {p.ruleset} ({shown_source(p.source)}): {p.reason}")]
    if not p.ran:
        return lines, False
    decisions = [d for d in p.decisions if shown(d)]
    units = list(p.decisions[0].ages) if p.decisions and p.decisions[0].ages else []
    ages = [f"age {u}" for u in units] or ["age"]
    header = ("#", "msg", "role", "tool", "chars", *ages, "rule", "action", "saved", "note")
    rows = [header] + [
        (str(d.item), str(d.message), d.role + ("!" if d.error else ""), d.tool or "-", f"{d.chars:,}",
         *([f"{d.ages[u]:,}" for u in units] or [f"{d.age:,}"]), _rule_label(d, p), _action(d), f"{d.saved:,}",
         _note(d))
        for d in decisions]
    first_age = header.index(ages[0])
    right = {0, 1, 4, *range(first_age, first_age + len(ages)), len(header) - 2}
    lines.append(table(rows, right) if decisions else empty)
    if len(decisions) < len(p.decisions):
        lines.append(f"showing {len(decisions)} of {len(p.decisions)} items")
    lines.append(wrap(f"changed {p.changed} of {len(p.decisions)} items; estimated tokens {p.tokens_before:,} -> "
                      f"{p.tokens_after:,} (saved {p.tokens_before - p.tokens_after:,})"
                      + (f"; minimum gate {p.gate}" if p.gate else "")))
    for rule, saved in sorted(p.saved_by_rule().items(), key=lambda kv: -kv[1]):
        if saved:
            lines.append(f"  saved by {rule}: {saved:,}")
    if p.orphans:
        lines.append(wrap("orphan results (no matching call): " + ", ".join(f"#{i}" for i in p.orphans)))
    if p.dangling:
        lines.append(wrap("dangling calls (no result): " + ", ".join(p.dangling)))
    return lines, any(_action(d).startswith("(") for d in decisions)


def _texts(result, fmt: str, decisions: list[Decision]) -> list[str]:
    """What the model gets for each changed item of ``decisions``: ``#3 (message 7, tool Read):``
    and the item's text after compaction, indented."""
    items = FORMATS[result.report.format].items(result.messages)
    lines = []
    for d in decisions:
        if d.changed and d.item < len(items):
            what = f"tool {d.tool}" if d.role == "tool" else "assistant turn"
            text = items[d.item].text
            lines += [f"#{d.item} (message {d.message}, {what}):"]
            lines += [wrap(f"    {line}", "    ") for line in text.splitlines()] or ["    (empty)"]
    return ["", "text the model gets:", *lines] if lines else []


def _where_warnings(failures) -> list[str]:
    """One line per ``where`` expression that raised on some items (they count as no match)."""
    return [f"rule {rule!r}: where {f.expression!r} failed on {len(f.items):,} item{'s' * (len(f.items) != 1)} "
            f"(JMESPath: {f.first}), which count as no match" for of_set in failures for rule, f in of_set if f.items]


def _check_rule(args, sets) -> None:
    if args.rule is not None:
        names = list(dict.fromkeys(rule.name for ruleset in sets for rule in ruleset.rules))
        if args.rule not in names:
            raise InputError(f"--rule {args.rule!r}: no rule of that name; the rules: {', '.join(names)}")


def cmd_explain(args) -> int:
    sets = rulesets(args)
    _check_rule(args, sets)
    shown = _shown(args)
    failures = [where_failures(ruleset.rules) for ruleset in sets]
    corpus = Corpus(args.inputs)
    out: list[str] = []
    legend = False
    for path in corpus.paths:
        why = unreadable(path)
        try:
            if why:
                raise InputError(why)
            conversations = read(path, args.format)
        except InputError as exc:
            corpus.fail(path, str(exc))
            continue
        corpus.files += 1
        for conv, fmt in conversations:
            lines, unchanged = _explain_conversation(args, sets, failures, shown, conv, fmt)
            out += ([""] if out and lines else []) + lines
            legend = legend or unchanged
    if not args.json and out:
        print("\n".join(out + (["", wrap(LEGEND)] if legend else [])))
    return corpus.finish()


def _explain_conversation(args, sets, failures, shown, conv, fmt) -> tuple[list[str], bool]:
    """The lines explaining one conversation (none with ``--json``, whose rows are printed),
    and whether a row shows an action that changed nothing."""
    for _, failed in (f for of_set in failures for f in of_set):
        failed.clear()
    result = compact(conv.messages, sets, format=fmt, breakpoints_outside=conv.breakpoints_outside)
    warnings = _where_warnings(failures)
    if args.json:
        for p in result.report.passes:
            if p.ran:
                sys.stdout.writelines(dump_json_line({"conversation": conv.name, "ruleset": p.ruleset,
                                                      **d.to_dict()}) for d in p.decisions if shown(d))
        for w in warnings:
            warn(f"{conv.name}: {w}")
        return [], False
    origin = f" (read from the {conv.source_format} log)" if conv.source_format != "messages" else ""
    out = [wrap(f"{conv.name}: {len(conv.messages)} messages, format {result.report.format}{origin}")]
    out += [wrap(f"note: {n}") for n in conv.notes]
    legend = False
    for p in result.report.passes:
        decided = args.rule is None or any(d.rule == args.rule for d in p.decisions)
        lines, unchanged = explain_pass(p, shown, "no item matches" if decided else f"rule {args.rule} decided nothing")
        out += [""] + lines
        if args.show_text and p is result.report.passes[-1]:
            out += _texts(result, fmt, [d for d in p.decisions if shown(d)])
        legend = legend or unchanged
    out += [wrap(f"warning: {w}") for w in warnings]
    out += ["", wrap(f"total: {summary(result.report)}")]
    if result.over_budget:
        out.append("over budget: yes")
    return out, legend
