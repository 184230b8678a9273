"""The socket ``rules-compact serve`` listens on: its connections send small writes at once.

A response is at least two writes (headers, then body; a stream one per event).  With Nagle's
algorithm on, the second waits for the client's ACK of the first, which the client delays by
up to 40 ms: every answer, even /metrics, took 44 ms on loopback.  asyncio turns Nagle off
(TCP_NODELAY) on its connections, but only for a socket made with proto IPPROTO_TCP."""

from __future__ import annotations

import asyncio
import socket

from rules_compact.cli.serve import _listen


def test_the_proxys_connections_have_nagle_off():
    sock = _listen("127.0.0.1", 0)
    nodelay = []

    async def main():
        async def accepted(reader, writer):
            nodelay.append(writer.get_extra_info("socket").getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            writer.close()

        server = await asyncio.start_server(accepted, sock=sock)
        reader, writer = await asyncio.open_connection(*sock.getsockname()[:2])
        await reader.read()
        writer.close()
        server.close()
        await server.wait_closed()

    asyncio.run(main())
    assert nodelay and nodelay[0] != 0
