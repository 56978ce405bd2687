"""The TUI's screens: home, plugin action, chat, models, jobs, settings."""
