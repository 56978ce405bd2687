"""Forms: a plugin action's inputs, declared once as a pydantic model.

Each field carries UI hints (label, help, widget kind, bounds, choices) in its JSON-schema
extras. The CLI, TUI and web renderers read them through :func:`form_fields`, so a plugin never
writes frontend code to get a working form.
"""

from __future__ import annotations

import enum
import types
import typing
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic_core import PydanticUndefined


class Widget(str, enum.Enum):
    TEXT = "text"
    TEXTAREA = "textarea"
    NUMBER = "number"
    SLIDER = "slider"
    CHOICE = "choice"
    CHECKBOX = "checkbox"
    IMAGE = "image"
    FILE = "file"
    FOLDER = "folder"


class Form(BaseModel):
    """Base class for action forms. Unknown fields are an error, not silently dropped."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)


def field(
    default: Any = PydanticUndefined,
    *,
    label: str,
    help: str = "",
    widget: Widget | str | None = None,
    choices: list[Any] | None = None,
    ge: float | None = None,
    le: float | None = None,
    step: float | None = None,
    placeholder: str = "",
    advanced: bool = False,
    default_factory: Any = None,
    options_from: str = "",
    **kwargs: Any,
) -> Any:
    """Declare a form field with its UI hints. ``advanced`` fields are folded away by the UIs.

    ``options_from`` names a list the plugin computes when the form is shown
    (:meth:`Plugin.field_options`, e.g. the existing knowledge bases): the UIs offer it as a
    list to pick from, and the command line takes any value."""
    extra: dict[str, Any] = {"advanced": advanced}
    if options_from:
        extra["options_from"] = options_from
        extra.setdefault("widget", Widget.CHOICE.value)
    if widget is not None:
        extra["widget"] = Widget(widget).value
    if choices is not None:
        extra["choices"] = list(choices)
    if step is not None:
        extra["step"] = step
    if placeholder:
        extra["placeholder"] = placeholder
    if default_factory is not None:
        return Field(default_factory=default_factory, title=label, description=help, ge=ge, le=le,
                     json_schema_extra=extra, **kwargs)
    return Field(default, title=label, description=help, ge=ge, le=le, json_schema_extra=extra, **kwargs)


@dataclass
class FieldSpec:
    """Everything a renderer needs to draw one field."""

    name: str
    label: str
    help: str
    widget: Widget
    value_type: type
    required: bool
    default: Any
    choices: list[Any] = dataclass_field(default_factory=list)
    minimum: float | None = None
    maximum: float | None = None
    step: float | None = None
    placeholder: str = ""
    advanced: bool = False
    multiple: bool = False
    options_from: str = ""  # the plugin's list of choices, computed when shown (Plugin.field_options)

    @property
    def cli_flag(self) -> str:
        return "--" + self.name.replace("_", "-")


def _unwrap_optional(annotation: Any) -> tuple[Any, bool]:
    origin = get_origin(annotation)
    if origin in (Union, types.UnionType):
        args = [a for a in get_args(annotation) if a is not type(None)]
        if len(args) == 1:
            return args[0], True
    return annotation, False


def _bounds(metadata: list[Any]) -> tuple[float | None, float | None]:
    low = high = None
    for item in metadata:
        for attr in ("ge", "gt"):
            if getattr(item, attr, None) is not None:
                low = getattr(item, attr)
        for attr in ("le", "lt"):
            if getattr(item, attr, None) is not None:
                high = getattr(item, attr)
    return low, high


def form_fields(form_cls: type[BaseModel]) -> list[FieldSpec]:
    """The form's fields in declaration order, with widget kinds inferred where not given."""
    specs = []
    hints = typing.get_type_hints(form_cls)
    for name, info in form_cls.model_fields.items():
        annotation, _optional = _unwrap_optional(hints.get(name, info.annotation))
        extra: dict[str, Any] = dict(info.json_schema_extra) if isinstance(info.json_schema_extra, dict) else {}
        choices = list(extra.get("choices") or [])
        multiple = False
        value_type: Any = annotation
        if get_origin(annotation) is Literal:
            choices = choices or list(get_args(annotation))
            value_type = type(choices[0]) if choices else str
        elif isinstance(annotation, type) and issubclass(annotation, enum.Enum):
            choices = choices or [member.value for member in annotation]
            value_type = type(choices[0]) if choices else str
        elif get_origin(annotation) in (list, tuple, set):
            multiple = True
            inner = get_args(annotation)[0] if get_args(annotation) else str
            if get_origin(inner) is Literal:
                choices = choices or list(get_args(inner))
                inner = type(choices[0]) if choices else str
            value_type = inner
        low, high = _bounds(list(info.metadata))
        widget = Widget(extra["widget"]) if "widget" in extra else _infer_widget(value_type, choices, low, high)
        default = info.get_default(call_default_factory=True) if not info.is_required() else None
        if isinstance(default, enum.Enum):
            default = default.value
        specs.append(
            FieldSpec(
                name=name,
                label=info.title or name.replace("_", " ").capitalize(),
                help=info.description or "",
                widget=widget,
                value_type=value_type if isinstance(value_type, type) else str,
                required=info.is_required(),
                default=default,
                choices=choices,
                minimum=low,
                maximum=high,
                step=extra.get("step"),
                placeholder=extra.get("placeholder", ""),
                advanced=bool(extra.get("advanced", False)),
                multiple=multiple,
                options_from=str(extra.get("options_from", "")),
            )
        )
    return specs


def _infer_widget(value_type: Any, choices: list[Any], low: float | None, high: float | None) -> Widget:
    if choices:
        return Widget.CHOICE
    if value_type is bool:
        return Widget.CHECKBOX
    if value_type in (int, float):
        return Widget.SLIDER if low is not None and high is not None else Widget.NUMBER
    if isinstance(value_type, type) and issubclass(value_type, Path):
        return Widget.FILE
    return Widget.TEXT


class FormError(ValueError):
    """The submitted values do not fit the form. ``errors`` maps field name -> message."""

    def __init__(self, errors: dict[str, str]) -> None:
        self.errors = errors
        super().__init__("; ".join(f"{name}: {message}" for name, message in errors.items()))


def parse_form(form_cls: type[Form], values: typing.Mapping[str, Any]) -> Form:
    """Validate raw values (strings from a CLI or widgets are fine) into the form."""
    # Empty strings from text widgets mean "not given", so defaults apply.
    cleaned = {k: v for k, v in values.items() if not (isinstance(v, str) and v == "" and _has_default(form_cls, k))}
    try:
        return form_cls.model_validate(cleaned)
    except ValidationError as exc:
        errors: dict[str, str] = {}
        for err in exc.errors():
            name = str(err["loc"][0]) if err["loc"] else "__form__"
            message = err["msg"]
            if err["type"] == "extra_forbidden":
                message = "unknown field"
            errors.setdefault(name, message)
        raise FormError(errors) from exc


def _has_default(form_cls: type[Form], name: str) -> bool:
    info = form_cls.model_fields.get(name)
    return info is not None and not info.is_required()
