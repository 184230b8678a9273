"""Load rule files: safe YAML, JSON Schema validation, then compilation, all errors located."""

from __future__ import annotations

import os
import re
from collections import Counter
from typing import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from .builder import with_parameters
from .compiler import CompileContext, compile_ruleset, registry_context, settle_conflicts
from ..errors import ConfigError, InputError, Problem, kind_of, type_name
from ..limits import max_rules_bytes, read_at_most
from .model import RuleSet
from ..plugins.manager import registry
from ..resources import SHORT_NAMES, bundled_rules, preset_names
from ..store import Store, open_store
from .schema import extended_schema, rule_schema, schema_problems
from .yamlsource import entries, load_yaml

__all__ = ["load_rules", "parse_rules", "check_rules", "read_source", "raw_rules"]


def load_rules(source: str | os.PathLike, *, keep: int | None = None,
               exclude_tools: Sequence[str] | None = None, store: Store | None = None) -> RuleSet:
    """A RuleSet from a path, ``default``, ``preset:NAME``, or YAML text.

    ``keep`` and ``exclude_tools``, as LangChain's ``ClearToolUsesEdit`` takes them: how many
    recent items the rules keep (the rules' one window of recent items moved), and tools whose
    results are never cleared (:mod:`rules_compact.language.builder`); the result is validated
    like a file.  ``store``: where ``save: true`` saves, over the file's ``store:`` key
    (:func:`rules_compact.store.open_store`).  Raises ConfigError (``.problems``) for an invalid rule file or parameter,
    InputError for one that cannot be read (missing, a folder, no such preset) or a source that
    is no str or path."""
    text, file = read_source(source)
    if keep is not None or exclude_tools is not None:
        text, file = with_parameters(text, file, keep, exclude_tools)
    return parse_rules(text, file, store=store)


def read_source(source: str | os.PathLike) -> tuple[str, str]:
    if not isinstance(source, (str, os.PathLike)):
        raise InputError(f"rules must be a path, 'default', 'preset:NAME' or rule-file text, got {type_name(source)}")
    if isinstance(source, str) and ("\n" in source or source.lstrip().startswith("{")):
        return source, "<string>"
    path = bundled_rules(source) if isinstance(source, str) else None
    if path is not None and not path.is_file():
        raise InputError(f"{source}: no such preset; available: " + ", ".join(
            [*SHORT_NAMES] + [f"preset:{n}" for n in preset_names()]))
    path = Path(path or source)
    if path.name in preset_names() and not path.exists():
        raise InputError(f"{path}: no such rule file; the preset is preset:{path.name}")
    limit = max_rules_bytes()
    try:
        if path.is_dir():
            raise InputError(f"{path}: is a directory, not a rule file")
        with open(path, "rb") as fh:  # at most limit + 1 bytes: /dev/zero has no size to check first
            data = read_at_most(fh, limit + 1)
            size = os.fstat(fh.fileno()).st_size
    except (OSError, ValueError) as exc:  # ValueError: a NUL in the path
        raise InputError(f"{path}: cannot read rule file: {getattr(exc, 'strerror', None) or exc}") from None
    if len(data) > limit:
        what = f"is {size} bytes, over the limit of {limit}" if size > limit else f"is over the limit of {limit} bytes"
        raise ConfigError([Problem(str(path), 1, 1, f"rule file {what} (RULES_COMPACT_MAX_RULES_BYTES)")])
    return _decoded(data, str(path)), str(path)


def _decoded(data: bytes, file: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError([Problem(file, 1, 1, f"not UTF-8 text (bad byte at offset {exc.start})")]) from None


@dataclass(frozen=True)
class Layer:
    """One validated rule file of an ``extends`` chain, with its compile context."""

    data: dict
    ctx: CompileContext


#: A URL (``https://...``, ``file:///...``) where ``extends`` takes a path.
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]+://")  # two letters at least: C://x is a path

