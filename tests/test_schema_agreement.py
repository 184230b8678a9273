"""The JSON Schema and ``validate`` agree: what editors and reviewers see is what loads.

Valid generated rule files (strategies.rule_files) are changed in their structure (a key
deleted, a value emptied, replaced by another type or by another allowed word) and checked
both ways: a file the schema accepts must load, a file it rejects must not. The only
problems the schema leaves to ``validate`` are those a JSON Schema cannot state, named in
SEMANTIC_ONLY.
"""

from __future__ import annotations

import copy
import re

from hypothesis import given, note
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from conftest import property_settings
from rules_compact import ConfigError, limits
from rules_compact.kinds.estimators import ESTIMATORS
from rules_compact.language.schema import rule_schema
from strategies import rule_files, to_ruleset

SCHEMA = Draft202012Validator(rule_schema())
#: Problems only loading finds: they depend on names elsewhere in the file or in the files it extends.
SEMANTIC_ONLY = re.compile(r"no inherited rule named |duplicate rule name |needs a store to save to")
#: Words the rule language uses as values; a mutation may put one where another was.
WORDS = ["tool_results", "tool_calls", "spans", "messages", "user_turns", "tokens", "chars", "bytes", "utf16",
         "tool", "assistant", "keep", "placeholder", "saved", "removed", "compact", "default", "x"]
REPLACEMENTS = st.one_of(st.just({}), st.just([]), st.none(), st.booleans(), st.sampled_from([-1, 0, 3]),
                         st.sampled_from(WORDS), st.just({"gt": 1}), st.just([{}]))


def _containers(node, path=()):
    """Every mapping and list in ``node``, with the path to it."""
    if isinstance(node, (dict, list)):
        yield path, node
        children = node.items() if isinstance(node, dict) else enumerate(node)
        for key, child in children:
            yield from _containers(child, path + (key,))


#: Keys a mutation may add to a mapping.
KEYS = ["among", "unit", "gt", "lte", "include_self", "key", "text", "marker", "head", "every", "tokens_over",
        "summary", "as_string", "compact", "placeholder", "name", "match", "action"]


@st.composite
def mutated_rule_files(draw) -> dict:
    data = copy.deepcopy(draw(rule_files()))
    for _ in range(draw(st.integers(1, 3))):
        containers = list(_containers(data))
        # half the time one of the innermost mappings (matcher and action options), where most rules live
        leaves = [(p, n) for p, n in containers if isinstance(n, dict) and not any(
            isinstance(v, (dict, list)) for v in n.values())]
        path, node = draw(st.sampled_from(leaves if leaves and draw(st.booleans()) else containers))
        keys = list(node) if isinstance(node, dict) else list(range(len(node)))
        how = draw(st.sampled_from(["delete", "set", "add"] if isinstance(node, dict) else ["delete", "set"]))
        if how == "add":
            key = draw(st.sampled_from(KEYS))
        elif keys:
            key = draw(st.sampled_from(keys))
        else:
            continue
        if how == "delete":
            del node[key]
        else:
            node[key] = copy.deepcopy(draw(REPLACEMENTS))
        note(f"{how} {path + (key,)}" + (f" = {node[key]!r}" if how != "delete" else ""))
    return data


@property_settings()
@given(mutated_rule_files())
def test_schema_and_validate_agree(data):
    schema_ok = SCHEMA.is_valid(data)
    try:
        to_ruleset(data)
        problems = []
    except ConfigError as exc:
        problems = [str(p) for p in exc.problems]
    note(f"schema: {'accepts' if schema_ok else 'rejects'}; validate: {problems or 'ok'}")
    if schema_ok:
        assert all(SEMANTIC_ONLY.search(p) for p in problems)
    else:
        assert problems


def test_the_schema_states_the_limits_the_loader_applies():
    """The length limits are stated in the schema, for editors, and applied by the loader
    (limits.py) to plugins' templates too: the two must be the same numbers."""
    schema = rule_schema()
    matcher = schema["$defs"]["matcher"]["properties"]
    assert matcher["where"]["maxLength"] == matcher["superseded"]["anyOf"][1]["properties"]["key"]["maxLength"] \
        == limits.MAX_JMESPATH_CHARS
    templates = [schema["properties"]["defaults"]["properties"]["placeholder"],
                 schema["properties"]["tools"]["additionalProperties"]["properties"]["placeholder"]]
    action = schema["$defs"]["action"]["anyOf"][1]["properties"]
    templates += [action["placeholder"]["anyOf"][0], action["placeholder"]["anyOf"][2]["properties"]["text"],
                  action["placeholder"]["anyOf"][2]["properties"]["summary_text"],
                  action["truncate"]["properties"]["marker"], action["strip-text"]["properties"]["marker"]]
    assert {t["maxLength"] for t in templates} == {limits.MAX_TEMPLATE_CHARS}
    assert schema["properties"]["defaults"]["properties"]["estimator"]["enum"] == sorted(ESTIMATORS)
