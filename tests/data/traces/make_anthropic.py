#!/usr/bin/env python3
"""Convert a Claude Code session JSONL into an Anthropic Messages API message list.

Stdlib only. Usage:

    python make_anthropic.py SESSION.jsonl [-o OUT.json] [--sidechain auto|keep|skip]
                             [--no-regroup] [--no-check]

What it does:

* keeps only lines with ``type`` "user" or "assistant" (progress, system,
  file-history-snapshot, queue-operation, ... lines are skipped);
* sidechain handling (``--sidechain``): ``skip`` drops lines with
  ``isSidechain: true`` (what you want for a main session), ``keep`` keeps
  them (a subagent file ``subagents/agent-*.jsonl`` consists only of
  sidechain lines), ``auto`` (default) keeps them if every conversation line
  is a sidechain line, and skips them otherwise;
* lines are taken in file order (the ``parentUuid`` links are not followed:
  with parallel tool use, Claude Code parents each tool_result line on its
  own tool_use line, so the links form a tree, not a chain);
* Claude Code writes one line per content block, so the assistant lines that
  share ``message.id`` are merged into one assistant message (blocks in file
  order);
* regrouping (default on, ``--no-regroup`` turns it off): Claude Code starts
  running a tool as soon as its tool_use block has streamed, so the
  tool_result line of the first call of a parallel batch can be written
  *before* the later tool_use lines of the same response (same
  ``message.id`` and ``requestId``).  Such an interleaved user line, made only
  of tool_result blocks, is moved after the merged assistant message, so that
  one API response gives exactly one assistant message followed by one user
  message holding all its tool results (in the order they were recorded).
  With ``--no-regroup`` only directly consecutive lines are merged and such a
  response is split into two assistant messages with the same id;
* consecutive user lines are merged into one user message (string content
  becomes a ``{"type": "text"}`` block);
* vendor fields are dropped: every output message is exactly
  ``{"role": ..., "content": [...]}`` and blocks keep only API fields
  (text: type,text; thinking: type,thinking,signature; redacted_thinking:
  type,data; tool_use: type,id,name,input; tool_result: type,tool_use_id,
  content,is_error (only if present); image blocks as they are).

At the end the result is checked against the Messages API rules (roles
alternate starting with user, every tool_use has exactly one tool_result in
the immediately following user message, every tool_result answers a tool_use
of the immediately preceding assistant message, tool_results come first in
their user message).  Problems are printed to stderr and make the exit
status 1 (``--no-check`` skips the check).
"""

import argparse
import json
import sys

CONVERSATION_TYPES = ("user", "assistant")

BLOCK_FIELDS = {
    "text": ("type", "text"),
    "thinking": ("type", "thinking", "signature"),
    "redacted_thinking": ("type", "data"),
    "tool_use": ("type", "id", "name", "input"),
    "tool_result": ("type", "tool_use_id", "content", "is_error"),
}


def clean_block(block):
    """Return a copy of a content block restricted to Messages API fields."""
    if isinstance(block, str):
        return {"type": "text", "text": block}
    btype = block.get("type")
    if btype == "image":
        return block
    fields = BLOCK_FIELDS.get(btype)
    if fields is None:  # unknown block type: keep it unchanged
        return block
    out = {k: block[k] for k in fields if k in block}
    if btype == "tool_result" and isinstance(out.get("content"), list):
        out["content"] = [clean_block(b) for b in out["content"]]
    return out


def content_blocks(message):
    content = message.get("content")
    if content is None:
        return []
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [clean_block(b) for b in content]


def read_lines(path):
    with open(path, encoding="utf-8") as f:
        for n, raw in enumerate(f, 1):
            raw = raw.strip()
            if raw:
                yield n, json.loads(raw)


