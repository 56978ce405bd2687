"""The optional bespoke-view hook a plugin may ship for one frontend.

Convention (documented in the README): next to a plugin's module, a package may hold
``tui.py`` and/or ``web.py``. The TUI calls ``tui.open_view(app, plugin) -> textual Screen`` and
shows it as an extra "custom view" entry; the web view calls ``web.build_tab(plugin, bench)``
inside a ``gr.Tab`` of the plugin's tab. The generated forms stay available either way. A hook
module that fails to import is reported, never fatal.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from localqwen.plugin_api import Plugin

HOOKS = {"tui": "open_view", "web": "build_tab"}


def view_hook(plugin: Plugin, frontend: str) -> tuple[Callable[..., Any] | None, str]:
    """The plugin's hook for ``frontend`` ("tui" or "web") and, when loading it failed, why."""
    module_name = type(plugin).__module__
    package = module_name.rpartition(".")[0]
    if not package:
        return None, ""  # a single-module plugin has no place for a view module
    try:
        module = importlib.import_module(f"{package}.{frontend}")
    except ModuleNotFoundError as exc:
        if exc.name == f"{package}.{frontend}":
            return None, ""
        return None, f"{type(exc).__name__}: {exc}"
    except Exception as exc:  # a broken view must not take the frontend down
        return None, f"{type(exc).__name__}: {exc}"
    hook = getattr(module, HOOKS[frontend], None)
    if hook is None:
        return None, f"{package}.{frontend} defines no {HOOKS[frontend]}()"
    return hook, ""
