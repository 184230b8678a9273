"""End to end: Claude Code and Codex CLI, installed from npm, run a scripted session of 30 rounds
through ``rules-compact serve`` to a scripted model (tests/scripted_agents.py), and once more
straight to it.  Every round the model calls the shell for a listing of 1,500 lines, so the
default rules' step boundary moves; the last round answers in text.

Each agent takes a few seconds a run; where node or the npm packages are missing the tests skip
and say why (.ci/run installs the agents into .ci/.npm)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest

import rules_compact

pytest.importorskip("rules_compact.serve", reason="rules-compact serve needs the serve extra")

from rules_compact.formats import FORMATS, count_breakpoints  # noqa: E402
from rules_compact.kinds.estimators import ESTIMATORS  # noqa: E402
from rules_compact.replay import PRICES, Price, round_tokens  # noqa: E402
from rules_compact.serve.sessions import _without_breakpoints as _unmarked  # noqa: E402
from rules_compact.testing import check_api_validity  # noqa: E402
from fake_upstream import FakeUpstream  # noqa: E402
from scripted_agents import (ANSWER, ROOT, agent_binary, claude_code_turn, codex_turn, listing, main_loop,  # noqa: E402
                             run_claude, run_codex)

ROUNDS = 30


@dataclass(frozen=True)
class Agent:
    """How one agent is run and what its requests hold."""

    binary: str
    run: Callable[..., subprocess.CompletedProcess]
    history: str  # the body's key holding the conversation
    format: str
    price: Price
    base: str  # the path the agent's base URL ends in
    turn: Callable  # the scripted model's answer to a request, given the rounds
    result_type: str  # the block or item type of a tool result

    def results(self, history: list) -> list[str]:
        """The text of each tool result in ``history``, in order."""
        if self.format == "anthropic":
            return [_text(b.get("content")) for m in history if isinstance(m.get("content"), list)
                    for b in m["content"] if b.get("type") == self.result_type]
        return [_text(item.get("output")) for item in history if item.get("type") == self.result_type]


def _text(content) -> str:
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content or [] if isinstance(part, dict))


AGENTS = {
    "claude-code": Agent("claude", run_claude, "messages", "anthropic", PRICES["anthropic"], "", claude_code_turn,
                         "tool_result"),
    "codex": Agent("codex", run_codex, "input", "responses", PRICES["openai"], "/v1", codex_turn,
                   "function_call_output"),
}


class Proxy:
    """``rules-compact serve`` in a process of its own, in front of ``upstream``."""

    def __init__(self, upstream: str):
        args = [sys.executable, "-m", "rules_compact", "serve", "--port", "0", "--anthropic-upstream", upstream,
                "--openai-upstream", upstream + "/v1"]
        here = str(Path(rules_compact.__file__).parent.parent)  # the child runs the rules_compact under test
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [here, os.environ.get("PYTHONPATH")]))}
        self.process = subprocess.Popen(args, cwd=ROOT, env=env, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                                        stdout=subprocess.DEVNULL, text=True)
        self.lines: list[str] = []
        for line in self.process.stderr:
            self.lines.append(line)
            if (found := re.search(r"serving on (http://\S+)", line)):
                self.url = found[1]
                break
        else:
            raise AssertionError("the proxy did not start:\n" + "".join(self.lines))
        self._drain = threading.Thread(target=lambda: self.lines.extend(self.process.stderr), daemon=True)
        self._drain.start()

    def stop(self) -> list[str]:
        """Stop it; its stderr lines."""
        self.process.terminate()
        self.process.wait(30)
        self._drain.join(10)
        return self.lines


def _session(agent: Agent, tmp: Path, through_proxy: bool) -> tuple[subprocess.CompletedProcess, list[dict], list[str]]:
    """Run the agent's scripted session: its result, the main-loop bodies the model got, and the
    proxy's log lines."""
    binary, why = agent_binary(agent.binary)
    with FakeUpstream() as upstream:
        upstream.answer = lambda request: agent.turn(request, ROUNDS)
        proxy = Proxy(upstream.url) if through_proxy else None
        try:
            base = proxy.url if proxy else upstream.url
            done = agent.run(binary, base + agent.base, tmp / "home", tmp)
        finally:
            lines = proxy.stop() if proxy else []
        return done, main_loop(upstream, agent.history), lines


def _cost(agent: Agent, histories: list[list]) -> float:
    """The rounds' cache-aware cost (rules_compact.replay's model): a round reads from cache the
    longest prefix of messages equal to the previous round's, breakpoint marks aside (they say
    where to cache, they are not cached content)."""
    form, estimate = FORMATS[agent.format], ESTIMATORS["chars4"]
    tokens = lambda msg: estimate.of_message(msg, form.message_pieces(msg))  # noqa: E731
    total = cached = 0
    previous: list = []
    for history in histories:
        prompt = [_unmarked(m) for m in history]
        size, hit = round_tokens(prompt, previous, tokens)
        total, cached, previous = total + size, cached + hit, prompt
    return agent.price.cached * cached + agent.price.uncached * (total - cached)


@pytest.fixture(params=sorted(AGENTS))
def agent(request) -> Agent:
    found = AGENTS[request.param]
    binary, why = agent_binary(found.binary)
    if binary is None:
        pytest.skip(f"{request.param}: {why}")
    return found


def test_a_real_agent_session_through_the_proxy(agent: Agent, tmp_path: Path):
    direct, sent, _ = _session(agent, tmp_path / "direct", through_proxy=False)
    proxied, got, log = _session(agent, tmp_path / "proxied", through_proxy=True)

    for done in (direct, proxied):
        assert done.returncode == 0, done.stderr[-3000:]
        assert ANSWER in done.stdout
    assert len(got) == len(sent) == ROUNDS + 1
    assert not [line for line in log if "WARNING" in line], "".join(log)  # no request failed open
    logged = "".join(log)
    assert len(log) >= ROUNDS, logged  # a line per request, so the checks below read something
    assert "sk-" not in logged, logged  # no credential (the agents send sk-ant-test / sk-test)
    assert not re.search(r"\br\d+ \d+\b", logged) and "listings" not in logged, logged  # no content

    for before, after in zip(sent, got):  # the agent sends the same history either way
        outside = count_breakpoints(before.get("system")) + count_breakpoints(before.get("tools"))
        check_api_validity(before[agent.history], after[agent.history], agent.format, breakpoints_outside=outside)

    results = agent.results(got[-1][agent.history])
    assert len(results) == ROUNDS
    assert listing(ROUNDS) in results[-1] and listing(ROUNDS - 1) in results[-2]  # the newest arrive whole
    cleared = [k for k, text in enumerate(results, 1) if listing(k) not in text]
    assert cleared and cleared[0] == 1, cleared  # the oldest arrive cleared
    assert all(len(results[k - 1]) < len(listing(k)) / 10 for k in cleared)
    per_round = [sum(listing(k) not in text for k, text in enumerate(agent.results(b[agent.history]), 1)) for b in got]
    assert per_round[0] == 0 and len(set(per_round)) > 1, per_round  # the step boundary moved

    assert _cost(agent, [b[agent.history] for b in got]) <= _cost(agent, [b[agent.history] for b in sent])
