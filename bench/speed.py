"""Speed of compaction calls, and of a 1,000-round replay, against a hand-written baseline.

Conversations of 100, 1,000 and 10,000 messages are built from a real mini-swe-agent trace
(tests/data/traces/mini-swe-agent/, OpenAI format): its system and task messages, then its
assistant/tool pairs repeated, with fresh tool-call ids, until the length is reached. For each
size, in the same run, the time per call of:

* seed-000 loop: bench/seed000_loop.py, seed 000's micro_compact written by hand as a
  copy-on-write loop: the baseline (ratio 1.00);
* keep-recent-results: rules/presets/keep-recent-results.yaml, the same algorithm as a rule file
  (its output is checked equal to the loop's), and the default rules (rules/default.yaml), each
  three ways:
  - ``compact()``: one call on the whole conversation, nothing reused;
  - ``Compactor``, next round: what an agent loop pays per round. The Compactor has handled the
    conversation up to the previous round; the time is the mean over the last 10 rounds up to
    the size (one assistant turn and its result each; for the default, one of them moves the
    step boundary). ``verify=True`` (the default) compares the earlier messages with copies to
    notice edits made in place; ``verify=False`` checks their identity only;
* LangChain ClearToolUsesEdit: what ContextEditingMiddleware does on every model call with its
  defaults: ``deepcopy`` of the message list, then ``ClearToolUsesEdit().apply`` with
  ``count_tokens_approximately``, on the same conversation converted to langchain_core messages
  (converted once, outside the timing: an agent built on LangChain holds them already);
* keep-recent-results in RulesCompactMiddleware, next round: what our LangChain middleware does
  per model call on those messages (rules_compact.integrations.langchain.translated: the
  conversion to dicts and back, remembered per message, around a Compactor), on a middleware
  that has handled the rounds before.

Then a 1,000-round replay (a conversation with 1,000 assistant turns; every round compacts the
history up to that turn, as an agent loop would): the total time spent in the compaction calls.

Times are wall-clock (time.perf_counter): each is the median over --repeats repeats. The machine
(CPU model, cores, Python, load) is printed first.

Usage:
    python3 bench/speed.py                       # everything (about eight minutes on 2 cores)
    python3 bench/speed.py --sizes 100 1000 --repeats 3 --rounds 300
    python3 bench/speed.py --profile 10000       # cProfile top entries of the default at that size
"""

from __future__ import annotations

import argparse
import copy
import cProfile
import io
import os
import platform
import pstats
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from rules_compact import Compactor, compact, load_rules  # noqa: E402
from rules_compact.readers import read_conversations  # noqa: E402
from seed000_loop import micro_compact  # noqa: E402

TRACE = ROOT / "tests" / "data" / "traces" / "mini-swe-agent" / \
    "deepseek_chat_dev_rerun__pylint-dev__astroid-1333.traj.json"
SIZES = (100, 1_000, 10_000)
DEFAULT_TARGET_MS = 10.0  # the default rules at 10,000 messages
PRESET_TARGET_RATIO = 1.5  # keep-recent-results vs the seed-000 loop
LANGCHAIN_TARGET_RATIO = 20.0  # LangChain's time over the preset's, at 1,000 messages
ROUNDS = 10  # rounds averaged in "next round"
MIDDLEWARE = "keep-recent-results in RulesCompactMiddleware"


# -- the machine ---------------------------------------------------------------------------

def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine() -> str:
    cores = os.cpu_count()
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else cores
    load = f"; load average {os.getloadavg()[0]:.2f}" if hasattr(os, "getloadavg") else ""
    return (f"CPU: {cpu_model()}, {usable} cores usable ({cores} online); "
            f"Python {platform.python_version()} ({platform.python_implementation()}); "
            f"{platform.system()} {platform.release()}{load}")


# -- conversations -------------------------------------------------------------------------

def conversation(n: int, trace: Path = TRACE) -> list:
    """``n`` messages: the trace's system and task, then its assistant/tool pairs repeated."""
    messages = read_conversations(trace.read_bytes(), trace.name)[0].messages
    head = [m for m in messages[:2]]
    body = [m for m in messages[2:] if m.get("role") in ("assistant", "tool")]
    out = list(head)
    lap = 0
    while len(out) < n:
        for m in body:
            if len(out) >= n:
                break
            if m["role"] == "assistant":
                calls = [{**c, "id": f"{c['id']}-{lap}"} for c in m.get("tool_calls") or []]
                out.append({**m, "tool_calls": calls} if calls else dict(m))
            else:
                out.append({**m, "tool_call_id": f"{m['tool_call_id']}-{lap}"})
        lap += 1
    return out


