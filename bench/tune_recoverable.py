"""The grid default-recoverable's parameters were chosen from, on the default's tuning half.

Each candidate is rules/presets/default-recoverable.yaml with its parameters changed: the number
of newest results kept (keep-recent), the size up to which older results stay (keep-small;
clear-superseded and clear-edit-echoes clear only above it), and how many results back
tool-calling turns lose their text over 200 characters (strip-old-text). Every candidate is
replayed (rules_compact.replay, anthropic prices, chars4, a cache that never expires; the store
a temporary folder, whose paths are as long as the user-cache folder's) on the tuning half that
issue 15 chose the default on (``TUNING``), beside observation masking. Per candidate: the worst
and mean cost ratio over the tuning files, and on how many of them its *recoverable* recall
falls below observation masking's recall - 0.005; sorted by that count, then by mean cost.
The shipped preset is marked.

Usage:
    python3 bench/tune_recoverable.py            # 42 candidates, about 2 minutes on 2 cores
    python3 bench/tune_recoverable.py --keep 1 2 --small 200 --strip 15
"""

from __future__ import annotations

import argparse
import itertools
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rules_compact import load_rules  # noqa: E402
from rules_compact.documents import read_conversations_from  # noqa: E402
from rules_compact.formats import FORMATS  # noqa: E402
from rules_compact.language.loader import parse_rules  # noqa: E402
from rules_compact.recall import References  # noqa: E402
from rules_compact.replay import PRICES, replay, round_starts  # noqa: E402
from rules_compact.store import FolderStore  # noqa: E402

TRACES = ROOT / "tests" / "data" / "traces"
PRESET_FILE = ROOT / "rules" / "presets" / "default-recoverable.yaml"
PRICE = PRICES["anthropic"]
TOLERANCE = 0.005
ODD = "odd"  # the odd-numbered conversations of the file (from 1)
#: issue 15's tuning half (rules/default.yaml's description): file -> conversations (ODD or all)
TUNING = {"tau-bench/gpt-4o-airline.json": ODD,
          "tau-bench/tool-calling-grok-3-0.0_range_0--1_user-grok-3-llm_0921131646.json": ODD,
          "tau2-bench/2025-08-10T02-44-06_telecom_gpt-4o_user_gpt-4o.json": ODD,
          "openhands/resolver_mock_output.jsonl": ODD,
          "claude-code/4d5611e5-241a-462a-8d15-5122611a9569.jsonl": None,
          "claude-code/agent-a2898e3.jsonl": None,
          "claude-code/agent-aa84377.jsonl": None,
          "mini-swe-agent/deepseek_chat_dev_rerun__pylint-dev__astroid-1333.traj.json": None,
          "mini-swe-agent/deepseek_lite_dev__marshmallow-code__marshmallow-1343.traj.json": None,
          "mini-swe-agent/deepseek_reasoner_dev__sqlfluff__sqlfluff-1733.traj.json": None,
          "openhands/multi_swe_bench_examples_output.jsonl": None,
          "swe-agent/fc_replace_from_source__marshmallow-1867.traj": None}


def candidate(keep: int, small: int, strip: int) -> str:
    """The preset with these parameters, as YAML text (a complete file: the default's rules merged in)."""
    data = yaml.safe_load(PRESET_FILE.read_text(encoding="utf-8"))
    data["name"] = f"keep{keep}-small{small}-strip{strip}"
    data["rules"] = [r for r in data["rules"] if r["name"] not in ("keep-recent", "keep-small", "strip-old-text")]
    data["rules"] += [
        {"name": "keep-recent", "match": {"age": {"unit": "tool_results", "lt": keep}}, "action": "keep"},
        {"name": "strip-old-text", "match": {"role": "assistant", "has_tool_calls": True,
                                             "age": {"unit": "tool_results", "gte": strip}},
         "action": {"strip-text": {"keep_max_chars": 200}}},
        {"name": "keep-small", "match": {"size": {"unit": "chars", "lte": small}},
         "action": {"clear-inputs": {"longer_than": 200}}}]
    for rule in data["rules"]:
        if rule["name"] in ("clear-superseded", "clear-edit-echoes"):
            rule["match"]["size"]["gt"] = small
    return yaml.safe_dump(data, sort_keys=False)


