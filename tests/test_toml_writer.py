"""The one TOML writer: what it writes, tomllib reads back to the same values."""

import sys
from pathlib import Path

import pytest

from localqwen.vocabulary.toml_writer import dumps_toml, toml_value

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib


def test_a_document_round_trips_through_tomllib():
    data = {
        "name": 'quote " backslash \\ tab \t newline \n del \x7f 中文',
        "count": 3,
        "ratio": 0.25,
        "on": False,
        "tags": ["a", "b"],
        "model": {"path": "/m", "task": "auto"},
        "method": {"name": "lora", "options": {"r": 8, "target modules": ["q_proj"]}},
        "data": {"source": {"name": "shapes", "options": {}}},
    }
    text = dumps_toml(data, inline=("options",))
    assert tomllib.loads(text) == data
    assert "options = {r = 8, " in text and '"target modules" = ["q_proj"]' in text  # kept inline
    assert "[data.source]" in text and "options = {}" in text
    assert "[method.options]" in dumps_toml(data)  # without inline, a nested table


def test_values_the_config_holds():
    assert toml_value(Path("/a b")) == '"/a b"'
    assert tomllib.loads(f"x = {toml_value(float('inf'))}")["x"] == float("inf")
    with pytest.raises(TypeError, match="no null"):
        toml_value(None)
    with pytest.raises(TypeError, match="cannot write a set"):
        toml_value({1})
