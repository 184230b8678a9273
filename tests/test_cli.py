"""The ``rules-compact`` command line: apply, validate, explain; exit codes and error output.

Most cases run in-process through ``rules_compact.cli.main`` with capsys; a few run a real
``python -m rules_compact`` subprocess.  Every error case checks the exit code, that stderr is
a single ``rules-compact: error:`` line (or FILE:LINE:COL lines for rule errors) without a
traceback, and that the working folder is byte-for-byte unchanged (inputs untouched, no
partial output or temp file left behind).
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from rules_compact import compact, load_rules
from rules_compact import documents
from rules_compact.cli import main
from rules_compact.resources import preset_names

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
PROG = "rules-compact"

SUMMARY = re.compile(
    r"^rules-compact: (?P<items>\d+) items? changed; (?P<cb>[\d,]+) -> (?P<ca>[\d,]+) chars; "
    r"(?P<tb>[\d,]+) -> (?P<ta>[\d,]+) estimated tokens(?: \([+-]\d+(?:\.\d+)?%\))?$")

ORPHANS = [
    {"role": "user", "content": "go"},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{}"}},
        {"id": "c2", "type": "function", "function": {"name": "bash", "arguments": "{}"}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "file"},
    {"role": "tool", "tool_call_id": "zz9", "content": "stray"},
]

BAD_RULES = "version: 1\nname: bad\nrules:\n  - name: a\n    match: {role: user}\n    action: keep\n"
BAD_RULES_LINE = ("bad.yaml:5:19: 'user' is not allowed; expected one of: tool, assistant "
                  "(at rules[0].match.role)")


# --- helpers ---------------------------------------------------------------------------------


def run(capsys, *argv: str) -> tuple[int, str, str]:
    """``main(argv)`` in-process: (exit code, stdout, stderr)."""
    try:
        rc = main(list(argv))
    except SystemExit as exc:  # argparse usage errors
        rc = exc.code
    captured = capsys.readouterr()
    return rc, captured.out, captured.err


def run_sub(*argv: str, cwd: Path, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    return subprocess.run([sys.executable, "-m", "rules_compact", *argv], cwd=cwd, env=env, input=stdin,
                          capture_output=True, timeout=120)


def snapshot(folder: Path) -> dict[str, bytes | None]:
    """Every file and folder below ``folder`` (hidden ones too), with file contents."""
    out: dict[str, bytes | None] = {}
    for path in sorted(folder.rglob("*")):
        out[str(path.relative_to(folder))] = path.read_bytes() if path.is_file() else None
    return out


def assert_user_error(rc, out: str, err: str, code: int = 2, prefix: str | None = None) -> str:
    """One ``rules-compact: error:`` line on stderr, nothing on stdout, no traceback."""
    assert rc == code, err
    assert "Traceback" not in err
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"{PROG}: error: "), err
    if prefix is not None:
        assert lines[0].startswith(f"{PROG}: error: {prefix}"), err
    return lines[0]


def expected_output(data, rules=None, format=None):
    messages = data if isinstance(data, list) else data["messages"]
    result = compact(messages, rules, format=format)
    shaped = result.messages if isinstance(data, list) else {**data, "messages": result.messages}
    return json.loads(json.dumps(shaped)), result.report


def check_summary(line: str, report) -> None:
    m = SUMMARY.match(line)
    assert m, line
    num = lambda s: int(s.replace(",", ""))  # noqa: E731
    assert num(m["items"]) == report.items_changed
    assert (num(m["cb"]), num(m["ca"])) == (report.chars_before, report.chars_after)
    assert (num(m["tb"]), num(m["ta"])) == (report.tokens_before, report.tokens_after)
    for key, value in (("cb", report.chars_before), ("tb", report.tokens_before)):
        assert m[key] == f"{value:,}"  # thousands separators


@pytest.fixture
def work(tmp_path, monkeypatch):
    """A folder holding the examples (object form), a bare-list copy and an orphan case; cwd."""
    coding = json.loads((EXAMPLES / "coding-session.json").read_text(encoding="utf-8"))
    (tmp_path / "coding.json").write_bytes((EXAMPLES / "coding-session.json").read_bytes())
    (tmp_path / "anthropic.json").write_bytes((EXAMPLES / "anthropic-session.json").read_bytes())
    (tmp_path / "bare.json").write_text(json.dumps(coding["messages"]), encoding="utf-8")
    (tmp_path / "extra.json").write_text(json.dumps(
        {"model": "deepseek", "meta": {"run": 7, "tags": ["a", "b"]}, "messages": coding["messages"],
         "zlast": None}), encoding="utf-8")
    (tmp_path / "stray.json").write_text(json.dumps(ORPHANS), encoding="utf-8")
    (tmp_path / "bad.yaml").write_text(BAD_RULES, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def load(path: Path):
    return json.loads(path.read_text(encoding="utf-8"))


# --- apply: success ----------------------------------------------------------------------------


def test_apply_to_stdout(work, capsys):
    before = snapshot(work)
    rc, out, err = run(capsys, "apply", "coding.json")
    assert rc == 0, err
    expected, report = expected_output(load(work / "coding.json"))
    assert json.loads(out) == expected
    assert report.items_changed > 0
    lines = err.splitlines()
    assert len(lines) == 1
    check_summary(lines[0], report)
    assert snapshot(work) == before  # nothing written, input untouched


def test_apply_to_output_file(work, capsys):
    before = snapshot(work)
    rc, out, err = run(capsys, "apply", "coding.json", "-o", "out.json")
    assert rc == 0, err
    assert out == ""
    expected, report = expected_output(load(work / "coding.json"))
    assert load(work / "out.json") == expected
    check_summary(err.splitlines()[0], report)
    after = snapshot(work)
    assert set(after) == set(before) | {"out.json"}  # no temp file left behind
    assert {k: v for k, v in after.items() if k != "out.json"} == before


def test_apply_overwrites_existing_output(work, capsys):
    (work / "out.json").write_text("old", encoding="utf-8")
    rc, out, err = run(capsys, "apply", "bare.json", "-o", "out.json")
    assert rc == 0, err
    assert load(work / "out.json") == expected_output(load(work / "bare.json"))[0]


def test_summary_line_numbers(work, capsys):
    rc, out, err = run(capsys, "apply", "coding.json", "--report", "report.json")
    assert rc == 0, err
    report = load(work / "report.json")
    m = SUMMARY.match(err.splitlines()[0])
    assert m, err
    assert int(m["items"]) == report["items_changed"] > 0
    assert int(m["tb"].replace(",", "")) == report["tokens_before"]
    assert int(m["ta"].replace(",", "")) == report["tokens_after"] < report["tokens_before"]
    assert int(m["cb"].replace(",", "")) == report["chars_before"]
    assert int(m["ca"].replace(",", "")) == report["chars_after"] < report["chars_before"]


def test_report_json(work, capsys):
    rc, out, err = run(capsys, "apply", "coding.json", "-o", "out.json", "--report", "report.json")
    assert rc == 0, err
    report = load(work / "report.json")
    _, api = expected_output(load(work / "coding.json"))
    assert report["format"] == "openai"
    assert report["items_changed"] == api.items_changed
    assert report["tokens_before"] == api.tokens_before
    assert report["tokens_after"] == api.tokens_after
    assert report["chars_before"] == api.chars_before
    assert report["chars_after"] == api.chars_after
    assert report["over_budget"] is False
    (p,) = report["passes"]
    assert p["ruleset"] == "default"
    decisions = p["decisions"]
    assert len(decisions) == len(api.passes[0].decisions)
    assert sum(d["changed"] for d in decisions) == report["items_changed"]
    assert sum(d["saved"] for d in decisions) == report["tokens_before"] - report["tokens_after"]
    for d in decisions:
        assert {"item", "role", "tool", "rule", "action", "changed", "saved", "age"} <= set(d)
        assert d["saved"] == d["tokens_before"] - d["tokens_after"]
        if d["changed"]:
            assert d["rule"] and d["saved"] > 0
    assert p["saved_by_rule"] == {"placeholder-old-results": 5_596, "strip-old-reasoning": 1_816}
    assert sum(p["saved_by_rule"].values()) == report["tokens_before"] - report["tokens_after"]
    assert {f.name for f in work.iterdir()} >= {"out.json", "report.json"}
    assert not [f for f in work.iterdir() if f.name.endswith(".tmp")]


def test_bare_list_shape_preserved(work, capsys):
    rc, out, err = run(capsys, "apply", "bare.json")
    assert rc == 0, err
    data = json.loads(out)
    assert isinstance(data, list)
    assert data == expected_output(load(work / "bare.json"))[0]


def test_object_shape_other_keys_unchanged(work, capsys):
    rc, out, err = run(capsys, "apply", "extra.json")
    assert rc == 0, err
    source = load(work / "extra.json")
    data = json.loads(out)
    assert isinstance(data, dict)
    assert list(data) == list(source)  # same keys, same order
    for key in source:
        if key != "messages":
            assert data[key] == source[key]
    assert data["messages"] != source["messages"]
    assert len(data["messages"]) == len(source["messages"])


def test_stdin(work, capsys, monkeypatch):
    raw = (work / "coding.json").read_bytes()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(raw), encoding="utf-8"))
    rc, out, err = run(capsys, "apply", "-")
    assert rc == 0, err
    expected, report = expected_output(load(work / "coding.json"))
    assert json.loads(out) == expected
    check_summary(err.splitlines()[0], report)


def test_stdin_to_output_file(work, capsys, monkeypatch):
    raw = (work / "bare.json").read_bytes()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(raw), encoding="utf-8"))
    rc, out, err = run(capsys, "apply", "-", "-o", "out.json")
    assert rc == 0, err
    assert out == ""
    assert load(work / "out.json") == expected_output(load(work / "bare.json"))[0]


def test_stdin_not_json(work, capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"nope"), encoding="utf-8"))
    before = snapshot(work)
    rc, out, err = run(capsys, "apply", "-")
    assert "invalid JSON" in assert_user_error(rc, out, err, 2)
    assert snapshot(work) == before


def test_in_place(work, capsys):
    expected, _ = expected_output(load(work / "coding.json"))
    before = snapshot(work)
    rc, out, err = run(capsys, "apply", "coding.json", "--in-place")
    assert rc == 0, err
    assert out == ""
    assert load(work / "coding.json") == expected
    after = snapshot(work)
    assert set(after) == set(before)  # no temp file left behind
    assert {k: v for k, v in after.items() if k != "coding.json"} == {
        k: v for k, v in before.items() if k != "coding.json"}


@pytest.mark.parametrize("argv", [
    ["apply", "coding.json", "--in-place", "-o", "out.json"],
    ["apply", "-", "--in-place"],
], ids=["with-output", "stdin"])
def test_in_place_usage_errors(work, capsys, argv):
    before = snapshot(work)
    rc, out, err = run(capsys, *argv)
    assert_user_error(rc, out, err, 2)
    assert snapshot(work) == before


@pytest.mark.parametrize("output", ["coding.json", "./coding.json", "{abs}"], ids=["same", "dot", "absolute"])
def test_output_equal_to_input_is_refused(work, capsys, output):
    before = snapshot(work)
    rc, out, err = run(capsys, "apply", "coding.json", "-o", output.format(abs=work / "coding.json"))
    line = assert_user_error(rc, out, err, 2)
    assert "--in-place" in line
    assert snapshot(work) == before


def test_explicit_default_rules_same_as_none(work, capsys):
    rc1, out1, _ = run(capsys, "apply", "coding.json")
    rc2, out2, _ = run(capsys, "apply", "coding.json", "-r", "default")
    assert rc1 == rc2 == 0
    assert out1 == out2


def test_repeated_rules_are_successive_passes(work, capsys):
    rc, out, err = run(capsys, "apply", "coding.json", "-r", "default", "-r", "default", "--report", "r.json")
    assert rc == 0, err
    report = load(work / "r.json")
    assert [p["ruleset"] for p in report["passes"]] == ["default", "default"]
    first, second = report["passes"]
    assert second["tokens_before"] == first["tokens_after"]
    assert second["changed"] == 0  # the default rules are idempotent
    assert report["items_changed"] == first["changed"] > 0
    assert json.loads(out) == expected_output(load(work / "coding.json"))[0]


def test_rule_file_path(work, capsys):
    (work / "mine.yaml").write_text(
        "version: 1\nname: mine\nrules:\n  - name: clear-all\n    match: {role: tool}\n"
        "    action: {placeholder: '[gone]'}\n", encoding="utf-8")
    rc, out, err = run(capsys, "apply", "bare.json", "-r", "mine.yaml")
    assert rc == 0, err
    data = json.loads(out)
    assert all(m["content"] == "[gone]" for m in data if m["role"] == "tool")
    assert [m for m in data if m["role"] != "tool"] == [m for m in load(work / "bare.json") if m["role"] != "tool"]


@pytest.mark.parametrize("name", preset_names() or [pytest.param("none", marks=pytest.mark.skip("no presets"))])
def test_bundled_presets_apply_and_validate(work, capsys, name):
    rc, out, err = run(capsys, "apply", "coding.json", "-r", f"preset:{name}")
    assert rc == 0, err
    assert isinstance(json.loads(out), dict)
    rc, out, err = run(capsys, "validate", f"preset:{name}")
    assert (rc, out.strip()) == (0, f"preset:{name}: ok")


def test_unknown_preset(work, capsys):
    before = snapshot(work)
    rc, out, err = run(capsys, "apply", "coding.json", "-r", "preset:nope", "-o", "out.json")
    line = assert_user_error(rc, out, err, 2, prefix="preset:nope: no such preset")
    assert "available" in line
    for name in preset_names():
        assert f"preset:{name}" in line
    assert snapshot(work) == before


def test_invalid_rules_in_apply(work, capsys):
    before = snapshot(work)
    rc, out, err = run(capsys, "apply", "coding.json", "-r", "bad.yaml", "-o", "out.json", "--report", "r.json")
    assert rc == 1
    assert out == ""
    assert "Traceback" not in err
    assert err.splitlines() == [BAD_RULES_LINE]
    assert snapshot(work) == before


def test_missing_rule_file_in_apply(work, capsys):
    before = snapshot(work)
    rc, out, err = run(capsys, "apply", "coding.json", "-r", "nope.yaml")
    assert_user_error(rc, out, err, 2, prefix="nope.yaml")
    assert snapshot(work) == before


@pytest.mark.parametrize("forced", ["openai", "anthropic"])
@pytest.mark.parametrize("source,detected", [("coding.json", "openai"), ("anthropic.json", "anthropic")])
def test_format_forcing(work, capsys, source, detected, forced):
    if (source, forced) == ("coding.json", "anthropic"):  # OpenAI tool messages are no Anthropic messages
        before = snapshot(work)
        rc, out, err = run(capsys, "apply", source, "--format", forced)
        assert_user_error(rc, out, err, 2, prefix="coding.json: message 3: unknown role 'tool'; allowed: user, assistant, system")
        assert snapshot(work) == before
        return
    rc, out, err = run(capsys, "apply", source, "--report", "r.json")
    assert rc == 0, err
    assert load(work / "r.json")["format"] == detected
    rc, out, err = run(capsys, "apply", source, "--format", forced, "--report", "r.json")
    assert rc == 0, err
    assert load(work / "r.json")["format"] == forced
    assert json.loads(out) == expected_output(load(work / source), format=forced)[0]
    rc, out, err = run(capsys, "explain", source, "--format", forced)
    assert rc == 0, err
    assert f"format {forced}" in out.splitlines()[0]


def test_unknown_format_is_usage_error(work, capsys):
    before = snapshot(work)
    rc, out, err = run(capsys, "apply", "coding.json", "--format", "bogus")
    assert rc == 2
    assert "Traceback" not in err
    assert out == ""
    assert "bogus" in err
    assert snapshot(work) == before


def test_over_budget_warning(work, capsys):
    (work / "tiny.yaml").write_text(
        (ROOT / "rules" / "default.yaml").read_text(encoding="utf-8").replace(
            "name: default", "name: tiny").replace("defaults:\n", "defaults:\n  over_budget_tokens: 10\n"),
        encoding="utf-8")
    rc, out, err = run(capsys, "apply", "coding.json", "-r", "tiny.yaml", "-o", "out.json", "--report", "r.json")
    assert rc == 0, err
    lines = err.splitlines()
    assert len(lines) == 2, err
    report = load(work / "r.json")
    assert report["over_budget"] is True
    assert SUMMARY.match(lines[0])
    assert lines[1].startswith(f"{PROG}: warning: ")
    assert "over budget" in lines[1]
    assert f"{report['tokens_after']:,}" in lines[1] and "10" in lines[1]
    assert load(work / "out.json") == expected_output(load(work / "coding.json"), rules=load_rules(
        str(work / "tiny.yaml")))[0]


def test_no_warning_under_budget(work, capsys):
    (work / "big.yaml").write_text(
        (ROOT / "rules" / "default.yaml").read_text(encoding="utf-8").replace(
            "defaults:\n", "defaults:\n  over_budget_tokens: 100000000\n"), encoding="utf-8")
    rc, out, err = run(capsys, "apply", "coding.json", "-r", "big.yaml")
    assert rc == 0, err
    assert len(err.splitlines()) == 1
    assert "warning" not in err


# --- apply: bad input ---------------------------------------------------------------------------


BAD_INPUTS = [
    pytest.param(b"hello", "invalid JSON", id="not-json"),
    pytest.param(b"", "invalid JSON", id="empty-file"),
    pytest.param(b'[{"role": "user", "content": "hi"', "invalid JSON", id="truncated-json"),
    pytest.param(b'[{"role": "user", "content": "caf\xe9"}]', "UTF-8", id="not-utf8"),
    pytest.param(b'"just a string"', "messages", id="top-level-string"),
    pytest.param(b"42", "messages", id="top-level-number"),
    pytest.param(b"null", "messages", id="top-level-null"),
    pytest.param(b'{"foo": 1}', "messages", id="object-without-messages"),
    pytest.param(b'{"messages": "hi"}', "messages", id="messages-not-a-list"),
    pytest.param(b"[1, 2]", "not a message", id="list-of-numbers"),
    pytest.param(b'[{"content": "no role"}]', "not a message", id="item-without-role"),
    pytest.param(b'[{"role": "user", "content": "ok"}, ["nested"]]', "not a message", id="list-in-list"),
    pytest.param(b'{"messages": [{"role": 5}]}', "not a message", id="role-not-a-string"),
]


@pytest.mark.parametrize("raw,fragment", BAD_INPUTS)
@pytest.mark.parametrize("command", ["apply", "explain"])
def test_bad_input(work, capsys, raw, fragment, command):
    (work / "in.json").write_bytes(raw)
    before = snapshot(work)
    argv = [command, "in.json"] + (["-o", "out.json", "--report", "r.json"] if command == "apply" else [])
    rc, out, err = run(capsys, *argv)
    line = assert_user_error(rc, out, err, 2, prefix="in.json")
    assert fragment in line
    assert snapshot(work) == before


def test_truncated_json_has_position(work, capsys):
    (work / "in.json").write_bytes(b'[{"role": "user",\n "content": "hi"')
    rc, out, err = run(capsys, "apply", "in.json")
    line = assert_user_error(rc, out, err, 2)
    assert line.startswith(f"{PROG}: error: in.json:2:")


@pytest.mark.parametrize("command", ["apply", "explain"])
def test_missing_input(work, capsys, command):
    before = snapshot(work)
    rc, out, err = run(capsys, command, "nope.json")
    line = assert_user_error(rc, out, err, 2, prefix="nope.json")
    assert "No such file" in line
    assert snapshot(work) == before


@pytest.mark.parametrize("command", ["apply", "explain"])
def test_directory_input(work, capsys, command):
    (work / "folder").mkdir()
    before = snapshot(work)
    rc, out, err = run(capsys, command, "folder")
    line = assert_user_error(rc, out, err, 2, prefix="folder")
    assert ("directory" if command == "apply" else "a folder with no conversation file") in line  # explain reads folders
    assert snapshot(work) == before


# --- apply: unwritable output ---------------------------------------------------------------------


@pytest.mark.parametrize("output", ["missing/out.json", "coding.json/out.json", "outdir"],
                         ids=["missing-folder", "parent-is-a-file", "output-is-a-folder"])
def test_unwritable_output(work, capsys, output):
    (work / "outdir").mkdir()
    before = snapshot(work)
    rc, out, err = run(capsys, "apply", "coding.json", "-o", output)
    assert_user_error(rc, out, err, 2, prefix=output)
    assert snapshot(work) == before  # no partial or temp file anywhere


def test_unwritable_report(work, capsys):
    before = snapshot(work)
    rc, out, err = run(capsys, "apply", "coding.json", "-o", "out.json", "--report", "missing/r.json")
    assert_user_error(rc, out, err, 2, prefix="missing/r.json")
    assert not (work / "out.json").exists()
    assert snapshot(work) == before


def test_failed_write_leaves_old_output_and_no_temp(work, capsys, monkeypatch):
    (work / "out.json").write_text("old contents", encoding="utf-8")
    before = snapshot(work)

    def boom(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(documents.os, "replace", boom)
    rc, out, err = run(capsys, "apply", "coding.json", "-o", "out.json")
    assert_user_error(rc, out, err, 2, prefix="out.json")
    assert snapshot(work) == before


def test_failed_in_place_write_keeps_input(work, capsys, monkeypatch):
    before = snapshot(work)

    def boom(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(documents.os, "replace", boom)
    rc, out, err = run(capsys, "apply", "coding.json", "--in-place")
    assert_user_error(rc, out, err, 2, prefix="coding.json")
    assert snapshot(work) == before


# --- validate ------------------------------------------------------------------------------------


def test_validate_ok(work, capsys):
    (work / "good.yaml").write_bytes((ROOT / "rules" / "default.yaml").read_bytes())
    rc, out, err = run(capsys, "validate", "good.yaml")
    assert (rc, out, err) == (0, "good.yaml: ok\n", "")


def test_validate_bundled_default(work, capsys):
    rc, out, err = run(capsys, "validate", "default")
    assert (rc, out, err) == (0, "default: ok\n", "")


def test_validate_bad(work, capsys):
    before = snapshot(work)
    rc, out, err = run(capsys, "validate", "bad.yaml")
    assert rc == 1
    assert "Traceback" not in err
    assert (out + err).splitlines() == [BAD_RULES_LINE]
    assert snapshot(work) == before


def test_validate_several_files(work, capsys):
    (work / "good.yaml").write_bytes((ROOT / "rules" / "default.yaml").read_bytes())
    (work / "worse.yaml").write_text(
        "version: 2\nname: worse\nrules:\n  - name: a\n    match: {role: nobody}\n    action: keep\n",
        encoding="utf-8")
    rc, out, err = run(capsys, "validate", "good.yaml", "bad.yaml", "worse.yaml")
    assert rc == 1
    assert "Traceback" not in err
    lines = (out + err).splitlines()
    assert sorted(lines) == sorted([
        "good.yaml: ok",
        BAD_RULES_LINE,
        "worse.yaml:1:10: expected 1, got 2 (at version)",
        "worse.yaml:5:19: 'nobody' is not allowed; expected one of: tool, assistant (at rules[0].match.role)",
    ])
    assert "good.yaml: ok" in out.splitlines()


def test_validate_missing_file(work, capsys):
    rc, out, err = run(capsys, "validate", "nope.yaml")
    assert_user_error(rc, out, err, 2, prefix="nope.yaml")


def test_validate_needs_a_file(work, capsys):
    rc, out, err = run(capsys, "validate")
    assert rc == 2
    assert "Traceback" not in err


# --- explain -------------------------------------------------------------------------------------


def test_explain(work, capsys):
    before = snapshot(work)
    rc, out, err = run(capsys, "explain", "coding.json")
    assert rc == 0, err
    assert "Traceback" not in err
    _, report = expected_output(load(work / "coding.json"))
    decisions = report.passes[0].decisions
    lines = out.splitlines()
    assert lines[0].startswith("coding.json")
    assert "50 messages" in lines[0] and "openai" in lines[0]
    header = next(i for i, line in enumerate(lines) if line.split()[:1] == ["#"])
    for column in ("role", "tool", "age", "rule", "action", "saved"):
        assert column in lines[header].split()
    rows = lines[header + 1: header + 1 + len(decisions)]
    for d, row in zip(decisions, rows):
        cells = row.split()
        assert cells[0] == str(d.item)
        assert d.role in row
        assert (d.rule or "-") in cells
        assert f"{d.saved:,}" in cells  # thousands separators
    assert not lines[header + 1 + len(decisions)].split()[0].isdigit()  # one row per item, no more
    for rule in {d.rule for d in decisions if d.rule}:
        assert rule in out
    saved = report.tokens_before - report.tokens_after
    assert f"{saved:,}" in out
    total = [line for line in lines if line.startswith("total")]
    assert len(total) == 1
    assert f"{report.tokens_before:,} -> {report.tokens_after:,}" in total[0]
    assert "orphan" not in out and "dangling" not in out
    assert snapshot(work) == before  # explain writes nothing


def test_explain_orphans_and_dangling(work, capsys):
    rc, out, err = run(capsys, "explain", "stray.json")
    assert rc == 0, err
    orphan = [line for line in out.splitlines() if "orphan" in line]
    dangling = [line for line in out.splitlines() if "dangling" in line]
    assert len(orphan) == 1 and "#2" in orphan[0]  # item 2 answers call zz9, which nobody made
    assert len(dangling) == 1 and "c2" in dangling[0] and "c1" not in dangling[0]


def test_explain_with_rules(work, capsys):
    rc, out, err = run(capsys, "explain", "coding.json", "-r", "default", "-r", "default")
    assert rc == 0, err
    assert out.count("pass: default") == 2


def test_explain_invalid_rules(work, capsys):
    rc, out, err = run(capsys, "explain", "coding.json", "-r", "bad.yaml")
    assert rc == 1
    assert out == ""
    assert err.splitlines() == [BAD_RULES_LINE]


# --- usage ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("argv", [[], ["frobnicate"], ["apply"], ["apply", "a.json", "--bogus"]],
                         ids=["nothing", "unknown-command", "no-input", "unknown-option"])
def test_usage_errors(work, capsys, argv):
    rc, out, err = run(capsys, *argv)
    assert rc == 2
    assert "Traceback" not in err
    assert "error" in err


# --- a real subprocess ---------------------------------------------------------------------------


def test_subprocess_apply_stdout(work):
    before = snapshot(work)
    proc = run_sub("apply", "coding.json", cwd=work)
    assert proc.returncode == 0, proc.stderr
    expected, report = expected_output(load(work / "coding.json"))
    assert json.loads(proc.stdout) == expected
    err = proc.stderr.decode()
    assert "Traceback" not in err
    assert len(err.splitlines()) == 1
    check_summary(err.splitlines()[0], report)
    assert snapshot(work) == before


def test_subprocess_stdin(work):
    proc = run_sub("apply", "-", "-o", "out.json", cwd=work, stdin=(work / "bare.json").read_bytes())
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == b""
    assert load(work / "out.json") == expected_output(load(work / "bare.json"))[0]


def test_subprocess_in_place(work):
    expected, _ = expected_output(load(work / "anthropic.json"))
    proc = run_sub("apply", "anthropic.json", "--in-place", cwd=work)
    assert proc.returncode == 0, proc.stderr
    assert load(work / "anthropic.json") == expected


@pytest.mark.parametrize("argv,code", [
    (["apply", "nope.json"], 2),
    (["apply", "bad.yaml"], 2),
    (["apply", "coding.json", "-o", "coding.json"], 2),
    (["apply", "coding.json", "-r", "preset:nope"], 2),
    (["apply", "coding.json", "-o", "missing/out.json"], 2),
    (["explain", "stray.json", "-r", "bad.yaml"], 1),
    (["validate", "bad.yaml"], 1),
], ids=["missing-input", "yaml-not-json", "output-is-input", "unknown-preset", "unwritable", "explain-bad-rules",
        "validate-bad"])
def test_subprocess_errors(work, argv, code):
    before = snapshot(work)
    proc = run_sub(*argv, cwd=work)
    err = proc.stderr.decode()
    assert proc.returncode == code, err
    assert "Traceback" not in err
    if code == 2:
        assert len(err.splitlines()) == 1 and err.startswith(f"{PROG}: error: ")
        assert proc.stdout == b""
    else:
        assert (proc.stdout.decode() + err).splitlines() == [BAD_RULES_LINE]
    assert snapshot(work) == before


def test_subprocess_explain(work):
    proc = run_sub("explain", "stray.json", cwd=work)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.decode()
    assert "after the step boundary: left as it is" in out
    assert any("orphan" in line and "#2" in line for line in out.splitlines())
    assert any("dangling" in line and "c2" in line for line in out.splitlines())


@pytest.mark.parametrize("action", ["keep", "placeholder", "truncate", "strip-text", "clear-inputs"])
def test_subprocess_bare_actions_never_traceback(work, action):
    """Every action the schema allows as a bare name validates and applies without a traceback."""
    (work / "bare-action.yaml").write_text(
        f"version: 1\nname: b\nrules:\n  - name: a\n    match: {{role: tool}}\n    action: {action}\n",
        encoding="utf-8")
    proc = run_sub("validate", "bare-action.yaml", cwd=work)
    assert "Traceback" not in proc.stderr.decode()
    assert proc.returncode in (0, 1)
    if proc.returncode == 0:
        proc = run_sub("apply", "coding.json", "-r", "bare-action.yaml", cwd=work)
        assert "Traceback" not in proc.stderr.decode()
        assert proc.returncode == 0


def test_report_equal_to_input_is_refused(work, capsys):
    """Input files are never modified: --report must not overwrite INPUT either."""
    before = snapshot(work)
    rc, out, err = run(capsys, "apply", "coding.json", "-o", "out.json", "--report", "coding.json")
    assert_user_error(rc, out, err, 2)
    assert snapshot(work) == before


def test_subprocess_deeply_nested_json_input(work):
    """Malformed input nested deeper than Python's recursion limit is a user error, not a crash."""
    (work / "deep.json").write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    before = snapshot(work)
    proc = run_sub("apply", "deep.json", "-o", "out.json", cwd=work)
    err = proc.stderr.decode()
    assert "Traceback" not in err
    assert proc.returncode == 2, err
    assert len(err.splitlines()) == 1 and err.startswith(f"{PROG}: error: deep.json")
    assert snapshot(work) == before


