"""Instructions per call (callgrind): the issue-14 rows of bench/speed.py, counted rather than
timed, so that a shared machine's load does not move them.

Each implementation runs in a child Python under ``valgrind --tool=callgrind`` twice, with the
same set-up: once making no timed call and once making ``--calls`` of them; the difference
over ``--calls`` is the count per call (the interpreter's start, the imports, building the
conversation and a warm-up call cancel out).  ``PYTHONHASHSEED=0`` makes the counts repeat
exactly.  The conversations, the baseline (bench/seed000_loop.py) and what a "next round" is
are bench/speed.py's.  A count is not a time: it leaves out cache misses and memory stalls,
which grow with the history (the loop's own time grows 15x from 10,000 to 100,000 messages,
its count 11x).

Usage:
    python3 bench/instructions.py --growth         # about 20 minutes
    python3 bench/instructions.py --sizes 100 1000 --growth
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from speed import GROWTH_TARGET, TARGETS, table  # noqa: E402

IMPLEMENTATIONS = {  # label -> (what the child runs, sizes it is counted at)
    "seed-000 loop (baseline)": ("loop", None),
    "keep-recent-results: compact()": ("keep", None),
    "keep-recent-results: Compactor(verify=False), next round": ("round", None),
    "keep-recent-results: Compactor(verify=True), next round": ("round-verify", None),
    "default rules without their step: compact()": ("content", (100, 1_000)),
    "default rules: compact()": ("default", (100, 1_000)),
}


def child(impl: str, n: int, calls: int, total: int) -> None:
    """Set up ``impl`` at ``n`` messages for ``total`` calls, then make ``calls`` of them."""
    import dataclasses
    import gc

    from rules_compact import Compactor, compact, load_rules
    from seed000_loop import micro_compact
    from speed import conversation, next_round

    msgs = conversation(n)
    preset = load_rules("preset:keep-recent-results")
    if impl == "loop":
        def call():
            micro_compact(msgs)
    elif impl in ("keep", "content", "default"):
        rules = {"keep": preset, "content": dataclasses.replace(load_rules("default"), step=None),
                 "default": load_rules("default")}[impl]

        def call():
            compact(msgs, rules, format="openai")
    else:  # a round: the Compactors are made (and their first calls run) before any is counted
        rounds = next_round(lambda: Compactor(preset, format="openai", verify=impl == "round-verify"), msgs)
        states = iter([rounds.prepare() for _ in range(total + 1)])

        def call():
            rounds.fn(next(states))
    call()
    gc.collect()
    for _ in range(calls):
        call()


def collected(impl: str, n: int, calls: int, total: int) -> int:
    """The instructions callgrind counts in a child that makes ``calls`` of ``total`` calls."""
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    done = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable,
                           __file__, "--child", impl, str(n), str(calls), str(total)],
                          env=env, capture_output=True, text=True, check=True)
    found = re.search(r"Collected : (\d+)", done.stderr)
    if found is None:
        raise SystemExit(f"callgrind printed no count for {impl} at {n}:\n{done.stderr[-2000:]}")
    return int(found.group(1))


def per_call(impl: str, n: int, calls: int) -> float:
    """Instructions per call (per round for a Compactor: a timed call is 10 rounds)."""
    per = (collected(impl, n, calls, calls) - collected(impl, n, 0, calls)) / calls
    return per / 10 if impl.startswith("round") else per


def fmt_count(count: float) -> str:
    return f"{count / 1e6:,.2f} M"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 1_000, 10_000])
    parser.add_argument("--calls", type=int, default=None, help="counted calls (default: 5, 2 and 1 by size)")
    parser.add_argument("--growth", action="store_true", help="also keep-recent compact() at 100,000 messages")
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        impl, n, calls, total = args.child
        child(impl, int(n), int(calls), int(total))
        return 0
    if shutil.which("valgrind") is None:
        print("bench/instructions.py needs valgrind (Debian: apt-get install valgrind)", file=sys.stderr)
        return 2
    rows = [("messages", "implementation", "instructions per call", "vs seed-000 loop", "target")]
    counts: dict[tuple[str, int], float] = {}
    for n in args.sizes:
        calls = args.calls or (5 if n <= 100 else 2 if n <= 1_000 else 1)
        for label, (impl, sizes) in IMPLEMENTATIONS.items():
            if sizes is not None and n not in sizes:
                continue
            counts[impl, n] = per_call(impl, n, calls)
            ratio = counts[impl, n] / counts["loop", n]
            target = TARGETS.get(label, {}).get(n)
            verdict = "" if target is None else f"<= {target:g}x: {'met' if ratio <= target else 'MISSED'}"
            rows.append((f"{n:,}", label, fmt_count(counts[impl, n]), f"{ratio:.2f}x", verdict))
    print("Instructions per call (callgrind; a Compactor's per round):")
    print(table(rows, right={0, 2, 3}))
    if args.growth:
        small = 10_000
        for impl in ("loop", "keep"):
            if (impl, small) not in counts:
                counts[impl, small] = per_call(impl, small, 1)
            counts[impl, 100_000] = per_call(impl, 100_000, 1)
        growth = {impl: counts[impl, 100_000] / counts[impl, small] for impl in ("loop", "keep")}
        print(f"\nkeep-recent-results compact() from 10,000 to 100,000 messages: {growth['keep']:.2f}x the "
              f"instructions (target <= {GROWTH_TARGET:g}x: {'met' if growth['keep'] <= GROWTH_TARGET else 'MISSED'}); "
              f"the loop's {growth['loop']:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
