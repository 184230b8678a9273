"""Reference: SWE-agent ``LastNObservations`` (observation masking, n=10).

Follows
-------
* Repo ``SWE-agent/SWE-agent``, path ``sweagent/agent/history_processors.py``
  (stored version at commit ``318f9091d5f5522e2a3013b46623358e46157f7a``):
  ``LastNObservations._get_omit_indices`` / ``__call__``,
  ``_get_content_stats``::

      observation_indices = [idx for idx, entry in enumerate(history)
          if entry.get("message_type") == "observation" and not entry.get("is_demo", False)]
      last_removed_idx = max(0, (len(observation_indices) // self.polling) * self.polling - self.n)
      # Note: We never remove the first observation, as it is the instance template
      return observation_indices[1:last_removed_idx]
      ...
      data["content"] = f"Old environment output: ({num_text_lines} lines omitted)"
      if num_images > 0:
          data["content"] += f" ({num_images} images omitted)"

  with ``_get_content_stats``: ``len(content.splitlines())`` for a string; for
  a list, the sum of ``len(item["text"].splitlines())`` over ``type == "text"``
  items and the count of ``type == "image_url"`` items.
* SWE-agent ``sweagent/agent/agents.py``: the instance template (the task) is
  added through ``_add_templated_messages_to_history`` with
  ``message_type: "observation"`` and role ``user``; later observations get
  role ``tool`` when they answer tool calls.
* Used with n=10 as "observation masking" in "The Complexity Trap" (JetBrains
  Research, 2025).

Mapping to our format, and the "never remove the first observation" rule
-----------------------------------------------------------------------
Here observations are the ``role == "tool"`` messages.  In SWE-agent the
observation list also contains the instance template as its first element,
which is exactly why the code never removes ``observation_indices[0]``.  We
model that literally: the virtual observation list is
``[instance template] + tool messages``, the formula above runs on it, and
the template itself is never in our list of tool messages.  With polling=1
this equals "every tool result except the last ``N`` is elided" (for k tool
messages, ``k - N`` oldest are elided when ``k > N``).  The template is
assumed present (``assume_template=True``); pass ``False`` to apply the
formula to the tool messages alone (then the first tool message is never
elided), which is NOT the Complexity-Trap setting.

Other differences from SWE-agent (documented, not modelled)
----------------------------------------------------------
* ``polling`` (default 1 in SWE-agent) is implemented with the same formula;
  only polling=1 is the preset's setting.
* Tags ``keep_output`` / ``remove_output`` (``always_keep_output_for_tags`` /
  ``always_remove_output_for_tags``) and ``is_demo`` entries do not exist in
  our format; a message with a ``tags`` list is honoured the same way if
  present (keep tag wins only when not also remove-tagged, as in the code).
* In SWE-agent the observation content is the rendered ``next_step_template``
  (e.g. ``"OBSERVATION:\\n..."``), and in function-calling mode one observation
  message may answer several tool calls (``tool_call_ids``).  Here each tool
  message is one observation and its own content is what lines are counted on.
* Line count is Python ``str.splitlines()`` (splits on ``\\n``, ``\\r``,
  ``\\r\\n``, ``\\v``, ``\\f``, ``\\x1c``-``\\x1e``, ``\\x85``, ``\\u2028``,
  ``\\u2029``; a trailing newline adds no line; ``""`` has 0 lines).  ``None``
  content is treated as ``""``.  List content is replaced by the string.
* NOT idempotent, faithfully: SWE-agent re-applies processors to the full,
  unmodified history on every query; re-applying to an already masked history
  would turn ``"(50 lines omitted)"`` into ``"(1 lines omitted)"``.
"""

from __future__ import annotations

import copy

N = 10
POLLING = 1
TEMPLATE = "Old environment output: ({n} lines omitted)"
IMAGES_SUFFIX = " ({n} images omitted)"
ALWAYS_REMOVE_TAGS = frozenset({"remove_output"})
ALWAYS_KEEP_TAGS = frozenset({"keep_output"})


