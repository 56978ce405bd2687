"""Start-up stays light and the core never imports a frontend toolkit."""

import ast
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ["torch", "transformers", "gradio", "textual", "lancedb", "peft", "trl", "sentence_transformers",
         "llama_cpp", "numpy", "PIL", "datasets", "onnxruntime"]


def _modules_after(code: str) -> set[str]:
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    return {name.split(".")[0] for name in json.loads(out.strip().splitlines()[-1])}


def test_help_imports_no_heavy_library():
    code = (
        "import sys\nfrom localqwen.cli.main import app\n"
        "try:\n    app(['--help'])\nexcept SystemExit:\n    pass\n"
    )
    loaded = _modules_after(code)
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))


def test_plugin_listing_imports_no_heavy_library():
    code = "from localqwen.plugin_api import PluginHost\nPluginHost().available()"
    loaded = _modules_after(code)
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))


def _top_level_imports(path: Path) -> set[str]:
    names = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def test_core_and_plugins_never_import_ui_toolkits():
    """Core and plugins stay headless; only frontend modules (and a plugin's tui.py/web.py) may."""
    offenders = []
    sources = list((ROOT / "localqwen").rglob("*.py")) + list((ROOT / "plugins").rglob("*.py"))
    for path in sources:
        rel = path.relative_to(ROOT)
        if rel.parts[:2] in (("localqwen", "tui"), ("localqwen", "web")) or path.name in ("tui.py", "web.py"):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            if any(name.split(".")[0] in ("textual", "gradio") for name in names):
                offenders.append(str(rel))
    assert not offenders, offenders


def test_heavy_libraries_are_imported_inside_functions():
    """Module top levels of core and plugins import no heavy library (they do so where used)."""
    offenders = []
    sources = list((ROOT / "localqwen").rglob("*.py")) + list((ROOT / "plugins").rglob("*.py"))
    for path in sources:
        rel = path.relative_to(ROOT)
        if "testing" in rel.parts:  # test helpers build models; they are never imported at start-up
            continue
        heavy = set(HEAVY)
        if rel.parts[:2] in (("localqwen", "tui"), ("localqwen", "web")) or path.name in ("tui.py", "web.py"):
            # A frontend's own modules subclass its toolkit at module level; they are imported
            # only when that frontend starts (test_help_imports_no_heavy_library checks start-up).
            heavy -= {"textual", "gradio"}
        bad = _top_level_imports(path) & heavy
        if bad:
            offenders.append(f"{rel}: {sorted(bad)}")
    assert not offenders, offenders
