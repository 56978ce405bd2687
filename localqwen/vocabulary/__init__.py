"""The ground floor every layer may import: events, cancellation, shared errors, exit codes
and the TOML writer.

Nothing here imports another LocalQwen module, so runtime, retrieval, training, jobs and the
plugin API can all speak the same words without importing each other.
"""
