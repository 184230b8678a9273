"""Plugin actions as the engine runs them: what each run edited is checked, so that a plugin
never makes a request a model API would reject or breaks a call's pairing with its result.
A failed check is a PluginError naming the plugin and the rule."""

from __future__ import annotations

from typing import Any

from ..errors import type_name
from ..formats import Format
from ..kinds.base import Action, EditError
from .manager import BUILTIN, PluginError

__all__ = ["checked_action", "edit_problem"]


def checked_action(action: Action, owner: str | None, rule: str) -> Action:
    """``action`` as compiled; a plugin's (``owner``, not the built-in plugin) with every run's
    edits and note checked."""
    if owner is None or owner == BUILTIN:
        return action
    run, run_many = action.run, action.run_many

    def failed(problem: str) -> PluginError:
        return PluginError(f"plugin {owner}: rule {rule!r}: action {action.name} {problem}")

    def checked(ed, start: int, notes: list) -> None:
        for note in notes:
            if note is not None and not isinstance(note, str):
                raise failed(f"returned the note {type_name(note)}, not a string or None")
        for _, index, old in ed.log[start:]:
            problem = edit_problem(ed.facts.fmt, old, ed.out[index])
            if problem is not None:
                raise failed(f"made {ed.facts.fmt.unit} {index} invalid: {problem}")

    def checked_run(index: int, ed) -> str | None:
        start = len(ed.log)
        try:
            note = run(index, ed)
        except EditError as exc:
            raise failed(str(exc)) from None
        checked(ed, start, [note])
        return note

    def checked_run_many(indices, ed) -> dict:
        start = len(ed.log)
        try:
            notes = run_many(indices, ed)
        except EditError as exc:
            raise failed(str(exc)) from None
        checked(ed, start, list(notes.values()))
        return notes

    return Action(action.name, None, action.templates, checked_run, action.kind, checked_run_many)


def edit_problem(fmt: Format, old: Any, new: Any) -> str | None:
    """Why ``new``, an edit of the message ``old``, is no valid edit: a model API would reject
    it, or its role, type, tool calls or tool results (ids that pair calls with results) differ."""
    problem = fmt.problem(new)
    if problem is not None:
        return problem
    if not isinstance(old, dict) or not isinstance(new, dict):
        return None if type(old) is type(new) else f"it became {type_name(new)}"
    for what, read in (("role", lambda m: m.get("role")), ("type", lambda m: m.get("type")),
                       ("tool calls", lambda m: [call[:2] for call in fmt.calls(m)]),
                       ("tool results", lambda m: [result[:2] for result in fmt.results(m)])):
        before, after = read(old), read(new)
        if before != after:
            return f"its {what} changed from {before!r} to {after!r}"
    return None
