"""Captioning throughput: batched (``engine.chat_batch``) / one image at a time (``engine.chat``).

Same tiny Qwen3-VL model, same real COCO images (../shared/data/coco_mini, read in place), same
greedy settings, measured in the same run and interleaved so machine noise hits both alike.
Goal: ratio >= 1.5 on this CPU.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COCO_MINI = (ROOT / ".." / "shared" / "data" / "coco_mini" / "val2017").resolve()


def main(images: int = 16, batch_size: int = 8, rounds: int = 5, max_new_tokens: int = 16) -> float:
    os.environ.setdefault("OMP_NUM_THREADS", "1")  # tiny matrices: threads only add sync cost
    from localqwen_captioner.engine_captions import engine_captioner
    from localqwen_captioner.images import load_image

    from localqwen.runtime.engine import load_engine
    from localqwen.testing.tiny_models import build_tiny_qwen3_vl

    with tempfile.TemporaryDirectory() as tmp:
        # Seed 1's random weights never emit end-of-text, so every caption is exactly
        # max_new_tokens long and both sides do the same amount of decoding.
        engine = load_engine(build_tiny_qwen3_vl(Path(tmp) / "tiny_vl", seed=1))
        loaded = [load_image(path, max_side=256) for path in sorted(COCO_MINI.glob("*.jpg"))[:images]]
        caption = engine_captioner(engine, "Describe this image in one short sentence.",
                                   max_new_tokens=max_new_tokens)

        def one_by_one() -> float:
            start = time.perf_counter()
            for item in loaded:
                caption([item])
            return len(loaded) / (time.perf_counter() - start)

        def batched() -> float:
            start = time.perf_counter()
            for index in range(0, len(loaded), batch_size):
                caption(loaded[index:index + batch_size])
            return len(loaded) / (time.perf_counter() - start)

        caption(loaded[:batch_size])  # warm-up: first-call allocations, kernels
        single_rates, batch_rates = [], []
        for _ in range(rounds):
            single_rates.append(one_by_one())
            batch_rates.append(batched())
        engine.close()
    single, batch = statistics.median(single_rates), statistics.median(batch_rates)
    ratio = batch / single
    print(f"captioner_batch: one at a time {single:.2f} images/s, batches of {batch_size} {batch:.2f} images/s, "
          f"ratio {ratio:.2f} (goal >= 1.5; tiny Qwen3-VL, {images} COCO images, {max_new_tokens} new tokens)")
    return ratio


if __name__ == "__main__":
    main()
