"""OpenHands event streams and OpenDevin-era output."""

from __future__ import annotations

import json
from typing import Any

from .base import Draft, LogError, describe, timestamps_of


def _is_event(x: Any) -> bool:
    return (isinstance(x, dict) and "role" not in x
            and (isinstance(x.get("action"), str) or isinstance(x.get("observation"), str)))


def is_openhands_output(data: dict) -> bool:
    return isinstance(data.get("history"), list) and all(_is_event(e) for e in data["history"])


def is_event_list(data: list) -> bool:
    return all(_is_event(e) for e in data)


def read_openhands(events: list) -> list[Draft]:
    messages, notes, times = _openhands_timed(events)
    return [Draft(messages, "openhands", "openai", notes, timestamps=times)]


def is_opendevin_output(data: dict) -> bool:
    history = data.get("history")
    return isinstance(history, list) and bool(history) and all(isinstance(pair, list) for pair in history)


def read_opendevin(data: dict) -> list[Draft]:
    messages, notes = opendevin_messages(data["history"])
    return [Draft(messages, "openhands", "openai", notes)]


# Actions and observations that ConversationMemory never turns into messages.
OPENHANDS_SKIPPED_ACTIONS = frozenset({"change_agent_state", "recall", "condensation", "condensation_request",
                                       "null", "reject", "pause", "resume", "stop", "start"})
OPENHANDS_SKIPPED_OBSERVATIONS = frozenset({"null", "agent_state_changed", "recall", "condensation"})
# Bookkeeping fields of a legacy event's arguments, not part of a tool call's input.
OPENHANDS_NOT_ARGS = frozenset({"action", "observation", "thought", "keep_prompt", "is_confirmed",
                                "confirmation_state", "action_risk", "security_risk", "hidden", "blocking",
                                "is_input", "wait_for_response", "images_urls", "image_urls", "id", "source",
                                "timestamp", "cause", "tool_call_metadata", "llm_metrics", "args", "extras",
                                "success"})


