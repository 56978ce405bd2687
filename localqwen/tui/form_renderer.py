"""Form -> Textual widgets. Every :class:`Widget` kind of the plugin API has a widget here.

The rendered :class:`FormView` hands back raw values for :func:`parse_form` and shows each
:class:`FormError` message right under its field.
"""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widget import Widget as TextualWidget
from textual.widgets import Collapsible, Input, Label, Select, SelectionList, Static, Switch, TextArea

from localqwen.i18n import t
from localqwen.plugin_api import FieldSpec, Form, Widget, form_fields
from localqwen.tui.widgets.path_picker import PathInput
from localqwen.tui.widgets.slider import Slider


def field_widget(spec: FieldSpec, widget_id: str) -> TextualWidget:
    """The input widget for one field."""
    default = spec.default
    kind = spec.widget
    if spec.multiple and kind != Widget.CHOICE:
        # Lists of free values (paths, words): one per line.
        lines = "\n".join(str(v) for v in (default or []))
        return TextArea(lines, id=widget_id, classes="field-input multi-line")
    if kind == Widget.TEXTAREA:
        return TextArea("" if default is None else str(default), id=widget_id, classes="field-input")
    if kind == Widget.CHECKBOX:
        return Switch(bool(default), id=widget_id, classes="field-input")
    if kind == Widget.CHOICE:
        choices = list(spec.choices)
        if spec.options_from and default is not None and default not in choices:
            choices.append(default)  # the plugin's list arrives after mounting (FormView.set_options)
        spec_choices = choices
        options = [(str(choice), choice) for choice in choices]
        if spec.multiple:
            chosen = set(default or [])
            return SelectionList(*[(label, value, value in chosen) for label, value in options],
                                 id=widget_id, classes="field-input")
        return Select(options, value=default if default in spec_choices else Select.NULL,
                      allow_blank=not spec.required or default is None, id=widget_id, classes="field-input")
    if kind == Widget.SLIDER and spec.minimum is not None and spec.maximum is not None:
        return Slider(spec.minimum, spec.maximum, value=default, step=spec.step, integer=spec.value_type is int,
                      id=widget_id)
    if kind in (Widget.NUMBER, Widget.SLIDER):
        return Input("" if default is None else str(default), type="integer" if spec.value_type is int else "number",
                     placeholder=spec.placeholder or _range_hint(spec), id=widget_id, classes="field-input")
    if kind in (Widget.IMAGE, Widget.FILE, Widget.FOLDER):
        return PathInput("" if default is None else str(default), folders=kind == Widget.FOLDER,
                         placeholder=spec.placeholder or t(f"form.placeholder_{kind.value}"), id=widget_id)
    return Input("" if default is None else str(default), placeholder=spec.placeholder, id=widget_id,
                 classes="field-input")


def widget_value(widget: TextualWidget, spec: FieldSpec) -> Any:
    """The widget's raw value, in the shape :func:`parse_form` accepts; ``None`` means "not given"."""
    if isinstance(widget, TextArea):
        if spec.multiple:
            return [line.strip() for line in widget.text.splitlines() if line.strip()]
        return widget.text
    if isinstance(widget, Switch):
        return widget.value
    if isinstance(widget, SelectionList):
        return list(widget.selected)
    if isinstance(widget, Select):
        return None if widget.value is Select.NULL else widget.value
    if isinstance(widget, Slider):
        return widget.number
    if isinstance(widget, (Input, PathInput)):
        return widget.value
    raise TypeError(f"no value reader for {type(widget).__name__}")


def _range_hint(spec: FieldSpec) -> str:
    if spec.minimum is not None and spec.maximum is not None:
        return f"{spec.minimum:g} – {spec.maximum:g}"
    if spec.minimum is not None:
        return f"≥ {spec.minimum:g}"
    if spec.maximum is not None:
        return f"≤ {spec.maximum:g}"
    return ""


