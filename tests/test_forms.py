from pathlib import Path

import pytest
from lq_test_plugin import EchoForm, SlowForm

from localqwen.plugin_api import FormError, Widget, form_fields, parse_form


def test_widgets_and_hints_are_inferred():
    specs = {spec.name: spec for spec in form_fields(EchoForm)}
    assert specs["text"].widget is Widget.TEXTAREA and specs["text"].required
    assert specs["repeat"].widget is Widget.SLIDER and (specs["repeat"].minimum, specs["repeat"].maximum) == (1, 5)
    assert specs["shout"].widget is Widget.CHECKBOX and specs["shout"].default is False
    assert specs["style"].widget is Widget.CHOICE and specs["style"].choices == ["plain", "stars"]
    assert specs["note_file"].widget is Widget.FILE and specs["note_file"].advanced
    assert form_fields(SlowForm)[1].value_type is float


def test_string_values_are_coerced():
    form = parse_form(EchoForm, {"text": "hi", "repeat": "3", "shout": "true", "note_file": "a.txt"})
    assert (form.repeat, form.shout, form.note_file) == (3, True, Path("a.txt"))


def test_validation_errors_name_each_field():
    with pytest.raises(FormError) as info:
        parse_form(EchoForm, {"repeat": "9", "style": "loud", "colour": "red"})
    errors = info.value.errors
    assert set(errors) == {"text", "repeat", "style", "colour"}
    assert "less than or equal to 5" in errors["repeat"]
    assert errors["colour"] == "unknown field"


def test_empty_string_means_default():
    assert parse_form(EchoForm, {"text": "x", "repeat": ""}).repeat == 2
