"""Textual's Header, safe to replace while the title changes.

A screen rebuilt for a new language (``recompose``) replaces its Header. Textual's Header
watches the app's and screen's titles; a watcher of the replaced Header can still fire after
its title widget is gone and then raises ``NoMatches`` (only ``NoScreen`` is caught upstream),
which under load fails the app at shutdown. This Header ignores a title change that reaches it
once its title widget has gone; everything else is Textual's.
"""

from __future__ import annotations

from textual.css.query import NoMatches
from textual.events import Mount
from textual.widget import Widget
from textual.widgets import Header
from textual.widgets._header import HeaderTitle


class AppHeader(Header):
    def _on_mount(self, event: Mount) -> None:
        # Textual calls every class's mount handler in the MRO; stop before Header's (which would
        # add its unguarded watchers too) and run Widget's own, which Header relies on.
        event.prevent_default()
        Widget._on_mount(self, event)

        async def set_title() -> None:
            try:
                self.query_one(HeaderTitle).update(self.format_title())
            except NoMatches:  # this header has been replaced: nothing to update
                pass
            except Exception as exc:  # Textual's NoScreen: the header is detached
                if type(exc).__name__ != "NoScreen":
                    raise

        self.watch(self.app, "title", set_title)
        self.watch(self.app, "sub_title", set_title)
        self.watch(self.screen, "title", set_title)
        self.watch(self.screen, "sub_title", set_title)
