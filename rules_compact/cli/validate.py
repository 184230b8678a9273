"""``validate``: check rule files against the schema, then lint them (rules that cannot work as written)."""

from __future__ import annotations

import os

from ..errors import InputError
from ..limits import max_rules_bytes, read_at_most
from ..language.lints import lint_rules
from ..language.loader import check_rules
from ..plugins.manager import registry
from ..formats import FORMATS
from .inputs import CONVERSATION_SUFFIXES, expand_inputs, plugin_failures, read, unreadable
from .output import INVALID_RULES, OK, wrap

__all__ = ["register"]


def register(add) -> None:
    p = add("validate", help="check rule files against the schema, and warn about rules that cannot work as written")
    p.add_argument("rules", nargs="+", metavar="RULES", help="rule files, 'default' or 'preset:NAME'")
    p.add_argument("--fail-on-warning", action="store_true", help=f"exit {INVALID_RULES} on warnings too")
    p.add_argument("--known-tools", metavar="FILE",
                   help="the tools that exist: a file with one name (or glob) per line, or a conversation "
                        "(.json, .jsonl, .traj) or folder of them, whose tools count; warn about a tool the "
                        "rules name that is none of them (with --strict: the tools plugins declare)")
    p.set_defaults(func=cmd_validate)


def known_tools(args) -> list[str] | None:
    """The tool names the ``unknown-tool`` lint checks against, or None when it does not run."""
    given = args.known_tools
    if given and (os.path.isdir(given) or given.endswith(CONVERSATION_SUFFIXES)):
        return sorted(_tools_seen(given))
    if given:
        limit = max_rules_bytes()
        try:
            with open(given, "rb") as fh:
                data = read_at_most(fh, limit + 1)
            text = data.decode("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"{given}: cannot read the known tools: "
                             f"{getattr(exc, 'strerror', None) or exc}") from None
        if len(data) > limit:
            raise InputError(f"{given}: the known tools are over the limit of {limit} bytes "
                             "(RULES_COMPACT_MAX_RULES_BYTES)")
        return [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    if args.strict:
        return [spec.pattern for spec in registry().tools]
    return None


def _tools_seen(given: str) -> set[str]:
    """The tools called or answered in the conversations of a file or folder."""
    names: set[str] = set()
    for path in expand_inputs([given]):
        why = unreadable(path)
        if why:
            raise InputError(why)
        for conv, fmt in read(path, None):
            for item in FORMATS[fmt].items(conv.messages):
                names.update(n for n in (item.call_names if item.kind == "assistant" else (item.tool_name,)) if n)
    return names


def cmd_validate(args) -> int:
    plugin_failures(args)
    known = known_tools(args)
    failed = warned = False
    for path in args.rules:
        problems = check_rules(path)
        for problem in problems:
            print(wrap(str(problem)))
        if problems:
            failed = True
            continue
        lints = lint_rules(path, known)
        for lint in lints:
            print(wrap(str(lint)))
        warned = warned or bool(lints)
        print(f"{path}: ok" if not lints else f"{path}: valid, {len(lints)} warning{'s' * (len(lints) > 1)}")
    return INVALID_RULES if failed or (warned and args.fail_on_warning) else OK

