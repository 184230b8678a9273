"""The ``placeholder`` action: replace a tool result's content with a template."""

from __future__ import annotations

from operator import is_

from ...language.templates import RESULT_VARIABLES, SAVED_VARIABLES, VARIABLE_LENGTH, Template, Variables
from ...store import NO_STORE, FolderStore, Saved, StoreError, content_id, names_missing
from ..base import Action, ActionKind, with_defaults, RESULT

SAVED_TO_FILE = ("[{tool_name} result cleared to save space ({saved_lines} lines); the full result is saved "
                 "in {saved}: read that file to see it again]")
SAVED_AS_ID = ("[{tool_name} result cleared to save space ({saved_lines} lines); the full result is saved: "
               "call recall_result with id {saved} to see it again]")
GONE = ("[{tool_name} result cleared to save space; its saved copy has since been removed from the store: "
        "call {tool_name} again if you need it]")


#: A template field {saved} or {saved_lines} (not a literal {{saved}}), as the schema finds it.
SAVED_FIELD = r"(^|[^{])(\{\{)*\{saved(_lines)?[}:!]"


def saved_fields_need_save(field: str | None) -> dict:
    """The schema's condition on a clearing action's ``field`` (its template): with save: true
    it says where it saved ({saved}); without, it names neither {saved} nor {saved_lines}
    (field None: the template itself, which cannot save)."""
    unsaved = {"not": {"pattern": SAVED_FIELD},
               "description": "{saved} and {saved_lines} need save: true on this action"}
    if field is None:
        return unsaved
    return {"if": {"properties": {"save": {"const": True, "description": "The action saves."}}, "required": ["save"]},
            "then": {"properties": {field: {
                "pattern": "^$|" + SAVED_FIELD.replace("(_lines)?", ""),
                "description": "save: true saves what this action clears, but the template does not say "
                               "where: add {saved} (the file or the id to read it back from)"}}},
            "else": {"properties": {field: unsaved}}}


def saving_template(ctx, save: bool, path: str, given: str | None, text_path: str,
                    default: str | None, wording: tuple[str, str], extra: tuple[str, ...] = ()):
    """The store a clearing action saves to (``save: true``; a problem when there is none) and
    its template: the rule file's text (``given``), else ``wording`` for a store (a folder
    store's, another's), else ``default`` (None: no template of its own).  That the template
    names {saved} exactly when the action saves is the schema's to check (saved_fields_need_save)."""
    store = ctx.store if save else None
    if save and store is None:
        ctx.problem(f"{path}.save", NO_STORE)
    text = given if given is not None else default if store is None else \
        wording[0] if isinstance(store, FolderStore) else wording[1]
    return store, ctx.template(text, text_path, extra=extra + SAVED_VARIABLES) if text else None


