"""The grid the default rules' parameters were chosen from.

Each candidate is rules/default.yaml with its parameters changed: the step size (tool results per
step), the number of newest results kept (keep-recent), the size up to which older results are
kept (keep-small; clear-superseded clears only results above it), the strip-text options of
strip-old-reasoning (keep_max_chars, or keep_text: only reasoning goes, or nothing kept), and
whether clear-superseded is there at all. Every candidate is replayed on the six mini-swe-agent
traces; the table lists, per candidate, the worst (highest) and mean cost ratio and prompt-token
ratio over the traces, sorted by worst cost, with the shipped default marked.

The replay here is an exact shortcut of rules_compact.replay for step rule files
(rules_compact.replay.StepSchedules on the rule file's own boundaries): a round's prompt is the
compaction of the history up to the latest boundary followed by the raw rest, so the compaction
is computed once per boundary instead of once per round. The first candidate is checked equal
to rules_compact.replay on one trace before the grid runs.

Usage:
    python3 bench/tune_default.py            # 36 candidates, a few minutes on 2 cores
    python3 bench/tune_default.py --full     # 288 candidates
"""

from __future__ import annotations

import argparse
import itertools
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rules_compact import load_rules  # noqa: E402
from rules_compact.readers import read_conversations  # noqa: E402
from rules_compact.replay import PRICES, Replay, StepSchedules, replay, step_schedule  # noqa: E402

TRACES = sorted((ROOT / "tests" / "data" / "traces" / "mini-swe-agent").glob("*.json"))
DEFAULT_FILE = ROOT / "rules" / "default.yaml"
PRICE = PRICES["anthropic"]
STRIPS = {"kmc100": {"keep_max_chars": 100}, "kmc200": {"keep_max_chars": 200},
          "kmc400": {"keep_max_chars": 400}, "all": {}, "thinking-only": {"keep_text": True}}


def candidate(every: int, keep: int, small: int, strip: str, superseded: bool) -> str:
    """rules/default.yaml with these parameters, as YAML text."""
    data = yaml.safe_load(DEFAULT_FILE.read_text(encoding="utf-8"))
    data["name"] = f"step{every}-keep{keep}-small{small}-{strip}{'-superseded' if superseded else ''}"
    data["step"]["every"] = every
    rules = []
    for rule in data["rules"]:
        if rule["name"] == "keep-recent":
            rule["match"]["age"]["lt"] = keep
        elif rule["name"] == "keep-small":
            rule["match"]["size"]["lte"] = small
        elif rule["name"] == "clear-superseded":
            if not superseded:
                continue
            rule["match"]["size"]["gt"] = small
        elif rule["name"] == "strip-old-reasoning":
            rule["action"] = {"strip-text": dict(STRIPS[strip])}
        rules.append(rule)
    data["rules"] = rules
    return yaml.safe_dump(data, sort_keys=False)


def parameters_of_default() -> tuple:
    data = yaml.safe_load(DEFAULT_FILE.read_text(encoding="utf-8"))
    by_name = {r["name"]: r for r in data["rules"]}
    strip = by_name["strip-old-reasoning"]["action"]["strip-text"]
    strip_name = next(k for k, v in STRIPS.items() if v == strip)
    return (data["step"]["every"], by_name["keep-recent"]["match"]["age"]["lt"],
            by_name["keep-small"]["match"]["size"]["lte"], strip_name, "clear-superseded" in by_name)


def stepped_replay(messages: list, rules) -> Replay:
    """rules_compact.replay for a stepped rule file, deciding only at its own boundaries."""
    boundaries = step_schedule(messages, rules, "openai")
    return StepSchedules(messages, rules, "openai", only=boundaries).replay(boundaries, PRICE, rules.name)


_TRACES: list | None = None


def _traces() -> list:
    global _TRACES
    if _TRACES is None:
        _TRACES = []
        for path in TRACES:
            messages = read_conversations(path.read_bytes(), path.name)[0].messages
            _TRACES.append((messages, replay(messages, None, "openai", PRICE)))
    return _TRACES


def evaluate(params: tuple) -> tuple[tuple, list[tuple[float, float]]]:
    rules = load_rules(candidate(*params))
    out = []
    for messages, base in _traces():
        r = stepped_replay(messages, rules)
        out.append((r.total_prompt / base.total_prompt, r.cost / base.cost))
    return params, out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--full", action="store_true", help="the larger grid (288 candidates)")
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args(argv)
    if args.full:
        grid = itertools.product((10, 15, 20, 25), (3, 5, 8), (100, 200, 400),
                                 ("kmc100", "kmc200", "all", "thinking-only"), (True, False))
    else:
        grid = itertools.product((10, 15, 20), (3, 5, 8), (200,), ("kmc100", "kmc200"), (True, False))
    grid = list(grid)
    shipped = parameters_of_default()
    if shipped not in grid:
        grid.insert(0, shipped)

    messages = read_conversations(TRACES[-1].read_bytes(), TRACES[-1].name)[0].messages
    rules = load_rules(candidate(*grid[0]))
    fast, slow = stepped_replay(messages, rules), replay(messages, [rules], "openai", PRICE)
    assert (fast.prompt_tokens, fast.cached_tokens) == (slow.prompt_tokens, slow.cached_tokens)

    with ProcessPoolExecutor(args.jobs) as pool:
        results = list(pool.map(evaluate, grid))
    rows = []
    for params, out in results:
        prompts, costs = [p for p, _ in out], [c for _, c in out]
        rows.append((max(costs), sum(costs) / len(costs), max(prompts), sum(prompts) / len(prompts), params))
    rows.sort()
    print("| step | keep newest | keep small | strip-text | superseded | worst cost | mean cost | worst prompt "
          "| mean prompt |")
    print("|---:|---:|---:|---|---|---:|---:|---:|---:|")
    for worst_cost, mean_cost, worst_prompt, mean_prompt, params in rows:
        every, keep, small, strip, superseded = params
        mark = " **(default)**" if params == shipped else ""
        print(f"| {every} | {keep} | {small} | {strip}{mark} | {'yes' if superseded else 'no'} | {worst_cost:.3f} | "
              f"{mean_cost:.3f} | {worst_prompt:.3f} | {mean_prompt:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