def test_subprocess_deeply_nested_rule_file(work):
    (work / "deep.yaml").write_text("version: 1\nname: x\nrules: " + "[" * 5000 + "]" * 5000 + "\n",
                                    encoding="utf-8")
    proc = run_sub("validate", "deep.yaml", cwd=work)
    err = proc.stderr.decode()
    assert "Traceback" not in err
    assert proc.returncode == 1, err
    lines = (proc.stdout.decode() + err).splitlines()
    assert lines and all(re.match(r"deep\.yaml:\d+:\d+: ", line) for line in lines), lines


def test_output_file_gets_ordinary_permissions(work, capsys):
    """Atomic writes go through a private temp file; the result must not stay private."""
    umask = os.umask(0o022)
    try:
        assert main(["apply", "coding.json", "-o", "fresh.json"]) == 0
    finally:
        os.umask(umask)
    assert os.stat("fresh.json").st_mode & 0o777 == 0o644


# --- Responses API input, output shapes, forced formats -----------------------------------------

TRACES = ROOT / "tests" / "data" / "traces"
#: A real Codex rollout: 39 model responses, each reasoning (all but one) and one shell call, no message.
CODEX_ROLLOUT = TRACES / "codex" / "rollout-2025-11-17T15-30-28-019a93b9-f380-7600-98ff-940e6b99603c.jsonl"