def rounds_conversation(rounds: int) -> list:
    """A conversation with exactly ``rounds`` assistant turns, ending with the last one's result."""
    msgs = conversation(2 + 2 * rounds + 100)
    turns = [i for i, m in enumerate(msgs) if m.get("role") == "assistant"]
    return msgs[:turns[rounds]] if len(turns) > rounds else msgs


# -- timing --------------------------------------------------------------------------------

def per_call(fn, repeats: int, min_time: float) -> float:
    """Median over ``repeats`` of the mean seconds per call of a loop lasting ~``min_time``."""
    fn()  # warm up (and compile anything lazy)
    start = time.perf_counter()
    fn()
    once = max(time.perf_counter() - start, 1e-7)
    loops = max(1, int(min_time / once))
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(loops):
            fn()
        samples.append((time.perf_counter() - start) / loops)
    return statistics.median(samples)


def per_round(make, msgs: list, repeats: int, rounds: int = ROUNDS, shown: list | None = None) -> float:
    """Median over ``repeats`` of the mean time of the last ``rounds`` rounds up to ``msgs``,
    on a Compactor (from ``make()``) that has handled the rounds before them.  ``shown``: the
    same conversation as the callable takes it (LangChain messages), when not ``msgs``."""
    ends = [i + 1 for i, m in enumerate(msgs) if m.get("role") == "tool"]
    ends = [e for e in ends if e < len(msgs)][-(rounds + 2):] + [len(msgs)]
    shown = msgs if shown is None else shown
    samples = []
    for _ in range(repeats):
        compactor = make()
        for end in ends[:2]:  # two calls before: the second takes the copies verify needs
            compactor(shown[:end])
        histories = [shown[:end] for end in ends[2:]]
        start = time.perf_counter()
        for history in histories:
            compactor(history)
        samples.append((time.perf_counter() - start) / len(histories))
    return statistics.median(samples)


def fmt_time(seconds: float) -> str:
    if seconds < 1e-3:
        return f"{seconds * 1e6:,.0f} µs"
    if seconds < 1:
        return f"{seconds * 1e3:,.2f} ms"
    return f"{seconds:,.2f} s"


def table(rows: list[tuple], right: set[int]) -> str:
    widths = [max(len(str(r[i])) for r in rows) for i in range(len(rows[0]))]
    lines = []
    for n, row in enumerate(rows):
        lines.append("| " + " | ".join(str(c).rjust(w) if i in right else str(c).ljust(w)
                                        for i, (c, w) in enumerate(zip(row, widths))) + " |")
        if n == 0:
            lines.append("|" + "|".join(("-" * (w + 1) + ":") if i in right else ("-" * (w + 2))
                                        for i, w in enumerate(widths)) + "|")
    return "\n".join(lines)


# -- LangChain -----------------------------------------------------------------------------

def langchain_call():
    """A function ``(lc_messages) -> edited`` doing what ContextEditingMiddleware does per call,
    and the converter, or None when langchain is not installed."""
    try:
        from langchain.agents.middleware.context_editing import ClearToolUsesEdit
        from langchain_core.messages.utils import count_tokens_approximately
    except ImportError:
        return None
    sys.path.insert(0, str(ROOT / "tests"))
    from reference.langchain_context_editing import to_langchain

    edit = ClearToolUsesEdit()

    def call(lc_messages):
        edited = copy.deepcopy(list(lc_messages))
        edit.apply(edited, count_tokens=count_tokens_approximately)
        return edited

    return call, to_langchain


# -- the benchmark -------------------------------------------------------------------------

