"""Speed of compaction calls against a hand-written baseline, with the redesign's targets.

Conversations of 100, 1,000 and 10,000 messages are built from a real mini-swe-agent trace
(tests/data/traces/mini-swe-agent/, OpenAI format): its system and task messages, then its
assistant/tool pairs repeated, with fresh tool-call ids, until the length is reached.  For each
size, in the same run:

* seed-000 loop: bench/seed000_loop.py, seed 000's micro_compact written by hand as a
  copy-on-write loop: the baseline (ratio 1.00);
* keep-recent-results (the same algorithm as a rule file; its output is checked equal to the
  loop's) and the default rules, each
  - ``compact()``: one call on the whole conversation;
  - ``Compactor``, next round, ``verify=False`` and ``verify=True``: what an agent loop pays per
    round: the Compactor has handled the conversation up to the previous round; the time is the
    mean over the last 10 rounds (one assistant turn and its result each);
* LangChain ClearToolUsesEdit as ContextEditingMiddleware runs it (``deepcopy`` + ``apply``), and
  keep-recent-results in our RulesCompactMiddleware (conversions included), next round.

Times are CPU time (``time.process_time``).  Every implementation of a size is timed in turn,
``--repeats`` times over (interleaved, so load that comes and goes hits them all alike), and
the minimum is kept.  Then memory at 100,000 messages (tracemalloc: what a dropped Result keeps,
what a Compactor holds), what a Compactor retains over a 10,000-round agent loop that passes a
new list each round, and the growth of ``compact()`` time from 10,000 to 100,000 messages.

Usage:
    python3 bench/speed.py                 # everything (a few minutes on 2 cores)
    python3 bench/speed.py --sizes 100 1000 --repeats 5 --no-memory
    python3 bench/speed.py --check         # exit 1 when a target is missed
"""

from __future__ import annotations

import argparse
import copy
import gc
import json
import os
import platform
import sys
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from rules_compact import Compactor, compact, load_rules  # noqa: E402
from seed000_loop import micro_compact  # noqa: E402

TRACE = ROOT / "tests" / "data" / "traces" / "mini-swe-agent" / \
    "deepseek_chat_dev_rerun__pylint-dev__astroid-1333.traj.json"
SIZES = (100, 1_000, 10_000)
ROUNDS = 10  # rounds averaged in "next round"
# the targets of issue 14: implementation -> {messages: the most it may cost, in loops}
TARGETS = {
    "keep-recent-results: compact()": {100: 2.5, 1_000: 2.0, 10_000: 2.0},
    "default rules: compact()": {100: 8.0, 1_000: 8.0, 10_000: 8.0},
    "keep-recent-results: Compactor(verify=False), next round": {100: 1.5, 1_000: 0.5, 10_000: 0.2},
    "keep-recent-results: Compactor(verify=True), next round": {100: 2.5, 1_000: 1.5, 10_000: 1.5},
}
MEMORY_MESSAGES = 100_000
COMPACTOR_MEMORY_TARGET = 40 * 2**20
GROWTH_TARGET = 11.0


def machine() -> str:
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    load = f"; load average {os.getloadavg()[0]:.2f}" if hasattr(os, "getloadavg") else ""
    return (f"CPU: {model}, {usable} cores usable; Python {platform.python_version()} "
            f"({platform.python_implementation()}); {platform.system()} {platform.release()}{load}")


def conversation(n: int, trace: Path = TRACE) -> list:
    """``n`` messages: the trace's system and task, then its assistant/tool pairs repeated."""
    messages = json.loads(trace.read_text(encoding="utf-8"))["messages"]
    body = [m for m in messages[2:] if m.get("role") in ("assistant", "tool")]
    out, lap = list(messages[:2]), 0
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


# -- timing -------------------------------------------------------------------------------

