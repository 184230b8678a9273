"""Regenerate the README's "Measured on real traces" comparison table.

For each mini-swe-agent trace in tests/data/traces/mini-swe-agent/, replay the conversation round
by round (rules_compact.replay: each round's prompt is the history up to an assistant turn,
compacted; tokens estimated with chars4; a round's cached tokens are those of the longest message
prefix identical to the previous round's prompt) with no compaction, the default rules and every
preset in rules/presets/, and print, relative to no compaction:

* prompt: total prompt tokens over all rounds, as a ratio of no compaction's;
* cached: the share of a rule set's own prompt tokens that the cache serves;
* cost: 0.1 x cached + 1.25 x uncached tokens (Anthropic's cache-read and cache-write prices,
  --price to change), as a ratio of no compaction's.

Usage:
    python3 bench/replay_table.py                 # markdown tables, on 2 processes
    python3 bench/replay_table.py --jobs 1 --price openai
    python3 bench/replay_table.py --check         # exit 1 unless the default meets its targets

Deterministic: no timings. Takes a few minutes (the presets replay every round in full).
"""

from __future__ import annotations

import argparse
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rules_compact import load_rules  # noqa: E402
from rules_compact.readers import read_conversations  # noqa: E402
from rules_compact.replay import parse_price, replay  # noqa: E402

TRACES = ROOT / "tests" / "data" / "traces" / "mini-swe-agent"
PRESETS = sorted(p.stem for p in (ROOT / "rules" / "presets").glob("*.yaml"))
TARGET_PROMPT, TARGET_COST = 0.65, 0.75


def label(path: Path) -> str:
    """``deepseek_chat_dev_rerun__pylint-dev__astroid-1333.traj.json`` -> ``astroid-1333 (chat)``."""
    stem = path.name.removesuffix(".traj.json")
    model = stem.split("__")[0].split("_")[1]
    return f"{stem.rsplit('__', 1)[-1]} ({model})"


def rule_sets() -> list[str]:
    return ["default"] + [f"preset:{name}" for name in PRESETS]


def measure(job: tuple[str, str, str]) -> tuple[str, str, tuple[float, float, float]]:
    """One (trace, rule set): prompt ratio, cached share, cost ratio."""
    path, name, price_text = job
    messages = read_conversations(Path(path).read_bytes(), path)[0].messages
    price = parse_price(price_text)
    base = replay(messages, None, "openai", price)
    r = replay(messages, [load_rules(name)], "openai", price, name)
    return path, name, (r.total_prompt / base.total_prompt, r.total_cached / r.total_prompt, r.cost / base.cost)


def table(title: str, column: int, traces: list[Path], results: dict, best_low: bool = True) -> str:
    head = ["rule set"] + [label(t) for t in traces] + ["worst"]
    lines = [f"**{title}**", "", "| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1)]
    for name in rule_sets():
        values = [results[(str(t), name)][column] for t in traces]
        worst = max(values) if best_low else min(values)
        cells = [f"{v:.3f}" for v in values] + [f"{worst:.3f}"]
        shown = f"**{name}**" if name == "default" else name
        lines.append("| " + " | ".join([shown] + cells) + " |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=2, help="worker processes (default 2)")
    parser.add_argument("--price", default="anthropic", help="anthropic (default), openai or CACHED,UNCACHED")
    parser.add_argument("--check", action="store_true",
                        help=f"exit 1 unless the default's prompt <= {TARGET_PROMPT}, cost <= {TARGET_COST} and "
                             "its cost is below every preset's, on every trace")
    args = parser.parse_args(argv)
    price = parse_price(args.price)
    traces = sorted(TRACES.glob("*.json"))
    jobs = [(str(t), name, args.price) for t in traces for name in rule_sets()]
    if args.jobs > 1:
        with ProcessPoolExecutor(args.jobs) as pool:
            done = list(pool.map(measure, jobs))
    else:
        done = [measure(job) for job in jobs]
    results = {(path, name): values for path, name, values in done}

    print(f"Replay of {len(traces)} mini-swe-agent traces, relative to no compaction "
          f"(prices: cached {price.cached}, uncached {price.uncached}; tokens: chars4).\n")
    print(table("Cost (cache-aware), relative to no compaction: lower is better", 2, traces, results))
    print()
    print(table("Prompt tokens, relative to no compaction: lower is better", 0, traces, results))
    print()
    print(table("Cached share of the rule set's own prompt tokens ('worst' is the lowest)", 1, traces, results,
                best_low=False))

    failures = []
    for t in traces:
        prompt, _, cost = results[(str(t), "default")]
        if prompt > TARGET_PROMPT:
            failures.append(f"{label(t)}: prompt {prompt:.3f} > {TARGET_PROMPT}")
        if cost > TARGET_COST:
            failures.append(f"{label(t)}: cost {cost:.3f} > {TARGET_COST}")
        for name in rule_sets()[1:]:
            if results[(str(t), name)][2] <= cost:
                failures.append(f"{label(t)}: {name} costs {results[(str(t), name)][2]:.3f} <= default {cost:.3f}")
    print()
    print("default meets its targets on every trace" if not failures
          else "default misses its targets:\n" + "\n".join(f"  {f}" for f in failures))
    return 1 if failures and args.check else 0


if __name__ == "__main__":
    sys.exit(main())
