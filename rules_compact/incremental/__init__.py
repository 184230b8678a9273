"""The incremental layer: compaction inside an agent loop, reusing earlier calls' work."""

from __future__ import annotations

from .compactor import Compactor

__all__ = ["Compactor"]