@pytest.fixture
def responses(work):
    """The rollout's items as a bare Responses list (r.json) and as a request body (body.json)."""
    items = [json.loads(line)["payload"] for line in CODEX_ROLLOUT.read_text(encoding="utf-8").splitlines()
             if '"type":"response_item"' in line and '"ghost_snapshot"' not in line]
    body = {"model": "gpt-5.1-codex", "instructions": "Be brief.", "input": items, "store": False,
            "tools": [{"type": "function", "name": "shell", "parameters": {"type": "object"}}]}
    (work / "r.json").write_text(json.dumps(items), encoding="utf-8")
    (work / "body.json").write_text(json.dumps(body), encoding="utf-8")
    return items, body


def test_apply_reads_and_writes_responses_input(work, capsys, responses):
    items, body = responses
    # observation masking: the default's boundary never pays back on this short session
    rules = ["--rules", "preset:observation-masking"]
    expected = compact(items, "preset:observation-masking", format="responses")
    assert expected.report.items_changed > 0
    compacted = json.loads(json.dumps(expected.messages))
    for argv in (["apply", *rules, "r.json"], ["apply", *rules, "--format", "responses", "r.json"]):
        rc, out, err = run(capsys, *argv)
        assert rc == 0, err
        assert json.loads(out) == compacted
        assert len(err.splitlines()) == 1 and SUMMARY.match(err.strip())
    rc, out, err = run(capsys, "apply", *rules, "body.json", "-o", "out.json", "--report", "rep.json")
    assert rc == 0, err
    assert load(work / "out.json") == {**body, "input": compacted}  # only `input` changes
    assert load(work / "rep.json")["format"] == "responses"
    rc, out, err = run(capsys, "apply", *rules, "body.json", "--in-place")
    assert rc == 0, err
    assert load(work / "body.json") == {**body, "input": compacted}


