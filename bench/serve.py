"""What ``rules-compact serve`` adds to a request, against sending it straight to the API.

Real sessions are replayed round by round as the requests an agent sends (each round's body the
whole history up to a model response): Claude Code ae4a77f8 and 4d5611e5 as Messages bodies,
a Codex rollout as a Responses body (``store: false``), a mini-swe-agent trace as Chat
Completions, all from tests/data/traces/.  A local upstream (a process of its own) answers each
at once with a fixed small answer.  For 1, 8 and 32 sessions at once (the four traces in turn,
each session its own conversation: its tag in the system prompt), in the same run:

* direct: the client to the upstream; proxied: the client to a fresh ``rules-compact serve``
  (default rules; a process of its own) to the upstream.  Each request's wall time is the
  minimum over ``--repeats`` interleaved repeats; *added* is proxied minus direct, per request;
* the proxy's CPU time per request (its process's, from /proc: parsing, compaction, writing,
  relaying, its log line);
* memory per session: the proxy's resident memory after the sessions over before, per session,
  against the session's last body;
* the floor: ``json.loads`` + ``json.dumps`` of the same body (CPU time, minimum of the
  repeats), in this process;
* the floor proxy: the same HTTP stack (``rules-compact serve``'s app in a process of its own)
  whose rewrite is only that ``json.loads`` + ``json.dumps``, at the same concurrency: its added
  p99 is what the relay and queueing for the machine's cores cost before any compaction.

Then the first request of an unknown 1,000-message session (bench/speed.py's conversation, as
Chat), and the tokens the upstream sees: an upstream that counts (chars4, the longest prefix
equal to the session's previous request cached) against ``rules_compact.replay`` on the same
rounds.  Times depend on the machine and its load (printed first): read the ratios, which
compare measurements of the same run.

Usage:  python3 bench/serve.py [--concurrency 1 8 32] [--repeats 2] [--check]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from speed import conversation, machine, table  # noqa: E402

from rules_compact import load_rules  # noqa: E402
from rules_compact.documents import read_conversations_from  # noqa: E402
from rules_compact.formats import FORMATS  # noqa: E402
from rules_compact.kinds.estimators import ESTIMATORS  # noqa: E402
from rules_compact.replay import PRICES, replay, round_starts, round_tokens  # noqa: E402

TRACES = ROOT / "tests" / "data" / "traces"
SESSIONS = (
    ("claude-code ae4a77f8", TRACES / "claude-code" / "ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl"),
    ("claude-code 4d5611e5", TRACES / "claude-code" / "4d5611e5-241a-462a-8d15-5122611a9569.jsonl"),
    ("codex 019c8a59", TRACES / "codex" / "rollout-2026-02-23T12-54-34-019c8a59-e9dd-71f0-9ae3-4079fe9726a9.jsonl"),
    ("mini-swe-agent marshmallow-1343",
     TRACES / "mini-swe-agent" / "deepseek_lite_dev__marshmallow-code__marshmallow-1343.traj.json"),
)
MARK = "@@SESSION@@"  # where a session's tag goes in the system prompt of every body
PATHS = {"anthropic": "/v1/messages", "responses": "/v1/responses", "openai": "/v1/chat/completions"}
TARGETS = {"warm": 3.0, "p99": 10.0, "first": 20.0, "memory": 3.0}
CLK = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Trace:
    """A session's rounds as request bodies, split where the tag goes; the floor of each."""

    name: str
    format: str
    messages: list  # the whole session (its rounds may be fewer)
    rounds: tuple[tuple[bytes, bytes], ...]

    def body(self, k: int, tag: str) -> bytes:
        head, tail = self.rounds[k]
        return head + tag.encode() + tail


def request_body(fmt: str, history: list) -> dict:
    """The body an agent of this API sends with ``history``, its system prompt holding MARK."""
    if fmt == "anthropic":
        return {"model": "claude-sonnet-4-6", "max_tokens": 1024, "system": f"{MARK} a coding agent", "messages": history}
    if fmt == "responses":
        return {"model": "gpt-5", "instructions": f"{MARK} a coding agent", "input": history, "store": False}
    return {"model": "deepseek-chat", "messages": history}


