"""The ``rules-compact`` command: apply, validate, explain."""

from __future__ import annotations

import argparse
import io
import json
import os
import signal
import sys
import threading
from typing import Sequence

from . import __version__
from .documents import SURROGATES, dump_json, dump_json_line, read_conversations_from, write_atomic
from .engine import compact
from .errors import ConfigError, InputError, RulesCompactError
from .formats import FORMATS
from .language.loader import check_rules, load_rules
from .language.schema import extended_schema, rule_schema
from .plugins.manager import PluginError, registry
from .analysis import conversation_stats, decision_changes
from .plot import plot_rounds
from .readers import Conversation
from .engine.report import PassReport, Report
from .recall import References
from .replay import Replay, cold_rounds, parse_price, replay, round_starts

PROG = "rules-compact"


def _plugin_failures(args) -> None:
    """Report plugins that failed to load; with --strict, stop."""
    for failure in registry().failures:
        if getattr(args, "strict", False):
            raise PluginError(f"{failure} (--strict)")
        print(f"{PROG}: warning: {failure}; skipped", file=sys.stderr)


def _rules(args) -> list:
    _plugin_failures(args)
    return [load_rules(r) for r in (args.rules or ["default"])]


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.abspath(a) == os.path.abspath(b)


def cmd_apply(args) -> int:
    if args.in_place:
        if args.input == "-" or args.output:
            raise InputError("--in-place needs a file INPUT and no -o")
        args.output = args.input
    elif args.output and args.input != "-" and _same_file(args.output, args.input):
        raise InputError(f"{args.output}: OUTPUT is the INPUT file; pass --in-place to overwrite it")
    if args.report and args.input != "-" and _same_file(args.report, args.input):
        raise InputError(f"{args.report}: REPORT is the INPUT file")
    if args.report and args.output and _same_file(args.report, args.output):
        raise InputError(f"{args.report}: REPORT is the OUTPUT file; give them different names")
    rulesets = _rules(args)
    read = _read(args.input, args.format)
    convs = [c for c, _ in read]
    logs = [c for c in convs if c.source_format != "messages"]
    if args.in_place and (logs or not convs):
        what = f"an agent log ({logs[0].source_format})" if logs else "empty"
        raise InputError(f"{args.input}: is {what}; --in-place would rewrite it in another shape; "
                         "write the result with -o")
    results = [compact(c.messages, rulesets, format=fmt) for c, fmt in read]
    text = _output(convs, results)
    if len(convs) == 1:
        report = results[0].report.to_dict()
    else:
        report = {"conversations": [{"name": c.name, **r.report.to_dict()} for c, r in zip(convs, results)]}
    if args.report:
        write_atomic(args.report, dump_json(report))
    if args.output:
        write_atomic(args.output, text)
    else:
        sys.stdout.write(text)
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
    return 0


def _output(convs: list[Conversation], results: list) -> str:
    """What ``apply`` writes: each conversation in its input's shape (README, "Command line").

    A message list or request body comes back as one (the body with only its messages or
    ``input`` changed); a file of one message per line, one message per line; a log, its API
    message list; a file of several conversations, one conversation per line (JSONL).
    """
    if len(convs) == 1 and convs[0].one_per_line:
        return "".join(dump_json_line(m) for m in results[0].messages)
    if len(convs) == 1:
        return dump_json(convs[0].with_messages(results[0].messages))
    return "".join(dump_json_line(c.with_messages(r.messages)) for c, r in zip(convs, results))


def _read(path: str, forced: str | None) -> list[tuple[Conversation, str]]:
    """Each conversation of a file with the format its rules see: ``--format``, else the detected one.

    A forced format that finds fewer items (tool results and assistant turns) than the
    detected one, none at all for instance, gets a warning saying which format the content
    looks like.
    """
    read = []
    for conv in read_conversations_from(path):
        fmt = forced or conv.format
        if fmt != conv.format and conv.messages:
            try:
                FORMATS[fmt].check(conv.messages)
            except InputError as error:
                raise InputError(f"{error}; the content looks like {conv.format} (--format {conv.format})") from None
            found = len(FORMATS[fmt].items(conv.messages))
            detected = len(FORMATS[conv.format].items(conv.messages))
            if found < detected:
                what = f"finds only {found} of the {detected}" if found else f"finds none of the {detected}"
                print(f"{PROG}: warning: {conv.name}: --format {fmt} {what} tool results and assistant turns; "
                      f"the content looks like {conv.format} (--format {conv.format})", file=sys.stderr)
        read.append((conv, fmt))
    return read


