"""``serve``: the compacting proxy (rules_compact.serve, in the ``serve`` extra)."""

from __future__ import annotations

import ipaddress
import logging
import socket
import sys
import urllib.parse

from ..errors import InputError
from ..limits import max_input_bytes
from .inputs import rulesets
from .output import OK, PROG, warn

__all__ = ["register"]


def register(add) -> None:
    p = add("serve", help="a compacting proxy: point an agent's base URL at it (docs/serve.md)")
    p.add_argument("-r", "--rules", action="append", metavar="RULES",
                   help="rule file, 'default' or 'preset:NAME'; repeat for successive passes (default: the "
                        "bundled default rules); SIGHUP reloads them")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)")
    p.add_argument("--port", type=int, default=8787, help="port to listen on, 0 for any free one (default: 8787)")
    p.add_argument("--anthropic-upstream", metavar="URL",
                   help="where /v1/messages... goes, with its path (default: https://api.anthropic.com)")
    p.add_argument("--openai-upstream", metavar="URL",
                   help="a base ending in /v1: /v1/X goes to URL/X (default: https://api.openai.com/v1)")
    p.add_argument("--max-sessions", type=_positive(int), default=256, metavar="N",
                   help="conversations whose Compactor is kept, least recently used evicted first (default: 256)")
    p.add_argument("--session-idle", type=_positive(float), default=3600.0, metavar="SECONDS",
                   help="evict a conversation idle this long (default: 3600)")
    p.add_argument("--grace", type=_positive(float), default=30.0, metavar="SECONDS",
                   help="on SIGTERM, how long requests in flight may take to finish (default: 30)")
    p.add_argument("--upstream-timeout", type=_positive(float), default=600.0, metavar="SECONDS",
                   help="the longest wait for the upstream's next bytes (default: 600)")
    p.set_defaults(func=cmd_serve)


def _positive(kind):
    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            value = 0
        if not value > 0:
            raise ValueError(text)
        return value
    parse.__name__ = f"positive {kind.__name__}"
    return parse


def cmd_serve(args) -> int:
    try:
        from ..serve import Proxy, ServeConfig, serve
    except ImportError as exc:
        missing = (exc.name or "a module").split(".")[0]
        raise InputError(f"serve needs the serve extra ({missing} is not installed): "
                         "pip install 'rules-compact[serve]'") from None
    sets = rulesets(args)
    max_input_bytes()  # a bad RULES_COMPACT_MAX_INPUT_BYTES stops it here, not on the first request
    upstreams = {"anthropic_upstream": args.anthropic_upstream, "openai_upstream": args.openai_upstream}
    for name, url in upstreams.items():
        parts = urllib.parse.urlsplit(url or "http://x")
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise InputError(f"--{name.replace('_', '-')} {url!r}: expected an http:// or https:// URL")
    if not _loopback(args.host):
        warn(f"--host {args.host}: listening beyond this machine; anyone who reaches it can use the upstreams "
             "with their own credentials through it")
    sock = _listen(args.host, args.port)
    config = ServeConfig(rules=tuple(args.rules or ["default"]), max_sessions=args.max_sessions,
                         session_idle_seconds=args.session_idle, read_timeout=args.upstream_timeout,
                         **{name: url for name, url in upstreams.items() if url is not None})
    _log_to_stderr()
    host, port = sock.getsockname()[:2]
    where = f"[{host}]" if ":" in host else host
    line = (f"{PROG}: serving on http://{where}:{port} (Anthropic: {config.anthropic_upstream}, "
            f"OpenAI: {config.openai_upstream}; rules: {', '.join(r.name for r in sets)})")
    serve(Proxy(config, sets), sock, args.grace, ready=lambda: print(line, file=sys.stderr, flush=True))
    return OK


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _listen(host: str, port: int) -> socket.socket:
    """A listening socket, or one line saying why there is none."""
    if not 0 <= port <= 65535:
        raise InputError(f"--port {port}: expected 0 to 65535")
    try:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
        sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)  # asyncio sets TCP_NODELAY on its connections
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(2048)
    except OSError as exc:
        raise InputError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.set_inheritable(True)
    return sock


def _log_to_stderr() -> None:
    """The proxy's lines (one per request, warnings) on stderr."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(f"{PROG} serve: %(levelname)s %(message)s"))
    log = logging.getLogger("rules_compact.serve")
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    log.propagate = False
