"""Readers for real agent logs: each log becomes one or more API-format conversations.

``read_conversations(raw, name)`` looks at the content (never at the file name) and
returns a list of :class:`Conversation`, each an OpenAI Chat Completions, Anthropic
Messages or OpenAI Responses API item list.  Understood inputs (``source_format``):

``messages``
    Input already in an API format, kept as it is: a message list, or an object with a
    ``messages`` list (a request body); a list of Responses API input items, or an object
    with an ``input`` list of them (a Responses request body).  A JSONL file whose lines are
    messages (or Responses items) is one conversation; a JSONL file whose lines are request
    bodies (a fine-tuning data set) is one conversation per line.
``claude-code``
    A Claude Code session (or subagent) JSONL file, converted to Anthropic
    Messages (see :func:`claude_code_messages`).
``codex``
    An OpenAI Codex CLI rollout (``~/.codex/sessions/**/rollout-*.jsonl``), current
    (``session_meta`` / ``response_item`` / ``compacted`` ... lines) or legacy (a meta line,
    then one item per line): the Responses items Codex sends (see :func:`codex_items`).
``swe-agent``
    A SWE-agent ``.traj`` file: its ``history`` as SWE-agent sends it to the model
    (``tool_call_ids[0]`` becomes ``tool_call_id``; ``agent``, ``message_type``,
    ``thought``, ``action`` ... are dropped).  Legacy text-action files keep their
    observations as ``user`` messages.
``mini-swe-agent``
    A mini-swe-agent trajectory (``trajectory_format: mini-swe-agent-*``): its
    ``messages``, unchanged, but for the closing ``role: exit`` message, which no model saw.
``tau-bench``
    tau-bench results (a list of ``{task_id, reward, info, traj}``): one
    conversation per ``traj``, unchanged.
``tau2``
    tau2-bench simulation results: one conversation per simulation, as the agent
    saw it (see :func:`tau2_messages`).
``openhands``
    An OpenHands event stream (a list of events, an object with a ``history`` of
    events, or an ``output.jsonl`` with one such object per line): see
    :func:`openhands_messages`; OpenDevin-era output, whose ``history`` is a list of
    ``[action, observation]`` pairs: see :func:`opendevin_messages`.

Each source format is one module of this package, registered in :data:`READERS`
(readers/table.py), which says in which order the formats are tried; readers that plugins
add (the ``rules_compact_readers`` hook) are tried first.  Files holding several conversations name
them ``NAME#1``, ``NAME#2``, ... (the N-th conversation of the file, counting from 1).
Content that is none of these raises :class:`~rules_compact.errors.InputError` with one
line starting with ``NAME:``; so does a known log with missing keys or values of the
wrong type.
"""

from __future__ import annotations

from .base import Conversation, Draft, LogError, Reader, Usage
from .claude_code import claude_code_messages
from .codex import codex_items
from .openhands import opendevin_messages, openhands_messages
from .reading import parse_conversations, read_conversations
from .swe_agent import swe_agent_messages
from .table import READERS, SOURCE_FORMATS
from .tau2 import tau2_messages

__all__ = ["Conversation", "Draft", "LogError", "Reader", "Usage", "READERS", "SOURCE_FORMATS", "read_conversations",
           "parse_conversations", "claude_code_messages", "codex_items", "swe_agent_messages", "tau2_messages",
           "openhands_messages", "opendevin_messages"]
