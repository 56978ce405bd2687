"""Storage helpers: SQLite with per-feature migrations."""