def test_every_command_reads_responses_input(work, capsys, responses):
    items, _ = responses
    report = compact(items, None, format="responses").report
    rc, out, err = run(capsys, "explain", "body.json")
    assert rc == 0, err
    assert out.splitlines()[0] == f"body.json: {len(items)} messages, format responses"
    rc, out, err = run(capsys, "stats", "r.json", "body.json")
    assert rc == 0, err
    rows = {line.split()[0]: line.split() for line in out.splitlines()[1:3]}
    for name in ("r.json", "body.json"):
        assert rows[name][1:5] == [str(len(items)), "39", f"{report.tokens_before:,}", f"{report.tokens_after:,}"]
    rc, out, err = run(capsys, "audit", "r.json")
    assert rc == 0, err
    assert re.search(r"^shell\s+37\s+37\s", out, re.M) and re.search(r"^update_plan\s+2\s+2\s", out, re.M)
    rc, out, err = run(capsys, "replay", "body.json")
    assert rc == 0, err
    assert out.startswith("body.json: replayed 39 rounds")
    rc, out, err = run(capsys, "diff", "default", "preset:keep-recent-results", "r.json", "body.json")
    assert rc == 0, err
    assert "r.json:" in out and "body.json:" in out


def test_replay_starts_a_round_at_every_model_response(work, capsys):
    from rules_compact.readers import read_conversations
    from rules_compact.replay import round_starts

    items = read_conversations(CODEX_ROLLOUT.read_bytes(), "rollout")[0].messages
    calls = [i for i, it in enumerate(items) if it["type"] == "function_call"]
    assert len(calls) == 39 and not any(it.get("role") == "assistant" for it in items)
    # each response is its reasoning (when it has one) and its call: the round ends before it
    starts = [i - 1 if items[i - 1]["type"] == "reasoning" else i for i in calls]
    assert round_starts(items, "responses") == starts
    rc, out, err = run(capsys, "replay", str(CODEX_ROLLOUT))
    assert rc == 0, err
    assert "replayed 39 rounds" in out


