"""rules_compact.lazy: the quick records make what the generated dataclass code makes."""

from __future__ import annotations

import dataclasses

import pytest

from rules_compact.lazy import lazy, quick_init


def _record(quick: bool):
    @dataclasses.dataclass(frozen=True)
    class Record:
        name: str
        count: int = 3
        tags: list = dataclasses.field(default_factory=list)

    return quick_init(Record) if quick else Record


@pytest.mark.parametrize("args, kwargs", [(("a",), {}), (("a", 5), {}), (("a",), {"tags": [1]}),
                                          ((), {"name": "b", "count": 0, "tags": ["x"]})])
def test_a_quick_record_holds_what_the_dataclass_holds(args, kwargs):
    quick, plain = _record(True)(*args, **kwargs), _record(False)(*args, **kwargs)
    assert dataclasses.asdict(quick) == dataclasses.asdict(plain)
    assert repr(quick).split("(", 1)[1] == repr(plain).split("(", 1)[1]
    with pytest.raises(dataclasses.FrozenInstanceError):
        quick.count = 1


def test_each_quick_record_gets_its_own_default_list():
    Record = _record(True)
    first, second = Record("a"), Record("b")
    first.tags.append(1)
    assert second.tags == []


def test_a_record_that_needs_the_generated_init_is_refused():
    @dataclasses.dataclass(frozen=True)
    class Checked:
        value: int

        def __post_init__(self):
            pass

    with pytest.raises(TypeError, match="needs the generated __init__"):
        quick_init(Checked)


def test_a_lazy_column_is_computed_once():
    calls = []

    class Scan:
        @lazy
        def column(self):
            calls.append(1)
            return [1, 2]

    scan = Scan()
    assert scan.column is scan.column and calls == [1]
