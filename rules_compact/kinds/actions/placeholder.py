"""The ``placeholder`` action: replace a tool result's content with a template."""

from __future__ import annotations

from ...language.templates import Variables
from ..base import Action, ActionKind

DEFAULT_SUMMARY = "[Previous: used {tool_name}: {summary}]"


def compile_placeholder(options, ctx, path) -> Action:
    text_path = path if isinstance(options, str) else f"{path}.text"
    options = {"text": options} if isinstance(options, str) else (options or {})
    explicit = ctx.template(options["text"], text_path) if options.get("text") else None
    summary = ctx.template(options.get("summary_text", DEFAULT_SUMMARY), f"{path}.summary_text",
                           extra=("summary",)) if options.get("summary") else None
    as_string = options.get("as_string", False)

    chosen: dict = {}  # tool name -> (its spec, its template, the text when it reads only the name)
    owner: list = [None]  # the rule set ``chosen`` was filled for

    def choose(facts, name):
        if owner[0] is not facts.ruleset:
            chosen.clear()
            owner[0] = facts.ruleset
        found = chosen.get(name)
        if found is None:
            spec = facts.tool_spec(name)
            template = explicit or (spec.placeholder if spec and spec.placeholder else facts.ruleset.placeholder)
            fixed = template.render({"tool_name": name or "unknown"}) if set(template.variables) <= {"tool_name"} \
                else None
            found = chosen[name] = (spec, template, fixed)
        return found

    def placeholder(index: int, ed) -> str | None:
        facts = ed.facts
        if facts.scan.is_turn[index]:
            return "placeholder applies to tool results only"
        name = facts.tool_names[index]
        spec, template, fixed = choose(facts, name)
        current = ed.result_text_at(index)
        values = None
        if template.matches_any(current) or (summary is not None and summary.matches_any(current)):
            values = Variables(current, name, facts.scan.call_id[index], facts.estimate)
            if template.recognises(current, values) or (summary is not None and summary.recognises(current, values)):
                if as_string and not isinstance(ed.result_content_at(index), str):
                    ed.set_result_text_at(index, current, True)  # same text, now the plain string asked for
                return None
        note = None
        if summary is not None and spec is not None and spec.summarize is not None:
            values = values or Variables(current, name, facts.scan.call_id[index], facts.estimate)
            try:
                values["summary"] = _summarize(spec, current, facts.links[index][0])
                ed.set_result_text_at(index, summary.render(values), as_string)
                return None
            except Exception as exc:  # a plugin's summarizer must never break compaction
                note = f"summarizer of {spec.pattern!r} ({spec.source}) failed: {type(exc).__name__}: {exc}"
        if fixed is None:
            fixed = template.render(values or Variables(current, name, facts.scan.call_id[index], facts.estimate))
        ed.set_result_text_at(index, fixed, as_string)
        return note

    templates = tuple(t for t in (explicit, summary) if t is not None)
    return Action("placeholder", templates=templates, run=placeholder, kind=KIND)


def _summarize(spec, content: str, call: dict | None) -> str:
    result = spec.summarize(content, call)
    if not isinstance(result, str):
        raise TypeError(f"returned {type(result).__name__}, not str")
    return result

SCHEMA = {'description': "Replace a tool result's content. A string is the template; variables: {tool_name}, "
                '{tool_call_id}, {chars}, {bytes}, {tokens}, {lines}.',
 'anyOf': [{'type': 'string'},
           {'type': 'null'},
           {'type': 'object',
            'additionalProperties': False,
            'properties': {'text': {'type': 'string',
                                    'description': "The template; without it the tool's own placeholder or "
                                                   'defaults.placeholder is used.'},
                           'summary': {'type': 'boolean',
                                       'description': "Use the tool's summarizer (declared by a plugin) when "
                                                      'it has one; falls back to the plain placeholder if it '
                                                      'has none or it fails.'},
                           'summary_text': {'type': 'string',
                                            'description': 'Template for a summarized result; variables as '
                                                           'for placeholder plus {summary}. Default '
                                                           "'[Previous: used {tool_name}: {summary}]'."},
                           'as_string': {'type': 'boolean',
                                         'description': 'Write the placeholder as a plain string even when '
                                                        'the content was a list of blocks (the originals do; '
                                                        'a cache_control on an inner block is then '
                                                        'lost).'}}}]}

KIND = ActionKind('placeholder', compile_placeholder, "Replace a tool result's content with a template.",
                  SCHEMA, item_only=True)
