"""What a kind is: a named matcher or action with its options schema, its compile function
and how its answer can change as the history grows; and what compiling one gives.

Built-in kinds are one module each in ``kinds/matchers/`` and ``kinds/actions/``, each
declaring ``KIND``; plugins add kinds through the same classes.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field
from enum import Enum
from itertools import compress
from typing import TYPE_CHECKING, Any, Callable, Iterable, Sequence

if TYPE_CHECKING:
    from ..engine.facts import Facts
    from ..language.compiler import CompileContext

__all__ = ["History", "MatcherKind", "ActionKind", "Matcher", "Action", "EditError", "compare", "bounds", "RESULT", "TURN",
           "ITEM_KINDS", "everything", "nothing", "with_defaults", "predicate_matcher",
           "bool_matcher", "All", "AnyOf", "Not"]

RESULT, TURN = "tool_result", "assistant"  # the two item kinds (Item.kind)
ITEM_KINDS = (RESULT, TURN)


class History(Enum):
    """How a matcher's answer for an item can change as messages are appended."""

    ITEM = "item"  # the item and what precedes it decide: settled at once
    AGE = "age"  # counts what follows: settled once past its bounds (``Matcher.data``: key, saturation)
    TAIL = "tail"  # true until a later user turn, then settled
    LAST = "last"  # holds for the last item only: never settled while it is last
    LATER = "later"  # a later call can change it (``Matcher.data``: the superseded key)


@dataclass(frozen=True)
class MatcherKind:
    """A named matcher: ``compile(options, ctx, path)`` returns a Matcher (built-ins) or a
    predicate ``(item, view) -> bool`` (plugins).  ``schema`` is its options' JSON Schema;
    ``history`` how its answer can change as the history grows (None: unknown, so a rule
    file that uses it is decided anew on every call)."""

    name: str
    compile: Callable[[Any, "CompileContext", str], Any]
    description: str
    schema: dict | None = None
    history: History | None = None


@dataclass(frozen=True)
class ActionKind:
    """A named action: ``compile(options, ctx, path)`` returns an Action.  ``item_only``:
    it edits nothing but the item's own message.  ``span_only``: it edits nothing outside the
    item's span (its own message, or the turn holding the call a result answers), so its
    decisions can be kept across calls (``item_only`` implies it).
    ``reads_request``: what it does depends on the whole request (``editor.breakpoints()``),
    so items are edited one by one in order, and its decisions are never kept.  ``items``:
    the item kinds it can change (``validate`` warns about a rule that matches none of them)."""

    name: str
    compile: Callable[[Any, "CompileContext", str], "Action"]
    description: str
    schema: dict | None = None
    item_only: bool = False
    span_only: bool = False
    reads_request: bool = False
    items: tuple[str, ...] = ITEM_KINDS


Select = Callable[[list, "Facts"], list]


class Matcher:
    """A compiled matcher: ``select(items, facts)`` keeps, in order, the candidate items
    (indices into the pass's facts) it holds for.  ``fold`` gives its answer for every item
    of one kind when the kind alone decides it.  Called as ``matcher(item, view)`` it is the
    predicate plugins compose."""

    __slots__ = ("select", "kind", "fold", "cost", "data")

    def __init__(self, select: Select, kind: MatcherKind | None = None, fold: dict[str, bool] | None = None,
                 cost: int = 1, data: Any = None):
        self.select = select
        self.kind = kind
        self.fold = fold or {}
        self.cost = cost  # cheaper matchers are tried first
        self.data = data

    @property
    def parts(self) -> tuple[Matcher, ...]:
        return ()

    def specialize(self, item_kind: str) -> Matcher | bool:
        """This matcher for items of one kind: True or False when the kind decides, else a Matcher."""
        return self.fold.get(item_kind, self)

    def nodes(self) -> Iterable[Matcher]:
        """This matcher and every matcher inside it."""
        yield self
        for part in self.parts:
            yield from part.nodes()

    def __call__(self, item, view) -> bool:
        return bool(self.select([item.index], view))


class All(Matcher):
    """Every part holds: the cheapest is tried first, each on what the previous kept."""

    __slots__ = ("_parts",)

    def __init__(self, parts: Sequence[Matcher]):
        self._parts = tuple(sorted(parts, key=lambda m: m.cost))
        steps = [p.select for p in self._parts]

        def select(items: list, facts) -> list:
            for step in steps:
                if not items:
                    break
                items = step(items, facts)
            return items

        super().__init__(select, cost=sum(p.cost for p in self._parts))

    @property
    def parts(self) -> tuple[Matcher, ...]:
        return self._parts

    def specialize(self, item_kind: str) -> Matcher | bool:
        return _specialized(self._parts, item_kind, False, All)


class AnyOf(Matcher):
    """At least one part holds."""

    __slots__ = ("_parts",)

    def __init__(self, parts: Sequence[Matcher]):
        self._parts = tuple(parts)
        steps = [p.select for p in self._parts]

        def select(items: list, facts) -> list:
            hits: set = set()
            rest = items
            for step in steps:
                if not rest:
                    break
                found = step(rest, facts)
                if found:
                    hits.update(found)
                    rest = [i for i in rest if i not in hits]
            return [i for i in items if i in hits] if hits else []

        super().__init__(select, cost=sum(p.cost for p in self._parts))

    @property
    def parts(self) -> tuple[Matcher, ...]:
        return self._parts

    def specialize(self, item_kind: str) -> Matcher | bool:
        return _specialized(self._parts, item_kind, True, AnyOf)