def summary(report: Report) -> str:
    before, after = report.tokens_before, report.tokens_after
    share = f" ({(after - before) / before:+.1%})" if before else ""
    return (f"{report.items_changed} items changed; {report.chars_before:,} -> {report.chars_after:,} chars; "
            f"{before:,} -> {after:,} estimated tokens{share}")


def cmd_validate(args) -> int:
    _plugin_failures(args)
    failed = False
    for path in args.rules:
        problems = check_rules(path)
        for problem in problems:
            print(problem)
        if not problems:
            print(f"{path}: ok")
        failed = failed or bool(problems)
    return 1 if failed else 0


COLUMNS = ("#", "msg", "role", "tool", "chars", "age", "rule", "action", "saved", "note")


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
    lines.append(_table(rows, right={0, 1, 4, 5, 8}))
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
    rulesets = _rules(args)
    out: list[str] = []
    for conv, fmt in _read(args.input, args.format):
        result = compact(conv.messages, rulesets, format=fmt)
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
    return 0


def cmd_schema(args) -> int:
    _plugin_failures(args)
    print(json.dumps(extended_schema(rule_schema(), registry()), indent=2))
    return 0


def _declared(ruleset, name: str | None) -> str:
    spec = ruleset.tools.lookup(name)
    if spec is None:
        return f"undeclared ({ruleset.tools.undeclared})"
    return f"compact: {str(spec.compact).lower()} ({spec.source})"


def cmd_tools(args) -> int:
    ruleset = _rules(args)[-1]
    table = ruleset.tools
    specs = sorted(list(table.exact.values()) + list(table.globs), key=lambda s: (s.is_glob, s.pattern))
    rows = [("tool", "compact", "placeholder", "summarizer", "declared by")] + [
        (s.pattern, str(s.compact).lower(), s.placeholder.text if s.placeholder else "-",
         "yes" if s.summarize else "-", s.source) for s in specs]
    print(_table(rows) if specs else "no tools declared")
    print(f"undeclared tools: {table.undeclared}")
    return 0


def cmd_audit(args) -> int:
    ruleset = _rules(args)[-1]
    items = [item for conv, fmt in _read(args.input, args.format) for item in FORMATS[fmt].items(conv.messages)]
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
    rows = [("tool", "calls", "results", "total chars", "largest", "declared")] + [
        (name, str(c), str(r), f"{t:,}", f"{m:,}", _declared(ruleset, name)) for name, (c, r, t, m) in order]
    print(_table(rows, right={1, 2, 3, 4}))
    return 0


def _table(rows, right=frozenset()) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.rjust(w) if i in right else c.ljust(w)
                               for i, (c, w) in enumerate(zip(row, widths))).rstrip() for row in rows)


