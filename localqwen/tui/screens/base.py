"""What every TUI screen shares: key-binding descriptions in the current language."""

from __future__ import annotations

import dataclasses
from typing import Any

from textual.dom import DOMNode
from textual.screen import Screen

from localqwen.i18n import current_language, t


def retranslate_bindings(node: DOMNode) -> None:
    """Bindings whose ``id`` is a catalog key get that key's text as their footer description."""
    table = node._bindings.key_to_bindings
    for key, bindings in table.items():
        table[key] = [dataclasses.replace(b, description=t(b.id)) if b.id and "." in b.id else b for b in bindings]


class BaseScreen(Screen[Any]):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        retranslate_bindings(self)
        self.language = current_language()

    def on_screen_resume(self) -> None:
        """A screen built before the language changed is rebuilt when it is shown again."""
        if self.language != current_language():
            self.language = current_language()
            retranslate_bindings(self)
            self.refresh(recompose=True)
