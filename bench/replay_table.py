"""The default against no compaction, every preset and its clairvoyant bound, on every trace.

Every trace file of tests/data/traces/ that the readers understand (the derived
``*.messages.json`` left out: it repeats its ``.jsonl``) is read into its conversations, and each
conversation is replayed round by round (rules_compact.replay: each round's prompt is the
history up to an assistant turn, compacted; tokens by chars4; a round's cached tokens are those
of the longest message prefix identical to the previous round's prompt) with no compaction, the
rule file under test (``--rules``, default: rules/default.yaml), every preset in rules/presets/,
and the clairvoyant bound of the rule file's content rules (rules_compact.replay.StepSchedules:
the rule file without its step, the cheapest step schedule chosen knowing the whole future).
Per trace file it prints, relative to no compaction and totalled over the file's conversations:

* cost: the price profile's cached x cached + uncached x uncached tokens (``--price``, default
  ``anthropic``: 0.1 and 1.25), with a cache that never expires;
* prompt: total prompt tokens over all rounds;
* cached: the share of the rule set's own prompt tokens that the cache serves;
* recall: reference recall (rules_compact.recall), kept references over all references;
* recoverable recall: the references kept or held in a saved result that a placeholder in the
  prompt names (rules_compact.recall); recall itself for rule sets that save nothing;
* regret: re-fetch regret (rules_compact.regret), the share of the results cleared in some
  round whose exact call the recorded agent made again while they were hidden;

then, for the files with several conversations, each conversation's cost ratio summarised as
median / worst (and how many are over 1.0); then cost with the cache expiring after the
profile's lifetime, on the files whose logs carry timestamps (an extra view, not a target);
then default-recoverable (issue 32: the default saving every cleared result, clearing harder)
beside the default and observation masking; then the targets of issue 15 and issue 32, each
met or missed by how much. Every rule set saves into a temporary folder store (the same ids as
any store; its paths about as long as the user-cache folder's), removed at the end.
``--check`` exits 1 unless every target is met. A file's "trace" numbers are its conversations pooled (sums over them).

``--check`` also puts the estimate beside the bill on the logs that record what was billed
(Claude Code's ``usage``, Codex's ``token_count``): per file, no compaction's estimated and
billed prompt tokens and cost over the billed rounds, with the cache expiring as the log's
timestamps say, and the cost error with the first round's unseen tokens (the system prompt and
tools, which no log records) added to every round (``rules_compact.replay.Bill``). A file whose
cost estimate is off by more than 10% is named, and fails the check. ``--estimator`` counts the
tokens of every replay with another estimator (``o200k``, ``claude`` ...).

Usage:
    python3 bench/replay_table.py                          # everything, on 2 processes
    python3 bench/replay_table.py --traces 'mini-swe-agent/*' --check
    python3 bench/replay_table.py --rules my.yaml --price openai --jobs 4
    python3 bench/replay_table.py --traces 'claude-code/*' --check --estimator claude

Deterministic: no timings in the tables (the run time goes to stderr). The whole corpus (462
conversations) takes about 30 s on 2 idle cores, 60-80 s on a loaded machine; the clairvoyant bound
is a small part of it (StepSchedules: one compaction per candidate boundary, then O(R x B^2)
steps; under a second for the longest trace).
"""

from __future__ import annotations

import argparse
import atexit
import fnmatch
import shutil
import tempfile
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rules_compact import load_rules  # noqa: E402
from rules_compact.documents import read_conversations_from  # noqa: E402
from rules_compact.formats import FORMATS  # noqa: E402
from rules_compact.recall import References  # noqa: E402
from rules_compact.kinds.estimators import ESTIMATORS  # noqa: E402
from rules_compact.regret import Refetches  # noqa: E402
from rules_compact.replay import StepSchedules, bill, cold_rounds, parse_price, replay, round_starts  # noqa: E402
from rules_compact.store import FolderStore  # noqa: E402

