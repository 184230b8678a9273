"""The engine's guarantees, checked on any (input, output) pair.

The checks ship with the package (``rules_compact.testing``) so plugin authors run the same
ones; the tests import them from here.
"""

from rules_compact.testing import check_invariants

__all__ = ["check_invariants"]