def tagged_messages(fmt: str, messages: list) -> list:
    """Chat: the system message holds MARK (the others carry it outside the messages)."""
    if fmt != "openai":
        return messages
    first = messages[0]
    return [{**first, "content": f"{MARK} {first['content']}"}, *messages[1:]]


def load_trace(name: str, path: Path, rounds: int | None) -> Trace:
    conv = read_conversations_from(str(path))[0]
    messages = tagged_messages(conv.format, conv.messages)
    ends = round_starts(messages, conv.format)[:rounds]
    split = []
    for end in ends:
        raw = json.dumps(request_body(conv.format, messages[:end]), ensure_ascii=False).encode()
        head, tail = raw.split(MARK.encode(), 1)
        split.append((head, tail))
    return Trace(name, conv.format, messages, tuple(split))


def floor(raw: bytes, repeats: int) -> float:
    """CPU time of ``json.loads`` + ``json.dumps`` of ``raw``: the least a body rewrite costs."""
    best = float("inf")
    for _ in range(repeats):
        start = time.process_time()
        json.dumps(json.loads(raw), ensure_ascii=False)
        best = min(best, time.process_time() - start)
    return best


# -- the upstream ---------------------------------------------------------------------------

ANSWERS = {
    "/v1/messages": {"id": "msg_b", "type": "message", "role": "assistant", "model": "m",
                     "content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn", "stop_sequence": None,
                     "usage": {"input_tokens": 10, "output_tokens": 1, "cache_read_input_tokens": 0,
                               "cache_creation_input_tokens": 0}},
    "/v1/chat/completions": {"id": "c", "object": "chat.completion", "created": 1, "model": "m",
                             "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"},
                                          "finish_reason": "stop"}],
                             "usage": {"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11}},
    "/v1/responses": {"id": "resp_b", "object": "response", "status": "completed", "model": "m",
                      "output": [{"type": "message", "id": "msg_b", "role": "assistant", "status": "completed",
                                  "content": [{"type": "output_text", "text": "ok", "annotations": []}]}],
                      "usage": {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0},
                                "output_tokens": 1, "total_tokens": 11}},
}


class Counter:
    """Per session tag, the tokens of the messages the upstream got, and those cached (the
    longest prefix equal to the tag's previous request): replay's model."""

    def __init__(self):
        self.totals: dict[str, list[int]] = {}
        self.previous: dict[str, list] = {}

    def add(self, path: str, raw: bytes) -> None:
        body = json.loads(raw)
        fmt = {v: k for k, v in PATHS.items()}[path]
        history = body["input" if fmt == "responses" else "messages"]
        system = body.get("system") or body.get("instructions") or history[0]["content"]
        tag = re.search(r"\[(s\d+)\]", json.dumps(system))[1]
        form, estimate = FORMATS[fmt], ESTIMATORS["chars4"]
        total, cached = round_tokens(history, self.previous.get(tag, []),
                                     lambda m: estimate.of_message(m, form.message_pieces(m)))
        self.previous[tag] = history
        sums = self.totals.setdefault(tag, [0, 0])
        sums[0] += total
        sums[1] += cached


def upstream_app(counter: Counter | None):
    answers = {path: json.dumps(answer).encode() for path, answer in ANSWERS.items()}

    async def app(scope, receive, send):
        if scope["type"] != "http":
            return
        chunks = []
        while True:
            message = await receive()
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        path = scope["path"]
        if path == "/totals":
            data = json.dumps(counter.totals if counter else {}).encode()
        else:
            if counter is not None:
                counter.add(path, b"".join(chunks))
            data = answers.get(path, b"{}")
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]})
        await send({"type": "http.response.body", "body": data})

    return app


def run_upstream(count: bool) -> None:
    """The upstream process: print its URL, answer until killed."""
    import socket

    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)  # asyncio sets TCP_NODELAY
    sock.bind(("127.0.0.1", 0))                                                  # on connections of a TCP socket
    sock.listen(1024)
    print(f"http://127.0.0.1:{sock.getsockname()[1]}", flush=True)
    config = uvicorn.Config(upstream_app(Counter() if count else None), log_config=None, log_level="warning",
                            access_log=False, lifespan="off", timeout_keep_alive=600)
    uvicorn.Server(config).run(sockets=[sock])


