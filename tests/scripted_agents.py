"""The real agents (Claude Code, Codex CLI) against a scripted model on a local server, offline.

The scripted model is tests/fake_upstream.py's, answering with :func:`claude_code_turn` or
:func:`codex_turn`: every round of the main loop a shell call printing ``LINES`` lines, and
after ``rounds`` of them a final text answer.  The round is read from the request (how many
tool results it holds), so retries and the proxy's rewrites answer the same.

The agents come from npm: ``RULES_COMPACT_NPM`` names the folder that ``npm install --prefix``
filled (``node_modules/.bin/claude`` and ``codex``); .ci/run fills ``.ci/.npm``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from fake_upstream import FakeUpstream, Recorded, Reply

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


def claude_code_turn(request: Recorded, rounds: int) -> Reply:
    """Claude Code's next answer: a Bash call while fewer than ``rounds`` results came back, then
    the final answer; a side request (one without the Bash tool) gets a short text."""
    body = request.json
    if not any(t.get("name") == "Bash" for t in body.get("tools") or []):
        return Reply(text="side answer")
    done = sum(1 for m in body.get("messages") or [] if isinstance(m.get("content"), list)
               for b in m["content"] if b.get("type") == "tool_result")
    return Reply(tool=("Bash", {"command": command(done + 1), "description": "list"})) if done < rounds \
        else Reply(text=ANSWER)


def codex_turn(request: Recorded, rounds: int) -> Reply:
    """Codex's next answer: an ``exec_command`` call while fewer than ``rounds`` results came
    back, then the final answer."""
    done = sum(1 for item in request.json.get("input") or [] if item.get("type") == "function_call_output")
    return Reply(tool=("exec_command", {"cmd": command(done + 1)})) if done < rounds else Reply(text=ANSWER)


def main_loop(upstream: FakeUpstream, key: str) -> list[dict]:
    """The bodies of the agent's main-loop requests (``key``: ``messages`` or ``input``)."""
    bodies = [r.json for r in upstream.requests if r.method == "POST" and r.path in ("/v1/messages", "/v1/responses")]
    if key == "messages":
        return [b for b in bodies if any(t.get("name") == "Bash" for t in b.get("tools") or [])]
    return [b for b in bodies if isinstance(b.get(key), list)]


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
