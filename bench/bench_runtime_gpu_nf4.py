"""GPU check: the tiny Qwen3-VL loaded with bitsandbytes 4-bit NF4 (double quantization, bf16
compute) answers about an image, and decode speed NF4 / bf16 on the same GPU.

Needs CUDA and bitsandbytes; prints why and returns {} otherwise (it has not been run on the
machine this project was built on, which has no GPU). Uses the same code path as the app: a plan
from DeviceManager, the transformers engine built from that plan.
"""

from __future__ import annotations

import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

NEW_TOKENS = 64
ROUNDS = 5


def main() -> dict[str, float]:
    import importlib.util

    import torch

    if not torch.cuda.is_available() or importlib.util.find_spec("bitsandbytes") is None:
        print("skipped: needs a CUDA GPU and bitsandbytes (pip install 'localqwen[gpu]')")
        return {}
    from PIL import Image

    from localqwen.runtime.device import DeviceManager
    from localqwen.runtime.engine import GenerationSettings
    from localqwen.runtime.engine.transformers_backend import TransformersEngine
    from localqwen.runtime.model_manager import folder_info
    from localqwen.testing.tiny_models import build_tiny_qwen3_vl

    with tempfile.TemporaryDirectory() as tmp:
        path = build_tiny_qwen3_vl(Path(tmp) / "tiny_vl", hidden_size=256, intermediate_size=512, num_hidden_layers=4)
        image = Path(tmp) / "red.png"
        Image.new("RGB", (64, 64), (230, 20, 20)).save(image)
        messages = [{"role": "user", "content": [{"type": "image", "image": str(image)}, {"type": "text", "text": "Describe."}]}]
        device = DeviceManager()
        base = device.plan(folder_info(path, "tiny-qwen3-vl"), "vision")
        half = "bfloat16" if device.host.best_cuda().bf16 else "float16"
        plans = {
            "nf4": replace(base, backend="transformers", device="cuda", dtype=half, quantization="nf4", compute_dtype=half),
            "half": replace(base, backend="transformers", device="cuda", dtype=half, quantization=None),
        }
        settings = GenerationSettings(max_new_tokens=NEW_TOKENS)
        rates: dict[str, float] = {}
        for name, plan in plans.items():
            engine = TransformersEngine(path, plan=plan)
            if name == "nf4":
                linear = type(engine.model.model.language_model.layers[0].self_attn.q_proj).__name__
                print(f"NF4 load: q_proj is {linear}; weights on {engine.model.device}")
                result = engine.chat(messages, settings=settings)
                print(f"NF4 answer with an image: {result.completion_tokens} tokens, prompt {result.prompt_tokens} "
                      f"tokens, text {result.text[:60]!r}")
            engine.chat(messages, settings=settings)  # warm up
            best = 0.0
            for _ in range(ROUNDS):
                torch.cuda.synchronize()
                start = time.perf_counter()
                result = engine.chat(messages, settings=settings)
                torch.cuda.synchronize()
                best = max(best, result.completion_tokens / (time.perf_counter() - start))
            rates[name] = best
            engine.close()
    ratio = rates["nf4"] / rates["half"]
    print(f"decode on {torch.cuda.get_device_name(0)}: NF4 {rates['nf4']:.0f} tok/s, {half} {rates['half']:.0f} tok/s "
          f"-> NF4 / {half} ratio {ratio:.3f}")
    return {"nf4_vs_half": ratio}


if __name__ == "__main__":
    main()
