"""How low cost can go at a given reference recall: content rules from gentle to drastic.

Issue 15 asks for a cost of at most 0.70 on the Claude Code main sessions while keeping
reference recall at least observation masking's minus 0.005. This prints, per trace, the
cost/recall pairs of two families of rule files, each with the k newest tool results kept
(``--keep``, default 4 to 10):

* ``default``: rules/default.yaml with its keep-recent rule at k;
* ``clear-all``: the default's step and cache breakpoint, then everything outside the k newest
  results cleared: every other result becomes the bare placeholder (errors and workflow tools
  too), every call argument over 40 characters is shortened, and tool-calling turns keep no
  text at all. No rule file of this rule language clears more while keeping k results.

For each: the cost and recall with the file's own step (bench/replay_table.py's measure), and
those of its clairvoyant bound (the cheapest step schedule of its content rules, chosen knowing
the whole future: no schedule is cheaper). The last column says whether the file with its own
step, and its bound, meet both targets.

Usage:
    python3 bench/frontier.py                                  # the three Claude Code main sessions
    python3 bench/frontier.py --traces 'mini-swe-agent/*' --target 0.60 --keep 6 8 10
"""

from __future__ import annotations

import argparse
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from rules_compact import load_rules  # noqa: E402
from rules_compact.documents import read_conversations_from  # noqa: E402
from rules_compact.language.loader import parse_rules  # noqa: E402
from rules_compact.recall import References  # noqa: E402
from rules_compact.formats import FORMATS  # noqa: E402
from rules_compact.replay import StepSchedules, parse_price, replay, round_starts  # noqa: E402
from replay_table import is_main_session, label, trace_files  # noqa: E402

DEFAULT = (ROOT / "rules" / "default.yaml").read_text(encoding="utf-8")
KEEP_RECENT = "    match: {age: {unit: tool_results, lt: 8}}\n"
CLEAR_ALL = """
  - name: keep-recent
    match: {{age: {{unit: tool_results, lt: {k}}}}}
    action: keep
  - name: strip-all-text
    match: {{role: assistant, has_tool_calls: true}}
    action:
      strip-text: {{keep_max_chars: 0}}
  - name: keep-assistant-turns
    match: {{role: assistant}}
    action: keep
  - name: clear-every-other-result
    match: {{role: tool}}
    action: [{{clear-inputs: {{longer_than: 40}}}}, placeholder]
"""


def rule_file(family: str, k: int):
    """The rule set of ``family`` keeping the ``k`` newest results."""
    if family == "default":
        assert KEEP_RECENT in DEFAULT, "rules/default.yaml's keep-recent rule moved"
        text = DEFAULT.replace(KEEP_RECENT, KEEP_RECENT.replace("lt: 8", f"lt: {k}"))
    else:
        head, rules = DEFAULT.split("\nrules:\n")
        head = head.split("\ndefaults:")[0]  # the bare placeholder
        breakpoints = rules.split("  - name: keep-errors")[0]
        text = f"{head}\nrules:\n{breakpoints.rstrip()}{CLEAR_ALL.format(k=k)}"
    return parse_rules(text, f"<{family}, {k} kept>")


def measure(job: tuple[str, str, int, str]) -> tuple:
    """(cost, recall, bound cost, bound recall) of one rule file on one trace, pooled."""
    path, family, k, price_text = job
    price, totals = parse_price(price_text), [0.0] * 6
    rules = load_rules("preset:observation-masking") if family == "obs-mask" else rule_file(family, k)
    for conv in read_conversations_from(path):
        starts = round_starts(conv.messages, conv.format)
        refs = References(conv.messages, FORMATS[conv.format], starts)
        base = replay(conv.messages, None, conv.format, price, references=refs)
        own = replay(conv.messages, [rules], conv.format, price, references=refs)
        schedules = StepSchedules(conv.messages, rules, conv.format)
        best = schedules.replay(schedules.cheapest(price), price, references=refs)
        for j, value in enumerate((base.cost, own.cost, best.cost, sum(base.referenced), sum(own.kept),
                                   sum(best.kept))):
            totals[j] += value
    base, own, best, refs, kept, best_kept = totals
    return own / base, kept / refs if refs else 1.0, best / base, best_kept / refs if refs else 1.0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traces", metavar="GLOB",
                        help="trace files under tests/data/traces (default: the Claude Code main sessions)")
    parser.add_argument("--keep", type=int, nargs="+", default=list(range(4, 11)))
    parser.add_argument("--target", type=float, default=0.70, help="the cost target (default 0.70)")
    parser.add_argument("--price", default="anthropic")
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args(argv)
    paths = [str(p) for p in trace_files(args.traces or "claude-code/*") if args.traces or is_main_session(p)]
    if not paths:
        parser.error(f"no trace file matches {args.traces!r}")
    jobs = [(p, "obs-mask", 0, args.price) for p in paths]
    jobs += [(p, family, k, args.price) for p in paths for family in ("default", "clear-all") for k in args.keep]
    with ProcessPoolExecutor(args.jobs) as pool:
        done = dict(zip(jobs, pool.map(measure, jobs)))
    print(f"Cost relative to no compaction (prices {args.price}, chars4, a cache that never expires) and "
          f"reference recall; the bound is the cheapest step schedule of the same content rules. The "
          f"targets: cost <= {args.target:.2f} and recall >= observation masking's - 0.005.\n")
    meeting: dict[tuple[str, int], list[str]] = {}  # (family, k) -> the traces where the file meets both
    for p in paths:
        floor = done[(p, "obs-mask", 0, args.price)][1] - 0.005
        print(f"**{label(Path(p))}** (observation masking's recall: {floor + 0.005:.3f})\n")
        print("| rules | newest kept | cost | recall | bound cost | bound recall | meets both (own / bound) |")
        print("|---|---:|---:|---:|---:|---:|---|")
        for family in ("default", "clear-all"):
            for k in args.keep:
                cost, recall, bound, bound_recall = done[(p, family, k, args.price)]
                meets = " / ".join("yes" if c <= args.target and r >= floor else "no"
                                   for c, r in ((cost, recall), (bound, bound_recall)))
                if meets.startswith("yes"):
                    meeting.setdefault((family, k), []).append(label(Path(p)))
                print(f"| {family} | {k} | {cost:.3f} | {recall:.3f} | {bound:.3f} | {bound_recall:.3f} | {meets} |")
        print()
    print(f"**Traces where the file meets both, with its own step** (of {len(paths)})\n")
    print("| rules | " + " | ".join(f"{k} kept" for k in args.keep) + " |")
    print("|---|" + "---:|" * len(args.keep))
    for family in ("default", "clear-all"):
        print(f"| {family} | " + " | ".join(str(len(meeting.get((family, k), []))) for k in args.keep) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