def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--min-time", type=float, default=0.2, help="seconds per repeat (default 0.2)")
    parser.add_argument("--rounds", type=int, default=1000, help="rounds of the replay (default 1000)")
    parser.add_argument("--no-langchain", action="store_true")
    parser.add_argument("--profile", type=int, metavar="N",
                        help="only profile the default and the preset at N messages (cProfile, top 25)")
    args = parser.parse_args(argv)

    default = load_rules("default")
    preset = load_rules("preset:keep-recent-results")

    if args.profile:
        msgs = conversation(args.profile)
        for name, rules in (("default", default), ("preset:keep-recent-results", preset)):
            prof = cProfile.Profile()
            prof.enable()
            for _ in range(20):
                compact(msgs, rules, format="openai")
            prof.disable()
            out = io.StringIO()
            pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(25)
            print(f"## {name}, {args.profile:,} messages, 20 calls\n{out.getvalue()}")
        return 0

    print(machine())
    print()
    lc = None if args.no_langchain else langchain_call()
    rows = [("messages", "implementation", "per call", "vs seed-000 loop")]
    verdicts = []
    for n in args.sizes:
        msgs = conversation(n)
        expected = micro_compact(msgs)
        if compact(msgs, preset, format="openai").messages != expected:
            raise SystemExit(f"{n} messages: keep-recent-results and the seed-000 loop disagree")
        base = per_call(lambda: micro_compact(msgs), args.repeats, args.min_time)
        times = {"seed-000 loop (baseline)": base}
        for name, rules in (("keep-recent-results", preset), ("default rules", default)):
            times[f"{name}: compact()"] = per_call(lambda: compact(msgs, rules, format="openai"),
                                                   args.repeats, args.min_time)
            for verify in (True, False):
                times[f"{name}: Compactor(verify={verify}), next round"] = per_round(
                    lambda: Compactor(rules, format="openai", verify=verify), msgs, args.repeats)
        if lc is not None:
            from rules_compact.integrations.langchain import translated
            call, to_lc = lc
            lc_msgs = [to_lc(m) for m in msgs]
            times["LangChain ClearToolUsesEdit (deepcopy + apply)"] = per_call(
                lambda: call(lc_msgs), args.repeats, args.min_time)
            times[f"{MIDDLEWARE}, next round"] = per_round(
                lambda: translated(preset, on_compact=lambda report: None), msgs, args.repeats, shown=lc_msgs)
        for label, seconds in times.items():
            rows.append((f"{n:,}", label, fmt_time(seconds), f"{seconds / base:.2f}x"))
        verdicts += _verdicts(n, base, times)
    print(f"Time per call, median of {args.repeats} repeats:")
    print(table(rows, right={0, 2, 3}))
    print()

    msgs = rounds_conversation(args.rounds)
    ends = [i for i, m in enumerate(msgs) if m.get("role") == "assistant"]
    rows = [("implementation", f"{len(ends):,} rounds, total", "per round", "vs seed-000 loop")]
    totals = []
    for label, make in (("seed-000 loop (baseline)", lambda: micro_compact),
                        ("keep-recent-results: compact()", lambda: lambda h: compact(h, preset, format="openai")),
                        ("keep-recent-results: Compactor", lambda: Compactor(preset, format="openai")),
                        ("default rules: compact()", lambda: lambda h: compact(h, default, format="openai")),
                        ("default rules: Compactor", lambda: Compactor(default, format="openai"))):
        fn, total = make(), 0.0
        for end in ends:
            history = msgs[:end]
            start = time.perf_counter()
            fn(history)
            total += time.perf_counter() - start
        totals.append((label, total))
    for label, total in totals:
        rows.append((label, fmt_time(total), fmt_time(total / len(ends)), f"{total / totals[0][1]:.2f}x"))
    print(f"Replay of {len(ends):,} rounds ({len(msgs):,} messages at the end): total time in compaction calls:")
    print(table(rows, right={1, 2, 3}))
    print()
    print("\n".join(verdicts))
    return 0


def _verdicts(n: int, base: float, times: dict) -> list[str]:
    def met(ok: bool) -> str:
        return "met" if ok else "MISSED"

    out = []
    lc = times.get("LangChain ClearToolUsesEdit (deepcopy + apply)")
    for way in ("compact()", "Compactor(verify=True), next round", "Compactor(verify=False), next round"):
        ratio = times[f"keep-recent-results: {way}"] / base
        out.append(f"{n:,} messages: keep-recent-results, {way}: {ratio:.2f}x the loop "
                   f"(target <= {PRESET_TARGET_RATIO}x: {met(ratio <= PRESET_TARGET_RATIO)})")
        if n == 1_000 and lc is not None:
            faster = lc / times[f"keep-recent-results: {way}"]
            out.append(f"{n:,} messages: keep-recent-results, {way}: {faster:.1f}x faster than LangChain "
                       f"(target >= {LANGCHAIN_TARGET_RATIO:g}x: {met(faster >= LANGCHAIN_TARGET_RATIO)})")
        if n == 10_000:
            ms = times[f"default rules: {way}"] * 1e3
            out.append(f"{n:,} messages: default rules, {way}: {ms:.2f} ms "
                       f"(target < {DEFAULT_TARGET_MS:g} ms: {met(ms < DEFAULT_TARGET_MS)})")
    middleware = times.get(f"{MIDDLEWARE}, next round")
    if n == 1_000 and middleware is not None:
        out.append(f"{n:,} messages: {MIDDLEWARE}: {lc / middleware:.1f}x faster than LangChain's own "
                   "middleware (no target: what a LangChain agent sees)")
    return out


if __name__ == "__main__":
    sys.exit(main())