# -- processes ------------------------------------------------------------------------------

class Child:
    """A child process that prints its URL (the upstream on stdout, the proxy on stderr); what
    it writes goes to a file, so that writing its log never waits for this process."""

    def __init__(self, args: list[str], url_on_stderr: bool):
        import tempfile

        self.log = tempfile.TemporaryFile("w+")
        out = {"stderr": self.log, "stdout": subprocess.DEVNULL} if url_on_stderr else {"stdout": self.log}
        self.process = subprocess.Popen(args, cwd=ROOT, stdin=subprocess.DEVNULL, text=True, **out)
        deadline = time.monotonic() + 60
        while not (found := re.search(r"(http://127\.0\.0\.1:\d+)", self._written())):
            if time.monotonic() > deadline or self.process.poll() is not None:
                raise RuntimeError(f"{args[2:4]} did not start: {self._written()[-2000:]}")
            time.sleep(0.02)
        self.url = found[1]

    def _written(self) -> str:
        self.log.seek(0)
        return self.log.read(20_000)

    def cpu(self) -> float:
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLK

    def rss(self) -> int:
        status = Path(f"/proc/{self.process.pid}/status").read_text()
        return int(re.search(r"VmRSS:\s+(\d+) kB", status)[1]) * 1024

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(30)
        self.log.close()


def run_floor_proxy(upstream_url: str) -> None:
    """The floor proxy's process: ``rules-compact serve``'s HTTP stack (uvicorn, starlette,
    httpx, its worker thread, log line and metrics) with the rewrite only ``json.loads`` +
    ``json.dumps`` of each body; prints its URL on stderr, as the proxy does."""
    from rules_compact.cli.serve import _listen, _log_to_stderr
    import rules_compact.serve.app as app
    from rules_compact.serve import Proxy, ServeConfig, serve
    from rules_compact.serve.rewrite import Rewritten

    def floor_rewrite(route, raw, encoding, session_id, sessions):
        start = time.perf_counter()
        body = json.loads(raw)
        text = json.dumps(body, ensure_ascii=False, separators=(",", ":"))
        return Rewritten(text.encode(), model=body.get("model"), seconds=time.perf_counter() - start)

    app.rewrite = floor_rewrite
    sock = _listen("127.0.0.1", 0)
    _log_to_stderr()
    config = ServeConfig(anthropic_upstream=upstream_url, openai_upstream=upstream_url + "/v1")
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    serve(Proxy(config, [load_rules("default")]), sock, ready=lambda: print(f"floor proxy on {url}", file=sys.stderr,
                                                                             flush=True))


def upstream(count: bool = False) -> Child:
    return Child([sys.executable, __file__, "--upstream"] + (["--count"] if count else []), url_on_stderr=False)


def proxy(upstream_url: str, floor_only: bool = False) -> Child:
    if floor_only:
        return Child([sys.executable, __file__, "--floor-proxy", upstream_url], url_on_stderr=True)
    return Child([sys.executable, "-m", "rules_compact", "serve", "--port", "0", "--anthropic-upstream",
                  upstream_url, "--openai-upstream", upstream_url + "/v1"], url_on_stderr=True)


# -- the client -----------------------------------------------------------------------------

