from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).parent
ROOT = TESTS.parent
TRACES = TESTS / "data" / "traces"
sys.path.insert(0, str(TESTS))


def load_json(path: Path):
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


@pytest.fixture
def traces_dir() -> Path:
    return TRACES