TRACES = ROOT / "tests" / "data" / "traces"
PATTERNS = ("*/*.json", "*/*.jsonl", "*/*.traj")
RECOVERABLE = "default-recoverable"  # issue 32's variant of the default: its own column, not a peer preset
PRESETS = sorted(p.stem for p in (ROOT / "rules" / "presets").glob("*.yaml") if p.stem != RECOVERABLE)
SHORT = {"anthropic-clear-thinking": "a-think", "anthropic-clear-tool-uses": "a-tools",
         "count-triggered-prune": "count", "keep-recent-results": "recent", "langchain-clear-tool-uses": "lc-tools",
         "observation-masking": "obs-mask", "opencode-prune": "opencode", "read-time-spans": "read-spans",
         "strip-tool-turn-reasoning": "strip", "strip-tool-turn-reasoning-selective": "strip-sel"}
DEFAULT, BOUND = "default", "bound"
LONG_ROUNDS = 70
TOLERANCE = 0.005
TARGET_COST = {"mini-swe-agent": 0.60, "claude-code": 0.70}  # on sessions of LONG_ROUNDS rounds or more
TARGET_PROMPT = {"mini-swe-agent": 0.50}
BOUND_FACTOR = 1.10
PRESET_SAVES = 0.02
BILL_TOLERANCE = 0.10


def trace_files(pattern: str | None) -> list[Path]:
    files = sorted({p for glob in PATTERNS for p in TRACES.glob(glob) if not p.name.endswith(".messages.json")})
    if pattern:
        files = [p for p in files if fnmatch.fnmatch(str(p.relative_to(TRACES)), pattern)]
    return files


def label(path: Path) -> str:
    """A short name for a trace file."""
    folder, name = path.parent.name, path.name
    if folder == "mini-swe-agent":
        stem = name.removesuffix(".traj.json")
        return f"mini {stem.rsplit('__', 1)[-1]} ({stem.split('__')[0].split('_')[1]})"
    if folder == "claude-code":
        stem = name.removesuffix(".jsonl")
        return f"cc {stem}" if stem.startswith("agent-") else f"cc main {stem[:8]}"
    short = {"tau-bench": "tau", "tau2-bench": "tau2", "openhands": "oh", "swe-agent": "swe"}.get(folder, folder)
    return f"{short} {name.split('.')[0][:28]}"


def is_main_session(path: Path) -> bool:
    return path.parent.name == "claude-code" and not path.name.startswith("agent-")


@dataclass(frozen=True)
class Totals:
    """One rule set on one conversation."""

    prompt: int
    cached: int
    cost: float
    referenced: int
    kept: int
    cold_cost: float  # with the cache expiring (equal to cost without timestamps)
    cleared: int  # results some round's prompt showed cleared
    refetched: int  # of them, re-fetched while hidden
    recoverable: int = 0  # references kept or in a saved result a placeholder names


@dataclass(frozen=True)
class Measured:
    path: str
    name: str
    rounds: int
    timestamps: bool
    base: Totals
    by_set: dict  # rule set label -> Totals
    bill: object = None  # rules_compact.replay.Bill of no compaction, cache expiring; None: no usage logged


_FILES: dict[str, list] = {}
_RULES: dict[str, object] = {}
_STORE: list = []  # this process's store folder, made on first use and removed at exit


def _conversations(path: str) -> list:
    if path not in _FILES:
        _FILES[path] = read_conversations_from(path)
    return _FILES[path]


def _store() -> FolderStore:
    if not _STORE:
        folder = tempfile.mkdtemp(prefix="rules-compact-store-")
        atexit.register(shutil.rmtree, folder, True)
        _STORE.append(FolderStore(folder))
    return _STORE[0]


def _rules(name: str):
    if name not in _RULES:
        _RULES[name] = load_rules(name, store=_store())
    return _RULES[name]


