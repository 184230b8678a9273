"""Peak memory of ``rules-compact apply`` on a large file, against the file's size.

Builds a conversation of ``--messages`` messages (default 1,000,000) from the bundled example
session (examples/coding-session.json): its system and task messages, then its assistant/tool
pairs repeated with fresh call ids, with the API's keys only, each tool result cut to
``--result-chars`` characters (default 250: over the default rules' 200, so old results are
cleared) and every other text to ``--chars`` (default 40), which makes the 1,000,000-message
file about 240 MB, the size issue 19 measured.  Then runs
``rules-compact apply FILE -o OUT`` (the bundled default rules) in a child process, and reports
its peak resident memory (``ru_maxrss``) and CPU time, as a table.

Usage:
    python3 bench/apply_memory.py                      # 1,000,000 messages
    python3 bench/apply_memory.py --messages 100000
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "coding-session.json"
API_KEYS = ("role", "content", "tool_calls", "tool_call_id")  # the logged extras left out


def conversation(n: int, chars: int, result_chars: int) -> list:
    messages = json.loads(EXAMPLE.read_text(encoding="utf-8"))["messages"]
    out, lap = list(messages[:2]), 0
    while len(out) < n:
        for m in messages[2:]:
            if len(out) >= n:
                break
            m = {k: v for k, v in m.items() if k in API_KEYS}
            if isinstance(m.get("content"), str):
                m["content"] = m["content"][:result_chars if m["role"] == "tool" else chars]
            if m.get("tool_calls"):
                m["tool_calls"] = [dict(c, id=f"{c['id']}-{lap}") for c in m["tool_calls"]]
            if m.get("role") == "tool":
                m["tool_call_id"] = f"{m['tool_call_id']}-{lap}"
            out.append(m)
        lap += 1
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--chars", type=int, default=40, help="characters kept of other texts")
    parser.add_argument("--result-chars", type=int, default=250, help="characters kept of a tool result")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        source, out = Path(tmp) / "big.json", Path(tmp) / "out.json"
        with open(source, "w", encoding="utf-8") as fh:
            json.dump({"messages": conversation(args.messages, args.chars, args.result_chars)}, fh)
        size = source.stat().st_size
        exe = Path(sys.executable).with_name("rules-compact")
        command = [str(exe)] if exe.exists() else [sys.executable, "-m", "rules_compact"]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        env = {**os.environ, "RULES_COMPACT_MAX_INPUT_BYTES": str(2 * size)}
        done = subprocess.run(command + ["apply", str(source), "-o", str(out)], capture_output=True, text=True,
                              env=env)
        wall = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if done.returncode != 0:
            print(done.stderr, file=sys.stderr)
            return 1
        peak = after.ru_maxrss * 1024  # kilobytes on Linux
        cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
        load = f"; load average {os.getloadavg()[0]:.2f}" if hasattr(os, "getloadavg") else ""
        print(f"rules-compact apply, default rules, {args.messages:,} messages{load}")
        print(f"{done.stderr.strip()}")
        print("| file | peak memory | peak / file size | CPU time | wall time |")
        print("|---:|---:|---:|---:|---:|")
        print(f"| {size / 1e6:,.0f} MB | {peak / 1e6:,.0f} MB | {peak / size:.2f}x | {cpu:.0f} s | {wall:.0f} s |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
