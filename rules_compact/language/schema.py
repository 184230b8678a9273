"""The rule-file JSON Schema: the bundled file, its kind fragments made from the kinds, plugin
kinds added, and validation with located, readable problems.

``schemas/rules.schema.json`` is generated: the structure of a rule file is written there by
hand, the ``$defs.matcher`` properties and the action fragments come from the kinds (each
kind's ``schema`` and ``description``).  ``python -m rules_compact.language.schema`` rewrites
the file; ``--check`` exits 1 when it is out of date (a test runs it).
"""

from __future__ import annotations

import copy
import json
import sys
from functools import lru_cache
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError

from ..errors import Problem, kind_of
from ..kinds.actions import BUILTIN_ACTIONS
from ..kinds.estimators import ESTIMATORS
from ..kinds.matchers import BUILTIN_MATCHERS
from ..resources import data_path
from .yamlsource import Marks, join_path, locate

__all__ = ["rule_schema", "with_kinds", "extended_schema", "schema_problems", "main"]


@lru_cache(maxsize=None)
def rule_schema() -> dict:
    """The bundled rule-file schema (built-in kinds only).  Do not modify it: it is shared."""
    with open(data_path("schemas") / "rules.schema.json", encoding="utf-8") as fh:
        return json.load(fh)


def _fragment(kind, plugin: str | None) -> dict:
    fragment = copy.deepcopy(kind.schema) if kind.schema is not None else {}
    if kind.description and "description" not in fragment:
        fragment = {"description": kind.description, **fragment}
    if plugin is not None:
        fragment["x-rules-compact-plugin"] = plugin
    return fragment


def _accepts_null(fragment: dict, schema: dict) -> bool:
    """Whether an action's options schema accepts no options (``action: NAME``)."""
    try:
        defs = {**schema.get("$defs", {}), **fragment.get("$defs", {})}
        return Draft202012Validator({**fragment, "$defs": defs}).is_valid(None)
    except Exception:  # an unresolvable $ref: be safe, require the mapping form
        return False


def with_kinds(base: dict, matchers: dict, actions: dict, estimators: dict, owners: dict | None = None,
               replace: bool = False) -> dict:
    """``base`` with the kinds' fragments and the estimators' names: ``replace`` writes every
    kind's (the generated file); otherwise only kinds the schema lacks are added (plugins; an
    action whose schema accepts null may then be written as a bare name)."""
    owners = owners or {}
    schema = copy.deepcopy(base)
    matcher_props = schema["$defs"]["matcher"]["properties"]
    action = schema["$defs"]["action"]["anyOf"]
    action_props = action[1]["properties"]
    estimator = schema["properties"]["defaults"]["properties"]["estimator"]
    if replace:
        matcher_props.clear()
        action_props.clear()
        action[0]["enum"] = list(actions)
        estimator["enum"] = sorted(estimators)
    else:
        estimator["enum"] = estimator["enum"] + sorted(n for n in estimators if n not in estimator["enum"])
    for name, kind in matchers.items():
        if name not in matcher_props:
            matcher_props[name] = _fragment(kind, owners.get(("matcher", name)))
    added = []
    for name, kind in actions.items():
        if name not in action_props:
            action_props[name] = _fragment(kind, owners.get(("action", name)))
            added.append(name)
    if not replace:
        bare = [n for n in added if _accepts_null(action_props[n], schema) and n not in action[0]["enum"]]
        action[0]["enum"] = action[0]["enum"] + bare
    return schema


_extended: dict[tuple[int, int], tuple[dict, Any, dict]] = {}


def extended_schema(base: dict, reg) -> dict:
    """The rule-file schema with every plugin matcher's and action's options schema and every
    plugin estimator's name added (a kind with no schema accepts any options).  Do not modify
    the result: it is shared."""
    key = (id(base), id(reg))
    hit = _extended.get(key)
    if hit is not None and hit[0] is base and hit[1] is reg:
        return hit[2]
    known_m = base["$defs"]["matcher"]["properties"]
    known_a = base["$defs"]["action"]["anyOf"][1]["properties"]
    known_e = base["properties"]["defaults"]["properties"]["estimator"]["enum"]
    if all(n in known_m for n in reg.matchers) and all(n in known_a for n in reg.actions) and all(
            n in known_e for n in reg.estimators):
        schema = base
    else:
        schema = with_kinds(base, reg.matchers, reg.actions, reg.estimators, reg.owners)
    if len(_extended) > 16:
        _extended.clear()
    _extended[key] = (base, reg, schema)
    return schema


def generated() -> dict:
    """The bundled schema as the built-in kinds make it."""
    return with_kinds(rule_schema(), BUILTIN_MATCHERS, BUILTIN_ACTIONS, ESTIMATORS, replace=True)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    path = data_path("schemas") / "rules.schema.json"
    text = json.dumps(generated(), indent=2, ensure_ascii=False) + "\n"
    if "--check" in argv:
        if path.read_text(encoding="utf-8") != text:
            print(f"{path}: out of date; run python -m rules_compact.language.schema", file=sys.stderr)
            return 1
        return 0
    path.write_text(text, encoding="utf-8")
    rule_schema.cache_clear()
    return 0


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
    if kind in ("pattern", "not") and "description" in error.schema:  # a condition that says what it wants
        return f"{inst!r}: {error.schema['description']}", None
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


if __name__ == "__main__":
    sys.exit(main())
