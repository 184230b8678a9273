"""``stats``, ``replay``, ``diff``: what rule sets do over conversations (files, folders, globs).

Each expands its inputs as a ``Corpus`` and computes one row per conversation
(:mod:`rules_compact.rows`) through :func:`rules_compact.batch.run`: on ``--jobs`` processes
(this one and workers; a file of many conversations spread over them in chunks) or a Dask
``--scheduler``, the results in input order (a bad file is reported and skipped; the exit code
is 2 when any was).
``--json`` prints the rows as JSON Lines, ``--table`` writes them to a file; otherwise they
become a table."""

from __future__ import annotations

import argparse
import os
from contextlib import closing
from typing import Iterator

from ..batch import Diff, FileResult, Replays, Stats, Task, default_jobs, require_table, run, write_table
from ..plot import plot_rounds, pyplot_for
from ..replay import PRICE_HELP, Bill
from ..rows import DiffRow, ReplayRow, StatsRow, diff_total, replay_total, stats_total
from .inputs import INPUTS_HELP, Corpus, add_format_option, add_rules_options, plugin_failures, refuse_overwriting, unreadable
from .output import CHANGED, OK, Progress, count, markdown, one_line, print_json_line, ratio, share, table, warn, wrap

__all__ = ["register"]

JSON_HELP = "one JSON object per conversation (JSON Lines; docs/json.md)"


def register(add) -> None:
    p = add("stats", help="per conversation: tokens before and after, and what each rule saved")
    p.add_argument("inputs", nargs="+", metavar="INPUT", help=INPUTS_HELP)
    add_rules_options(p)
    p.add_argument("--json", action="store_true", help=JSON_HELP)
    add_batch_options(p)
    p.set_defaults(func=cmd_stats)

    p = add("replay", help="replay round by round: prompt tokens, cache hits and cost")
    p.add_argument("inputs", nargs="+", metavar="INPUT", help=INPUTS_HELP)
    add_rules_options(p)
    p.add_argument("--compare", action="append", metavar="RULES", help="another rule set to compare; repeatable")
    p.add_argument("--price", default="anthropic", metavar="PRICE",
                   help=f"price profile: {PRICE_HELP}; or CACHED,UNCACHED[,LIFETIME] (prices from 0 to 1e6; "
                        "LIFETIME in seconds, or 5m, 1h); each profile's source: README, Price profiles")
    p.add_argument("--cache-expiry", action="store_true",
                   help="a round more than the price's cache lifetime after the previous one reads nothing from "
                        "cache (logs with timestamps: Claude Code, OpenHands, tau2); default: the cache never "
                        "expires")
    p.add_argument("--estimator", default="chars4", metavar="NAME",
                   help="what counts a prompt's tokens: chars4 (default), o200k or cl100k (exact OpenAI tokens; the "
                        "tokens extra), claude (fitted on Claude Code's billed tokens), or any estimator a rule "
                        "file may name")
    p.add_argument("--rounds", action="store_true",
                   help="on logs that record what was billed (Claude Code, Codex): no compaction's estimate beside "
                        "the bill, round by round")
    p.add_argument("--plot", metavar="FILE",
                   help="draw prompt tokens per round (.png or .svg; needs matplotlib); with several "
                        "conversations, one file each: NAME-1.png, NAME-2.png ...")
    p.add_argument("--json", action="store_true", help="one JSON object per conversation and rule set "
                                                       "(JSON Lines; docs/json.md)")
    add_batch_options(p)
    p.set_defaults(func=cmd_replay)

    p = add("diff", help="items whose decision changes between two rule sets, and the cost impact")
    p.add_argument("old", metavar="OLD_RULES", help="the rules before the change: a rule file, 'default' or "
                                                    "'preset:NAME'")
    p.add_argument("new", metavar="NEW_RULES", help="the rules after it")
    p.add_argument("inputs", nargs="+", metavar="INPUT", help=INPUTS_HELP)
    add_format_option(p)
    p.add_argument("--output-format", dest="format_out", choices=["text", "markdown"], default="text",
                   help="text (default) or markdown, for a pull-request comment")
    p.add_argument("--price", default="anthropic", metavar="PRICE", help="as for replay")
    p.add_argument("--all", action="store_true", dest="show_all",
                   help="show every conversation, not only those where some decision changes")
    p.add_argument("--json", action="store_true", help=JSON_HELP)
    p.add_argument("--exit-code", action="store_true",
                   help=f"exit {CHANGED} when any decision changes (for CI; 2 still means an input failed)")
    add_batch_options(p)
    p.set_defaults(func=cmd_diff)


