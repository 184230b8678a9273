"""The pre-commit hook: its manifest, the files it selects, and its entry run on good and bad
rule files as pre-commit runs it (entry + file names)."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
MANIFEST = ROOT / ".pre-commit-hooks.yaml"

GOOD = """\
version: 1
name: mine
extends: default
rules:
  - {name: keep-tests, match: {tool: pytest}, action: keep, before: keep-recent}
"""
BAD = """\
version: 1
name: broken
rules:
  - name: clear
    match: {role: tool, agee: {unit: tool_results, gte: 3}}
    action: vanish
"""


def hook() -> dict:
    hooks = yaml.safe_load(MANIFEST.read_text(encoding="utf-8"))
    assert isinstance(hooks, list) and [h["id"] for h in hooks] == ["rules-compact-validate"]
    return hooks[0]


def entry_command(entry: str) -> list[str]:
    """The entry as pre-commit runs it: the console script of the environment the package is
    installed in (what ``language: python`` builds), else, from a source tree, the same command
    through ``python -m rules_compact``."""
    argv = shlex.split(entry)
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    script = shutil.which(argv[0], path=path)
    if script is None:
        return [sys.executable, "-m", "rules_compact", *argv[1:]]
    return [script, *argv[1:]]


def run_hook(files: list[Path], cwd: Path) -> subprocess.CompletedProcess:
    h = hook()
    cmd = entry_command(h["entry"]) + list(h.get("args", [])) + [str(f.relative_to(cwd)) for f in files]
    env = {**os.environ, "RULES_COMPACT_PLUGINS": "none"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=env, timeout=60)


def test_manifest():
    h = hook()
    assert h["language"] == "python" and h["entry"].split() == ["rules-compact", "validate"]
    # the entry's command is the package's console script
    assert re.search(r'^rules-compact = "rules_compact\.cli:main"$', (ROOT / "pyproject.toml").read_text(), re.M)
    try:
        from pre_commit.clientlib import load_manifest
    except ImportError:  # pre-commit is not a test dependency; its own schema check when present
        load_manifest = None
    if load_manifest is not None:
        assert load_manifest(str(MANIFEST))[0]["id"] == "rules-compact-validate"


def test_files_pattern_selects_rule_files():
    pattern = re.compile(hook()["files"])  # pre-commit matches with re.search
    for path in ("rules/default.yaml", "rules/presets/opencode-prune.yaml", "deploy/rules/agent.yml"):
        assert pattern.search(path), path
    for path in ("config.yaml", ".github/workflows/ci.yml", "rules.py", "schemas/rules.schema.json"):
        assert not pattern.search(path), path
    assert hook()["types"] == ["yaml"]


def test_entry_on_good_and_bad_files(tmp_path):
    rules = tmp_path / "rules"
    rules.mkdir()
    good, bad, broken_yaml = rules / "good.yaml", rules / "bad.yaml", rules / "broken.yml"
    good.write_text(GOOD, encoding="utf-8")
    bad.write_text(BAD, encoding="utf-8")
    broken_yaml.write_text("version: 1\nname: [unclosed\n", encoding="utf-8")

    ok = run_hook([good], tmp_path)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert ok.stdout.strip() == "rules/good.yaml: ok"

    failed = run_hook([good, bad, broken_yaml], tmp_path)
    assert failed.returncode == 1, failed.stdout + failed.stderr
    lines = failed.stdout.splitlines()
    assert "rules/good.yaml: ok" in lines
    problems = [line for line in lines if line.startswith(("rules/bad.yaml:", "rules/broken.yml:"))]
    assert any(re.match(r"rules/bad\.yaml:5:\d+: .*agee", line) for line in problems), lines
    assert any(re.match(r"rules/bad\.yaml:6:\d+: .*vanish", line) for line in problems), lines
    assert any(line.startswith("rules/broken.yml:") for line in problems), lines


def test_entry_on_the_bundled_rule_files():
    files = sorted((ROOT / "rules").rglob("*.yaml"))
    assert files
    result = run_hook(files, ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert len(result.stdout.splitlines()) == len(files)
