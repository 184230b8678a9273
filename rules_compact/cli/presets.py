"""``presets``: every bundled preset, the source it reproduces and its key parameters."""

from __future__ import annotations

import re

from ..language.lints import bounded_matchers, reads_tool_metadata
from ..language.loader import load_rules, read_source
from ..language.yamlsource import load_yaml
from ..resources import preset_names
from .output import OK, count, print_json_line, wrap

__all__ = ["register", "preset_summary"]

OPERATORS = {"gt": ">", "gte": "≥", "lt": "<", "lte": "≤"}
SOURCE_CHARS = 110


def register(add) -> None:
    p = add("presets", help="list the bundled presets: what each reproduces and its key parameters")
    p.add_argument("--json", action="store_true", help="one JSON object per preset (JSON Lines; docs/json.md)")
    p.set_defaults(func=cmd_presets)


def _source(description: str) -> str:
    """The description's opening clause (up to its first parenthesis, brace or colon), shortened."""
    text = " ".join(description.split())
    head = re.split(r" \(| \{|: ", text, maxsplit=1)[0].rstrip(",;.")
    if len(head) > SOURCE_CHARS:
        head = head[:SOURCE_CHARS].rsplit(" ", 1)[0] + " ..."
    return head


def _bounds(data: dict) -> list[str]:
    """``age tool_results < 10``, ``size bytes > 800``: each distinct bound in the rules, in order."""
    out: list[str] = []
    for i, raw in enumerate(data.get("rules") or []):
        for _, kind, options in bounded_matchers(raw.get("match"), f"rules[{i}].match"):
            unit = options.get("unit", "chars") if kind == "size" else options.get("unit")
            for key, op in OPERATORS.items():
                if key in options:
                    text = f"{kind}{' ' + unit if unit else ''} {op} {options[key]:,}"
                    if text not in out:
                        out.append(text)
    return out


def preset_summary(name: str) -> dict:
    """What ``presets`` shows of one preset: its source and key parameters."""
    ruleset = load_rules(f"preset:{name}")
    text, file = read_source(f"preset:{name}")
    data = load_yaml(text, file)[0]
    parameters = [f"trigger: {ruleset.trigger.describe()}"] if ruleset.trigger.describe() != "always" else []
    if ruleset.step is not None:
        parameters.append(f"step: every {ruleset.step.every:,} {ruleset.step.unit}")
    budget = {k: v for k, v in (data.get("budget") or {}).items()}
    parameters += [f"{k}: {v:,}" if isinstance(v, int) else f"{k}: {v}" for k, v in budget.items()]
    parameters += _bounds(data)
    if ruleset.estimator_name != "chars4":
        parameters.append(f"estimator: {ruleset.estimator_name}")
    protected = [spec.pattern for spec in ruleset.tools.exact.values() if not spec.compact]
    protected += [spec.pattern for spec in ruleset.tools.globs if not spec.compact]
    if protected and reads_tool_metadata(ruleset):  # only what a rule really keeps
        parameters.append("kept tools: " + ", ".join(protected))
    return {"preset": f"preset:{name}", "name": ruleset.name, "source": _source(ruleset.description),
            "rules": len(ruleset.rules), "parameters": parameters}


def cmd_presets(args) -> int:
    summaries = [preset_summary(name) for name in preset_names()]
    if args.json:
        for summary in summaries:
            print_json_line(summary)
        return OK
    lines = []
    for s in summaries:
        lines += [wrap(f"{s['preset']}: {s['source']}"),
                  wrap(f"    {count(s['rules'], 'rule')}; " + "; ".join(s["parameters"] or ["no parameters"]), "      "),
                  ""]
    print("\n".join(lines[:-1]))
    return OK
