"""``rules-compact serve``: a cache-aware compacting proxy for the Anthropic Messages, Chat
Completions and Responses APIs, that an agent uses by changing its base URL
(docs/serve.md).  It needs the ``serve`` extra: ``pip install 'rules-compact[serve]'``.

::

    from rules_compact.serve import Proxy, ServeConfig

    proxy = Proxy(ServeConfig(rules=("default",), anthropic_upstream="https://api.anthropic.com"))
    app = proxy.app()        # an ASGI application: run it with uvicorn, or with serve()

The proxy is a thin shell over the library: the conversation's :class:`~rules_compact.Compactor`
decides what goes upstream (routes.py: where, rewrite.py: what, sessions.py: whose
Compactor), app.py relays the bytes and metrics.py counts."""

from __future__ import annotations

import signal
import socket
import threading
from typing import Callable

from .app import Proxy, ServeConfig
from .routes import ANTHROPIC_UPSTREAM, OPENAI_UPSTREAM

__all__ = ["Proxy", "ServeConfig", "serve", "ANTHROPIC_UPSTREAM", "OPENAI_UPSTREAM"]


def serve(proxy: Proxy, sock: socket.socket, grace_seconds: float = 30.0, ready: Callable[[], None] | None = None
          ) -> None:
    """Serve ``proxy`` on the listening socket ``sock`` until SIGINT or SIGTERM, which stop
    accepting and let the requests in flight (streams too) finish for up to ``grace_seconds``;
    SIGHUP reloads the rule files.  ``ready()`` is called once SIGHUP is handled (connections
    made from then on wait in the socket's backlog until the server takes them)."""
    import uvicorn

    config = uvicorn.Config(proxy.app(), log_config=None, log_level="warning", access_log=False, lifespan="on",
                            timeout_graceful_shutdown=grace_seconds, timeout_keep_alive=75,
                            server_header=False, date_header=False)  # the upstream's own go through
    server = uvicorn.Server(config)
    in_main = threading.current_thread() is threading.main_thread() and hasattr(signal, "SIGHUP")
    previous = signal.signal(signal.SIGHUP, lambda *_: threading.Thread(target=proxy.reload, daemon=True).start()) \
        if in_main else None
    try:
        if ready is not None:
            ready()
        server.run(sockets=[sock])
    finally:
        if in_main:
            signal.signal(signal.SIGHUP, previous)
