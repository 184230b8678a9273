"""How long loading a large rule file takes, and what the largest ``where`` allowed costs.

Rule files are data, so loading one should cost time in proportion to its size. Three shapes,
at 1,000 to 10,000 rules (the 1 MiB limit holds about 10,000 small rules):

* small: ``{name, match: {role: tool, size: {gt: N}}, action: placeholder}``;
* default-like: the bundled default's rules repeated under new names (every matcher and
  action kind the default uses: ages, text regexes, templates, ``where``);
* extends: a file extending the default whose rules each insert themselves ``after:`` the
  previous one (the ``extends`` merge).

Then the time of one ``compact()`` with a ``where`` of the largest length allowed
(limits.MAX_JMESPATH_CHARS) on 5 MB of tool results: what a 64 KB expression once turned into
122 s.

The default-like file of 10,000 rules is over the 1 MiB limit, so this script raises it to 8 MiB
(RULES_COMPACT_MAX_RULES_BYTES) unless it is set. Each time is the median of --repeats loads (time.perf_counter). The machine is printed first.

Usage:
    python3 bench/load_rules.py                 # about a minute on 2 cores
    python3 bench/load_rules.py --sizes 1000 5000 --repeats 1
    python3 bench/load_rules.py --profile 5000  # cProfile top entries of the default-like shape
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import statistics
import sys
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from rules_compact import compact, parse_rules  # noqa: E402
from rules_compact.limits import MAX_JMESPATH_CHARS  # noqa: E402
from rules_compact.resources import bundled_rules  # noqa: E402
from speed import machine  # noqa: E402

DEFAULT = yaml.safe_load(bundled_rules("default").read_text(encoding="utf-8"))


def small(n: int) -> str:
    return "version: 1\nname: small\nrules:\n" + "".join(
        f"  - name: r{i}\n    match: {{role: tool, size: {{gt: {i}}}}}\n    action: placeholder\n" for i in range(n))


def default_like(n: int) -> str:
    rules = []
    for i in range(n):
        rule = {k: v for k, v in DEFAULT["rules"][i % len(DEFAULT["rules"])].items() if k not in ("before", "after")}
        rules.append({**rule, "name": f"{rule['name']}-{i}"})
    return yaml.safe_dump({**DEFAULT, "rules": rules}, sort_keys=False)


def extending(n: int) -> str:
    anchor = DEFAULT["rules"][-1]["name"]
    rules = []
    for i in range(n):
        rules.append({"name": f"x{i}", "after": anchor, "match": {"role": "tool", "size": {"gt": i}},
                      "action": "placeholder"})
        anchor = f"x{i}"
    return yaml.safe_dump({"version": 1, "name": "extending", "extends": "default", "rules": rules}, sort_keys=False)


SHAPES = {"small": small, "default-like": default_like, "extends": extending}


def seconds(run, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def where_cost(repeats: int) -> tuple[int, float]:
    """The time of compact() with a where of MAX_JMESPATH_CHARS characters on 5 MB of results."""
    clause = "contains(item.text, 'needle') || "
    expression = clause * ((MAX_JMESPATH_CHARS - len("item.is_error")) // len(clause)) + "item.is_error"
    rules = parse_rules(yaml.safe_dump({"version": 1, "name": "where", "rules": [
        {"name": "w", "match": {"role": "tool", "where": expression}, "action": "placeholder"}]}))
    messages = [{"role": "user", "content": "go"}]
    for i in range(50):  # 50 results of 100,000 characters
        messages += [{"role": "assistant", "content": None, "tool_calls": [
                         {"id": f"c{i}", "type": "function", "function": {"name": "bash", "arguments": "{}"}}]},
                     {"role": "tool", "tool_call_id": f"c{i}", "content": "haystack " * 11_111}]
    return len(expression), seconds(lambda: compact(messages, rules), repeats)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 2_000, 5_000, 10_000])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--profile", type=int, metavar="N", help="profile loading N default-like rules")
    args = parser.parse_args()
    os.environ.setdefault("RULES_COMPACT_MAX_RULES_BYTES", "8M")
    print(machine())
    if args.profile:
        text = default_like(args.profile)
        profile = cProfile.Profile()
        profile.runcall(parse_rules, text)
        out = io.StringIO()
        pstats.Stats(profile, stream=out).sort_stats("cumulative").print_stats(25)
        print(out.getvalue())
        return
    print(f"{'shape':<14}{'rules':>7}{'bytes':>10}{'load s':>9}{'us/rule':>9}")
    for shape, make in SHAPES.items():
        for n in args.sizes:
            text = make(n)
            took = seconds(lambda: parse_rules(text), args.repeats)
            print(f"{shape:<14}{n:>7,}{len(text.encode()):>10,}{took:>9.2f}{took / n * 1e6:>9.0f}")
    chars, took = where_cost(args.repeats)
    print(f"where of {chars} characters on 5 MB of tool results: compact() {took:.2f} s")


if __name__ == "__main__":
    main()
