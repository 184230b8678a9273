"""What the commands read: rule files (with plugin failures reported) and conversations."""

from __future__ import annotations

import glob
import os
import sys
from dataclasses import dataclass, field
from typing import Iterable, Iterator

from ..batch import read_file
from ..formats import FORMATS
from ..language.loader import load_rules
from ..plugins.manager import PluginError, registry
from ..readers import Conversation
from .output import BAD_INPUT, OK, PROG, warn

__all__ = ["add_rules_options", "add_format_option", "plugin_failures", "rulesets", "read", "same_file",
           "CONVERSATION_SUFFIXES", "INPUTS_HELP", "expand_inputs", "unreadable", "Corpus"]

#: The files a folder given as a corpus input contributes (hidden files and folders are left out).
CONVERSATION_SUFFIXES = (".json", ".jsonl", ".traj")

INPUTS_HELP = "conversation file, folder (its .json, .jsonl and .traj files) or glob; - for stdin"


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


def _is_glob(path: str) -> bool:
    return glob.has_magic(path) and not os.path.exists(path)


def expand_inputs(paths: Iterable[str]) -> Iterator[str]:
    """The files a corpus command reads, in order: a file (or ``-``) as given; a folder, its
    conversation files (``CONVERSATION_SUFFIXES``, recursively, sorted); a glob (``**`` spans
    folders), its matches sorted, a folder among them expanded likewise.  A folder or a glob
    that finds no file is yielded as given, so that reading it reports it."""
    for path in paths:
        if _is_glob(path):
            matches = sorted(glob.glob(path, recursive=True))
            found = [f for m in matches for f in (_folder_files(m) if os.path.isdir(m) else [m])]
        elif os.path.isdir(path):
            found = _folder_files(path)
        else:
            found = [path]
        yield from found or [path]


def _folder_files(folder: str) -> list[str]:
    out = []
    for root, dirs, files in os.walk(folder):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        out += [os.path.join(root, f) for f in files if f.endswith(CONVERSATION_SUFFIXES) and not f.startswith(".")]
    return sorted(out)


def unreadable(path: str) -> str | None:
    """Why ``path`` from ``expand_inputs`` is no file to read, or None."""
    if _is_glob(path):
        return f"{path}: no file matches"
    if os.path.isdir(path):
        return f"{path}: a folder with no conversation file ({', '.join(CONVERSATION_SUFFIXES)})"
    return None


@dataclass
class Corpus:
    """The files of many inputs (``expand_inputs``), and which of them failed.

    A file that cannot be read, or whose messages a model API would reject, is reported on
    stderr as one line and skipped (``fail``); ``failed`` lists them, ``files`` counts the files
    read and ``finish()`` gives the exit code."""

    inputs: Iterable[str]
    paths: list[str] = field(init=False)
    failed: list[str] = field(default_factory=list)
    files: int = 0

    def __post_init__(self) -> None:
        self.paths = list(expand_inputs(self.inputs))

    def fail(self, path: str, why: str) -> None:
        """Report ``path`` as skipped (also for a conversation that fails later, in a command)."""
        self.failed.append(path)
        print(f"{PROG}: error: {why}", file=sys.stderr)

    def finish(self, code: int = OK) -> int:
        """The exit code (``BAD_INPUT`` once an input failed, else ``code``), and when some files
        were read despite failures, a line saying the results leave them out."""
        if self.failed and self.files:
            print(f"{PROG}: error: {len(self.failed)} of {len(self.failed) + self.files} inputs failed and are "
                  "left out of the results above", file=sys.stderr)
        return BAD_INPUT if self.failed else code