def _specialized(parts: Sequence[Matcher], item_kind: str, decisive: bool, combine) -> Matcher | bool:
    """``parts`` specialised to one item kind: ``decisive`` when a part's answer is (False for
    All, True for AnyOf); else the undecided parts ``combine``d, the other answer when none is."""
    kept = []
    for part in parts:
        answer = part.specialize(item_kind)
        if answer is decisive:
            return decisive
        if answer is not (not decisive):
            kept.append(answer)
    return (not decisive) if not kept else kept[0] if len(kept) == 1 else combine(kept)


class Not(Matcher):
    """The part does not hold."""

    __slots__ = ("_part",)

    def __init__(self, part: Matcher):
        self._part = part
        inner = part.select

        def select(items: list, facts) -> list:
            found = inner(items, facts)
            if not found:
                return items
            drop = set(found)
            return [i for i in items if i not in drop]

        super().__init__(select, cost=part.cost)

    @property
    def parts(self) -> tuple[Matcher, ...]:
        return (self._part,)

    def specialize(self, item_kind: str) -> Matcher | bool:
        answer = self._part.specialize(item_kind)
        return (not answer) if isinstance(answer, bool) else Not(answer)


def _every(items: list, facts) -> list:
    return items


def _none(items: list, facts) -> list:
    return []


everything = Matcher(_every, fold={RESULT: True, TURN: True}, cost=0)
nothing = Matcher(_none, fold={RESULT: False, TURN: False}, cost=0)


def predicate_matcher(predicate: Callable, kind: MatcherKind | None = None) -> Matcher:
    """A Matcher from a plugin's predicate ``(item, view) -> bool``."""
    def select(items: list, facts) -> list:
        item = facts.item
        return [i for i in items if predicate(item(i), facts)]

    return Matcher(select, kind, cost=100)


def bool_matcher(kind: MatcherKind, value: bool, column: Callable[["Facts"], Sequence],
                 fold: dict[str, bool] | None = None, cost: int = 1) -> Matcher:
    """A matcher that holds when a boolean column of the facts equals ``value``; ``fold``:
    the column's value for every item of a kind, when known."""
    if value:
        def select(items: list, facts) -> list:
            return list(compress(items, map(column(facts).__getitem__, items)))
    else:
        def select(items: list, facts) -> list:
            col = column(facts)
            return [i for i in items if not col[i]]
    folded = {k: v is value for k, v in (fold or {}).items()}
    return Matcher(select, kind, folded, cost)


COMPARATORS = {"gt": operator.gt, "gte": operator.ge, "lt": operator.lt, "lte": operator.le}


def compare(options: dict) -> Callable[[Any], bool]:
    """One function for every ``gt``/``gte``/``lt``/``lte`` bound in ``options``."""
    found = [(COMPARATORS[k], v) for k, v in options.items() if k in COMPARATORS]
    return lambda value: all(op(value, bound) for op, bound in found)


def with_defaults(options: Any, schema: dict) -> dict:
    """A kind's options with the ``default`` of every property its schema declares filled in
    (the object form of a schema whose options may also be written otherwise)."""
    branches = [schema] + [b for b in schema.get("anyOf", ()) if isinstance(b, dict)]
    properties = next((b["properties"] for b in branches if "properties" in b), {})
    filled = {key: spec["default"] for key, spec in properties.items() if "default" in spec}
    return {**filled, **(options or {})}


def bounds(options: dict) -> tuple[float, float]:
    """The closed interval of integers that every ``gt``/``gte``/``lt``/``lte`` bound admits."""
    low, high = float("-inf"), float("inf")
    for key, value in options.items():
        if key == "gt":
            low = max(low, _floor(value) + 1)
        elif key == "gte":
            low = max(low, _ceil(value))
        elif key == "lt":
            high = min(high, _ceil(value) - 1)
        elif key == "lte":
            high = min(high, _floor(value))
    return low, high


def _floor(value) -> int:
    return value if isinstance(value, int) else int(value // 1)


def _ceil(value) -> int:
    return value if isinstance(value, int) else -int((-value) // 1)


class EditError(TypeError):
    """An action called the editor with a value it does not take (``set_result_text(item, 5)``)."""


@dataclass(frozen=True)
class Action:
    """A compiled action.  ``apply(item, editor)`` edits one item and returns a note for the
    report, or None (the plugin interface).  Built-in actions give ``run(index, editor)``
    instead, which reads the item from the editor's facts, or ``run_many(indices, editor)``,
    which edits several items and returns their notes by item.  Any one of the three is
    enough: the others are made from it."""

    name: str
    apply: Callable[[Any, Any], "str | None"] | None = None
    templates: tuple = ()
    run: Callable[[int, Any], "str | None"] | None = field(default=None, compare=False)
    kind: ActionKind | None = field(default=None, compare=False)
    run_many: Callable[[list, Any], dict] | None = field(default=None, compare=False)

    def __post_init__(self):
        if self.run is None:
            if self.run_many is not None:
                many = self.run_many
                object.__setattr__(self, "run", lambda index, ed: many((index,), ed).get(index))
            else:
                apply = self.apply
                object.__setattr__(self, "run", lambda index, ed: apply(ed.facts.item(index), ed))
        if self.apply is None:
            run = self.run
            object.__setattr__(self, "apply", lambda item, ed: run(item.index, ed))
        if self.run_many is None:
            run = self.run

            def run_many(indices, ed) -> dict:
                notes = {}
                for index in indices:
                    ed.item = index
                    note = run(index, ed)
                    if note:
                        notes[index] = note
                return notes

            object.__setattr__(self, "run_many", run_many)
