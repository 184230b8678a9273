"""``validate``: check rule files against the schema."""

from __future__ import annotations

from ..language.loader import check_rules
from .inputs import plugin_failures
from .output import INVALID_RULES, OK

__all__ = ["register"]


def register(add) -> None:
    p = add("validate", help="check rule files against the schema")
    p.add_argument("rules", nargs="+", metavar="RULES")
    p.set_defaults(func=cmd_validate)


def cmd_validate(args) -> int:
    plugin_failures(args)
    failed = False
    for path in args.rules:
        problems = check_rules(path)
        for problem in problems:
            print(problem)
        if not problems:
            print(f"{path}: ok")
        failed = failed or bool(problems)
    return INVALID_RULES if failed else OK
