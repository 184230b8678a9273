"""How long a compaction holds an async agent's event loop, and what ``offload=True`` changes.

The integrations' async hooks (LangChain ``awrap_model_call``, pydantic-ai
``before_model_request``, an Agents SDK filter) compact in the event loop: while a call runs,
no other coroutine of the process (other conversations of a server, streaming, heartbeats)
runs.  For conversations of 1,000 and 10,000 messages (bench/speed.py's, from a real
mini-swe-agent trace) this prints the CPU time (``time.process_time``) of one call of
``RulesCompactMiddleware`` on LangChain messages, with the default rules and the
keep-recent-results preset:

* first call: a conversation the middleware has not seen (a resumed thread, a new process);
* next round: one assistant turn and its result later (the Compactor's reuse);
* next round with an OpenTelemetry SDK tracer provider installed (the span's per-rule counts
  read every decision).

Then the longest stall of the loop (wall time, so only indicative on a shared machine): a
ticker coroutine runs every millisecond while ``awrap_model_call`` handles a first call, with
and without ``offload=True`` (the compaction in a worker thread through ``asyncio.to_thread``).

Usage:  python3 bench/event_loop.py [--sizes 1000 10000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT / "tests"))

from speed import conversation, fmt_time, machine, table  # noqa: E402

RULES = ("default", "preset:keep-recent-results")


def lc_messages(n: int) -> list:
    from reference.langchain_context_editing import to_langchain

    return [to_langchain(m) for m in conversation(n)]


class Request:
    """The part of a LangChain ModelRequest the middleware reads, and ``override``."""

    def __init__(self, messages, model=None, runtime=None):
        self.messages, self.model, self.runtime = messages, model, runtime
        self.system_message, self.tools, self.model_settings = None, [], {}

    def override(self, **changes):
        out = Request(self.messages, self.model, self.runtime)
        for key, value in changes.items():
            setattr(out, key, value)
        return out


def cpu(fn, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.process_time()
        fn()
        best = min(best, time.process_time() - start)
    return best


def calls(n: int, rules: str, repeats: int) -> tuple[float, float]:
    """CPU time of a first call, and of a next-round call (the mean over the last 10 rounds, the
    middleware having seen the two rounds before), of the middleware."""
    from rules_compact.integrations.langchain import RulesCompactMiddleware

    msgs = lc_messages(n)
    ends = [i + 1 for i, m in enumerate(msgs) if m.type == "tool"][-12:]

    def first():
        RulesCompactMiddleware(rules, on_compact=lambda r: None)._request(Request(msgs))

    def rounds() -> float:
        middleware = RulesCompactMiddleware(rules, on_compact=lambda r: None)
        for end in ends[:2]:
            middleware._request(Request(msgs[:end]))
        start = time.process_time()
        for end in ends[2:]:
            middleware._request(Request(msgs[:end]))
        return (time.process_time() - start) / len(ends[2:])

    return cpu(first, repeats), min(rounds() for _ in range(repeats))


def with_tracing() -> None:
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(InMemorySpanExporter()))
    trace.set_tracer_provider(provider)


async def longest_stall(n: int, offload: bool) -> float:
    """The longest gap between ticks of a 1 ms ticker while the middleware handles a first call."""
    from rules_compact.integrations.langchain import RulesCompactMiddleware

    msgs = lc_messages(n)
    middleware = RulesCompactMiddleware("default", on_compact=lambda r: None, offload=offload)
    gaps, done = [], asyncio.Event()

    async def ticker():
        last = time.perf_counter()
        while not done.is_set():
            await asyncio.sleep(0.001)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now

    async def handler(request):
        return request

    tick = asyncio.create_task(ticker())
    await asyncio.sleep(0.01)
    await middleware.awrap_model_call(Request(msgs), handler)
    done.set()
    await tick
    return max(gaps)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    print(machine())
    rows = [("messages", "rules", "first call", "next round", "next round, OTel on")]
    measured = {(n, r): calls(n, r, args.repeats) for n in args.sizes for r in RULES}
    with_tracing()
    for n in args.sizes:
        for r in RULES:
            first, following = measured[n, r]
            traced = calls(n, r, args.repeats)[1]
            rows.append((f"{n:,}", r, fmt_time(first), fmt_time(following), fmt_time(traced)))
    print("\nCPU time of one RulesCompactMiddleware call (LangChain messages), in the event loop:")
    print(table(rows, {0, 2, 3, 4}))
    print(f"\nLongest stall of a 1 ms ticker during a first call (default rules; wall time, median of "
          f"{args.repeats}):")
    stalls = [("messages", "in the loop", "offload=True")]
    for n in args.sizes:
        stalls.append((f"{n:,}", *(fmt_time(statistics.median(asyncio.run(longest_stall(n, offload))
                                                              for _ in range(args.repeats)))
                                   for offload in (False, True))))
    print(table(stalls, {0, 1, 2}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
