"""Load rule files: safe YAML, JSON Schema validation, then compilation, all errors located."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .compiler import CompileContext, compile_ruleset, registry_context, settle_conflicts
from ..errors import ConfigError, InputError, Problem, kind_of
from .model import RuleSet
from ..plugins.manager import registry
from ..resources import bundled_rules, preset_names
from .schema import extended_schema, rule_schema, schema_problems
from .yamlsource import Marks, join_path, load_yaml, locate

__all__ = ["load_rules", "parse_rules", "check_rules", "MAX_RULES_BYTES"]

MAX_RULES_BYTES = int(os.environ.get("RULES_COMPACT_MAX_RULES_BYTES", 1024 * 1024))


def load_rules(source: str | os.PathLike) -> RuleSet:
    """A RuleSet from a path, ``default``, ``preset:NAME``, or YAML text; raises ConfigError."""
    text, file = read_source(source)
    return parse_rules(text, file)


def read_source(source: str | os.PathLike) -> tuple[str, str]:
    if isinstance(source, str) and ("\n" in source or source.lstrip().startswith("{")):
        return source, "<string>"
    path = bundled_rules(source) if isinstance(source, str) else None
    if path is not None and not path.is_file():
        raise InputError(f"{source}: no such preset; available: default, "
                         + ", ".join(f"preset:{n}" for n in preset_names()))
    path = Path(path or source)
    try:
        size = path.stat().st_size
        if path.is_dir():
            raise InputError(f"{path}: is a directory, not a rule file")
        if size > MAX_RULES_BYTES:
            raise ConfigError([Problem(str(path), 1, 1, f"rule file is {size} bytes, over the limit of "
                                       f"{MAX_RULES_BYTES} (RULES_COMPACT_MAX_RULES_BYTES)")])
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(f"{path}: cannot read rule file: {exc.strerror or exc}") from None
    try:
        return data.decode("utf-8"), str(path)
    except UnicodeDecodeError as exc:
        raise ConfigError([Problem(str(path), 1, 1, f"not UTF-8 text (bad byte at offset {exc.start})")]) from None


@dataclass(frozen=True)
class Layer:
    """One validated rule file of an ``extends`` chain, with its compile context."""

    data: dict
    ctx: CompileContext


def parse_rules(text: str, file: str = "<string>") -> RuleSet:
    """Parse, validate and compile rule-file text (and the files it extends)."""
    reg = registry()
    layers = _chain(text, file, reg, ())
    child = layers[-1]
    data, entries = merge_layers(layers)
    settle_conflicts(child.ctx, data, reg.conflicts)
    ruleset = compile_ruleset(data, child.ctx, file, reg.tools, entries)
    problems = [p for layer in layers for p in layer.ctx.problems]
    if problems:
        raise ConfigError(problems)
    return ruleset


def _layer(text: str, file: str, reg) -> Layer:
    if len(text.encode("utf-8")) > MAX_RULES_BYTES:
        raise ConfigError([Problem(file, 1, 1, f"rule file is over the limit of {MAX_RULES_BYTES} bytes")])
    data, marks, key_marks, problems = load_yaml(text, file)
    if problems:
        raise ConfigError(problems)
    if data is None:
        raise ConfigError([Problem(file, 1, 1, "empty rule file; expected a mapping with version, name and rules")])
    if not isinstance(data, dict):
        raise ConfigError([Problem(file, 1, 1, f"a rule file must be a mapping, got {kind_of(data)}")])
    problems = schema_problems(data, file, marks, key_marks, extended_schema(rule_schema(), reg))
    if problems:
        raise ConfigError(problems)
    return Layer(data, registry_context(file, marks, reg))


def _chain(text: str, file: str, reg, seen: tuple[str, ...]) -> list[Layer]:
    """The layers of an ``extends`` chain, the most basic first."""
    layer = _layer(text, file, reg)
    parent = layer.data.get("extends")
    if parent is None:
        return [layer]
    base = Path(file).parent if file != "<string>" else Path.cwd()
    source = parent if bundled_rules(parent) is not None or Path(parent).is_absolute() else str(base / parent)
    key = source if bundled_rules(source) is not None else os.path.realpath(source)
    if key in seen or key == (os.path.realpath(file) if file != "<string>" else file):
        line, col = layer.ctx.locate("extends")
        raise ConfigError([Problem(file, line, col, f"extends {parent!r} makes a cycle", "extends")])
    try:
        parent_text, parent_file = read_source(source)
    except InputError as exc:
        line, col = layer.ctx.locate("extends")
        raise ConfigError([Problem(file, line, col, f"cannot extend {parent!r}: {exc}", "extends")]) from None
    return _chain(parent_text, parent_file, reg, seen + (key,)) + [layer]


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
        names = [raw["name"] for raw, _, _ in entries]
        for i, name in enumerate(layer.data.get("remove_rules", [])):
            if name not in names:
                layer.ctx.problem(f"remove_rules[{i}]", f"no inherited rule named {name!r}; inherited: "
                                  + (", ".join(names) or "none"))
        entries = [e for e in entries if e[0]["name"] not in layer.data.get("remove_rules", [])]
        own: set[str] = set()
        for i, raw in enumerate(layer.data.get("rules", [])):
            entry = (raw, layer.ctx, f"rules[{i}]")
            if raw["name"] in own:  # still compiled, so that all its problems are reported
                layer.ctx.problem(f"rules[{i}].name", f"duplicate rule name {raw['name']!r}")
                entries.append(entry)
                continue
            own.add(raw["name"])
            names = [r["name"] for r, _, _ in entries]
            anchor = raw.get("before") or raw.get("after")
            if raw["name"] in names and anchor is None:
                entries[names.index(raw["name"])] = entry
                continue
            if raw["name"] in names:
                del entries[names.index(raw["name"])]
                names.remove(raw["name"])
            if anchor is None:
                entries.append(entry)
            elif anchor not in names:
                where = "before" if "before" in raw else "after"
                layer.ctx.problem(f"rules[{i}].{where}", f"no inherited rule named {anchor!r}; inherited: "
                                  + (", ".join(names) or "none"))
            else:
                entries.insert(names.index(anchor) + (1 if "after" in raw else 0), entry)
    return data, entries


def check_rules(source: str | os.PathLike) -> list[Problem]:
    """Every problem of one rule file; empty when it is valid."""
    try:
        load_rules(source)
    except ConfigError as exc:
        return exc.problems
    return []
