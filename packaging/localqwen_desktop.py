"""Entry script of the PyInstaller desktop build (``dist/localqwen/localqwen``).

What each way of starting it does:

- ``localqwen`` from a desktop icon or file manager (no terminal attached): the web view, opened
  in the default browser (:mod:`desktop_launcher`).
- ``localqwen`` or ``localqwen tui`` in a terminal: the terminal UI; any other arguments go to the
  CLI, as with the pip-installed ``localqwen`` command.
- ``localqwen -m MODULE ARGS...``: hidden; runs MODULE like ``python -m``. A frozen app has no
  Python interpreter, and ``sys.executable`` is this program, so the training job subprocess
  (``sys.executable -m localqwen.cli.main train ...``, :mod:`localqwen.training.launch`) and
  ``accelerate launch`` come back here and are run in-process.
- ``--multiprocessing-fork`` children: handled by ``multiprocessing.freeze_support()``.
"""

from __future__ import annotations

import multiprocessing
import sys


def main() -> None:
    multiprocessing.freeze_support()  # must come first: a worker child never reaches the CLI
    from desktop_launcher import restore_system_library_path, run_python_module_args, should_open_browser

    restore_system_library_path()
    args = sys.argv[1:]
    if run_python_module_args(args):
        return
    if should_open_browser(args):
        from desktop_launcher import open_web_view

        sys.exit(open_web_view())
    from localqwen.cli.start import main as start

    start()


if __name__ == "__main__":
    main()
