"""Decode speed through our transformers engine / plain ``model.generate`` on the tiny Qwen3.

Same model object, same prompt tensors, greedy, same number of new tokens (the random tiny
model never emits end-of-turn early); rounds alternate and
the best round of each side counts (load on a shared machine only ever slows a round down). ``chat`` runs generate in place;
``stream`` adds the streamer thread and is reported too. Goal: chat ratio >= 0.95.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

NEW_TOKENS = 128
ROUNDS = 9
MESSAGES = [{"role": "user", "content": "Describe the image in one sentence."}]


def main() -> dict[str, float]:
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    import torch

    torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))
    from localqwen.runtime.engine import GenerationSettings
    from localqwen.runtime.engine.transformers_backend import TransformersEngine
    from localqwen.testing.tiny_models import build_tiny_qwen3

    with tempfile.TemporaryDirectory() as tmp:
        engine = TransformersEngine(build_tiny_qwen3(Path(tmp) / "tiny"))
        settings = GenerationSettings(max_new_tokens=NEW_TOKENS)
        inputs = engine.encode([MESSAGES])
        width = inputs["input_ids"].shape[1]

        def plain() -> float:
            start = time.perf_counter()
            with torch.inference_mode():
                out = engine.model.generate(**inputs, max_new_tokens=NEW_TOKENS, do_sample=False,
                                            pad_token_id=engine.tokenizer.pad_token_id)
            elapsed = time.perf_counter() - start
            return (out.shape[1] - width) / elapsed

        def chat() -> float:
            start = time.perf_counter()
            result = engine.chat(MESSAGES, settings=settings)
            return result.completion_tokens / (time.perf_counter() - start)

        def stream() -> float:
            start = time.perf_counter()
            for _ in engine.stream(MESSAGES, settings=settings):
                pass
            return engine.last_result.completion_tokens / (time.perf_counter() - start)

        plain(), chat(), stream()  # warm up
        rates: dict[str, list[float]] = {"plain": [], "chat": [], "stream": []}
        for _ in range(ROUNDS):
            for name, run in (("plain", plain), ("chat", chat), ("stream", stream)):
                rates[name].append(run())
        engine.close()
    best = {name: max(values) for name, values in rates.items()}
    ratios = {"chat": best["chat"] / best["plain"], "stream": best["stream"] / best["plain"]}
    print(f"transformers decode on the tiny Qwen3, {NEW_TOKENS} tokens, best of {ROUNDS}: "
          f"plain generate {best['plain']:.0f} tok/s, ours chat {best['chat']:.0f} tok/s "
          f"(ratio {ratios['chat']:.3f}, goal >= 0.95), ours stream {best['stream']:.0f} tok/s "
          f"(ratio {ratios['stream']:.3f})")
    return ratios


if __name__ == "__main__":
    main()