#: How a rule file's ``extends`` target is read: a source (a path, ``default``, ``preset:NAME``)
#: to its text and file name.
Reader = Callable[[str], "tuple[str, str]"]


def parse_rules(text: str, file: str = "<string>", *, read: Reader | None = None,
                store: Store | None = None) -> RuleSet:
    """Parse, validate and compile rule-file text (and the files it extends, read by ``read``:
    from disk and the bundled rules by default; :mod:`rules_compact.batch` passes the texts it
    shipped to a worker); ``store`` as for :func:`load_rules`."""
    if not isinstance(text, str) or not isinstance(file, str):
        wrong = ("text", text) if not isinstance(text, str) else ("file", file)
        raise InputError(f"parse_rules takes the rule file's {wrong[0]} as a str, got {type_name(wrong[1])}"
                         + ("; decode it, or pass its path to load_rules" if isinstance(text, bytes) else ""))
    reg = registry()
    layers = _chain(text, file, reg, read or read_source)
    child = layers[-1]
    data, entries = merge_layers(layers)
    opened = open_store(store if store is not None else data.get("store"),
                        Path(file).parent if file != "<string>" else None, plugin=reg.store)
    for layer in layers:
        layer.ctx.store = opened
    settle_conflicts(child.ctx, data, reg.conflicts)
    ruleset = compile_ruleset(data, child.ctx, file, reg.tools, entries)
    problems = [p for layer in layers for p in layer.ctx.problems]
    if problems:
        raise ConfigError(problems)
    return replace(ruleset, files=tuple(layer.ctx.file for layer in layers if layer.ctx.file != "<string>"))


def raw_rules(text: str, file: str = "<string>") -> list[dict]:
    """The rules of a valid rule file as written, after ``extends``, in the order they run
    (what lints read beside the compiled rules)."""
    return [raw for raw, _, _ in merge_layers(_chain(text, file, registry(), read_source))[1]]


def _layer(text: str, file: str, reg) -> Layer:
    limit = max_rules_bytes()
    if len(text) > limit or len(text.encode("utf-8", "surrogatepass")) > limit:
        raise ConfigError([Problem(file, 1, 1, f"rule file is over the limit of {limit} bytes "
                                   "(RULES_COMPACT_MAX_RULES_BYTES)")])
    data, marks, key_marks, problems = load_yaml(text, file)
    if problems:
        raise ConfigError(problems)
    if data is None:
        raise ConfigError([Problem(file, 1, 1, "empty rule file; expected a mapping with version, name and rules")])
    if not isinstance(data, dict):
        raise ConfigError([Problem(file, 1, 1, f"a rule file must be a mapping, got {kind_of(data)}")])
    problems = schema_problems(data, file, marks, key_marks, extended_schema(rule_schema(), reg))
    ctx = registry_context(file, marks, reg)
    if problems:
        check_beside_schema(data, ctx)
        raise ConfigError(problems + ctx.problems)
    return Layer(data, ctx)


def check_beside_schema(data: dict, ctx: CompileContext) -> None:
    """What is checked before the schema errors are fixed, so that they all come in one run:
    duplicate rule names and invalid regexes (the other checks need valid data)."""
    rules = data.get("rules")
    seen: set[str] = set()
    for i, raw in enumerate(rules if isinstance(rules, list) else []):
        name = raw.get("name") if isinstance(raw, dict) else None
        if not isinstance(name, str):  # a name that is no string is the schema's to report
            continue
        if name in seen:
            ctx.problem(f"rules[{i}].name", f"duplicate rule name {name!r}")
        seen.add(name)
    for path, key, value in entries(data, ""):
        if key == "regex" and isinstance(value, str):
            ctx.regex(value, path)
        elif key == "keep_patterns" and isinstance(value, list):
            for j, pattern in enumerate(value):
                if isinstance(pattern, str):
                    ctx.regex(pattern, f"{path}[{j}]")