class FieldRow(Vertical):
    """Label, input, help text and (when the last submit failed) the error message."""

    def __init__(self, spec: FieldSpec) -> None:
        super().__init__(id=f"row-{spec.name}", classes="field-row")
        self.spec = spec

    def compose(self) -> ComposeResult:
        marker = " *" if self.spec.required else ""
        yield Label(f"{self.spec.label}{marker}", classes="field-label")
        yield field_widget(self.spec, f"field-{self.spec.name}")
        if self.spec.help:
            yield Static(self.spec.help, classes="field-help")
        yield Static("", id=f"error-{self.spec.name}", classes="field-error")


class FormView(Vertical):
    """All fields of a form; advanced ones folded into a collapsible section."""

    def __init__(self, form_cls: type[Form], *, id: str | None = None) -> None:
        super().__init__(id=id, classes="form-view")
        self.form_cls = form_cls
        self.specs = form_fields(form_cls)

    def compose(self) -> ComposeResult:
        yield Static("", id="form-error", classes="field-error")
        basic = [spec for spec in self.specs if not spec.advanced]
        advanced = [spec for spec in self.specs if spec.advanced]
        for spec in basic:
            yield FieldRow(spec)
        if advanced:
            with Collapsible(title=t("form.advanced"), collapsed=True, id="advanced-fields"):
                for spec in advanced:
                    yield FieldRow(spec)

    def input_for(self, name: str) -> TextualWidget:
        return self.query_one(f"#field-{name}")

    def values(self) -> dict[str, Any]:
        """Raw values for :func:`parse_form`; empty fields are left out (a required one then says so)."""
        values: dict[str, Any] = {}
        for spec in self.specs:
            value = widget_value(self.input_for(spec.name), spec)
            if value is None or value == "" or (value == [] and not spec.required):
                continue
            values[spec.name] = value
        return values

    def set_value(self, name: str, value: Any) -> None:
        """Fill one field programmatically (tests, "run again with these values")."""
        widget = self.input_for(name)
        if isinstance(widget, TextArea):
            widget.text = "\n".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)
        elif isinstance(widget, (Input, PathInput)):
            widget.value = str(value)
        elif isinstance(widget, (Switch, Slider, Select)):
            widget.value = value
        elif isinstance(widget, SelectionList):
            widget.deselect_all()
            for item in value:
                widget.select(item)

    def set_options(self, name: str, options: list[Any]) -> None:
        """Offer the plugin's current list for an ``options_from`` field, keeping the choice if it is in it."""
        widget = self.input_for(name)
        if not isinstance(widget, Select):
            return
        current = widget.value
        widget.set_options([(str(option), option) for option in options])
        if current is not Select.NULL and current in options:
            widget.value = current

    def first_input(self) -> TextualWidget | None:
        """The first field a user types into (for focusing it when the form opens)."""
        for spec in self.specs:
            if not spec.advanced:
                widget = self.input_for(spec.name)
                if isinstance(widget, PathInput):
                    return widget.query_one(Input)
                return widget
        return None

    def show_errors(self, errors: dict[str, str]) -> None:
        """Mark each field's error and put the cursor in the first wrong field (the user fixes it next)."""
        self.clear_errors()
        for name, message in errors.items():
            target = self.query(f"#error-{name}")
            if target:
                target.first(Static).update(f"⚠ {message}")
                self.query_one(f"#row-{name}").add_class("invalid")
                if name in {spec.name for spec in self.specs if spec.advanced}:
                    self.query_one("#advanced-fields", Collapsible).collapsed = False
            else:
                self.query_one("#form-error", Static).update(f"⚠ {name}: {message}")
        target = self.first_error_widget()
        if target is not None:
            target.focus()

    def clear_errors(self) -> None:
        for static in self.query(".field-error").results(Static):
            static.update("")
        for row in self.query(".field-row.invalid"):
            row.remove_class("invalid")

    def first_error_widget(self) -> TextualWidget | None:
        rows = self.query(".field-row.invalid")
        if not rows:
            return None
        name = rows.first().id.removeprefix("row-")  # type: ignore[union-attr]
        return self.input_for(name)


