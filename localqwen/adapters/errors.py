"""Errors the adapter code raises; each message says what was wrong and what to do."""

from __future__ import annotations


class AdapterError(ValueError):
    """Bad adapter options, targets or base layers."""


class AdapterLoadError(AdapterError):
    """A saved adapter does not fit the model it is loaded into (the model is left untouched)."""