class _Parser(argparse.ArgumentParser):
    """Usage errors as one line, exit code 2."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def _conversations(path: str, fmt: str | None) -> list[tuple[str, list, str]]:
    """``(name, messages, format)`` for each conversation in a file."""
    return [(c.name, c.messages, f) for c, f in _read(path, fmt)]


def _progress(done: int, total: int, name: str) -> None:
    if total > 1 and sys.stderr.isatty():
        width = 30
        filled = width * done // total
        print(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} {name[-40:]:<40}", end="",
              file=sys.stderr, flush=True)
        if done == total:
            print(file=sys.stderr)


def cmd_stats(args) -> int:
    rulesets = _rules(args)
    conversations = [c for path in args.inputs for c in _conversations(path, args.format)]
    rows = [("conversation", "messages", "tool results", "tokens before", "tokens after", "saved", "saved by rule")]
    totals = [0, 0, 0, 0]
    for done, (name, messages, fmt) in enumerate(conversations, 1):
        stats = conversation_stats(name, messages, rulesets, fmt)
        before, after = stats.report.tokens_before, stats.report.tokens_after
        shares = sorted(stats.saved_by_rule.items(), key=lambda kv: -kv[1])
        by_rule = ", ".join(f"{rule} {saved / before:.0%}" for rule, saved in shares if before) or "-"
        rows.append((name, str(stats.messages), str(stats.tool_results), f"{before:,}", f"{after:,}",
                     _share(before, after), by_rule))
        for i, value in enumerate((stats.messages, stats.tool_results, before, after)):
            totals[i] += value
        _progress(done, len(conversations), name)
    rows.append((f"total ({len(conversations)})", str(totals[0]), str(totals[1]), f"{totals[2]:,}",
                 f"{totals[3]:,}", _share(totals[2], totals[3]), ""))
    print(_table(rows, right={1, 2, 3, 4, 5}))
    return 0


def _share(before: int, after: int) -> str:
    return f"{(before - after) / before:.1%}" if before else "-"


def _replays(messages: list, fmt: str, sets: list[tuple[str, list]], price) -> list[Replay]:
    """One replay per rule set, sharing the conversation's references."""
    references = References(messages, FORMATS[fmt], round_starts(messages, fmt))
    return [replay(messages, rulesets, fmt, price, label, references=references) for label, rulesets in sets]