def shipped() -> tuple:
    data = yaml.safe_load(PRESET_FILE.read_text(encoding="utf-8"))
    by_name = {r["name"]: r for r in data["rules"]}
    parent = {r["name"]: r for r in yaml.safe_load((ROOT / "rules" / "default.yaml").read_text())["rules"]}
    pick = lambda name: by_name.get(name, parent[name])  # noqa: E731
    return (pick("keep-recent")["match"]["age"]["lt"], pick("keep-small")["match"]["size"]["lte"],
            pick("strip-old-text")["match"]["age"]["gte"])


def conversations(path: str, which) -> list:
    convs = read_conversations_from(str(TRACES / path))
    return convs[::2] if which == ODD else convs  # odd-numbered from 1: indices 0, 2, ...


def measure(job: tuple) -> tuple:
    """(cost, no compaction's cost, references, recoverable, kept, cleared, refetched) of one rule
    file on one file (``params`` None: observation masking)."""
    path, params = job
    with tempfile.TemporaryDirectory(prefix="rules-compact-store-") as folder:
        rules = (load_rules("preset:observation-masking") if params is None else
                 parse_rules(candidate(*params), str(PRESET_FILE), store=FolderStore(folder)))
        totals = [0.0] * 7
        for conv in conversations(path, TUNING[path]):
            starts = round_starts(conv.messages, conv.format)
            refs = References(conv.messages, FORMATS[conv.format], starts)
            base = replay(conv.messages, None, conv.format, PRICE, references=refs)
            r = replay(conv.messages, [rules], conv.format, PRICE, references=refs)
            for j, v in enumerate((r.cost, base.cost, sum(r.referenced), sum(r.recoverable), sum(r.kept), r.cleared,
                                   r.refetched)):
                totals[j] += v
    return tuple(totals)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep", type=int, nargs="+", default=[1, 2, 3, 4, 5, 6, 8])
    parser.add_argument("--small", type=int, nargs="+", default=[100, 200, 400])
    parser.add_argument("--strip", type=int, nargs="+", default=[15, 30])
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args(argv)
    grid = list(itertools.product(args.keep, args.small, args.strip))
    jobs = [(p, params) for params in [None] + grid for p in TUNING]
    with ProcessPoolExecutor(args.jobs) as pool:
        done = dict(zip(jobs, pool.map(measure, jobs)))
    floor = {p: (done[(p, None)][4] / done[(p, None)][2] if done[(p, None)][2] else 1.0) - TOLERANCE for p in TUNING}
    rows = []
    for params in grid:
        costs, below = [], []
        for p in TUNING:
            cost, base, refs, recoverable, *_ = done[(p, params)]
            costs.append(cost / base)
            if (recoverable / refs if refs else 1.0) < floor[p]:
                below.append(p)
        pooled = [sum(done[(p, params)][j] for p in TUNING) for j in range(7)]
        rows.append((len(below), sum(costs) / len(costs), max(costs), pooled[4] / pooled[2],
                     pooled[6] / pooled[5] if pooled[5] else 0.0, params))
    rows.sort()
    mine = shipped()
    print(f"Tuning half: {len(TUNING)} files (odd-numbered conversations of tau-bench, tau2 and OpenHands "
          "resolver; the rest whole). Cost relative to no compaction (anthropic, chars4, cache never expires).\n")
    print("| keep newest | keep small | strip text from | files under obs-mask recall - 0.005 | mean cost | worst cost "
          "| recall (pooled) | regret (pooled) |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for below, mean, worst, recall, regret, params in rows:
        mark = " **(shipped)**" if params == mine else ""
        print(f"| {params[0]}{mark} | {params[1]} | {params[2]} | {below} | {mean:.3f} | {worst:.3f} | {recall:.3f} "
              f"| {regret:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
