"""Kinds: the matchers, actions, age units and estimators a rule file can name.

Each built-in matcher and action is one module (``kinds/matchers/``, ``kinds/actions/``)
declaring ``KIND``; the built-in plugin registers them through the same hooks plugins use.
"""
