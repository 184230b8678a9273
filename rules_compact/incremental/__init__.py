"""The incremental layer: compaction inside an agent loop, reusing earlier calls' work.
Importing it makes pay-back walks compact their prefixes incrementally (``compacted_prefixes``:
a sweep, each prefix decided from the one before)."""

from __future__ import annotations

from ..engine.interpreter import use_prefix_compaction
from .compactor import Compactor, compacted_prefixes

__all__ = ["Compactor"]

use_prefix_compaction(compacted_prefixes)
