"""The import graph keeps its layers: no circles, and no module imports a higher layer.

Layers, bottom up (see README "How it fits together"):
vocabulary -> storage -> runtime -> services -> plugin API -> plugins -> app -> frontends.
A module may import its own layer or any lower one. Every import counts, including those inside
functions and under ``TYPE_CHECKING``: a lazy import is still a dependency.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# (layer name, path prefixes relative to the repository root). The first matching prefix wins,
# so a more specific prefix is listed before a broader one.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("vocabulary", ("localqwen/vocabulary/", "localqwen/__init__.py", "localqwen/paths.py",
                    "localqwen/atomic.py", "localqwen/i18n.py", "localqwen/testing/")),
    ("storage", ("localqwen/storage/", "localqwen/config.py", "localqwen/config_edit.py")),
    ("runtime", ("localqwen/runtime/", "localqwen/retrieval/", "localqwen/training/", "localqwen/adapters/",
                 "localqwen/jobs")),
    ("services", ("localqwen/services.py",)),
    ("plugin_api", ("localqwen/plugin_api/",)),
    ("plugins", ("plugins/",)),
    ("app", ("localqwen/app.py", "localqwen/chat_replay.py", "localqwen/conversations.py", "localqwen/runtime_info.py",
             "localqwen/frontend_hooks.py", "localqwen/plugin_fit.py", "localqwen/guided_flow.py")),
    ("frontends", ("localqwen/cli/", "localqwen/tui/", "localqwen/web/", "localqwen/server/")),
]
RANK = {name: index for index, (name, _) in enumerate(LAYERS)}
# A plugin's own frontend view (tui.py / web.py) is a frontend module living in the plugin's folder.
PLUGIN_VIEW_FILES = ("tui.py", "web.py")


def source_files() -> list[Path]:
    return sorted(list((ROOT / "localqwen").rglob("*.py")) + list((ROOT / "plugins").rglob("*.py")))


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts[1:] if rel.parts[0] == "plugins" else rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def layer_of(path: Path) -> str:
    rel = path.relative_to(ROOT).as_posix()
    if rel.startswith("plugins/") and path.name in PLUGIN_VIEW_FILES:
        return "frontends"
    for name, prefixes in LAYERS:
        if any(rel == prefix or rel.startswith(prefix) for prefix in prefixes):
            return name
    raise AssertionError(f"{rel} belongs to no layer: add it to LAYERS in tests/test_layers.py")


def imported_modules(path: Path, modules: dict[str, Path]) -> set[str]:
    """Project modules ``path`` imports (``from pkg import name`` counts ``pkg.name`` when that is a module)."""
    package = module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)] if node.level > 1 else anchor
                base = ".".join(anchor + ([base] if base else []))
            names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names]
        else:
            continue
        for name in names:
            while name and name not in modules:
                name = name.rpartition(".")[0]
            if name:
                found.add(name)
    found.discard(module_name(path))
    return found


def import_graph() -> tuple[dict[str, set[str]], dict[str, Path]]:
    modules = {module_name(path): path for path in source_files()}
    return {name: imported_modules(path, modules) for name, path in modules.items()}, modules


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_every_module_has_a_layer():
    for path in source_files():
        layer_of(path)


def test_import_graph_has_no_circles():
    graph, _ = import_graph()
    assert circles(graph) == []


def test_no_module_imports_a_higher_layer():
    graph, modules = import_graph()
    upward = []
    for name, targets in graph.items():
        mine = layer_of(modules[name])
        for target in targets:
            theirs = layer_of(modules[target])
            if RANK[theirs] > RANK[mine]:
                upward.append(f"{name} ({mine}) -> {target} ({theirs})")
    assert upward == []


def test_plugins_do_not_import_each_other():
    graph, modules = import_graph()
    crossing = []
    for name, targets in graph.items():
        if layer_of(modules[name]) != "plugins":
            continue
        for target in targets:
            if layer_of(modules[target]) == "plugins" and target.split(".")[0] != name.split(".")[0]:
                crossing.append(f"{name} -> {target}")
    assert crossing == []


def test_the_checker_sees_a_planted_circle():
    """The circle finder is not vacuous: a made-up graph with a loop is reported."""
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
