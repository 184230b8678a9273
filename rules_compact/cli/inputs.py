"""What the commands read: rule files (with plugin failures reported) and conversations."""

from __future__ import annotations

import os

from ..batch import read_file
from ..formats import FORMATS
from ..language.loader import load_rules
from ..plugins.manager import PluginError, registry
from ..readers import Conversation
from .output import warn

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
    """Each conversation of a file with the format its rules see (:func:`rules_compact.batch.read_file`),
    its warnings printed."""
    return read_file(path, forced, warn)
