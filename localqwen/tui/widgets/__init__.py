"""Small Textual widgets the TUI screens share."""