class Call:
    """A timed thing: ``run()`` once per call; ``batch()`` how many calls one timing covers."""

    def __init__(self, fn, calls: int = 1, prepare=None):
        self.fn, self.calls, self.prepare = fn, calls, prepare

    def time_once(self) -> float:
        state = self.prepare() if self.prepare is not None else None
        start = time.process_time()
        self.fn(state)
        return (time.process_time() - start) / self.calls


def interleaved(calls: dict[str, Call], repeats: int, min_time: float) -> dict[str, float]:
    """The minimum CPU time per call of each, timed in turn ``repeats`` times."""
    loops = {}
    for name, call in calls.items():
        call.time_once()  # warm up
        loops[name] = max(1, int(min_time / max(call.time_once() * call.calls, 1e-6)))
    best = dict.fromkeys(calls, float("inf"))
    for _ in range(repeats):
        for name, call in calls.items():
            samples = [call.time_once() for _ in range(loops[name])]
            best[name] = min(best[name], sum(samples) / len(samples))
    return best


def next_round(make, msgs: list, shown: list | None = None) -> Call:
    """A Compactor (from ``make()``) that saw the rounds before the last ``ROUNDS``; one timing is
    those rounds, and the time is per round."""
    ends = [i + 1 for i, m in enumerate(msgs) if m.get("role") == "tool"]
    ends = [e for e in ends if e < len(msgs)][-(ROUNDS + 2):] + [len(msgs)]
    shown = msgs if shown is None else shown

    def prepare():
        compactor = make()
        for end in ends[:2]:  # two calls before: the second takes the copies verify needs
            compactor(shown[:end])
        return compactor, [shown[:end] for end in ends[2:]]

    def run(state):
        compactor, histories = state
        for history in histories:
            compactor(history)

    return Call(run, len(ends) - 2, prepare)


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


def langchain():
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


# -- memory -----------------------------------------------------------------------------

def memory(preset) -> list[str]:
    """What a dropped Result keeps, and what a Compactor with verify=False holds, at 100,000
    messages; and how compact() time grows from 10,000 to 100,000 messages."""
    msgs = conversation(MEMORY_MESSAGES)
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    result = compact(msgs, preset, format="openai")
    _ = result.report.passes[0].decisions  # a report that was read holds its records
    del result, _
    gc.collect()
    kept = tracemalloc.get_traced_memory()[0] - base
    compactor = Compactor(preset, format="openai", verify=False)
    ends = [i + 1 for i, m in enumerate(msgs) if m.get("role") == "tool"][-3:]
    for end in ends:
        compactor(msgs[:end])
    gc.collect()
    held = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    del compactor
    small = conversation(10_000)
    times = interleaved({"10k": Call(lambda s: compact(small, preset, format="openai")),
                         "100k": Call(lambda s: compact(msgs, preset, format="openai"))}, 3, 0.5)
    growth = times["100k"] / times["10k"]
    return [f"{MEMORY_MESSAGES:,} messages: a dropped Result keeps {kept / 2**20:.1f} MB (target: 0)",
            f"{MEMORY_MESSAGES:,} messages: keep-recent-results Compactor(verify=False) holds {held / 2**20:.1f} MB "
            f"(target <= {COMPACTOR_MEMORY_TARGET / 2**20:.0f} MB)",
            f"compact() from 10,000 to 100,000 messages: {growth:.1f}x the time (target <= {GROWTH_TARGET:g}x)"], \
        [kept <= 2**20, held <= COMPACTOR_MEMORY_TARGET, growth <= GROWTH_TARGET]


LOOP_ROUNDS = 10_000
LOOP_TARGET = 2.0  # retained memory, in the history's own size


