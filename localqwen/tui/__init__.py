"""The Textual terminal UI. Only this package (and plugins' own ``tui.py``) imports Textual."""
