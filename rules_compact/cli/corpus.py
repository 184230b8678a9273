"""``stats``, ``replay``, ``diff``: what rule sets do over conversations (files, folders, globs).

Each reads its inputs as a ``Corpus`` (a bad file is reported and skipped; the exit code is 2
when any was) and computes one row per conversation (:mod:`rules_compact.rows`): ``--json``
prints the rows as JSON Lines, otherwise they become a table."""

from __future__ import annotations

import os

from ..errors import InputError
from ..language.loader import load_rules
from ..plot import plot_rounds, pyplot_for
from ..replay import cold_rounds, parse_price, round_starts
from ..rows import (DiffRow, ReplayRow, StatsRow, diff_row, diff_total, replay_total, replays, stats_row,
                    stats_total)
from .inputs import Corpus, add_format_option, add_rules_options, plugin_failures, rulesets
from .output import CHANGED, OK, count, markdown, print_json_line, progress, progress_done, ratio, share, table

__all__ = ["register"]

INPUTS_HELP = "conversation file, folder (its .json, .jsonl and .traj files) or glob; - for stdin"
JSON_HELP = "one JSON object per conversation (JSON Lines; docs/json.md)"


def register(add) -> None:
    p = add("stats", help="per conversation: tokens before and after, and what each rule saved")
    p.add_argument("inputs", nargs="+", metavar="INPUT", help=INPUTS_HELP)
    add_rules_options(p)
    p.add_argument("--json", action="store_true", help=JSON_HELP)
    p.set_defaults(func=cmd_stats)

    p = add("replay", help="replay round by round: prompt tokens, cache hits and cost")
    p.add_argument("inputs", nargs="+", metavar="INPUT", help=INPUTS_HELP)
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
    p.add_argument("--plot", metavar="FILE",
                   help="draw prompt tokens per round (.png or .svg; needs matplotlib); with several "
                        "conversations, one file each: NAME-1.png, NAME-2.png ...")
    p.add_argument("--json", action="store_true", help="one JSON object per conversation and rule set "
                                                       "(JSON Lines; docs/json.md)")
    p.set_defaults(func=cmd_replay)

    p = add("diff", help="items whose decision changes between two rule sets, and the cost impact")
    p.add_argument("old", metavar="OLD_RULES")
    p.add_argument("new", metavar="NEW_RULES")
    p.add_argument("inputs", nargs="+", metavar="INPUT", help=INPUTS_HELP)
    add_format_option(p)
    p.add_argument("--output-format", dest="format_out", choices=["text", "markdown"], default="text",
                   help="text (default) or markdown, for a pull-request comment")
    p.add_argument("--price", default="anthropic", metavar="PRICE", help="as for replay")
    p.add_argument("--json", action="store_true", help=JSON_HELP)
    p.add_argument("--exit-code", action="store_true",
                   help=f"exit {CHANGED} when any decision changes (for CI; 2 still means an input failed)")
    p.set_defaults(func=cmd_diff)


def cmd_stats(args) -> int:
    sets = rulesets(args)
    corpus = Corpus(args.inputs, args.format)
    rows: list[StatsRow] = []
    for conv, fmt in corpus:
        row = stats_row(conv.name, conv.messages, sets, fmt)
        rows.append(row)
        if args.json:
            print_json_line(row.to_dict())
        progress(len(rows), conv.name)
    progress_done(len(rows))
    if not args.json and rows:
        print(table([("conversation", "messages", "tool results", "tokens before", "tokens after", "saved",
                      "saved by rule")] + [_stats_cells(r) for r in rows + [stats_total(rows)]],
                    right={1, 2, 3, 4, 5}))
    return corpus.finish()


def _stats_cells(row: StatsRow) -> tuple[str, ...]:
    shares = sorted(row.saved_by_rule.items(), key=lambda kv: -kv[1])
    by_rule = ", ".join(f"{rule} {saved / row.tokens_before:.0%}" for rule, saved in shares
                        if row.tokens_before) or "-"
    return (row.conversation, f"{row.messages:,}", f"{row.tool_results:,}", f"{row.tokens_before:,}",
            f"{row.tokens_after:,}", share(row.tokens_before, row.tokens_after), by_rule)


