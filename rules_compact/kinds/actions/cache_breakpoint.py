"""The ``cache-breakpoint`` action: put an Anthropic cache_control breakpoint on the item's block."""

from __future__ import annotations

from ..base import Action, ActionKind


def compile_cache_breakpoint(options, ctx, path) -> Action:
    cache_control = {"type": "ephemeral", **({"ttl": options["ttl"]} if options and "ttl" in options else {})}

    def cache_breakpoint(index: int, ed) -> str | None:
        facts = ed.facts
        fmt = facts.fmt
        if fmt.name != "anthropic":
            return "cache-breakpoint needs the Anthropic format"
        msg = facts.scan.msg[index]
        ed.replace(msg, fmt.mark_cache(ed.message(msg), facts.scan.block[index], cache_control))
        return None

    return Action("cache-breakpoint", run=cache_breakpoint, kind=KIND)

SCHEMA = {'type': ['null', 'object'],
 'additionalProperties': False,
 'properties': {'ttl': {'enum': ['5m', '1h'], 'description': "Cache lifetime (Anthropic's ttl)."}}}

KIND = ActionKind('cache-breakpoint', compile_cache_breakpoint,
                  "Put an Anthropic cache_control breakpoint ({type: ephemeral}) on the item's block, e.g. on the last item before the step boundary.",
                  SCHEMA, item_only=True)
