"""Episodic memory: a chat that remembers what you told it, recalls it, forgets on request, and
consolidates memories into the model (issue 14)."""