async def play(url: str, traces: list[Trace], sessions: int, proxy_child: Child | None = None
               ) -> tuple[dict, int, list]:
    """``sessions`` sessions at once (trace ``i % len(traces)``, tag ``s{i}``), each round after
    round: each request's wall time by (session, round), the errors, and with ``proxy_child``
    at one session at a time its CPU per session (first request, the warm rest)."""
    import httpx

    times, errors, cpu = {}, [0], []
    limits = httpx.Limits(max_connections=sessions + 4, max_keepalive_connections=sessions + 4)
    async with httpx.AsyncClient(timeout=600, limits=limits) as client:
        async def session(i: int) -> None:
            trace = traces[i % len(traces)]
            headers = {"content-type": "application/json", "x-api-key": "sk-bench", "authorization": "Bearer sk-bench",
                       "anthropic-version": "2023-06-01", "x-claude-code-session-id": f"bench-{i}"}
            marks = [proxy_child.cpu()] if proxy_child is not None and sessions == 1 else None
            for k in range(len(trace.rounds)):
                body = trace.body(k, f"[s{i}]")
                start = time.perf_counter()
                answer = await client.post(url + PATHS[trace.format], content=body, headers=headers)
                times[i, k] = time.perf_counter() - start
                errors[0] += answer.status_code != 200
                if marks is not None and k in (0, len(trace.rounds) - 1):
                    marks.append(proxy_child.cpu())
            if marks is not None:
                cpu.append((marks[1] - marks[0], marks[-1] - marks[1]))

        if sessions == 1:
            for i in range(len(traces)):
                await session(i)
        else:
            await asyncio.gather(*(session(i) for i in range(sessions)))
    return times, errors[0], cpu


# -- measuring ------------------------------------------------------------------------------

@dataclass
class Phase:
    """One concurrency level, each request's time the minimum over the repeats."""

    sessions: int
    direct: dict
    proxied: dict
    floored: dict  # through the floor proxy
    errors: int = 0
    cpu: float = float("inf")  # the proxy's CPU time over the phase
    memory: float = float("inf")  # the proxy's resident memory added per session
    warm: list | None = None  # one session at a time: per trace, (first request, the rest) CPU

    def keep(self, direct: dict, proxied: dict, floored: dict, errors: int, cpu: float, memory: float, warm: list
             ) -> None:
        for mine, new in ((self.direct, direct), (self.proxied, proxied), (self.floored, floored)):
            for key, seconds in new.items():
                mine[key] = min(mine.get(key, float("inf")), seconds)
        self.errors += errors
        self.cpu, self.memory = min(self.cpu, cpu), min(self.memory, memory)
        if warm:
            self.warm = warm if self.warm is None else [tuple(map(min, a, b)) for a, b in zip(self.warm, warm)]


def measure(traces: list[Trace], concurrency: list[int], repeats: int) -> dict[int, Phase]:
    """Every concurrency level, direct then proxied (a fresh proxy), ``repeats`` times over."""
    phases = {c: Phase(len(traces) if c == 1 else c, {}, {}, {}) for c in concurrency}
    up = upstream()
    try:
        for _ in range(repeats):
            for c, phase in phases.items():
                direct, errors, _ = asyncio.run(play(up.url, traces, c))
                fp = proxy(up.url, floor_only=True)
                floored, errors_floored, _ = asyncio.run(play(fp.url, traces, c))
                fp.stop()
                px = proxy(up.url)
                rss, cpu = px.rss(), px.cpu()
                proxied, more, warm = asyncio.run(play(px.url, traces, c, px))
                phase.keep(direct, proxied, floored, errors + errors_floored + more, px.cpu() - cpu,
                           (px.rss() - rss) / phase.sessions, warm)
                px.stop()
    finally:
        up.stop()
    return phases


def first_request(repeats: int) -> tuple[float, float, float, int]:
    """An unknown 1,000-message Chat session's first request: added wall time, the proxy's CPU
    for it, the floor, the body's bytes (minimum of ``repeats``)."""
    messages = tagged_messages("openai", conversation(1000))
    raw = json.dumps(request_body("openai", messages), ensure_ascii=False).encode().replace(MARK.encode(), b"[s0]")
    trace = Trace("1,000 messages", "openai", messages, ((raw, b""),))
    up = upstream()
    direct = proxied = cpu = float("inf")
    try:
        for _ in range(repeats):
            direct = min(direct, asyncio.run(play(up.url, [trace], 1))[0][0, 0])
            px = proxy(up.url)
            before = px.cpu()
            proxied = min(proxied, asyncio.run(play(px.url, [trace], 1))[0][0, 0])
            cpu = min(cpu, px.cpu() - before)
            px.stop()
    finally:
        up.stop()
    return proxied - direct, cpu, floor(raw, max(3, repeats)), len(raw)


