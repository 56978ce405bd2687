"""Entry script for the PyInstaller desktop build: opens the terminal UI (or runs a CLI command)."""

from localqwen.cli.start import main

if __name__ == "__main__":
    main()
