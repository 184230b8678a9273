#!/usr/bin/env python3
"""Regenerate the bundled examples in ../../../examples/ from the traces here.

Stdlib only. Run from anywhere:  python tests/data/traces/make_examples.py

* examples/coding-session.json: the first 50 messages (system, user, then 24
  assistant/tool pairs) of mini-swe-agent/deepseek_reasoner_dev__sqlfluff__sqlfluff-1763.traj.json,
  as {"messages": [...]}.  Dropped per message: "extra" (raw API response and
  parsed actions) and "provider_specific_fields" (an exact duplicate of
  "reasoning_content").  Everything else is unchanged, reasoning_content included.
* examples/anthropic-session.json: claude-code/agent-a7be2f0.messages.json
  (made by make_anthropic.py) as {"messages": [...]}, cut to at most 30
  messages.  The whole conversation is 26 messages, so it is complete.
"""

import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.normpath(os.path.join(HERE, "..", "..", "..", "examples"))

OPENAI_SRC = os.path.join(HERE, "mini-swe-agent", "deepseek_reasoner_dev__sqlfluff__sqlfluff-1763.traj.json")
OPENAI_N = 50
DROP = ("extra", "provider_specific_fields")

ANTHROPIC_SRC = os.path.join(HERE, "claude-code", "agent-a7be2f0.messages.json")
ANTHROPIC_MAX = 30


def write(name, messages):
    path = os.path.join(EXAMPLES, name)
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"messages": messages}, f, indent=1, ensure_ascii=False)
        f.write("\n")
    print("wrote %s (%d messages)" % (path, len(messages)))


def openai_example():
    with open(OPENAI_SRC, encoding="utf-8") as f:
        msgs = json.load(f)["messages"][:OPENAI_N]
    out = [{k: v for k, v in m.items() if k not in DROP} for m in msgs]
    # must end on a complete assistant/tool exchange
    assert out[-1]["role"] == "tool"
    write("coding-session.json", out)


def anthropic_example():
    with open(ANTHROPIC_SRC, encoding="utf-8") as f:
        msgs = json.load(f)[:ANTHROPIC_MAX]
    # do not end on a user message or on an assistant tool_use whose results were cut off
    # unless nothing follows it anyway
    while msgs and msgs[-1]["role"] != "assistant":
        msgs.pop()
    write("anthropic-session.json", msgs)


if __name__ == "__main__":
    os.makedirs(EXAMPLES, exist_ok=True)
    openai_example()
    anthropic_example()
