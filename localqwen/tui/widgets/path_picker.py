"""A path input with a "browse" button that opens a directory tree in a modal."""

from __future__ import annotations

from pathlib import Path

from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, DirectoryTree, Input, Label

from localqwen.i18n import t


class PathPickerScreen(ModalScreen[str | None]):
    """Pick a file (or a folder when ``folders``; either when ``either``, e.g. a model: a folder or
    a .gguf); dismisses with the path or None."""

    BINDINGS = [("escape", "dismiss(None)", "Cancel")]

    def __init__(self, start: Path, *, folders: bool = False, either: bool = False) -> None:
        super().__init__()
        self.start = start if start.is_dir() else Path.home()
        self.folders = folders or either
        self.either = either
        self.selected: Path | None = None

    def compose(self) -> ComposeResult:
        with Vertical(id="picker"):
            title = t("models.pick_path") if self.either else t("form.pick_folder") if self.folders else t("form.pick_file")
            yield Label(title, classes="title")
            yield DirectoryTree(str(self.start), id="picker-tree")
            with Horizontal(classes="buttons"):
                yield Button(t("form.choose"), id="picker-choose", variant="primary")
                yield Button(t("common.cancel"), id="picker-cancel")

    @on(DirectoryTree.FileSelected)
    def _file(self, event: DirectoryTree.FileSelected) -> None:
        if not self.folders or self.either:
            self.dismiss(str(event.path))

    @on(DirectoryTree.DirectorySelected)
    def _folder(self, event: DirectoryTree.DirectorySelected) -> None:
        self.selected = event.path

    @on(Button.Pressed, "#picker-choose")
    def _choose(self) -> None:
        if self.folders and self.selected is not None:
            self.dismiss(str(self.selected))

    @on(Button.Pressed, "#picker-cancel")
    def _cancel(self) -> None:
        self.dismiss(None)


class PathInput(Horizontal):
    """An ``Input`` for a path plus a button that opens :class:`PathPickerScreen`."""

    DEFAULT_CSS = "PathInput { height: auto; } PathInput Input { width: 1fr; } PathInput Button { min-width: 5; }"

    def __init__(self, value: str = "", *, folders: bool = False, placeholder: str = "", id: str | None = None) -> None:
        super().__init__(id=id)
        self._initial = value
        self.folders = folders
        self.placeholder = placeholder

    def compose(self) -> ComposeResult:
        yield Input(self._initial, placeholder=self.placeholder, classes="path-value")
        yield Button("…", classes="path-browse", tooltip=t("form.browse"))

    @property
    def value(self) -> str:
        return self.query_one(Input).value

    @value.setter
    def value(self, text: str) -> None:
        self.query_one(Input).value = text

    @on(Button.Pressed, ".path-browse")
    def _browse(self, event: Button.Pressed) -> None:
        event.stop()
        current = Path(self.value).expanduser() if self.value else Path.cwd()
        start = current if current.is_dir() else current.parent

        def picked(path: str | None) -> None:
            if path:
                self.value = path

        self.app.push_screen(PathPickerScreen(start, folders=self.folders), picked)