def _lifetime(seconds: float | None) -> str:
    if seconds is None:
        return "never expires"
    for unit, size in (("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{seconds / size:g}{unit}"
    return f"{seconds:g}s"


def cmd_replay(args) -> int:
    _plugin_failures(args)
    price = parse_price(args.price)
    if args.cache_expiry and price.lifetime is None:
        raise InputError(f"--cache-expiry: the price {args.price!r} has no cache lifetime; "
                         "give one as CACHED,UNCACHED,LIFETIME or use a profile")
    primary = args.rules or ["default"]  # as in apply: the bundled default unless -r says otherwise
    sets = [("none", None), (" + ".join(primary), [load_rules(r) for r in primary])]
    sets += [(name, [load_rules(name)]) for name in args.compare or []]
    for conv, fmt in _read(args.input, args.format):
        name, messages = conv.name, conv.messages
        results = _replays(messages, fmt, sets, price)
        cache = "cache never expires"
        if args.cache_expiry:
            cold = cold_rounds(conv.timestamps, round_starts(messages, fmt), price.lifetime)
            results = [r.expire(cold) for r in results]
            cache = (f"cache expires after {_lifetime(price.lifetime)}: {sum(cold)} rounds found it expired"
                     if conv.timestamps is not None else "no timestamps in this log: cache never expires")
        base = results[0]
        rows = [("rule set", "rounds", "prompt tokens", "vs none", "cached tokens", "cached share", "cost",
                 "vs none", "recall")]
        for r in results:
            rows.append((r.label, str(r.rounds), f"{r.total_prompt:,}", _ratio(r.total_prompt, base.total_prompt),
                         f"{r.total_cached:,}", _ratio(r.total_cached, r.total_prompt), f"{r.cost:,.0f}",
                         _ratio(r.cost, base.cost), f"{r.recall:.3f}"))
        print(f"{name}: replayed {base.rounds} rounds; prices: cached {price.cached}, uncached {price.uncached} "
              f"({price.name}); {cache}; recall: {sum(base.referenced):,} references")
        print(_table(rows, right={1, 2, 3, 4, 5, 6, 7, 8}))
        if args.plot:
            plot_rounds(results, args.plot, title=name)
    return 0


def _ratio(value: float, base: float) -> str:
    return f"{value / base:.3f}" if base else "-"


def cmd_diff(args) -> int:
    _plugin_failures(args)
    old, new = load_rules(args.old), load_rules(args.new)
    price = parse_price(args.price)
    md = args.format_out == "markdown"
    out = [f"## rules-compact diff: `{args.old}` → `{args.new}`" if md else f"diff {args.old} -> {args.new}"]
    totals = [0, 0, 0.0, 0.0]
    referenced = kept_old = kept_new = 0
    for path in args.inputs:
        for name, messages, fmt in _conversations(path, args.format):
            before = compact(messages, [old], format=fmt).report
            after = compact(messages, [new], format=fmt).report
            changes = decision_changes(before, after)
            costs = _replays(messages, fmt, [("old", [old]), ("new", [new])], price)
            totals[0] += before.tokens_after
            totals[1] += after.tokens_after
            totals[2] += costs[0].cost
            totals[3] += costs[1].cost
            referenced += sum(costs[0].referenced)
            kept_old += sum(costs[0].kept)
            kept_new += sum(costs[1].kept)
            rows = [("item", "msg", "role", "tool", "old", "new")] + [
                (str(c.item), str(c.message), c.role, c.tool or "-", c.old, c.new) for c in changes]
            out.append("")
            out.append(f"### {name}" if md else f"{name}:")
            out.append(f"{len(changes)} decisions change; tokens after {before.tokens_after:,} -> "
                       f"{after.tokens_after:,}; replay cost {costs[0].cost:,.0f} -> {costs[1].cost:,.0f} "
                       f"({_ratio(costs[1].cost, costs[0].cost)}x); recall {costs[0].recall:.3f} -> "
                       f"{costs[1].recall:.3f}")
            if changes:
                out.append("")
                out.append(_markdown(rows) if md else _table(rows, right={0, 1}))
    out.append("")
    out.append(f"{'**Total**' if md else 'total'}: tokens after {totals[0]:,} -> {totals[1]:,}; "
               f"replay cost {totals[2]:,.0f} -> {totals[3]:,.0f} ({_ratio(totals[3], totals[2])}x); "
               f"recall {_recall(kept_old, referenced)} -> {_recall(kept_new, referenced)}")
    print("\n".join(out))
    return 0


def _recall(kept: int, referenced: int) -> str:
    return f"{kept / referenced if referenced else 1.0:.3f}"


def _markdown(rows) -> str:
    def cell(text: str) -> str:
        return text.replace("|", "\\|")
    lines = ["| " + " | ".join(rows[0]) + " |", "|" + "---|" * len(rows[0])]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows[1:]]
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog=PROG, description="Compact LLM agent conversations with YAML rules.")
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    parser.add_argument("--strict", action="store_true", help="a plugin that fails to load is an error")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def rules_option(p):
        p.add_argument("-r", "--rules", action="append", metavar="RULES",
                       help="rule file, 'default' or 'preset:NAME'; repeat for successive passes "
                            "(default: the bundled default rules)")
        p.add_argument("--format", choices=sorted(FORMATS), help="message format (default: detected)")

    p = sub.add_parser("apply", help="compact a conversation and write it out")
    p.add_argument("input", metavar="INPUT",
                   help="conversation JSON/JSONL file (messages, request body, Responses items or body) or "
                        "agent log (Claude Code, Codex, SWE-agent, mini-swe-agent, tau-bench, tau2, OpenHands), "
                        "or - for stdin")
    rules_option(p)
    p.add_argument("-o", "--output", metavar="OUTPUT", help="write here instead of stdout")
    p.add_argument("--in-place", action="store_true", help="overwrite INPUT (atomically)")
    p.add_argument("--report", metavar="REPORT.json", help="write the per-item report as JSON")
    p.set_defaults(func=cmd_apply)

    p = sub.add_parser("validate", help="check rule files against the schema")
    p.add_argument("rules", nargs="+", metavar="RULES")
    p.set_defaults(func=cmd_validate)

    p = sub.add_parser("explain", help="show which rule decided each item")
    p.add_argument("input", metavar="INPUT")
    rules_option(p)
    p.set_defaults(func=cmd_explain)

    p = sub.add_parser("tools", help="list every known tool, its metadata and who declared it")
    rules_option(p)
    p.set_defaults(func=cmd_tools)

    p = sub.add_parser("audit", help="the tools seen in a conversation, largest undeclared first")
    p.add_argument("input", metavar="INPUT")
    rules_option(p)
    p.set_defaults(func=cmd_audit)

    p = sub.add_parser("stats", help="per conversation: tokens before and after, and what each rule saved")
    p.add_argument("inputs", nargs="+", metavar="INPUT")
    rules_option(p)
    p.set_defaults(func=cmd_stats)

    p = sub.add_parser("replay", help="replay round by round: prompt tokens, cache hits and cost")
    p.add_argument("input", metavar="INPUT")
    rules_option(p)
    p.add_argument("--compare", action="append", metavar="RULES", help="another rule set to compare; repeatable")
    p.add_argument("--price", default="anthropic", metavar="PRICE",
                   help="price profile: anthropic (cached 0.1, uncached 1.25, 5-minute cache; default), "
                        "anthropic-1h (0.1, 2.0, 1 hour), openai (0.1, 1.0, 5 minutes) or CACHED,UNCACHED[,LIFETIME] "
                        "(LIFETIME in seconds, or 5m, 1h)")
    p.add_argument("--cache-expiry", action="store_true",
                   help="a round more than the price's cache lifetime after the previous one reads nothing from "
                        "cache (logs with timestamps: Claude Code, OpenHands, tau2); default: the cache never "
                        "expires")
    p.add_argument("--plot", metavar="FILE", help="draw prompt tokens per round (.png or .svg; needs matplotlib)")
    p.set_defaults(func=cmd_replay)

    p = sub.add_parser("diff", help="items whose decision changes between two rule sets, and the cost impact")
    p.add_argument("old", metavar="OLD_RULES")
    p.add_argument("new", metavar="NEW_RULES")
    p.add_argument("inputs", nargs="+", metavar="INPUT")
    p.add_argument("--format", choices=sorted(FORMATS), help="message format (default: detected)")
    p.add_argument("--output-format", dest="format_out", choices=["text", "markdown"], default="text",
                   help="text (default) or markdown, for a pull-request comment")
    p.add_argument("--price", default="anthropic", metavar="PRICE", help="as for replay")
    p.set_defaults(func=cmd_diff)

    p = sub.add_parser("schema", help="print the rule-file JSON Schema, extended by plugins")
    p.set_defaults(func=cmd_schema)
    return parser


