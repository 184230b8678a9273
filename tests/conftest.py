from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# Property-test profiles (examples per property): "ci" runs with the README's test command;
# "thorough" is what .ci/run runs after it; "long" before a release (--hypothesis-profile=NAME):
# 34,000 examples a property, so the invariant tests of the three formats check 102,000
# generated cases (README, "What the engine guarantees": the last run passed all of them in
# 1 h 25 min on 2 shared cores with -n 3).
settings.register_profile("ci", max_examples=150, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile("thorough", parent=settings.get_profile("ci"), max_examples=2000)
settings.register_profile("long", parent=settings.get_profile("ci"), max_examples=34_000)


@pytest.fixture(autouse=True, scope="session")
def wide_output():
    """Commands print for a wide terminal, so that a test reads each line whole; the tests of the
    layout (80 columns, COLUMNS) set COLUMNS themselves."""
    before = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "10000"
    yield
    if before is None:
        os.environ.pop("COLUMNS", None)
    else:
        os.environ["COLUMNS"] = before


@pytest.fixture(autouse=True, scope="session")
def private_user_cache(tmp_path_factory):
    """The user's cache folder (where default-recoverable saves without RULES_COMPACT_STORE) is
    a temporary one: the tests never write into the real one."""
    before = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = str(tmp_path_factory.mktemp("user-cache"))
    yield
    if before is None:
        os.environ.pop("XDG_CACHE_HOME", None)
    else:
        os.environ["XDG_CACHE_HOME"] = before


def property_settings(scale: float = 1.0) -> settings:
    """The active profile (``ci`` unless one was chosen), with ``scale`` times its examples."""
    name = settings.get_current_profile_name()
    profile = settings.get_profile("ci" if name == "default" else name)
    return settings(profile, max_examples=max(1, int(profile.max_examples * scale)))

def thorough() -> bool:
    """A profile beyond ``ci`` was chosen: tests that sample (rounds of a trace) take every case."""
    return settings.get_current_profile_name() not in ("default", "ci")


TESTS = Path(__file__).parent
ROOT = TESTS.parent
#: The default's rules on a plain step (tests/data/default-stepped.yaml), for histories too short
#: for the default's own pay-back step to move.
STEPPED_DEFAULT = str(ROOT / "tests" / "data" / "default-stepped.yaml")
TRACES = TESTS / "data" / "traces"
sys.path.insert(0, str(TESTS))


def load_json(path: Path):
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


@pytest.fixture
def traces_dir() -> Path:
    return TRACES


_EXPORTER = None


@pytest.fixture
def otel_spans():
    """The OpenTelemetry spans finished during the test (the SDK's in-memory exporter behind the
    global tracer provider, installed once per session)."""
    global _EXPORTER
    sdk = pytest.importorskip("opentelemetry.sdk.trace", reason="opentelemetry-sdk is in the test extra")
    from opentelemetry import trace
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    if _EXPORTER is None:
        _EXPORTER = InMemorySpanExporter()
        provider = sdk.TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(_EXPORTER))
        trace.set_tracer_provider(provider)
    _EXPORTER.clear()
    yield _EXPORTER
    _EXPORTER.clear()