def held(trace: Trace) -> int:
    """What one conversation keeps in the proxy after its last round (tracemalloc, in this
    process: the proxy's own rewrite of every round, with a Sessions of its own)."""
    import gc
    import tracemalloc

    from rules_compact.serve.rewrite import rewrite
    from rules_compact.serve.routes import route_of
    from rules_compact.serve.sessions import Sessions

    route = route_of("POST", PATHS[trace.format], trace.format == "anthropic")
    sessions = Sessions([load_rules("default")], 4, 3600.0)
    rewrite(route, trace.body(0, "[warm-up]"), None, None, sessions)  # what is loaded once per process
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    for k in range(len(trace.rounds)):
        rewrite(route, trace.body(k, "[s0]"), None, None, sessions)
    gc.collect()
    kept = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    return kept


def tokens(traces: list[Trace]) -> list[tuple[str, tuple[int, int], tuple[int, int]]]:
    """Per trace, (prompt, cached) tokens the upstream saw through the proxy and what replay
    computes for the same rounds."""
    import httpx

    up = upstream(count=True)
    px = proxy(up.url)
    try:
        asyncio.run(play(px.url, traces, 1))
        seen = httpx.get(up.url + "/totals").json()
    finally:
        px.stop()
        up.stop()
    rules = [load_rules("default")]
    out = []
    for i, trace in enumerate(traces):
        messages = json.loads(json.dumps(trace.messages).replace(MARK, f"[s{i}]"))
        r = replay(messages, rules, trace.format, PRICES["anthropic"])
        n = len(trace.rounds)
        out.append((trace.name, tuple(seen.get(f"s{i}", (0, 0))), (sum(r.prompt_tokens[:n]), sum(r.cached_tokens[:n]))))
    return out


# -- the report -----------------------------------------------------------------------------

def ms(seconds: float) -> str:
    return f"{seconds * 1e3:,.2f} ms"


def mb(size: float) -> str:
    return f"{size / 2**20:,.2f} MB"


def p(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1] if len(values) > 1 else values[0]


def phase_rows(phases: dict[int, Phase], traces: list[Trace], floors: list[list[float]]) -> tuple[list, dict]:
    """The per-concurrency table, and the worst ratios for the targets."""
    rows = [("sessions at once", "requests", "errors", "direct p50", "added p50", "added p99", "floor p50",
             "floor p99", "added p99 / floor p99", "floor proxy: added p99", "/ floor p99", "proxy CPU / request",
             "/ floor", "memory / session", "/ last body")]
    worst: dict = {}
    for c, ph in phases.items():
        keys = sorted(ph.proxied)
        added = [ph.proxied[key] - ph.direct[key] for key in keys]
        fl = [floors[i % len(traces)][k] for i, k in keys]
        last = statistics.mean(len(traces[i % len(traces)].body(-1, "[s0]")) for i in range(ph.sessions))
        floored = [ph.floored[key] - ph.direct[key] for key in keys]
        ratio_p99, ratio_mem = p(added, 99) / p(fl, 99), ph.memory / last
        worst[c] = (ratio_p99, ratio_mem, ph.errors, p(floored, 99) / p(fl, 99))
        rows.append((c, len(keys), ph.errors, ms(p([ph.direct[k] for k in keys], 50)), ms(p(added, 50)),
                     ms(p(added, 99)), ms(p(fl, 50)), ms(p(fl, 99)), f"{ratio_p99:.1f}", ms(p(floored, 99)),
                     f"{worst[c][3]:.1f}", ms(ph.cpu / len(keys)),
                     f"{ph.cpu / sum(fl):.1f}", mb(ph.memory), f"{ratio_mem:.2f}"))
    return rows, worst