def content_stats(content) -> tuple[int, int]:
    if content is None:
        return 0, 0
    if isinstance(content, str):
        return len(content.splitlines()), 0
    n_text = sum(
        len((item.get("text") or "").splitlines())
        for item in content
        if isinstance(item, dict) and item.get("type") == "text"
    )
    n_images = sum(
        1 for item in content if isinstance(item, dict) and item.get("type") == "image_url"
    )
    return n_text, n_images


def _omit_positions(n_tool: int, n: int, polling: int, assume_template: bool) -> set[int]:
    """Positions (0-based, within the tool messages) to elide."""
    total = n_tool + (1 if assume_template else 0)
    last_removed = max(0, (total // polling) * polling - n)
    virtual = list(range(total))  # virtual observation list
    omitted = virtual[1:last_removed]
    if assume_template:
        return {v - 1 for v in omitted}  # virtual 0 is the template
    return set(omitted)


def apply(
    messages: list[dict],
    *,
    n: int = N,
    polling: int = POLLING,
    assume_template: bool = True,
) -> list[dict]:
    if n <= 0:
        raise ValueError("n must be a positive integer")
    out = copy.deepcopy(messages)
    tool_indices = [i for i, m in enumerate(out) if m.get("role") == "tool"]
    omit = {tool_indices[p] for p in _omit_positions(len(tool_indices), n, polling, assume_template)}
    for idx in tool_indices:
        msg = out[idx]
        tags = set(msg.get("tags", []) or [])
        if ((idx not in omit) or (tags & ALWAYS_KEEP_TAGS)) and not (tags & ALWAYS_REMOVE_TAGS):
            continue
        n_lines, n_images = content_stats(msg.get("content"))
        text = TEMPLATE.format(n=n_lines)
        if n_images > 0:
            text += IMAGES_SUFFIX.format(n=n_images)
        msg["content"] = text
    return out


def with_message_types(history: list[dict]) -> list[dict]:
    """A ``.traj`` history with SWE-agent's ``message_type`` on every entry, for the classic
    trajectories that do not record it: as ``agents.py`` adds them, the instance template (the
    first user entry that is no demonstration) and every user entry after an action are
    observations; assistant entries are actions.  Entries that carry one keep theirs."""
    out, acted, template = [], False, False
    for entry in history:
        entry = dict(entry)
        if "message_type" not in entry:
            role = entry.get("role")
            if role == "assistant":
                kind = "action"
            elif role == "tool" or (role == "user" and not entry.get("is_demo") and (acted or not template)):
                kind = "observation"
                template = template or role == "user"
            else:
                kind = role
            entry["message_type"] = kind
        if entry.get("role") == "assistant":
            acted = not entry.get("tool_calls")
        out.append(entry)
    return out


def apply_history(history: list[dict], *, n: int = N, polling: int = POLLING) -> list[dict]:
    """SWE-agent's ``LastNObservations.__call__`` on a raw ``.traj`` history, as the code does it
    (``_get_omit_indices``: the observations but the first, the instance template, and the last
    ``n``; tags honoured as above)."""
    history = with_message_types(history)
    observation_indices = [idx for idx, entry in enumerate(history)
                           if entry.get("message_type") == "observation" and not entry.get("is_demo", False)]
    last_removed_idx = max(0, (len(observation_indices) // polling) * polling - n)
    omit = set(observation_indices[1:last_removed_idx])
    out = []
    for idx, entry in enumerate(history):
        tags = set(entry.get("tags", []) or [])
        if ((idx not in omit) or (tags & ALWAYS_KEEP_TAGS)) and not (tags & ALWAYS_REMOVE_TAGS):
            out.append(entry)
            continue
        data = copy.deepcopy(entry)
        n_lines, n_images = content_stats(data.get("content"))
        data["content"] = TEMPLATE.format(n=n_lines)
        if n_images > 0:
            data["content"] += IMAGES_SUFFIX.format(n=n_images)
        out.append(data)
    return out