def _totals(r, cold) -> Totals:
    return Totals(r.total_prompt, r.total_cached, r.cost, sum(r.referenced), sum(r.kept), r.expire(cold).cost,
                  r.cleared, r.refetched, sum(r.recoverable))


def measure(job: tuple[str, int, str, str, str]) -> Measured:
    """One conversation: no compaction, the rule file, default-recoverable, every preset, and the bound."""
    path, index, price_text, rules_name, estimator_name = job
    conv = _conversations(path)[index]
    messages, fmt, price = conv.messages, conv.format, parse_price(price_text)
    estimator = ESTIMATORS[estimator_name]
    starts = round_starts(messages)
    refs = References(messages, FORMATS[fmt], starts)
    fetches = Refetches(messages, FORMATS[fmt], starts)
    cold = cold_rounds(conv.timestamps, starts, price.lifetime)
    base = replay(messages, None, fmt, price, estimator=estimator, references=refs)
    by_set = {}
    for name in [rules_name, RECOVERABLE] + [f"preset:{p}" for p in PRESETS]:
        r = replay(messages, [_rules(name)], fmt, price, name, estimator, refs, fetches)
        by_set[DEFAULT if name == rules_name else name.removeprefix("preset:")] = _totals(r, cold)
    schedules = StepSchedules(messages, _rules(rules_name), fmt, estimator)
    best = schedules.replay(schedules.cheapest(price), price, BOUND, references=refs, refetches=fetches)
    best_cold = schedules.replay(schedules.cheapest(price, cold), price, BOUND, references=refs, refetches=fetches)
    by_set[BOUND] = Totals(best.total_prompt, best.total_cached, best.cost, sum(best.referenced), sum(best.kept),
                           best_cold.expire(cold).cost, best.cleared, best.refetched, sum(best.recoverable))
    return Measured(path, conv.name, len(starts), conv.timestamps is not None, _totals(base, cold), by_set,
                    bill(base.expire(cold), conv.usage, starts))


def _ratio(a: float, b: float) -> float:
    return a / b if b else 1.0


class File:
    """The conversations of one trace file, pooled."""

    def __init__(self, path: Path, convs: list[Measured]):
        self.path, self.convs, self.label = path, convs, label(path)
        for c in convs:  # NAME#N -> LABEL#N
            object.__setattr__(c, "name", self.label + (c.name[len(str(path)):] if c.name.startswith(str(path)) else ""))
        self.timestamps = any(c.timestamps for c in convs)

    def pooled(self, rule_set: str, what: str) -> float:
        sets = [c.by_set[rule_set] for c in self.convs]
        if what == "cost":
            return _ratio(sum(t.cost for t in sets), sum(c.base.cost for c in self.convs))
        if what == "cold":
            return _ratio(sum(t.cold_cost for t in sets), sum(c.base.cold_cost for c in self.convs))
        if what == "prompt":
            return _ratio(sum(t.prompt for t in sets), sum(c.base.prompt for c in self.convs))
        if what == "cached":
            return _ratio(sum(t.cached for t in sets), sum(t.prompt for t in sets))
        if what == "recall":
            return _ratio(sum(t.kept for t in sets), sum(t.referenced for t in sets))
        if what == "recoverable":
            return _ratio(sum(t.recoverable for t in sets), sum(t.referenced for t in sets))
        if what == "regret":
            cleared = sum(t.cleared for t in sets)
            return sum(t.refetched for t in sets) / cleared if cleared else 0.0
        raise ValueError(what)

    def costs(self, rule_set: str) -> list[float]:
        """Each conversation's cost ratio."""
        return [_ratio(c.by_set[rule_set].cost, c.base.cost) for c in self.convs]

    @property
    def references(self) -> int:
        return sum(c.base.referenced for c in self.convs)


def columns() -> list[str]:
    return [DEFAULT, BOUND] + PRESETS


