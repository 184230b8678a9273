from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# Property-test profiles: "ci" runs with the suite; "long" (--hypothesis-profile=long) before a release.
settings.register_profile("ci", max_examples=2000, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile("long", parent=settings.get_profile("ci"), max_examples=100_000)

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
