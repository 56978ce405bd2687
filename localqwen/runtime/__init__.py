"""Runtime: devices and plans, the model catalog and downloads, and the inference engines."""
