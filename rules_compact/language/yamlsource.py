"""Safe YAML loading that keeps every node's position and rejects duplicate keys."""

from __future__ import annotations

import math
import re
from typing import Any, Iterator

import yaml

from ..errors import Problem
from ..limits import MAX_ALIAS_NODES, MAX_DEPTH

__all__ = ["load_yaml", "join_path", "entries", "locate", "Marks"]

MAP_TAG = "tag:yaml.org,2002:map"
SEQ_TAG = "tag:yaml.org,2002:seq"
MERGE_TAG = "tag:yaml.org,2002:merge"

Marks = dict[str, tuple[int, int]]


def join_path(path: str, key: Any) -> str:
    """``rules[0].match`` style paths, as shown in error messages."""
    if isinstance(key, int):
        return f"{path}[{key}]"
    key = str(key)
    if key.replace("_", "").replace("-", "").isalnum():
        return f"{path}.{key}" if path else key
    return f"{path}[{key!r}]"


def entries(value: Any, path: str) -> Iterator[tuple[str, Any, Any]]:
    """``(path, key, value)`` of every mapping entry at any depth of loaded YAML, outer first."""
    if isinstance(value, list):
        for i, sub in enumerate(value):
            yield from entries(sub, join_path(path, i))
    elif isinstance(value, dict):
        for key, sub in value.items():
            sub_path = join_path(path, key)
            yield sub_path, key, sub
            yield from entries(sub, sub_path)


def locate(marks: Marks, path: str) -> tuple[int, int]:
    """Line and column of ``path``, or of its nearest ancestor that has a mark."""
    while path and path not in marks:
        cut = max(path.rfind("."), path.rfind("["))
        path = path[:cut] if cut > 0 else ""
    return marks.get(path, (1, 1))


class _Builder:
    def __init__(self, loader: yaml.SafeLoader, file: str):
        self.loader = loader
        self.file = file
        self.marks: Marks = {}
        self.key_marks: Marks = {}
        self.problems: list[Problem] = []
        self.built: set[int] = set()  # the nodes built once; building one again expands an alias
        self.repeated = 0

    def problem(self, node: yaml.Node, message: str, path: str) -> None:
        mark = node.start_mark
        self.problems.append(Problem(self.file, mark.line + 1, mark.column + 1, message, path))

    def build(self, node: yaml.Node, path: str, depth: int = 0) -> Any:
        if id(node) in self.built:
            self.repeated += 1
            if self.repeated > MAX_ALIAS_NODES:
                raise _TooBig(f"aliases expand the document by more than {MAX_ALIAS_NODES} nodes")
        else:
            self.built.add(id(node))
        if depth > MAX_DEPTH:
            raise _TooBig(f"the document nests deeper than {MAX_DEPTH} levels", node)
        self.marks.setdefault(path, (node.start_mark.line + 1, node.start_mark.column + 1))
        if isinstance(node, yaml.MappingNode):
            if node.tag != MAP_TAG:
                self.problem(node, f"tag {node.tag!r} is not allowed; rule files are plain data", path)
                return None
            return self._mapping(node, path, depth)
        if isinstance(node, yaml.SequenceNode):
            if node.tag != SEQ_TAG:
                self.problem(node, f"tag {node.tag!r} is not allowed; rule files are plain data", path)
                return None
            return [self.build(child, join_path(path, i), depth + 1) for i, child in enumerate(node.value)]
        if not node.tag.startswith("tag:yaml.org,2002:") or "python/" in node.tag:
            self.problem(node, f"tag {node.tag!r} is not allowed; rule files are plain data", path)
            return None
        try:
            value = self.loader.construct_object(node, deep=True)
        except yaml.YAMLError as exc:
            self.problem(node, _yaml_message(exc), path)
            return None
        if isinstance(value, float) and not math.isfinite(value):  # NaN passes every min/max check
            self.problem(node, f"expected a finite number, got {node.value}", path)
            return None
        return value

    def _mapping(self, node: yaml.MappingNode, path: str, depth: int) -> dict:
        out: dict = {}
        seen: dict[Any, int] = {}
        merged: list[yaml.MappingNode] = []
        for key_node, value_node in node.value:
            if key_node.tag == MERGE_TAG:
                sources = value_node.value if isinstance(value_node, yaml.SequenceNode) else [value_node]
                merged.extend(s for s in sources if isinstance(s, yaml.MappingNode))
                continue
            key = self.build(key_node, path + ".<key>", depth + 1)
            if not isinstance(key, (str, int, float, bool)) and key is not None:
                self.problem(key_node, "mapping keys must be plain scalars", path)
                continue
            if key in seen:
                self.problem(key_node, f"duplicate key {key!r} (first defined on line {seen[key]})",
                             join_path(path, key))
                continue
            seen[key] = key_node.start_mark.line + 1
            child = join_path(path, key)
            self.key_marks[child] = (key_node.start_mark.line + 1, key_node.start_mark.column + 1)
            out[key] = self.build(value_node, child, depth + 1)
        for source in merged:
            for key, value in self._mapping(source, path, depth + 1).items():
                out.setdefault(key, value)
        return out


class _TooBig(Exception):
    def __init__(self, message: str, node: yaml.Node | None = None):
        super().__init__(message)
        self.mark = node.start_mark if node is not None else None