def compile_placeholder(options, ctx, path) -> Action:
    text_path = path if isinstance(options, str) else f"{path}.text"
    options = with_defaults({"text": options} if isinstance(options, str) else options, SCHEMA)
    store, explicit = saving_template(ctx, options["save"], path, options.get("text") or None, text_path, None,
                                      (SAVED_TO_FILE, SAVED_AS_ID))
    gone = Template.compile(GONE, RESULT_VARIABLES) if store is not None else None
    if gone is not None:
        ctx.recognise(gone.matches_any)
    summary = ctx.template(options["summary_text"], f"{path}.summary_text",
                           extra=("summary",)) if options["summary"] else None
    as_string = options["as_string"]
    given_allow_larger = options.get("allow_larger")  # None: the rule file's defaults.placeholder_allow_larger

    chosen: dict = {}  # tool name -> (its spec, its template, the text when it reads only the name)
    owner: list = [None]  # what of the rule set ``chosen`` was filled from
    rendered: dict = {}  # id(text) -> (what the render read, its outcome), kept across calls (equal reads: the same outcome)

    def choose(facts, name):
        spec = facts.tool_spec(name)
        template = explicit or (spec.placeholder if spec and spec.placeholder else facts.ruleset.placeholder)
        fixed = template.render({"tool_name": name or "unknown"}) if set(template.variables) <= {"tool_name"} else None
        found = chosen[name] = (spec, template, fixed)
        return found

    def placeholders(items, ed) -> dict[int, str]:
        """Each item's content replaced; the notes for the report, by item."""
        facts = ed.facts
        ruleset = facts.ruleset  # what the choice reads of it (its step-less copy shares them)
        reads = (ruleset.tools, ruleset.placeholder, ruleset.estimator) if ruleset is not None else None
        if owner[0] is None or reads is None or not all(map(is_, owner[0], reads)):
            chosen.clear()
            rendered.clear()
            owner[0] = reads
        scan = facts.scan
        is_turn, names, call_ids, estimate = scan.is_turn, facts.tool_names, scan.call_id, facts.estimate
        text_at, out, inputs, msg = ed.result_text_at, ed.out, facts.messages, scan.msg
        links = facts.links
        item_tokens = facts.item_tokens
        allow_larger = given_allow_larger if given_allow_larger is not None else \
            getattr(ruleset, "placeholder_allow_larger", False)

        def _tokens_of(index, current) -> int:  # the result's tokens as it is now
            return item_tokens[index] if out[msg[index]] is inputs[msg[index]] else estimate(current)

        def call_of(index):  # the call as an earlier action left it
            link, at, _ = links[index]
            if link is not None and out[at] is not inputs[at]:
                link = next((raw for cid, _, raw in facts.fmt.calls(out[at]) if cid == call_ids[index]), link)
            return link

        def outcome(index, current) -> tuple[str | None, str | None]:
            """The item's new text (None: it stays) and the note on it, if any."""
            name = names[index]
            spec, template, fixed = chosen.get(name) or choose(facts, name)
            values, failed = None, None
            if template.matches_any(current) or (summary is not None and summary.matches_any(current)):
                values = Variables(current, name, call_ids[index], estimate, call_of(index))
                if template.recognises(current, values) or (summary is not None
                                                            and summary.recognises(current, values)):
                    if store is not None and names_missing(store, current):  # never a pointer to nothing
                        return gone.render(values), None
                    # already a placeholder: the same text again when the plain string is asked for
                    return (current if as_string and not isinstance(ed.result_content_at(index), str) else None), None
            if gone is not None and gone.matches_any(current):
                return None, None
            if summary is not None and spec is not None and spec.summarize is not None:
                link = call_of(index)
                values = values or Variables(current, name, call_ids[index], estimate, link)
                try:
                    values["summary"] = _summarize(spec, current, link)
                except (Exception, SystemExit) as exc:  # a plugin's summarizer never breaks compaction: the template
                    failed = f"summarizer of {spec.pattern!r} ({spec.source}) failed: {type(exc).__name__}: {exc}"
                else:
                    new = summary.render(values)
                    if (tokens := estimate(new)) > values["tokens"]:
                        return None, (f"left as it is: the summary placeholder ({tokens} tokens) is larger than the "
                                      f"result ({values['tokens']})")
                    return new, None
            if fixed is not None:
                if not allow_larger and (tokens := estimate(fixed)) > _tokens_of(index, current):
                    return None, _larger(tokens, _tokens_of(index, current))
                return fixed, failed
            link = call_of(index)
            if store is not None:  # saved on every render: a copy pruned since is saved again
                values = Variables(current, name, call_ids[index], estimate, link, store.save)
                least = _render(template, Variables(current, name, call_ids[index], estimate, link, _unsaved),
                                estimate, allow_larger)  # no {saved} is shorter than an id: too large, not saved
                if least[0] is None:
                    return least
                try:
                    return _render(template, values, estimate, allow_larger)
                except StoreError as exc:
                    return None, f"left as it is: {exc}"
            key = (current, template, link, name, call_ids[index])  # what the render reads
            known = rendered.get(id(current))
            if known is None or any(a is not b and a != b for a, b in zip(known[0], key)):
                values = values or Variables(current, name, call_ids[index], estimate, link)
                if len(rendered) >= RENDERED:  # the newest are those a later call meets again
                    rendered.clear()
                known = rendered[id(current)] = (key, _render(template, values, estimate, allow_larger))
            new, note = known[1]
            return new, note if note is not None else failed

        notes = {}
        writes = []  # (item, new text), made after the loop (each item is in a message of its own), logged by item
        for index, current in zip(items, facts.texts_of(items)):
            if is_turn[index]:
                notes[index] = "placeholder applies to tool results only"
                continue
            if out[msg[index]] is not inputs[msg[index]]:  # an earlier action edited its message
                current = text_at(index)
            new, note = outcome(index, current)
            if note is not None:
                notes[index] = note
            if new is not None:
                writes.append((index, new))
        ed.set_result_texts(writes, as_string)
        return notes

    templates = tuple(t for t in (explicit, summary) if t is not None)
    return Action("placeholder", templates=templates, run_many=placeholders, kind=KIND)


