"""An example rules-compact plugin.

It implements every hook:

* ``rules_compact_tools``: metadata for the tools of mini-swe-agent (``bash``) and Claude
  Code (``Bash``, ``Read``, ``TodoWrite``), ``read_file`` and any ``mcp__*`` tool, with
  summarizers for the shell and file-reading tools;
* ``rules_compact_matchers``: ``command_matches: {regex: ...}``, true when a shell call's
  ``command`` argument matches;
* ``rules_compact_actions``: ``head-lines: {n: 5}``, keeping the first n lines of a result;
* ``rules_compact_estimators``: ``words``, about 4 tokens per 3 words.

rules-compact finds it through the ``rules_compact`` entry point in pyproject.toml.
"""

from __future__ import annotations

import re

from rules_compact import hookimpl
from rules_compact.plugins import Action, ActionKind, MatcherKind, ToolSpec, call_args, result_variables

__version__ = "0.1.0"

# -- tools ---------------------------------------------------------------------------

RETURNCODE = re.compile(r"<returncode>\s*(-?\d+)\s*</returncode>")
OUTPUT = re.compile(r"<output>\n?(.*?)\n?</output>", re.DOTALL)
MAX_LINE = 120


def _clip(text: str) -> str:
    return text if len(text) <= MAX_LINE else text[:MAX_LINE - 3] + "..."


def summarize_shell(content: str, call: dict | None) -> str:
    """Exit code and last output line of a shell command.

    mini-swe-agent results look like ``<returncode>0</returncode>\\n<output>\\n...\\n</output>``;
    other shells' results are plain output, summarized by their last line alone.
    """
    code = RETURNCODE.search(content)
    output = OUTPUT.search(content)
    body = output.group(1) if output else RETURNCODE.sub("", content)
    lines = [line.strip() for line in body.splitlines() if line.strip()]
    last = f"last line: {_clip(lines[-1])}" if lines else "no output"
    return f"exit {code.group(1)}, {last}" if code else last


def summarize_read(content: str, call: dict | None) -> str:
    """The path read (from the call's arguments) and the number of lines read."""
    args = call_args(call)
    path = None
    if isinstance(args, dict):
        path = next((args[k] for k in ("file_path", "path", "filename") if isinstance(args.get(k), str)), None)
    lines = len(content.splitlines())
    return f"{path or 'a file'}, {lines} line{'' if lines == 1 else 's'}"


@hookimpl
def rules_compact_tools():
    return [
        {"name": "bash", "compact": True, "summarize": summarize_shell},  # mini-swe-agent
        {"name": "Bash", "compact": True, "summarize": summarize_shell},  # Claude Code
        {"name": "Read", "compact": True, "summarize": summarize_read},
        {"name": "read_file", "compact": True, "summarize": summarize_read,
         "placeholder": "[read_file output removed ({lines} lines); read the file again if needed]"},
        {"name": "TodoWrite", "compact": False},  # the agent's plan: never compact it
        ToolSpec("mcp__*", compact=True),  # a glob; a ToolSpec works as well as a dict
    ]


# -- a matcher -----------------------------------------------------------------------

COMMAND_MATCHES_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["regex"],
    "description": "A tool call's command argument matches a regex: a tool result's call, or any call of an "
                   "assistant turn.",
    "properties": {
        "regex": {"type": "string", "minLength": 1, "description": "Python regex, searched in the command."},
        "ignore_case": {"type": "boolean", "description": "Match case-insensitively."},
        "argument": {"type": "string", "minLength": 1,
                     "description": "The argument holding the command (default 'command')."},
    },
}


def compile_command_matches(options, ctx, path):
    regex = ctx.regex(options["regex"], f"{path}.regex", ignore_case=options.get("ignore_case", False))
    argument = options.get("argument", "command")
    if regex is None:  # ctx.regex reported the located problem; loading fails
        return lambda item, view: False

    def hit(call) -> bool:
        args = call_args(call)
        value = args.get(argument) if isinstance(args, dict) else None
        return isinstance(value, str) and regex.search(value) is not None

    def command_matches(item, view) -> bool:
        if item.kind == "tool_result":
            return hit(item.call)
        return any(hit(call) for _, _, call in view.fmt.calls(view.messages[item.msg_index]))

    return command_matches


@hookimpl
def rules_compact_matchers():
    return [MatcherKind("command_matches", compile_command_matches,
                        "A tool call's command argument matches a regex.", COMMAND_MATCHES_SCHEMA)]


# -- an action -----------------------------------------------------------------------

HEAD_LINES_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["n"],
    "description": "Keep the first n lines of a tool result and a marker saying how many were removed.",
    "properties": {
        "n": {"type": "integer", "minimum": 1, "description": "Lines kept."},
        "marker": {"type": "string",
                   "description": "Line put after them; variables as for placeholder plus {omitted} "
                                  "(default '[... {omitted} more lines]')."},
    },
}


def compile_head_lines(options, ctx, path):
    n = options["n"]
    marker = ctx.template(options.get("marker", "[... {omitted} more lines]"), f"{path}.marker", extra=("omitted",))
    if marker is None:  # ctx.template reported the located problem; loading fails
        return Action("head-lines", lambda item, editor: None)
    ctx.recognise(re.compile(f"(?s)(?:[^\n]*\n){{{n}}}(?:{marker.pattern.pattern})"))  # for `compacted: true`

    def head_lines(item, editor):
        if item.kind != "tool_result":
            return "head-lines applies to tool results only"
        current = editor.result_text(item)
        lines = current.splitlines()
        if len(lines) <= n:
            return None
        head = "\n".join(lines[:n])
        if re.fullmatch(re.escape(head) + "\n" + marker.pattern.pattern, current, re.DOTALL):
            return None  # already cut by this action: compacting twice changes nothing
        values = result_variables(current, item.tool_name, item.tool_call_id, editor.view.estimate(current))
        new = head + "\n" + marker.render({**values, "omitted": len(lines) - n})
        if len(new) < len(current):
            editor.set_result_text(item, new)
        return None

    return Action("head-lines", head_lines)


@hookimpl
def rules_compact_actions():
    return [ActionKind("head-lines", compile_head_lines, "Keep the first n lines of a tool result.",
                       HEAD_LINES_SCHEMA)]


# -- an estimator --------------------------------------------------------------------

def words(text: str) -> int:
    """About 4 tokens per 3 whitespace-separated words, rounded up."""
    return (len(text.split()) * 4 + 2) // 3


@hookimpl
def rules_compact_estimators():
    return {"words": words}
