"""The real agents (Claude Code, Codex CLI) against a scripted model on a local server, offline.

:class:`ScriptedUpstream` plays the API: every round of the main loop it answers with a shell
call printing ``LINES`` lines, and after ``rounds`` of them with a final text answer.  The
round is read from the request (how many tool results it holds), so retries and the proxy's
rewrites answer the same.  Everything else Claude Code asks (a side request without the Bash
tool, count_tokens) gets a short answer.  Every request is recorded.

The agents come from npm: ``RULES_COMPACT_NPM`` names the folder that ``npm install --prefix``
filled (``node_modules/.bin/claude`` and ``codex``); .ci/run fills ``.ci/.npm``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NPM_ENV = "RULES_COMPACT_NPM"
LINES = 1500
ANSWER = "SCRIPTED ANSWER: every listing printed"


def agent_binary(name: str) -> tuple[Path | None, str]:
    """The agent's executable, or None and why it is missing."""
    if shutil.which("node") is None:
        return None, "node is not installed"
    folder = Path(os.environ.get(NPM_ENV) or ROOT / ".ci" / ".npm")
    found = folder / "node_modules" / ".bin" / name
    if not found.exists():
        return None, f"{found} is missing: .ci/run installs the agents there with npm (or set {NPM_ENV})"
    return found, ""


def command(round_: int) -> str:
    """The shell command of round ``round_``: ``LINES`` lines that name the round."""
    return f"seq -f 'r{round_} %g' {LINES}"


def listing(round_: int) -> str:
    """What :func:`command` prints."""
    return "\n".join(f"r{round_} {i}" for i in range(1, LINES + 1))


def _sse(events: list[dict]) -> bytes:
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()


def _anthropic_events(body: dict, rounds: int) -> list[dict]:
    """A streamed Messages answer: round k < rounds + 1 calls Bash, then the final answer."""
    main = any(t.get("name") == "Bash" for t in body.get("tools") or [])
    done = sum(1 for m in body.get("messages") or [] if isinstance(m.get("content"), list)
               for b in m["content"] if b.get("type") == "tool_result")
    usage = {"input_tokens": 10, "output_tokens": 1, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}
    start = {"type": "message_start", "message": {"id": f"msg_{done}", "type": "message", "role": "assistant",
                                                  "model": body.get("model"), "content": [], "stop_reason": None,
                                                  "stop_sequence": None, "usage": usage}}
    if main and done < rounds:
        n = done + 1
        block = {"type": "tool_use", "id": f"toolu_{n:02d}", "name": "Bash", "input": {}}
        delta = {"type": "input_json_delta", "partial_json": json.dumps({"command": command(n), "description": "list"})}
        stop = "tool_use"
    else:
        block, stop = {"type": "text", "text": ""}, "end_turn"
        delta = {"type": "text_delta", "text": ANSWER if main else "side answer"}
    return [start, {"type": "content_block_start", "index": 0, "content_block": block},
            {"type": "content_block_delta", "index": 0, "delta": delta},
            {"type": "content_block_stop", "index": 0},
            {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None}, "usage": {"output_tokens": 5}},
            {"type": "message_stop"}]