def test_forced_format_that_finds_fewer_items_warns(work, capsys, responses):
    rc, out, err = run(capsys, "apply", "r.json", "--format", "anthropic", "-o", "out.json")
    # Anthropic would reject Responses items: one error line, with the format the content looks like
    message = assert_user_error(rc, out, err, 2)
    assert message.startswith("rules-compact: error: r.json: message ") and message.endswith(
        "; the content looks like responses (--format responses)"), message  # located: the file, the message
    assert not (work / "out.json").exists()
    rc, out, err = run(capsys, "explain", "anthropic.json", "--format", "openai")
    assert rc == 0, err
    assert "--format openai finds only 13 of the 32" in err and "looks like anthropic" in err
    rc, out, err = run(capsys, "stats", "coding.json", "--format", "openai")
    assert rc == 0 and "warning" not in err


def test_output_shapes(work, capsys):
    """A file in gives the same shape out; a log gives its API message list; many conversations, JSONL."""
    messages = load(work / "bare.json")
    expected = json.loads(json.dumps(compact(messages).messages))
    (work / "lines.jsonl").write_text("".join(json.dumps(m) + "\n" for m in messages), encoding="utf-8")
    rc, out, err = run(capsys, "apply", "lines.jsonl", "--in-place")  # one message per line stays so
    assert rc == 0, err
    assert [json.loads(line) for line in (work / "lines.jsonl").read_text(encoding="utf-8").splitlines()] == expected
    bodies = [{"id": i, "messages": messages[: 20 + i]} for i in range(3)]
    (work / "bodies.jsonl").write_text("".join(json.dumps(b) + "\n" for b in bodies), encoding="utf-8")
    rc, out, err = run(capsys, "apply", "bodies.jsonl", "--in-place", "--report", "rep.json")
    assert rc == 0, err
    written = [json.loads(line) for line in (work / "bodies.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [b["id"] for b in written] == [0, 1, 2]
    assert written[2]["messages"] == json.loads(json.dumps(compact(bodies[2]["messages"]).messages))
    report = load(work / "rep.json")  # many conversations: one report each, named
    assert [c["name"] for c in report["conversations"]] == [f"bodies.jsonl#{i}" for i in (1, 2, 3)]
    log = TRACES / "claude-code" / "agent-a7be2f0.jsonl"
    rc, out, err = run(capsys, "apply", str(log), "--report", "rep.json")
    assert rc == 0, err
    converted = load(TRACES / "claude-code" / "agent-a7be2f0.messages.json")  # the log's API message list
    assert json.loads(out) == json.loads(json.dumps(compact(converted).messages))
    assert "format" in load(work / "rep.json")  # one conversation: its report itself
    (work / "session.jsonl").write_bytes(log.read_bytes())
    before = snapshot(work)
    rc, out, err = run(capsys, "apply", "session.jsonl", "--in-place")  # a log is not written back as a log
    assert "is an agent log (claude-code)" in assert_user_error(rc, out, err, 2)
    assert snapshot(work) == before


def test_summary_line_says_one_item_in_the_singular(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    long = "x" * 2000
    (tmp_path / "one.json").write_text(json.dumps([
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "Read", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": long},
        {"role": "assistant", "content": "done"}]))
    (tmp_path / "r.yaml").write_text("version: 1\nname: one\nrules:\n  - {name: clear, match: {role: tool}, action: placeholder}\n")
    rc, out, err = run(capsys, "apply", "one.json", "-r", "r.yaml", "-o", "out.json")
    assert rc == 0, err
    assert err.startswith("rules-compact: 1 item changed; "), err