class _OpenHands:
    """State of an OpenHands event-stream conversion (see :func:`openhands_messages`)."""

    def __init__(self) -> None:
        self.out: list[dict] = []
        self.notes: list[str] = []
        self.groups: dict[Any, dict] = {}  # response id -> {"msg", "calls", "results"}
        self.owner: dict[str, Any] = {}  # tool call id -> response id of its pending group
        self.by_event: dict[Any, str] = {}  # action event id -> tool call id
        self.open_legacy: str | None = None  # the last positional call still waiting for its observation
        self.immediate: set[str] = set()  # call ids already written out (positional calls)
        self.finished: set[str] = set()  # finish calls: answered by ending the run
        self.messages_seen = 0
        self.orphans = self.skipped = 0
        self.now: Any = None  # the timestamp of the event being read
        self.stamps: dict[int, tuple[dict, Any]] = {}  # id(message) -> (message, timestamp)

    def stamp(self, msg: dict, when: Any) -> None:
        """Record when ``msg`` was written (the first stamp holds; the message is kept alive with it)."""
        self.stamps.setdefault(id(msg), (msg, when))

    # groups of calls made by one model response
    def emit(self, key: Any) -> None:
        """Write out a response's assistant message and the results it got, in call order."""
        group = self.groups.pop(key)
        for c in group["calls"]:
            self.owner.pop(c["id"], None)
        calls = [c for c in group["calls"] if c["id"] not in self.finished]
        if not calls and not group["msg"].get("content"):
            return
        msg = dict(group["msg"])
        if calls:
            msg["tool_calls"] = calls
        self.stamp(msg, group["time"])  # when the model responded, not when the last result came
        self.out.append(msg)
        missing = [c["id"] for c in calls if c["id"] not in group["results"]]
        if missing:
            self.notes.append(f"calls without an observation (dangling): {', '.join(missing)}")
        self.out += [group["results"][c["id"]] for c in calls if c["id"] in group["results"]]

    def flush(self) -> None:
        for key in list(self.groups):
            self.emit(key)

    def complete(self, key: Any) -> None:
        group = self.groups[key]
        if all(c["id"] in group["results"] or c["id"] in self.finished for c in group["calls"]):
            self.emit(key)

    def action(self, i: int, e: dict) -> None:
        kind = e["action"]
        args = e["args"] if isinstance(e.get("args"), dict) else {k: v for k, v in e.items() if k != "action"}
        source = e.get("source")
        tcm = e.get("tool_call_metadata") if isinstance(e.get("tool_call_metadata"), dict) else None
        if kind in OPENHANDS_SKIPPED_ACTIONS:
            return
        if kind == "system":
            self.out.append({"role": "system", "content": text_of(args.get("content"))})
            return
        if kind == "message":
            if source in ("user", "agent"):
                role = "user" if source == "user" else "assistant"
            else:  # legacy events carry no source: the first message is the task, later ones the agent's
                role = "user" if self.messages_seen == 0 else "assistant"
            self.messages_seen += 1
            content = args.get("content")
            if not isinstance(content, str):
                content = text_of(e.get("message"))
            self.out.append({"role": role, "content": content})
            return
        if kind == "finish":
            self.finish(args, tcm)
            return
        if source == "user" and tcm is None:
            command = args.get("command") if isinstance(args.get("command"), str) else None
            text = f"User executed the command:\n{command}" if command is not None else text_of(e.get("message"))
            if text:
                self.out.append({"role": "user", "content": text})
            return
        if tcm is not None and isinstance(tcm.get("tool_call_id"), str):
            self.tool_action(e, args, tcm)
        else:
            self.positional_action(i, e, kind, args)

    def finish(self, args: dict, tcm: dict | None) -> None:
        content = _response_message(tcm).get("content") if tcm else None
        parts = []
        for text in (args.get("thought"), content, args.get("final_thought")):
            if isinstance(text, str) and text.strip() and not any(text.strip() in p for p in parts):
                parts.append(text.strip())
        if tcm and isinstance(tcm.get("tool_call_id"), str):
            self.finished.add(tcm["tool_call_id"])
            key = self.owner.get(tcm["tool_call_id"])
            if key is not None:
                self.complete(key)
        self.flush()
        if parts:
            self.out.append({"role": "assistant", "content": "\n".join(parts)})

    def tool_action(self, e: dict, args: dict, tcm: dict) -> None:
        call_id = tcm["tool_call_id"]
        response = tcm.get("model_response") if isinstance(tcm.get("model_response"), dict) else {}
        key = response.get("id") if isinstance(response.get("id"), str) else call_id
        if key not in self.groups:
            self.flush()  # a new model response: the previous one got all the results it will get
            message = _response_message(tcm)
            content = message.get("content")
            calls = [_openai_call(c) for c in message.get("tool_calls") or [] if isinstance(c, dict)]
            self.groups[key] = {"msg": {"role": "assistant",
                                        "content": content if isinstance(content, str) and content.strip() else None},
                                "calls": [c for c in calls if c is not None], "results": {}, "time": self.now}
        group = self.groups[key]
        if all(c["id"] != call_id for c in group["calls"]):
            name = tcm.get("function_name") if isinstance(tcm.get("function_name"), str) else e["action"]
            group["calls"].append({"id": call_id, "type": "function",
                                   "function": {"name": name, "arguments": json.dumps(_call_args(args))}})
        for c in group["calls"]:
            self.owner[c["id"]] = key
        if _event_id(e.get("id")) is not None:
            self.by_event[e["id"]] = call_id

    def positional_action(self, i: int, e: dict, kind: str, args: dict) -> None:
        self.flush()
        call_id = f"openhands-event-{e['id'] if _event_id(e.get('id')) is not None else i}"
        thought = args.get("thought")
        self.out.append({"role": "assistant",
                         "content": thought if isinstance(thought, str) and thought.strip() else None,
                         "tool_calls": [{"id": call_id, "type": "function",
                                         "function": {"name": kind, "arguments": json.dumps(_call_args(args))}}]})
        self.immediate.add(call_id)
        self.open_legacy = call_id
        if _event_id(e.get("id")) is not None:
            self.by_event[e["id"]] = call_id

    def observation(self, i: int, e: dict) -> None:
        kind = e["observation"]
        if kind in OPENHANDS_SKIPPED_OBSERVATIONS:
            if kind == "recall" and text_of(e.get("content")):
                self.skipped += 1
            return
        text = text_of(e.get("content"))
        tcm = e.get("tool_call_metadata") if isinstance(e.get("tool_call_metadata"), dict) else None
        call_id = tcm.get("tool_call_id") if tcm else None
        if not isinstance(call_id, str):
            cause = _event_id(e.get("cause"))
            call_id = self.by_event.get(cause) if cause is not None else None
        if call_id is None and "id" not in e and "cause" not in e and self.open_legacy is not None:
            call_id = self.open_legacy  # legacy: an observation answers the action just before it
        if call_id is None:
            if kind == "error":
                text += "\n[Error occurred in processing last action]"
            if text:
                self.out.append({"role": "user", "content": text})
            return
        if call_id == self.open_legacy:
            self.open_legacy = None
        result: dict[str, Any] = {"role": "tool", "tool_call_id": call_id, "content": text}
        if kind == "error":
            result["is_error"] = True
        self.stamp(result, self.now)
        key = self.owner.get(call_id)
        if key is not None and key in self.groups and call_id not in self.groups[key]["results"]:
            self.groups[key]["results"][call_id] = result
            self.complete(key)
            return
        if call_id not in self.immediate:
            self.orphans += 1
        self.out.append(result)

    def run(self, events: list) -> tuple[list, list[str], tuple | None]:
        for i, e in enumerate(events):
            if not isinstance(e, dict):
                raise LogError(f"event {i} is {describe(e)}, not an object")
            self.now, written = e.get("timestamp"), len(self.out)
            try:
                if isinstance(e.get("action"), str):
                    self.action(i, e)
                elif isinstance(e.get("observation"), str):
                    self.observation(i, e)
                else:
                    raise LogError(f"neither an action nor an observation: {describe(e)}")
            except LogError as exc:
                raise LogError(f"event {i}: {exc}") from None
            for msg in self.out[written:]:
                self.stamp(msg, self.now)
        written = len(self.out)
        self.flush()
        for msg in self.out[written:]:
            self.stamp(msg, self.now)
        if self.orphans:
            self.notes.append(f"{self.orphans} observations answer no recorded action (orphans)")
        if self.skipped:
            self.notes.append(f"left out {self.skipped} recall observations (workspace context / microagent "
                              "knowledge, rendered by OpenHands' prompt templates)")
        if self.immediate:
            self.notes.append(f"{len(self.immediate)} actions without tool_call_metadata paired positionally "
                              "with the observation that follows them (ids openhands-event-N)")
        return self.out, self.notes, timestamps_of(self.stamps[id(m)][1] for m in self.out)


