"""Rows as a table: JSON Lines, or Parquet (the ``parquet`` extra: pyarrow)."""

from __future__ import annotations

from typing import Iterable

from ..documents import SURROGATES, dump_json_line, write_atomic
from ..errors import InputError

__all__ = ["write_table", "require_table"]


def require_table(path: str) -> None:
    """Check before any work that ``path`` can be written as a table (Parquet needs pyarrow)."""
    if path.lower().endswith(".parquet"):
        _pyarrow()


def _pyarrow():
    try:
        import pyarrow
        import pyarrow.parquet
    except ImportError:
        raise InputError("a .parquet table needs pyarrow: pip install 'rules-compact[parquet]'") from None
    return pyarrow, pyarrow.parquet


def _arrow_table(pa, rows: list[dict]):
    """The rows as an Arrow table; a column of mappings to numbers (``saved_by_rule``) is a map
    column (string keys), so that rows with different keys, or none, share one type; one of
    records (``billed``) is a struct column."""
    columns = {}
    for name in dict.fromkeys(key for row in rows for key in row):
        values = [row.get(name) for row in rows]
        items = [v for value in values if isinstance(value, dict) for v in value.values()]
        if any(isinstance(v, dict) for v in values) and not any(isinstance(v, (dict, list)) for v in items):
            kind = pa.map_(pa.string(), pa.array(items).type if items else pa.int64())
            values = pa.array([None if v is None else list(v.items()) for v in values], type=kind)
        columns[name] = values
    return pa.table(columns)


def _escaped(value):
    """``value`` with each lone surrogate of its strings (a file name that is not UTF-8) as its
    ``\\udXXX`` escape, as JSON Lines writes it: Arrow strings must be UTF-8."""
    if isinstance(value, str):
        return value.encode("utf-8", SURROGATES).decode("utf-8")
    if isinstance(value, dict):
        return {_escaped(key): _escaped(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_escaped(item) for item in value]
    return value


def write_table(rows: Iterable[dict], path: str) -> None:
    """Write rows atomically: Parquet when ``path`` ends with ``.parquet`` (pyarrow), else JSON Lines."""
    if path.lower().endswith(".parquet"):
        pa, pq = _pyarrow()
        out = pa.BufferOutputStream()
        try:
            pq.write_table(_arrow_table(pa, [_escaped(row) for row in rows]), out)
        except (pa.ArrowException, UnicodeError) as exc:
            raise InputError(f"{path}: cannot write Parquet: {exc}") from None
        write_atomic(path, out.getvalue().to_pybytes())
        return
    write_atomic(path, "".join(dump_json_line(row) for row in rows))