def _responses_events(body: dict, rounds: int) -> list[dict]:
    """A streamed Responses answer: Codex's ``exec`` tool running the round's command, then the
    final answer."""
    done = sum(1 for item in body.get("input") or [] if item.get("type") == "custom_tool_call_output")
    if done < rounds:
        n = done + 1
        script = "const r = await tools.exec_command({cmd: %s});\ntext(r.output);" % json.dumps(command(n))
        item = {"type": "custom_tool_call", "id": f"ctc_{n:02d}", "call_id": f"call_{n:02d}", "name": "exec",
                "input": script, "status": "completed"}
    else:
        item = {"type": "message", "id": "msg_final", "role": "assistant", "status": "completed",
                "content": [{"type": "output_text", "text": ANSWER, "annotations": []}]}
    rid = f"resp_{done}"
    usage = {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 5,
             "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 15}
    return [{"type": "response.created", "response": {"id": rid, "object": "response", "status": "in_progress",
                                                      "output": []}},
            {"type": "response.output_item.added", "output_index": 0, "item": item},
            {"type": "response.output_item.done", "output_index": 0, "item": item},
            {"type": "response.completed", "response": {"id": rid, "object": "response", "status": "completed",
                                                        "output": [item], "usage": usage}}]


@dataclass(frozen=True)
class Recorded:
    """One request the upstream got."""

    method: str
    path: str
    headers: dict
    body: bytes

    def json(self) -> dict:
        return json.loads(self.body)


class ScriptedUpstream:
    """The scripted model on 127.0.0.1 (``url``), in a thread; ``requests``: what it got."""

    def __init__(self, rounds: int):
        self.rounds = rounds
        self.requests: list[Recorded] = []
        upstream = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                raw = self.rfile.read(int(self.headers.get("content-length") or 0))
                upstream.requests.append(Recorded("POST", self.path, dict(self.headers), raw))
                self._answer(*upstream.answer(self.path, raw))

            def do_GET(self):
                upstream.requests.append(Recorded("GET", self.path, dict(self.headers), b""))
                self._answer(404, "application/json", b'{"error": {"type": "not_found_error", "message": "no"}}')

            def _answer(self, status: int, ctype: str, out: bytes):
                self.send_response(status)
                self.send_header("content-type", ctype)
                self.send_header("content-length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def answer(self, path: str, raw: bytes) -> tuple[int, str, bytes]:
        """(status, content type, body) for a POST to ``path``."""
        body = json.loads(raw or b"{}")
        if path.startswith("/v1/messages/count_tokens"):
            return 200, "application/json", b'{"input_tokens": 1000}'
        if path.startswith("/v1/messages"):
            events = _anthropic_events(body, self.rounds)
        elif path.startswith("/v1/responses"):
            events = _responses_events(body, self.rounds)
        else:
            return 404, "application/json", b'{"error": {"type": "not_found_error", "message": "no"}}'
        return 200, "text/event-stream", _sse(events)

    def main_loop(self, key: str) -> list[dict]:
        """The bodies of the agent's main-loop requests (``key``: ``messages`` or ``input``)."""
        bodies = [r.json() for r in self.requests if r.method == "POST" and "count_tokens" not in r.path]
        if key == "messages":
            return [b for b in bodies if any(t.get("name") == "Bash" for t in b.get("tools") or [])]
        return [b for b in bodies if isinstance(b.get(key), list)]

    def __enter__(self) -> ScriptedUpstream:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()


def run_claude(binary: Path, base_url: str, home: Path, workdir: Path, timeout: float = 240
               ) -> subprocess.CompletedProcess:
    """``claude -p`` against ``base_url`` with its own HOME, offline."""
    env = {**_base_env(home), "ANTHROPIC_BASE_URL": base_url, "ANTHROPIC_API_KEY": "sk-ant-test",
           "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1"}
    return subprocess.run([str(binary), "-p", "Run the listings, one command per turn.", "--allowedTools", "Bash"],
                          cwd=workdir, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=timeout)


def run_codex(binary: Path, base_url: str, home: Path, workdir: Path, timeout: float = 240
              ) -> subprocess.CompletedProcess:
    """``codex exec`` against ``base_url`` (a base ending in /v1) with its own HOME, offline."""
    (home / ".codex").mkdir(parents=True, exist_ok=True)
    env = {**_base_env(home), "CODEX_HOME": str(home / ".codex"), "K": "sk-test"}
    provider = f'model_providers.p={{name="p",base_url="{base_url}",wire_api="responses",env_key="K"}}'
    return subprocess.run([str(binary), "exec", "--skip-git-repo-check", "-s", "danger-full-access",
                           "-c", "model_provider=p", "-c", provider, "Run the listings, one command per turn."],
                          cwd=workdir, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=timeout)


def _base_env(home: Path) -> dict:
    """A clean environment: PATH, a temporary HOME, no proxy or key of the caller's."""
    home.mkdir(parents=True, exist_ok=True)
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "LANG": "C.UTF-8",
            "NO_PROXY": "127.0.0.1,localhost", "TERM": "dumb"}
