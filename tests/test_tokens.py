"""Exact token counts (the ``tokens`` extra: ``o200k``, ``cl100k``) and what naming them
without the extra says."""

from __future__ import annotations

import json
import sys

import pytest

from conftest import ROOT
from rules_compact import compact, load_rules
from rules_compact.cli import main
from rules_compact.errors import ConfigError
from rules_compact.kinds import tokenizers
from rules_compact.kinds.estimators import ESTIMATORS

try:
    import bpe_openai  # noqa: F401
except ImportError:
    bpe_openai = None
needs_tokens = pytest.mark.skipif(bpe_openai is None, reason="the tokens extra is not installed")

# (text, o200k_base tokens, cl100k_base tokens), as tiktoken 0.14 counts them (encode with
# disallowed_special=()) with the vocabulary files whose SHA-256 tiktoken pins.
FIXED = [
    ("hello world", 2, 2),
    ("", 0, 0),
    (" ", 1, 1),
    ("def f(x):\n    return x + 1\n", 11, 11),
    ('{"path": "/tmp/a.py", "line": 42}', 14, 14),
    ("Grüße, 世界! 😀", 7, 10),
    ("<|endoftext|>", 7, 7),  # a special token's text counts as the text it is
    ("1234567890", 4, 4),
    ("    \n\n\t", 2, 2),
    ("x" * 1000, 125, 125),
    ("The quick brown fox jumps over the lazy dog.", 10, 10),
    ('Traceback (most recent call last):\n  File "a.py", line 1, in <module>\nValueError: bad', 26, 26),
]


@needs_tokens
@pytest.mark.parametrize("text,o200k,cl100k", FIXED, ids=[repr(t[:20]) for t, _, _ in FIXED])
def test_counts_on_fixed_strings(text, o200k, cl100k):
    assert ESTIMATORS["o200k"](text) == o200k
    assert ESTIMATORS["cl100k"](text) == cl100k


@needs_tokens
def test_a_piece_longer_than_one_encoder_call_counts_as_if_whole():
    """Pieces over 50,000 characters are cut after a newline; the count is the whole text's."""
    code = "".join(f"def f{i}(x):\n    return x * {i}  # ünïcode\n\n" for i in range(4000))  # 164,000 characters
    assert len(code) > 3 * 50_000
    for name, encoding in (("o200k", "o200k_base"), ("cl100k", "cl100k_base")):
        whole = len(bpe_openai.get_encoding(encoding).encode_ordinary(code))
        assert ESTIMATORS[name](code) == whole
    assert ESTIMATORS["o200k"]("x" * 300_000) == 37_500  # no newline: cut anywhere, 8 x's a token


@needs_tokens
def test_a_rule_file_counts_with_the_named_tokenizer():
    messages = [{"role": "user", "content": "Grüße, 世界! 😀"}, {"role": "assistant", "content": "hello world"}]
    for name, tokens in (("o200k", 7 + 2), ("cl100k", 10 + 2), ("chars4", 3 + 3), ("claude", 38 + 38)):
        rules = load_rules(f"version: 1\nname: t\ndefaults: {{estimator: {name}}}\nrules: []\n")
        assert compact(messages, [rules], format="openai").report.tokens_before == tokens


@needs_tokens
def test_replay_counts_with_estimator(capsys):
    trace = str(ROOT / "tests/data/traces/codex/rollout-2026-02-23T13-19-38-019c8a70-dda7-7f33-98ea-f30553347322.jsonl")
    rows = {}
    for name in ("chars4", "o200k"):
        assert main(["replay", trace, "--json", "--estimator", name]) == 0
        rows[name] = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert rows["chars4"][0]["prompt_tokens"] != rows["o200k"][0]["prompt_tokens"]


@pytest.fixture
def without_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "bpe_openai", None)  # import bpe_openai raises ImportError
    monkeypatch.setattr(tokenizers, "_encoding", tokenizers._encoding.__wrapped__)