def _head(title: str, first: str = "trace") -> list[str]:
    names = [f"**{DEFAULT}**", BOUND] + [SHORT.get(p, p) for p in PRESETS]
    return [f"**{title}**", "", "| " + " | ".join([first, "convs"] + names) + " |",
            "|---|---:|" + "---:|" * len(names)]


def table(title: str, files: list[File], what: str) -> str:
    lines = _head(title)
    for f in files:
        cells = [f"{f.pooled(s, what):.3f}" for s in columns()]
        lines.append("| " + " | ".join([f.label, str(len(f.convs))] + cells) + " |")
    return "\n".join(lines)


def spread_table(files: list[File]) -> str:
    lines = _head("Cost per conversation, files with several: median / worst (how many over 1.0)")
    for f in files:
        cells = []
        for s in columns():
            costs = f.costs(s)
            cells.append(f"{statistics.median(costs):.3f} / {max(costs):.3f} ({sum(c > 1.0 for c in costs)})")
        lines.append("| " + " | ".join([f.label, str(len(f.convs))] + cells) + " |")
    return "\n".join(lines)


def targets(files: list[File]) -> list[tuple[str, bool, str]]:
    """(target, met, detail) for every target of issue 15 that applies to these files."""
    out = []
    for f in files:
        for c in f.convs:
            cost = _ratio(c.by_set[DEFAULT].cost, c.base.cost)
            out.append(("cost <= 1.00 on every conversation", cost <= 1.0 + TOLERANCE, f"{c.name}: {cost:.3f}"))
            if c.rounds < LONG_ROUNDS:
                continue
            kind = "claude-code" if is_main_session(f.path) else f.path.parent.name
            where = f"{c.name} ({c.rounds} rounds)"
            limit = TARGET_COST.get(kind)
            if limit is not None:
                out.append((f"cost <= {limit:.2f} on {kind} sessions of {LONG_ROUNDS}+ rounds", cost <= limit,
                            f"{where}: {cost:.3f}"))
            limit = TARGET_PROMPT.get(kind)
            if limit is not None:
                prompt = _ratio(c.by_set[DEFAULT].prompt, c.base.prompt)
                out.append((f"prompt <= {limit:.2f} on {kind} sessions of {LONG_ROUNDS}+ rounds", prompt <= limit,
                            f"{where}: {prompt:.3f}"))
            over = _ratio(c.by_set[DEFAULT].cost, c.by_set[BOUND].cost)
            out.append((f"cost <= {BOUND_FACTOR:.2f} x the clairvoyant bound on sessions of {LONG_ROUNDS}+ rounds",
                        over <= BOUND_FACTOR, f"{where}: {over:.3f} x"))
    for f in files:
        ours, theirs = f.pooled(DEFAULT, "recall"), f.pooled("observation-masking", "recall")
        out.append(("recall >= observation-masking's - 0.005 on every trace", ours >= theirs - TOLERANCE,
                    f"{f.label}: {ours:.3f} vs {theirs:.3f}"))
        ours, theirs = f.pooled(DEFAULT, "regret"), f.pooled("observation-masking", "regret")
        out.append(("re-fetch regret <= observation-masking's on every trace", ours <= theirs,
                    f"{f.label}: {ours:.3f} vs {theirs:.3f}"))
        presets = {p: f.pooled(p, "cost") for p in PRESETS}
        cheapest = min(presets, key=presets.get)
        if presets[cheapest] < 1.0 - PRESET_SAVES:
            ours = f.pooled(DEFAULT, "cost")
            out.append(("cheaper than every preset where one saves > 2 %", ours < presets[cheapest],
                        f"{f.label}: {ours:.3f} vs {SHORT[cheapest]} {presets[cheapest]:.3f}"))
    return out


RECOVERABLE_MEASURES = (("cost", "cost"), ("prompt", "prompt"), ("recall", "recall"),
                        ("recoverable", "recoverable recall"), ("regret", "regret"))
