"""How far chars4 is from real token counts, per agent and content kind, and how fast the
tokenizers of the ``tokens`` extra count (docs/tokens.md holds its output).

Every piece the estimators see (``Format.message_pieces``) in every conversation of
tests/data/traces is counted with chars4, o200k and cl100k, and sorted by the agent (the
folder) and the kind of content: ``text`` (user, system and assistant text), ``reasoning``
(thinking, reasoning text), ``encrypted`` (Codex's encrypted reasoning, which the model never
reads as such), ``call`` (tool names and arguments), ``result`` (tool results).  chars4's error
is ``chars4 / tokens - 1``: negative when it counts too few.

Then the ``claude`` estimator's fit: per round of each Claude Code log that records its
``usage``, the prompt tokens billed beyond the previous round's (what the round added: the
previous response and the results and user text after it; the system prompt and tools cancel)
against the characters and the pieces it added, by least squares ``tokens = chars / c + p ×
pieces``, fitted on all logs but one and checked on the one left out, against chars4.

    PYTHONPATH=. python bench/tokens.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import time
from collections import defaultdict
from pathlib import Path

from rules_compact.formats import FORMATS
from rules_compact.kinds.estimators import ESTIMATORS
from rules_compact.readers import read_conversations
from rules_compact.replay import round_starts

TRACES = Path(__file__).resolve().parent.parent / "tests" / "data" / "traces"
COUNTERS = ("chars4", "o200k", "cl100k")


def kinded_pieces(fmt: str, msg) -> list[tuple[str, str]]:
    """``(kind, piece)`` for every piece of ``msg`` its format estimates."""
    form = FORMATS[fmt]
    if fmt == "anthropic":
        content = msg.get("content")
        if isinstance(content, str):
            return [("text", content)]
        out = []
        for block in content or []:
            kind = {"thinking": "reasoning", "redacted_thinking": "encrypted", "tool_use": "call",
                    "tool_result": "result"}.get(block.get("type"), "text")
            out += [(kind, p) for p in form.message_pieces({"role": msg["role"], "content": [block]})]
        return out
    if fmt == "responses":
        kind = {"function_call_output": "result", "custom_tool_call_output": "result",
                "local_shell_call_output": "result", "reasoning": "reasoning", "message": "text"}.get(
                    msg.get("type", "message"), "call")
        pieces = list(form.message_pieces(msg))
        if kind == "reasoning" and msg.get("encrypted_content"):
            return [("reasoning", p) for p in pieces[:-1]] + [("encrypted", pieces[-1])]
        return [(kind, p) for p in pieces]
    pieces = list(form.message_pieces(msg))
    if msg.get("role") == "tool":
        return [("result", p) for p in pieces]
    calls = 2 * len(form.calls(msg)) if msg.get("tool_calls") else 0
    split = len(pieces) - calls
    return ([("text", pieces[0])] + [("reasoning", p) for p in pieces[1:split]]
            + [("call", p) for p in pieces[split:]])


def corpus() -> dict[tuple[str, str], list[str]]:
    """(agent, kind) -> its pieces, over every trace file."""
    out: dict[tuple[str, str], list[str]] = defaultdict(list)
    for path in sorted(TRACES.glob("*/*")):
        if path.suffix in (".md", ".py"):
            continue
        for conv in read_conversations(path.read_text(encoding="utf-8"), str(path)):
            for msg in conv.messages:
                for kind, piece in kinded_pieces(conv.format, msg):
                    if piece:
                        out[path.parent.name, kind].append(piece)
    return out


def added_per_round(path: Path) -> list[tuple[int, int, int]]:
    """Per round after the first of a Claude Code log: (billed tokens added, characters added,
    pieces added), for the rounds whose and whose previous round's usage the log records."""
    (conv,) = read_conversations(path.read_text(encoding="utf-8"), str(path))
    if conv.usage is None:
        return []
    starts = round_starts(conv.messages, conv.format)
    out = []
    for before, start in zip(starts, starts[1:]):
        if conv.usage[before] is None or conv.usage[start] is None:
            continue
        pieces = [p for m in conv.messages[before:start] for _, p in kinded_pieces(conv.format, m) if p]
        out.append((conv.usage[start].prompt - conv.usage[before].prompt, sum(map(len, pieces)), len(pieces)))
    return out


