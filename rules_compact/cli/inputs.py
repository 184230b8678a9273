"""What the commands read: rule files (with plugin failures reported) and conversations."""

from __future__ import annotations

import glob
import os
import stat
import sys
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator, Sequence

from ..batch import read_file
from ..errors import InputError
from ..formats import FORMATS
from ..language.loader import load_rules
from ..language.model import RuleSet
from ..plugins.manager import PluginError, registry
from ..readers import Conversation
from .output import BAD_INPUT, OK, PROG, warn

__all__ = ["add_rules_options", "add_format_option", "plugin_failures", "rulesets", "read",
           "refuse_overwriting", "special_file",
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


def refuse_overwriting(outputs: Sequence[tuple[str, str | None]], conversations: Iterable[str] = (),
                       rule_sets: Iterable[RuleSet] = (), label: str = "the INPUT file") -> None:
    """InputError when an output would replace one of the command's inputs or another output.

    ``outputs``: (option, path or None when not given), such as ``("--table", args.table)``;
    the inputs are the ``conversations`` (each ``label``), the rule files of ``rule_sets``
    (with the files they extend) and the plugins' files.  Two paths are one file when they
    resolve to the same path or have the same inode (a symlink, a hard link).  An output that
    is a device or a pipe is written to, never replaced, so it replaces nothing."""
    given = [(what, path, _identity(path)) for what, path in outputs if path is not None]
    given = [(what, path, key) for what, path, key in given if key is not None]
    if not given:
        return
    for i, (what, path, key) in enumerate(given):
        other = next((o for o, _, k in given[:i] if k == key), None)
        if other is not None:
            raise InputError(f"{path}: {what} is the {other} file; give them different names")
    inputs = [(label, p) for p in conversations if p != "-"]
    inputs += [("a rule file", f) for rule_set in rule_sets for f in rule_set.files]
    inputs += [("a plugin's file", f) for f in registry().files]
    known: dict[tuple, str] = {}
    for what, path in inputs:
        known.setdefault(_identity(path), what)
    for what, path, key in given:
        if key in known:
            raise InputError(f"{path}: {what} is {known[key]}")


def _identity(path: str) -> tuple | None:
    """What makes a path one file: its inode, or for a file not there yet its resolved path;
    None for a device or a pipe, or a path no file can have (a NUL in it)."""
    try:
        mode, inode, device = os.stat(path)[:3]
    except OSError:
        return ("path", os.path.realpath(path))
    except ValueError:
        return None
    return ("inode", device, inode) if stat.S_ISREG(mode) or stat.S_ISDIR(mode) else None


def read(path: str, forced: str | None) -> list[tuple[Conversation, str]]:
    """Each conversation of a file with the format its rules see (:func:`rules_compact.batch.read_file`),
    its warnings printed."""
    return read_file(path, forced, warn)


def _is_glob(path: str) -> bool:
    return glob.has_magic(path) and not os.path.exists(path)


def expand_inputs(paths: Iterable[str], skipped: Callable[[str, str], None] | None = None) -> Iterator[str]:
    """The files a corpus command reads, in order: a file (or ``-``) as given; a folder, its
    conversation files (``CONVERSATION_SUFFIXES``, recursively, sorted); a glob (``**`` spans
    folders), its matches sorted, a folder among them expanded likewise.  A folder or a glob
    that finds no file to read is yielded as given, so that reading it reports it.  Only a
    path given may be a FIFO or a device: one that a folder or a glob finds is left out and
    passed to ``skipped`` with what it is (reading it could block forever)."""
    for path in paths:
        if _is_glob(path):
            matches = sorted(glob.glob(path, recursive=True))
            found = [f for m in matches for f in (_folder_files(m) if os.path.isdir(m) else [m])]
        elif os.path.isdir(path):
            found = _folder_files(path)
        else:
            yield path
            continue
        regular = []
        for file in found:
            what = special_file(file)
            if what is None:
                regular.append(file)
            elif skipped is not None:
                skipped(file, what)
        yield from regular or [path]


def _folder_files(folder: str) -> list[str]:
    out = []
    for root, dirs, files in os.walk(folder):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        out += [os.path.join(root, f) for f in files if f.endswith(CONVERSATION_SUFFIXES) and not f.startswith(".")]
    return sorted(out)


_KINDS = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a folder"))


def special_file(path: str) -> str | None:
    """What ``path`` is when it is no regular file (``a FIFO``, ``a folder`` ...), following
    symlinks; None for a regular file, or a path that cannot be examined (reading it reports why)."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return None
    return next((what for test, what in _KINDS if test(mode)), None if stat.S_ISREG(mode) else "no regular file")


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
        self.paths = list(expand_inputs(self.inputs, self._skip))

    @staticmethod
    def _skip(path: str, what: str) -> None:
        warn(f"{path}: is {what}, not a regular file; skipped (name it on the command line to read it)")

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