RECOVERABLE_SETS = ((DEFAULT, "default"), (RECOVERABLE, "recov"), ("observation-masking", "obs-mask"))


def recoverable_table(files: list[File]) -> str:
    """default-recoverable beside the default and observation masking, per file."""
    head = [f"{measure}: {short}" for _, measure in RECOVERABLE_MEASURES for _, short in RECOVERABLE_SETS]
    lines = ["| trace | convs | " + " | ".join(head) + " |", "|---|---:|" + "---:|" * len(head)]
    for f in files:
        cells = [f"{f.pooled(s, what):.3f}" for what, _ in RECOVERABLE_MEASURES for s, _ in RECOVERABLE_SETS]
        lines.append("| " + " | ".join([f.label, str(len(f.convs))] + cells) + " |")
    return "\n".join(lines)


def recoverable_targets(files: list[File]) -> list[tuple[str, bool, str]]:
    """(target, met, detail) for issue 32's targets of default-recoverable."""
    out = []
    for f in files:
        for c in f.convs:
            if is_main_session(f.path) and c.rounds >= LONG_ROUNDS:
                cost = _ratio(c.by_set[RECOVERABLE].cost, c.base.cost)
                out.append((f"{RECOVERABLE}: cost <= {TARGET_COST['claude-code']:.2f} on claude-code sessions of "
                            f"{LONG_ROUNDS}+ rounds", cost <= TARGET_COST["claude-code"],
                            f"{c.name} ({c.rounds} rounds): {cost:.3f}"))
    for f in files:
        ours, theirs = f.pooled(RECOVERABLE, "recoverable"), f.pooled("observation-masking", "recall")
        out.append((f"{RECOVERABLE}: recoverable recall >= observation-masking's recall - 0.005 on every trace",
                    ours >= theirs - TOLERANCE, f"{f.label}: {ours:.3f} vs {theirs:.3f}"))
    return out


