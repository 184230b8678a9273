"""``stats``, ``replay``, ``diff``: what rule sets do over conversations."""

from __future__ import annotations

import argparse
import os
from contextlib import closing
from types import SimpleNamespace
from typing import Iterator, Sequence

from ..batch import Diff, FileRows, Replays, Stats, default_jobs, require_table, run, write_table
from ..plot import plot_rounds
from .inputs import add_format_option, add_rules_options, plugin_failures
from .output import OK, Progress, markdown, ratio, share, table, warn

__all__ = ["register"]


def register(add) -> None:
    p = add("stats", help="per conversation: tokens before and after, and what each rule saved")
    p.add_argument("inputs", nargs="+", metavar="INPUT")
    add_rules_options(p)
    add_batch_options(p)
    p.set_defaults(func=cmd_stats)

    p = add("replay", help="replay round by round: prompt tokens, cache hits and cost")
    p.add_argument("inputs", nargs="+", metavar="INPUT")
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
    add_batch_options(p)
    p.set_defaults(func=cmd_replay)

    p = add("diff", help="items whose decision changes between two rule sets, and the cost impact")
    p.add_argument("old", metavar="OLD_RULES")
    p.add_argument("new", metavar="NEW_RULES")
    p.add_argument("inputs", nargs="+", metavar="INPUT")
    add_format_option(p)
    p.add_argument("--output-format", dest="format_out", choices=["text", "markdown"], default="text",
                   help="text (default) or markdown, for a pull-request comment")
    p.add_argument("--price", default="anthropic", metavar="PRICE", help="as for replay")
    add_batch_options(p)
    p.set_defaults(func=cmd_diff)


def add_batch_options(p) -> None:
    p.add_argument("-j", "--jobs", type=_jobs, metavar="N",
                   help=f"worker processes (default: the cores, here {default_jobs()}); the output is the same")
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="compute on a Dask cluster, such as tcp://HOST:8786 (needs rules-compact[dask]); "
                        "its workers read the files at the same paths")
    p.add_argument("--table", metavar="FILE",
                   help="write the per-conversation rows to FILE: JSONL, or Parquet for a .parquet FILE "
                        "(needs rules-compact[parquet]); '-': JSONL on stdout instead of the text")


