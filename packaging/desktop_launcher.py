"""What the desktop build does before (or instead of) the normal ``localqwen`` CLI.

Kept out of the ``localqwen`` package on purpose: only the frozen app needs it, and nothing here
changes how the pip-installed command behaves.
"""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

# Flags Python accepts before ``-m`` that launchers pass (``accelerate launch`` and torchrun add
# ``-u``); they change nothing that matters inside the frozen app, so they are skipped.
_IGNORED_INTERPRETER_FLAGS = {"-u", "-B", "-s", "-E", "-I", "-O"}

# The .desktop entry and the Windows/macOS shortcuts pass this; a start with no terminal and no
# arguments is treated the same (double-click in a file manager).
DESKTOP_FLAG = "--desktop"


def restore_system_library_path() -> None:
    """Give programs this app starts (the browser, xdg-open, git) the system's libraries again.

    PyInstaller's bootloader points LD_LIBRARY_PATH at the bundled libraries (keeping the user's
    value in LD_LIBRARY_PATH_ORIG); a system browser started with it can load our libssl or
    libstdc++ instead of its own and fail. This process is not affected: the dynamic loader read
    the variable when the process started. A child that is this app again sets it once more."""
    if not getattr(sys, "frozen", False):
        return
    for name in ("LD_LIBRARY_PATH", "DYLD_LIBRARY_PATH"):
        original = os.environ.pop(name + "_ORIG", None)
        if original is not None:
            os.environ[name] = original
        else:
            os.environ.pop(name, None)


def run_python_module_args(args: list[str]) -> bool:
    """Run ``[flags] -m MODULE ARGS`` or ``SCRIPT.py ARGS`` the way ``python`` would; False when
    ``args`` are not of that shape (then they are an ordinary CLI command line)."""
    import runpy

    rest = list(args)
    while rest and rest[0] in _IGNORED_INTERPRETER_FLAGS:
        rest.pop(0)
    if len(rest) >= 2 and rest[0] == "-m":
        module, *module_args = rest[1:]
        sys.argv = [module, *module_args]
        runpy.run_module(module, run_name="__main__", alter_sys=True)
        return True
    if rest and rest[0].endswith(".py") and Path(rest[0]).is_file():
        sys.argv = list(rest)
        runpy.run_path(rest[0], run_name="__main__")
        return True
    if rest != list(args) or (rest and rest[0] == "-m"):
        sys.exit(f"localqwen: expected '-m MODULE [ARGS]' after the interpreter flags, got {args!r}")
    return False


def should_open_browser(args: list[str]) -> bool:
    """True for a start from a desktop icon: the explicit flag, or no arguments and no terminal."""
    if args == [DESKTOP_FLAG]:
        return True
    return not args and not _has_terminal()


def _has_terminal() -> bool:
    try:
        return sys.stdin is not None and sys.stdin.isatty()
    except (ValueError, OSError):  # closed or detached stdin (a GUI start on Windows)
        return False


def first_run_notice() -> list[str]:
    """Which models this machine already has (Hugging Face / ModelScope caches, the app's own
    downloads, the ones bundled in the build) or, when there are none, what to download."""
    from localqwen.runtime.hub_cache import cached_models, huggingface_cache_dir, modelscope_cache_dirs

    found = cached_models(generative_only=True)
    if found:
        return ["Models found in the hub caches (pick them in any model field):",
                *(f"  {model.label}" for model in found)]
    places = [str(huggingface_cache_dir()), *(str(p) for p in modelscope_cache_dirs())]
    return [
        "No Qwen model was found in the Hugging Face or ModelScope caches (" + ", ".join(places) + ").",
        "The bundled Gemma 270M GGUF and MiniLM embedder work offline; for real answers download one, e.g.",
        "  localqwen models download qwen3-vl-2b-instruct   (captions and vision, 4.3 GB; add --format gguf for 1.5 GB)",
        "  localqwen models download qwen3-0.6b             (text chat, 1.5 GB)",
        "or with any hub tool: huggingface-cli download Qwen/Qwen3-VL-2B-Instruct (found on the next start).",
    ]


def open_web_view(port: int = 7860) -> int:
    """Start the web view on 127.0.0.1 and open it in the default browser; blocks until the server
    stops. Prints what it does (a terminal shows it; from an icon it goes to the log file)."""
    import webbrowser

    from localqwen.web.server import launch, plan_launch

    for line in first_run_notice():
        print(line, flush=True)
    plan = plan_launch(port=port)
    web, _ = launch(plan, block=False)
    print(f"LocalQwen web view: {plan.url}", flush=True)
    if os.environ.get("LOCALQWEN_NO_BROWSER") != "1" and not webbrowser.open(plan.url):
        print(f"no browser could be started; open {plan.url} yourself", flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        web.blocks.block_thread()
    return 0
