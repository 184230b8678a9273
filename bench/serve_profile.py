"""The proxy's own work on a request body, in this process: ``rules_compact.serve.rewrite``
(read, session, Compactor, validity check, write), without the HTTP relay, against the floor.

For Claude Code sessions ae4a77f8 and 4d5611e5 (tests/data/traces/claude-code), replayed as
the Messages bodies of their rounds (bench/serve.py's ``request_body``), and for an unknown
1,000-message Chat session (bench/speed.py's ``conversation``), in the same run:

* warm: one session's rewrite CPU time summed over its rounds after the first, over the floor
  (``json.loads`` + ``json.dumps`` of the same bodies) summed alike; minimum of ``--repeats``;
* first request of the unknown 1,000-message session: its rewrite over its floor;
* held: what a session keeps after its last round (tracemalloc), over its last body's bytes.

Usage:  python3 bench/serve_profile.py [--repeats 3] [--profile warm|first]
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import json
import pstats
import sys
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from speed import conversation, machine  # noqa: E402

from rules_compact import load_rules  # noqa: E402
from rules_compact.documents import read_conversations_from  # noqa: E402
from rules_compact.replay import round_starts  # noqa: E402
from rules_compact.serve.rewrite import rewrite  # noqa: E402
from rules_compact.serve.routes import route_of  # noqa: E402
from rules_compact.serve.sessions import Sessions  # noqa: E402

TRACES = ROOT / "tests" / "data" / "traces" / "claude-code"
SESSIONS = ("ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl", "4d5611e5-241a-462a-8d15-5122611a9569.jsonl")
TARGETS = {"warm": 3.0, "first": 20.0, "held": 3.0}


def bodies(path: Path) -> list[bytes]:
    """The Messages bodies Claude Code sent for the session at ``path``, one per round."""
    conv = read_conversations_from(str(path))[0]
    return [json.dumps({"model": "claude-sonnet-4-6", "max_tokens": 1024, "system": "a coding agent",
                        "messages": conv.messages[:end]}, ensure_ascii=False).encode()
            for end in round_starts(conv.messages, conv.format)]


def floor(raw: bytes) -> float:
    start = time.process_time()
    json.dumps(json.loads(raw), ensure_ascii=False)
    return time.process_time() - start


def session(route_path: str, rounds: list[bytes], sessions: Sessions | None = None) -> list[float]:
    """Each round's rewrite CPU time, one fresh session."""
    route = route_of("POST", route_path, route_path == "/v1/messages")
    sessions = Sessions([load_rules("default")], 4, 3600.0) if sessions is None else sessions
    out = []
    for raw in rounds:
        start = time.process_time()
        rewrite(route, raw, None, None, sessions)
        out.append(time.process_time() - start)
    return out


def held(rounds: list[bytes]) -> int:
    sessions = Sessions([load_rules("default")], 4, 3600.0)
    session("/v1/messages", [b'{"messages":[{"role":"user","content":"warm-up"}]}'], sessions)
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    session("/v1/messages", rounds, sessions)
    gc.collect()
    kept = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    return kept


def first_body() -> bytes:
    return json.dumps({"model": "deepseek-chat", "messages": conversation(1000)}, ensure_ascii=False).encode()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--profile", choices=("warm", "first"), help="cProfile one run instead")
    args = parser.parse_args(argv)
    traces = {name[:8]: bodies(TRACES / name) for name in SESSIONS}
    first = first_body()
    session("/v1/messages", traces["ae4a77f8"][:3])  # rules loaded, code warm
    if args.profile:
        profile = cProfile.Profile()
        profile.enable()
        if args.profile == "warm":
            for rounds in traces.values():
                session("/v1/messages", rounds)
        else:
            session("/v1/chat/completions", [first])
        profile.disable()
        pstats.Stats(profile).sort_stats("cumulative").print_stats(40)
        return 0
    print(machine())
    ok = True
    for name, rounds in traces.items():
        warm = min(sum(session("/v1/messages", rounds)[1:]) for _ in range(args.repeats))
        base = min(sum(floor(r) for r in rounds[1:]) for _ in range(args.repeats))
        kept = held(rounds)
        ok &= warm / base <= TARGETS["warm"] and kept / len(rounds[-1]) <= TARGETS["held"]
        print(f"{name}: {len(rounds)} rounds, last body {len(rounds[-1]) / 1e6:.2f} MB; "
              f"warm {warm * 1e3:.0f} ms / floor {base * 1e3:.0f} ms = {warm / base:.1f}x (<= {TARGETS['warm']:g}); "
              f"held {kept / 1e6:.2f} MB = {kept / len(rounds[-1]):.1f}x its last body (<= {TARGETS['held']:g})")
    cold = min(session("/v1/chat/completions", [first])[0] for _ in range(args.repeats))
    base = min(floor(first) for _ in range(args.repeats))
    ok &= cold / base <= TARGETS["first"]
    print(f"first request, unknown 1,000-message session ({len(first) / 1e6:.2f} MB): "
          f"{cold * 1e3:.0f} ms / floor {base * 1e3:.1f} ms = {cold / base:.0f}x (<= {TARGETS['first']:g})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