def test_naming_a_tokenizer_without_the_extra_says_which_to_install(without_extra, tmp_path, capsys):
    with pytest.raises(ConfigError, match=r"estimator 'o200k' needs the 'tokens' extra.*rules-compact\[tokens\]"):
        load_rules("version: 1\nname: t\ndefaults: {estimator: o200k}\nrules: []\n")
    path = tmp_path / "r.yaml"
    path.write_text("version: 1\nname: t\ndefaults: {estimator: cl100k}\nrules: []\n")
    assert main(["validate", str(path)]) == 1
    captured = capsys.readouterr()
    err = captured.out + captured.err
    assert "r.yaml:3" in err and "pip install 'rules-compact[tokens]'" in err and "Traceback" not in err
    trace = str(ROOT / "tests/data/traces/codex/legacy-response-records.jsonl")
    assert main(["replay", trace, "--estimator", "o200k"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--estimator 'o200k' needs the 'tokens' extra" in err


def test_an_unknown_replay_estimator_lists_the_known(capsys):
    trace = str(ROOT / "tests/data/traces/codex/legacy-response-records.jsonl")
    assert main(["replay", trace, "--estimator", "chars5"]) == 2
    assert "unknown; allowed: bytes4, chars4" in capsys.readouterr().err


# --- the bill: what Claude Code and Codex logs say was billed ------------------------------------

CLAUDE = ROOT / "tests/data/traces/claude-code/ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl"
CODEX = ROOT / "tests/data/traces/codex/rollout-2025-11-17T15-30-28-019a93b9-f380-7600-98ff-940e6b99603c.jsonl"


def _lines(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _conversation(path):
    from rules_compact.readers import read_conversations

    (conv,) = read_conversations(path.read_text(encoding="utf-8"), str(path))
    return conv


def test_claude_code_usage_is_read_at_every_response():
    from rules_compact.replay import round_starts

    conv = _conversation(CLAUDE)
    starts = round_starts(conv.messages, conv.format)
    assert len(starts) == 79 and all(conv.usage[s] is not None for s in starts)
    assert all(u is None for i, u in enumerate(conv.usage) if i not in set(starts))
    # the log's own numbers (a response's lines share message.id and usage); the main chain ends at the last line
    logged = [(u["input_tokens"], u["cache_read_input_tokens"], u["cache_creation_input_tokens"])
              for d in _lines(CLAUDE) if d.get("type") == "assistant" and (u := d["message"].get("usage"))]
    read = [(u.uncached, u.cache_read, u.cache_write) for u in map(conv.usage.__getitem__, starts)]
    assert set(read) <= set(logged) and read[-1] == logged[-1] and len(set(read)) == 79
    assert sum(conv.usage[s].prompt for s in starts) == 5_572_243


def test_codex_token_counts_are_read_at_every_response():
    from rules_compact.replay import round_starts

    conv = _conversation(CODEX)
    starts = round_starts(conv.messages, conv.format)
    counts = [d["payload"]["info"]["last_token_usage"] for d in _lines(CODEX)
              if d.get("type") == "event_msg" and d["payload"].get("type") == "token_count" and d["payload"]["info"]]
    assert len(starts) == 39 and all(conv.usage[s] is not None for s in starts)
    u = conv.usage[starts[0]]
    assert (u.prompt, u.cache_read, u.cache_write) == (counts[0]["input_tokens"], counts[0]["cached_input_tokens"], 0)
    assert sum(conv.usage[s].prompt for s in starts) == 1_099_261


def test_replay_shows_the_bill_beside_the_estimate(capsys):
    assert main(["replay", str(CLAUDE), "--json", "--compare", "preset:observation-masking"]) == 0
    none, default, masking = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert default["billed"] is None and masking["billed"] is None  # the bill is no compaction's
    bill = none["billed"]
    assert bill["of_rounds"] == 79 and len(bill["rounds"]) == 79
    assert bill["estimated_tokens"] == none["prompt_tokens"] == sum(r["estimated_tokens"] for r in bill["rounds"])
    assert bill["billed_tokens"] == 5_572_243
    assert bill["cost_error"] == pytest.approx(bill["estimated_cost"] / bill["billed_cost"] - 1)
    assert main(["replay", str(CLAUDE), "--rounds"]) == 0
    out = capsys.readouterr().out
    assert "billed, by the log, in 79 rounds: 5,572,243 prompt tokens" in out
    assert out.count("\n") > 79  # a line per round


def test_a_log_without_usage_has_no_bill(capsys):
    trace = ROOT / "tests/data/traces/mini-swe-agent/deepseek_lite_dev__marshmallow-code__marshmallow-1343.traj.json"
    assert _conversation(trace).usage is None
    assert main(["replay", str(trace), "--json"]) == 0
    assert all(json.loads(line)["billed"] is None for line in capsys.readouterr().out.splitlines())
    assert main(["replay", str(trace)]) == 0
    assert "billed" not in capsys.readouterr().out


def test_the_claude_estimator_counts_characters_at_2_95_and_34_a_piece():
    claude = ESTIMATORS["claude"]
    assert (claude(""), claude("hello world"), claude("x" * 295), claude("x" * 2950)) == (0, 4 + 34, 100 + 34, 1000 + 34)
    assert ESTIMATORS["claude"].missing() is None  # no extra needed
    rules = load_rules("version: 1\nname: t\ndefaults: {estimator: claude}\nrules: []\n")
    messages = [{"role": "user", "content": "x" * 295}, {"role": "assistant", "content": "hello world"}]
    assert compact(messages, [rules], format="openai").report.tokens_before == 134 + 38


def test_the_claude_estimator_is_closer_to_the_bill_than_chars4(capsys):
    """On a Claude Code session it was fitted with, its cost estimate (with the first round's
    unseen tokens) is within 10% of the bill; chars4's is not."""
    errors = {}
    for name in ("chars4", "claude"):
        assert main(["replay", str(CLAUDE), "--json", "--estimator", name]) == 0
        errors[name] = json.loads(capsys.readouterr().out.splitlines()[0])["billed"]["cost_error_with_unseen"]
    assert abs(errors["claude"]) < 0.10 < abs(errors["chars4"])
