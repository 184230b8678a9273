"""Placeholder and marker templates: ``{variable}`` fields, checked at load time."""

from __future__ import annotations

import re
import string
from dataclasses import dataclass
from typing import Any

from ..formats.base import decode_args
from ..kinds.estimators import utf8_len
from ..limits import MAX_FORMAT_WIDTH, MAX_TEMPLATE_CHARS
from .regexes import compile_regex, escape

__all__ = ["Template", "TemplateError", "RESULT_VARIABLES", "SAVED_VARIABLES", "Variables", "result_variables"]

RESULT_VARIABLES = ("tool_name", "tool_call_id", "chars", "bytes", "tokens", "lines", "args", "names")
SAVED_VARIABLES = ("saved", "saved_lines")  # a placeholder that saves what it clears (save: true)
VARIABLE_LENGTH = frozenset({"args", "names"})  # fields that can make a placeholder larger than its result
SAMPLE = {"tool_name": "Read", "tool_call_id": "call_1", "chars": 1, "bytes": 1, "tokens": 1, "lines": 1,
          "omitted": 1, "summary": "s", "args": "src/x.py", "names": "src/x.py", "saved": "0" * 64,
          "saved_lines": 1}
ARGS_CHARS = 120  # {args}: at most this many characters
NAMES = 8  # {names}: at most this many names
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_./-]{7,}")  # a path or identifier, as reference recall counts them


class TemplateError(ValueError):
    """A template names an unknown variable or is malformed."""


@dataclass(frozen=True)
class Template:
    """A ``str.format`` template and the regex that recognises its output."""

    text: str
    variables: tuple[str, ...]
    pattern: object  # an RE2 pattern matching any output of the template
    prefix: str = ""  # the literal text every output starts with
    suffix: str = ""  # and ends with

    @classmethod
    def compile(cls, text: str, allowed: tuple[str, ...]) -> Template:
        if len(text) > MAX_TEMPLATE_CHARS:
            raise TemplateError(f"template of {len(text)} characters; at most {MAX_TEMPLATE_CHARS} are allowed")
        regex, names = [], []
        try:
            parsed = list(string.Formatter().parse(text))
        except ValueError as exc:
            raise TemplateError(f"malformed template {text!r}: {exc}; write literal braces as {{{{ and }}}}") from None
        for literal, field, spec, conversion in parsed:
            regex.append(escape(literal))
            if field is None:
                continue
            if field not in allowed:
                raise TemplateError(f"unknown template variable {{{field}}} in {text!r}; allowed: "
                                    + ", ".join(f"{{{a}}}" for a in allowed))
            if conversion:
                raise TemplateError(f"conversion !{conversion} is not supported in {text!r}")
            _check_spec(field, spec, text)
            names.append(field)
            regex.append(".*?")
        literals = [literal for literal, _, _, _ in parsed]
        fields = [field for _, field, _, _ in parsed]
        prefix = literals[0] if literals else ""
        suffix = "" if not names else (literals[-1] if fields[-1] is None else "")
        template = cls(text, tuple(names), compile_regex("".join(regex), dot_all=True),
                       text.replace("{{", "{").replace("}}", "}") if not names else prefix, suffix)
        try:
            template.render(SAMPLE)
        except (ValueError, TypeError) as exc:
            raise TemplateError(f"bad format spec in {text!r}: {exc}") from None
        return template

    def render(self, values: dict[str, Any]) -> str:
        """The template's output; one string shared by every item when it has no fields."""
        return self.text.format_map(values) if self.variables else self.prefix

    def recognises(self, text: str, values: dict[str, Any]) -> bool:
        """Whether ``text`` is this template's output for an item with these ``values``:
        the same ``tool_name`` and ``tool_call_id``, any sizes."""
        if not self.matches_any(text):  # the common case, without compiling a pattern
            return False
        regex = []
        for literal, field, spec, _ in string.Formatter().parse(self.text):
            regex.append(escape(literal))
            if field in ("tool_name", "tool_call_id"):
                regex.append(escape(format(str(values[field]), spec or "")))
            elif field in ("chars", "bytes", "tokens", "lines", "omitted", "saved_lines"):
                regex.append(r"[0-9,._ ]*")
            elif field is not None:
                regex.append(".*?")
        return compile_regex("".join(regex), dot_all=True).fullmatch(text) is not None

    def matches_any(self, text: str) -> bool:
        """Whether ``text`` is an output of this template, whatever its variables."""
        if not text.startswith(self.prefix) or not text.endswith(self.suffix):
            return False
        return self.pattern.fullmatch(text) is not None