def _lifetime(seconds: float | None) -> str:
    if seconds is None:
        return "never expires"
    for unit, size in (("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{seconds / size:g}{unit}"
    return f"{seconds:g}s"


def _replay_table(rows: list[ReplayRow]) -> str:
    base = rows[0]
    header = ("rule set", "rounds", "prompt tokens", "vs none", "cached tokens", "cached share", "cost",
              "vs none", "recall")
    return table([header] + [
        (r.rule_set, f"{r.rounds:,}", f"{r.prompt_tokens:,}", ratio(r.prompt_tokens, base.prompt_tokens),
         f"{r.cached_tokens:,}", ratio(r.cached_tokens, r.prompt_tokens), f"{r.cost:,.0f}",
         ratio(r.cost, base.cost), f"{r.recall:.3f}") for r in rows], right=set(range(1, 9)))


def _plot_path(path: str, index: int) -> str:
    """``--plot`` FILE for the conversation numbered ``index`` (from 1) when there are several."""
    stem, ext = os.path.splitext(path)
    return f"{stem}-{index}{ext}"


def cmd_replay(args) -> int:
    plugin_failures(args)
    price = parse_price(args.price)
    if args.cache_expiry and price.lifetime is None:
        raise InputError(f"--cache-expiry: the price {args.price!r} has no cache lifetime; "
                         "give one as CACHED,UNCACHED,LIFETIME or use a profile")
    if args.plot:
        pyplot_for(args.plot)
    primary = args.rules or ["default"]  # as in apply: the bundled default unless -r says otherwise
    sets = [("none", None), (" + ".join(primary), [load_rules(r) for r in primary])]
    sets += [(name, [load_rules(name)]) for name in args.compare or []]
    corpus = Corpus(args.inputs, args.format)
    rows: list[ReplayRow] = []
    plots: list[tuple[str, list]] = []
    for conv, fmt in corpus:
        name, messages = conv.name, conv.messages
        cold = None
        cache = "cache never expires"
        if args.cache_expiry:
            cold = cold_rounds(conv.timestamps, round_starts(messages, fmt), price.lifetime)
            cache = (f"cache expires after {_lifetime(price.lifetime)}: {sum(cold)} rounds found it expired"
                     if conv.timestamps is not None else "no timestamps in this log: cache never expires")
        results = replays(messages, fmt, sets, price, cold)
        mine = [ReplayRow.of(name, r, cold) for r in results]
        rows += mine
        if args.plot:
            plots.append((name, results))
        if args.json:
            for row in mine:
                print_json_line(row.to_dict())
            continue
        print(("\n" if len(rows) > len(mine) else "")
              + f"{name}: replayed {mine[0].rounds:,} rounds; prices: cached {price.cached}, uncached "
              f"{price.uncached} ({price.name}); {cache}; recall: {mine[0].references:,} references")
        print(_replay_table(mine))
    if not args.json and len(rows) > len(sets):
        print(f"\ntotal: {count(len(rows) // len(sets), 'conversation')}")
        print(_replay_table(replay_total(rows)))
    for index, (name, results) in enumerate(plots, 1):
        plot_rounds(results, args.plot if len(plots) == 1 else _plot_path(args.plot, index), title=name)
    return corpus.finish()


def cmd_diff(args) -> int:
    plugin_failures(args)
    old, new = load_rules(args.old), load_rules(args.new)
    price = parse_price(args.price)
    corpus = Corpus(args.inputs, args.format)
    rows: list[DiffRow] = []
    for conv, fmt in corpus:
        rows.append(diff_row(conv.name, conv.messages, fmt, old, new, price))
        if args.json:
            print_json_line(rows[-1].to_dict())
    if not args.json and corpus.files:
        print("\n".join(_diff_text(args, rows)))
    changed = any(row.changes for row in rows)
    return corpus.finish(CHANGED if args.exit_code and changed else OK)


def _diff_summary(row: DiffRow) -> str:
    return (f"tokens after {row.tokens_after_old:,} -> {row.tokens_after_new:,}; replay cost {row.cost_old:,.0f} "
            f"-> {row.cost_new:,.0f} ({ratio(row.cost_new, row.cost_old)}x); recall {row.recall_old:.3f} -> "
            f"{row.recall_new:.3f}")


def _diff_text(args, rows: list[DiffRow]) -> list[str]:
    md = args.format_out == "markdown"
    out = [f"## rules-compact diff: `{args.old}` → `{args.new}`" if md else f"diff {args.old} -> {args.new}"]
    for row in rows:
        out += ["", f"### {row.conversation}" if md else f"{row.conversation}:",
                f"{len(row.changes):,} decisions change; {_diff_summary(row)}"]
        if row.changes:
            cells = [("item", "msg", "role", "tool", "old", "new")] + [
                (str(c.item), str(c.message), c.role, c.tool or "-", c.old, c.new) for c in row.changes]
            out += ["", markdown(cells) if md else table(cells, right={0, 1})]
    total = diff_total(rows)
    out += ["", f"{'**Total**' if md else 'total'}: {len(total.changes):,} decisions change in "
                f"{count(len(rows), 'conversation')}; {_diff_summary(total)}"]
    return out
