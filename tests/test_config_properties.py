"""Config loading under generated input: every JSON or YAML document gives a config or a ValueError naming the problem, never another exception."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from privaudit.audits.config import config_from_dict, config_to_dict, parse_config_text
from privaudit.audits.registry import get_audit, names

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70) | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4),
    max_leaves=12,
)


def _mutations(default: dict):
    """The default config with one key replaced by generated JSON (or an unknown key added)."""
    keys = sorted(default)
    return st.tuples(st.sampled_from([*keys, "no_such_key"]), JSON).map(lambda pair: {**default, pair[0]: pair[1]})


@pytest.mark.parametrize("name", names())
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_mutated_configs_load_or_fail_with_a_value_error(name, data):
    audit = get_audit(name)
    default = config_to_dict(audit.default_config())
    values = data.draw(_mutations(default))
    try:
        config = config_from_dict(audit.config_type, values)
    except ValueError as error:
        message = str(error)
        assert message and "\n" not in message and len(message) < 1000
        return
    assert config_from_dict(audit.config_type, json.loads(json.dumps(config_to_dict(config)))) == config


@settings(max_examples=60, deadline=None)
@given(text=st.text(max_size=200), yaml=st.booleans())
def test_any_text_parses_or_fails_with_a_value_error(text, yaml):
    try:
        parse_config_text(text, "c.yaml" if yaml else "c.json")
    except ValueError:
        pass


def test_the_check_can_fail():
    with pytest.raises(ValueError, match="unknown keys"):
        config_from_dict(get_audit("fl").config_type, {"no_such_key": 1})