def trace_rows(phase: Phase, traces: list[Trace], floors: list[list[float]]) -> tuple[list, float]:
    """One session at a time, per trace: its warm rounds' added time and CPU over their floor."""
    rows = [("session", "rounds", "last body", "floor, warm rounds", "added, warm rounds", "/ floor",
             "floor proxy: added", "/ floor", "proxy CPU, warm rounds", "/ floor", "first request: added",
             "its proxy CPU", "held by the session", "/ last body")]
    worst = 0.0
    for i, trace in enumerate(traces):
        n = len(trace.rounds)
        added = [phase.proxied[i, k] - phase.direct[i, k] for k in range(n)]
        floored = sum(phase.floored[i, k] - phase.direct[i, k] for k in range(1, n))
        warm_floor = sum(floors[i][1:])
        first_cpu, warm_cpu = phase.warm[i] if phase.warm else (float("nan"), float("nan"))
        worst = max(worst, sum(added[1:]) / warm_floor)
        kept, last = held(trace), len(trace.body(-1, "[s0]"))
        rows.append((trace.name, n, mb(last), ms(warm_floor), ms(sum(added[1:])),
                     f"{sum(added[1:]) / warm_floor:.1f}", ms(floored), f"{floored / warm_floor:.1f}", ms(warm_cpu),
                     f"{warm_cpu / warm_floor:.1f}",
                     ms(added[0]), ms(first_cpu), mb(kept), f"{kept / last:.1f}"))
    return rows, worst


def verdict(ok: bool) -> str:
    return "met" if ok else "MISSED"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--rounds", type=int, help="only each session's first ROUNDS rounds")
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    parser.add_argument("--upstream", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--count", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--floor-proxy", metavar="UPSTREAM", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.upstream:
        run_upstream(args.count)
        return 0
    if args.floor_proxy:
        run_floor_proxy(args.floor_proxy)
        return 0
    print(machine())
    traces = [load_trace(name, path, args.rounds) for name, path in SESSIONS]
    floors = [[floor(t.body(k, "[s0]"), max(3, args.repeats)) for k in range(len(t.rounds))] for t in traces]
    phases = measure(traces, sorted(set(args.concurrency)), args.repeats)
    added, first_cpu, first_floor, first_size = first_request(args.repeats)
    counted = tokens(traces)
    print(f"load average after: {os.getloadavg()[0]:.2f}\n")

    rows, worst = phase_rows(phases, traces, floors)
    print(table(rows, set(range(1, len(rows[0])))) + "\n")
    results = []
    if 1 in phases:
        per_trace, warm = trace_rows(phases[1], traces, floors)
        print(table(per_trace, set(range(1, len(per_trace[0])))) + "\n")
        results.append(("a warm session's added time over its rounds", f"<= {TARGETS['warm']:g}x the floor",
                        f"{warm:.1f}x (worst session)", warm <= TARGETS["warm"]))
        results.append(("added p99, one session at a time", f"<= {TARGETS['p99']:g}x the floor",
                        f"{worst[1][0]:.1f}x", worst[1][0] <= TARGETS["p99"]))
    for c in (c for c in phases if c > 1):
        results.append((f"added p99, {c} sessions at once (the floor proxy's: {worst[c][3]:.1f}x)",
                        f"<= {TARGETS['p99']:g}x the floor", f"{worst[c][0]:.1f}x", worst[c][0] <= TARGETS["p99"]))
    first = added / first_floor
    results.append((f"first request of an unknown 1,000-message session ({mb(first_size)}; proxy CPU "
                    f"{ms(first_cpu)}, added {ms(added)}, floor {ms(first_floor)})",
                    f"<= {TARGETS['first']:g}x the floor", f"{first:.1f}x", first <= TARGETS["first"]))
    for c in (c for c in phases if c > 1):
        results.append((f"{c} concurrent sessions", "0 errors", str(worst[c][2]), worst[c][2] == 0))
        results.append((f"memory per session, {c} at once", f"<= {TARGETS['memory']:g}x its last body",
                        f"{worst[c][1]:.2f}x", worst[c][1] <= TARGETS["memory"]))
    for name, seen, computed in counted:
        results.append((f"tokens the upstream saw, {name} (prompt, cached)", f"= replay {computed}", str(seen),
                        tuple(seen) == tuple(computed)))
    print(table([("measure", "target", "measured", "")] + [(a, b, c, verdict(ok)) for a, b, c, ok in results],
                {2}))
    return 1 if args.check and not all(ok for *_, ok in results) else 0


if __name__ == "__main__":
    sys.exit(main())
