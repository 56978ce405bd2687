"""LocalQwen captioner: caption images with Qwen3-VL, compare adapters, and the COCO caption pipeline."""
