"""The readers, in the order they are tried."""

from __future__ import annotations


from .base import Reader
from .claude_code import is_claude_code, is_claude_code_line, read_claude_code
from .codex import is_codex, is_codex_line, read_codex
from .messages import is_item_lines, is_item_list, is_message_lines, is_message_list, is_responses_body, read_item_lines, read_item_list, read_message_body, read_message_lines, read_message_list, read_responses_body
from .mini_swe_agent import is_mini_swe_agent, read_mini_swe_agent
from .openhands import is_event_list, is_opendevin_output, is_openhands_output, read_opendevin, read_openhands
from .swe_agent import is_swe_agent, read_swe_agent
from .tau2 import is_tau2, read_tau2
from .tau_bench import is_tau_bench_list, is_tau_bench_result, tau_bench_draft


#: Every reader, in the order they are tried: the first whose ``detect`` says yes reads the content.
READERS: tuple[Reader, ...] = (
    Reader("codex", "lines", is_codex, read_codex),
    Reader("claude-code", "lines", is_claude_code, read_claude_code),
    Reader("messages", "lines", is_message_lines, read_message_lines),
    Reader("messages", "lines", is_item_lines, read_item_lines),
    Reader("mini-swe-agent", "object", is_mini_swe_agent, read_mini_swe_agent),
    Reader("swe-agent", "object", is_swe_agent, read_swe_agent),
    Reader("tau2", "object", is_tau2, read_tau2),
    Reader("codex", "object", is_codex_line, lambda data: read_codex([(1, data)])),
    Reader("claude-code", "object", is_claude_code_line, lambda data: read_claude_code([(1, data)])),
    Reader("openhands", "object", is_openhands_output, lambda data: read_openhands(data["history"])),
    Reader("openhands", "object", is_opendevin_output, read_opendevin),
    Reader("tau-bench", "object", is_tau_bench_result, lambda data: [tau_bench_draft(data, 0)]),
    Reader("messages", "object", is_responses_body, read_responses_body),
    Reader("messages", "object", lambda data: "messages" in data, read_message_body),
    Reader("messages", "list", is_message_list, read_message_list),
    Reader("messages", "list", is_item_list, read_item_list),
    Reader("tau-bench", "list", is_tau_bench_list, lambda data: [tau_bench_draft(r, i) for i, r in enumerate(data)]),
    Reader("openhands", "list", is_event_list, read_openhands),
)

SOURCE_FORMATS = tuple(dict.fromkeys(reader.name for reader in READERS))
