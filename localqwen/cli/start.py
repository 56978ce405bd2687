"""The ``localqwen`` console script. Plain ``localqwen`` (or ``localqwen tui``) opens the terminal UI
at once; anything else goes to the Typer CLI (:mod:`localqwen.cli.main`).

Typer, the command modules and Typer's argument handling (which imports pydantic) cost ~0.25 s,
all of it before the TUI's first frame if the TUI were opened through them; ``localqwen tui``
through Typer opens the same UI.
"""

from __future__ import annotations

import sys


def main() -> None:
    if sys.argv[1:] in ([], ["tui"]):
        from localqwen.tui.app import run_tui

        run_tui()
        return
    from localqwen.cli.main import main as cli

    cli()


if __name__ == "__main__":
    main()