def _event_id(value: Any) -> Any:
    """An event id usable as a key (OpenHands ids are integers), else ``None``."""
    return value if isinstance(value, (int, str)) and not isinstance(value, bool) else None


def text_of(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _response_message(tcm: dict | None) -> dict:
    response = tcm.get("model_response") if tcm else None
    choices = response.get("choices") if isinstance(response, dict) else None
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        message = choices[0].get("message")
        if isinstance(message, dict):
            return message
    return {}


def _openai_call(call: dict) -> dict | None:
    fn = call.get("function") if isinstance(call.get("function"), dict) else {}
    if not isinstance(call.get("id"), str):
        return None
    args = fn.get("arguments", "{}")
    return {"id": call["id"], "type": "function",
            "function": {"name": fn.get("name") if isinstance(fn.get("name"), str) else "",
                         "arguments": args if isinstance(args, str) else json.dumps(args)}}


def _call_args(args: dict) -> dict:
    return {k: v for k, v in args.items() if k not in OPENHANDS_NOT_ARGS}


def openhands_messages(events: Any) -> tuple[list, list[str]]:
    """OpenAI messages from an OpenHands event stream, as OpenHands' ConversationMemory builds them.

    * ``system`` actions become the system message; ``message`` actions a user
      message (``source: user``) or an assistant message (``source: agent``).
    * An agent action with ``tool_call_metadata`` is a tool call: the assistant
      message is the metadata's ``model_response`` (its text and *all* its
      ``tool_calls``, so parallel calls of one response are one message); the
      observations carrying the same ``tool_call_id`` (or whose ``cause`` is the
      action's event id) become ``role: tool`` messages, written right after the
      assistant message once every call of the response has its observation, or
      when the next response starts (a call never answered stays dangling).
    * ``finish`` ends the run: an assistant text message (its thought, the
      response text and the final thought), no tool call, as OpenHands sends it.
    * Observations answering no tool call (an ``error`` for a malformed call, a
      command the user ran) become user messages; ``error`` observations are
      tool results with ``is_error: true`` when they answer a call.
    * Legacy events (mid-2024: no ``id``, ``source`` or ``tool_call_metadata``,
      arguments inlined) are paired by position: each action becomes an assistant
      message with one call ``openhands-event-N`` (N: the event's index; name: the
      action type; arguments: the action's fields minus bookkeeping like
      ``thought``, which becomes the message text), and the observation right after
      it is its result; an observation not preceded by an unanswered action is a
      user message.  Without ``source``, the first message event is the user's
      task and later ones are the agent's.
    * ``agent_state_changed``, ``null``, ``recall`` and state-change events carry
      no conversation and are left out.  Tool message content is the observation's
      ``content`` as logged (OpenHands appends a few status lines, such as the exit
      code, when it renders a command's output for the model).
    """
    messages, notes, _ = _openhands_timed(events)
    return messages, notes


def _openhands_timed(events: Any) -> tuple[list, list[str], tuple | None]:
    """:func:`openhands_messages`, and each message's time: that of the event it came from (an
    assistant message with calls: the first of its actions)."""
    if not isinstance(events, list):
        raise LogError(f"OpenHands history is {describe(events)}, not a list of events")
    return _OpenHands().run(events)


def opendevin_messages(history: Any) -> tuple[list, list[str]]:
    """OpenAI messages from an OpenDevin-era (mid-2024) ``history``: a list of ``[action, observation]`` pairs.

    OpenDevin's agents turned each pair into the action's message and then its
    observation's; the pairs are read as the event stream ``action, observation, ...``
    and converted by :func:`openhands_messages`, whose legacy positional pairing makes
    the observation of a pair the result of its action.  Other keys of the output line
    (``instruction``, ``metadata``, a ``messages`` list of plain strings ...) are ignored.
    """
    if not isinstance(history, list):
        raise LogError(f"OpenDevin history is {describe(history)}, not a list of [action, observation] pairs")
    events: list = []
    for i, pair in enumerate(history):
        if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], dict)
                and isinstance(pair[0].get("action"), str) and isinstance(pair[1], dict)
                and isinstance(pair[1].get("observation"), str)):
            raise LogError(f"OpenDevin history pair {i} is not [action, observation]: {describe(pair)}")
        events += pair
    messages, notes = openhands_messages(events)
    return messages, [f"OpenDevin output: {len(history)} [action, observation] pairs"] + notes
