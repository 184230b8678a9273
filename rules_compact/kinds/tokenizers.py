"""Exact OpenAI token counts: the ``o200k`` and ``cl100k`` estimators (the ``tokens`` extra).

They count with `bpe-openai <https://pypi.org/project/bpe-openai/>`_, whose wheel carries both
vocabularies (nothing is downloaded at run time) and whose encoder is linear in the text (a
100,000-character run of one letter takes milliseconds; a pure-Python BPE takes minutes). Its
counts equal tiktoken's on every piece of every trace in tests/data/traces (docs/tokens.md).
Special-token strings such as ``<|endoftext|>`` count as the ordinary text they are.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Callable

__all__ = ["TOKENS_EXTRA", "missing", "counter"]

TOKENS_EXTRA = "tokens"
_ENCODINGS = {"o200k": "o200k_base", "cl100k": "cl100k_base"}
_CHUNK = 50_000  # characters per encoder call: never over bpe-openai's 200,000 tokens a call (≤ 4 per character)


def missing() -> str | None:
    """Why the tokenizers cannot run here (their package is not installed), else None."""
    try:
        import bpe_openai  # noqa: F401
    except ImportError:
        return (f"needs the {TOKENS_EXTRA!r} extra, which is not installed: "
                f"pip install 'rules-compact[{TOKENS_EXTRA}]'")
    return None


@lru_cache(maxsize=None)
def _encoding(name: str):
    import bpe_openai

    return bpe_openai.get_encoding(_ENCODINGS[name])


def _chunks(text: str):
    """``text`` in pieces of at most ``_CHUNK`` characters, each cut after a newline that a
    non-space follows (where the pre-tokenizer splits anyway) when the piece has one."""
    start = 0
    while len(text) - start > _CHUNK:
        end = start + _CHUNK
        cut = text.rfind("\n", start + 1, end - 1)
        while cut > start and text[cut + 1].isspace():
            cut = text.rfind("\n", start + 1, cut)
        end = cut + 1 if cut > start else end
        yield text[start:end]
        start = end
    yield text[start:]


def counter(name: str) -> Callable[[str], int]:
    """``text -> tokens`` in encoding ``name`` (``o200k`` or ``cl100k``), the encoding loaded on first use."""

    def count(text: str) -> int:
        if not text:
            return 0
        encode = _encoding(name).encode_ordinary
        if len(text) <= _CHUNK:
            return len(encode(text))
        return sum(len(encode(part)) for part in _chunks(text))

    return count
