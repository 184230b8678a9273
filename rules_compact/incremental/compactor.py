"""Compaction inside an agent loop (placeholder during the redesign: no reuse yet)."""

from __future__ import annotations

import threading

from ..engine import Result, check_messages, finish, resolve_rules, run_pass

__all__ = ["Compactor"]


class Compactor:
    def __init__(self, rules=None, format=None, verify=True):
        self.rulesets = resolve_rules(rules)
        self.format = format
        self.verify = verify
        self._lock = threading.Lock()

    def __call__(self, messages, format=None) -> Result:
        name, fmt = check_messages(messages, format or self.format)
        current, passes = messages, []
        with self._lock:
            for ruleset in self.rulesets:
                done = run_pass(current, ruleset, fmt)
                current = done.messages
                passes.append(done.report)
        return finish(messages, current, name, self.rulesets, passes)

    def reset(self):
        pass
