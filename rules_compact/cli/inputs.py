"""What the commands read: rule files (with plugin failures reported) and conversations."""

from __future__ import annotations

import os
import sys

from ..documents import read_conversations_from
from ..errors import InputError
from ..formats import FORMATS
from ..language.loader import load_rules
from ..plugins.manager import PluginError, registry
from ..readers import Conversation
from .output import PROG, warn

__all__ = ["add_rules_options", "add_format_option", "plugin_failures", "rulesets", "read", "same_file"]


def add_format_option(p) -> None:
    p.add_argument("--format", choices=sorted(FORMATS), help="message format (default: detected)")


def add_rules_options(p) -> None:
    p.add_argument("-r", "--rules", action="append", metavar="RULES",
                   help="rule file, 'default' or 'preset:NAME'; repeat for successive passes "
                        "(default: the bundled default rules)")
    add_format_option(p)


def plugin_failures(args) -> None:
    """Report plugins that failed to load; with --strict, stop."""
    for failure in registry().failures:
        if getattr(args, "strict", False):
            raise PluginError(f"{failure} (--strict)")
        warn(f"{failure}; skipped")


def rulesets(args) -> list:
    """The ``-r`` rule files (the bundled default without one), loaded."""
    plugin_failures(args)
    return [load_rules(r) for r in (args.rules or ["default"])]


def same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.abspath(a) == os.path.abspath(b)


def read(path: str, forced: str | None) -> list[tuple[Conversation, str]]:
    """Each conversation of a file with the format its rules see: ``--format``, else the detected one.

    Messages the API would reject in a forced format raise InputError naming the detected
    format.  A forced format that finds fewer items (tool results and assistant turns) than the
    detected one, none at all for instance, gets a warning saying which format the content
    looks like.
    """
    out = []
    for conv in read_conversations_from(path):
        fmt = forced or conv.format
        if fmt != conv.format and conv.messages:
            try:  # one error line: the API would reject the messages in the forced format
                FORMATS[fmt].check(conv.messages)
            except InputError as error:
                raise InputError(f"{error}; the content looks like {conv.format} (--format {conv.format})") from None
            found = len(FORMATS[fmt].items(conv.messages))
            detected = len(FORMATS[conv.format].items(conv.messages))
            if found < detected:
                what = f"finds only {found} of the {detected}" if found else f"finds none of the {detected}"
                print(f"{PROG}: warning: {conv.name}: --format {fmt} {what} tool results and assistant turns; "
                      f"the content looks like {conv.format} (--format {conv.format})", file=sys.stderr)
        out.append((conv, fmt))
    return out
