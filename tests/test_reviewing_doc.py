"""docs/reviewing.md shows what the commands print: each ``$ rules-compact ...`` block is run
from the repository root and its output compared.  ``python tests/test_reviewing_doc.py``
rewrites the outputs (after a change to the bundled rules, say)."""

from __future__ import annotations

import os
import re
import shlex
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "reviewing.md"
BLOCK = re.compile(r"```console\n\$ rules-compact (?P<command>[^\n]*)\n(?P<output>.*?)```", re.S)


def run(command: str) -> str:
    """What ``rules-compact COMMAND`` prints on stdout, run from the repository root."""
    import contextlib
    import io

    from rules_compact.cli import main

    out = io.StringIO()
    cwd, width = os.getcwd(), os.environ.get("COLUMNS")
    os.chdir(ROOT)
    os.environ["COLUMNS"] = "80"  # the page shows what an 80-column terminal shows
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            main(shlex.split(command))
    finally:
        os.chdir(cwd)
        if width is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = width
    return out.getvalue()


def test_every_command_prints_what_the_page_shows():
    text = DOC.read_text(encoding="utf-8")
    blocks = list(BLOCK.finditer(text))
    commands = [b["command"].split()[0] for b in blocks]
    assert {"validate", "explain", "diff", "replay"} <= set(commands)
    assert any("--changed" in b["command"] for b in blocks)
    assert any("--output-format markdown" in b["command"] for b in blocks)
    assert any("--compare" in b["command"] for b in blocks)
    for block in blocks:
        assert block["output"] == run(block["command"]), block["command"]


def update() -> None:
    text = DOC.read_text(encoding="utf-8")
    text = BLOCK.sub(lambda b: f"```console\n$ rules-compact {b['command']}\n{run(b['command'])}```", text)
    DOC.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    update()
