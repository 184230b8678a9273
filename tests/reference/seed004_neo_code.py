"""Reference: seed 004, neo-code PR #161 read-time micro compact.

Follows
-------
* Design seed ``/work/shared/seeds/004_3c647c8a788876f4.txt`` (PR #161
  description and review thread, including the review fix "only a span with at
  least one clearable result consumes the retained budget").
* The PR's Go code (static-whitelist version, after the review fix):
  repo ``minorcell/neo-code``, path ``internal/context/microcompact.go``
  (stored version at commit ``04b273c54fce0c8b6ce736176467616fd314c77e``;
  ``1024XEngineer/neo-code`` holds later versions of the same file with a
  policy source instead of the static map), functions
  ``microCompactMessages``, ``isToolCallSpan``, ``compactableToolCallIDs``,
  ``hasCompactableToolContent``, ``shouldClearToolMessage``.
* ``internal/context/internalcompact`` (``BuildMessageSpans``,
  ``ProtectedTailStart``, ``lastExplicitUserMessageIndex``,
  ``markSpanProtected``): the ``provider.Message``/``Content``-string version
  found in the code index (same code as ``Yumiue/neo-code``
  ``internal/context/internalcompact/messages.go`` at commit
  ``64e6bc1247163e92d4be4717ac98752cf658d172``, which only swaps ``Content``
  for ``Parts``).
* The PR's test file ``internal/context/microcompact_test.go`` (static-map
  version), whose five scenarios are ported in ``test_reference_smoke.py``.

Algorithm (as in the Go code)
-----------------------------
1. Spans: walk the messages; an assistant message with ``len(tool_calls) > 0``
   starts a span that also takes every immediately following ``role == tool``
   message; any other message is a span of one.
2. Protected tail: the span containing the last user message whose content,
   trimmed (Go ``strings.TrimSpace``), is non-empty; it and everything after it
   are skipped.  No such user message -> nothing is protected.
3. Walk spans newest to oldest (outside the protected tail).  Only tool-call
   spans matter.  ``compactableIDs`` = trimmed ids of calls whose trimmed name
   is in ``COMPACTABLE_TOOLS`` (empty ids dropped).  A span with no
   compactable id is skipped.  A span with no *clearable* tool message (see 4)
   is skipped WITHOUT consuming the retained budget (review fix).  The first
   ``RETAINED_TOOL_SPANS`` (2) remaining spans are retained; in every older
   one, each clearable tool message gets content ``PLACEHOLDER``.
4. Clearable: ``role == tool``, not ``is_error``, trimmed ``tool_call_id`` in
   ``compactableIDs`` (so orphans / non-compactable tools are never touched),
   and trimmed content non-empty and not equal to ``PLACEHOLDER``.

Interpretation choices
----------------------
* OpenAI format: ``tool_calls[i] = {"id", "function": {"name"}}`` (a flat
  ``{"id", "name"}`` is also accepted); the Go ``IsError`` field is the tool
  message's ``is_error`` (truthy -> error).
* Content ``None`` -> ``""``; list content -> concatenation of its ``text``
  parts (for both the user-instruction test and the tool-result test).  A
  cleared message's content becomes the placeholder *string*.
* ``TrimSpace`` is Go's: it strips Unicode White_Space (``\\t \\n \\v \\f \\r``,
  space, U+0085, U+00A0, U+1680, U+2000-U+200A, U+2028, U+2029, U+202F,
  U+205F, U+3000) -- not Python's ``str.strip()`` set, which also strips
  U+001C-U+001F.
* "Orphan" tool messages: a tool message directly after a non-tool-call
  message forms its own one-message span (not a tool-call span) and is never
  cleared; one inside a tool-call span whose id is not among that span's
  calls is not clearable.
* The code walks all spans; it does not stop early, and has no token or size
  threshold (read-time projection, applied on every build).
"""

from __future__ import annotations

import copy

PLACEHOLDER = "[Old tool result content cleared]"
RETAINED_TOOL_SPANS = 2
COMPACTABLE_TOOLS = frozenset(
    {
        "bash",
        "webfetch",
        "filesystem_read_file",
        "filesystem_grep",
        "filesystem_glob",
        "filesystem_edit",
        "filesystem_write_file",
    }
)

# Go unicode.IsSpace / Unicode White_Space property.
_GO_SPACE = "\t\n\v\f\r \u0085\u00a0\u1680" + "".join(
    chr(c) for c in range(0x2000, 0x200B)
) + "\u2028\u2029\u202f\u205f\u3000"


def go_trim_space(s: str) -> str:
    return s.strip(_GO_SPACE)


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


def _call_name(call: dict) -> str:
    fn = call.get("function")
    if isinstance(fn, dict) and "name" in fn:
        return fn.get("name") or ""
    return call.get("name") or ""


def _is_tool_call_msg(msg: dict) -> bool:
    return msg.get("role") == "assistant" and bool(msg.get("tool_calls"))


def build_spans(messages: list[dict]) -> list[dict]:
    spans: list[dict] = []
    i = 0
    n = len(messages)
    while i < n:
        start, end = i, i + 1
        if _is_tool_call_msg(messages[start]):
            while end < n and messages[end].get("role") == "tool":
                end += 1
        spans.append({"start": start, "end": end, "protected": False})
        i = end
    last_user = -1
    for idx in range(n - 1, -1, -1):
        m = messages[idx]
        if m.get("role") == "user" and go_trim_space(_content_text(m.get("content"))) != "":
            last_user = idx
            break
    if last_user >= 0:
        for span in spans:
            if span["start"] <= last_user < span["end"]:
                span["protected"] = True
                break
    return spans


def _compactable_ids(calls) -> set[str]:
    ids: set[str] = set()
    for call in calls or []:
        if go_trim_space(_call_name(call)) not in COMPACTABLE_TOOLS:
            continue
        cid = go_trim_space(call.get("id") or "")
        if cid == "":
            continue
        ids.add(cid)
    return ids


def _should_clear(msg: dict, ids: set[str]) -> bool:
    if msg.get("role") != "tool" or msg.get("is_error"):
        return False
    if not ids:
        return False
    if go_trim_space(msg.get("tool_call_id") or "") not in ids:
        return False
    content = go_trim_space(_content_text(msg.get("content")))
    return content != "" and content != PLACEHOLDER


def apply(messages: list[dict], *, retained_tool_spans: int = RETAINED_TOOL_SPANS) -> list[dict]:
    out = copy.deepcopy(messages)
    if not out:
        return out
    spans = build_spans(out)
    protected_start = next((s["start"] for s in spans if s["protected"]), None)
    retained = 0
    for span in reversed(spans):
        if protected_start is not None and span["start"] >= protected_start:
            continue
        if not _is_tool_call_msg(out[span["start"]]):
            continue
        ids = _compactable_ids(out[span["start"]].get("tool_calls"))
        if not ids:
            continue
        if not any(_should_clear(out[k], ids) for k in range(span["start"] + 1, span["end"])):
            continue
        if retained < retained_tool_spans:
            retained += 1
            continue
        for k in range(span["start"] + 1, span["end"]):
            if _should_clear(out[k], ids):
                out[k]["content"] = PLACEHOLDER
    return out