def _chain(text: str, file: str, reg, read: Reader) -> list[Layer]:
    """The layers of an ``extends`` chain, the most basic first (walked in a loop: a chain may be
    longer than Python's recursion limit)."""
    layers: list[Layer] = []
    seen: set[str] = set()
    while True:
        layer = _layer(text, file, reg)
        layers.append(layer)
        parent = layer.data.get("extends")
        if parent is None:
            return layers[::-1]
        if _URL.match(parent):
            line, col = layer.ctx.locate("extends")
            raise ConfigError([Problem(file, line, col, f"cannot extend {parent!r}: URLs are not supported; give a "
                                       "path, 'default' or 'preset:NAME'", "extends")])
        base = Path(file).parent if file != "<string>" else Path.cwd()
        source = parent if bundled_rules(parent) is not None or Path(parent).is_absolute() else str(base / parent)
        key = source if bundled_rules(source) is not None else os.path.realpath(source)
        if key in seen or key == (os.path.realpath(file) if file != "<string>" else file):
            line, col = layer.ctx.locate("extends")
            raise ConfigError([Problem(file, line, col, f"extends {parent!r} makes a cycle", "extends")])
        try:
            text, file = read(source)
        except InputError as exc:
            line, col = layer.ctx.locate("extends")
            raise ConfigError([Problem(file, line, col, f"cannot extend {parent!r}: {exc}", "extends")]) from None
        seen.add(key)


MERGED_KEY_BY_KEY = ("defaults", "budget", "tools")


def merge_layers(layers: list[Layer]) -> tuple[dict, list[tuple[dict, CompileContext, str]]]:
    """Top-level data and ``(rule, its file's context, its path)`` entries after ``extends``."""
    data: dict[str, Any] = {}
    entries: list[tuple[dict, CompileContext, str]] = []
    for layer in layers:
        for key, value in layer.data.items():
            if key in ("rules", "extends", "remove_rules"):
                continue
            data[key] = {**data.get(key, {}), **value} if key in MERGED_KEY_BY_KEY else value
        inherited = [raw["name"] for raw, _, _ in entries]
        removed = set(layer.data.get("remove_rules", []))
        for i, name in enumerate(layer.data.get("remove_rules", [])):
            if name not in inherited:
                layer.ctx.problem(f"remove_rules[{i}]", f"no inherited rule named {name!r}; inherited: "
                                  + (", ".join(inherited) or "none"))
        entries = [e for e in entries if e[0]["name"] not in removed]
        names = [raw["name"] for raw, _, _ in entries]  # kept in step with entries
        present = Counter(names)
        own: set[str] = set()
        for i, raw in enumerate(layer.data.get("rules", [])):
            entry, name = (raw, layer.ctx, f"rules[{i}]"), raw["name"]
            anchor = raw.get("before") or raw.get("after")
            if name in own:  # still compiled, so that all its problems are reported
                layer.ctx.problem(f"rules[{i}].name", f"duplicate rule name {name!r}")
                anchor = None
            elif name in present and anchor is None:
                entries[names.index(name)] = entry
                own.add(name)
                continue
            elif name in present:
                at = names.index(name)
                del entries[at], names[at]
                present[name] -= 1
                if not present[name]:
                    del present[name]
            own.add(name)
            if anchor is not None and anchor not in present:
                where = "before" if "before" in raw else "after"
                layer.ctx.problem(f"rules[{i}].{where}", f"no inherited rule named {anchor!r}; inherited: "
                                  + (", ".join(names) or "none"))
                continue
            at = len(entries) if anchor is None else names.index(anchor) + (1 if "after" in raw else 0)
            entries.insert(at, entry)
            names.insert(at, name)
            present[name] += 1
    return data, entries


def check_rules(source: str | os.PathLike) -> list[Problem]:
    """Every problem of one rule file; empty when it is valid."""
    try:
        load_rules(source)
    except ConfigError as exc:
        return exc.problems
    return []
