"""``stats``, ``replay``, ``diff``: what rule sets do over conversations."""

from __future__ import annotations

from ..analysis import conversation_stats, decision_changes
from ..engine import compact
from ..errors import InputError
from ..formats import FORMATS
from ..language.loader import load_rules
from ..plot import plot_rounds
from ..recall import References
from ..replay import Replay, cold_rounds, parse_price, replay, round_starts
from .inputs import add_format_option, add_rules_options, plugin_failures, read, rulesets
from .output import OK, markdown, progress, ratio, share, table

__all__ = ["register"]


def register(add) -> None:
    p = add("stats", help="per conversation: tokens before and after, and what each rule saved")
    p.add_argument("inputs", nargs="+", metavar="INPUT")
    add_rules_options(p)
    p.set_defaults(func=cmd_stats)

    p = add("replay", help="replay round by round: prompt tokens, cache hits and cost")
    p.add_argument("input", metavar="INPUT")
    add_rules_options(p)
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

    p = add("diff", help="items whose decision changes between two rule sets, and the cost impact")
    p.add_argument("old", metavar="OLD_RULES")
    p.add_argument("new", metavar="NEW_RULES")
    p.add_argument("inputs", nargs="+", metavar="INPUT")
    add_format_option(p)
    p.add_argument("--output-format", dest="format_out", choices=["text", "markdown"], default="text",
                   help="text (default) or markdown, for a pull-request comment")
    p.add_argument("--price", default="anthropic", metavar="PRICE", help="as for replay")
    p.set_defaults(func=cmd_diff)


def _conversations(path: str, fmt: str | None) -> list[tuple[str, list, str]]:
    """``(name, messages, format)`` for each conversation in a file."""
    return [(c.name, c.messages, f) for c, f in read(path, fmt)]


def cmd_stats(args) -> int:
    sets = rulesets(args)
    conversations = [c for path in args.inputs for c in _conversations(path, args.format)]
    rows = [("conversation", "messages", "tool results", "tokens before", "tokens after", "saved", "saved by rule")]
    totals = [0, 0, 0, 0]
    for done, (name, messages, fmt) in enumerate(conversations, 1):
        stats = conversation_stats(name, messages, sets, fmt)
        before, after = stats.report.tokens_before, stats.report.tokens_after
        shares = sorted(stats.saved_by_rule.items(), key=lambda kv: -kv[1])
        by_rule = ", ".join(f"{rule} {saved / before:.0%}" for rule, saved in shares if before) or "-"
        rows.append((name, str(stats.messages), str(stats.tool_results), f"{before:,}", f"{after:,}",
                     share(before, after), by_rule))
        for i, value in enumerate((stats.messages, stats.tool_results, before, after)):
            totals[i] += value
        progress(done, len(conversations), name)
    rows.append((f"total ({len(conversations)})", str(totals[0]), str(totals[1]), f"{totals[2]:,}",
                 f"{totals[3]:,}", share(totals[2], totals[3]), ""))
    print(table(rows, right={1, 2, 3, 4, 5}))
    return OK


def _replays(messages: list, fmt: str, sets: list[tuple[str, list]], price) -> list[Replay]:
    """One replay per rule set, sharing the conversation's references."""
    references = References(messages, FORMATS[fmt], round_starts(messages, fmt))
    return [replay(messages, rules, fmt, price, label, references=references) for label, rules in sets]


def _lifetime(seconds: float | None) -> str:
    if seconds is None:
        return "never expires"
    for unit, size in (("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{seconds / size:g}{unit}"
    return f"{seconds:g}s"


def cmd_replay(args) -> int:
    plugin_failures(args)
    price = parse_price(args.price)
    if args.cache_expiry and price.lifetime is None:
        raise InputError(f"--cache-expiry: the price {args.price!r} has no cache lifetime; "
                         "give one as CACHED,UNCACHED,LIFETIME or use a profile")
    primary = args.rules or ["default"]  # as in apply: the bundled default unless -r says otherwise
    sets = [("none", None), (" + ".join(primary), [load_rules(r) for r in primary])]
    sets += [(name, [load_rules(name)]) for name in args.compare or []]
    for conv, fmt in read(args.input, args.format):
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
            rows.append((r.label, str(r.rounds), f"{r.total_prompt:,}", ratio(r.total_prompt, base.total_prompt),
                         f"{r.total_cached:,}", ratio(r.total_cached, r.total_prompt), f"{r.cost:,.0f}",
                         ratio(r.cost, base.cost), f"{r.recall:.3f}"))
        print(f"{name}: replayed {base.rounds} rounds; prices: cached {price.cached}, uncached {price.uncached} "
              f"({price.name}); {cache}; recall: {sum(base.referenced):,} references")
        print(table(rows, right={1, 2, 3, 4, 5, 6, 7, 8}))
        if args.plot:
            plot_rounds(results, args.plot, title=name)
    return OK


def cmd_diff(args) -> int:
    plugin_failures(args)
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
                       f"({ratio(costs[1].cost, costs[0].cost)}x); recall {costs[0].recall:.3f} -> "
                       f"{costs[1].recall:.3f}")
            if changes:
                out.append("")
                out.append(markdown(rows) if md else table(rows, right={0, 1}))
    out.append("")
    out.append(f"{'**Total**' if md else 'total'}: tokens after {totals[0]:,} -> {totals[1]:,}; "
               f"replay cost {totals[2]:,.0f} -> {totals[3]:,.0f} ({ratio(totals[3], totals[2])}x); "
               f"recall {_recall(kept_old, referenced)} -> {_recall(kept_new, referenced)}")
    print("\n".join(out))
    return OK


def _recall(kept: int, referenced: int) -> str:
    return f"{kept / referenced if referenced else 1.0:.3f}"
