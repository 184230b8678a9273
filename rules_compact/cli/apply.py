"""``apply``: compact a conversation and write it out in its input's shape."""

from __future__ import annotations

import sys
from typing import Iterator

from ..documents import dump_json, dump_json_line, dump_json_pieces, write_atomic, write_text
from ..engine import compact
from ..engine.report import NO_BOUNDARY
from ..engine.report import Report
from ..errors import InputError
from ..readers import Conversation
from .inputs import add_rules_options, read, refuse_overwriting, rulesets, special_file
from .output import OK, OVER_BUDGET, PROG

__all__ = ["register", "summary"]


def register(add) -> None:
    p = add("apply", help="compact a conversation and write it out")
    p.add_argument("input", metavar="INPUT",
                   help="conversation JSON/JSONL file (messages, request body, Responses items or body) or "
                        "agent log (Claude Code, Codex, SWE-agent, mini-swe-agent, tau-bench, tau2, OpenHands), "
                        "or - for stdin")
    add_rules_options(p)
    p.add_argument("-o", "--output", metavar="OUTPUT", help="write here instead of stdout")
    p.add_argument("--in-place", action="store_true", help="overwrite INPUT (atomically)")
    p.add_argument("--report", metavar="REPORT.json", help="write the per-item report as JSON")
    p.add_argument("--fail-over-budget", action="store_true",
                   help=f"exit {OVER_BUDGET} when the result is still over a rule file's over_budget_tokens "
                        "(the output is written all the same)")
    p.set_defaults(func=cmd_apply)


def cmd_apply(args) -> int:
    if args.in_place:
        if args.input == "-" or args.output:
            raise InputError("--in-place needs a file INPUT and no -o")
        what = special_file(args.input)
        if what is not None:
            raise InputError(f"{args.input}: is {what}, not a regular file; --in-place rewrites only a regular file")
    refuse_overwriting([("OUTPUT", args.output)], [args.input], label="the INPUT file; pass --in-place to overwrite it")
    sets = rulesets(args)
    refuse_overwriting([("OUTPUT", args.output), ("REPORT", args.report)], [args.input], sets)
    if args.in_place:
        args.output = args.input
    found = read(args.input, args.format)
    convs = [c for c, _ in found]
    logs = [c for c in convs if c.source_format != "messages"]
    if args.in_place and (logs or not convs):
        what = f"an agent log ({logs[0].source_format})" if logs else "empty"
        raise InputError(f"{args.input}: is {what}; --in-place would rewrite it in another shape; "
                         "write the result with -o")
    results = [compact(c.messages, sets, format=fmt, breakpoints_outside=c.breakpoints_outside) for c, fmt in found]
    text = _output(convs, results)
    if args.report:
        if len(convs) == 1:
            report = results[0].report.to_dict()
        else:
            report = {"conversations": [{"name": c.name, **r.report.to_dict()} for c, r in zip(convs, results)]}
        write_atomic(args.report, dump_json(report))
    if args.output:
        write_atomic(args.output, text)
    else:
        write_text(sys.stdout, text)
    if len(convs) == 1 and convs[0].source_format != "messages":
        c = convs[0]
        print(f"{PROG}: {c.name}: read as {len(c.messages)} {c.format} messages from the {c.source_format} log"
              + "".join(f"; {n}" for n in c.notes), file=sys.stderr)
    elif len(convs) > 1:
        print(f"{PROG}: {args.input}: read {len(convs)} conversations ({convs[0].source_format}); "
              "output: one per line (JSONL)", file=sys.stderr)
    for c, result in zip(convs, results):
        prefix = f"{c.name}: " if len(convs) > 1 else ""
        print(f"{PROG}: {prefix}{summary(result.report)}", file=sys.stderr)
        for ruleset, tokens, limit in result.report.budget_checks:
            if tokens > limit:
                print(f"{PROG}: warning: {prefix}still over budget: {tokens:,} estimated tokens > {limit:,} "
                      f"(over_budget_tokens of {ruleset!r})", file=sys.stderr)
    return OVER_BUDGET if args.fail_over_budget and any(r.over_budget for r in results) else OK


def _output(convs: list[Conversation], results: list) -> Iterator[str]:
    """What ``apply`` writes, in pieces (a message or a line at a time, so that a large output is
    never held whole): each conversation in its input's shape (README, "Command line").

    A message list or request body comes back as one (the body with only its messages or
    ``input`` changed); a file of one message per line, one message per line; a log, its API
    message list; a file of several conversations, one conversation per line (JSONL).
    """
    if len(convs) == 1 and convs[0].one_per_line:
        return map(dump_json_line, results[0].messages)
    if len(convs) == 1:
        return dump_json_pieces(convs[0].with_messages(results[0].messages))
    return (dump_json_line(c.with_messages(r.messages)) for c, r in zip(convs, results))


def summary(report: Report) -> str:
    """One line: items changed, characters and tokens before and after; when nothing changed, why."""
    before, after = report.tokens_before, report.tokens_after
    change = f" ({(after - before) / before:+.1%})" if before else ""
    items = f"{report.items_changed} item{'s' * (report.items_changed != 1)}"
    line = (f"{items} changed; {report.chars_before:,} -> {report.chars_after:,} chars; "
            f"{before:,} -> {after:,} estimated tokens{change}")
    return line if report.items_changed else f"{line}; {unchanged(report)}"


def unchanged(report: Report) -> str:
    """Why no pass changed anything: each pass's reason (named when there are several)."""
    def why(p) -> str:
        if not p.ran:
            return p.reason
        if p.unapplied:
            return p.unapplied
        return NO_BOUNDARY if p.reason.endswith(NO_BOUNDARY) else "no rule changed anything"

    reasons = [why(p) for p in report.passes]
    if len(report.passes) > 1:
        reasons = [f"{p.ruleset}: {r}" for p, r in zip(report.passes, reasons)]
    return "; ".join(reasons) or "no rule files"