RENDERED = 4096  # texts whose render a placeholder action remembers at most (a Compactor's later calls meet them again)


def _render(template, values, estimate, allow_larger: bool) -> tuple[str | None, str | None]:
    """The placeholder for a text, or why it is left as it is."""
    new = template.render(values)
    tokens = estimate(new)
    if VARIABLE_LENGTH.intersection(template.variables) and tokens >= values["tokens"]:
        return None, (f"left as it is: the placeholder ({tokens} tokens) is not smaller than the "
                      f"result ({values['tokens']})")
    if not allow_larger and tokens > values["tokens"]:
        return None, _larger(tokens, values["tokens"])
    return new, None


def _unsaved(text: str) -> Saved:
    """What a save could give at the shortest: a Saved of the id alone, nothing written."""
    return Saved(content_id(text), None, len(text.splitlines()))


def _larger(tokens: int, result: int) -> str:
    return f"left as it is: the placeholder ({tokens} tokens) is larger than the result ({result})"


def _summarize(spec, content: str, call: dict | None) -> str:
    result = spec.summarize(content, call)
    if not isinstance(result, str):
        raise TypeError(f"returned {type(result).__name__}, not str")
    return result

SCHEMA = {'anyOf': [{'type': 'string', 'maxLength': 2000, **saved_fields_need_save(None)},
           {'type': 'null'},
           {'type': 'object',
            'additionalProperties': False,
            **saved_fields_need_save('text'),
            'properties': {'text': {'type': 'string',
                                    'description': "The template; without it the tool's own placeholder or "
                                                   'defaults.placeholder is used.',
                                    'maxLength': 2000},
                           'summary': {'default': False,
                                       'type': 'boolean',
                                       'description': "Use the tool's summarizer (declared by a plugin) when "
                                                      'it has one; falls back to the plain placeholder if it '
                                                      'has none or it fails. A summary placeholder larger '
                                                      'than the result leaves the result as it is.'},
                           'summary_text': {'default': '[Previous: used {tool_name}: {summary}]',
                                            'type': 'string',
                                            'description': 'Template for a summarized result; variables as '
                                                           'for placeholder plus {summary}. Default '
                                                           "'[Previous: used {tool_name}: {summary}]'.",
                                            'maxLength': 2000},
                           'save': {'default': False,
                                    'type': 'boolean',
                                    'description': "Save the result's exact content to the store (the rule "
                                                   "file's store:, RULES_COMPACT_STORE, or a plugin's) under "
                                                   'its sha256, so that the agent can read it back; the '
                                                   'template gets {saved} (the file, or the id for a store '
                                                   'without files) and {saved_lines}, and by default says '
                                                   'where to read it. A placeholder naming a saved copy the '
                                                   'store no longer holds becomes one saying it is gone.'},
                           'allow_larger': {'type': 'boolean',
                                            'description': 'Replace a result even with a placeholder larger '
                                                           'than it (in estimated tokens), as a tool that '
                                                           'clears every old result does; by default '
                                                           '(defaults.placeholder_allow_larger) such a '
                                                           'result is left as it is.'},
                           'as_string': {'default': False,
                                         'type': 'boolean',
                                         'description': 'Write the placeholder as a plain string even when '
                                                        'the content was a list of blocks (the originals do); '
                                                        'a cache_control on an inner block moves onto the '
                                                        'tool_result block.'}}}]}

KIND = ActionKind('placeholder', compile_placeholder,
                  "Replace a tool result's content. A string is the template; variables: {tool_name}, {tool_call_id}, {chars}, {bytes}, {tokens}, {lines}, {args} (the call's string arguments as the request carries them, after an earlier clear-inputs of the same rule; at most 120 characters), {names} (the first 8 paths and dotted or underscored identifiers the result names); with save: true, {saved} (the file or id the result is saved under) and {saved_lines}. A placeholder larger than the result (estimated tokens) leaves it as it is, unless allow_larger; one with {args} or {names} that would not come out smaller than the result leaves it as it is.",
                  SCHEMA, item_only=True, items=(RESULT,))