def add_batch_options(p) -> None:
    p.add_argument("-j", "--jobs", type=_jobs, metavar="N",
                   help=f"worker processes (default: the cores, here {default_jobs()}; 1: none, this one "
                        f"computes); the output is the same")
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="compute on a Dask cluster, such as tcp://HOST:8786 (needs rules-compact[dask]); "
                        "its workers read the inputs at the paths given")
    p.add_argument("--table", metavar="FILE",
                   help="also write the rows (as --json prints them) to FILE: JSON Lines, or Parquet for a "
                        ".parquet FILE (needs rules-compact[parquet])")


def _jobs(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a number of processes, 1 or more, got {text!r}")
    return value


def _results(args, task: Task, corpus: Corpus) -> Iterator[FileResult]:
    """Each file's results in input order, its warnings printed; a bad file is reported and
    skipped; a progress bar on a terminal; the rows written to ``--table`` at the end."""
    if args.table:
        require_table(args.table)
    refuse_outputs(task, corpus, [("--table", args.table), ("--plot", getattr(args, "plot", None))])
    progress = Progress([_size(path) for path in corpus.paths])
    rows: list[dict] = []
    with closing(run(task, corpus.paths, jobs=args.jobs, scheduler=args.scheduler, refuse=unreadable)) as results:
        for result in results:
            if result.warnings or result.error is not None:
                progress.clear()
            for message in result.warnings:
                warn(message)
            if result.error is not None:
                corpus.fail(result.path, str(result.error))
            else:
                corpus.files += 1
                if args.table:
                    rows += result.rows(task)
            progress.advance(len(result.results))
            if result.error is None:
                yield result
    progress.close()
    if args.table:
        write_table(rows, args.table)


def refuse_outputs(task: Task, corpus: Corpus, outputs: list[tuple[str, str | None]]) -> None:
    """Refuse an output that is an input: a conversation file (one in a folder too) or a rule file."""
    refuse_overwriting(outputs, corpus.paths, [source.load() for source in task.sources], "one of the INPUT files")


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def _rows(args, task, corpus: Corpus) -> list:
    """Every conversation's row, in input order; with ``--json`` each printed as it comes."""
    rows = []
    for result in _results(args, task, corpus):
        for row in result.results:
            rows.append(row)
            if args.json:
                print_json_line(row.to_dict())
    return rows


def cmd_stats(args) -> int:
    plugin_failures(args)
    task = Stats.of(args.rules or ["default"], args.format)
    corpus = Corpus(args.inputs)
    rows: list[StatsRow] = _rows(args, task, corpus)
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
              "vs none", "recall", "recoverable", "regret")
    return table([header] + [
        (r.rule_set, f"{r.rounds:,}", f"{r.prompt_tokens:,}", ratio(r.prompt_tokens, base.prompt_tokens),
         f"{r.cached_tokens:,}", ratio(r.cached_tokens, r.prompt_tokens), f"{r.cost:,.0f}",
         ratio(r.cost, base.cost), f"{r.recall:.3f}", f"{r.recoverable_recall:.3f}", f"{r.regret:.3f}")
        for r in rows], right=set(range(1, 11)))


def _bill_text(bill: Bill, rounds: bool) -> str:
    """No compaction's estimate beside what the log says was billed; ``rounds``: round by round."""
    text = wrap(f"billed, by the log, in {bill.of_rounds if len(bill.rounds) == bill.of_rounds else len(bill.rounds)}"
                f"{'' if len(bill.rounds) == bill.of_rounds else f' of {bill.of_rounds}'} rounds: "
                f"{bill.billed_tokens:,} prompt tokens (estimated {bill.estimated_tokens:,}: "
                f"{ratio(bill.estimated_tokens, bill.billed_tokens)}x), cost {bill.billed_cost:,.0f} at these prices "
                f"(estimated {bill.estimated_cost:,.0f}: {bill.cost_error:+.1%}); with the first round's "
                f"{bill.unseen_tokens:,} tokens the log lacks (system prompt, tools) in every round: estimated "
                f"{bill.estimated_cost_with_unseen:,.0f} ({bill.cost_error_with_unseen:+.1%})")
    if not rounds:
        return text
    header = ("round", "estimated", "cached", "billed", "cache read", "cache write", "est / billed")
    cells = [(str(r.round), f"{r.estimated_tokens:,}", f"{r.estimated_cached:,}", f"{r.billed_tokens:,}",
              f"{r.billed_cache_read:,}", f"{r.billed_cache_write:,}", ratio(r.estimated_tokens, r.billed_tokens))
             for r in bill.rounds]
    return text + "\n" + table([header] + cells, right=set(range(7)))