class Terminated(BaseException):
    """SIGTERM, raised like KeyboardInterrupt so that a write in progress removes its temp file."""


def _terminate(signum, frame):
    raise Terminated()


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    in_main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _terminate) if in_main_thread else None
    errors = _escape_surrogates()
    try:
        code = args.func(args)
        sys.stdout.flush()
        return code
    except ConfigError as exc:
        for problem in exc.problems:
            print(problem, file=sys.stderr)
        return exc.exit_code
    except RulesCompactError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except BrokenPipeError:  # the reader went away (| head): not an error
        _drop_stdout()
        return 0
    except OSError as exc:
        if exc.filename is not None:  # files are reported as InputError; this is unexpected
            raise
        _drop_stdout()  # stdout failed (a full disk): the output is incomplete
        print(f"{PROG}: error: cannot write the output: {exc.strerror or exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except Terminated:
        return 128 + signal.SIGTERM
    finally:
        if in_main_thread:
            signal.signal(signal.SIGTERM, previous)
        _restore(errors)


def _escape_surrogates() -> dict:
    """Write a lone surrogate (in JSON output or a tool name) as ``\\udXXX`` instead of failing;
    returns each stream's previous error handler, for ``_restore``."""
    before = {}
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            before[stream] = stream.errors
            stream.reconfigure(errors=SURROGATES)
    return before


def _restore(errors: dict) -> None:
    for stream, handler in errors.items():
        try:
            stream.reconfigure(errors=handler)
        except (OSError, ValueError):  # it flushes first: a failing or closed stream
            pass


def _drop_stdout() -> None:
    """Send what is still buffered for stdout to /dev/null, so that exiting does not fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # stdout is not a file (a test's capture)
        pass
