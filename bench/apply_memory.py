"""Peak memory of ``rules-compact apply`` on a large file, against the file's size.

Builds a conversation of ``--messages`` messages (default 1,000,000) from a bundled example
session: its opening messages, then its assistant/tool turns repeated with fresh call ids, with
the API's keys only, each tool result cut to ``--result-chars`` characters (default 250: over the
default rules' 200, so old results are cleared) and every other text to ``--chars`` (default 40).
``--format openai`` (the default) builds it from examples/coding-session.json (mini-swe-agent,
Chat Completions messages: 1,000,000 messages make about 280 MB, the size issue 19 measured);
``--format anthropic`` from examples/anthropic-session.json (Claude Code, Messages content
blocks: 100,000 messages make about 33 MB, the file issue 29 measured).  Then runs
``rules-compact apply FILE -o OUT -r RULES`` for each ``--rules`` (default: the bundled default;
``all``: it and every bundled preset) in a child process, and reports its peak resident memory
(``ru_maxrss``) and CPU time, as a table.

Usage:
    python3 bench/apply_memory.py                      # 1,000,000 messages
    python3 bench/apply_memory.py --messages 100000 --format anthropic --rules all
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = {"openai": ROOT / "examples" / "coding-session.json",
            "anthropic": ROOT / "examples" / "anthropic-session.json"}
OPENING = {"openai": 2, "anthropic": 1}  # system and task; the task
API_KEYS = ("role", "content", "tool_calls", "tool_call_id")  # the logged extras left out
PRESETS = ROOT / "rules" / "presets"


def conversation(fmt: str, n: int, chars: int, result_chars: int) -> list:
    messages = json.loads(EXAMPLES[fmt].read_text(encoding="utf-8"))["messages"]
    lapped = _openai_message if fmt == "openai" else _anthropic_message
    out, lap = list(messages[:OPENING[fmt]]), 0
    while len(out) < n:
        for m in messages[OPENING[fmt]:]:
            if len(out) >= n:
                break
            out.append(lapped(m, lap, chars, result_chars))
        lap += 1
    return out


def _openai_message(m: dict, lap: int, chars: int, result_chars: int) -> dict:
    m = {k: v for k, v in m.items() if k in API_KEYS}
    if isinstance(m.get("content"), str):
        m["content"] = m["content"][:result_chars if m["role"] == "tool" else chars]
    if m.get("tool_calls"):
        m["tool_calls"] = [dict(c, id=f"{c['id']}-{lap}") for c in m["tool_calls"]]
    if m.get("role") == "tool":
        m["tool_call_id"] = f"{m['tool_call_id']}-{lap}"
    return m


def _anthropic_message(m: dict, lap: int, chars: int, result_chars: int) -> dict:
    def block(b: dict) -> dict:
        b = dict(b)
        if b["type"] == "text":
            b["text"] = b["text"][:chars]
        elif b["type"] == "tool_use":
            b["id"] = f"{b['id']}-{lap}"
        elif b["type"] == "tool_result":
            b["tool_use_id"] = f"{b['tool_use_id']}-{lap}"
            if isinstance(b.get("content"), str):
                b["content"] = b["content"][:result_chars]
        return b

    return {"role": m["role"], "content": [block(b) for b in m["content"]]}


def rule_files(names: list[str]) -> list[str]:
    """The ``-r`` values to measure: ``all`` is the default and every bundled preset."""
    if names == ["all"]:
        return ["default"] + sorted(f"preset:{p.stem}" for p in PRESETS.glob("*.yaml"))
    return names


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--format", choices=sorted(EXAMPLES), default="openai")
    parser.add_argument("--rules", nargs="+", default=["default"], metavar="RULES",
                        help="-r values to measure, each in its own run; 'all': the default and every preset")
    parser.add_argument("--chars", type=int, default=40, help="characters kept of other texts")
    parser.add_argument("--result-chars", type=int, default=250, help="characters kept of a tool result")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        source, out = Path(tmp) / "big.json", Path(tmp) / "out.json"
        with open(source, "w", encoding="utf-8") as fh:
            json.dump({"messages": conversation(args.format, args.messages, args.chars, args.result_chars)}, fh)
        size = source.stat().st_size
        load = f"; load average {os.getloadavg()[0]:.2f}" if hasattr(os, "getloadavg") else ""
        print(f"rules-compact apply, {args.messages:,} {args.format} messages, a {size / 1e6:,.0f} MB file{load}")
        print("| rules | peak memory | peak / file size | CPU time | wall time | summary |")
        print("|---|---:|---:|---:|---:|---|")
        for rules in rule_files(args.rules):
            measured = apply(source, out, rules, size)
            if measured is None:
                return 1
            peak, cpu, wall, summary = measured
            print(f"| {rules} | {peak / 1e6:,.0f} MB | {peak / size:.2f}x | {cpu:.1f} s | {wall:.1f} s | {summary} |",
                  flush=True)
    return 0


def apply(source: Path, out: Path, rules: str, size: int) -> tuple[int, float, float, str] | None:
    """One ``apply`` in a child process: its own peak RSS (bytes), CPU and wall seconds, and its
    summary line (``os.wait4`` gives that child's usage alone, where RUSAGE_CHILDREN keeps the
    largest child's peak so far)."""
    exe = Path(sys.executable).with_name("rules-compact")
    command = [str(exe)] if exe.exists() else [sys.executable, "-m", "rules_compact"]
    env = {**os.environ, "RULES_COMPACT_MAX_INPUT_BYTES": str(2 * size)}
    with tempfile.TemporaryFile("w+", encoding="utf-8") as stderr:
        started = time.perf_counter()
        child = subprocess.Popen(command + ["apply", str(source), "-o", str(out), "-r", rules],
                                 stdout=subprocess.DEVNULL, stderr=stderr, env=env)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - started
        child.returncode = os.waitstatus_to_exitcode(status)
        stderr.seek(0)
        said = stderr.read().strip()
    if child.returncode != 0:
        print(said, file=sys.stderr)
        return None
    summary = next(line for line in said.splitlines() if " changed; " in line).removeprefix("rules-compact: ")
    return usage.ru_maxrss * 1024, usage.ru_utime + usage.ru_stime, wall, summary  # ru_maxrss: kilobytes on Linux


if __name__ == "__main__":
    sys.exit(main())
