"""The ``cache-breakpoint`` action: put a provider's cache breakpoint on the item's block.

``provider: anthropic`` (the default) writes Anthropic's ``cache_control: {type: ephemeral}``
(Anthropic messages, and OpenAI messages bound for Anthropic); ``provider: openai`` writes
OpenAI's ``prompt_cache_breakpoint: {mode: explicit}`` (GPT-5.6 and later) on a Chat Completions
content part or a Responses input part. Either never goes past the request's limit, counting
the breakpoints the request already holds (the caller's own too)."""

from __future__ import annotations

from ..base import Action, ActionKind

#: Per provider: the key it reads, the breakpoint's value, its ttl values, the format attribute
#: that says how many such breakpoints a request may hold, and the breakpoint's name in notes.
PROVIDERS = {
    "anthropic": ("cache_control", {"type": "ephemeral"}, ("5m", "1h"), "max_breakpoints", "Anthropic cache_control"),
    "openai": ("prompt_cache_breakpoint", {"mode": "explicit"}, ("30m", "12h"), "openai_max_breakpoints",
               "OpenAI prompt_cache_breakpoint"),
}


def compile_cache_breakpoint(options, ctx, path) -> Action:
    options = options or {}
    provider = options.get("provider", "anthropic")
    key, value, ttls, limit_of, called = PROVIDERS[provider]
    if options.get("ttl", ttls[0]) not in ttls:
        ctx.problem(f"{path}.ttl", f"ttl {options['ttl']!r} is not {provider}'s: expected {' or '.join(ttls)}")
    marker = {key: {**value, **({"ttl": options["ttl"]} if "ttl" in options else {})}}

    def cache_breakpoint(index: int, ed) -> str | None:
        facts = ed.facts
        fmt = facts.fmt
        limit = getattr(fmt, limit_of)
        if not limit:
            return f"cache-breakpoint needs {called}, which these {fmt.name} messages do not carry"
        at = facts.scan.msg[index]
        msg = ed.message(at)
        new = fmt.mark_cache(msg, facts.scan.block[index], marker)
        if new is msg:
            return None if fmt.breakpoints(msg) else "no block here may carry a cache breakpoint"
        held = ed.breakpoints()
        if held >= limit:
            return f"left as it is: the request already holds {held} cache breakpoints (at most {limit})"
        ed.replace(at, new)
        return None

    return Action("cache-breakpoint", run=cache_breakpoint, kind=KIND)

SCHEMA = {'type': ['null', 'object'],
 'additionalProperties': False,
 'properties': {'provider': {'enum': ['anthropic', 'openai'],
                             'default': 'anthropic',
                             'description': "Whose breakpoint: anthropic's cache_control (Anthropic messages, "
                                            "OpenAI messages bound for Anthropic; at most 4 a request) or "
                                            "openai's prompt_cache_breakpoint (GPT-5.6 and later, Chat "
                                            "Completions and Responses; at most 3 a request: 4 writes, one "
                                            "the implicit breakpoint)."},
                'ttl': {'enum': ['5m', '1h', '30m', '12h'],
                        'description': "Cache lifetime: anthropic's ttl 5m or 1h; openai's 30m or 12h "
                                       "(without it, the request's prompt_cache_options.ttl)."}}}

KIND = ActionKind('cache-breakpoint', compile_cache_breakpoint,
                  "Put a cache breakpoint on the item's block, e.g. on the last item before the step boundary: Anthropic's cache_control ({type: ephemeral}; provider: anthropic, the default) or OpenAI's prompt_cache_breakpoint ({mode: explicit}; provider: openai, for GPT-5.6 and later); never past the request's limit (Anthropic 4, OpenAI 3), counting those it already holds.",
                  SCHEMA, item_only=True, reads_request=True)