def least_squares(rows: list[tuple[int, int, int]]) -> tuple[float, float]:
    """(tokens per character, tokens per piece) minimising the squared error of the rows."""
    sxx = sum(c * c for _, c, _ in rows)
    sxp = sum(c * p for _, c, p in rows)
    spp = sum(p * p for _, _, p in rows)
    sxy = sum(c * t for t, c, _ in rows)
    spy = sum(p * t for t, _, p in rows)
    det = sxx * spp - sxp * sxp
    return (sxy * spp - spy * sxp) / det, (spy * sxx - sxy * sxp) / det


def claude_fit() -> None:
    logs = {path.name: rows for path in sorted((TRACES / "claude-code").glob("*.jsonl"))
            if (rows := added_per_round(path))}
    per_char, per_piece = least_squares([r for rows in logs.values() for r in rows])
    print(f"\nclaude fit on all {len(logs)} Claude Code logs with usage: {1 / per_char:.3f} characters a token + "
          f"{per_piece:.1f} tokens a piece (the estimator: 2.95 and 34)")
    print("| log left out | rounds | billed tokens added | fitted on the others | claude | chars4 |")
    print("|---|---:|---:|---:|---:|---:|")
    claude, chars4 = ESTIMATORS["claude"], ESTIMATORS["chars4"]
    for name, rows in logs.items():
        a, b = least_squares([r for other, rs in logs.items() if other != name for r in rs])
        billed = sum(t for t, _, _ in rows)
        fitted = sum(a * c + b * p for _, c, p in rows)
        mine = sum(round(c / 2.95) + 34 * p for _, c, p in rows)  # as the estimator counts, in sum
        quarter = sum(c / 4 for _, c, _ in rows)
        print(f"| {name} | {len(rows)} | {billed:,} | {error(round(fitted), billed)} | {error(mine, billed)} | "
              f"{error(round(quarter), billed)} |")
    assert claude("x" * 295) == 100 + 34 and chars4("x" * 400) == 100


def error(estimate: int, tokens: int) -> str:
    return f"{estimate / tokens - 1:+.1%}" if tokens else "-"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3, help="timed repeats per tokenizer (the minimum is shown)")
    args = parser.parse_args(argv)
    started = time.process_time()
    for name in COUNTERS:
        ESTIMATORS[name]("warm up")  # loads the vocabulary
    print(f"vocabularies loaded in {time.process_time() - started:.2f} s CPU")
    groups = corpus()
    counts = {key: {name: sum(map(ESTIMATORS[name], pieces)) for name in COUNTERS} for key, pieces in groups.items()}
    print("\n| agent | content | pieces | characters | o200k | cl100k | chars / o200k token | chars4 vs o200k | chars4 vs cl100k |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    rows = sorted(groups, key=lambda k: (k[0], k[1]))
    for agent in dict.fromkeys(a for a, _ in rows):
        for key in [k for k in rows if k[0] == agent] + [(agent, "all")]:
            mine = [k for k in rows if k[0] == agent and key[1] in ("all", k[1])]
            pieces = sum(len(groups[k]) for k in mine)
            chars = sum(len(p) for k in mine for p in groups[k])
            c = {name: sum(counts[k][name] for k in mine) for name in COUNTERS}
            label = f"**{key[1]}**" if key[1] == "all" else key[1]
            print(f"| {agent} | {label} | {pieces:,} | {chars:,} | {c['o200k']:,} | {c['cl100k']:,} | "
                  f"{chars / c['o200k']:.2f} | {error(c['chars4'], c['o200k'])} | {error(c['chars4'], c['cl100k'])} |")
    every = [p for pieces in groups.values() for p in pieces]
    size = sum(len(p.encode("utf-8", "surrogatepass")) for p in every)
    print(f"\nspeed over all {len(every):,} pieces ({size / 1e6:.1f} MB), CPU, min of {args.repeats} interleaved repeats:")
    best = dict.fromkeys(COUNTERS, float("inf"))
    for _ in range(args.repeats):
        for name in COUNTERS:
            count = ESTIMATORS[name]
            t = time.process_time()
            for p in every:
                count(p)
            best[name] = min(best[name], time.process_time() - t)
    print("| estimator | seconds | MB / s | vs chars4 |\n|---|---:|---:|---:|")
    for name in COUNTERS:
        print(f"| {name} | {best[name]:.3f} | {size / 1e6 / best[name]:.1f} | {best[name] / best['chars4']:.0f}x |")
    claude_fit()


if __name__ == "__main__":
    main()
