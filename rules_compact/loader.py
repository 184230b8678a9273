"""Load rule files: safe YAML, JSON Schema validation, then compilation, all errors located."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError

from .compiler import compile_ruleset, registry_context, settle_conflicts
from .errors import ConfigError, InputError, Problem
from .model import RuleSet
from .plugins import extended_schema, registry
from .resources import bundled_rules, preset_names, rule_schema
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
        raise InputError(f"{source}: no such preset; available: "
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


def parse_rules(text: str, file: str = "<string>") -> RuleSet:
    """Parse, validate and compile rule-file text."""
    if len(text.encode("utf-8")) > MAX_RULES_BYTES:
        raise ConfigError([Problem(file, 1, 1, f"rule file is over the limit of {MAX_RULES_BYTES} bytes")])
    data, marks, key_marks, problems = load_yaml(text, file)
    if problems:
        raise ConfigError(problems)
    if data is None:
        raise ConfigError([Problem(file, 1, 1, "empty rule file; expected a mapping with version, name and rules")])
    if not isinstance(data, dict):
        raise ConfigError([Problem(file, 1, 1, f"a rule file must be a mapping, got {_kind(data)}")])
    reg = registry()
    problems = schema_problems(data, file, marks, key_marks, extended_schema(rule_schema(), reg))
    if problems:
        raise ConfigError(problems)
    ctx = registry_context(file, marks, reg)
    settle_conflicts(ctx, data, reg.conflicts)
    ruleset = compile_ruleset(data, ctx, file, reg.tools)
    if ctx.problems:
        raise ConfigError(ctx.problems)
    return ruleset


def check_rules(source: str | os.PathLike) -> list[Problem]:
    """Every problem of one rule file; empty when it is valid."""
    try:
        load_rules(source)
    except ConfigError as exc:
        return exc.problems
    return []


def _kind(value: Any) -> str:
    return {list: "a list", str: "a string", int: "a number", float: "a number", bool: "a boolean",
            dict: "a mapping", type(None): "null"}.get(type(value), type(value).__name__)


def _pick(error: ValidationError) -> ValidationError:
    """Descend into anyOf/oneOf to the branch error that says most."""
    while error.context:
        depth = len(error.absolute_path)
        pool = [e for e in error.context
                if not (e.validator in ("type", "enum", "const") and len(e.absolute_path) == depth)]
        error = max(pool or error.context, key=lambda e: len(e.absolute_path))
    return error


def _describe(error: ValidationError) -> tuple[str, str | None]:
    """A message saying what was expected and what was found, and an offending key, if any."""
    inst, kind = error.instance, error.validator
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
        return f"expected {wanted}, got {_kind(inst)} {inst!r}", None
    if kind == "minimum":
        return f"expected a number >= {error.validator_value}, got {inst!r}", None
    if kind == "maxProperties" and isinstance(inst, dict):
        return (f"expected at most {error.validator_value} key(s) here, got {len(inst)}: "
                f"{', '.join(map(str, inst))}"), None
    if kind == "minProperties":
        return "expected at least one key here", None
    if kind == "minItems":
        return f"expected at least {error.validator_value} item(s), got {len(inst)}", None
    if kind == "minLength":
        return "expected a non-empty string", None
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
        if key is not None:
            path = join_path(path, key)
            line, col = key_marks.get(path) or locate(marks, path)
        else:
            line, col = locate(marks, path)
        problems.add(Problem(file, line, col, message, path))
    return sorted(problems)
