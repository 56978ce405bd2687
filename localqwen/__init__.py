"""LocalQwen: a local workbench for Qwen3 and Qwen3-VL models."""

__version__ = "0.1.0"