def bill_table(files: list[File]) -> tuple[str, list[str]]:
    """No compaction's estimate beside the bill, per file whose logs record it; and the files
    whose cost estimate (with the unseen tokens) is off by more than BILL_TOLERANCE."""
    head = ["trace", "billed rounds", "billed tokens", "estimated", "est / billed", "unseen (1st round)",
            "cost error", "with unseen"]
    rows, off = [], []
    for f in files:
        bills = [c.bill for c in f.convs if c.bill is not None]
        if not bills:
            continue
        billed, estimated = sum(b.billed_tokens for b in bills), sum(b.estimated_tokens for b in bills)
        cost = sum(b.billed_cost for b in bills)
        error = sum(b.estimated_cost for b in bills) / cost - 1
        with_unseen = sum(b.estimated_cost_with_unseen for b in bills) / cost - 1
        rows.append([f.label, f"{sum(len(b.rounds) for b in bills):,}", f"{billed:,}", f"{estimated:,}",
                     f"{estimated / billed:.3f}", f"{sum(b.unseen_tokens for b in bills):,}", f"{error:+.1%}",
                     f"{with_unseen:+.1%}"])
        if abs(with_unseen) > BILL_TOLERANCE:
            off.append(f"{f.label} {with_unseen:+.1%}")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" + "---:|" * (len(head) - 1)]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows]), off


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traces", metavar="GLOB",
                        help="only the trace files whose path under tests/data/traces matches, e.g. 'tau*/*'")
    parser.add_argument("--rules", default="default", help="the rule file under test (default: the bundled default)")
    parser.add_argument("--price", default="anthropic",
                        help="anthropic (default), anthropic-1h, openai, openai-legacy or CACHED,UNCACHED[,LIFETIME]")
    parser.add_argument("--jobs", type=int, default=2, help="worker processes (default 2)")
    parser.add_argument("--check", action="store_true", help="exit 1 unless every target is met and every billed "
                                                             "log's cost estimate is within 10%% of its bill")
    parser.add_argument("--estimator", default="chars4", choices=sorted(ESTIMATORS),
                        help="what counts the tokens (default chars4)")
    args = parser.parse_args(argv)
    if (why := ESTIMATORS[args.estimator].missing()) is not None:
        parser.error(f"--estimator {args.estimator!r} {why}")
    price = parse_price(args.price)
    started = time.perf_counter()
    paths = trace_files(args.traces)
    if not paths:
        parser.error(f"no trace file matches {args.traces!r}")
    jobs = [(str(p), i, args.price, args.rules, args.estimator) for p in paths for i in range(len(_conversations(str(p))))]
    _FILES.clear()  # the workers read the files themselves
    if args.jobs > 1:
        with ProcessPoolExecutor(args.jobs) as pool:
            done = list(pool.map(measure, jobs, chunksize=4))
    else:
        done = [measure(job) for job in jobs]
    files = [File(p, [m for m in done if m.path == str(p)]) for p in paths]

    legend = ", ".join(f"{SHORT[p]} = preset:{p}" for p in PRESETS)
    lifetime = f"{price.lifetime:g} s" if price.lifetime else "none"
    print(f"Replay of {len(done)} conversations in {len(files)} trace files, relative to no compaction; prices "
          f"{price.name}: cached {price.cached}, uncached {price.uncached}; tokens: {args.estimator}. Rule file under test: "
          f"{args.rules}; {BOUND} = its content rules on the cheapest step schedule. Presets: {legend}.\n")
    print(table("Cost (cache never expires), relative to no compaction: lower is better", files, "cost"))
    print()
    several = [f for f in files if len(f.convs) > 1]
    if several:
        print(spread_table(several))
        print()
    print(table("Prompt tokens, relative to no compaction: lower is better", files, "prompt"))
    print()
    print(table("Cached share of the rule set's own prompt tokens", files, "cached"))
    print()
    print(table("Reference recall: higher is better", files, "recall"))
    print()
    print(table("Recoverable recall (references kept, or in a saved result a placeholder names): higher is better",
                files, "recoverable"))
    print()
    print(table("Re-fetch regret (cleared results whose call the agent made again while hidden): lower is better",
                files, "regret"))
    print()
    print(f"**{RECOVERABLE} beside the default and observation masking** (recov = {RECOVERABLE}; cost and prompt "
          "relative to no compaction, cache never expires)\n")
    print(recoverable_table(files))
    print()
    timed = [f for f in files if f.timestamps]
    if timed and price.lifetime:
        print(table(f"Cost with the cache expiring after {lifetime} (logs with timestamps; bound: its own "
                    "cheapest schedule under expiry)", timed, "cold"))
        print()
    results = targets(files) + recoverable_targets(files)
    missed = [r for r in results if not r[1]]
    print(f"**Targets** ({len(results) - len(missed)} of {len(results)} checks met; a trace is a file, its "
          "conversations pooled)\n")
    for name in dict.fromkeys(r[0] for r in results):
        rows = [r for r in results if r[0] == name]
        bad = [r for r in rows if not r[1]]
        print(f"* {name}: " + ("met" if not bad else f"MISSED on {len(bad)} of {len(rows)}: "
                                + "; ".join(r[2] for r in bad)))
    off: list[str] = []
    if args.check:
        text, off = bill_table(files)
        print(f"\n**The estimate beside the bill** (no compaction, {args.estimator}, cache expiring by the logs' "
              f"timestamps; unseen: what the first billed round was billed beyond its estimate, the system prompt "
              f"and tools no log records; 'with unseen' adds them to every round)\n\n{text}\n")
        print("* cost estimate (with unseen) within 10% of the bill: " + (
            "met" if not off else f"MISSED on {len(off)}: " + "; ".join(off)))
    sys.stdout.flush()
    print(f"{len(done)} conversations in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    return 1 if (missed or off) and args.check else 0


if __name__ == "__main__":
    sys.exit(main())