# [[fill]align][sign][z][#][0][width][grouping][.precision][type], Python's format mini-language
_SPEC = re.compile(r"(?:.?[<>=^])?[-+ ]?z?#?0?(?P<width>[0-9]*)[,_]?(?:\.(?P<precision>[0-9]+))?(?P<type>[a-zA-Z%]?)",
                   re.DOTALL)


def _check_spec(field: str, spec: str, text: str) -> None:
    """A field's format spec: no nested ``{fields}``, no type ``c``, width and precision at most
    MAX_FORMAT_WIDTH."""
    if "{" in spec or "}" in spec:
        raise TemplateError(f"{{{field}:{spec}}} in {text!r}: a format spec cannot hold a {{variable}}")
    match = _SPEC.fullmatch(spec)
    if match is None:
        return  # rendering the sample reports it
    if match["type"] == "c":  # a number as one character: over 0x10FFFF it crashes, a surrogate is invalid text
        raise TemplateError(f"format type 'c' of {{{field}:{spec}}} in {text!r} is not supported")
    for part in ("width", "precision"):
        if match[part] and int(match[part]) > MAX_FORMAT_WIDTH:
            raise TemplateError(f"{part} {int(match[part])} of {{{field}:{spec}}} in {text!r} is over the limit "
                                f"of {MAX_FORMAT_WIDTH}")


def result_variables(text: str, tool_name: str | None, tool_call_id: str | None, tokens: int) -> dict[str, Any]:
    """The variables a placeholder can use, measured on the text it replaces."""
    return {
        "tool_name": tool_name or "unknown",
        "tool_call_id": tool_call_id or "",
        "chars": len(text),
        "bytes": utf8_len(text),
        "tokens": tokens,
        "lines": len(text.splitlines()),
    }


class Variables(dict):
    """The variables of a placeholder, measured on the text it replaces (``args`` on its
    ``call``; ``saved`` and ``saved_lines`` by saving it with ``save``, a store's) when first read."""

    __slots__ = ("_text", "_estimate", "_call", "_save")

    def __init__(self, text: str, tool_name: str | None, tool_call_id: str | None, estimate, call: Any = None,
                 save: Any = None):
        dict.__init__(self, tool_name=tool_name or "unknown", tool_call_id=tool_call_id or "")
        self._text = text
        self._estimate = estimate
        self._call = call
        self._save = save

    def __missing__(self, key: str):
        text = self._text
        if key == "chars":
            value = len(text)
        elif key == "bytes":
            value = utf8_len(text)
        elif key == "tokens":
            value = self._estimate(text)
        elif key == "lines":
            value = len(text.splitlines())
        elif key == "args":
            value = args_text(decode_args(self._call))
        elif key == "names":
            value = " ".join(names_in(text, NAMES))
        elif key in SAVED_VARIABLES and self._save is not None:
            saved = self._save(text)
            self["saved"], self["saved_lines"] = saved.where, saved.lines
            return self[key]
        else:
            raise KeyError(key)
        self[key] = value
        return value


def args_text(args: Any) -> str:
    """A call's string arguments, whitespace collapsed, space-joined, at most ARGS_CHARS characters
    (a path, a command, a pattern: what the agent would pass to ask again)."""
    values = args.values() if isinstance(args, dict) else [args] if isinstance(args, str) else ()
    text = " ".join(" ".join(v.split()) for v in values if isinstance(v, str) and v.strip())
    return text if len(text) <= ARGS_CHARS else text[:ARGS_CHARS - 3] + "..."


def names_in(text: str, count: int) -> list[str]:
    """The first ``count`` distinct paths and dotted or underscored identifiers of a text."""
    names: list[str] = []
    for found in NAME.finditer(text):
        name = found.group().rstrip(".")
        if ("/" in name or "_" in name or "." in name) and name not in names:
            names.append(name)
            if len(names) == count:
                break
    return names