def _jobs(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a number of processes, 1 or more, got {text!r}")
    return value


def _results(args, task, inputs: list[str]) -> Iterator[FileRows]:
    """Each input's rows in input order, with its warnings printed (a bad file stops the command),
    a progress bar on a terminal, the rows written to --table at the end (streamed for ``-``)."""
    if args.table:
        require_table(args.table)
    progress = Progress([_size(path) for path in inputs])
    table = []
    with closing(run(task, inputs, jobs=args.jobs, scheduler=args.scheduler)) as results:
        for result in results:
            if result.warnings:
                progress.clear()
                for message in result.warnings:
                    warn(message)
            if result.error is not None:
                progress.close()
                raise result.error
            progress.advance(result.conversations)
            if args.table == "-":
                write_table(result.rows, "-")
            elif args.table:
                table.extend(result.rows)
            yield result
    progress.close()
    if args.table and args.table != "-":
        write_table(table, args.table)


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def _text(args) -> bool:
    """Whether the command prints its text (not with ``--table -``)."""
    return args.table != "-"


def cmd_stats(args) -> int:
    plugin_failures(args)
    task = Stats.of(args.rules or ["default"], args.format)
    rows = [row for result in _results(args, task, args.inputs) for row in result.rows]
    if not _text(args):
        return OK
    lines = [("conversation", "messages", "tool results", "tokens before", "tokens after", "saved", "saved by rule")]
    totals = [0, 0, 0, 0]
    for row in rows:
        before, after = row["tokens_before"], row["tokens_after"]
        shares = sorted(((s["rule"], s["tokens"]) for s in row["saved_by_rule"]), key=lambda kv: -kv[1])
        by_rule = ", ".join(f"{rule} {saved / before:.0%}" for rule, saved in shares if before) or "-"
        lines.append((row["conversation"], str(row["messages"]), str(row["tool_results"]), f"{before:,}",
                      f"{after:,}", share(before, after), by_rule))
        for i, key in enumerate(("messages", "tool_results", "tokens_before", "tokens_after")):
            totals[i] += row[key]
    lines.append((f"total ({len(rows)})", str(totals[0]), str(totals[1]), f"{totals[2]:,}",
                  f"{totals[3]:,}", share(totals[2], totals[3]), ""))
    print(table(lines, right={1, 2, 3, 4, 5}))
    return OK


def _lifetime(seconds: float | None) -> str:
    if seconds is None:
        return "never expires"
    for unit, size in (("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{seconds / size:g}{unit}"
    return f"{seconds:g}s"


def cmd_replay(args) -> int:
    plugin_failures(args)
    task = Replays.of(args.rules or ["default"], args.compare or [], args.price, args.cache_expiry, args.format)
    price, per = task.price, len(task.sets)
    for result in _results(args, task, args.inputs):
        for at in range(0, len(result.rows) if _text(args) else 0, per):
            _print_replay(args, price, result.rows[at:at + per])
    return OK


def _print_replay(args, price, results: Sequence[dict]) -> None:
    """One conversation's replays (``none`` first) as a header line and a table."""
    base, name = results[0], results[0]["conversation"]
    cache = "cache never expires"
    if args.cache_expiry:
        cache = (f"cache expires after {_lifetime(price.lifetime)}: {base['expired_rounds']} rounds found it expired"
                 if base["expired_rounds"] is not None else "no timestamps in this log: cache never expires")
    rows = [("rule set", "rounds", "prompt tokens", "vs none", "cached tokens", "cached share", "cost",
             "vs none", "recall")]
    for r in results:
        rows.append((r["ruleset"], str(r["rounds"]), f"{r['prompt_tokens']:,}",
                     ratio(r["prompt_tokens"], base["prompt_tokens"]), f"{r['cached_tokens']:,}",
                     ratio(r["cached_tokens"], r["prompt_tokens"]), f"{r['cost']:,.0f}", ratio(r["cost"], base["cost"]),
                     f"{r['recall']:.3f}"))
    print(f"{name}: replayed {base['rounds']} rounds; prices: cached {price.cached}, uncached {price.uncached} "
          f"({price.name}); {cache}; recall: {base['referenced']:,} references")
    print(table(rows, right={1, 2, 3, 4, 5, 6, 7, 8}))
    if args.plot:
        plot_rounds([SimpleNamespace(label=r["ruleset"], rounds=r["rounds"], prompt_tokens=r["prompt_tokens_by_round"])
                     for r in results], args.plot, title=name)


def cmd_diff(args) -> int:
    plugin_failures(args)
    task = Diff.of(args.old, args.new, args.price, args.format)
    md = args.format_out == "markdown"
    out = [f"## rules-compact diff: `{args.old}` → `{args.new}`" if md else f"diff {args.old} -> {args.new}"]
    totals = [0, 0, 0.0, 0.0]
    referenced = kept_old = kept_new = 0
    for result in _results(args, task, args.inputs):
        for row in result.rows:
            totals[0] += row["tokens_after_old"]
            totals[1] += row["tokens_after_new"]
            totals[2] += row["cost_old"]
            totals[3] += row["cost_new"]
            referenced += row["referenced"]
            kept_old += row["kept_old"]
            kept_new += row["kept_new"]
            changes = row["changes"]
            rows = [("item", "msg", "role", "tool", "old", "new")] + [
                (str(c["item"]), str(c["message"]), c["role"], c["tool"] or "-", c["old"], c["new"]) for c in changes]
            out.append("")
            out.append(f"### {row['conversation']}" if md else f"{row['conversation']}:")
            out.append(f"{len(changes)} decisions change; tokens after {row['tokens_after_old']:,} -> "
                       f"{row['tokens_after_new']:,}; replay cost {row['cost_old']:,.0f} -> {row['cost_new']:,.0f} "
                       f"({ratio(row['cost_new'], row['cost_old'])}x); recall {row['recall_old']:.3f} -> "
                       f"{row['recall_new']:.3f}")
            if changes:
                out.append("")
                out.append(markdown(rows) if md else table(rows, right={0, 1}))
    out.append("")
    out.append(f"{'**Total**' if md else 'total'}: tokens after {totals[0]:,} -> {totals[1]:,}; "
               f"replay cost {totals[2]:,.0f} -> {totals[3]:,.0f} ({ratio(totals[3], totals[2])}x); "
               f"recall {_recall(kept_old, referenced)} -> {_recall(kept_new, referenced)}")
    if _text(args):
        print("\n".join(out))
    return OK


def _recall(kept: int, referenced: int) -> str:
    return f"{kept / referenced if referenced else 1.0:.3f}"
