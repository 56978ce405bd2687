"""Form -> Gradio components. Every :class:`Widget` kind of the plugin API has a component here,
each followed by a (hidden until needed) Markdown slot for its validation message."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from localqwen.i18n import t
from localqwen.paths import ensure_within
from localqwen.plugin_api import FieldSpec, Form, Widget, form_fields

if TYPE_CHECKING:
    import gradio as gr

UPLOAD_KINDS = (Widget.IMAGE, Widget.FILE)


@dataclass
class RenderedField:
    spec: FieldSpec
    component: Any
    error: Any  # gr.Markdown showing this field's validation message


def _make(cls: Any, **kwargs: Any) -> Any:
    """Create ``cls`` with the keyword arguments it accepts (not every component takes ``info``)."""
    accepted = inspect.signature(cls.__init__).parameters
    return cls(**{k: v for k, v in kwargs.items() if k in accepted})


def takes_info(component: Any) -> bool:
    return "info" in inspect.signature(type(component).__init__).parameters


def field_component(spec: FieldSpec, options: list[Any] | None = None) -> gr.Component:
    """``options``: the plugin's current list for an ``options_from`` field."""
    import gradio as gr

    label = spec.label + (" *" if spec.required else "")
    common: dict[str, Any] = {"label": label, "info": spec.help or None, "elem_id": f"field-{spec.name}"}
    default = spec.default
    kind = spec.widget
    if kind == Widget.CHOICE and spec.options_from:
        # A list the plugin computes (existing knowledge bases): pick one, or type a new name.
        choices = list(options or [])
        if default is not None and default not in choices:
            choices.insert(0, default)
        return _make(gr.Dropdown, choices=[(str(c), c) for c in choices], value=default, allow_custom_value=True,
                     **common)
    if kind == Widget.CHOICE:
        return _make(gr.Dropdown, choices=[(str(c), c) for c in spec.choices], value=default, multiselect=spec.multiple,
                           allow_custom_value=False, **common)
    if spec.multiple and kind in UPLOAD_KINDS:
        return _make(gr.File, file_count="multiple", type="filepath", **common)
    if spec.multiple:
        lines = "\n".join(str(v) for v in (default or []))
        return _make(gr.Textbox, value=lines, lines=3, placeholder=t("web.one_per_line"), **common)
    if kind == Widget.TEXTAREA:
        return _make(gr.Textbox, value=default or "", lines=5, placeholder=spec.placeholder or None, **common)
    if kind == Widget.CHECKBOX:
        return _make(gr.Checkbox, value=bool(default), **common)
    if kind == Widget.SLIDER and spec.minimum is not None and spec.maximum is not None:
        step = spec.step or (1 if spec.value_type is int else (spec.maximum - spec.minimum) / 1000)
        return _make(gr.Slider, minimum=spec.minimum, maximum=spec.maximum, step=step,
                         value=default if default is not None else spec.minimum, **common)
    if kind in (Widget.NUMBER, Widget.SLIDER):
        return _make(gr.Number, value=default, minimum=spec.minimum, maximum=spec.maximum, step=spec.step or 1,
                         precision=0 if spec.value_type is int else None, **common)
    if kind == Widget.IMAGE:
        return _make(gr.Image, type="filepath", sources=["upload", "clipboard"], height=220, **common)
    if kind == Widget.FILE:
        return _make(gr.File, type="filepath", file_count="single", **common)
    if kind == Widget.FOLDER:
        # Browsers cannot hand a server a folder; this names one on the machine running LocalQwen.
        return _make(gr.Textbox, value=default or "", placeholder=spec.placeholder or t("form.placeholder_folder"), **common)
    return _make(gr.Textbox, value="" if default is None else str(default), placeholder=spec.placeholder or None, **common)


def render_form(form_cls: type[Form], options: Callable[[str], list[Any]] | None = None) -> list[RenderedField]:
    """Create the components inside the current Blocks context; advanced fields in an accordion.

    ``options(source)`` gives the plugin's list for ``options_from`` fields; it is asked again
    whenever such a list gets the focus, so a knowledge base made meanwhile shows up."""
    import gradio as gr

    specs = form_fields(form_cls)
    rendered: list[RenderedField] = []

    def listed(source: str) -> list[Any]:
        try:
            return list(options(source)) if options is not None else []
        except Exception:  # the list is a convenience: typing a name still works
            return []

    def add(spec: FieldSpec) -> None:
        component: Any = field_component(spec, listed(spec.options_from) if spec.options_from else None)
        if spec.options_from and options is not None:
            def refresh(source: str = spec.options_from, default: Any = spec.default) -> Any:
                choices = listed(source)
                if default is not None and default not in choices:
                    choices.insert(0, default)
                return gr.update(choices=[(str(c), c) for c in choices])

            component.focus(refresh, outputs=[component], show_progress="hidden", queue=False)
        if spec.help and not takes_info(component):
            gr.Markdown(spec.help, elem_classes=["lq-field-help"])
        error = gr.Markdown("", visible=False, elem_classes=["lq-field-error"], elem_id=f"error-{spec.name}")
        rendered.append(RenderedField(spec, component, error))

    return lay_out_fields(specs, add, rendered)


def lay_out_fields(specs: list[FieldSpec], add: Callable[[FieldSpec], None],
                   rendered: list[RenderedField]) -> list[RenderedField]:
    """Call ``add`` for the basic fields, then for the advanced ones inside a folded accordion;
    ``rendered`` (what ``add`` appended) comes back in declaration order, so handler arguments
    line up with ``form_fields()`` (the action forms and the wizard steps both rely on it)."""
    import gradio as gr

    for spec in specs:
        if not spec.advanced:
            add(spec)
    advanced = [spec for spec in specs if spec.advanced]
    if advanced:
        with gr.Accordion(t("form.advanced"), open=False):
            for spec in advanced:
                add(spec)
    order = {spec.name: index for index, spec in enumerate(specs)}
    rendered.sort(key=lambda item: order[item.spec.name])
    return rendered


def collect_values(fields: list[RenderedField], raw: list[Any], upload_roots: list[Path]) -> dict[str, Any]:
    """Component values -> raw form values. Uploaded paths must lie in the app's upload folders."""
    values: dict[str, Any] = {}
    for item, value in zip(fields, raw, strict=True):
        spec = item.spec
        if value is None or value == "" or value == []:
            continue
        if spec.widget in UPLOAD_KINDS:
            paths = value if isinstance(value, list) else [value]
            checked = [str(ensure_within(upload_roots, _path_of(p))) for p in paths]
            value = checked if spec.multiple else checked[0]
        elif spec.multiple and isinstance(value, str):
            value = [line.strip() for line in value.splitlines() if line.strip()]
        elif spec.value_type is int and isinstance(value, float) and value.is_integer():
            value = int(value)
        values[spec.name] = value
    return values


def _path_of(value: Any) -> str:
    if isinstance(value, dict):  # a FileData dict from the API
        return str(value.get("path", ""))
    return str(getattr(value, "path", value))


def error_updates(fields: list[RenderedField], errors: dict[str, str]) -> list[Any]:
    """One update per field's error slot: the message where there is one, hidden elsewhere."""
    import gradio as gr

    return [gr.update(value=f"⚠️ {errors[f.spec.name]}", visible=True) if f.spec.name in errors
            else gr.update(value="", visible=False) for f in fields]
