"""Safari: a seeded grid world where a vision agent finds animals by calling tools."""