def _plot_path(path: str, index: int) -> str:
    """``--plot`` FILE for the conversation numbered ``index`` (from 1) when there are several."""
    stem, ext = os.path.splitext(path)
    return f"{stem}-{index}{ext}"


def cmd_replay(args) -> int:
    plugin_failures(args)
    if args.plot:
        pyplot_for(args.plot)
    task = Replays.of(args.rules or ["default"], args.compare or [], args.price, args.cache_expiry, args.format,
                      args.estimator)
    price, sets = task.price, len(task.sets)
    corpus = Corpus(args.inputs)
    rows: list[ReplayRow] = []
    plots: list[tuple[str, tuple]] = []
    for result in _results(args, task, corpus):
        for replayed in result.results:
            mine = replayed.rows
            name = mine[0].conversation
            rows += mine
            if args.plot:
                plots.append((name, replayed.replays))
            if args.json:
                for row in mine:
                    print_json_line(row.to_dict())
                continue
            cache = "cache never expires"
            if args.cache_expiry:
                cache = (f"cache expires after {_lifetime(price.lifetime)}: {mine[0].cold_rounds} rounds found it "
                         "expired" if replayed.timestamps else "no timestamps in this log: cache never expires")
            print(("\n" if len(rows) > len(mine) else "")
                  + wrap(f"{one_line(name)}: replayed {mine[0].rounds:,} rounds; prices: cached {price.cached}, uncached "
                         f"{price.uncached} ({price.name}); {cache}; recall: {mine[0].references:,} references"))
            print(_replay_table(list(mine)))
            if mine[0].billed is not None:
                print(_bill_text(mine[0].billed, args.rounds))
    if not args.json and len(rows) > sets:
        print(f"\ntotal: {count(len(rows) // sets, 'conversation')}")
        print(_replay_table(replay_total(rows)))
    paths = [args.plot if len(plots) == 1 else _plot_path(args.plot, index) for index in range(1, len(plots) + 1)]
    refuse_outputs(task, corpus, [("--plot", path) for path in paths])
    for path, (name, results) in zip(paths, plots):
        plot_rounds(results, path, title=name)
    return corpus.finish()


def cmd_diff(args) -> int:
    plugin_failures(args)
    task = Diff.of(args.old, args.new, args.price, args.format)
    corpus = Corpus(args.inputs)
    rows: list[DiffRow] = _rows(args, task, corpus)
    if not args.json and corpus.files:
        text = _diff_text(args, rows)
        print("\n".join(text if args.format_out == "markdown" else map(wrap, text)))
    changed = any(row.changes for row in rows)
    return corpus.finish(CHANGED if args.exit_code and changed else OK)


def _diff_summary(row: DiffRow) -> str:
    return (f"tokens after {row.tokens_after_old:,} -> {row.tokens_after_new:,}; replay cost {row.cost_old:,.0f} "
            f"-> {row.cost_new:,.0f} ({ratio(row.cost_new, row.cost_old)}x); recall {row.recall_old:.3f} -> "
            f"{row.recall_new:.3f}")


def _changes(n: int) -> str:
    """``1 decision changes``, ``3 decisions change``."""
    return f"{count(n, 'decision')} change{'s' if n == 1 else ''}"


def _diff_text(args, rows: list[DiffRow]) -> list[str]:
    md = args.format_out == "markdown"
    out = [f"## rules-compact diff: `{args.old}` → `{args.new}`" if md else f"diff {args.old} -> {args.new}"]
    shown = [row for row in rows if row.changes or args.show_all]
    for row in shown:
        name = one_line(row.conversation)
        out += ["", f"### {name}" if md else f"{name}:",
                f"{_changes(len(row.changes))}; {_diff_summary(row)}"]
        out += [f"{label} {why}" for label, why in (("old rules", row.not_run_old), ("new rules", row.not_run_new))
                if why]
        if row.changes:
            cells = [("item", "msg", "role", "tool", "old", "new")] + [
                (str(c.item), str(c.message), c.role, c.tool or "-", c.old, c.new) for c in row.changes]
            out += ["", markdown(cells) if md else table(cells, right={0, 1})]
    if len(shown) < len(rows):
        out += ["", f"{count(len(rows) - len(shown), 'conversation')} where no decision changes not shown "
                    "(--all shows them)"]
    total = diff_total(rows)
    out += ["", f"{'**Total**' if md else 'total'}: {_changes(len(total.changes))} in "
                f"{count(len(rows), 'conversation')}; {_diff_summary(total)}"]
    for rules, why in ((args.old, total.not_run_old), (args.new, total.not_run_new)):
        if why:
            out.append(f"{rules} decided nothing in any conversation, {why} in the largest")
    return out
