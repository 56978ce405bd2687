"""The Plugin base class and the ``@action`` decorator.

A plugin is a class with an ``id``, a ``title``, a short ``description``, its requirements and
one or more actions. An action is a method decorated with ``@action(form=...)`` that takes the
validated form and a :class:`Context` and yields events.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, ClassVar

from pydantic import BaseModel

from localqwen.plugin_api.context import Context
from localqwen.plugin_api.forms import Form

ActionFunc = Callable[[Any, Any, Context], Iterator[Any]]


@dataclass(frozen=True)
class Requirements:
    task: str = "text"  # text | vision | embedding | training | none
    min_memory_gb: float = 0.0


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

    def action(self, action_id: str) -> Action:
        for item in self.actions():
            if item.id == action_id:
                return item
        known = ", ".join(a.id for a in self.actions())
        raise KeyError(f"plugin '{self.id}' has no action '{action_id}' (actions: {known})")
