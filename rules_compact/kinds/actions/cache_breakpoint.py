"""The ``cache-breakpoint`` action: put an Anthropic cache_control breakpoint on the item's block."""

from __future__ import annotations

from ..base import Action, ActionKind


def compile_cache_breakpoint(options, ctx, path) -> Action:
    cache_control = {"type": "ephemeral", **({"ttl": options["ttl"]} if options and "ttl" in options else {})}

    def cache_breakpoint(index: int, ed) -> str | None:
        facts = ed.facts
        fmt = facts.fmt
        if not fmt.max_breakpoints:
            return f"cache-breakpoint needs Anthropic cache_control, which these {fmt.name} messages do not carry"
        at = facts.scan.msg[index]
        msg = ed.message(at)
        new = fmt.mark_cache(msg, facts.scan.block[index], cache_control)
        if new is msg:
            return None if fmt.breakpoints(msg) else "no block here may carry a cache breakpoint"
        held = ed.breakpoints()
        if held >= fmt.max_breakpoints:
            return f"left as it is: the request already holds {held} cache breakpoints (at most {fmt.max_breakpoints})"
        ed.replace(at, new)
        return None

    return Action("cache-breakpoint", run=cache_breakpoint, kind=KIND)

SCHEMA = {'type': ['null', 'object'],
 'additionalProperties': False,
 'properties': {'ttl': {'enum': ['5m', '1h'], 'description': "Cache lifetime (Anthropic's ttl)."}}}

KIND = ActionKind('cache-breakpoint', compile_cache_breakpoint,
                  "Put an Anthropic cache_control breakpoint ({type: ephemeral}) on the item's block, e.g. on the last item before the step boundary; never past the request's limit of 4, counting those it already holds.",
                  SCHEMA, item_only=True, reads_request=True)
