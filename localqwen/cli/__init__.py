"""The Typer command-line interface."""
