"""Reference: opencode ``SessionCompaction.prune``, adapted to OpenAI-format messages.

Follows
-------
* Repo ``sst/opencode``, path ``packages/opencode/src/session/compaction.ts``
  (stored version at commit ``31e22f65a23c498639b8cef24b90e6ae193cdcb6``),
  ``PRUNE_MINIMUM = 20_000``, ``PRUNE_PROTECT = 40_000``,
  ``PRUNE_PROTECTED_TOOLS = ["skill"]`` and::

      loop: for (let msgIndex = msgs.length - 1; msgIndex >= 0; msgIndex--) {
        const msg = msgs[msgIndex]
        if (msg.info.role === "user") turns++
        if (turns < 2) continue
        if (msg.info.role === "assistant" && msg.info.summary) break loop
        for (let partIndex = msg.parts.length - 1; partIndex >= 0; partIndex--) {
          const part = msg.parts[partIndex]
          if (part.type !== "tool") continue
          if (part.state.status !== "completed") continue
          if (PRUNE_PROTECTED_TOOLS.includes(part.tool)) continue
          if (part.state.time.compacted) break loop
          const estimate = Token.estimate(part.state.output)
          total += estimate
          if (total <= PRUNE_PROTECT) continue
          pruned += estimate
          toPrune.push(part)
        }
      }
      if (pruned > PRUNE_MINIMUM) { ...mark every part in toPrune compacted... }

  A compacted part is rendered as ``"[Old tool result content cleared]"``
  (read in the same file, ``serialize``; ``message-v2.ts``
  ``toModelMessages`` uses the same text according to a third-party parity
  note, ``okwinds/openagentic-sdk`` ``docs/plans/opencode-parity-v2-06-compaction.md``
  -- ``message-v2.ts`` itself was not read).
* ``Token.estimate`` (``packages/opencode/src/util/token.ts``; read in a
  vendored copy ``hyunjinee/hyunjin`` ``opencode/packages/opencode/src/util/token.ts``)::

      Math.max(0, Math.round((input || "").length / CHARS_PER_TOKEN))   // CHARS_PER_TOKEN = 4

  JS ``length`` = UTF-16 code units; ``Math.round`` rounds .5 up, so for
  ``L`` code units the estimate is ``(L + 2) // 4``.  (A later fork,
  ``anomalyco/opencode``, replaced this with a per-character-class estimator;
  not used here.)

Answers to the brief's questions (from the real code)
----------------------------------------------------
* The result whose tokens take the running total past 40,000 IS marked, and
  its own tokens count toward the pruned sum (``pruned += estimate`` happens
  after ``total += estimate``).
* "Past" is strict: marked when ``total > 40_000`` (``total <= PRUNE_PROTECT``
  -> continue).  Clearing happens only when ``pruned > 20_000`` (strict).
* Once past 40,000 every older eligible result is marked (there is no
  upper bound and no early stop except an already-cleared result).

Adaptation to OpenAI format (interpretation choices)
----------------------------------------------------
* A "user turn" = a ``role == "user"`` message whose text (string content, or
  the concatenated ``text`` parts) is non-empty (``!= ""``, no trimming), as the
  brief specifies.  opencode itself counts every user message (its tool
  results live inside assistant messages, so its user messages are always
  real prompts).  Walking backwards, everything after the second-to-last such
  user message is protected (the last two turns).
* Tool results = ``role == "tool"`` messages.  Within the walk they are
  visited newest to oldest (opencode walks parts backwards inside each
  message; with one tool result per message this is the same order).
* "completed" = not an error: a tool message with a truthy ``is_error`` is
  skipped (``continue``, not a stop), like opencode's ``status === "error"``.
* The tool name comes from the assistant ``tool_calls`` entry whose ``id``
  equals the message's ``tool_call_id``; name ``"skill"`` (exact, case-
  sensitive) is skipped (``continue``).  Unknown id -> name ``""``, not
  protected.
* "Already cleared" (opencode ``time.compacted``) = the content text equals
  the placeholder exactly; the walk stops there (``break loop``).  Checked
  after the error and protected-tool checks, as in the code.
* opencode's ``summary`` assistant-message stop has no equivalent here.
* Output text for the estimate: string content, or concatenated ``text``
  parts (``None`` -> ``""``).  A cleared message's content becomes the
  placeholder string.
* Idempotent: a second run stops at the first already-cleared result.
"""

from __future__ import annotations

import copy

PRUNE_MINIMUM = 20_000
PRUNE_PROTECT = 40_000
PRUNE_PROTECTED_TOOLS = ("skill",)
PLACEHOLDER = "[Old tool result content cleared]"
CHARS_PER_TOKEN = 4


def _content_text(content) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            p.get("text", "") or ""
            for p in content
            if isinstance(p, dict) and p.get("type") == "text"
        )
    return str(content)


def _js_len(s: str) -> int:
    return len(s.encode("utf-16-le", "surrogatepass")) // 2


def token_estimate(text: str) -> int:
    """opencode ``Token.estimate``: ``Math.max(0, Math.round(len / 4))``."""
    return max(0, (_js_len(text or "") * 2 + CHARS_PER_TOKEN) // (2 * CHARS_PER_TOKEN))


def _call_name(call: dict) -> str:
    fn = call.get("function")
    if isinstance(fn, dict) and "name" in fn:
        return fn.get("name") or ""
    return call.get("name") or ""


def _is_user_turn(msg: dict) -> bool:
    return msg.get("role") == "user" and _content_text(msg.get("content")) != ""


def apply(
    messages: list[dict],
    *,
    prune_protect: int = PRUNE_PROTECT,
    prune_minimum: int = PRUNE_MINIMUM,
    protected_tools=PRUNE_PROTECTED_TOOLS,
) -> list[dict]:
    out = copy.deepcopy(messages)
    names: dict[str, str] = {}
    for msg in out:
        if msg.get("role") == "assistant" and msg.get("tool_calls"):
            for call in msg["tool_calls"]:
                names[call.get("id") or ""] = _call_name(call)

    total = 0
    pruned = 0
    to_prune: list[int] = []
    turns = 0
    for idx in range(len(out) - 1, -1, -1):
        msg = out[idx]
        if _is_user_turn(msg):
            turns += 1
        if turns < 2:
            continue
        if msg.get("role") != "tool":
            continue
        if msg.get("is_error"):
            continue
        if names.get(msg.get("tool_call_id") or "", "") in protected_tools:
            continue
        text = _content_text(msg.get("content"))
        if text == PLACEHOLDER:
            break
        estimate = token_estimate(text)
        total += estimate
        if total <= prune_protect:
            continue
        pruned += estimate
        to_prune.append(idx)

    if pruned > prune_minimum:
        for idx in to_prune:
            out[idx]["content"] = PLACEHOLDER
    return out
