"""Action kinds: each compiles its options once into a small function that edits one item."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Protocol

from .estimators import utf16_len
from .formats import Item
from .templates import Template, result_variables

if TYPE_CHECKING:
    from .compiler import CompileContext
    from .view import View

__all__ = ["Action", "ActionKind", "Editor", "BUILTIN_ACTIONS"]

DEFAULT_TRUNCATE_MARKER = "\n[... {omitted} chars omitted ...]\n"
DEFAULT_SUMMARY = "[Previous: used {tool_name}: {summary}]"
#: What strip-text writes when the text it removes is all a message holds and the rule gives no
#: marker (or a blank one): a message is never left empty.
DEFAULT_STRIP_MARKER = "[text removed]"


class Editor(Protocol):
    """The copy-on-write output an action edits (implemented by the engine)."""

    view: View

    def message(self, index: int) -> dict: ...
    def replace(self, index: int, message: dict) -> None: ...
    def result_text(self, item: Item) -> str: ...
    def set_result_text(self, item: Item, text: str, as_string: bool = False) -> None: ...
    def breakpoints(self) -> int: ...  # the cache breakpoints the request holds now


@dataclass(frozen=True)
class Action:
    """A compiled action; ``apply`` returns a note for the report, or None."""

    name: str
    apply: Callable[[Item, Editor], "str | None"]
    templates: tuple[Template, ...] = ()


@dataclass(frozen=True)
class ActionKind:
    """A named action: ``compile(options, ctx, path) -> Action``; ``schema`` for plugins."""

    name: str
    compile: Callable[[Any, "CompileContext", str], Action]
    description: str
    schema: dict | None = None


def _keep(options, ctx, path) -> Action:
    return Action("keep", lambda item, ed: None)


def _placeholder(options, ctx, path) -> Action:
    text_path = path if isinstance(options, str) else f"{path}.text"
    options = {"text": options} if isinstance(options, str) else (options or {})
    explicit = ctx.template(options["text"], text_path) if options.get("text") else None
    summary = ctx.template(options.get("summary_text", DEFAULT_SUMMARY), f"{path}.summary_text",
                           extra=("summary",)) if options.get("summary") else None
    as_string = options.get("as_string", False)

    def placeholder(item: Item, ed: Editor) -> str | None:
        if item.kind != "tool_result":
            return "placeholder applies to tool results only"
        spec = ed.view.tool_spec(item.tool_name)
        template = explicit or (spec.placeholder if spec and spec.placeholder else ed.view.ruleset.placeholder)
        current = ed.result_text(item)
        values = result_variables(current, item.tool_name, item.tool_call_id, ed.view.estimate(current))
        if template.recognises(current, values) or (summary is not None and summary.recognises(current, values)):
            if as_string and not isinstance(ed.view.fmt.result_content(ed.message(item.msg_index), item), str):
                ed.set_result_text(item, current, True)  # same text, now the plain string asked for
            return None
        note = None
        if summary is not None and spec is not None and spec.summarize is not None:
            try:
                values["summary"] = _summarize(spec, current, item.call)
                template = summary
            except Exception as exc:  # a plugin's summarizer must never break compaction
                note = f"summarizer of {spec.pattern!r} ({spec.source}) failed: {type(exc).__name__}: {exc}"
        new = template.render(values)
        if template is summary and (tokens := ed.view.estimate(new)) > values["tokens"]:
            return f"left as it is: the summary placeholder ({tokens} tokens) is larger than the result ({values['tokens']})"
        ed.set_result_text(item, new, as_string)
        return note

    templates = tuple(t for t in (explicit, summary) if t is not None)
    return Action("placeholder", placeholder, templates)


def _summarize(spec, content: str, call: dict | None) -> str:
    result = spec.summarize(content, call)
    if not isinstance(result, str):
        raise TypeError(f"returned {type(result).__name__}, not str")
    return result


def _truncate(options, ctx, path) -> Action:
    options = options or {}
    head, tail = options.get("head", 0), options.get("tail", 0)
    as_string = options.get("as_string", False)
    marker = ctx.template(options.get("marker", DEFAULT_TRUNCATE_MARKER), f"{path}.marker",
                          extra=("omitted",))
    if marker is None:
        return Action("truncate", lambda item, ed: None)
    def shape(text: str) -> bool:
        """Already truncated: head, then a marker, then tail."""
        return len(text) >= head + tail and marker.matches_any(text[head:len(text) - tail])

    ctx.recognise(shape)

    def truncate(item: Item, ed: Editor) -> str | None:
        if item.kind != "tool_result":
            return "truncate applies to tool results only"
        current = ed.result_text(item)
        if len(current) <= head + tail or shape(current):
            return None
        omitted = len(current) - head - tail
        values = result_variables(current, item.tool_name, item.tool_call_id, ed.view.estimate(current))
        new = current[:head] + marker.render({**values, "omitted": omitted}) + current[len(current) - tail:]
        if len(new) < len(current):
            ed.set_result_text(item, new, as_string)
        return None

    return Action("truncate", truncate)


def _strip_text(options, ctx, path) -> Action:
    options = options or {}
    patterns = [ctx.regex(p, f"{path}.keep_patterns[{i}]") for i, p in enumerate(options.get("keep_patterns", []))]
    patterns = [p for p in patterns if p is not None]
    max_chars = options.get("keep_max_chars")
    marker = options.get("marker") or None
    if marker is not None and not marker.strip():
        marker = None  # a blank marker removes without a trace: an empty text block is invalid
    ctx.recognise((marker or DEFAULT_STRIP_MARKER).__eq__)
    text_first = options.get("text_first", False)
    keep_thinking = options.get("keep_thinking", False)
    keep_text = options.get("keep_text", False)
    tool_turns_only = options.get("tool_turns_only", True)
    drop_other = options.get("drop_other_blocks", False)
    length = utf16_len if options.get("length") == "utf16" else len

    def keep(text: str) -> bool:
        return (keep_text or any(p.search(text) for p in patterns)
                or (max_chars is not None and length(text) <= max_chars))

    def strip_text(item: Item, ed: Editor) -> str | None:
        if item.kind != "assistant" or (tool_turns_only and not item.call_ids):
            return "strip-text applies to assistant turns" + (" with tool calls" if tool_turns_only else "")
        latest = item.msg_index == ed.view.last_assistant
        fmt, msg = ed.view.fmt, ed.message(item.msg_index)

        def strip(marker: str | None) -> dict:
            return fmt.strip_text(msg, keep, marker, text_first and not latest, keep_thinking or latest, drop_other)

        new = strip(marker)
        if marker is None and ((fmt.is_empty(new) and any(fmt.text_blocks(msg)))
                               or fmt.breakpoints(new) < min(1, fmt.breakpoints(msg))):
            new = strip(DEFAULT_STRIP_MARKER)  # it removed all the text, or all that could carry a breakpoint
        if fmt.is_empty(new):
            return "left as it is: stripping would leave an empty message"
        ed.replace(item.msg_index, new)
        return "latest assistant turn: thinking kept" if latest else None

    return Action("strip-text", strip_text)


def _clear_inputs(options, ctx, path) -> Action:
    def clear_inputs(item: Item, ed: Editor) -> str | None:
        if item.kind == "tool_result":
            if item.call_msg_index is None:
                return "orphan result: no call to clear"
            index, ids = item.call_msg_index, frozenset([item.tool_call_id])
        else:
            ids = frozenset(item.call_ids)
            for index in sorted({at for at, _, _ in ed.view.turn_calls(item)}):  # Responses: several items
                ed.replace(index, ed.view.fmt.clear_inputs(ed.message(index), ids))
            return None
        ed.replace(index, ed.view.fmt.clear_inputs(ed.message(index), ids))
        return None

    return Action("clear-inputs", clear_inputs)


def _cache_breakpoint(options, ctx, path) -> Action:
    cache_control = {"type": "ephemeral", **({"ttl": options["ttl"]} if options and "ttl" in options else {})}

    def cache_breakpoint(item: Item, ed: Editor) -> str | None:
        fmt, msg = ed.view.fmt, ed.message(item.msg_index)
        if not fmt.max_breakpoints:
            return f"cache-breakpoint needs Anthropic cache_control, which these {fmt.name} messages do not carry"
        new = fmt.mark_cache(msg, item, cache_control)
        if new is msg:
            return None if fmt.breakpoints(msg) else "no block here may carry a cache breakpoint"
        held = ed.breakpoints()
        if held >= fmt.max_breakpoints:
            return f"left as it is: the request already holds {held} cache breakpoints (at most {fmt.max_breakpoints})"
        ed.replace(item.msg_index, new)
        return None

    return Action("cache-breakpoint", cache_breakpoint)


BUILTIN_ACTIONS: dict[str, ActionKind] = {
    k.name: k
    for k in [
        ActionKind("keep", _keep, "Leave the item as it is; stops the rule chain."),
        ActionKind("placeholder", _placeholder, "Replace a tool result's content with a template."),
        ActionKind("truncate", _truncate, "Keep the first and last characters of a tool result."),
        ActionKind("strip-text", _strip_text, "Remove text and thinking from an assistant turn that calls tools."),
        ActionKind("clear-inputs", _clear_inputs, "Blank the arguments of the tool call(s) to {}."),
        ActionKind("cache-breakpoint", _cache_breakpoint,
                   "Put an Anthropic cache_control breakpoint on the item's block."),
    ]
}