def convert(entries, sidechain="auto", regroup=True, notes=None):
    """entries: iterable of (line_number, dict). Returns the message list."""
    if notes is None:
        notes = []
    conv = [(n, d) for n, d in entries if d.get("type") in CONVERSATION_TYPES]
    if sidechain == "auto":
        keep_side = bool(conv) and all(d.get("isSidechain") for _, d in conv)
    else:
        keep_side = sidechain == "keep"
    if not keep_side:
        conv = [(n, d) for n, d in conv if not d.get("isSidechain")]

    messages = []  # output messages
    ids = []  # message.id of each assistant output message (None for user)
    for n, d in conv:
        msg = d.get("message") or {}
        role = d["type"]
        blocks = content_blocks(msg)
        if role == "assistant":
            mid = msg.get("id")
            if messages and messages[-1]["role"] == "assistant" and mid is not None and ids[-1] == mid:
                messages[-1]["content"].extend(blocks)
                continue
            if (
                regroup
                and mid is not None
                and len(messages) >= 2
                and messages[-1]["role"] == "user"
                and messages[-2]["role"] == "assistant"
                and ids[-2] == mid
                and messages[-1]["content"]
                and all(b.get("type") == "tool_result" for b in messages[-1]["content"])
            ):
                messages[-2]["content"].extend(blocks)
                notes.append(  # one note per interleaved assistant line

                    "line %d: assistant block of %s came after tool_result(s) %s of the same "
                    "response; merged into that assistant message, results moved after it"
                    % (n, mid, ", ".join(b["tool_use_id"] for b in messages[-1]["content"]))
                )
                continue
            messages.append({"role": "assistant", "content": blocks})
            ids.append(mid)
        else:
            if messages and messages[-1]["role"] == "user":
                messages[-1]["content"].extend(blocks)
            else:
                messages.append({"role": "user", "content": blocks})
                ids.append(None)
    return messages


def check(messages):
    """Return a list of Messages API rule violations (empty if valid)."""
    problems = []
    for i, m in enumerate(messages):
        if set(m) != {"role", "content"}:
            problems.append("message %d: keys %s" % (i, sorted(m)))
        want = "user" if i % 2 == 0 else "assistant"
        if m["role"] != want:
            problems.append("message %d: role %s, expected %s" % (i, m["role"], want))
        if not m["content"]:
            problems.append("message %d: empty content" % i)
    for i, m in enumerate(messages):
        blocks = m["content"]
        if m["role"] == "assistant":
            uses = [b["id"] for b in blocks if b.get("type") == "tool_use"]
            if len(uses) != len(set(uses)):
                problems.append("message %d: duplicate tool_use ids" % i)
            if not uses:
                continue
            if i + 1 >= len(messages):
                if i != len(messages) - 1:
                    problems.append("message %d: tool_use without following message" % i)
                continue  # dangling tool_use on the very last message
            nxt = messages[i + 1]
            results = [b["tool_use_id"] for b in nxt["content"] if b.get("type") == "tool_result"]
            for u in uses:
                c = results.count(u)
                if c != 1:
                    problems.append("message %d: tool_use %s has %d tool_result(s) in message %d" % (i, u, c, i + 1))
        else:
            results = [b["tool_use_id"] for b in blocks if b.get("type") == "tool_result"]
            if not results:
                continue
            prev_uses = set()
            if i > 0 and messages[i - 1]["role"] == "assistant":
                prev_uses = {b["id"] for b in messages[i - 1]["content"] if b.get("type") == "tool_use"}
            for r in results:
                if r not in prev_uses:
                    problems.append("message %d: tool_result %s answers no tool_use of message %d" % (i, r, i - 1))
            types = [b.get("type") for b in blocks]
            first_other = next((k for k, t in enumerate(types) if t != "tool_result"), len(types))
            if "tool_result" in types[first_other:]:
                problems.append("message %d: tool_result blocks are not all before other blocks" % i)
    return problems


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("jsonl")
    ap.add_argument("-o", "--output", help="output file (default: stdout)")
    ap.add_argument("--sidechain", choices=("auto", "keep", "skip"), default="auto")
    ap.add_argument("--no-regroup", action="store_true")
    ap.add_argument("--no-check", action="store_true")
    args = ap.parse_args(argv)

    notes = []
    messages = convert(read_lines(args.jsonl), args.sidechain, not args.no_regroup, notes)
    text = json.dumps(messages, indent=1, ensure_ascii=False) + "\n"
    if args.output:
        with open(args.output, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    for note in notes:
        print("regrouped: " + note, file=sys.stderr)
    n_use = sum(1 for m in messages for b in m["content"] if b.get("type") == "tool_use")
    n_res = sum(1 for m in messages for b in m["content"] if b.get("type") == "tool_result")
    print("%d messages, %d tool_use, %d tool_result" % (len(messages), n_use, n_res), file=sys.stderr)
    if not args.no_check:
        problems = check(messages)
        for p in problems:
            print("INVALID: " + p, file=sys.stderr)
        return 1 if problems else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