def _yaml_message(exc: yaml.YAMLError) -> str:
    parts = [getattr(exc, "context", None), getattr(exc, "problem", None)]
    text = "; ".join(p for p in parts if p) or str(exc)
    if "found character '\\t'" in text:
        text += " (YAML does not allow tabs for indentation)"
    escape = re.search(r"found unknown escape character '(.)'", text)
    if escape:
        text += (f"; in double quotes a backslash starts a YAML escape: write a regex in single quotes, "
                 f"where '\\{escape[1]}' stays as it is")
    return f"YAML error: {text}"


#: libyaml's loader when PyYAML has it: twice as fast. Its error messages differ, so a document
#: it rejects is parsed again by the pure-Python loader, whose messages the errors quote.
FAST_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_yaml(text: str, file: str) -> tuple[Any, Marks, Marks, list[Problem]]:
    """Parse one YAML document safely: ``(data, value marks, key marks, problems)``."""
    try:
        try:
            return _parse(text, file, FAST_LOADER)
        except (yaml.YAMLError, UnicodeEncodeError):  # libyaml takes UTF-8: a lone surrogate fails
            if FAST_LOADER is yaml.SafeLoader:
                raise
            return _parse(text, file, yaml.SafeLoader)
    except _TooBig as exc:
        line, col = (exc.mark.line + 1, exc.mark.column + 1) if exc.mark else (1, 1)
        return None, {}, {}, [Problem(file, line, col, str(exc))]
    except RecursionError:
        return None, {}, {}, [Problem(file, 1, 1, "the document nests too deeply")]
    except yaml.reader.ReaderError as exc:
        return None, {}, {}, [_reader_problem(text, file, exc)]
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        if "quoted scalar" in (getattr(exc, "context", None) or "") and getattr(exc, "context_mark", None):
            mark = exc.context_mark  # an unclosed quote: point at where it opens
        line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        hint = _indentation_hint(text, line) if "expected <block end>" in (exc.problem or "") else None
        return None, {}, {}, [Problem(file, line, col, hint or _yaml_message(exc))]


_RULE_START = re.compile(r"^(?P<indent> *)- +(?:\{\s*)?name: *(?P<name>[^,}#\s]+)")


def _spaces(n: int) -> str:
    return f"{n} space" + ("" if n == 1 else "s")


def _indentation_hint(text: str, line: int) -> str | None:
    """For a block that ends where it should not (a key or a ``-`` indented unlike its
    neighbours) inside a rule: what is misplaced, in which rule, and the indentations that fit."""
    lines = text.splitlines()
    if not 0 < line <= len(lines):
        return None
    bad = lines[line - 1]
    indent, stripped = len(bad) - len(bad.lstrip(" ")), bad.strip()
    start = next((n for n in range(line - 1, 0, -1) if _RULE_START.match(lines[n - 1])), None)
    if start is None:
        return None
    found = _RULE_START.match(lines[start - 1])
    name, dash = found["name"].strip("'\""), len(found["indent"])
    where = f"rule {name!r} (line {start})"
    if stripped.startswith("- "):
        what = _RULE_START.match(bad)
        rule = f"rule {what['name'].strip(chr(39) + chr(34))!r}" if what else "this list item"
        return (f"YAML error: {rule} is indented {_spaces(indent)}, the rules before it {dash}, as {where}: "
                f"put its '-' under theirs, {_spaces(dash)} in")
    levels = {lines[start - 1].index("name", dash): "the rule's keys"}
    for text_line in lines[start:line - 1]:
        body = text_line.lstrip(" ")
        at = len(text_line) - len(body)
        if body and not body.startswith("#") and ":" in body and at not in levels and at > min(levels):
            parent = next((key for key_at, key in reversed(list(_keys(lines[start - 1:line - 1]))) if key_at < at), None)
            levels[at] = f"inside {parent!r}" if parent else "nested"
    key = stripped.split(":", 1)[0]
    fits = " or ".join(f"{at} ({label})" for at, label in sorted(levels.items()))
    fix = f"indent it {_spaces(min(levels))}" if len(levels) == 1 else "indent it like the keys it belongs with"
    if key == "name":
        fix += f", or start a new rule there with '- name:', the '-' {_spaces(dash)} in"
    return f"YAML error: {key!r} is indented {_spaces(indent)} in {where}, whose keys are at {fits}: {fix}"


def _keys(lines: list[str]):
    """``(indent, key)`` of each line of ``lines`` that holds a ``key:``, in order."""
    for text_line in lines:
        body = text_line.lstrip(" ")
        match = re.match(r"(?:- +)?(?:\{\s*)?([\w-]+):", body)
        if match:
            yield len(text_line) - len(body) + (body.index(match[1]) if body.startswith("-") else 0), match[1]


def _parse(text: str, file: str, loader_class) -> tuple[Any, Marks, Marks, list[Problem]]:
    loader = loader_class(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None, {}, {}, []
        builder = _Builder(loader, file)
        data = builder.build(node, "")
        return data, builder.marks, builder.key_marks, builder.problems
    finally:
        loader.dispose()


def _reader_problem(text: str, file: str, exc: yaml.reader.ReaderError) -> Problem:
    """A character YAML does not allow (control characters), located by its position."""
    before = text[:exc.position]
    line = before.count("\n") + 1
    col = exc.position - (before.rfind("\n") + 1) + 1
    return Problem(file, line, col, f"YAML error: character {exc.character:#06x} is not allowed in YAML text")
