"""Form -> click options: the CLI renderer of the plugin API's forms."""

from __future__ import annotations

from typing import Any

import click

from localqwen.plugin_api.forms import FieldSpec, Form, Widget, form_fields


def _param_type(spec: FieldSpec) -> click.ParamType:
    if spec.choices:
        return click.Choice([str(choice) for choice in spec.choices])
    if spec.value_type is int:
        return click.IntRange(spec.minimum, spec.maximum) if spec.minimum is not None or spec.maximum is not None else click.INT
    if spec.value_type is float:
        return click.FloatRange(spec.minimum, spec.maximum) if spec.minimum is not None or spec.maximum is not None else click.FLOAT
    if spec.widget in (Widget.FILE, Widget.IMAGE, Widget.FOLDER):
        return click.Path()
    return click.STRING


def form_command(form_cls: type[Form], name: str, help_text: str) -> click.Command:
    """A click command whose options are the form's fields; invoking it returns their values."""
    params: list[click.Parameter] = []
    for spec in form_fields(form_cls):
        flag = spec.name.replace("_", "-")
        help_line = spec.label + (f": {spec.help}" if spec.help else "")
        if spec.required:
            help_line += " [required]"
        if spec.value_type is bool and not spec.multiple:
            # default=None keeps "not given" apart from "given": the form applies its own default.
            default_flag = "" if spec.required else (f"--{flag}" if spec.default else f"--no-{flag}")
            shown = help_line + (f" (default: {default_flag})" if default_flag else "")
            params.append(click.Option([f"--{flag}/--no-{flag}", spec.name], default=None, help=shown))
            continue
        params.append(
            click.Option(
                [f"--{flag}", spec.name],
                type=_param_type(spec),
                multiple=spec.multiple,
                default=None,
                show_default=False,
                help=help_line + ("" if spec.required or spec.default in (None, "", []) else f" (default: {spec.default})"),
            )
        )

    def callback(**values: Any) -> dict[str, Any]:
        return {key: value for key, value in values.items() if value is not None and value != ()}

    return click.Command(name=name, params=params, callback=callback, help=help_text)