def loop_memory(rules, label: str) -> tuple[str, bool]:
    """What a Compactor (verify=True) retains after an agent loop of ``LOOP_ROUNDS`` rounds that
    passes a new list each round (``messages[:n]``, as the integrations do), against the size of
    the history itself (tracemalloc; issue 29: it grew quadratically)."""
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    msgs = [{"role": "user", "content": "go"}]
    for i in range(LOOP_ROUNDS):
        msgs += [{"role": "assistant", "content": None, "tool_calls": [
                     {"id": f"c{i}", "type": "function", "function": {"name": "bash",
                                                                      "arguments": '{"command": "ls %d"}' % i}}]},
                 {"role": "tool", "tool_call_id": f"c{i}", "content": f"out {i} " * 20}]
    gc.collect()
    history = tracemalloc.get_traced_memory()[0] - base
    compactor = Compactor(rules, format="openai")
    for end in range(3, len(msgs) + 1, 2):
        compactor(msgs[:end])
    gc.collect()
    retained = tracemalloc.get_traced_memory()[0] - base - history
    tracemalloc.stop()
    ratio = retained / history
    return (f"{LOOP_ROUNDS:,} rounds, a new list each: a {label} Compactor retains {retained / 2**20:.1f} MB, "
            f"{ratio:.2f}x the history's {history / 2**20:.1f} MB (target <= {LOOP_TARGET:g}x)"), ratio <= LOOP_TARGET


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--min-time", type=float, default=0.05, help="seconds per timing (default 0.05)")
    parser.add_argument("--no-langchain", action="store_true")
    parser.add_argument("--no-memory", action="store_true")
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    args = parser.parse_args(argv)

    default, preset = load_rules("default"), load_rules("preset:keep-recent-results")
    print(machine(), "\n")
    lc = None if args.no_langchain else langchain()
    rows = [("messages", "implementation", "per call", "vs seed-000 loop", "target")]
    verdicts: list[bool] = []
    for n in args.sizes:
        msgs = conversation(n)
        if compact(msgs, preset, format="openai").messages != micro_compact(msgs):
            raise SystemExit(f"{n} messages: keep-recent-results and the seed-000 loop disagree")
        calls = {"seed-000 loop (baseline)": Call(lambda s: micro_compact(msgs))}
        for name, rules in (("keep-recent-results", preset), ("default rules", default)):
            calls[f"{name}: compact()"] = Call(lambda s, r=rules: compact(msgs, r, format="openai"))
            for verify in (False, True):
                calls[f"{name}: Compactor(verify={verify}), next round"] = next_round(
                    lambda r=rules, v=verify: Compactor(r, format="openai", verify=v), msgs)
        if lc is not None:
            from rules_compact.integrations.langchain import translated
            call, to_lc = lc
            lc_msgs = [to_lc(m) for m in msgs]
            calls["LangChain ClearToolUsesEdit (deepcopy + apply)"] = Call(lambda s: call(lc_msgs))
            calls["keep-recent-results in RulesCompactMiddleware, next round"] = next_round(
                lambda: translated(preset, on_compact=lambda report: None), msgs, lc_msgs)
        times = interleaved(calls, args.repeats, args.min_time)
        base = times["seed-000 loop (baseline)"]
        for label, seconds in times.items():
            ratio = seconds / base
            target = TARGETS.get(label, {}).get(n)
            verdict = ""
            if target is not None:
                verdicts.append(ratio <= target)
                verdict = f"<= {target:g}x: {'met' if ratio <= target else 'MISSED'}"
            rows.append((f"{n:,}", label, fmt_time(seconds), f"{ratio:.2f}x", verdict))
    print(f"CPU time per call, minimum of {args.repeats} interleaved repeats:")
    print(table(rows, right={0, 2, 3}))
    if not args.no_memory:
        lines, met = memory(preset)
        for rules, label in ((preset, "keep-recent-results"), (default, "default rules")):
            line, ok = loop_memory(rules, label)
            lines, met = lines + [line], met + [ok]
        verdicts += met
        print()
        print("\n".join(f"{line}: {'met' if ok else 'MISSED'}" for line, ok in zip(lines, met)))
    return 1 if args.check and not all(verdicts) else 0


if __name__ == "__main__":
    sys.exit(main())
