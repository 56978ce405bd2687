"""The Plugin base class and the ``@action`` decorator.

A plugin is a class with an ``id``, a ``title``, a short ``description``, its requirements, and
actions and/or a chat. An action is a method decorated with ``@action(form=...)`` that takes the
validated form and a :class:`Context` and yields events; a chat is one method decorated with
``@chat`` (see chat.py). What a plugin adds to the rest of LocalQwen (trainer data sources, task
metrics, tools, CLI shortcuts) goes through its one ``register`` hook.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel

from localqwen.plugin_api.chat import ChatRequest
from localqwen.plugin_api.context import Context
from localqwen.plugin_api.forms import Form

if TYPE_CHECKING:
    from localqwen.plugin_api.extensions import Extensions
    from localqwen.plugin_api.guide import GuidedFlow

ActionFunc = Callable[[Any, Any, Context], Iterator[Any]]


@dataclass(frozen=True)
class Requirements:
    """What a plugin needs from this machine; the home screens mark a plugin whose needs aren't met."""

    task: str = "text"  # text | vision | embedding | training | none
    min_memory_gb: float = 0.0  # RAM (or free GPU memory) the plugin's usual model needs


@dataclass(frozen=True)
class Action:
    id: str
    title: str
    description: str
    form: type[Form]
    func: ActionFunc
    plugin: Plugin

    def run(self, form: Form, ctx: Context) -> Iterator[Any]:
        return self.func(self.plugin, form, ctx)


def action(*, form: type[Form], title: str = "", description: str = "", id: str | None = None) -> Callable[[ActionFunc], ActionFunc]:
    """Mark a plugin method as an action with its form."""

    def decorate(func: ActionFunc) -> ActionFunc:
        func.__localqwen_action__ = {  # type: ignore[attr-defined]
            "id": id or func.__name__.replace("_", "-"),
            "title": title or func.__name__.replace("_", " ").capitalize(),
            "description": description or (func.__doc__ or "").strip().split("\n")[0],
            "form": form,
        }
        return func

    return decorate


class Plugin:
    id: ClassVar[str]
    title: ClassVar[str]
    description: ClassVar[str] = ""
    requirements: ClassVar[Requirements] = Requirements()
    # Optional pydantic model documenting this plugin's ``[plugins.<id>]`` config section.
    config_model: ClassVar[type[BaseModel] | None] = None

    def actions(self) -> list[Action]:
        found = []
        for klass in reversed(type(self).__mro__):
            for attr in vars(klass).values():
                spec = getattr(attr, "__localqwen_action__", None)
                if spec:
                    found.append(Action(plugin=self, func=attr, **spec))
        # Keep declaration order, later (subclass) definitions replacing earlier ones by id.
        by_id: dict[str, Action] = {}
        for item in found:
            by_id[item.id] = item
        return list(by_id.values())

    def chat_responder(self) -> Callable[[ChatRequest, Context], Iterator[Any]] | None:
        """The bound ``@chat`` method, or None when this plugin offers no chat."""
        for klass in type(self).__mro__:
            for name, attr in vars(klass).items():
                if getattr(attr, "__localqwen_chat__", False):
                    return getattr(self, name)  # type: ignore[no-any-return]
        return None

    def field_options(self, source: str, ctx: Context) -> list[Any]:
        """The choices for form fields declared with ``field(..., options_from=source)`` (the
        existing knowledge bases, say), computed each time a form is shown. The default has none."""
        return []

    def chat_panel_provider(self) -> Callable[[dict[str, Any], Context], list[Any]] | None:
        """The bound ``@chat_panel`` method, or None when this plugin's chat has no side panel."""
        for klass in type(self).__mro__:
            for name, attr in vars(klass).items():
                if getattr(attr, "__localqwen_chat_panel__", False):
                    return getattr(self, name)  # type: ignore[no-any-return]
        return None

    def guided_flow(self) -> GuidedFlow | None:
        """The plugin's wizard over its own actions (see guide.py), or None; the TUI and web view
        show it as a step-by-step flow. The default has none."""
        return None

    @property
    def chats(self) -> bool:
        return self.chat_responder() is not None

    def register(self, extensions: Extensions) -> None:
        """Add what this plugin contributes beyond actions and chat (data sources, metrics, tools,
        CLI shortcuts) with ``extensions.add_*``. Called once by the host; the default adds nothing."""

    def action(self, action_id: str) -> Action:
        for item in self.actions():
            if item.id == action_id:
                return item
        known = ", ".join(a.id for a in self.actions())
        raise KeyError(f"plugin '{self.id}' has no action '{action_id}' (actions: {known})")
