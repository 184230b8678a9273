"""Load rule files: safe YAML, JSON Schema validation, then compilation, all errors located."""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError

from .compiler import CompileContext, compile_ruleset, registry_context, settle_conflicts
from .errors import ConfigError, InputError, Problem, kind_of, type_name
from .limits import max_rules_bytes
from .model import RuleSet
from .plugins import extended_schema, registry
from .resources import bundled_rules, preset_names, rule_schema
from .yamlsource import Marks, join_path, load_yaml, locate

__all__ = ["load_rules", "parse_rules", "check_rules"]


def load_rules(source: str | os.PathLike) -> RuleSet:
    """A RuleSet from a path, ``default``, ``preset:NAME``, or YAML text; raises ConfigError."""
    text, file = read_source(source)
    return parse_rules(text, file)


def read_source(source: str | os.PathLike) -> tuple[str, str]:
    if not isinstance(source, (str, os.PathLike)):
        raise InputError(f"rules must be a path, 'default', 'preset:NAME' or rule-file text, got {type_name(source)}")
    if isinstance(source, str) and ("\n" in source or source.lstrip().startswith("{")):
        return source, "<string>"
    path = bundled_rules(source) if isinstance(source, str) else None
    if path is not None and not path.is_file():
        raise InputError(f"{source}: no such preset; available: default, "
                         + ", ".join(f"preset:{n}" for n in preset_names()))
    path = Path(path or source)
    limit = max_rules_bytes()
    try:
        if path.is_dir():
            raise InputError(f"{path}: is a directory, not a rule file")
        with open(path, "rb") as fh:  # at most limit + 1 bytes: /dev/zero has no size to check first
            data = fh.read(limit + 1)
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


def parse_rules(text: str, file: str = "<string>") -> RuleSet:
    """Parse, validate and compile rule-file text (and the files it extends)."""
    if not isinstance(text, str) or not isinstance(file, str):
        wrong = ("text", text) if not isinstance(text, str) else ("file", file)
        raise InputError(f"parse_rules takes the rule file's {wrong[0]} as a str, got {type_name(wrong[1])}"
                         + ("; decode it, or pass its path to load_rules" if isinstance(text, bytes) else ""))
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


def _pick(error: ValidationError) -> ValidationError:
    """Descend into anyOf/oneOf to the branch error that says most."""
    while error.context and not _one_of_keys(error):
        depth = len(error.absolute_path)
        pool = [e for e in error.context
                if not (e.validator in ("type", "enum", "const") and len(e.absolute_path) == depth)]
        error = max(pool or error.context, key=lambda e: len(e.absolute_path))
    return error


def _one_of_keys(error: ValidationError) -> list[str]:
    """The keys of an ``anyOf`` whose branches each require one key (at least one of them), else []."""
    branches = error.validator_value if error.validator == "anyOf" else []
    if not branches or any(set(b) != {"required"} or len(b["required"]) != 1 for b in branches):
        return []
    return [b["required"][0] for b in branches]


def _describe(error: ValidationError) -> tuple[str, str | None]:
    """A message saying what was expected and what was found, and an offending key, if any."""
    inst, kind = error.instance, error.validator
    if _one_of_keys(error):
        name = error.absolute_path[-1] if error.absolute_path else "this mapping"
        return f"{name} needs at least one of {', '.join(_one_of_keys(error))}", None
    schema_path = list(error.relative_schema_path)
    if "dependentSchemas" in schema_path and kind == "enum" and error.absolute_path:
        needer, allowed = schema_path[schema_path.index("dependentSchemas") + 1], error.validator_value
        field = error.absolute_path[-1]
        return (f"{needer!r} needs {field} {', '.join(allowed[:-1])} or {allowed[-1]}, not {inst!r}",
                f"../{needer}")
    if kind == "additionalProperties" and isinstance(inst, dict):
        allowed = sorted(error.schema.get("properties", {}))
        extra = sorted(str(k) for k in inst if k not in allowed)
        key = extra[0] if extra else None
        return f"unknown key {key!r}; allowed: {', '.join(allowed)}", key
    if kind == "enum":
        return f"{inst!r} is not allowed; expected one of: {', '.join(map(str, error.validator_value))}", None
    if kind == "const":
        return f"expected {error.validator_value!r}, got {inst!r}", None
    if kind == "type":
        wanted = error.validator_value
        wanted = " or ".join(wanted) if isinstance(wanted, list) else wanted
        return f"expected {wanted}, got {kind_of(inst)} {inst!r}", None
    if kind == "minimum":
        return f"expected a number >= {error.validator_value}, got {inst!r}", None
    if kind == "maxProperties" and isinstance(inst, dict):
        return (f"expected at most {error.validator_value} key(s) here, got {len(inst)}: "
                f"{', '.join(map(str, inst))}"), None
    if kind == "not" and isinstance(error.validator_value, dict) and "required" in error.validator_value:
        return f"give at most one of: {', '.join(error.validator_value['required'])}", None
    if kind == "minProperties":
        return "expected at least one key here", None
    if kind == "minItems":
        return f"expected at least {error.validator_value} item(s), got {len(inst)}", None
    if kind == "minLength":
        return "expected a non-empty string", None
    if kind == "maxLength":
        return f"expected at most {error.validator_value} characters, got {len(inst)}", None
    return error.message, None


def schema_problems(data: Any, file: str, marks: Marks, key_marks: Marks, schema: dict | None = None) -> list[Problem]:
    validator = Draft202012Validator(schema or rule_schema())
    problems = set()
    for top in validator.iter_errors(data):
        error = _pick(top)
        path = ""
        for part in error.absolute_path:
            path = join_path(path, part)
        if error.validator == "required":
            line, col = locate(marks, path)
            problems.update(Problem(file, line, col, f"missing required key {k!r}", path)
                            for k in error.validator_value if k not in error.instance)
            continue
        message, key = _describe(error)
        if key is not None and key.startswith("../"):  # a sibling of the value: the key that needs it
            path = join_path(path[:max(path.rfind("."), path.rfind("["), 0)], key[3:])
            line, col = locate(marks, path)
        elif key is not None:
            path = join_path(path, key)
            line, col = key_marks.get(path) or locate(marks, path)
        else:
            line, col = locate(marks, path)
        problems.add(Problem(file, line, col, message, path))
    return sorted(problems)
