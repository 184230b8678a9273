"""Golden cases: YAML files under tests/golden/ holding messages, rules and the expected output,
run by the same helper plugin authors get (``rules_compact.testing.run_golden_case``)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from rules_compact.testing import run_golden_case

GOLDEN = Path(__file__).parent / "golden"
CASES = sorted(GOLDEN.glob("*.yaml"))


def load_cases():
    for path in CASES:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        for case in doc["cases"]:
            yield pytest.param(path, case["name"], id=f"{path.stem}::{case['name']}")


@pytest.mark.parametrize("path,name", list(load_cases()))
def test_golden(path, name):
    run_golden_case(path, name=name)
